"""Curation helpers: propose named relations for one person from the corpus, with evidence.

``arklore curate candidates <operator>`` prints what this module finds, for a person to
confirm or reject before writing a ``[[relation]]`` into the matrix. Nothing here decides a
relation: every candidate comes with the lines that suggest it and their context.

Signals for the person X and another person Y (X's stages: every primary stage where one of
X's speaker names speaks):

* ``vocative_by`` / ``vocative_to`` -- X addresses Y by name (possibly with a title: 银灰哥哥),
  or Y addresses X;
* ``kin_by`` / ``kin_to`` -- X addresses someone by a kinship or role word (姐姐, 队长, ...) and
  Y speaks within +-:data:`WINDOW` lines; or Y does so with X speaking nearby;
* ``kin_named`` -- X names Y with a kinship or role word right next to the name (妹妹Y, Y姐姐);
* ``archive_by`` / ``archive_to`` -- sentences of X's archive (handbook) naming Y, or of Y's
  naming X (``handbook_info_table.json``; it is a 2024 snapshot, newer operators have none).
  Sentences are shown, never stored;
* interaction from the relation graph built without LLM: turns, vocatives, co-stages,
  mentions and the edge strength.

A kinship or role word also yields a *suggested* predicate (:data:`KIN_WORDS`), which a person
must still check: 姐姐 is also said to friends.

:func:`central_operators` ranks operators by story lines (every speaker name the alias table
resolves to them, alternate forms folded into the base), the set the shipped matrix covers.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arklore.core.errors import AmbiguousNameError, UnknownNameError
from arklore.core.model import DOCTOR, DOCTOR_NAMES, Line, LineKind
from arklore.corpus.store import Store
from arklore.extract.presence import WINDOW, vocatives
from arklore.graph.interaction import is_generic_role
from arklore.graph.model import DOCTOR_ID, RelationGraph
from arklore.graph.people import People, is_unknown_speaker
from arklore.names.aliases import AliasTable
from arklore.sources.gamedata import read_table

# (suggested predicate, its subject, words): subject "addressee" means the one called by the
# word is the subject of a directed predicate (X calls Y 老师 -> Y 师徒 X); "both" = either way.
_KIN_GROUPS: tuple[tuple[str, str, str], ...] = (
    ("近亲", "both", "姐姐 妹妹 哥哥 弟弟 姐 哥 大姐 大哥 二哥 小妹 老妹 父亲 母亲 爸爸 妈妈 爸 妈"
     " 老爸 老妈 爹 娘 父王 母后 舅舅 叔叔 伯伯 姑姑 阿姨 姨妈 爷爷 奶奶 外公 外婆 祖父 祖母"
     " 女儿 儿子 孩子 侄女 侄子 外甥 外甥女 姐夫 嫂子"),
    ("远亲", "both", "表姐 表妹 表哥 表弟 堂姐 堂妹 堂哥 堂弟"),
    ("师徒", "addressee", "老师 师父 师傅 导师 教官"),
    ("上下级", "addressee", "队长 长官 团长 头儿 老大 老板 将军 指挥官 领袖 首领 组长 局长 会长"
     " 舰长 殿下 陛下"),
    ("主仆", "addressee", "主人 大小姐 少爷 老爷"),
    ("战友", "both", "搭档 伙伴 战友"),
    ("同事", "both", "前辈 学姐 学长 师姐 师兄 同事"),
)  # fmt: skip
KIN_WORDS: dict[str, tuple[str, str]] = {
    w: (pred, subject) for pred, subject, words in _KIN_GROUPS for w in words.split()
}
"""Kinship and role words looked for as vocatives and next to names, with the predicate they
suggest. A suggestion, not a verdict. Plain honorifics (小姐, 先生, 女士) are left out: they are
said to anyone."""

_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]?")


# -- people ------------------------------------------------------------------------------------


def operator_line_counts(store: Store, table: AliasTable) -> dict[str, int]:
    """Base char id -> story lines spoken under every speaker name the table resolves to it."""
    out: dict[str, int] = defaultdict(int)
    for name, (n, _stages) in store.speaker_counts().items():
        cid = table.resolve(name).char_id
        if cid is not None:
            out[table.base_of(cid)] += n
    return dict(out)


def central_operators(store: Store, n: int, table: AliasTable) -> list[str]:
    """The ``n`` operators with the most story lines (base char ids, most lines first; ties by
    id), names resolved through ``table`` (the store's alias table)."""
    counts = operator_line_counts(store, table)
    return [cid for cid, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def resolve_person(name: str, people: People, speaker_names: Iterable[str]) -> str:
    """An operator name/alias/id, 博士, a speaker name or ``npc:<name>`` -> node id.

    Raises UnknownNameError (with close names) or AmbiguousNameError."""
    clean = name.strip()
    if clean in DOCTOR_NAMES:
        return DOCTOR_ID
    op = people.operator(clean)
    if op is not None:
        return op
    res = people.table.resolve(clean)
    if res.ambiguous:
        raise AmbiguousNameError(clean, list(res.ids))
    speakers = set(speaker_names)
    if clean.startswith("npc:") and clean[4:].strip() in speakers:
        clean = clean[4:].strip()
    if clean in speakers and not is_unknown_speaker(clean):
        nid = people.node(clean)
        if nid is not None:
            return nid
    pool = sorted(speakers | {op.name for op in people.registry.operators.values()})
    close = difflib.get_close_matches(clean, pool, n=5, cutoff=0.5)
    raise UnknownNameError(
        f"{clean!r} is no operator or speaker",
        hint=f"close names: {', '.join(close)}" if close else "check the spelling",
    )


# -- results -----------------------------------------------------------------------------------


@dataclass(slots=True)
class ContextLine:
    line_id: str
    speaker: str
    text: str
    focus: bool = False  # the evidence line itself


@dataclass(slots=True)
class EvidenceItem:
    signal: str  # vocative_by | vocative_to | kin_by | kin_to | kin_named
    line_id: str
    word: str | None  # the kinship/role word, if any
    context: list[ContextLine] = field(default_factory=list)


@dataclass(slots=True)
class ArchiveSentence:
    signal: str  # archive_by | archive_to
    char_id: str  # whose archive
    title: str  # the archive section (storyTitle)
    sentence: str


@dataclass(slots=True)
class Suggestion:
    source: str  # node id
    target: str
    predicate: str
    because: str  # the word and how often


@dataclass(slots=True)
class Candidate:
    node: str
    name: str
    score: float = 0.0
    signals: dict[str, int] = field(default_factory=dict)
    words: dict[str, int] = field(default_factory=dict)
    interaction: dict[str, float] = field(default_factory=dict)
    suggestions: list[Suggestion] = field(default_factory=list)
    evidence: list[EvidenceItem] = field(default_factory=list)
    archive: list[ArchiveSentence] = field(default_factory=list)


@dataclass(slots=True)
class CandidateReport:
    node: str
    name: str
    speaker_names: list[str]
    stages: int
    lines: int
    candidates: list[Candidate]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the scan ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Acc:
    signals: Counter[str] = field(default_factory=Counter)
    words: Counter[str] = field(default_factory=Counter)
    word_sides: Counter[tuple[str, str]] = field(default_factory=Counter)  # (word, "by"|"to")
    evidence: list[EvidenceItem] = field(default_factory=list)
    archive: list[ArchiveSentence] = field(default_factory=list)


class _Scan:
    def __init__(self, store: Store, people: People, me: str, per_signal: int) -> None:
        self.store = store
        self.people = people
        self.me = me
        self.per_signal = per_signal
        self.acc: dict[str, _Acc] = defaultdict(_Acc)
        counts = store.speaker_counts()
        rows = [(name, n) for name, (n, _) in counts.items()]
        self.speaker_lines = dict(rows)
        self.admitted = people.admission.admitted(store, counts)  # the graph's NPC nodes
        self.known = (
            {n for n, _ in rows if n and not is_unknown_speaker(n)}
            | set(people.table.surfaces())
            | set(DOCTOR_NAMES)
            | set(KIN_WORDS)
        )
        self.my_names = sorted(n for n, _ in rows if people.node(n) == me)

    def node_of(self, line: Line) -> str | None:
        if line.kind is LineKind.CHOICE:
            return DOCTOR_ID
        if not line.speaker:
            return None
        return self.people.node(line.speaker)

    def person(self, name: str) -> str | None:
        """A vocative name -> node, leaving out one-scene extras and generic roles."""
        nid = self.people.node(name)
        if nid is None or nid == DOCTOR_ID or not nid.startswith("npc:"):
            return nid
        if name not in self.admitted or is_generic_role(name):
            return None
        return nid

    def add(
        self, other: str, signal: str, line: Line, lines: list[Line], word: str | None = None
    ) -> None:
        if other == self.me:
            return
        a = self.acc[other]
        a.signals[signal] += 1
        if word:
            a.words[word] += 1
            a.word_sides[(word, signal.rsplit("_", 1)[-1])] += 1
        if sum(e.signal == signal for e in a.evidence) < self.per_signal:
            lo, hi = max(0, line.line_no - 1 - WINDOW), min(len(lines), line.line_no + WINDOW)
            ctx = [
                ContextLine(x.line_id, x.speaker, x.text, x.line_no == line.line_no)
                for x in lines[lo:hi]
            ]
            a.evidence.append(EvidenceItem(signal, line.line_id, word, ctx))

    def stage(self, lines: list[Line]) -> int:
        nodes = [self.node_of(x) for x in lines]
        mine = 0
        for i, line in enumerate(lines):
            who = nodes[i]
            if who is None or line.kind is LineKind.CHOICE:
                continue
            mine += who == self.me
            # the speakers within WINDOW lines, herself (nodes[i] is who) excluded
            window = nodes[max(0, i - WINDOW) : i + WINDOW + 1]
            near = {n for n in window if n is not None and n != who}
            for name in vocatives(line.text, self.known):
                if name in KIN_WORDS:
                    if who == self.me:
                        for other in near:
                            self.add(other, "kin_by", line, lines, name)
                    elif self.me in near:
                        self.add(who, "kin_to", line, lines, name)
                    continue
                target = self.person(name)
                if target is None or target == who:
                    continue
                word = next((w for w in KIN_WORDS if name + w in line.text), None)
                if who == self.me:
                    self.add(target, "vocative_by", line, lines, word)
                elif target == self.me:
                    self.add(who, "vocative_to", line, lines, word)
            if who == self.me:
                self._kin_named(line, lines)
        return mine

    def _kin_named(self, line: Line, lines: list[Line]) -> None:
        text = line.text
        for m in self.people.matcher.find(text):
            if m.char_id is None:
                continue
            other = self.people.base(m.char_id)
            for w in KIN_WORDS:
                if len(w) < 2:
                    continue
                if text.startswith(w, m.end) or text[: m.start].endswith(w):
                    self.add(other, "kin_named", line, lines, w)
                    break


def _archive(
    scan: _Scan, handbook: dict[str, Any] | None, me: str, npc_names: dict[str, str]
) -> None:
    """Archive sentences of X naming Y (archive_by) and of Y naming X (archive_to)."""
    if not handbook:
        return
    people = scan.people
    entries = handbook.get("handbookDict") or {}
    for cid in sorted(entries):
        if cid not in people.registry.operators:
            continue
        owner = people.base(cid)
        for section in entries[cid].get("storyTextAudio") or []:
            title = str(section.get("storyTitle") or "")
            for story in section.get("stories") or []:
                text = story.get("storyText") or ""
                for sentence in _SENTENCE.findall(text):
                    sentence = sentence.strip()
                    named = {
                        people.base(m.char_id)
                        for m in people.matcher.find(sentence)
                        if m.char_id is not None
                    }
                    if owner == me:
                        named |= {nid for nid, nm in npc_names.items() if nm in sentence}
                        for other in sorted(named - {me}):
                            _add_archive(scan, other, "archive_by", cid, title, sentence)
                    elif me in named:
                        _add_archive(scan, owner, "archive_to", cid, title, sentence)


def _add_archive(scan: _Scan, other: str, signal: str, cid: str, title: str, sent: str) -> None:
    a = scan.acc[other]
    a.signals[signal] += 1
    if sum(x.signal == signal for x in a.archive) < scan.per_signal:
        a.archive.append(ArchiveSentence(signal, cid, title, sent))


def _suggest(me: str, other: str, acc: _Acc) -> list[Suggestion]:
    out: dict[tuple[str, str, str], list[str]] = {}
    for (word, side), n in acc.word_sides.most_common():
        pred, subject = KIN_WORDS[word]
        speaker, addressee = (me, other) if side == "by" else (other, me)
        if side == "named":  # X names Y with the word: Y is X's <word>
            speaker, addressee = me, other
        pairs = []
        if subject == "both":
            pairs = [(speaker, addressee), (addressee, speaker)]
        else:
            pairs = [(addressee, speaker)]
        for s, t in pairs:
            out.setdefault((s, t, pred), []).append(f"{word}×{n}")
    return [Suggestion(s, t, p, ", ".join(why)) for (s, t, p), why in out.items()]


# score = sum(weight * log(1 + count)) + 10 * graph strength: only orders the list
_WEIGHTS = {
    "vocative_by": 2.0, "vocative_to": 2.0, "kin_by": 1.0, "kin_to": 1.0, "kin_named": 3.0,
    "archive_by": 2.0, "archive_to": 2.0,
}  # fmt: skip


def candidates(
    store: Store,
    people: People,
    who: str,
    *,
    graph: RelationGraph | None = None,
    handbook: dict[str, Any] | None = None,
    limit: int = 15,
    per_signal: int = 3,
    only: str | None = None,
) -> CandidateReport:
    """Relations worth curating for ``who`` (a name, alias, char id, 博士 or NPC speaker).

    ``graph`` is the relation graph built without LLM (interaction signals; candidates also
    come from its strongest edges); ``handbook`` is the parsed ``handbook_info_table.json``;
    ``only`` restricts the result to one other person (a name or node id).
    """
    speakers = [n for (n,) in store.conn.execute("SELECT name FROM speakers")]
    me = resolve_person(who, people, speakers)
    target = resolve_person(only, people, speakers) if only else None
    scan = _Scan(store, people, me, per_signal)
    names = scan.my_names or ([DOCTOR] if me == DOCTOR_ID else [])
    stages: list[str] = []
    if names:
        marks = ",".join("?" * len(names))
        stages = [
            p
            for (p,) in store.conn.execute(
                "SELECT s.stage_path FROM primary_stages s WHERE EXISTS (SELECT 1 FROM lines l"
                " WHERE l.source = s.source AND l.stage_path = s.stage_path"
                f" AND l.speaker IN ({marks})) ORDER BY s.order_rank, s.stage_path",
                names,
            )
        ]
    spoken = sum(scan.stage(store.lines(p)) for p in stages)
    npc_names = {nid: nm for nm in speakers if (nid := scan.person(nm)) and nid.startswith("npc:")}
    if graph is not None:
        npc_names.update(
            {k: n.name for k, n in graph.nodes.items() if n.kind == "npc" and len(n.name) >= 2}
        )
    npc_names.pop(DOCTOR_ID, None)
    wanted_npcs = {k: v for k, v in npc_names.items() if k in scan.acc or k == target}
    _archive(scan, handbook, me, wanted_npcs)

    pool = set(scan.acc)
    if graph is not None:
        pool |= {e.target for e in graph.ranked(me)[:limit]}
    if target is not None:
        pool = {target}
    out = []
    for other in pool:
        if other == me:
            continue
        acc = scan.acc.get(other) or _Acc()
        inter: dict[str, float] = {}
        if graph is not None:
            edges = graph.get_relation(me, other)
            if edges:
                e = edges[0]
                inter = {"strength": e.strength}
                inter.update({k: v for k, v in e.signals.items() if k != "matrix"})
        score = sum(_WEIGHTS.get(k, 0.0) * math.log1p(v) for k, v in acc.signals.items())
        score += 10.0 * float(inter.get("strength", 0.0))
        out.append(
            Candidate(
                node=other,
                name=_name(other, people, graph, npc_names),
                score=round(score, 2),
                signals=dict(acc.signals),
                words=dict(acc.words.most_common()),
                interaction=inter,
                suggestions=_suggest(me, other, acc),
                evidence=acc.evidence,
                archive=acc.archive,
            )
        )
    out.sort(key=lambda c: (-c.score, c.node))
    return CandidateReport(
        node=me,
        name=_name(me, people, graph, npc_names),
        speaker_names=scan.my_names,
        stages=len(stages),
        lines=spoken,
        candidates=out[:limit] if target is None else out,
    )


def _name(nid: str, people: People, graph: RelationGraph | None, npc: dict[str, str]) -> str:
    if nid == DOCTOR_ID:
        return DOCTOR
    if graph is not None and nid in graph.nodes:
        return graph.nodes[nid].name
    if nid.startswith("npc:"):
        return npc.get(nid, nid[4:])
    return people.operator_name(nid)


def load_handbook(excel_root: Path | None) -> dict[str, Any] | None:
    """The parsed ``handbook_info_table.json`` under ``excel_root``, or None without it."""
    if excel_root is None:
        return None
    return read_table(excel_root, "handbook_info_table")


@dataclass(slots=True)
class SearchHit:
    line_id: str
    context: list[ContextLine]


def search_lines(
    store: Store,
    people: People,
    text: str,
    *,
    speaker: str | None = None,
    near: str | None = None,
    limit: int = 20,
) -> list[SearchHit]:
    """Primary-corpus lines containing ``text`` (optionally spoken by ``speaker``, optionally
    with ``near`` speaking within +-:data:`WINDOW` lines), in story order, with context."""
    speakers = list(store.speaker_counts())
    sp = resolve_person(speaker, people, speakers) if speaker else None
    nr = resolve_person(near, people, speakers) if near else None
    names = [n for n in speakers if people.node(n) == sp] if sp else []
    if sp == DOCTOR_ID:
        names = sorted(set(names) | {DOCTOR})
    if sp and not names:
        return []
    cache: dict[str, list[Line]] = {}
    out: list[SearchHit] = []
    for stage, no in store.find_text(text, speakers=names or None):
        lines = cache.get(stage)
        if lines is None:
            lines = cache[stage] = store.lines(stage)
        lo, hi = max(0, no - 1 - WINDOW), min(len(lines), no + WINDOW)
        window = lines[lo:hi]
        if nr is not None and not any(
            x.speaker
            and people.node(x.speaker) == nr
            or (nr == DOCTOR_ID and x.kind is LineKind.CHOICE)
            for x in window
        ):
            continue
        ctx = [ContextLine(x.line_id, x.speaker, x.text, x.line_no == no) for x in window]
        out.append(SearchHit(lines[no - 1].line_id, ctx))
        if len(out) >= limit:
            break
    return out
