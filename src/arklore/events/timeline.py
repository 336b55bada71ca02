"""The story timeline: stages in story order, and inside a stage its extracted events in
line order with their time hints.

The order is the corpus's ``order_rank`` (:mod:`arklore.corpus.order`): main chapters 0, 1, …
first, then events by their start time, operator records, then the rest. That is *release*
order, an approximation of in-world time (side stories happen between or long before main
chapters; time hints are what the text itself says). No LLM is needed: without extracted
events a timeline is the stages with the game's own summaries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from arklore.core.blocks import StageRef
from arklore.core.text import one_line
from arklore.corpus.store import StageInfo
from arklore.events.appearances import Appearance
from arklore.events.checks import CheckedEvent

ORDER_NOTE = (
    "stages in release order (the game's story order: main chapters 0, 1, … first, then events "
    "by start date): an approximation of in-world time, not a chronology"
)


@dataclass
class TimelineEvent:
    idx: int
    line_start: int | None
    line_end: int | None
    phase: str | None
    time_hint: str | None
    summary: str
    actors: list[str]  # present actors
    branches: list[str]  # choice branches of its lines ('12:1'): alternatives, not a sequence
    alternative_branches: bool


@dataclass
class TimelineStage:
    rank: int | None
    stage_path: str
    stage_code: str | None
    event_id: str | None
    event_name: str | None
    story_name: str | None
    avg_tag: str | None
    summary: str | None  # the game's official summary
    lines: int
    spoken: int | None = None  # with --operator: her lines / lines addressing her
    addressed: int | None = None
    events_extracted: bool = False
    events: list[TimelineEvent] = field(default_factory=list)


@dataclass
class Timeline:
    note: str
    operator: str | None
    operator_ids: list[str]
    event: str | None
    stages: list[TimelineStage]

    @property
    def kind(self) -> str:
        """``events`` once some stage shown has extracted events, else ``appearances``."""
        return "events" if any(s.events_extracted for s in self.stages) else "appearances"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


def timeline_event(e: CheckedEvent) -> TimelineEvent:
    return TimelineEvent(
        e.idx,
        e.line_start,
        e.line_end,
        e.phase,
        e.time_hint,
        e.summary,
        [a.name for a in e.actors if a.present],
        list(e.branches),
        bool(e.alternatives),
    )


def involves(e: CheckedEvent, family_ids: set[str]) -> bool:
    """Is one of her forms a present actor of the event?"""
    return any(a.present and a.actor_id in family_ids for a in e.actors)


def build_timeline(
    infos: Iterable[StageInfo],
    events: dict[str, list[CheckedEvent]],
    *,
    appearances: list[Appearance] | None = None,
    operator: str | None = None,
    family_ids: Iterable[str] = (),
    event: str | None = None,
) -> Timeline:
    """Stages of ``infos`` (already in story order and filtered by event) — only those she
    appears in when ``appearances`` are given — with their kept events (hers only, with an
    operator), in line order."""
    fam = set(family_ids)
    apps = {a.stage_path: a for a in appearances} if appearances is not None else None
    stages = []
    for info in infos:
        app = None
        if apps is not None:
            app = apps.get(info.stage_path)
            if app is None:
                continue
        evs = events.get(info.stage_path)
        kept = [e for e in evs or [] if e.kept and (not fam or involves(e, fam))]
        kept.sort(key=lambda e: (e.line_start or 0, e.line_end or 0, e.idx))
        stages.append(
            TimelineStage(
                info.order_rank,
                info.stage_path,
                *info.labels(),
                info.line_count,
                app.spoken if app else None,
                app.addressed if app else None,
                evs is not None,
                [timeline_event(e) for e in kept],
            )
        )
    return Timeline(ORDER_NOTE, operator, sorted(fam), event, stages)


def render_text(tl: Timeline, *, width: int = 80) -> str:
    """Stages grouped by story event; extracted events indented under their stage."""
    out = [f"# {tl.note}"]
    if tl.operator:
        out.append(f"# operator: {tl.operator} ({', '.join(tl.operator_ids)})")
    group = object()
    for st in tl.stages:
        key = st.event_id
        if key != group:
            group = key
            out.append("")
            out.append(f"== {st.event_name or '(no event)'} [{st.event_id or '-'}] ==")
        label = " ".join(p for p in (st.stage_code, st.story_name, st.avg_tag) if p)
        if not label:  # what a chat calls it, and where it is for the tools
            label = f"{StageRef(st.stage_path, event=st.event_name).untitled()} [{st.stage_path}]"
        her = ""
        if st.spoken is not None:
            her = f"  (speaks {st.spoken}, addressed {st.addressed})"
        out.append(f"{st.rank or 0:>5} {label}{her}")
        if st.summary:
            out.append(f"      {_clip(one_line(st.summary), width)}")
        for e in st.events:
            when = f" 〈{e.time_hint}〉" if e.time_hint else ""
            branch = " [choice branch]" if e.branches else ""
            alt = " [alternatives!]" if e.alternative_branches else ""
            out.append(
                f"      - {e.line_start}-{e.line_end} {e.phase or '?'}{when}{branch}{alt}: "
                f"{_clip(one_line(e.summary), width)}"
            )
    out.append("")
    out.append(f"{len(tl.stages)} stages")
    return "\n".join(out)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
