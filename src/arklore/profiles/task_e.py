"""Task E (no model): the people she names in her voice lines and stories, as candidate
relations for her review entry (the mention counts the relation graph already keeps, see
:mod:`arklore.profiles.mentions`)."""

from __future__ import annotations

from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.mentions import candidates_from_graph
from arklore.profiles.results import OK, SKIPPED, TaskResult

LETTER = "E"
CANDIDATES = 8
"""Relation candidates listed in the review entry."""


def rule_result(inp: OperatorInputs) -> TaskResult:
    if inp.graph is None:
        return TaskResult(
            LETTER, inp.char_id, SKIPPED, "no relation graph (run `arklore graph build`)"
        )
    cands = candidates_from_graph(inp.graph, inp.char_id, limit=CANDIDATES)
    return TaskResult(
        LETTER,
        inp.char_id,
        OK,
        f"{len(cands)} candidates from mentions",
        output={"candidates": [str(c) for c in cands]},
    )
