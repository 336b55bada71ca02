"""The line ids the graph layer cites, as ``(line_id, "<kind>: <relation>")`` pairs for
``arklore verify-anchors`` (:mod:`arklore.corpus.anchors`): curated relations (the shipped
matrix, a user matrix, relation imports) and the edges of a built graph.

Each label names the relation a drifted line would break -- who, about whom, the predicate and
where it comes from -- with node names from ``name`` (node id -> display name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from arklore.corpus.anchors import Citation
from arklore.graph.matrix import Curated
from arklore.graph.model import RelationGraph

Name = Callable[[str], str]


def curated_citations(curated: Iterable[Curated], kind: str, name: Name) -> Iterator[Citation]:
    """Evidence of hand-stated relations; ``kind`` is ``matrix``, ``user_matrix`` or ``import``."""
    for c in curated:
        where = f"{Path(c.path).name}:{c.line}" if c.line else Path(c.path).name
        label = f"{kind}: {name(c.source)} -> {name(c.target)} ({c.predicate}, {where})"
        for line_id in c.evidence_line_ids:
            yield line_id, label


def graph_citations(graph: RelationGraph, kind: str = "graph") -> Iterator[Citation]:
    """Evidence of every edge of a built graph, labelled with the edge's origins."""
    for e in graph.edges():
        if not e.evidence_line_ids:
            continue
        label = (
            f"{kind}: {graph.node_name(e.source)} -> {graph.node_name(e.target)} "
            f"({e.predicate}, {'+'.join(e.origins)})"
        )
        for line_id in e.evidence_line_ids:
            yield line_id, label
