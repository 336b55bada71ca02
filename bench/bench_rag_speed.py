"""Speed of the relation index, side by side (issue item 8).

    python -m bench bench_rag_speed     # env: ARKLORE_HOME, ARKLORE_EMBEDDER, ARKLORE_E5_THREADS

Graph and store as ``bench_rag`` (the real ``$ARKLORE_HOME`` ones when built, else an invented
graph); the index goes into a temporary folder, template descriptions (no LLM).

(a) Cold build against pure embedding. Three fresh processes, one after the other: pure
embedding of the build's document texts with the same embedder (same batches), a cold
``build_index`` (empty embedding cache, Chroma not yet imported, model not loaded), then the
pure embedding again; the baseline is the mean of the two pure runs (they bracket the build,
so a load change on the machine shows as a gap between them). Reported: wall and CPU seconds,
the ratio (goal <= 1.2x), the build's stages (``BuildReport.timings`` plus the process's
imports, graph and model load).

(b) Ranked turns. Hand-written Chinese chat messages naming one to three people an operator
has documents about, none of her anchors (half of them several sentences long), every named turn ranked by
Chroma. ``build_context`` p50/p95, embedding included, for the query window of the previous
version [baseline: the whole message up to 256 characters] and the current one (a
sentence-bounded window of <= 24 characters either side of each name, <= 96 in all),
interleaved message by message. With the tokens embedded and the ms per token. Goal p95 < 30 ms.

Agreement: on the turns where ranking chooses (more candidate documents than CONTEXT_K), the
overlap of the top-k documents chosen with the short window and with the whole message, next
to the noise floor (the whole message against the same message with a harmless prefix and
suffix, "嗯，" ... "呢") and to chance (random scores, same candidates).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_rag import SHARED, _graph, _name_finder, _pct

TEMPLATES = [
    "{A}最近还好吗？上次见到的时候好像很累的样子。",
    "你和{A}认识很久了吧？能跟我讲讲你们是怎么认识的吗？",
    "今天在食堂碰到{A}和{B}了，他们聊得很开心。你平时和他们关系怎么样？",
    "博士让我问问你，{A}的伤好些了没有。",
    "我有点担心{A}。最近总是一个人待在房间里，也不怎么说话。你觉得我该怎么办？",
    "听说你之前和{A}一起执行过任务，那次任务顺利吗？",
    "{A}说你做的菜很好吃，什么时候也让我尝尝？",
    "如果让你在{A}和{B}之间选一个搭档，你会选谁？为什么？",
    "昨晚的雨好大啊。对了，{A}托我带句话给你，说谢谢你上次帮忙。",
    "你觉得{A}是个什么样的人？",
    "训练结束了，好累啊。你看到{A}了吗？说是要来找你。",
    "{A}和{B}又吵起来了，我劝不住，你快去看看吧！",
    "我刚从龙门回来，路上遇到了{A}，让我代为向你问好。",
    "有时候我会想，如果没有{A}，现在会是什么样子呢？",
    "你还记得第一次见到{A}的时候吗？",
    "明天是{A}的生日，我们准备给个惊喜，你要不要一起来？",
    "{A}、{B}和{C}今天都去外勤了，基地里好安静。你一个人会不会无聊？",
    "说实话，我有点怕{A}，看起来总是很严肃。",
    "你和{A}之间是不是发生过什么？每次提到这个名字你的表情都有点奇怪。",
    "博士今天又熬夜了，你能不能劝劝？对了，{A}最近好像一直在训练室，你知道在忙什么吗？",
    "今天的任务报告写完了吗？我还差一点。{A}说可以帮我看看，不过我不太好意思麻烦人家。",
    "甲板上的风好舒服。你看，那边是{A}和{B}吧？他们在做什么呢？",
    "我听说{A}以前救过你，是真的吗？",
    "你会想念{A}吗？",
    "{A}教了我一个新的战术，我觉得挺有用的，你要不要听听？",
    "要是{A}和{B}一起上战场，你觉得谁更靠得住？",
    "你能告诉我{A}平时喜欢做什么吗？我想送份礼物。",
    "上次和{C}聊天的时候提到了你，还提到了{A}，你们三个以前是不是一起共事过？",
]
SMALL_TALK = [
    "今天天气真好。", "晚饭吃什么呢？", "我有点累了。", "龙门的夜景真漂亮啊。", "谢谢你一直陪着我。",
    "博士又在办公室睡着了。", "最近的任务好多啊！", "我们去甲板上走走吧。", "你今天看起来心情不错。",
]  # fmt: skip
LEGACY_SIDE, LEGACY_MAX = 60, 256  # the previous version's query window


def legacy_window(text: str, spans: list) -> str:
    """The previous version: the whole message, or for one over 256 characters the text
    60 characters either side of each name."""
    if len(text) <= LEGACY_MAX:
        return text
    parts: list[tuple[int, int]] = []
    for _, s, e in sorted(spans, key=lambda x: x[1]):
        lo, hi = max(0, s - LEGACY_SIDE), min(len(text), e + LEGACY_SIDE)
        if parts and lo <= parts[-1][1]:
            parts[-1] = (parts[-1][0], max(hi, parts[-1][1]))
        else:
            parts.append((lo, hi))
    return " ".join(text[a:b] for a, b in parts)[:LEGACY_MAX]


def noisy_window(text: str, spans: list) -> str:
    """The noise floor: the whole message with a harmless prefix and suffix."""
    return "嗯，" + legacy_window(text, spans) + "呢"


PURE = """
import json, resource, sys, time
from arklore.rag.embedders import EMBED_BATCH, make_embedder
name, threads, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
texts = json.load(open(path, encoding="utf-8"))
t = time.perf_counter()
emb = make_embedder(name, e5_threads_setting=threads)
load = time.perf_counter() - t
t, c = time.perf_counter(), time.process_time()
for i in range(0, len(texts), EMBED_BATCH):
    emb.embed_documents(texts[i : i + EMBED_BATCH])
print(json.dumps({"embed": time.perf_counter() - t, "cpu": time.process_time() - c,
                  "load_model": load}))
"""

BUILD = """
import time
t0 = time.perf_counter()
import json, sys
from pathlib import Path
from arklore.graph.io import load_graph
from arklore.rag.embedders import make_embedder
from arklore.rag.index import build_index
from arklore.workspace import open_store
imports = time.perf_counter() - t0
name, threads, gpath, db, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
c0 = time.process_time()
t = time.perf_counter()
graph = load_graph(Path(gpath))
t_graph = time.perf_counter() - t
t = time.perf_counter()
emb = make_embedder(name, e5_threads_setting=threads)
t_model = time.perf_counter() - t
store = open_store(Path(db), create=False) if db else None
root = Path(root)
t = time.perf_counter()
r = build_index(root, graph, embedder=emb, rejects_path=root / "rejects.jsonl",
                graph_path=gpath, store=store, force=True)
build = time.perf_counter() - t
print(json.dumps({"imports": imports, "load_graph": t_graph, "load_model": t_model,
                  "build_index": build, "cpu": time.process_time() - c0,
                  "timings": r.timings, "documents": r.documents, "embedded": r.embedded}))
"""


def _run(code: str, *args: str) -> tuple[dict, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=False, env=os.environ | {"PYTHONUNBUFFERED": "1"})  # fmt: skip
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1]), wall


def cold_build(ws, graph, gpath, db, tmp: Path) -> Path:
    from arklore.rag.docs import SourceContext, collect_documents
    from arklore.rag.validate import validate
    from arklore.workspace import open_store

    store = open_store(db, create=False) if db is not None and db.exists() else None
    try:
        docs, _ = validate(
            collect_documents(SourceContext(graph=graph, graph_path=gpath, store=store), None),
            graph,
        )
    finally:
        if store is not None:
            store.close()
    texts = [d.text for d in docs]
    emb = ws.rag.embedder()
    counter = getattr(emb, "token_count", None)
    tokens = sum(counter(t, query=False) for t in texts) if counter else 0
    tpath = tmp / "texts.json"
    tpath.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    name, threads = emb.name, str(ws.settings.e5_threads)
    root = tmp / "index"
    dbarg = str(db) if db is not None and db.exists() else ""
    print(f"(a) cold build: {len(texts)} documents, {tokens:,} tokens, embedder {name} "
          f"({emb.version}), threads {threads}; 3 fresh processes in turn", flush=True)  # fmt: skip
    p1, _ = _run(PURE, name, threads, str(tpath))
    b, b_wall = _run(BUILD, name, threads, gpath, dbarg, str(root))
    p2, _ = _run(PURE, name, threads, str(tpath))
    assert b["embedded"] == len(texts), (b["embedded"], len(texts))
    cold = b["load_graph"] + b["load_model"] + b["build_index"]
    base = (p1["embed"] + p2["embed"]) / 2
    base_cpu = (p1["cpu"] + p2["cpu"]) / 2
    print(f"{'':44}{'wall s':>9}{'cpu s':>9}")
    print(f"{'pure embedding, before the build [baseline]':44}{p1['embed']:9.2f}{p1['cpu']:9.2f}")
    print(f"{'cold build (graph + model + build_index)':44}{cold:9.2f}{b['cpu']:9.2f}")
    print(f"{'pure embedding, after the build [baseline]':44}{p2['embed']:9.2f}{p2['cpu']:9.2f}")
    ratio = cold / base
    verdict = "PASS" if ratio <= 1.2 else "FAIL"
    print(f"ratio cold build / pure embedding: wall {ratio:.2f}x [{verdict} <= 1.2x], "
          f"cpu {b['cpu'] / base_cpu:.2f}x; pure runs differ by "
          f"{abs(p1['embed'] - p2['embed']) / base:.0%} (machine noise)")  # fmt: skip
    own = b["timings"].get("embed", 0.0)
    print(f"cold build / its own embed stage (same process, same load): {cold / own:.3f}x; "
          f"everything but embedding {cold - own:.2f} s")  # fmt: skip
    print(f"whole process (python start to exit) {b_wall:.2f} s = "
          f"{b_wall / base:.2f}x the pure embedding")  # fmt: skip
    stages = {"imports": b["imports"], "load_graph": b["load_graph"],
              "load_model": b["load_model"], **b["timings"]}  # fmt: skip
    print("stages of the cold build (s; client_thread runs beside embed, client is the wait):")
    for k, v in stages.items():
        print(f"  {k:14}{v:9.3f}  {v / cold:6.1%}")
    if tokens:
        print(f"embedding: {base * 1000 / tokens:.2f} ms per token in batches "
              f"({len(texts) / base:.0f} documents/s)")  # fmt: skip
    return root


def _messages(graph, rag, n: int, seed: int = 20260708) -> list[tuple[str, str, int]]:
    """(operator, message, candidate documents) naming people she has documents about."""
    from arklore.rag.context import ANCHOR_K

    by_op: dict[str, list[str]] = {}
    anchors: dict[str, set[str]] = {}
    for op, target in rag._docs:
        if op not in anchors:  # her anchors go in every turn: naming them ranks nothing
            anchors[op] = {e.target for e in graph.get_top_anchor_relations(op, ANCHOR_K)}
        node = graph.nodes.get(target)
        if node is not None and len(node.name) >= 2 and target not in anchors[op]:
            by_op.setdefault(op, []).append(target)
    ops = sorted(op for op, ts in by_op.items() if len(ts) >= 2)
    rnd = random.Random(seed)
    out = []
    while len(out) < n:
        op = rnd.choice(ops)
        targets = sorted(by_op[op])
        parts = []
        for _ in range(rnd.randint(2, 4) if len(out) % 2 else 1):
            tpl = rnd.choice(TEMPLATES)
            names = rnd.sample(targets, min(3, len(targets)))
            names += names * 2
            parts.append(tpl.format(A=graph.nodes[names[0]].name, B=graph.nodes[names[1]].name,
                                    C=graph.nodes[names[2]].name))  # fmt: skip
            if rnd.random() < 0.5:
                parts.insert(rnd.randrange(len(parts) + 1), rnd.choice(SMALL_TALK))
        msg = "".join(parts)
        spans = rag.detect_targets(op, msg)
        ids = list(dict.fromkeys(nid for nid, _, _ in spans if (op, nid) in rag._docs))
        if ids:
            out.append((op, msg, sum(len(rag._docs[(op, i)]) for i in ids)))
    return out


def ranked_turns(graph, finder, emb, root: Path, n: int = 300) -> None:
    from arklore.rag.context import CONTEXT_K, RelationRAG, query_window

    def rag(window):
        r = RelationRAG(root, graph=graph, embedder=emb, mention_finder=finder,
                        rank_always=True, window=window)  # fmt: skip
        r._refresh()
        return r

    before, after, noisy = rag(legacy_window), rag(query_window), rag(noisy_window)
    msgs = _messages(graph, after, n)
    for r in (before, after):
        r.build_context(msgs[0][0], "warm-up " + msgs[0][1])
    counter = getattr(emb, "token_count", None)
    rows: dict[str, dict[str, list[float]]] = {
        k: {"total": [], "embed": [], "tokens": []} for k in ("before", "after")
    }
    agree = {"short": [], "noise": [], "chance": []}
    top1 = {"short": 0, "noise": 0}
    rnd = random.Random(7)
    for i, (op, msg, n_docs) in enumerate(msgs):
        order = [("before", before), ("after", after)]
        for key, r in order if i % 2 == 0 else order[::-1]:  # interleaved: same machine load
            t = time.perf_counter()
            ctx = r.build_context(op, msg)
            ms = (time.perf_counter() - t) * 1000
            if "embed" in ctx.timings_ms:  # a ranked turn
                rows[key]["total"].append(ms)
                rows[key]["embed"].append(ctx.timings_ms["embed"])
                if counter:
                    spans = r.detect_targets(op, msg)
                    rows[key]["tokens"].append(counter(r.window(msg, spans)))
        if n_docs <= CONTEXT_K:
            continue  # every candidate is returned: nothing for the ranking to choose
        # the query vectors are cached by the calls above: these only rank
        full = [x.doc_id for x in before.get_contextual_relations(op, msg, CONTEXT_K)]
        short = [x.doc_id for x in after.get_contextual_relations(op, msg, CONTEXT_K)]
        noise = [x.doc_id for x in noisy.get_contextual_relations(op, msg, CONTEXT_K)]
        k = len(full)
        agree["short"].append(len(set(full) & set(short)) / k)
        agree["noise"].append(len(set(full) & set(noise)) / k)
        top1["short"] += full[:1] == short[:1]
        top1["noise"] += full[:1] == noise[:1]
        agree["chance"].append(_chance(after, op, msg, full, rnd))
    print(f"(b) ranked turns: {len(msgs)} messages, {len(rows['after']['total'])} ranked turns; "
          f"{len(agree['short'])} with more candidates than k={CONTEXT_K}")  # fmt: skip
    print(f"{'':34}{'p50 ms':>9}{'p95 ms':>9}{'tokens p50':>12}{'p95':>6}{'ms/token':>10}")
    for key, label in (("before", "whole message [baseline]"), ("after", "short window")):
        d = rows[key]
        per_tok = (
            statistics.median(e / t for e, t in zip(d["embed"], d["tokens"], strict=True))
            if d["tokens"] else float("nan")
        )  # fmt: skip
        for name, xs in (
            (f"build_context, {label}", d["total"]),
            ("  query embedding", d["embed"]),
        ):
            tok = f"{_pct(d['tokens'], 50):12.0f}{_pct(d['tokens'], 95):6.0f}{per_tok:10.2f}"
            print(
                f"{name:34}{_pct(xs, 50):9.2f}{_pct(xs, 95):9.2f}"
                + (tok if "build" in name else "")
            )
    b, a = rows["before"]["total"], rows["after"]["total"]
    p95 = _pct(a, 95)
    print(f"ratio short/baseline: p50 {_pct(a, 50) / _pct(b, 50):.2f}x, p95 {p95 / _pct(b, 95):.2f}x;"
          f" p95 {p95:.2f} ms [{'PASS' if p95 < 30 else 'FAIL'} < 30 ms]")  # fmt: skip
    n_r = len(agree["short"]) or 1
    print(f"top-{CONTEXT_K} agreement with the whole message ({len(agree['short'])} turns): "
          f"short window {statistics.fmean(agree['short'] or [0]):.1%} "
          f"(top-1 same {top1['short'] / n_r:.1%}); noise floor, whole message with "
          f"'嗯，…呢' {statistics.fmean(agree['noise'] or [0]):.1%} "
          f"(top-1 {top1['noise'] / n_r:.1%}); chance {statistics.fmean(agree['chance'] or [0]):.1%}")  # fmt: skip


def _chance(rag, op: str, msg: str, full: list[str], rnd: random.Random, draws: int = 200) -> float:
    spans = rag.detect_targets(op, msg)
    ids = list(dict.fromkeys(nid for nid, _, _ in spans if (op, nid) in rag._docs))
    docs = [d for i in ids for d in rag._docs[(op, i)]]
    total = 0.0
    for _ in range(draws):
        seen, pick = set(), []
        for d in sorted(docs, key=lambda _: rnd.random()):
            if d.target_id not in seen:
                seen.add(d.target_id)
                pick.append(d.doc_id)
            if len(pick) >= len(full):
                break
        total += len(set(pick) & set(full)) / len(full)
    return total / draws


def main() -> None:
    if not os.environ.get("ARKLORE_GAMEDATA") and (SHARED / "gamedata").is_dir():
        os.environ["ARKLORE_GAMEDATA"] = str(SHARED / "gamedata")
    from arklore.graph.named import spans_from_mentions
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    ws = Workspace(Settings.from_env())  # a benchmark is an entry point: it reads the environment
    graph, gpath, db = _graph(ws)
    if db is None:
        print("no graph under ARKLORE_HOME: the invented graph (run `arklore graph build`)")
        from arklore.graph.io import save_graph

        tmp_graph = Path(tempfile.mkdtemp(prefix="bench-rag-speed-g-")) / "graph.json"
        save_graph(graph, tmp_graph)
        gpath = str(tmp_graph)
    tmp = Path(tempfile.mkdtemp(prefix="bench-rag-speed-"))
    try:
        root = cold_build(ws, graph, gpath, db, tmp)
        finder = _name_finder(graph)
        if db is not None and db.exists():
            finder = spans_from_mentions(ws.find_mentions)
        ranked_turns(graph, finder, ws.rag.embedder(), root,
                     int(os.environ.get("ARKLORE_RAG_SPEED_TURNS", "300")))  # fmt: skip
    finally:
        ws.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
