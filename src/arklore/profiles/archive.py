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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from arklore.core.text import SENTENCE_END, first_sentences, sentence_pieces
from arklore.names.registry import archive_names

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
DOSSIER_MAX = 200
DOSSIER_MIN = 20
"""Per ``档案资料`` section, one excerpt of ``DOSSIER_MIN``-``DOSSIER_MAX`` characters: whole
sentences from the start of its first paragraph that names her, in the narrator's voice (no
我/你/您: a signed note or a word to the Doctor is somebody else's), not a ``【…】`` record or a
quotation. Her character and history in the game's words (炎熔: 嘴巴倔，做事一点都听不进去别人的
指指点点。但是其实炎熔心中一直都有比谁都温柔和孩子气的一面……) without a model. 200, not
120: a paragraph's point often follows its first sentence (芬's 三人性格明明各异，却……成为了彼此
心里的支柱 after how the three met; 地灵's trust in Rhodes after how she was infected); over the
real archives the excerpts grow from 74,623 to 98,508 characters (4 per operator at most, well
within the persona budget)."""
_NOT_NARRATION = ("【", "——", "“", "「", "-", "*")
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
_BODY_TAGS = ("体重", "重量", "角长度", "尾巴长度")
_UNDISCLOSED = ("未公开", "未知", "不明", "保密", "不公开", "——", "■")


def _disclosed(value: str) -> bool:
    """A value that says something (not 未公开 / 未知 / 保密 / redacted): worth a tag."""
    return not any(u in value for u in _UNDISCLOSED)


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
        """``## 物理标签`` derived by code from the facts: race, height, body measures
        (undisclosed values skipped), infection status and visible crystals."""
        tags: list[str] = []
        race = self.value("种族")
        if race and _disclosed(race):
            tags.append(race)
        for label in ("身高", "高度", *_BODY_TAGS):
            v = self.value(label)
            if v and _disclosed(v):
                tags.append(f"{label} {v}")
        inf = self.value(INFECTION)
        if inf:
            if "非感染者" in inf:
                tags.append("非感染者")
            elif "感染者" in inf:
                tags.append("感染者")
            if re.search(r"体表有[^，。,]*源石结晶", inf):
                tags.append("体表可见源石结晶")
        return tags


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
                if (x := dossier_excerpt(text, names, opening=opening))
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


def dossier_excerpt(text: str, names: list[str], *, opening: bool = False) -> str | None:
    """The excerpt of one ``档案资料`` text (the rule of :data:`DOSSIER_MAX`), or None: no
    opening word that points back at a paragraph it leaves out, no closing question whose
    answer it leaves out (翎羽为何会来到罗德岛？). A paragraph in the record's own "we"
    (……我们很难想象) only where no other paragraph names her, and only for sentences without
    it: those paragraphs are mostly about the inquiry, yet 铃兰's parents are told in one.
    Nothing from a classified part that is somebody's note (凯尔希's on 推进之王, 星熊's letter
    about 陈), however it reads. ``opening`` (``档案资料一``, which introduces her): when no
    paragraph names her, its first paragraph as it opens (:func:`_opening`)."""
    paras = _before_note(_stripped(text))
    for allowed in (_NO_VOICE, _SPEAKS):
        for p in paras:
            if not p or p.startswith(_NOT_NARRATION) or allowed.search(p):
                continue
            while (m := _BACK_REFERENCE.match(p)) is not None:
                p = p[m.end() :]
            pieces = sentence_pieces(first_sentences(p, DOSSIER_MAX))
            if allowed is _SPEAKS:  # the record's 我们 may stand in its paragraph, not the excerpt
                pieces = list(itertools.takewhile(lambda x: not _NO_VOICE.search(x), pieces))
            value = "".join(_no_dangling_end(_no_dangling_start(pieces)))
            if DOSSIER_MIN <= len(value) <= DOSSIER_MAX and any(n in value for n in names):
                return value
    return _opening(paras) if opening else None


def _opening(paras: list[str]) -> str | None:
    """The section's first paragraph, in the narrator's voice, as it opens without a name (活泼
    可爱，充满朝气……; a one-line lead such as 沉默寡言的信使。 goes on into the next paragraph)."""
    lead = [p for p in paras if p]
    if not lead or not _narration(lead[0]):
        return None
    text = lead[0]
    if len(first_sentences(text, DOSSIER_MAX)) < DOSSIER_MIN and len(lead) > 1:
        text = lead[0] + lead[1] if _narration(lead[1]) else text
    value = "".join(_no_dangling_end(sentence_pieces(first_sentences(text, DOSSIER_MAX))))
    return value if DOSSIER_MIN <= len(value) <= DOSSIER_MAX else None


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


def _no_dangling_end(pieces: list[str]) -> list[str]:
    """``pieces`` without the closing sentences whose point is left out: a question it does
    not answer (翎羽为何会来到罗德岛？) or a lead into the next lines (:data:`_LEADS_ON`)."""
    out = list(pieces)
    while out and (out[-1].endswith(("？", "?")) or _LEADS_ON.search(out[-1])):
        out.pop()
    return out


def _narration(p: str) -> bool:
    return not (
        p.startswith(_NOT_NARRATION) or _NO_VOICE.search(p) or _BACK_REFERENCE.match(p)
        or "？" in sentence_pieces(p)[0]
    )  # fmt: skip


_NOTE_HEADER = re.compile(r"【[^】]*(?:权限|语音|手记|机密)[^】]*】")
"""A header of a classified part (【权限记录】, 【医疗部语音记录】, 【散落的手记】, 【机密档案】),
not a heading of the record's own such as 【源石技艺概览】."""


def _stripped(text: str) -> list[str]:
    return [p.strip() for p in text.splitlines()]


def _before_note(paras: list[str]) -> list[str]:
    """The paragraphs that are not somebody's note. A classified part (from its header to the
    next) in the first or second person or signed is one (凯尔希's on 推进之王 ends ``——凯尔希``;
    星熊's letter opens ``博士，我想拜托您``); so is a signed run without a header, from its
    first paragraph in the first or second person to the signature (闪灵's on 临光, 歌蕾蒂娅's
    on 乌尔比安, 可露希尔's one-line aside after 见行者's record, which stays). A classified
    record in the archive's own voice (线人奥达，原巴别塔成员……) stays, and so does a record its
    office signs (——人事部干员)."""
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
            if not any(_SPEAKS.search(x) or _signature(x) for x in part[1:]):
                out += part
            continue
        signed = bool(part) and _signature(part[-1])
        voice = next(  # a quotation is somebody quoted, not the note's own voice
            (i for i, x in enumerate(part) if _SPEAKS.search(x) and not x.startswith(_QUOTE)),
            None,
        )
        out += part[:voice] if signed and voice is not None else part
    return out


_QUOTE = ("“", "「", '"', "『")
_NO_VOICE = re.compile("[我你您]")
"""Any first or second person, the record's own 我们 too."""
_CJK_CHAR = re.compile("[\u3400-\u9fff]")
_SPEAKS = re.compile(r"(?<![自敌])我(?!们)|[你您]")
"""A voice in the first or second person: 我 (not 我们, the record's own "we", nor 自我/敌我),
你, 您."""


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
