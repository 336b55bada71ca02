"""The HTTP service under a bounded load on loopback: ``POST /v1/relation-context`` and
``POST /v1/turn`` with mixed messages, 5,000 requests, 16 concurrent.

    python -m bench bench_service     # env: ARKLORE_HOME (a built knowledge base), ARKLORE_*

The knowledge base of ``$ARKLORE_HOME`` is used as built (store, graph, relation index with the
configured embedder); a missing piece is built first (ingest, graph, index: minutes). Profiles
are drafted without a model into a temporary folder given as ``ARKLORE_CHARS_DIR`` (the home is
not written), so turns carry real tier-B personas. The server is ``arklore serve --workers 2``
on a free loopback port; the load comes from one asyncio client in this process (the same two
cores). Messages: the relation benchmark's 1,000 (fixed seed: a third name nobody, most name
one to three people, some are 2,000+ characters), half to each endpoint, in a fixed order.

Before measuring, :data:`WARM` requests (every message once, not measured) let both workers
fill their per-operator caches. Reported: per endpoint p50/p95/p99 latency, errors, throughput, and the p95 as a ratio to
``GET /healthz`` under the same load (the framework and loopback cost), plus the share of
turns with an empty relation block and with contextual entries. Pass: zero errors, and
relation-context p95 < 100 ms. The run is bounded: a fixed count, a per-request timeout of
30 s and an overall deadline of 600 s; the server is stopped at the end whatever happens.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_rag import SHARED, _messages, _pct

REQUESTS = 5000
CONCURRENCY = 16
BASELINE = 1000
WARM = 1000
TIMEOUT = 30.0
DEADLINE = 600.0
GOAL_P95_MS = 100.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_built(ws) -> None:
    """Build what is missing of the knowledge base (each step as the CLI would)."""
    from arklore.core.errors import ArkloreError
    from arklore.rag.index import open_active

    try:
        ws.corpus.store()
    except ArkloreError:
        print("no store: ingesting (minutes)…", flush=True)
        ws.ingest()
    if not ws.paths.graph.exists():
        print("no graph: building it…", flush=True)
        ws.graph.build()
    try:
        open_active(ws.paths.rag, ws.rag.embedder(), ws.rag.chroma())
    except ArkloreError:
        print(f"no index for embedder {ws.settings.embedder}: building it (minutes)…", flush=True)
        ws.rag.build(no_llm=True)


class _Conn:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: the load generator must cost
    far less CPU than the server it measures (httpx costs about as much as the server)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        await self.writer.drain()
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("connection closed")
        status = int(status_line.split()[1])
        length, chunked, close = 0, False, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            k = k.strip().lower()
            if k == "content-length":
                length = int(v)
            elif k == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
            elif k == "connection" and "close" in v.lower():
                close = True
        if chunked:
            data = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                data += chunk[:-2]
        else:
            data = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def _load(port: int, specs: list[tuple[str, dict | None]], lat: dict, errors: list) -> float:
    import orjson

    queue: asyncio.Queue = asyncio.Queue()
    for s in specs:
        queue.put_nowait(s)
    t0 = time.perf_counter()

    async def worker() -> None:
        conn = _Conn("127.0.0.1", port)
        try:
            while not queue.empty() and time.perf_counter() - t0 < DEADLINE:
                path, body = queue.get_nowait()
                t = time.perf_counter()
                try:
                    raw = None if body is None else orjson.dumps(body)
                    status, data = await asyncio.wait_for(
                        conn.request("GET" if raw is None else "POST", path, raw), TIMEOUT
                    )
                    ok = status == 200
                    if ok and path == "/v1/turn":
                        lat.setdefault("_turns", []).append(orjson.loads(data))
                    what: object = status
                except (TimeoutError, OSError, ValueError) as exc:
                    conn.close()
                    ok, what = False, exc
                lat.setdefault(path, []).append((time.perf_counter() - t) * 1000)
                if not ok:
                    errors.append(f"{path}: {what}")
        finally:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter() - t0


def main() -> None:
    if not os.environ.get("ARKLORE_GAMEDATA") and (SHARED / "gamedata").is_dir():
        os.environ["ARKLORE_GAMEDATA"] = str(SHARED / "gamedata")
    if not os.environ.get("ARKLORE_ASTR") and (SHARED / "astr").is_dir():
        os.environ["ARKLORE_ASTR"] = str(SHARED / "astr")
    import httpx

    from arklore.settings import Settings
    from arklore.workspace import Workspace

    ws = Workspace(Settings.from_env())  # a benchmark is an entry point: it reads the environment
    _ensure_built(ws)
    graph = ws.graph.current()
    ops = sorted(
        {e.source for e in graph.edges() if graph.nodes.get(e.source) and
         graph.nodes[e.source].kind == "operator"}
    )  # fmt: skip
    msgs = _messages(graph, ops)
    ws.close()
    exe = str(Path(sys.executable).with_name("arklore"))
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        chars = Path(tmp) / "chars"
        subprocess.run([exe, "profiles", "draft", "--dir", str(chars), "--json"], check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROMETHEUS_")}
        env.update(ARKLORE_CHARS_DIR=str(chars), NO_PROXY="127.0.0.1")
        env.pop("LLM_API_KEY", None)
        server = subprocess.Popen(
            [exe, "serve", "--port", str(port), "--workers", "2", "--log-level", "warning"],
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            t0 = time.perf_counter()
            while True:
                if server.poll() is not None:
                    raise SystemExit("the server exited")
                try:
                    if httpx.get(base + "/readyz", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.perf_counter() - t0 > 300:
                    raise SystemExit("the server did not become ready in 300 s")
                time.sleep(0.5)
            print(f"server ready in {time.perf_counter() - t0:.1f} s (2 workers, port {port}, "
                  f"embedder {ws.settings.embedder}, {len(list(chars.glob('*.char')))} profiles)")  # fmt: skip
            specs: list[tuple[str, dict | None]] = []
            for i in range(REQUESTS):
                op, msg = msgs[i % len(msgs)]
                if i % 2:
                    specs.append(("/v1/turn", {"operator": op, "message": msg}))
                else:
                    specs.append(("/v1/relation-context", {"operator": op, "message": msg}))
            warm: dict = {}
            asyncio.run(_load(port, specs[:WARM], warm, []))  # not measured: caches fill
            base_lat: dict = {}
            base_err: list = []
            asyncio.run(_load(port, [("/healthz", None)] * BASELINE, base_lat, base_err))
            lat: dict = {}
            errors: list = []
            wall = asyncio.run(_load(port, specs, lat, errors))
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    done = sum(len(v) for k, v in lat.items() if not k.startswith("_"))
    hz = _pct(base_lat.get("/healthz", []), 95)
    print(f"{done} requests in {wall:.1f} s ({done / wall:.0f}/s), {CONCURRENCY} concurrent, "
          f"{len(errors)} errors" + (f" e.g. {errors[:3]}" if errors else ""))  # fmt: skip
    print(f"{'':22}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'n':>6}{'p95/healthz':>13}")
    rows = [("GET /healthz (baseline)", base_lat.get("/healthz", []))]
    rows += [(f"POST {p}", lat.get(p, [])) for p in ("/v1/relation-context", "/v1/turn")]
    for name, xs in rows:
        ratio = _pct(xs, 95) / hz if hz else float("nan")
        print(f"{name:22}{_pct(xs, 50):9.2f}{_pct(xs, 95):9.2f}{_pct(xs, 99):9.2f}{len(xs):6d}"
              f"{ratio:12.1f}x")  # fmt: skip
    turns = lat.get("_turns", [])
    if turns:
        rel = [t["blocks"][1] for t in turns]
        empty = sum(1 for b in rel if b["empty"]) / len(rel)
        ctx = sum(1 for b in rel if b["meta"].get("contextual")) / len(rel)
        tokens = sorted(t["total_tokens"] for t in turns)
        print(
            f"turns: relation block empty {empty:.0%}, with contextual entries {ctx:.0%}; "
            f"system prompt p50 {_pct(tokens, 50):.0f} / p95 {_pct(tokens, 95):.0f} tokens"
        )
    p95 = _pct(lat.get("/v1/relation-context", []), 95)
    ok = not errors and base_err == [] and p95 < GOAL_P95_MS and done == REQUESTS
    print(
        f"relation-context p95 {p95:.1f} ms [{'PASS' if ok else 'FAIL'}: zero errors, "
        f"p95 < {GOAL_P95_MS:.0f} ms]"
    )


if __name__ == "__main__":
    main()
