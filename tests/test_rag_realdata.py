"""Relation RAG on the graph of the whole real corpus (template documents, no LLM).

The hash embedder keeps this fast; the e5 numbers (build time, query latency) and the time of
an unchanged rebuild are measured by ``python -m bench bench_rag``."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.rag_world import build

from arklore.core.tokens import count_tokens
from arklore.graph.named import spans_from_mentions
from arklore.rag.context import RelationRAG
from arklore.rag.embedders import HashEmbedder

pytestmark = pytest.mark.realdata


def test_real_graph_index_builds_then_rebuilds_without_embedding(
    real_graph_built, tmp_path: Path, metrics
):
    graph = real_graph_built
    first = build(tmp_path, graph)
    assert first.documents > 500 and first.rejected == 0
    assert first.by_source.get("matrix", 0) >= 1 and first.by_source.get("graph_edge", 0) > 500
    second = build(tmp_path, graph)
    metrics(
        f"rag (real graph, hash embedder): {first.documents} documents {first.by_source}, "
        f"first build {first.seconds:.2f} s, unchanged rebuild {second.seconds:.2f} s, "
        f"embedded {second.embedded}"
    )
    assert second.unchanged and second.embedded == 0


def test_real_context_stays_in_budget_and_keeps_anchors(
    real_workspace, real_graph_built, tmp_path: Path
):
    graph = real_graph_built
    emb = HashEmbedder()
    build(tmp_path, graph, embedder=emb)
    names = {n.name: i for i, n in graph.nodes.items() if n.kind == "operator"}
    rag = RelationRAG(
        tmp_path,
        graph=graph,
        embedder=emb,
        mention_finder=spans_from_mentions(real_workspace.names.find_mentions),
        budget=300,
        rank_always=True,
    )
    ops = sorted(names.values())
    rnd = random.Random(7)
    for _ in range(200):
        op = rnd.choice(ops)
        said = "、".join(rnd.sample(list(names), rnd.randint(0, 4)))
        text = f"{said}最近怎么样？" + "我们聊聊吧。" * rnd.choice([0, 1, 400])
        block = rag.get_relation_context(op, text)
        anchors = rag.get_anchor_relations(op)
        if not anchors:
            assert block == ""
            continue
        assert count_tokens(block) <= 300
