"""Task A without a model: the structured anchor, copied from the archive by code.

Race, height, birthplace, birthday, infection status, combat experience and the like are
facts the game states in fields; a model must never write them, because a model that
"remembers" a height gets it wrong sooner or later. Every :class:`Fact` here is copied from
one source field and says which table and field it came from. The model later writes only
``核心经历`` (:attr:`Anchor.core`).

Sources (tables are passed in already parsed, see :class:`Tables`):

* ``handbook_info_table`` -- ``handbookDict[<id>].storyTextAudio[]``. Her sections are those
  of her own entry whose stories' ``patchIdList`` is null or names her, or, for a form with no
  entry of its own (阿米娅's alternate forms), the sections of another entry whose
  ``patchIdList`` names her. ``基础档案`` (the first one of hers) holds ``【字段】值`` lines:
  every field is copied, in source order, from its *first* occurrence (a later garbled copy
  of the block, as in one operator's archive, never overrides it). A field whose value is
  not on its line (``【矿石病感染情况】``) takes the next non-empty line that is not another
  field. ``临床诊断分析`` adds its ``【…源石…】值`` measurements (体细胞与源石融合率,
  血液源石结晶密度 and their variants).
* ``character_table`` -- ``nationId`` / ``groupId`` / ``teamId`` as ``势力`` / ``组织`` /
  ``小队``, named by ``handbook_team_table[<id>].powerName``.

A chat does not need every fact a card's lore may keep: :func:`chat_anchor` is the anchor as
the persona block gives it (no lab figures, 战斗经验 nor 身高, the infection status in one
word); the profile holds them all. :func:`archive_sources` gives the verbatim gate the text of
each section a ``## 我·性格`` line cites (``archive:<entry id>/<section title>``).

The shared data's tables are snapshots of different dates (character_table 2021-08,
charword_table 2021-11, handbook_info_table 2024-10), so newer operators have stories but no
archive: what is missing is reported per operator as :class:`Gap` lines
(``no source: handbook_info_table (archive), charword_table (voice)``), never skipped silently.

:func:`structured_fields_equal_source` is the check for anything written later (by a model
or a person): a structured field whose value differs from its source is replaced by the
source value, one the source does not have is removed, one missing is added; each change is
reported as a :class:`Correction`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from arklore.core.text import SENTENCE_END, first_sentences, one_line, sentence_pieces
from arklore.names.registry import archive_names
from arklore.profiles.quotes import ARCHIVE, QuoteSource

HANDBOOK = "handbook_info_table"
CHARACTER = "character_table"
CHARWORD = "charword_table"
TEAM = "handbook_team_table"
STORY = "story"

BASIC = "基础档案"
CLINICAL = "临床诊断分析"
OBJECTIVE = "客观履历"
OBJECTIVE_MAX = 200
"""Characters of ``客观履历`` copied at most: whole sentences from its start (at least the
first), so the anchor says who she is in the game's words (银灰: 谢拉格军阀，喀兰贸易公司董事长,
希瓦艾什家族现任族长) without a model; never past the record into a note appended to it
(:func:`record_lines`)."""
DOSSIER: tuple[str, ...] = ("档案资料一", "档案资料二", "档案资料三", "档案资料四")
DOSSIER_MAX = 300
DOSSIER_MIN = 20
"""Per ``档案资料`` section, one excerpt of at least ``DOSSIER_MIN`` characters and at most
``DOSSIER_MAX``: the passage that starts at its first paragraph that names her, in the
narrator's voice, and runs to the end of its paragraph (:func:`passage`), whole sentences; over
the budget its opening sentences, :data:`ELISION` and its closing ones (:func:`_fit`). Her
character and history in the game's words without a model: 塞雷娅's 档案资料三 tells the
experiment 赫默 led, its failure and why she left 莱茵生命, where the first paragraph alone
stopped at 「……关系十分复杂。」. 300 (measured over the real archives and the persona block
of a 你好 turn over the 433 profiles, p50/p95 tokens): 240 gives 169 k characters of excerpts
and a persona of 577/854; 300 gives 194 k (98 k with the first 200 characters of the first
paragraph, the rule before) and 599/956, 260 of 1,061 excerpts cut; 400 gives 220 k and
614/1,084, and 7 profiles then lose quotes to the 1,200-token persona budget. Nothing is
lost at 300, and three passages in four are whole."""
_NOT_NARRATION = ("【", "——", "“", "「", "-", "*")
_QUOTE = ("“", "「", '"', "『")
_NO_VOICE = re.compile("[我你您]")
"""Any first or second person, the record's own 我们 too."""
_CJK_CHAR = re.compile("[\u3400-\u9fff]")
_SPEAKS = re.compile(r"(?<![自敌])我(?!们)|[你您]")
"""A voice in the first or second person: 我 (not 我们, the record's own "we", nor 自我/敌我),
你, 您."""
CORE = "核心经历"
INFECTION = "矿石病感染情况"

FACTION_FIELDS: tuple[tuple[str, str], ...] = (
    ("nationId", "势力"),
    ("groupId", "组织"),
    ("teamId", "小队"),
)

STRUCTURED_LABELS = frozenset(
    {
        "代号", "性别", "战斗经验", "出身地", "生日", "种族", "身高", INFECTION, "体重",
        "角长度", "尾巴长度", "型号", "设定性别", "出厂时间", "制造商", "产地", "出厂日",
        "高度", "重量", "维护检测报告", "体细胞与源石融合率", "血液源石结晶密度",
        "血液内源石密度", "血液中源石结晶密度", "体内源石融合度", "势力", "组织", "小队",
        OBJECTIVE, *DOSSIER,
    }
)  # fmt: skip
"""Field names that only a source may fill: written elsewhere they are checked (and dropped
when her sources lack them). Any field the sources give is checked as well."""

_FIELD_LINE = re.compile(r"^\s*【([\u4e00-\u9fff]{1,12})】(.*)$")


@dataclass(frozen=True, slots=True)
class Tables:
    """The excel tables profiles read, parsed; ``None`` = the table file is absent."""

    handbook_info: Mapping[str, Any] | None = None
    character: Mapping[str, Any] | None = None
    charword: Mapping[str, Any] | None = None
    handbook_team: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    label: str  # the source's field name: 种族, 身高, 势力, ...
    value: str
    table: str  # handbook_info_table | character_table
    field: str  # where in the table, e.g. handbookDict.char_x.storyTextAudio[0].stories[0]【身高】


@dataclass(frozen=True, slots=True)
class Gap:
    """A source that has nothing for this operator."""

    table: str
    what: str  # archive | voice | story lines | faction
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.table} ({self.what})"


def gaps_line(gaps: list[Gap]) -> str:
    """``no source: handbook_info_table (archive), charword_table (voice)``; "" for none."""
    return "no source: " + ", ".join(str(g) for g in gaps) if gaps else ""


@dataclass(slots=True)
class Anchor:
    char_id: str
    facts: list[Fact] = field(default_factory=list)
    core: str | None = None  # 核心经历: written by a model or a person, never by this module
    sources: list[str] = field(default_factory=list)  # header lines "<table>: <ids> (...)"
    gaps: list[Gap] = field(default_factory=list)

    def get(self, label: str) -> Fact | None:
        return next((f for f in self.facts if f.label == label), None)

    def value(self, label: str) -> str | None:
        f = self.get(label)
        return f.value if f else None

    def render(self) -> str:
        """The ``## 锚`` body: ``- 字段：值`` per fact, then ``核心经历`` when there is one."""
        lines = [f"- {f.label}：{f.value}" for f in self.facts]
        if self.core:
            lines.append(f"- {CORE}：{self.core}")
        return "\n".join(lines)

    def physical_tags(self) -> list[str]:
        """``## 物理标签`` derived by code from the facts, what no field of the anchor says in
        a word: visible crystals (the chat reads the infection status as one word,
        :func:`chat_anchor`). Race, height, body measures and the infection status are
        fields of the anchor already: a tag would repeat them (瓦伊凡 / 身高 174cm / 非感染者
        twice in one prompt)."""
        inf = self.value(INFECTION)
        if inf and re.search(r"体表有[^，。,]*源石结晶", inf):
            return ["体表可见源石结晶"]
        return []


@dataclass(frozen=True, slots=True)
class Correction:
    label: str
    written: str | None  # what the anchor said (None: it was missing)
    source: str | None  # what the source says (None: the source has no such field)
    table: str
    field: str
    action: str  # replaced | removed | added

    def __str__(self) -> str:
        if self.action == "replaced":
            return f"{self.label}: {self.written!r} -> {self.source!r} ({self.table} {self.field})"
        if self.action == "removed":
            return f"{self.label}: {self.written!r} removed (no source field)"
        return f"{self.label}: added {self.source!r} ({self.table} {self.field})"


# -- the handbook archive ----------------------------------------------------------------


def _patch_ids(section: Mapping[str, Any]) -> set[str] | None:
    ids: set[str] = set()
    seen = False
    for st in section.get("stories") or []:
        lst = st.get("patchIdList") if isinstance(st, dict) else None
        if isinstance(lst, list):
            seen = True
            ids.update(x for x in lst if isinstance(x, str))
    return ids if seen else None


def archive_sections(
    handbook_info: Mapping[str, Any] | None, char_id: str
) -> list[tuple[str, int, Mapping[str, Any]]]:
    """Her archive sections as (entry id, index in storyTextAudio, section), source order."""
    book = (handbook_info or {}).get("handbookDict") or {}
    out: list[tuple[str, int, Mapping[str, Any]]] = []
    own = book.get(char_id)
    if isinstance(own, dict):
        for i, sec in enumerate(own.get("storyTextAudio") or []):
            if isinstance(sec, dict):
                ids = _patch_ids(sec)
                if ids is None or char_id in ids:
                    out.append((char_id, i, sec))
        return out
    for entry_id in sorted(book):
        entry = book[entry_id]
        if not isinstance(entry, dict):
            continue
        for i, sec in enumerate(entry.get("storyTextAudio") or []):
            if isinstance(sec, dict) and char_id in (_patch_ids(sec) or set()):
                out.append((entry_id, i, sec))
    return out


def parse_fields(text: str) -> list[tuple[str, str, int]]:
    """``【字段】值`` lines -> (field, value, line index), first occurrence of each field; a
    value not on its line is the next non-empty line that is not a field."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    for i, ln in enumerate(lines):
        m = _FIELD_LINE.match(ln)
        if m is None or m.group(1) in seen:
            continue
        key, value = m.group(1), m.group(2).strip()
        if not value:
            for nxt in lines[i + 1 :]:
                if _FIELD_LINE.match(nxt):
                    break
                if nxt.strip():
                    value = nxt.strip()
                    break
        seen.add(key)
        if value:
            out.append((key, value, i))
    return out


def _story_texts(sec: Mapping[str, Any]) -> list[tuple[int, str]]:
    return [
        (j, st["storyText"])
        for j, st in enumerate(sec.get("stories") or [])
        if isinstance(st, dict) and isinstance(st.get("storyText"), str)
    ]


def structured_anchor(char_id: str, tables: Tables) -> Anchor:
    """Her structured anchor: every fact copied from a source field, with its provenance,
    and the gaps (sources that have nothing for her)."""
    anchor = Anchor(char_id)
    secs = archive_sections(tables.handbook_info, char_id)
    used: dict[str, list[str]] = {}
    basic = next(((e, i, s) for e, i, s in secs if s.get("storyTitle") == BASIC), None)
    clinical = next(((e, i, s) for e, i, s in secs if s.get("storyTitle") == CLINICAL), None)
    if basic is not None:
        entry, i, sec = basic
        for j, text in _story_texts(sec):
            for key, value, _ in parse_fields(text):
                if anchor.get(key) is None:
                    anchor.facts.append(Fact(key, value, HANDBOOK, _field(entry, i, j, key)))
        used.setdefault(entry, []).append(BASIC)
    if clinical is not None:
        entry, i, sec = clinical
        found = False
        for j, text in _story_texts(sec):
            for key, value, _ in parse_fields(text):
                if "源石" in key and anchor.get(key) is None:
                    anchor.facts.append(Fact(key, value, HANDBOOK, _field(entry, i, j, key)))
                    found = True
        if found:
            used.setdefault(entry, []).append(CLINICAL)
    entry_record = _objective(secs)
    record = entry_record[1] if entry_record else None
    if entry_record is not None:
        used.setdefault(entry_record[0], []).append(OBJECTIVE)
    dossier = _dossier(secs, _her_names(anchor, tables, secs))
    for entry, fact in dossier:
        used.setdefault(entry, []).append(fact.label)
    for entry, titles in used.items():
        anchor.sources.append(f"{HANDBOOK}: {entry} ({', '.join(titles)})")
    if tables.handbook_info is None:
        anchor.gaps.append(Gap(HANDBOOK, "archive", "table absent"))
    elif not secs:
        anchor.gaps.append(Gap(HANDBOOK, "archive", "no entry for this operator"))
    elif basic is None:
        anchor.gaps.append(Gap(HANDBOOK, "archive", f"no {BASIC} section"))
    _faction_facts(anchor, tables)
    if record is not None:
        anchor.facts.append(record)  # the prose last: the fields read first
    anchor.facts += [fact for _, fact in dossier]
    return anchor


def archive_sources(tables: Tables, char_id: str) -> dict[str, QuoteSource]:
    """``archive:<entry id>/<section title>`` -> the text of that section of her archive (its
    stories joined by line breaks), hers: what the verbatim gate checks an archive line of
    ``## 我·性格`` against (:mod:`arklore.profiles.temperament`)."""
    texts: dict[str, list[str]] = {}
    for entry, _, sec in archive_sections(tables.handbook_info, char_id):
        title = sec.get("storyTitle")
        if isinstance(title, str) and title:
            texts.setdefault(f"{ARCHIVE}:{entry}/{title}", []).extend(
                t for _, t in _story_texts(sec)
            )
    return {sid: QuoteSource("\n".join(ts), char_id) for sid, ts in texts.items()}


def her_names(char_id: str, tables: Tables, anchor: Anchor | None = None) -> list[str]:
    """The names her archive calls her by (:func:`_her_names`)."""
    anchor = anchor if anchor is not None else structured_anchor(char_id, tables)
    return _her_names(anchor, tables, archive_sections(tables.handbook_info, char_id))


ARCHIVE_NAME_USES = 3
"""A name her archive gives in prose (:func:`~arklore.names.registry.archive_names`: 本名丽萨)
counts as hers for an excerpt once the archive uses it this often: a role that opens a
record (企鹅物流员工) is used once or twice."""


def _her_names(
    anchor: Anchor, tables: Tables, secs: list[tuple[str, int, Mapping[str, Any]]]
) -> list[str]:
    """The names an archive calls her by: its own 代号, her character_table name and the
    names it gives in prose (:data:`ARCHIVE_NAME_USES`; 铃兰's archive calls her 丽萨)."""
    row = (tables.character or {}).get(anchor.char_id)
    table_name = row.get("name") if isinstance(row, dict) else None
    code = anchor.value("代号")
    given = archive_names({"storyTextAudio": [sec for _, _, sec in secs]})
    prose = [g["name"] for g in given if g["mentions"] >= ARCHIVE_NAME_USES]
    names = [code, table_name, *prose]
    return [n for n in dict.fromkeys(names) if isinstance(n, str) and n.strip()]


def _dossier(
    secs: list[tuple[str, int, Mapping[str, Any]]], names: list[str]
) -> list[tuple[str, Fact]]:
    """(entry, fact) per ``档案资料`` section that has an excerpt (see :data:`DOSSIER_MAX`)."""
    out: list[tuple[str, Fact]] = []
    for title in DOSSIER:
        found = next(((e, i, s) for e, i, s in secs if s.get("storyTitle") == title), None)
        if found is None or not names:
            continue
        entry, i, sec = found
        opening = title == DOSSIER[0]
        excerpt = next(
            (
                (j, x)
                for j, text in _story_texts(sec)
                if (x := dossier_excerpt(text, names, opening=opening, budget=DOSSIER_MAX))
            ),
            None,
        )
        if excerpt is not None:
            where = f"handbookDict.{entry}.storyTextAudio[{i}].stories[{excerpt[0]}].storyText"
            out.append((entry, Fact(title, excerpt[1], HANDBOOK, where)))
    return out


_BACK_REFERENCE = re.compile(
    r"^(?:(?:当然啦?|不过|但是|然而|因此|所以|此外|另外|同时|除此之外|除此以外|也就是说?|于是|总之|"
    r"况且|而且|并且|可是|接着|由此可见|综上所述|从以上[^，。！？]{0,8}|同样[的地]?|为了这个[^，。！？]{0,4}|"
    r"首先|其次|再次|最后|其[一二三四五六七八九十]|"
    r"正如(?:上面|前面|上文|前文|之前|先前)[^，。！？]{0,8})，|(?:但|而|然而|不过|可是)(?![且是])|"
    r"(?:\.{3,}|…+))"
)
"""A paragraph's opening word that points back at the one before it (当然，… 正如上面提到的，…
而凯尔希医生则怀疑…), or that numbers a step of a list (其二，他在加入罗德岛后…): left out of an
excerpt, which is read without that paragraph."""


def dossier_excerpt(
    text: str, names: list[str], *, opening: bool = False, budget: int = DOSSIER_MAX
) -> str | None:
    """The excerpt of one ``档案资料`` text (the rule of :data:`DOSSIER_MAX`), or None.

    It starts at the first paragraph that names her and runs on through the paragraphs after
    it while they are the narrator's (:func:`passage`), whole sentences up to ``budget``
    characters; no opening word that points back at a paragraph it leaves out, no closing
    question whose answer it leaves out (翎羽为何会来到罗德岛？). A paragraph in the record's
    own "we" (……我们很难想象) only where no other paragraph names her, and only its sentences
    before the first with it: those paragraphs are mostly about the inquiry, yet 铃兰's
    parents are told in one. Nothing from somebody's note (:func:`narrative`). ``opening``
    (``档案资料一``, which introduces her): when no paragraph names her, the passage its first
    paragraph opens (:func:`_opening`)."""
    paras = narrative(text)
    for allowed in (_NO_VOICE, _SPEAKS):
        for k, p in enumerate(paras):
            if not told(p) or allowed.search(p) or not any(n in p for n in names):
                continue
            value = _fit(passage(paras, k, allowed), budget, voiced=allowed is _SPEAKS)
            if len(value) >= DOSSIER_MIN and any(n in value for n in names):
                return value
    return _opening(paras, budget) if opening else None


def passage(paras: list[str], k: int, allowed: re.Pattern[str] = _NO_VOICE) -> list[str]:
    """The paragraphs from ``paras[k]`` on that read as one passage in the narrator's voice:
    it ends before a blank line, a paragraph the narrator does not tell (:func:`told`: a
    ``【…】`` heading, a quotation, a signature, a form, a cry), one in the first or second
    person (``allowed``) or one some note took out (:func:`narrative` leaves an empty line
    there), and after one that hands over to what follows (……规则如下：); its opening words
    that point back (当然，…) left out."""
    first = paras[k]
    while (m := _BACK_REFERENCE.match(first)) is not None:
        first = first[m.end() :]
    out = [first]
    for q in paras[k + 1 :]:
        if _LEADS_ON.search(out[-1]) or not told(q) or allowed.search(q):
            break
        out.append(q)
    return out


_FORM = re.compile(r"^[^，。！？：:“”「」（）()]{1,8}[：:]")
"""A line of a form or a list (申请人：渡桥, 测试对象：干员狮蝎。, 补充：……), not the narrator's."""


def voiced(p: str, *, ours: bool = False) -> bool:
    """Is ``p`` in somebody's voice: the first or second person (我, 你, 您; with ``ours``
    the record's own 我们 too)?"""
    return (_NO_VOICE if ours else _SPEAKS).search(p) is not None


def told(p: str) -> bool:
    """Is ``p`` a paragraph a narrator tells: a statement (a sentence ending in 。, or a long
    one in ！: 直来直去的因陀罗最不喜欢的就是油腔滑调的人……只有胆小鬼才会想这些东西！), not a
    heading, a quotation, a signature or a list item (:data:`_NOT_NARRATION`), nor a line of a
    form (:data:`_FORM`), a question or a cry of somebody's monologue (凯尔希？ / 等等......)."""
    stated = (
        "。" in p
        or (
            len(p) >= DOSSIER_MIN
            and (
                p.endswith(tuple(_CLOSES))  # ……误以为“这家伙是不是走错了战场？”
                or any(x.endswith("！") and "？" not in x[-3:] for x in sentence_pieces(p))
            )
        )
    )
    return stated and not p.startswith(_NOT_NARRATION) and not _FORM.match(p)


ELISION = "……"
"""Where an excerpt over its budget leaves sentences out between its opening and its close."""


def _fit(paras: list[str], budget: int, *, voiced: bool = False) -> str:
    """Whole sentences of ``paras`` within ``budget`` characters, without the opening ones
    that point back and the closing ones whose point is left out (:func:`_no_dangling_start`,
    :func:`_no_dangling_end`); "" when the first does not fit. Over the budget, its opening
    sentences, :data:`ELISION`, and its closing ones (:func:`_close`: a passage's point is
    often its end, 澄闪 meeting her mother again); ``voiced``: only the sentences before the
    first with 我们."""
    pieces = [x for p in paras for x in sentence_pieces(one_line(p))]
    if voiced:  # the record's 我们 may stand in its paragraph, not the excerpt
        pieces = list(itertools.takewhile(lambda x: not _NO_VOICE.search(x), pieces))
    pieces = _no_dangling_end(_no_dangling_start(pieces))
    if sum(map(len, pieces)) <= budget:
        return "".join(pieces)
    close = _close(pieces[1:], budget // 3)
    head = _no_dangling_end(_within(pieces, budget - len(close) - len(ELISION)))
    if not head:
        return ""
    rest = pieces[len(head) :]
    if close and rest and "".join(rest).endswith(close):
        return "".join(head) + ELISION + close
    return "".join(_no_dangling_end(_within(pieces, budget)))


def _within(pieces: list[str], budget: int) -> list[str]:
    """The opening ``pieces`` whose lengths add up to at most ``budget``, never ending inside
    a quotation (他却表示，“任何一个政治实体都不应该和乌萨斯发生正面冲突。 is not a whole
    sentence of the paragraph)."""
    out: list[str] = []
    size = 0
    for x in pieces:
        if size + len(x) > budget:
            break
        out.append(x)
        size += len(x)
    while out and _open_quotes("".join(out)):
        out.pop()
    return out


def _open_quotes(text: str) -> bool:
    """Does ``text`` open a quotation it does not close (or close one it did not open)?"""
    return sum(text.count(c) for c in _OPENS) != sum(text.count(c) for c in _CLOSES)


def _close(pieces: list[str], budget: int) -> str:
    """The closing sentences of ``pieces`` within ``budget`` characters that read after an
    elision: none opening on what it leaves out (:data:`_POINTS_BACK`), an opening word that
    points back (于是，… 就这样，…) left out."""
    tail = list(reversed(_within(list(reversed(pieces)), budget)))
    while tail and (_POINTS_BACK.search(tail[0]) or _open_quotes("".join(tail))):
        tail.pop(0)
    if not tail:
        return ""
    first = tail[0]
    while (m := _BACK_REFERENCE.match(first)) is not None:
        first = first[m.end() :]
    return first + "".join(tail[1:])


def _opening(paras: list[str], budget: int = DOSSIER_MAX) -> str | None:
    """The passage of the section's first paragraph, in the narrator's voice, as it opens
    without a name (活泼可爱，充满朝气……; a one-line lead such as 沉默寡言的信使。 goes on
    into the next paragraph)."""
    k = next((i for i, p in enumerate(paras) if p), None)
    if k is None or not _narration(paras[k]):
        return None
    value = _fit(passage(paras, k), budget)
    return value if len(value) >= DOSSIER_MIN else None


_LEADS_ON = re.compile(
    r"(?:[：:]|(?:一个问题|一个事实|如下|以下|[一二三四五六七八九十两几]个例外|"
    r"这[一二三四五六七八九十两几]句话)[^。！]*。)$"
)
"""A sentence that hands over to what follows (……规则如下： / ……询问她一个问题。 / ……不过
其中有三个例外。 / ……一定都对这几句话很熟悉。)."""
_POINTS_BACK = re.compile(
    r"^(?:[^，。！？]{0,12}，)?[^，。！？]{0,2}(?:这|那)(?:些(?!年)|种|样|也|份|对|时)|上述|^(?:前者|后者)|"
    r"其中一员|这样的人|前一种|后一种|这个问题|^其[二三四五六七八九十]是|"
    r"^(?:那|这)(?:并|就|便|也|却)"
)
"""An opening sentence about what the paragraph before it said (华法琳小姐并不是这样的人。 /
干员送葬人就是其中一员。 / 对于这样的结果，…… / 这样的嘉维尔小姐，是……: the conclusion of what
it leaves out), or one pointing back with 上述 wherever it stands (根据干员红豆的个人强烈意愿，在
资料中为她加入上述话语。), or one opening on a bare 这/那 (这就是奥达，… / 那并没有维持多久，…).
On the real data these rules change the excerpts of 3 of 433 profiles (奥达, 龙舌兰, 缪尔赛思)."""


def _no_dangling_start(pieces: list[str]) -> list[str]:
    """``pieces`` without the opening sentences that point back at a paragraph the excerpt
    leaves out (:data:`_POINTS_BACK`)."""
    out = list(pieces)
    while out and _POINTS_BACK.search(out[0]):
        out.pop(0)
        while out and (m := _BACK_REFERENCE.match(out[0])) is not None:  # 而说服伯爵……
            out[0] = out[0][m.end() :]
    return out


_ENDED = re.compile(r"(?:[。！？!?]+[」』”’）)]*|\.{3,}|…+)$")
"""A sentence's end (…… and ...... too: a narrator's trailing off is an end)."""


def _no_dangling_end(pieces: list[str]) -> list[str]:
    """``pieces`` without the closing sentences whose point is left out: a question it does
    not answer (翎羽为何会来到罗德岛？), a lead into the next lines (:data:`_LEADS_ON`), or a
    sentence the paragraph does not finish (……从来没有半分改变—— before a quotation)."""
    out = list(pieces)
    while out and (
        out[-1].endswith(("？", "?")) or _LEADS_ON.search(out[-1]) or not _ENDED.search(out[-1])
    ):
        out.pop()
    return out


def _narration(p: str) -> bool:
    return not (
        p.startswith(_NOT_NARRATION) or _NO_VOICE.search(p) or _BACK_REFERENCE.match(p)
        or "？" in sentence_pieces(p)[0]
    )  # fmt: skip


_ANALYSIS = re.compile("分析|推论|推测|推断|猜测")
"""What a classified part that is a report's analysis says first (在分析了大量信息和情报碎片后，
我们推论出了一些事实。 / 依据干员苦根推断，……): its readings of her are the analyst's, not the
record's."""
_NOTE_HEADER = re.compile(r"【[^】]*(?:权限|语音|手记|机密)[^】]*】")
"""A header of a classified part (【权限记录】, 【医疗部语音记录】, 【散落的手记】, 【机密档案】),
not a heading of the record's own such as 【源石技艺概览】."""


def _stripped(text: str) -> list[str]:
    return [p.strip() for p in text.splitlines()]


def narrative(text: str) -> list[str]:
    """An archive text's paragraphs (lines, stripped) with everything that is not the
    narrator's taken out, an empty line left in its place (a passage never runs across it):
    a signed note at the end of a line (:func:`_unsigned`), a quotation running over several
    lines (:func:`_unquoted`: an analysis a 【权限记录】 quotes), somebody's note
    (:func:`_before_note`)."""
    return _before_note(_unquoted([_unsigned(p) for p in _stripped(text)]))


_SIGNED_TAIL = re.compile(
    r"(?<=[。！？!?…」』”’）).])[ \t\u3000]*—{2,}[ \t\u3000]*[^—。！？!?“”「」]{1,40}$"
)
"""A note signed at the end of its line: ``……急性子。————克洛丝`` (after a sentence's end)."""
_GAP = re.compile(r"(?<=[。！？!?…」』”’）)])[ \t\u3000]+")


def _unsigned(line: str) -> str:
    """``line`` without the note signed at its end (:data:`_SIGNED_TAIL`): the part before the
    last gap after a sentence (芬's ``……灵活战斗。 听人说话到一半……急性子。————克洛丝`` keeps
    its record), else nothing (the whole line is the note: ``……她会生气的。——后勤部某干员``)."""
    if line.startswith("——") or _SIGNED_TAIL.search(line) is None:
        return line
    parts = _GAP.split(line)
    return "".join(parts[:-1]).strip() if len(parts) > 1 else ""


_OPENS, _CLOSES = "“「『", "”」』"


def _unquoted(paras: list[str]) -> list[str]:
    """``paras`` with every line of a quotation that runs over several lines emptied, the line
    that opens it too: 赫拉格's 档案资料三 quotes an analysis (“他一生遭遇过……) inside a
    【权限记录】, and its 赫拉格知道他的好友策划了乌萨斯的失败 is the analyst's reading, not the
    record's (the 好友 is the enemy commander). A quoted paragraph opening with “ while one is
    open goes on with it (the quotation of several paragraphs, each opening with “ and only
    the last closed); a heading or a signature closes any quotation left open. Over the real
    archives every quotation closes."""
    out: list[str] = []
    depth = 0
    for p in paras:
        if p.startswith("【") or _signature(p):
            depth = 0
        inside = depth > 0
        if inside and p.startswith(tuple(_OPENS)):  # a quoted paragraph reopens its quotation
            depth -= 1
        depth = max(0, depth + sum(p.count(c) for c in _OPENS) - sum(p.count(c) for c in _CLOSES))
        out.append("" if inside or depth > 0 else p)
    return out


def _before_note(paras: list[str]) -> list[str]:
    """The paragraphs that are not somebody's note, an empty line where one was. A classified
    part (from its header to the next) in the first or second person or signed is one
    (凯尔希's on 推进之王 ends ``——凯尔希``; 星熊's letter opens ``博士，我想拜托您``), and so
    is one that opens as a report's analysis (:data:`_ANALYSIS`: 赫拉格's 档案资料三). A
    signature signs the paragraphs before it back to a blank line (a note is set apart from the
    record), or back to its first paragraph in the first or second person (闪灵's on 临光,
    歌蕾蒂娅's on 乌尔比安), and always the one right before it (可露希尔's one-line aside after
    见行者's record, which stays). A classified record in the archive's own voice (线人奥达，原巴
    别塔成员……) stays, and so does a record its office signs (——人事部干员) but for the
    paragraph the signature follows."""
    parts: list[list[str]] = [[]]
    for p in paras:
        if _NOTE_HEADER.match(p) and parts[-1]:
            parts.append([])
        parts[-1].append(p)
        if _signature(p):
            parts.append([])
    out: list[str] = []
    for part in parts:
        if part and _NOTE_HEADER.match(part[0]):
            lead = next((x for x in part[1:] if x), "")
            if _ANALYSIS.search(lead) or any(_SPEAKS.search(x) or _signature(x) for x in part[1:]):
                out.append("")
            else:
                out += part
            continue
        if not part or not _signature(part[-1]):
            out += part
            continue
        cut = len(part) - 2  # the paragraph the signature follows
        blank = next((i for i in range(cut - 1, -1, -1) if not part[i]), None)
        voice = next(  # a quotation is somebody quoted, not the note's own voice
            (i for i, x in enumerate(part) if _SPEAKS.search(x) and not x.startswith(_QUOTE)),
            None,
        )
        cut = min(x for x in (cut, blank, voice) if x is not None)
        out += [*part[: max(cut, 0)], ""]
    return out


def _signature(line: str) -> bool:
    """``——人事部干员``, ``——■■■``: a dash and a name, no sentence (哈洛德's record goes on
    with ``——在公示了以上身份信息后，……``)."""
    return line.startswith("——") and SENTENCE_END.search(line) is None


def record_lines(text: str) -> str:
    """The record itself: its lines up to the first that is somebody's note -- a ``【…】``
    record, a signature (``——人事部干员``), a line in the first or second person (``我收到一些
    反馈……``, ``您可以考虑……``); its first line with words always (白面鸮's opens as a search
    result: ``......`` then ``已在……为您选择了……``)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = next((i for i, ln in enumerate(lines) if _CJK_CHAR.search(ln)), len(lines) - 1)
    out = lines[: first + 1]
    for ln in lines[first + 1 :]:
        if ln.startswith("【") or _signature(ln) or _SPEAKS.search(ln):
            break
        out.append(ln)
    return "\n".join(out)


def _objective(secs: list[tuple[str, int, Mapping[str, Any]]]) -> tuple[str, Fact] | None:
    """(entry, ``客观履历``): whole sentences from the start of her archive's own
    (:data:`OBJECTIVE_MAX`)."""
    found = next(((e, i, s) for e, i, s in secs if s.get("storyTitle") == OBJECTIVE), None)
    if found is None:
        return None
    entry, i, sec = found
    texts = _story_texts(sec)
    value = first_sentences(record_lines(texts[0][1]), OBJECTIVE_MAX) if texts else ""
    if not value:
        return None
    where = f"handbookDict.{entry}.storyTextAudio[{i}].stories[{texts[0][0]}].storyText"
    return entry, Fact(OBJECTIVE, value, HANDBOOK, where)


def _field(entry: str, i: int, j: int, key: str) -> str:
    return f"handbookDict.{entry}.storyTextAudio[{i}].stories[{j}].storyText【{key}】"


def _faction_facts(anchor: Anchor, tables: Tables) -> None:
    char_id = anchor.char_id
    row = (tables.character or {}).get(char_id)
    if tables.character is None:
        anchor.gaps.append(Gap(CHARACTER, "faction", "table absent"))
        return
    if not isinstance(row, dict):
        anchor.gaps.append(Gap(CHARACTER, "faction", "no row for this operator"))
        return
    teams = tables.handbook_team or {}
    fields_used: list[str] = []
    team_ids: list[str] = []
    for key, label in FACTION_FIELDS:
        tid = row.get(key)
        if not isinstance(tid, str) or not tid:
            continue
        team = teams.get(tid)
        name = team.get("powerName") if isinstance(team, dict) else None
        if not isinstance(name, str) or not name.strip():
            continue
        anchor.facts.append(
            Fact(label, name.strip(), CHARACTER, f"{char_id}.{key}={tid} → {TEAM}.{tid}.powerName")
        )
        fields_used.append(key)
        team_ids.append(tid)
    if fields_used:
        anchor.sources.append(f"{CHARACTER}: {char_id} ({', '.join(fields_used)})")
        anchor.sources.append(f"{TEAM}: {', '.join(team_ids)}")


# -- checking a written anchor -----------------------------------------------------------


def anchor_from_section(char_id: str, body: str) -> Anchor:
    """Read a ``## 锚`` body back: ``- 字段：值`` bullets (``:`` works too); ``核心经历``
    becomes :attr:`Anchor.core`. Facts read from a file carry no provenance yet."""
    anchor = Anchor(char_id)
    for ln in body.replace("\r\n", "\n").split("\n"):
        m = re.match(r"^\s*[-*]\s+([^：:]+?)\s*[：:]\s*(.*?)\s*$", ln)
        if m is None:
            continue
        label, value = m.group(1), m.group(2)
        if label == CORE:
            anchor.core = value or None
        else:
            anchor.facts.append(Fact(label, value, "", ""))
    return anchor


_LAB = re.compile(r"源石.*(?:率|密度|度)$")
"""A measurement of the 临床诊断分析 (体细胞与源石融合率, 血液源石结晶密度, 润滑油源石结晶密度,
…), not a finding such as 赫默's 源石并发症."""


def lore_only(label: str) -> bool:
    """A field a card's lore may hold but a chat does without (:func:`chat_anchor`): the lab
    measurements (:data:`_LAB`) and a robot's 维护检测报告, 战斗经验 (and the fields the game
    writes in its place: 斗殴经验, 直播经验, …), 身高 (a robot's 高度), and 代号, the name every
    block's heading calls her by."""
    return (
        label in ("身高", "高度", "代号")
        or label.endswith("经验")
        or label.startswith("维护检测")
        or _LAB.search(label) is not None
    )


def infection_word(value: str) -> str:
    """The infection status in one word: 非感染者 / 感染者 (参照医学检测报告，确认为非感染者。 ->
    非感染者); a value with neither (未公开) as it is."""
    if "非感染者" in value:
        return "非感染者"
    return "感染者" if "感染者" in value else value


_BULLET = re.compile(r"^(\s*[-*]\s+)([^：:]+?)(\s*[：:]\s*)(.*?)\s*$")


DOSSIER_OPENING = 60
"""Characters of whole sentences small talk is shown of a 档案资料 paragraph (:func:
`chat_anchor`): its opening, so a greeting does not carry four paragraphs."""


def chat_anchor(body: str, *, brief: bool = False, keep: Collection[str] = ()) -> str:
    """A generated ``## 锚`` body as a chat receives it: its :func:`lore_only` fields left out
    (cards keep them in their lore, the profile holds them), the infection status in one word
    (:func:`infection_word`); ``brief`` (small talk: a message naming nobody and no topic),
    each 档案资料 paragraph by its opening (:data:`DOSSIER_OPENING`, ``……`` after it) but
    the sections in ``keep`` (those her ``## 我·性格`` quotes: they tell what she is like, as
    刻俄柏's hunger for food does), while a question gets them whole (塞雷娅 asked about 赫默: the failed experiment of
    档案资料三); any other line as written."""
    out = []
    for ln in body.split("\n"):
        m = _BULLET.match(ln)
        if m is None:
            out.append(ln)
            continue
        label, value = m.group(2), m.group(4)
        if lore_only(label):
            continue
        if label == INFECTION:
            ln = f"{m.group(1)}{label}{m.group(3)}{infection_word(value)}"
        elif label in DOSSIER and brief and label not in keep:
            opening = first_sentences(value, DOSSIER_OPENING)
            if len(opening) < len(one_line(value)):
                ln = f"{m.group(1)}{label}{m.group(3)}{opening}……"
        out.append(ln)
    return "\n".join(out)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def structured_fields_equal_source(
    anchor: Anchor, tables: Tables
) -> tuple[Anchor, list[Correction]]:
    """(the anchor with every structured field equal to its source, the corrections made).

    A wrong value is replaced by the source value; a structured field her sources do not
    have is removed; a source field the anchor lacks is added (at the end, source order).
    Other fields and ``核心经历`` are kept as written."""
    truth = structured_anchor(anchor.char_id, tables)
    src = {f.label: f for f in truth.facts}
    fixed: list[Fact] = []
    corrections: list[Correction] = []
    seen: set[str] = set()
    for f in anchor.facts:
        s = src.get(f.label)
        if f.label in seen and (s is not None or f.label in STRUCTURED_LABELS):
            corrections.append(Correction(f.label, f.value, None, "", "", "removed"))
            continue
        seen.add(f.label)
        if s is not None:
            if not _same(f.value, s.value):
                corrections.append(
                    Correction(f.label, f.value, s.value, s.table, s.field, "replaced")
                )
            fixed.append(s)
        elif f.label in STRUCTURED_LABELS:
            corrections.append(Correction(f.label, f.value, None, "", "", "removed"))
        else:
            fixed.append(f)
    for s in truth.facts:
        if s.label not in seen:
            corrections.append(Correction(s.label, None, s.value, s.table, s.field, "added"))
            fixed.append(s)
    return replace(anchor, facts=fixed, sources=truth.sources, gaps=truth.gaps), corrections
