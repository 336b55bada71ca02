"""Replicas on one Chroma server: ``chroma run`` (the chromadb package's server) on a free
loopback port over a temporary folder, the invented world's home with a relation index built
INTO that server (``arklore rag build`` with ``CHROMA_HOST``/``CHROMA_PORT``), and a bounded
load of turns spread over several ``arklore serve`` replicas (one asyncio client)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from arklore.graph.io import save_graph
from arklore.graph.model import Node, RelationGraph
from support.serve_proc import SRC, free_port
from support.service_world import AMIYA, _e, graph, make_kb

CHROMA = Path(sys.executable).with_name("chroma")

FRIENDS = ("莉莉安", "薇奥拉", "玛格丽", "艾琳娜")
"""People of 阿米娅's graph beyond her anchors: a message naming three or four of them has more
documents than a turn shows, so the turn ranks them by a query to the Chroma server."""


@dataclass
class Chroma:
    host: str
    port: int
    proc: subprocess.Popen[bytes]

    def env(self) -> dict[str, str]:
        return {"CHROMA_HOST": self.host, "CHROMA_PORT": str(self.port)}

    def collections(self) -> list[str]:
        r = httpx.get(
            f"http://{self.host}:{self.port}/api/v2/tenants/default_tenant/databases/"
            "default_database/collections",
            timeout=10,
        )
        r.raise_for_status()
        return sorted(c["name"] for c in r.json())


@contextmanager
def chroma_server(path: Path, timeout: float = 60) -> Iterator[Chroma]:
    """``chroma run --path <path>`` on 127.0.0.1 and a free port, answering its heartbeat."""
    port = free_port()
    log = open(path.parent / f"chroma-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if not k.startswith("CHROMA_")},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert proc.poll() is None, f"chroma run exited: {Path(log.name).read_text()[-500:]}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the Chroma server never answered"
            time.sleep(0.2)
        yield Chroma("127.0.0.1", port, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def replica_graph(variant: int = 0) -> RelationGraph:
    """The invented world's graph with :data:`FRIENDS`; a ``variant`` curates 阿米娅's view of
    the first of them (a text naming the variant: :data:`CURATED`)."""
    g = graph()
    for i, name in enumerate(FRIENDS):
        nid = f"npc:{name}"
        g.nodes[nid] = Node(nid, name, "npc", {})
        if i == 0 and variant:
            desc = CURATED.format(variant=variant)
            g.add_edge(_e(AMIYA, nid, "同事", 0.64, ["matrix"], {"matrix": 1}, [], desc))
        else:
            g.add_edge(_e(AMIYA, nid, "同事", 0.64 - i * 0.01, ["story"], {"direct": 1}, []))
    return g


CURATED = "第{variant}版：阿米娅和莉莉安一起值过很多次夜班。"


def replica_home(home: Path) -> Path:
    """The invented world (store, profiles) with :func:`replica_graph` and no index yet."""
    make_kb(home, index=False)
    save_graph(replica_graph(), home / "relation_graph.json")
    return home


def rag_build(home: Path, chroma: Chroma, *args: str) -> dict[str, Any]:
    """``arklore rag build --json *args`` over ``home`` into the Chroma server: its report."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "CHROMA_"))}
    env.update(ARKLORE_HOME=str(home), ARKLORE_EMBEDDER="hash", PYTHONPATH=SRC, **chroma.env())
    proc = subprocess.run(
        [sys.executable, "-m", "arklore", "rag", "build", "--json", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


RANKED = 4
"""The first requests of :func:`turn_requests`, each ranked by a query to the Chroma server."""


def turn_requests() -> list[dict[str, Any]]:
    """Distinct turns: one operator or a group, naming nobody, a few people, or (the first
    :data:`RANKED`) three of 阿米娅's people, more documents than a turn shows: ranked by a
    query to the Chroma server."""
    out: list[dict[str, Any]] = []
    for i, (a, b, c) in enumerate(
        [FRIENDS[:3], FRIENDS[1:], (FRIENDS[0], FRIENDS[2], FRIENDS[3]), FRIENDS[::-1][:3]]
    ):
        out.append({"operator": "阿米娅", "message": f"{a}、{b}和{c}今天都来了，第{i}次"})
    out += [
        {"operator": "阿米娅", "message": "凯尔希医生今天在甲板上吗？"},
        {"operator": "陈", "message": "星熊和诗怀雅去哪儿了？"},
        {"operator": "凯尔希", "message": "你好"},
        {"operator": "星熊", "message": "陈最近还好吗？"},
        {"operator": "陈", "message": "大家好", "participants": ["星熊", "诗怀雅"]},
        {"operator": "阿米娅", "message": "一起出发吧", "participants": ["凯尔希", "陈", "星熊"]},
        {"operator": "诗怀雅", "message": "陈，这次的功劳算谁的？", "until": "T-2"},
        {"operator": "阿米娅", "message": "莉莉安今天来了吗？"},
    ]
    return out


@dataclass
class Load:
    """What a load returned: per request index, per replica, the system prompts seen, and
    every failure (status and body, or the exception)."""

    prompts: dict[tuple[int, int], set[str]] = field(default_factory=dict)
    warnings: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    done: int = 0
    ranked: int = 0  # turns with a relation ranked by a query to the Chroma server
    started: int = 0  # turns sent so far, numbered in the order they were sent
    inflight: set[int] = field(default_factory=set)  # the numbers of those not answered yet

    def settled(self, since: int, timeout: float = 120) -> None:
        """Wait until every turn sent before turn ``since`` has been answered (bounded)."""
        deadline = time.monotonic() + timeout
        while any(x < since for x in self.inflight.copy()):
            assert time.monotonic() < deadline, "turns sent before the switch never came back"
            time.sleep(0.01)

    seconds: float = 0.0


async def drive(
    bases: Sequence[str],
    requests: Sequence[dict[str, Any]],
    turns: int,
    concurrency: int = 16,
    *,
    until: Any = None,
    into: Load | None = None,
    timeout: float = 30.0,
) -> Load:
    """``turns`` turns (or, with ``until``, turns until ``until()`` is true; at most ``turns``)
    at ``concurrency``, turn ``i`` being request ``(i // n) % len(requests)`` sent to replica
    ``i % n``: every request reaches every replica in turn."""
    load = into or Load()
    n = len(bases)
    counter = iter(range(turns))
    t0 = time.perf_counter()

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:
            if until is not None and until():
                return
            k, rep = (i // n) % len(requests), i % n
            seq = load.started
            load.started += 1
            load.inflight.add(seq)
            try:
                r = await client.post(bases[rep] + "/v1/turn", json=requests[k])
            except httpx.HTTPError as exc:
                load.errors.append(f"replica {rep} request {k}: {type(exc).__name__}: {exc}")
                continue
            finally:
                load.inflight.discard(seq)
            load.done += 1
            if r.status_code != 200:
                load.errors.append(f"replica {rep} request {k}: {r.status_code} {r.text[:300]}")
                continue
            body = r.json()
            load.prompts.setdefault((k, rep), set()).add(body["system_prompt"])
            load.warnings[(k, rep)] = body["warnings"]
            items = [i for b in body["blocks"] if b["name"] == "relations" for i in b["items"]]
            load.ranked += any(i.get("score") is not None for i in items)

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    load.seconds += time.perf_counter() - t0
    return load


def differing(load: Load, n_replicas: int) -> list[int]:
    """The requests whose system prompts were not one and the same on every replica."""
    ks = sorted({k for k, _ in load.prompts})
    return [
        k
        for k in ks
        if len(set().union(*(load.prompts.get((k, r), set()) for r in range(n_replicas)))) != 1
        or any((k, r) not in load.prompts for r in range(n_replicas))
    ]
