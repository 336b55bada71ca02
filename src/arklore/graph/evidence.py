"""What the corpus proves about a pair, so a relation can be described without a model.

For each wanted ordered pair ``(A, B)`` (A's view of B) one pass over the spoken lines
gathers, with the interaction scan's own rules (:func:`arklore.graph.interaction.scan`: the
same turns, the same vocative rule of :mod:`arklore.core.vocatives`, the same people):

* how A addresses B: the forms as written (``凯尔希医生``) and how many lines use each;
* how many stages both speak in, and the stages/events where they exchange most turns;
* who answers whom (A's lines right after B's, and the other way round), and who says more
  in the stages both speak in;
* the exchanges themselves (line references, not copies), for a model to read.

Nothing here writes text about the pair: :mod:`arklore.rag.evidence` does, from these facts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from arklore.core.kinship import is_term_word
from arklore.corpus.store import Store
from arklore.graph.interaction import Pairs, ScanLine, VocativeFinder, load_spoken, scan
from arklore.graph.people import People

MAX_FORMS = 3
"""Vocative forms kept per pair (most used first)."""


@dataclass(slots=True)
class PairFacts:
    """Facts about A's view of B (``source`` -> ``target``), from the corpus only."""

    source: str
    target: str
    forms: list[tuple[str, int]] = field(default_factory=list)  # (form as written, lines)
    vocatives_back: int = 0  # lines where B calls A by name
    turns: int = 0  # turns between the two (either order)
    a_answers: int = 0  # turns where A speaks right after B
    b_answers: int = 0  # turns where B speaks right after A
    shared_stages: int = 0  # stages where both speak
    a_lines: int = 0  # A's dialogue lines in those stages
    b_lines: int = 0  # B's dialogue lines in those stages
    stage_turns: list[tuple[str, int]] = field(default_factory=list)  # most turns first
    events: list[tuple[str, int]] = field(default_factory=list)  # (event name, turns)
    exchanges: list[tuple[ScanLine, ScanLine]] = field(default_factory=list)  # story order
    answering: set[str] = field(default_factory=set)  # ids of exchange openers said to a third
    to_others: set[str] = field(default_factory=set)  # ids of exchange lines calling only others
    vocative_lines: list[ScanLine] = field(default_factory=list)  # A calling B by name
    shared_lines: list[str] = field(
        default_factory=list
    )  # A's and B's first lines in a shared stage

    @property
    def vocatives(self) -> int:
        return sum(n for _, n in self.forms)

    def has_any(self) -> bool:
        return bool(self.forms or self.turns or self.shared_stages or self.vocatives_back)

    def representative(self) -> list[str]:
        """Line ids of one exchange that shows the pair: A calling B by name in the stage
        where they talk most, else the first turn of that stage, else any vocative line."""
        top = self.stage_turns[0][0] if self.stage_turns else None
        for ln in self.vocative_lines:
            if ln.stage_path == top:
                pair = next((x for x in self.exchanges if ln in x), None)
                return [x.line_id for x in pair] if pair else [ln.line_id]
        for prev, cur in self.exchanges:
            if prev.stage_path == top:
                return [prev.line_id, cur.line_id]
        if self.vocative_lines:
            return [self.vocative_lines[0].line_id]
        return list(self.shared_lines)  # in the same scene, never answering each other


@dataclass(slots=True)
class _Said:
    forms: Counter[str] = field(default_factory=Counter)
    lines: list[ScanLine] = field(default_factory=list)


def event_names(store: Store, stages: Iterable[str] | None = None) -> dict[str, str]:
    """stage_path -> the event (or chapter) it belongs to, for stages that name one (of
    ``stages`` only, when given)."""
    out: dict[str, str] = {}
    for info in store.stage_infos(stages):
        name = (info.event_name or info.story_name or "").strip()
        if name:
            out[info.stage_path] = name
    return out


def _unordered(a: str, b: str) -> tuple[str, str]:
    """The pair's key with either order: the two ids sorted."""
    return (a, b) if a <= b else (b, a)


FACTS_VERSION = "4"  # 3: no exchange across a scene cut; 4: PairFacts.to_others
"""Bump when :func:`pair_facts` or what it returns changes: stored facts of another version
are computed again (:meth:`arklore.graph.facade.GraphFacade.facts`)."""


def pair_facts(
    store: Store,
    people: People,
    pairs: Iterable[tuple[str, str]],
    *,
    lines: list[ScanLine] | None = None,
) -> dict[tuple[str, str], PairFacts]:
    """Facts for every ordered pair in ``pairs`` (node ids as in the graph); a pair the corpus
    says nothing about gets empty facts. ``lines`` reuses an earlier :func:`load_spoken`."""
    wanted = set(pairs)
    unordered = {_unordered(a, b) for a, b in wanted}
    whole = lines is None
    if lines is None:
        lines = load_spoken(store, people)
    turns: dict[tuple[str, str], list[tuple[ScanLine, ScanLine]]] = defaultdict(list)  # sorted
    answering: dict[tuple[str, str], set[str]] = defaultdict(set)  # (see PairFacts.answering)
    said: dict[tuple[str, str], _Said] = defaultdict(_Said)  # (speaker, addressee)
    speakers: dict[str, Counter[str]] = defaultdict(Counter)  # stage -> node -> dialogue lines
    first_line: dict[tuple[str, str], str] = {}  # (stage, node) -> its first dialogue line
    for ln in lines:
        if ln.node is not None and ln.dialogue:
            speakers[ln.stage_path][ln.node] += 1
            first_line.setdefault((ln.stage_path, ln.node), ln.line_id)
    known = {ln.node for ln in lines if ln.node}
    voc = VocativeFinder(people, known)

    last: dict[str, tuple[ScanLine, ScanLine]] = {}  # stage -> its latest turn

    def on_turn(prev: ScanLine, cur: ScanLine) -> None:
        if prev.node is None or cur.node is None:  # scan pairs attributed lines only
            return
        before = last.get(prev.stage_path)
        last[prev.stage_path] = (prev, cur)
        key = _unordered(prev.node, cur.node)
        if key in unordered:
            turns[key].append((prev, cur))
            if (  # prev answers somebody else: 地灵's 你很有天赋 to 艾雅法拉, then 普罗旺斯 comes in
                before is not None
                and before[1].line_id == prev.line_id
                and before[0].node not in (prev.node, cur.node)
            ):
                answering[key].add(prev.line_id)

    calls: dict[str, list[str]] = {}  # line id -> whom it calls by a name (not 父亲, 队长)

    def on_line(ln: ScanLine, targets: list[str], _pairs: Pairs) -> None:
        if not targets:
            return
        me = ln.node
        forms = voc.forms(ln.text)
        named = [nid for nid, form in forms if not is_term_word(form)]
        if named:
            calls[ln.line_id] = named
        if me is None or not any((me, t) in wanted or (t, me) in wanted for t in targets):
            return
        seen: set[tuple[str, str]] = set()  # (addressee, form)
        for nid, form in forms:
            if nid == me or (nid, form) in seen:
                continue
            seen.add((nid, form))
            d = said[(me, nid)]
            d.forms[form] += 1
            if not d.lines or d.lines[-1] is not ln:
                d.lines.append(ln)

    scan(lines, people, {}, on_line=on_line, on_turn=on_turn)

    def _to_others(ln: ScanLine, a: str, b: str) -> bool:
        """The line calls by name only people other than A and B, one of whom speaks in its
        stage: 陈's 塔露拉，你做的这些… between 阿米娅 and 陈 is not to 阿米娅. A name nobody
        speaks under there proves nothing (someone called from afar, or one of the two shown
        under a name the scan does not tie to them); nor does the answer to a line
        that calls its speaker by name (埃芒加德's 锡人先生，… after 珀耳's …埃芒加德小姐，您有什么
        要吩咐的吗？). The other way round proves nothing: 阿米娅's 麻烦你，陈长官！ follows 陈's
        line to 塔露拉."""
        named = calls.get(ln.line_id)
        if not named or a in named or b in named:
            return False
        return any(n in speakers[ln.stage_path] for n in named)

    # the events of the stages read (a few, for one pair's facts: not every stage's)
    events = event_names(store, None if whole else {ln.stage_path for ln in lines})
    by_first: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in unordered:
        by_first[key[0]].append(key)
    shared: Counter[tuple[str, str]] = Counter()
    first_shared: dict[tuple[str, str], str] = {}  # pair -> a stage both speak in
    # (speaker, other) -> speaker's lines in shared stages
    said_lines: Counter[tuple[str, str]] = Counter()
    for stage, nodes in speakers.items():
        for node in nodes:
            for key in by_first.get(node, ()):
                if key[1] in nodes:
                    shared[key] += 1
                    first_shared.setdefault(key, stage)
                    said_lines[key] += nodes[key[0]]
                    said_lines[(key[1], key[0])] += nodes[key[1]]
    out: dict[tuple[str, str], PairFacts] = {}
    for a, b in wanted:
        key = _unordered(a, b)
        both = turns.get(key)
        mine = said.get((a, b))
        back = said.get((b, a))
        f = PairFacts(a, b, shared_stages=shared[key], a_lines=said_lines[(a, b)],
                      b_lines=said_lines[(b, a)])  # fmt: skip
        if key in first_shared:
            stage = first_shared[key]
            f.shared_lines = [first_line[(stage, a)], first_line[(stage, b)]]
        if mine is not None:
            f.forms = sorted(mine.forms.items(), key=lambda x: (-x[1], x[0]))[:MAX_FORMS]
            f.vocative_lines = list(mine.lines)
        if back is not None:
            f.vocatives_back = len(back.lines)
        if both:
            f.exchanges = list(both)
            f.answering = set(answering.get(key, ()))
            answers = {cur.line_id for prev, cur in both if cur.node in calls.get(prev.line_id, ())}
            f.to_others = {
                ln.line_id
                for turn in both
                for ln in turn
                if ln.line_id not in answers and _to_others(ln, a, b)
            }
            f.turns = len(both)
            f.a_answers = sum(cur.node == a for _, cur in both)
            f.b_answers = f.turns - f.a_answers
            per_stage = Counter(prev.stage_path for prev, _ in both)
            f.stage_turns = sorted(per_stage.items(), key=lambda x: (-x[1], x[0]))
            per_event: Counter[str] = Counter()
            for stage, n in per_stage.items():
                if stage in events:
                    per_event[events[stage]] += n
            f.events = sorted(per_event.items(), key=lambda x: (-x[1], x[0]))
        out[(a, b)] = f
    return out
