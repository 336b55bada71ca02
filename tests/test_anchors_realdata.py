"""verify-anchors on the whole real corpus with the graph built from the packaged matrix: every
line the graph, the matrix and a relation index cite is checked, and none has drifted (the data
did not change since ingest). Counts per citing kind and the run time go to the summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from arklore.corpus.anchors import verify_anchors
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import build_index, doc_citations, live_documents

pytestmark = pytest.mark.realdata


def _figures(report) -> str:
    return ", ".join(
        f"{k} {c.citations:,}/{c.line_ids:,} ({c.drifted} drifted)" for k, c in report.cited.items()
    )


def test_real_store_graph_and_matrix_have_no_drift(real_workspace, real_graph_built, metrics):
    report = real_workspace.verify_anchors()
    assert report.ok, report.drifts[:5]
    cited = report.cited
    assert cited["matrix"].line_ids >= 300  # the graph was built from the packaged matrix
    assert cited["graph"].line_ids >= 10_000
    assert report.stages_reparsed == 0 and report.notes == []
    metrics(
        f"verify-anchors (real store + graph): {report.anchors:,} anchors in "
        f"{report.stages_checked:,} stages, {report.seconds:.1f} s; cited (citations/lines): "
        + _figures(report)
    )


def test_real_index_documents_have_no_drift(
    real_workspace, real_graph_built, tmp_path: Path, metrics
):
    """The documents of an index over the real graph (``hash`` embedder, in a temp folder so
    the shared workspace keeps no index) read back without an embedder and checked."""
    build_index(
        tmp_path, real_graph_built, embedder=HashEmbedder(), rejects_path=tmp_path / "r.jsonl"
    )
    docs = live_documents(tmp_path)
    graph = real_graph_built
    citations = doc_citations(
        docs, lambda nid: graph.nodes[nid].name if nid in graph.nodes else nid
    )
    assert len(docs) >= 300 and len(citations) >= 1000
    report = verify_anchors(
        real_workspace.roots, real_workspace.corpus.store(), citations=citations, kinds=["rag"]
    )
    assert report.ok, report.drifts[:5]
    metrics(f"verify-anchors (real index, {len(docs)} documents): " + _figures(report))
