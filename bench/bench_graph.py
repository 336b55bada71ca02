"""Relation graph: load time and get_top_anchor_relations vs a plain Python sort, same run.

    .venv/bin/python -m bench bench_graph

Graphs:

* ``synthetic`` -- 2,000 nodes / 50,000 directed edges, fixed seed, fields shaped like real
  edges (signals, 0-3 evidence ids, 0-5 stages). Pass: load from disk < 0.5 s.
* ``real`` -- ``$ARKLORE_HOME/relation_graph.json`` when it exists (``arklore graph build``).

Queries: 100,000 ``get_top_anchor_relations(a, 3)`` for random nodes with edges, next to the
baseline "sort a's out-edge list by the anchor order (:func:`arklore.graph.model.anchor_key`),
keep the first edge per target, take 3" on the same lists; both results are checked equal. The graph sorts each node's
list once (first call, "cold": reported as the cost of ranking every node once) and then serves
slices from memory.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from arklore.graph.io import load_graph, save_graph
from arklore.graph.model import INTERACTION, Edge, Node, RelationGraph, anchor_key
from arklore.settings import Settings
from arklore.workspace import Paths

CALLS = 100_000
K = 3
PREDS = ["朋友", "同事", "战友", "上下级", "敌对", INTERACTION, INTERACTION, INTERACTION]


def synthetic(n_nodes: int = 2000, n_edges: int = 50_000, seed: int = 20261202) -> RelationGraph:
    rng = random.Random(seed)
    ids = [f"char_{i:04d}_x{i}" for i in range(n_nodes)]
    nodes = {
        i: Node(i, f"干员{n}", "operator", {"nation": f"国{n % 12}"}) for n, i in enumerate(ids)
    }
    seen: set[tuple[str, str, str]] = set()
    edges = []
    while len(edges) < n_edges:
        a, b = rng.sample(ids, 2)
        p = rng.choice(PREDS)
        if (a, b, p) in seen:
            continue
        seen.add((a, b, p))
        sig = {
            "turns": rng.randint(0, 300),
            "co_stages": rng.randint(0, 40),
            "mentions": rng.randint(0, 50),
        }
        stages = sorted(
            {
                f"activities/act{rng.randint(1, 80)}/level_{rng.randint(1, 9)}"
                for _ in range(rng.randint(0, 5))
            }
        )
        ev = sorted(f"{s}#{rng.randint(1, 300)}:{rng.getrandbits(32):08x}" for s in stages[:3])
        edges.append(
            Edge(a, b, p, round(rng.random(), 4), ["interaction", "mention"], sig, ev, None, stages)
        )
    return RelationGraph(nodes, edges)


def _baseline(out: list[Edge], k: int, names: dict[str, Node]) -> list[Edge]:
    seen: set[str] = set()
    top = []
    for e in sorted(out, key=lambda e: anchor_key(e, names[e.target].name)):
        if e.target not in seen:
            seen.add(e.target)
            top.append(e)
            if len(top) == k:
                break
    return top


def _time_load(path: Path, repeat: int = 3) -> tuple[float, RelationGraph]:
    best, graph = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        graph = load_graph(path)
        best = min(best, time.perf_counter() - t0)
    return best, graph  # type: ignore[return-value]


def _queries(name: str, graph: RelationGraph) -> None:
    rng = random.Random(7)
    with_edges = sorted({e.source for e in graph.edges()})
    picks = [rng.choice(with_edges) for _ in range(CALLS)]
    outs = {a: graph.out_edges(a) for a in with_edges}
    t0 = time.perf_counter()
    for a in with_edges:
        graph.anchors(a)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for a in picks:
        graph.get_top_anchor_relations(a, K)
    ours = (time.perf_counter() - t0) / CALLS
    t0 = time.perf_counter()
    for a in picks:
        _baseline(outs[a], K, graph.nodes)
    base = (time.perf_counter() - t0) / CALLS
    for a in picks[:2000]:
        assert graph.get_top_anchor_relations(a, K) == _baseline(outs[a], K, graph.nodes)
    degs = sorted(len(v) for v in outs.values())
    print(
        f"{name:9} top-{K} x {CALLS:,}: graph {ours * 1e6:6.2f} us/call, plain sort "
        f"{base * 1e6:7.2f} us/call ({base / ours:5.1f}x); ranking all {len(with_edges):,} nodes "
        f"once {cold * 1e3:.0f} ms; degree median {degs[len(degs) // 2]}, max {degs[-1]}",
        flush=True,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "synthetic.json"
        save_graph(synthetic(), path)
        secs, graph = _time_load(path)
        ok = "PASS" if secs < 0.5 else "FAIL"
        print(
            f"synthetic load: {len(graph.nodes):,} nodes / {len(graph):,} edges, "
            f"{path.stat().st_size / 1e6:.1f} MB in {secs * 1e3:.0f} ms (best of 3) [{ok}: < 500 ms]",
            flush=True,
        )
        _queries("synthetic", graph)
    real = Paths(Settings.from_env().home).graph
    if real.is_file():
        secs, graph = _time_load(real)
        print(
            f"real load: {len(graph.nodes):,} nodes / {len(graph):,} edges, "
            f"{real.stat().st_size / 1e6:.1f} MB in {secs * 1e3:.0f} ms (best of 3)",
            flush=True,
        )
        _queries("real", graph)
    else:
        print(f"real graph: {real} not found (run `arklore graph build`), skipped")


if __name__ == "__main__":
    main()
