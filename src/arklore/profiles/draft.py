"""One operator's generated profile (tier B) from the deterministic tasks, and its review entry.

Without a model: task A gives the structured anchor (no ``核心经历``), task B the quotes by
the documented rule, passed through the verbatim gate, task E the relation candidates (when a
built graph is given); the 我-sections stay empty. An operator with neither anchor facts nor
quotes gets no file (tier C), and the review entry says which sources were missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from arklore.core.operators import Operator
from arklore.graph.model import RelationGraph
from arklore.profiles import charfile
from arklore.profiles.archive import (
    CHARWORD,
    STORY,
    Anchor,
    Gap,
    Tables,
    gaps_line,
    structured_anchor,
)
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PERSONALITY,
    PHYSICAL,
    QUOTES,
    TIER_B,
    TIER_C,
    CharProfile,
    WriteResult,
    render_profile,
    write_profile,
)
from arklore.profiles.mentions import RelationCandidate, candidates_from_graph
from arklore.profiles.quotes import (
    MIN_QUOTES,
    GateResult,
    QuoteChoice,
    StoryLine,
    VoiceLine,
    choose_quotes,
    story_sources,
    verify_quotes,
    voice_index,
    voice_lines_from_table,
    voice_sources,
)
from arklore.profiles.review import FAILED, OK, SKIPPED, ReviewEntry, TaskStatus

RELATION_CANDIDATES = 8
"""Relation candidates listed in the review entry."""


def utc_now() -> str:
    """The ``generated`` time: UTC, seconds, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Draft:
    char_id: str
    name: str
    text: str | None  # the rendered .char file; None when there is nothing to write (tier C)
    anchor: Anchor
    choice: QuoteChoice
    gate: GateResult
    gaps: list[Gap] = field(default_factory=list)
    candidates: list[RelationCandidate] = field(default_factory=list)
    entry: ReviewEntry | None = None


def lines_for(op: Operator, by_operator: Mapping[str, Sequence[StoryLine]]) -> list[StoryLine]:
    """Her story lines: her own, and for an alternate form also her base form's (the same
    person, and newer forms rarely speak under their own name)."""
    out = list(by_operator.get(op.char_id, ()))
    if op.base_id and op.base_id != op.char_id:
        seen = {s.line_id for s in out}
        out += [s for s in by_operator.get(op.base_id, ()) if s.line_id not in seen]
    return out


def draft_profile(
    op: Operator,
    tables: Tables,
    *,
    story_lines: Sequence[StoryLine] = (),
    voice: Sequence[VoiceLine] | None = None,
    graph: RelationGraph | None = None,
    generated_at: str | None = None,
    model: str | None = None,
) -> Draft:
    """The tier-B file text for one operator, with everything the reviewer needs
    (``voice``: her voice lines when already indexed, else read from ``tables.charword``)."""
    cid = op.char_id
    anchor = structured_anchor(cid, tables)
    if voice is None:
        voice = voice_lines_from_table(tables.charword, cid)
    choice = choose_quotes(voice, story_lines)
    owners = {cid} | ({op.base_id} if op.base_id else set())
    gate = verify_quotes(
        choice.quotes, voice_sources(voice) | story_sources(story_lines), owners=owners
    )
    gaps = list(anchor.gaps)
    if tables.charword is None:
        gaps.append(Gap(CHARWORD, "voice", "table absent"))
    elif not voice:
        gaps.append(Gap(CHARWORD, "voice", "no voice lines"))
    if not story_lines:
        gaps.append(Gap(STORY, "story lines", "speaks no attributed dialogue line"))
    candidates = (
        candidates_from_graph(graph, cid, limit=RELATION_CANDIDATES) if graph is not None else []
    )

    text = None
    if anchor.facts or gate.kept:
        sources = list(anchor.sources)
        voice_ids = [q.source_id.partition(":")[2] for q in gate.kept if q.kind == "voice"]
        story_ids = [q.source_id.partition(":")[2] for q in gate.kept if q.kind == "story"]
        if voice_ids:
            sources.append(f"{CHARWORD}: {', '.join(voice_ids)}")
        if story_ids:
            sources.append(f"{STORY}: {', '.join(story_ids)}")
        sections = [
            (ANCHOR, anchor.render()),
            (PHYSICAL, "\n".join(f"- {t}" for t in anchor.physical_tags())),
            (QUOTES, "\n".join(q.line() for q in gate.kept)),
            (PERSONALITY, ""),
            (ABOUT_DOCTOR, ""),
        ]
        text = render_profile(
            name=op.name,
            char_id=cid,
            generated_at=generated_at or utc_now(),
            sections=sections,
            sources=sources,
            model=model,
            tier=TIER_B,
        )
    draft = Draft(cid, op.name, text, anchor, choice, gate, gaps, candidates)
    draft.entry = _entry(draft, graph is not None, model)
    return draft


def _entry(d: Draft, have_graph: bool, model: str | None) -> ReviewEntry:
    archive_gaps = [g for g in d.gaps if g.table not in (CHARWORD, STORY)]
    tasks: dict[str, TaskStatus] = {}
    if d.anchor.facts:
        tasks["anchor"] = TaskStatus(OK, f"{len(d.anchor.facts)} fields copied from source")
    else:
        tasks["anchor"] = TaskStatus(SKIPPED, gaps_line(archive_gaps) or "no structured field")
    tasks["core"] = TaskStatus(SKIPPED, "needs a model" if model is None else "not run")
    n = len(d.gate.kept)
    if d.choice.quotes and not n:
        tasks["quotes"] = TaskStatus(FAILED, "every chosen quote failed the verbatim gate")
    elif n >= MIN_QUOTES:
        tasks["quotes"] = TaskStatus(OK, f"{n} quotes ({d.choice.origin})")
    elif n:
        tasks["quotes"] = TaskStatus(OK, f"only {n} quotes ({d.choice.origin}): few candidates")
    else:
        voice_story = [g for g in d.gaps if g.table in (CHARWORD, STORY)]
        tasks["quotes"] = TaskStatus(
            SKIPPED, gaps_line(voice_story) or "no line passed the candidate rule"
        )
    tasks["personality"] = TaskStatus(SKIPPED, "needs a model" if model is None else "not run")
    if have_graph:
        tasks["relations"] = TaskStatus(OK, f"{len(d.candidates)} candidates from mentions")
    else:
        tasks["relations"] = TaskStatus(SKIPPED, "no relation graph given")
    return ReviewEntry(
        char_id=d.char_id,
        name=d.name,
        path=None,
        tier=TIER_B if d.text is not None else TIER_C,
        tasks=tasks,
        quotes=[q.line() for q in d.gate.kept],
        quotes_removed=[
            f"「{r.quote.text}」 {r.quote.source_id}: {r.reason}" for r in d.gate.removed
        ],
        sources=_sources_of(d.text),
        gaps=gaps_line(d.gaps),
        relation_candidates=[str(c) for c in d.candidates],
    )


def _sources_of(text: str | None) -> list[str]:
    return CharProfile.parse(text).header_list("sources") if text else []


def write_draft(
    draft: Draft, char_dir: Path, *, replace_approved: bool = False
) -> WriteResult | None:
    """Write the draft as ``<char_dir>/<char_id>.char`` through the protective writer and
    record the outcome in its review entry; None (nothing written) for tier C."""
    entry = draft.entry
    path = Path(char_dir) / f"{draft.char_id}{charfile.SUFFIX}"
    if draft.text is None:
        if entry is not None and path.exists():
            kept = CharProfile.read(path)
            entry.path, entry.tier = str(path), kept.tier
            entry.write = "kept: no source for a new draft"
        return None
    res = write_profile(path, draft.text, replace_approved=replace_approved)
    if entry is not None:
        entry.path = str(path)
        if res.action == "draft":
            entry.tier = CharProfile.read(path).tier
            entry.write = f"draft beside it ({res.path.name}): {res.reason}"
        else:
            entry.tier = CharProfile.read(path).tier
            entry.write = f"{res.action}: {res.reason}"
    return res


def draft_all(
    operators: Iterable[Operator],
    tables: Tables,
    story_by_operator: Mapping[str, Sequence[StoryLine]],
    *,
    graph: RelationGraph | None = None,
    generated_at: str | None = None,
) -> list[Draft]:
    """:func:`draft_profile` for each operator, in char id order, one timestamp for all."""
    at = generated_at or utc_now()
    voices = voice_index(tables.charword)
    return [
        draft_profile(
            op,
            tables,
            story_lines=lines_for(op, story_by_operator),
            voice=voices.get(op.char_id, []),
            graph=graph,
            generated_at=at,
        )
        for op in sorted(operators, key=lambda o: o.char_id)
    ]
