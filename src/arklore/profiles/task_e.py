"""Task E (no model): the people she names in her voice lines and stories, as candidate
relations for her review entry (the mention counts the relation graph already keeps, see
:mod:`arklore.profiles.mentions`)."""

from __future__ import annotations

from arklore.graph.model import RelationGraph
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.mentions import candidates_from_graph
from arklore.profiles.results import OK, SKIPPED, TaskResult

LETTER = "E"
CANDIDATES = 8
"""Relation candidates listed in the review entry."""


def rule_result(inp: OperatorInputs) -> TaskResult:
    return result_for(inp.graph, inp.char_id)


def result_for(graph: RelationGraph | None, char_id: str) -> TaskResult:
    """Her candidates: read from the graph and nothing else (so a graph change is refreshed
    without the rest of distillation, :func:`arklore.profiles.distill.refresh_task_e`)."""
    if graph is None:
        return TaskResult(LETTER, char_id, SKIPPED, "no relation graph (run `arklore graph build`)")
    cands = candidates_from_graph(graph, char_id, limit=CANDIDATES)
    return TaskResult(
        LETTER,
        char_id,
        OK,
        f"{len(cands)} candidates from mentions",
        output={"candidates": [str(c) for c in cands]},
    )
