"""Deterministic checks on proposed story events: the program, not the model, decides.

Each check is a separate function so it can be tested (and broken on purpose, see
``bench/check_gate_mutants.py``) on its own. Nothing is silently repaired: what a check
changes or removes is recorded next to what the model wrote.

* :func:`check_range` — ``line_start``/``line_end`` must be real ints (gate 1's rule); a
  range is clamped to the chunk the model saw (so to the stage), a reversed one is swapped,
  one outside the chunk drops the event;
* :func:`merge_overlapping` — chunks overlap by a few lines, so one happening near a
  boundary is proposed by both chunks: events of different chunks whose line ranges overlap
  are merged into one, so a happening never becomes two memories;
* :func:`check_actors` — names normalized like speakers (quotes, trailing ?/？), resolved to
  operator ids, and **present** only by the shared rules of :mod:`arklore.extract.presence`
  (she speaks in the range, is addressed there by a whitelisted vocative, or — the Doctor —
  a choice or a line addressing ``Dr.{@nickname}``);
* :func:`check_memory` — **no memory without presence** (dropped, reason ``not_present``);
  the first-person guard (:func:`first_person`: a memory that does not speak as 我/我们 is
  flagged ``third_person`` and never rewritten);
* :func:`check_time_hint` — a time hint must be a verbatim substring of the event's lines,
  else it is dropped (``time_hint_claimed`` keeps what the model wrote);
* :func:`branch_info` — lines of alternative choice branches are alternatives, not a
  sequence: an event whose range holds two alternatives of one Decision is flagged
  ``alternative_branches``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from arklore.core.model import DOCTOR, Line, is_doctor, normalize_speaker
from arklore.extract.events import PHASES, PROMPT_VERSION, EventProposal
from arklore.extract.gates import Judged, as_line_no
from arklore.extract.presence import (
    ResolveFn,
    SameFn,
    default_same_person,
    presence_evidence,
    strongest,
)

CHECKS_VERSION = "event-checks-1"
"""Changes when the checks change: a stage checked by older rules is checked again."""

MEMORY_PRESENT_REASONS = frozenset({"speaks", "addressed", "choice", "nickname"})


# --- records ---------------------------------------------------------------------------


@dataclass(slots=True)
class Draft:
    """One proposed event after the range check, before merging and the other checks."""

    chunk: int
    idx: int  # position in that chunk's answer
    phase: str
    summary: str
    actors: list[str]
    memories: dict[str, str]
    time_hint: str | None
    line_start: int | None = None
    line_end: int | None = None
    range_claimed: list[Any] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    drop_reason: str | None = None
    drop_detail: str | None = None
    chunks: list[int] = field(default_factory=list)
    parts: list[tuple[int, int]] = field(default_factory=list)  # ranges merged into this one

    @property
    def bounds(self) -> tuple[int, int]:
        """(line_start, line_end): every draft the range check kept has them."""
        if self.line_start is None or self.line_end is None:
            raise ValueError(f"draft {self.chunk}/{self.idx} has no range ({self.drop_reason})")
        return self.line_start, self.line_end


@dataclass(slots=True)
class CheckedActor:
    name: str  # normalized like a speaker name
    written_as: str
    actor_id: str | None  # operator id when the name resolves to one
    doctor: bool
    present: bool
    presence: str | None  # speaks | choice | nickname | addressed
    evidence_line_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CheckedMemory(Judged):
    actor: str  # normalized
    written_as: str  # the key as the model wrote it
    actor_id: str | None
    doctor: bool
    text: str
    verdict: str = "kept"  # kept | dropped
    drop_reason: str | None = None  # not_present | empty_name | empty_text
    person: str = "first"  # the first-person guard: first | third
    flags: list[str] = field(default_factory=list)  # third_person, not_in_actors
    presence: str | None = None
    evidence_line_ids: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """Kept and in the first person: what a chat may give her as her own memory."""
        return self.kept and self.person == "first"


@dataclass(slots=True)
class CheckedEvent(Judged):
    """One event of a stage with every check's verdict (the store's row and the export)."""

    stage: str
    idx: int
    verdict: str  # kept | dropped
    drop_reason: str | None
    drop_detail: str | None
    phase: str | None  # None when the model's phase is not one of PHASES
    phase_claimed: str
    summary: str  # objective, third person: never given to an operator as her memory
    actors: list[CheckedActor]
    memories: list[CheckedMemory]
    time_hint: str | None
    time_hint_claimed: str | None
    time_hint_verdict: str  # ok | none | not_in_text
    line_start: int | None
    line_end: int | None
    range_claimed: list[Any]
    line_ids: list[str]
    branches: list[str]  # branch keys of the lines in range ('12:1')
    alternatives: list[int]  # Decisions whose alternative branches are both in range
    flags: list[str]
    chunks: list[int]
    merged_from: int
    stage_code: str | None = None
    event_id: str | None = None
    event_name: str | None = None
    story_name: str | None = None
    order_rank: int | None = None
    model: str = ""
    prompt_version: str = PROMPT_VERSION


# --- line ranges -----------------------------------------------------------------------


def check_range(
    start: Any, end: Any, first: int, last: int
) -> tuple[int | None, int | None, list[str], tuple[str, str] | None]:
    """(start, end, flags, drop) for a proposed range in a chunk of lines first..last: ints
    only (gate 1's rule), a reversed range swapped, a range reaching outside clamped, one
    entirely outside the chunk dropped."""
    s, e = as_line_no(start), as_line_no(end)
    if s is None or e is None:
        bad = start if s is None else end
        return None, None, [], ("range_not_int", f"{bad!r} ({type(bad).__name__})")
    flags: list[str] = []
    if s > e:
        s, e = e, s
        flags.append("reversed_range")
    if e < first or s > last:
        return None, None, flags, ("range_outside", f"{s}-{e} is outside lines {first}-{last}")
    if s < first or e > last:
        s, e = max(s, first), min(e, last)
        flags.append("clamped")
    return s, e, flags, None


def drafts_from_answer(
    chunk: int, proposals: Sequence[EventProposal], first: int, last: int
) -> list[Draft]:
    """The chunk's proposals as drafts with their ranges checked."""
    out = []
    for i, p in enumerate(proposals):
        s, e, flags, drop = check_range(p.line_start, p.line_end, first, last)
        d = Draft(
            chunk=chunk,
            idx=i,
            phase=p.phase,
            summary=p.summary,
            actors=list(p.actors),
            memories=dict(p.memories),
            time_hint=p.time_hint,
            line_start=s,
            line_end=e,
            range_claimed=[p.line_start, p.line_end],
            flags=flags,
            chunks=[chunk],
        )
        if drop is not None:
            d.drop_reason, d.drop_detail = drop
        else:
            d.parts = [d.bounds]
        out.append(d)
    return out


# --- merging across chunks -------------------------------------------------------------


def overlaps(a: Draft, b: Draft) -> bool:
    """Do two drafts share at least one line?"""
    (a_start, a_end), (b_start, b_end) = a.bounds, b.bounds
    return a_start <= b_end and b_start <= a_end


def merge_overlapping(drafts: list[Draft]) -> list[Draft]:
    """Merge the drafts of *different* chunks whose ranges overlap (transitively) into one
    event each; drafts of one chunk are never merged with each other (the model split them
    itself). Dropped drafts pass through. Result in line order."""
    kept = [d for d in drafts if d.drop_reason is None]
    parent = list(range(len(kept)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(kept):
        for j in range(i + 1, len(kept)):
            b = kept[j]
            if a.chunk != b.chunk and overlaps(a, b):
                parent[find(j)] = find(i)
    groups: dict[int, list[Draft]] = {}
    for i, d in enumerate(kept):
        groups.setdefault(find(i), []).append(d)
    merged = [_merge(g) if len(g) > 1 else g[0] for g in groups.values()]
    merged.sort(key=lambda d: (d.line_start, d.line_end, d.chunk, d.idx))
    return merged + [d for d in drafts if d.drop_reason is not None]


def _span(d: Draft) -> int:
    start, end = d.bounds
    return end - start + 1


def _covered(d: Draft, others: list[Draft]) -> bool:
    """Another part covers d's lines (an equal range counts for the earlier chunk only)."""
    for o in others:
        if o is d:
            continue
        (o_start, o_end), (d_start, d_end) = o.bounds, d.bounds
        if o_start <= d_start and d_end <= o_end:
            same = (o_start, o_end) == (d_start, d_end)
            if not same or (o.chunk, o.idx) < (d.chunk, d.idx):
                return True
    return False


def _join(texts: Iterable[str]) -> str:
    out = ""
    for t in texts:
        t = t.strip()
        if not t:
            continue
        if out and out[-1] not in "。！？!?…；;":
            out += "；"
        out += t
    return out


def _merged_text(parts: list[Draft], text_of: Callable[[Draft], str | None]) -> str:
    """The parts' texts in line order; a part whose range another part covers is left out
    (the covering text already tells it), so two tellings of the same lines never add up."""
    having = [p for p in parts if (text_of(p) or "").strip()]
    shown = [p for p in having if not _covered(p, having)]
    return _join(text_of(p) or "" for p in sorted(shown, key=lambda p: (p.line_start, p.chunk)))


def _memory_of(key: str) -> Callable[[Draft], str | None]:
    return lambda d: d.memories.get(key)


def _merge(group: list[Draft]) -> Draft:
    parts = sorted(group, key=lambda d: (d.line_start, d.chunk, d.idx))
    longest = max(parts, key=lambda d: (_span(d), -d.bounds[0], -d.chunk))
    actors: list[str] = []
    for p in parts:
        for a in p.actors:
            if a not in actors:
                actors.append(a)
    keys: list[str] = []
    for p in parts:
        for k in p.memories:
            if k not in keys:
                keys.append(k)
    memories = {k: _merged_text(parts, _memory_of(k)) for k in keys}
    hints = [p.time_hint for p in parts if p.time_hint and p.time_hint.strip()]
    flags = sorted({f for p in parts for f in p.flags} | {"merged"})
    return Draft(
        chunk=parts[0].chunk,
        idx=parts[0].idx,
        phase=longest.phase,
        summary=_merged_text(parts, lambda d: d.summary),
        actors=actors,
        memories={k: v for k, v in memories.items() if v},
        time_hint=hints[0] if hints else None,
        line_start=min(p.bounds[0] for p in parts),
        line_end=max(p.bounds[1] for p in parts),
        range_claimed=[p.range_claimed for p in parts],
        flags=flags,
        chunks=sorted({c for p in parts for c in p.chunks}),
        parts=[r for p in parts for r in p.parts],
    )


# --- branches --------------------------------------------------------------------------


def branch_info(lines: Iterable[Line]) -> tuple[list[str], list[int]]:
    """(branch keys present, Decisions with two alternatives in the lines): option values
    ``1`` and ``2`` of one Decision are alternatives; ``1;2`` (shared by both) is not."""
    keys: list[str] = []
    values: dict[int, list[frozenset[str]]] = {}
    for line in lines:
        if line.branch is None:
            continue
        key = line.branch.key()
        if key not in keys:
            keys.append(key)
        values.setdefault(line.branch.decision_line_no, []).append(frozenset(line.branch.values))
    alternatives = sorted(
        no
        for no, sets in values.items()
        if any(a.isdisjoint(b) for i, a in enumerate(sets) for b in sets[i + 1 :])
    )
    return keys, alternatives


# --- actors, memories, time hints -----------------------------------------------------


def actor_name(written: str) -> str:
    """A name as the model wrote it, normalized like a speaker name (every way of writing
    the Doctor is 博士)."""
    name = normalize_speaker(written)[0]
    return DOCTOR if name and is_doctor(name) else name


def check_actors(
    names: Iterable[str],
    lines: list[Line],
    *,
    speakers: set[str],
    resolve: ResolveFn,
    same: SameFn,
    addressed_cache: dict[int, list[str]] | None = None,
) -> list[CheckedActor]:
    """Each distinct (normalized) name with its operator id and its presence in ``lines``."""
    out: list[CheckedActor] = []
    seen: set[str] = set()
    for written in names:
        name = actor_name(written)
        if not name or name in seen:
            continue
        seen.add(name)
        doctor = is_doctor(name)
        evidence = presence_evidence(name, lines, speakers, same, addressed_cache=addressed_cache)
        how = strongest(evidence)
        out.append(
            CheckedActor(
                name=name,
                written_as=written,
                actor_id=None if doctor else resolve(name),
                doctor=doctor,
                present=how is not None,
                presence=how,
                evidence_line_ids=[line.line_id for line, _ in evidence],
            )
        )
    return out


def first_person(text: str) -> bool:
    """The first-person guard: the memory speaks as 我 (我们 for a group counts)."""
    return "我" in text


def check_memory(
    written: str, text: str, actor: CheckedActor | None, listed: bool
) -> CheckedMemory:
    """One memory's verdict: dropped when its owner is not present (or nameless, or the
    text is empty); else kept, flagged ``third_person`` when the guard fails."""
    name = actor_name(written)
    mem = CheckedMemory(
        actor=actor.name if actor else name,
        written_as=written,
        actor_id=actor.actor_id if actor else None,
        doctor=actor.doctor if actor else False,
        text=text,
    )
    if not listed:
        mem.flags.append("not_in_actors")
    if not name:
        mem.verdict, mem.drop_reason = "dropped", "empty_name"
        return mem
    if not text.strip():
        mem.verdict, mem.drop_reason = "dropped", "empty_text"
        return mem
    if actor is None or not actor.present or actor.presence not in MEMORY_PRESENT_REASONS:
        mem.verdict, mem.drop_reason = "dropped", "not_present"
        return mem
    mem.presence = actor.presence
    mem.evidence_line_ids = list(actor.evidence_line_ids)
    if not first_person(text):
        mem.person = "third"
        mem.flags.append("third_person")
    return mem


def check_time_hint(hint: str | None, lines: Iterable[Line]) -> tuple[str | None, str]:
    """(kept hint, verdict): ``none`` when there is none, ``ok`` when it is a verbatim
    substring of one of the lines, else ``not_in_text`` (dropped)."""
    if hint is None or not hint.strip():
        return None, "none"
    if any(hint in line.text for line in lines):
        return hint, "ok"
    return None, "not_in_text"


# --- one stage -------------------------------------------------------------------------


@dataclass(frozen=True)
class StageMeta:
    """Where a stage stands in the story; each field is a :class:`CheckedEvent` field too."""

    stage_code: str | None = None
    event_id: str | None = None
    event_name: str | None = None
    story_name: str | None = None
    order_rank: int | None = None


def check_event(
    draft: Draft,
    by_no: dict[int, Line],
    *,
    stage: str,
    idx: int,
    speakers: set[str],
    resolve: ResolveFn,
    same: SameFn,
    meta: StageMeta = StageMeta(),
    model: str = "",
    prompt_version: str = PROMPT_VERSION,
) -> CheckedEvent:
    """Every check on one (merged) draft."""
    flags = list(draft.flags)
    phase = draft.phase if draft.phase in PHASES else None
    if phase is None:
        flags.append("unknown_phase")
    ev = CheckedEvent(
        stage=stage,
        idx=idx,
        verdict="kept" if draft.drop_reason is None else "dropped",
        drop_reason=draft.drop_reason,
        drop_detail=draft.drop_detail,
        phase=phase,
        phase_claimed=draft.phase,
        summary=draft.summary,
        actors=[],
        memories=[],
        time_hint=None,
        time_hint_claimed=draft.time_hint,
        time_hint_verdict="none",
        line_start=draft.line_start,
        line_end=draft.line_end,
        range_claimed=draft.range_claimed,
        line_ids=[],
        branches=[],
        alternatives=[],
        flags=flags,
        chunks=draft.chunks,
        merged_from=max(1, len(draft.parts)),
        model=model,
        prompt_version=prompt_version,
        **asdict(meta),  # the event's fields of the same names
    )
    if not ev.kept:
        return ev
    start, end = draft.bounds
    lines = [by_no[n] for n in range(start, end + 1) if n in by_no]
    ev.line_ids = [line.line_id for line in lines]
    ev.branches, ev.alternatives = branch_info(lines)
    if ev.alternatives:
        ev.flags.append("alternative_branches")
    cache: dict[int, list[str]] = {}
    listed = {actor_name(a) for a in draft.actors}
    ev.actors = check_actors(
        [*draft.actors, *draft.memories],
        lines,
        speakers=speakers,
        resolve=resolve,
        same=same,
        addressed_cache=cache,
    )
    by_name = {a.name: a for a in ev.actors}
    for written, text in draft.memories.items():
        name = actor_name(written)
        actor = by_name.get(name) if name else None
        ev.memories.append(check_memory(written, text, actor, name in listed))
    ev.time_hint, ev.time_hint_verdict = check_time_hint(draft.time_hint, lines)
    return ev


def check_stage(
    stage: str,
    answers: Sequence[tuple[int, int, int, Sequence[EventProposal]]],
    lines: list[Line],
    *,
    speakers: set[str],
    resolve: ResolveFn = lambda name: None,
    same_person: SameFn | None = None,
    meta: StageMeta = StageMeta(),
    model: str = "",
    prompt_version: str = PROMPT_VERSION,
) -> list[CheckedEvent]:
    """The stage's events from its chunks' answers ``(chunk, first_line, last_line,
    proposals)``: ranges checked per chunk, overlapping chunks merged, then every check
    against the stage's lines. ``speakers`` is the known-speaker whitelist for vocatives."""
    known = ({normalize_speaker(s)[0] for s in speakers} | {DOCTOR}) - {""}
    same = same_person or default_same_person(resolve)
    by_no = {line.line_no: line for line in lines}
    drafts: list[Draft] = []
    for chunk, first, last, proposals in sorted(answers, key=lambda a: a[0]):
        drafts.extend(drafts_from_answer(chunk, proposals, first, last))
    return [
        check_event(
            d,
            by_no,
            stage=stage,
            idx=i,
            speakers=known,
            resolve=resolve,
            same=same,
            meta=meta,
            model=model,
            prompt_version=prompt_version,
        )
        for i, d in enumerate(merge_overlapping(drafts))
    ]


def summarize(events: Iterable[CheckedEvent]) -> dict[str, Any]:
    """Counts for run reports: events, memories by verdict, and every finding."""
    events = list(events)
    kept = [e for e in events if e.kept]
    mems = [m for e in kept for m in e.memories]
    return {
        "events": len(kept),
        "dropped_events": len(events) - len(kept),
        "event_drop_reasons": dict(Counter(e.drop_reason for e in events if not e.kept)),
        "memories": sum(m.kept for m in mems),
        "dropped_memories": sum(not m.kept for m in mems),
        "memory_drop_reasons": dict(Counter(m.drop_reason for m in mems if not m.kept)),
        "third_person": sum(m.kept and m.person != "first" for m in mems),
        "time_hints": sum(e.time_hint is not None for e in kept),
        "dropped_time_hints": sum(e.time_hint_verdict == "not_in_text" for e in kept),
        "merged": sum(e.merged_from > 1 for e in kept),
        "clamped": sum("clamped" in e.flags for e in kept),
        "alternative_branches": sum(bool(e.alternatives) for e in kept),
        "pure_narration": sum(not e.actors for e in kept),
    }


def findings(summary: dict[str, Any]) -> int:
    """How many things a run dropped or flagged (exit code 5 when > 0)."""
    return int(
        summary.get("dropped_events", 0)
        + summary.get("dropped_memories", 0)
        + summary.get("third_person", 0)
        + summary.get("dropped_time_hints", 0)
    )
