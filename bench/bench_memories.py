"""Memories for chat: per-call latency of ``Workspace.memories(operator, query)``.

    python -m bench bench_memories     # env: ARKLORE_HOME (an ingested store), ARKLORE_EMBEDDER

The store of ``$ARKLORE_HOME`` is copied into a temporary home (the real one is not touched)
and the stages 凯尔希 appears in are "extracted" there by an in-process stand-in for the model
(one event per ~12 lines, a first-person memory for every speaker of it, cut from her own
lines), through the real run and checks. ``ARKLORE_MEMORIES_BENCH_STAGES`` caps the stages
(default 80); ``ARKLORE_MEMORIES_BENCH_HOME`` keeps the temporary home, so the embedding cache
survives between runs.

Reported: embedding her memories ahead of chat (what ``extract events`` does after a run;
cached on disk), the first call, then 300 calls with
distinct chat-like queries (query embedding included: every query is new), p50/p95/p99,
against the baseline of embedding the same queries alone, interleaved call by call (the floor
any embedding-ranked answer pays), plus calls without a query (story order) and a repeated
query (the query cache: everything but the embedding). Goal: p95 under
30 ms embedding included.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

OPERATOR = "凯尔希"
QUERY_PARTS = [
    "你还记得", "切城的事吗", "那天在龙门", "我们第一次见面", "阿米娅", "博士", "罗德岛",
    "整合运动", "你当时在想什么", "那场战斗", "后来怎么样了", "医疗部", "为什么不告诉我",
    "石棺", "卡兹戴尔", "谢谢你", "累了吗", "，", "？", "。",
]  # fmt: skip
_LINE = re.compile(r"^\[(\d+)\] (?:〔[^〕]*〕)?(.*)$", re.M)
_RANGE = re.compile(r"本段为第 (\d+)–(\d+) 行")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


class StandIn:
    """Plays the endpoint in-process, behind the real LLM service (a ``ChatBackend``): events
    of ~12 lines, a memory per speaker of each, made from that speaker's own first line in it
    (first person, present by construction)."""

    def complete(self, request: Any) -> Any:
        import orjson

        from arklore.llm import ChatResult

        prompt = request.messages[-1]["content"]
        first, last = (int(x) for x in _RANGE.search(prompt).groups())  # type: ignore[union-attr]
        said: dict[int, tuple[str, str]] = {}
        for no, body in _LINE.findall(prompt):
            if not body.startswith("（") and "：" in body:
                who, text = body.split("：", 1)
                said[int(no)] = (who.replace("（存疑）", "").replace("（选项）", ""), text)
        events = []
        for start in range(first, last + 1, 12):
            end = min(last, start + 11)
            memories: dict[str, str] = {}
            for no in range(start, end + 1):
                if no in said and said[no][0] not in memories:
                    memories[said[no][0]] = f"我记得自己说过：{said[no][1][:60]}"
            events.append({"phase": "经过", "summary": "一段剧情。", "actors": list(memories),
                           "memories": memories, "time_hint": None,
                           "line_start": start, "line_end": end})  # fmt: skip
        return ChatResult(orjson.dumps({"events": events}).decode(), model="stand-in")

    def stream(self, request: Any) -> Any:
        yield self.complete(request).content

    def close(self) -> None:
        pass


def stand_in_llm(files: Any) -> Any:
    """The real LLM service (cache, ledger, validation) with :class:`StandIn` as its endpoint."""
    from arklore.llm import LLM, LLMConfig

    config = LLMConfig(base_url="http://stand-in.invalid/v1", model="stand-in")
    return LLM(lambda task: config, files, backend_factory=lambda cfg: StandIn())


def _copy_store(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dest) as b:
        a.backup(b)


def main() -> None:
    from arklore.events import runner
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    settings = Settings.from_env()  # a benchmark is an entry point: it reads the environment
    src = Path(settings.home) / "arklore.sqlite3"
    if not src.exists():
        print(f"no store at {src}: run `arklore ingest` first")
        return
    keep = os.environ.get("ARKLORE_MEMORIES_BENCH_HOME")
    home = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-memories-"))
    n_stages = int(os.environ.get("ARKLORE_MEMORIES_BENCH_STAGES", "80"))
    try:
        if not (home / "arklore.sqlite3").exists():
            t = time.perf_counter()
            _copy_store(src, home / "arklore.sqlite3")
            print(f"store copied in {time.perf_counter() - t:.1f} s")
        ws = Workspace(settings.model_copy(update={"home": home}))
        stages = [a.stage_path for a in ws.events.appearances(OPERATOR)][:n_stages]
        t = time.perf_counter()
        llm = stand_in_llm(ws.paths.llm)
        try:
            report = runner.extract_events(
                ws.corpus.store(), llm, stages, resolve=ws.names.resolve_person
            )
        finally:
            llm.close()
        print(
            f"stand-in extraction of {len(stages)} stages ({report.jobs} chunks, "
            f"{report.skipped} already stored) in {time.perf_counter() - t:.1f} s: "
            f"{report.summary.get('memories', 0)} memories kept"
        )
        emb = ws.rag.embedder()
        print(f"embedder {emb.name} ({emb.version}), threads {settings.e5_threads}")
        t = time.perf_counter()
        embedded = ws.events.memory_service().embed_stages(stages)
        print(
            f"memories embedded ahead of chat (as `extract events` does): {embedded} new in "
            f"{time.perf_counter() - t:.1f} s"
        )
        t = time.perf_counter()
        first = ws.events.memories(OPERATOR, "你还记得切城的事吗")
        first_s = time.perf_counter() - t
        n_mem = int(first.reason.split()[0]) if first.kind == "memories" else 0
        print(f"first call {first_s:.2f} s ({first.kind}: {first.reason})")
        assert first.kind == "memories", first.reason

        rnd = random.Random(20260712)
        queries: list[str] = []
        while len(queries) < 300:
            q = "".join(rnd.choice(QUERY_PARTS) for _ in range(rnd.randint(2, 6)))
            if q not in queries:
                queries.append(q)
        queries = [f"{q}{i}" for i, q in enumerate(queries)]  # every query is new
        emb.embed_query("warm")
        base, full = [], []
        for q in queries:  # interleaved, so both see the same machine load
            t = time.perf_counter()
            emb.embed_query(q + "#")  # as long, and not the string the query cache will hold
            base.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            got = ws.events.memories(OPERATOR, q, k=3)
            full.append((time.perf_counter() - t) * 1000)
            assert got.kind == "memories" and len(got.items) == 3
        plain = []
        for _ in range(300):
            t = time.perf_counter()
            ws.events.memories(OPERATOR, k=3)
            plain.append((time.perf_counter() - t) * 1000)
        repeat = []
        for _ in range(300):
            t = time.perf_counter()
            ws.events.memories(OPERATOR, "你还记得切城的事吗", k=3)
            repeat.append((time.perf_counter() - t) * 1000)
        print(f"{n_mem} memories of {OPERATOR}; {len(queries)} distinct queries")
        print(f"{'':38}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
        rows = [
            ("memories(op, new query)  [measured]", full),
            ("query embedding alone    [baseline]", base),
            ("memories(op), no query", plain),
            ("memories(op, repeated query)", repeat),
        ]
        for name, xs in rows:
            print(f"{name:38}{_pct(xs, 50):9.2f}{_pct(xs, 95):9.2f}{_pct(xs, 99):9.2f}")
        p95 = _pct(full, 95)
        overhead = _pct(full, 50) - _pct(base, 50)
        print(
            f"ratio p50 measured/baseline {_pct(full, 50) / _pct(base, 50):.2f} "
            f"(+{overhead:.2f} ms beyond the query embedding); "
            f"p95 {p95:.2f} ms [{'PASS' if p95 < 30 else 'FAIL'} < 30 ms]"
        )
        ws.close()
    finally:
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
