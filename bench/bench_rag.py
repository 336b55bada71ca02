"""Relation RAG: build time (first and unchanged rebuild) and per-turn context latency.

    python -m bench bench_rag          # env: ARKLORE_HOME, ARKLORE_EMBEDDER, ARKLORE_GAMEDATA

Graph: ``$ARKLORE_HOME/relation_graph.json`` (``ARKLORE_RAG_BENCH_GRAPH`` to point elsewhere),
with the extracted relations of ``$ARKLORE_HOME/arklore.sqlite3`` when present; else an
invented graph of ~730 describable edges. The index is built into a temporary home (the real
one is not touched), with template descriptions (no LLM).

Messages: 1,000, fixed seed: a third name nobody, most name one to three people the operator
knows or does not know, some are 2,000+ characters. Reported: p50/p95 of
``build_context`` total, split into mention detection, query embedding and vector search (each
over the calls that ran it), next to a Chroma query of the same vector without a filter, and
the budget check. Pass: second build embeds nothing and takes < 2 s; p95 total < 30 ms.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "arknights"
FILLER = [
    "今天", "天气真好", "你还记得", "那次任务", "吗？", "我们去甲板上走走吧", "博士", "罗德岛",
    "龙门的夜景", "，", "。", "Hello ", "doctor ", "😀", "晚饭吃什么", "我有点累了", "谢谢你",
]  # fmt: skip


def _pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _graph(ws):
    from arklore.graph.io import load_graph

    path = Path(os.environ.get("ARKLORE_RAG_BENCH_GRAPH") or ws.paths.graph)
    if path.exists():
        return load_graph(path), str(path), ws.paths.db
    from arklore.graph.model import Edge, Node, RelationGraph

    rnd = random.Random(5)
    ids = [f"char_{i:03d}_bench{i}" for i in range(120)]
    nodes = {i: Node(i, f"干员{k}号", "operator", {}) for k, i in enumerate(ids)}
    edges = []
    for k, a in enumerate(ids):
        for j in range(6 + k % 3):
            b = ids[(k + 1 + j * 7) % len(ids)]
            s = round(rnd.uniform(0.3, 0.99), 4)
            edges.append(Edge(a, b, rnd.choice(["朋友", "同事", "战友", "interaction"]), s,
                              ["story"], {"direct": 1, "turns": 6}, [], None, ["x"]))  # fmt: skip
    return RelationGraph(nodes, edges), "(invented)", None


def _messages(graph, ops: list[str], n: int = 1000) -> list[tuple[str, str]]:
    rnd = random.Random(20260701)
    all_names = [
        nd.name for nd in graph.nodes.values() if nd.kind == "operator" and len(nd.name) >= 2
    ]
    out = []
    for i in range(n):
        op = rnd.choice(ops)
        known = [graph.nodes[e.target].name for e in graph.ranked(op) if e.target in graph.nodes]
        parts = [rnd.choice(FILLER) for _ in range(rnd.randint(1, 8))]
        kind = i % 3
        if kind and known:
            for _ in range(rnd.randint(1, 3)):
                pool = known if rnd.random() < 0.7 else all_names
                parts.insert(rnd.randrange(len(parts) + 1), rnd.choice(pool))
        msg = "".join(parts)
        if i % 40 == 0:
            msg = (msg + "".join(rnd.choice(FILLER) for _ in range(600)))[:2400]
        out.append((op, msg))
    return out


def main() -> None:
    if not os.environ.get("ARKLORE_GAMEDATA") and (SHARED / "gamedata").is_dir():
        os.environ["ARKLORE_GAMEDATA"] = str(SHARED / "gamedata")
    from arklore.graph.named import spans_from_mentions
    from arklore.rag.context import RelationRAG
    from arklore.rag.index import build_index
    from arklore.settings import Settings
    from arklore.workspace import Workspace, open_store

    ws = Workspace(Settings.from_env())  # a benchmark is an entry point: it reads the environment
    graph, gpath, db = _graph(ws)
    emb = ws.rag.embedder()
    keep = os.environ.get("ARKLORE_RAG_BENCH_HOME")  # reuse the embedding cache across runs
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-rag-"))
    store = None
    finder = _name_finder(graph)
    if db is not None and db.exists():
        store = open_store(db, create=False)
        finder = spans_from_mentions(ws.find_mentions)
    rejects = tmp / "rag_rejects.jsonl"
    try:
        kw = {"graph_path": gpath, "store": store, "embedder": emb, "rejects_path": rejects}
        r1 = build_index(tmp, graph, force=True, **kw)
        r2 = build_index(tmp, graph, **kw)
        r3 = build_index(tmp, graph, force=True, **kw)
        print(f"graph {gpath}: {len(graph.nodes)} nodes, {len(graph)} edges")
        print(f"embedder {emb.name} ({emb.version})")
        print(f"documents {r1.documents} {r1.by_source} rejected {r1.rejected}")
        print(f"first build        {r1.seconds:7.2f} s  embedded {r1.embedded}")
        ok = r2.embedded == 0 and r2.seconds < 2.0 and r2.unchanged
        verdict = "PASS" if ok else "FAIL"
        print(f"second build       {r2.seconds:7.2f} s  embedded {r2.embedded}  [{verdict} < 2 s]")
        per730 = r3.seconds * 730 / max(r3.documents, 1)
        print(
            f"forced full rebuild {r3.seconds:6.2f} s  embedded {r3.embedded} "
            f"(~{per730:.2f} s per 730 documents)"
        )

        ops = sorted(
            {
                e.source
                for e in graph.edges()
                if e.source in graph.nodes and graph.nodes[e.source].kind == "operator"
            }
        )
        msgs = _messages(graph, ops)
        for rank_always in (False, True):
            print(f"-- {'every named turn ranked by Chroma' if rank_always else 'as served'}")
            rag = RelationRAG(
                tmp, graph=graph, embedder=emb, mention_finder=finder, rank_always=rank_always
            )
            _turns(rag, msgs, emb, tmp)
    finally:
        if store is not None:
            store.close()
        ws.close()
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _name_finder(graph):
    """Operator mentions by exact node name (for the invented graph, which has no store)."""
    names = [(n.name, i) for i, n in graph.nodes.items() if n.kind == "operator"]

    def find(text: str):
        return [(i, text.find(n), text.find(n) + len(n)) for n, i in names if n in text]

    return find


def _turns(rag, msgs, emb, tmp) -> None:
    from arklore.core.tokens import count_tokens
    from arklore.rag.context import query_window
    from arklore.rag.index import open_active

    t0 = time.perf_counter()
    rag.build_context(msgs[0][0], msgs[0][1])  # warm-up: matcher build, doc table load
    warm = time.perf_counter() - t0
    col, _ = open_active(tmp, emb)
    total, mention, embed, search, raw = [], [], [], [], []
    over = order_bad = 0
    for op, msg in msgs:
        t = time.perf_counter()
        ctx = rag.build_context(op, msg)
        total.append((time.perf_counter() - t) * 1000)
        mention.append(ctx.timings_ms.get("mentions", 0.0))
        if "embed" in ctx.timings_ms:
            embed.append(ctx.timings_ms["embed"])
            search.append(ctx.timings_ms["search"])
            q = rag._qcache.get(emb, query_window(msg, rag.detect_targets(op, msg)))
            t = time.perf_counter()
            col.query(query_embeddings=[q], n_results=2)
            raw.append((time.perf_counter() - t) * 1000)
        over += count_tokens(ctx.text) > ctx.budget
        if ctx.contextual and len(ctx.anchors) < len(rag.get_anchor_relations(op)):
            order_bad += 1
    print(f"warm-up {warm * 1000:.0f} ms; {len(msgs)} messages, {len(embed)} ran a vector query")
    print(f"{'':22}{'p50 ms':>9}{'p95 ms':>9}{'n':>6}")
    rows = [
        ("get_relation_context", total),
        ("  mention detection", mention),
        ("  query embedding", embed),
        ("  vector search", search),
        ("chroma, no filter", raw),
    ]
    for name, xs in rows:
        print(f"{name:22}{_pct(xs, 50):9.2f}{_pct(xs, 95):9.2f}{len(xs):6d}")
    p95 = _pct(total, 95)
    verdict = "PASS" if p95 < 30 and not over and not order_bad else "FAIL"
    print(
        f"budget exceeded {over}, contextual without all anchors {order_bad}; "
        f"mean {statistics.fmean(total):.2f} ms; p95 {p95:.2f} ms [{verdict} < 30 ms]"
    )


if __name__ == "__main__":
    main()
