"""Shared helpers for the relation RAG tests: a small invented graph, a name-substring mention
finder, index builds and a RelationRAG over the ``hash`` embedder."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from arklore.graph.io import save_graph
from arklore.graph.model import Edge, Node, RelationGraph
from arklore.graph.named import MentionFinder, Span
from arklore.rag.context import RelationRAG
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import BuildReport, build_index

AMIYA, KALTS, CHEN, HOSHI, SWIRE, LONELY = (
    "char_002_amiya", "char_003_kalts", "char_010_chen", "char_136_hsguma",
    "char_308_swire", "char_999_lonely",
)  # fmt: skip
THERESA, AUDREY, VERONICA = "npc:特蕾西娅", "npc:奥黛丽", "npc:维罗妮卡"
NAMES = {
    AMIYA: "阿米娅", KALTS: "凯尔希", CHEN: "陈", HOSHI: "星熊", SWIRE: "诗怀雅",
    LONELY: "独行者", THERESA: "特蕾西娅", AUDREY: "奥黛丽", VERONICA: "维罗妮卡",
}  # fmt: skip


def edge(a: str, b: str, pred: str, strength: float, *, sources: Iterable[str] = ("story",),
         desc: str | None = None, signals: Mapping[str, int] | None = None,
         ev: Iterable[str] | None = None) -> Edge:  # fmt: skip
    return Edge(a, b, pred, strength, list(sources), dict(signals or {"direct": 2, "turns": 9}),
                list(ev or [f"obt/main/x#1:{zlib.crc32((a + b).encode()):08x}"]), desc, ["obt/main/x"])  # fmt: skip


def small_graph(variant: int = 0) -> RelationGraph:
    nodes = {
        i: Node(i, n, "npc" if i.startswith("npc:") else "operator", {}) for i, n in NAMES.items()
    }
    edges = [
        edge(
            AMIYA,
            KALTS,
            "师徒",
            0.99,
            sources=("matrix",),
            desc="阿米娅把凯尔希当作严厉又可靠的老师，也是最信任的长辈。",
        ),
        edge(AMIYA, THERESA, "近亲", 0.93),
        edge(AMIYA, CHEN, "战友", 0.82),
        edge(AMIYA, AUDREY, "朋友", 0.8),
        edge(AMIYA, VERONICA, "合作", 0.75),
        edge(AMIYA, HOSHI, "同事", 0.71),
        edge(AMIYA, SWIRE, "相识", 0.65),
        edge(KALTS, AMIYA, "监护", 0.97),
        edge(CHEN, SWIRE, "竞争", 0.9),
        edge(CHEN, HOSHI, "战友", 0.88),
        edge(CHEN, AMIYA, "合作", 0.5),
        edge(HOSHI, CHEN, "战友", 0.88),
    ]
    # her five anchors: 凯尔希 (curated), then by the kind of bond 特蕾西娅 (kin), 陈 (comrade),
    # 奥黛丽 (friend), 维罗妮卡 (peer, stronger than 星熊); 星熊 and 诗怀雅 are left for the turns
    # that name them
    if variant:
        edges[0].description = f"第{variant}版：阿米娅把凯尔希当作老师，也是她最信任的长辈。"
        edges.append(edge(SWIRE, CHEN, "竞争", 0.87))
    return RelationGraph(nodes, edges)


def story_edges_graph(n_ops: int, per_op: int) -> RelationGraph:
    """A bigger invented graph (``n_ops * per_op`` edges) for build-time tests."""
    ids = [f"char_{i:03d}_op{i}" for i in range(n_ops)]
    nodes = {i: Node(i, f"干员{k}号", "operator", {}) for k, i in enumerate(ids)}
    edges = [
        edge(a, ids[(k + j + 1) % n_ops], "朋友", 0.61 + (j % 30) / 100)
        for k, a in enumerate(ids)
        for j in range(per_op)
    ]
    return RelationGraph(nodes, edges)


def name_finder(graph: RelationGraph) -> MentionFinder:
    """Operator mentions by exact node name (stands in for the alias matcher)."""
    names = [(n.name, i) for i, n in graph.nodes.items() if n.kind == "operator"]

    def find(text: str) -> list[Span]:
        out: list[Span] = []
        for name, nid in names:
            start = text.find(name)
            while start >= 0:
                out.append((nid, start, start + len(name)))
                start = text.find(name, start + len(name))
        return out

    return find


def write_graph(home: Path, graph: RelationGraph) -> Path:
    path = home / "relation_graph.json"
    save_graph(graph, path)
    return path


def build(root: Path, graph: RelationGraph, **kw: Any) -> BuildReport:
    """``build_index`` into ``root`` with the hash embedder and a rejects file beside it."""
    kw.setdefault("embedder", HashEmbedder())
    return build_index(root, graph, rejects_path=root / "rag_rejects.jsonl", **kw)


def make_rag(home: Path, graph: RelationGraph, **kw: Any) -> RelationRAG:
    return RelationRAG(home, graph=graph, embedder=HashEmbedder(),
                       mention_finder=name_finder(graph), **kw)  # fmt: skip


def names_store(home: Path, graph: RelationGraph) -> Path:
    """A store whose registry holds the graph's operators (one invented stage, an ingest run
    recorded), so commands that detect names in a message work through the workspace."""
    from arklore.core.model import Source, Stage
    from arklore.core.operators import Operator
    from arklore.names.registry import Registry
    from support.lines import line
    from support.store import ingested_store

    ops = {i: Operator(i, n.name) for i, n in graph.nodes.items() if n.kind == "operator"}
    path = home / "arklore.sqlite3"
    lines = [line("test/x", 1, "阿米娅", "你好。")]
    stage = Stage("test/x", Source.AVG, "test/x.txt", content_hash="x", lines=lines)
    ingested_store(path, [stage], Registry(ops)).close()
    return path
