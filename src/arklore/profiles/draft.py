"""One operator's profile drafted in memory with no model: the distillation tasks' rules.

:func:`draft_profile` runs exactly what ``arklore distill`` runs for an operator when no
model is configured -- task A's structured anchor, task B's quotes by the documented rule
(through the verbatim gate), task C's lines of hers to the Doctor by its rule, task E's
relation candidates (when a graph is given); D needs a model -- and assembles the tier-B text with :func:`~arklore.profiles.assemble.assemble`
(with her ``## 说话方式`` when her speech facts are given: they need the corpus background).
Nothing is stored; :func:`write_draft` writes it through the protective writer. An operator
with nothing to write gets no file (tier C), and her review entry says which sources were
missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from arklore.core.operators import Operator
from arklore.graph.model import RelationGraph
from arklore.profiles import charfile, task_a, task_b, task_c, task_d, task_e
from arklore.profiles.archive import Anchor, Gap, Tables, gaps_line
from arklore.profiles.assemble import assemble
from arklore.profiles.charfile import TIER_B, TIER_C, CharProfile, WriteResult, write_profile
from arklore.profiles.inputs import OperatorInputs, gather
from arklore.profiles.mentions import RelationCandidate, candidates_from_graph
from arklore.profiles.quotes import (
    GateResult,
    QuoteChoice,
    StoryLine,
    VoiceLine,
    choose_quotes,
    verify_quotes,
    voice_index,
    voice_lines_from_table,
)
from arklore.profiles.results import TaskResult
from arklore.profiles.review import ReviewEntry, entry_from_results
from arklore.profiles.sources import lines_for, remarks_for
from arklore.profiles.speech import Fact
from arklore.profiles.temperament import Remark

RELATION_CANDIDATES = task_e.CANDIDATES


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
    results: dict[str, TaskResult] = field(default_factory=dict)


def rule_results(inp: OperatorInputs) -> dict[str, TaskResult]:
    """Every task's result with no model (D: skipped, it needs one)."""
    return {
        "A": task_a.rule_result(inp),
        "B": task_b.rule_result(inp),
        "C": task_c.rule_result(inp),
        "D": task_d.rule_result(inp),
        "E": task_e.rule_result(inp),
    }


def draft_profile(
    op: Operator,
    tables: Tables,
    *,
    story_lines: Sequence[StoryLine] = (),
    voice: Sequence[VoiceLine] | None = None,
    graph: RelationGraph | None = None,
    generated_at: str | None = None,
    doctor_stages: frozenset[str] = frozenset(),
    speech: Sequence[Fact] = (),
    remarks: Sequence[Remark] = (),
) -> Draft:
    """The tier-B file text for one operator, with everything the reviewer needs
    (``voice``: her voice lines when already indexed, else read from ``tables.charword``;
    ``doctor_stages``: the stages the corpus shows the Doctor in, for task C; ``speech``: her
    way of speaking, :func:`arklore.profiles.speech.speech_facts`; ``remarks``: what others
    say of her, :func:`arklore.profiles.sources.remarks_for`, for ``## 我·性格``)."""
    if voice is None:
        voice = voice_lines_from_table(tables.charword, op.char_id)
    inp = gather(
        op, tables, voice=voice, story=story_lines, graph=graph, doctor_stages=doctor_stages
    )
    inp.speech = list(speech)
    inp.remarks = list(remarks)
    results = rule_results(inp)
    built = assemble(inp, results, generated_at=generated_at or utc_now())
    choice = choose_quotes(inp.voice, inp.story)
    gate = verify_quotes(choice.quotes, inp.quote_sources(), owners=inp.owners)
    candidates = (
        candidates_from_graph(graph, op.char_id, limit=RELATION_CANDIDATES) if graph else []
    )
    entry = entry_from_results(
        op.char_id,
        op.name,
        results,
        path=None,
        tier=TIER_B if built.text is not None else TIER_C,
        gaps=gaps_line(inp.gaps),
        sources=CharProfile.parse(built.text).header_list("sources") if built.text else [],
    )
    return Draft(
        op.char_id, op.name, built.text, inp.anchor, choice, gate, inp.gaps, candidates,
        entry, results,
    )  # fmt: skip


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
        entry.tier = CharProfile.read(path).tier
        if res.action == "draft":
            entry.write = f"draft beside it ({res.path.name}): {res.reason}"
        else:
            entry.write = f"{res.action}: {res.reason}"
    return res


def draft_all(
    operators: Iterable[Operator],
    tables: Tables,
    story_by_operator: Mapping[str, Sequence[StoryLine]],
    *,
    graph: RelationGraph | None = None,
    generated_at: str | None = None,
    doctor_stages: frozenset[str] = frozenset(),
    form_stages: Callable[[str], frozenset[str]] | None = None,
    remarks: Mapping[str, Sequence[Remark]] | None = None,
) -> list[Draft]:
    """:func:`draft_profile` for each operator, in char id order, one timestamp for all
    (``form_stages``: the stages that show an alternate form, :func:`lines_for`; ``remarks``:
    what others say of each, :func:`arklore.profiles.sources.remarks`)."""
    at = generated_at or utc_now()
    voices = voice_index(tables.charword)
    return [
        draft_profile(
            op,
            tables,
            story_lines=lines_for(
                op, story_by_operator, form_stages(op.char_id) if form_stages else frozenset()
            ),
            voice=voices.get(op.char_id, []),
            graph=graph,
            generated_at=at,
            doctor_stages=doctor_stages,
            remarks=remarks_for(op, remarks or {}),
        )
        for op in sorted(operators, key=lambda o: o.char_id)
    ]
