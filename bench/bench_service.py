"""The HTTP service under a bounded load on loopback: ``POST /v1/relation-context`` and
``POST /v1/turn`` with mixed messages, 5,000 requests, 16 concurrent.

    python -m bench bench_service     # env: ARKLORE_HOME (a built knowledge base), ARKLORE_*

    python -m bench bench_service --probe-only   # only the probe under turns (below)

    python -m bench bench_service --replicas     # one replica against two (below)

The knowledge base of ``$ARKLORE_HOME`` is used as built (store, graph, relation index with the
configured embedder); a missing piece is built first (ingest, graph, index: minutes). Profiles
are drafted without a model (``arklore distill --out``, about a minute) into a temporary folder
given as ``ARKLORE_CHARS_DIR`` (the home is not written), so turns carry real tier-B personas;
an ``ARKLORE_CHARS_DIR`` already set is used as it is. The server is ``arklore serve --workers 2``
on a free loopback port; the load comes from one asyncio client in this process (the same two
cores). Messages: the relation benchmark's 1,000 (fixed seed: a third name nobody, most name
one to three people, some are 2,000+ characters), half to each endpoint, in a fixed order.

Before measuring, :data:`WARM` requests (every message once, not measured) let both workers
fill their per-operator caches. Reported: per endpoint p50/p95/p99 latency, errors, throughput, and the p95 as a ratio to
``GET /healthz`` under the same load (the framework and loopback cost), plus the share of
turns with an empty relation block and with contextual entries. Pass: zero errors, and
relation-context p95 < 100 ms.

**The probe under turns**: ``GET /healthz`` p95 (one keep-alive connection from a separate
process, one request scheduled every :data:`PROBE_GAP` s, latency counted from the scheduled
time) while :data:`HEAVY` clients send
8,000-character name-dense turns (:data:`HEAVY_ROUNDS` each), as a ratio to its p95 on the
idle server. Goal: at most :data:`GOAL_PROBE_RATIO` x (per-turn work runs off the event loop).

**One replica against two on one Chroma server** (``--replicas``): a copy of the home (its
embedded collections left out, its embedding cache kept) gets its relation index built into a
``chroma run`` server on loopback (``CHROMA_HOST``/``CHROMA_PORT``); then :data:`REPLICA_TURNS`
turns at :data:`CONCURRENCY` concurrent go to one ``arklore serve``, the same turns split
evenly to two, and again to one with two turn processes (``ARKLORE_TURN_PROCESSES=2``: as many
as the two replicas have), each after :data:`REPLICA_WARM` warm turns per replica, all in the
same run: turns/s of each and the ratios. Every process (the client, the Chroma server, the
replicas and their turn workers) shares this machine's cores: a second replica adds
processes, not a machine, so on 2 cores the ratios show how more processes share the same
cores (a single replica's server and turn process may not keep both busy), not how replicas
scale.

The run is bounded: a fixed count, a per-request timeout of
30 s and an overall deadline of 600 s; the server is stopped at the end whatever happens.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_rag import SHARED, _messages, _pct
from bench.serving import stop, wait_ready

REQUESTS = 5000
CONCURRENCY = 16
BASELINE = 1000
WARM = 1000
TIMEOUT = 30.0
DEADLINE = 600.0
GOAL_P95_MS = 100.0
HEAVY = 64  # concurrent name-dense turns
HEAVY_ROUNDS = 2
HEAVY_WARM = 8  # heavy turns before measuring (both workers load what turns read)
HEAVY_CHARS = 8000
PROBE_GAP = 0.02
PROBE_IDLE = 500
GOAL_PROBE_RATIO = 3.0
REPLICA_TURNS = 2000
REPLICA_WARM = 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _built_messages() -> tuple[Any, list[tuple[str, str]], Path, str]:
    """The knowledge base of the environment's home (what is missing built first): its graph,
    the benchmark's messages to its operators, the home and the embedder."""
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    ws = Workspace(Settings.from_env())  # a benchmark is an entry point: it reads the environment
    try:
        _ensure_built(ws)
        graph = ws.graph.current()
        ops = sorted(
            {e.source for e in graph.edges() if graph.nodes.get(e.source) and
             graph.nodes[e.source].kind == "operator"}
        )  # fmt: skip
        return graph, _messages(graph, ops), ws.paths.home, ws.settings.embedder
    finally:
        ws.close()


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
        ws.build_index(no_llm=True)
    if not ws.events.indexed():
        print("no appearances index: building it…", flush=True)
        ws.events.index()


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


async def _load(
    port: int,
    specs: list[tuple[str, dict | None]],
    lat: dict,
    errors: list,
    concurrency: int = CONCURRENCY,
) -> float:
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

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0


def main() -> None:
    if not os.environ.get("ARKLORE_GAMEDATA") and (SHARED / "gamedata").is_dir():
        os.environ["ARKLORE_GAMEDATA"] = str(SHARED / "gamedata")
    if not os.environ.get("ARKLORE_ASTR") and (SHARED / "astr").is_dir():
        os.environ["ARKLORE_ASTR"] = str(SHARED / "astr")
    if "--replicas" in sys.argv:
        print(_replicas())
        return

    graph, msgs, _, embedder = _built_messages()
    exe = str(Path(sys.executable).with_name("arklore"))
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        chars = Path(os.environ.get("ARKLORE_CHARS_DIR") or Path(tmp) / "chars")
        if not os.environ.get("ARKLORE_CHARS_DIR"):
            print("drafting profiles without a model (arklore distill, about a minute)…",
                  flush=True)  # fmt: skip
            subprocess.run([exe, "distill", "--out", str(chars), "--json"], check=True,
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
            ready = wait_ready(base, server, "the server")
            print(f"server ready in {ready:.1f} s (2 workers, port {port}, "
                  f"embedder {embedder}, {len(list(chars.glob('*.char')))} profiles)")  # fmt: skip
            if "--probe-only" not in sys.argv:
                report = _throughput(port, msgs)
            probe = _probe_under_turns(port, graph)
        finally:
            stop([server])
    if "--probe-only" not in sys.argv:
        print(report)
    print(probe)


def _throughput(port: int, msgs: list[tuple[str, str]]) -> str:
    """The mixed load: per-endpoint latencies and their p95 as a ratio to /healthz."""
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
    out: list[str] = []
    done = sum(len(v) for k, v in lat.items() if not k.startswith("_"))
    hz = _pct(base_lat.get("/healthz", []), 95)
    out.append(f"{done} requests in {wall:.1f} s ({done / wall:.0f}/s), {CONCURRENCY} concurrent, "
               f"{len(errors)} errors" + (f" e.g. {errors[:3]}" if errors else ""))  # fmt: skip
    out.append(f"{'':22}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'n':>6}{'p95/healthz':>13}")
    rows = [("GET /healthz (baseline)", base_lat.get("/healthz", []))]
    rows += [(f"POST {p}", lat.get(p, [])) for p in ("/v1/relation-context", "/v1/turn")]
    for name, xs in rows:
        ratio = _pct(xs, 95) / hz if hz else float("nan")
        out.append(f"{name:22}{_pct(xs, 50):9.2f}{_pct(xs, 95):9.2f}{_pct(xs, 99):9.2f}"
                   f"{len(xs):6d}{ratio:12.1f}x")  # fmt: skip
    turns = lat.get("_turns", [])
    if turns:
        rel = [next(b for b in t["blocks"] if b["name"] == "relations") for t in turns]
        empty = sum(1 for b in rel if b["empty"]) / len(rel)
        ctx = sum(1 for b in rel if b["meta"].get("contextual")) / len(rel)
        tokens = sorted(t["total_tokens"] for t in turns)
        out.append(
            f"turns: relation block empty {empty:.0%}, with contextual entries {ctx:.0%}; "
            f"system prompt p50 {_pct(tokens, 50):.0f} / p95 {_pct(tokens, 95):.0f} tokens"
        )
    p95 = _pct(lat.get("/v1/relation-context", []), 95)
    ok = not errors and base_err == [] and p95 < GOAL_P95_MS and done == REQUESTS
    out.append(
        f"relation-context p95 {p95:.1f} ms [{'PASS' if ok else 'FAIL'}: zero errors, "
        f"p95 < {GOAL_P95_MS:.0f} ms]"
    )
    return "\n".join(out)


def _dense_messages(graph, n: int) -> list[tuple[str, str]]:
    """``n`` (operator, message) pairs: messages of exactly :data:`HEAVY_CHARS` characters,
    operator names every few characters (fixed seed)."""
    from bench.bench_rag import FILLER

    rnd = random.Random(20261203)
    ops = sorted(i for i, nd in graph.nodes.items() if nd.kind == "operator")
    names = sorted(nd.name for nd in graph.nodes.values() if nd.kind == "operator")
    out = []
    for _ in range(n):
        parts: list[str] = []
        size = 0
        while size < HEAVY_CHARS:
            part = rnd.choice(names) + rnd.choice(["和", "、", "说", "找", rnd.choice(FILLER)])
            parts.append(part)
            size += len(part)
        out.append((rnd.choice(ops), "".join(parts)[:HEAVY_CHARS]))
    return out


def _probe(port: int, gap: float, count: int, stop: Any, out: Any) -> None:
    """In its own process: ``GET /healthz`` on one keep-alive connection, one scheduled every
    ``gap`` s, ``count`` times or until ``stop`` is set; each latency (ms, to ``out``) counts
    from its scheduled time, so a stall counts for every probe it delays (no coordinated
    omission: a sequential probe would wait it out once and report it as one slow sample)."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
    lat: list[float] = []
    buf = b""
    due = time.perf_counter()
    while len(lat) < count and not stop.is_set():
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        try:
            conn.sendall(request)
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(buf) < length:
                buf += conn.recv(65536)
        except OSError:  # a timeout: counted as the longest wait, and the probe ends
            lat.append(TIMEOUT * 1000)
            break
        buf = buf[length:]
        lat.append((time.perf_counter() - due) * 1000)
        due += gap
    conn.close()
    out.put(lat)


def _run_probe(port: int, count: int, stop: Any) -> Any:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_probe, args=(port, PROBE_GAP, count, stop, out), daemon=True)
    proc.start()
    return proc, out


def _probe_under_turns(port: int, graph) -> str:
    """``/healthz`` p95 while :data:`HEAVY` name-dense turns run, against its idle p95."""
    msgs = _dense_messages(graph, HEAVY_WARM + HEAVY * HEAVY_ROUNDS)
    specs = [("/v1/turn", {"operator": op, "message": m}) for op, m in msgs]
    asyncio.run(_load(port, specs[:HEAVY_WARM], {}, [], concurrency=2))  # not measured
    specs = specs[HEAVY_WARM:]
    ctx = multiprocessing.get_context("spawn")
    never = ctx.Event()
    proc, out = _run_probe(port, PROBE_IDLE, never)  # the idle server
    idle = out.get(timeout=DEADLINE)
    proc.join()
    stop = ctx.Event()
    proc, out = _run_probe(port, 10**9, stop)
    time.sleep(0.5)  # the probe is connected and running before the load starts
    lat: dict = {}
    errors: list = []
    wall = asyncio.run(_load(port, specs, lat, errors, concurrency=HEAVY))
    stop.set()
    busy = out.get(timeout=DEADLINE)
    proc.join()
    turns = lat.get("/v1/turn", [])
    hz_idle, hz_busy = _pct(idle, 95), _pct(busy, 95)
    ratio = hz_busy / hz_idle if hz_idle else float("nan")
    ok = not errors and ratio <= GOAL_PROBE_RATIO
    return "\n".join([
        f"probe under turns: {len(turns)} turns of {HEAVY_CHARS} name-dense characters, "
        f"{HEAVY} concurrent, in {wall:.1f} s (turn p50 {_pct(turns, 50):.0f} ms, p95 "
        f"{_pct(turns, 95):.0f} ms), {len(errors)} errors" + (f" e.g. {errors[:3]}" if errors else ""),
        f"/healthz p50/p95 idle {_pct(idle, 50):.2f}/{hz_idle:.2f} ms ({len(idle)} probes), under "
        f"turns {_pct(busy, 50):.2f}/{hz_busy:.2f} ms ({len(busy)} probes, max "
        f"{max(busy, default=float('nan')):.1f} ms)",
        f"/healthz p95 under turns / idle: {ratio:.2f}x [{'PASS' if ok else 'FAIL'}: goal <= "
        f"{GOAL_PROBE_RATIO:.0f}x, zero errors]",
    ])  # fmt: skip


if __name__ == "__main__":
    main()


# -- one replica against two on one Chroma server (--replicas) -----------------------------------
def _replicas() -> str:
    """See the module doc (``--replicas``)."""
    import json
    import shutil

    _, msgs, home, _ = _built_messages()
    exe = Path(sys.executable)
    specs: list[tuple[str, dict | None]] = [
        ("/v1/turn", {"operator": op, "message": msg}) for op, msg in msgs
    ]
    specs = [specs[i % len(specs)] for i in range(REPLICA_TURNS)]
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp:
        copy = Path(tmp) / "home"

        def skip(folder: str, names: list[str]) -> list[str]:
            here = Path(folder)
            return [n for n in names if (here.name == "rag" and n == "chroma") or n == "run"]

        shutil.copytree(home, copy, ignore=skip)
        (copy / "rag" / "active.json").unlink(missing_ok=True)  # it named an embedded collection
        cport = _free_port()
        chroma = subprocess.Popen(
            [str(exe.with_name("chroma")), "run", "--path", str(Path(tmp) / "chroma"),
             "--host", "127.0.0.1", "--port", str(cport)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        procs: list[subprocess.Popen] = []
        try:
            wait_ready(f"http://127.0.0.1:{cport}", chroma, "chroma run", "/api/v2/heartbeat")
            env = {k: v for k, v in os.environ.items() if not k.startswith("PROMETHEUS_")}
            env.pop("LLM_API_KEY", None)
            env.update(ARKLORE_HOME=str(copy), CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(cport),
                       NO_PROXY="127.0.0.1")  # fmt: skip
            t = time.perf_counter()
            built = subprocess.run([str(exe.with_name("arklore")), "rag", "build", "--json"],
                                   env=env, capture_output=True, text=True, check=True)  # fmt: skip
            report = json.loads(built.stdout)
            out.append(f"index built into the Chroma server in {time.perf_counter() - t:.1f} s "
                       f"({report['documents']} documents, {report['embedded']} embedded)")  # fmt: skip
            rates: dict[tuple[int, int], float] = {}
            # (replicas, turn processes each): two replicas against one, and against one
            # replica with as many turn processes as the two have between them
            for n, tp in ((1, 1), (2, 1), (1, 2)):
                ports = [_free_port() for _ in range(n)]
                cmd = [str(exe.with_name("arklore")), "serve", "--log-level", "warning"]
                penv = env | {"ARKLORE_TURN_PROCESSES": str(tp)}
                procs = [subprocess.Popen([*cmd, "--port", str(p)], env=penv) for p in ports]
                for p, proc in zip(ports, procs, strict=True):
                    wait_ready(f"http://127.0.0.1:{p}", proc, "arklore serve")
                asyncio.run(_spread(ports, specs[: REPLICA_WARM * n], {}, []))  # not measured
                lat: dict = {}
                errors: list = []
                wall = asyncio.run(_spread(ports, specs, lat, errors))
                done = len(lat.get("/v1/turn", []))
                rates[(n, tp)] = rate = done / wall
                turns = lat.get("/v1/turn", [])
                out.append(
                    f"{n} replica{'s' if n > 1 else ''} x {tp} turn process{'es' if tp > 1 else ''}"
                    f": {done} turns in {wall:.1f} s ({rate:.1f}/s), p50 {_pct(turns, 50):.0f} ms, "
                    f"p95 {_pct(turns, 95):.0f} ms, {len(errors)} errors"
                    + (f" e.g. {errors[:2]}" if errors else "")
                )
                stop(procs)
                procs = []
        finally:
            stop([*procs, chroma])
    two = rates[(2, 1)]
    out.append(
        f"two replicas / one: {two / rates[(1, 1)]:.2f}x turns/s; two replicas / one replica "
        f"with 2 turn processes: {two / rates[(1, 2)]:.2f}x (load average now "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    out.append(
        "  every process (the client, the Chroma server, each replica's server and turn "
        "processes, anything else running) shares these cores: a second replica adds processes, "
        "not a machine, so these ratios show how more processes share the same cores, not how "
        "replicas scale; a speed-up from replicas needs replicas on other machines"
    )
    return "\n".join(out)


async def _spread(ports: list[int], specs: list, lat: dict, errors: list) -> float:
    """``specs`` split evenly over the servers on ``ports``, :data:`CONCURRENCY` in all."""
    t0 = time.perf_counter()
    n = len(ports)
    await asyncio.gather(
        *(_load(p, specs[i::n], lat, errors, CONCURRENCY // n) for i, p in enumerate(ports))
    )
    return time.perf_counter() - t0
