"""Replicas on one Chroma server (the README's scaling setup, run for real): a ``chroma run``
server on loopback holds the relation index (built into it by ``arklore rag build`` with
``CHROMA_HOST``/``CHROMA_PORT``), two ``arklore serve`` processes over the home answer 2,000
turns at 16 concurrent with no error and the same system prompt for the same request, and a
rebuild while they serve switches both to the new collection without a failed request.

Each test starts a Chroma server and two servers with their turn workers (~20 s of a loaded
2-core machine before the first turn): ``slow``, so in ``make test``, not ``make test-fast``;
``test_rag_chroma_server.py`` keeps the server path in the fast loop. Every name and line is
invented."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.replicas import (
    CHROMA,
    CURATED,
    RANKED,
    Chroma,
    Load,
    chroma_server,
    differing,
    drive,
    rag_build,
    replica_graph,
    replica_home,
    turn_requests,
)
from support.serve_proc import Served, served_many

from arklore.graph.io import save_graph

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMA.is_file(), reason="no `chroma` (chromadb) installed"),
]
TURNS, CONCURRENT = 2000, 16

STALE = "the relation graph changed since the index was built"


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Chroma]:
    with chroma_server(tmp_path / "chroma") as c:
        yield c


def index_of(replica: Served) -> str:
    checks = httpx.get(replica.base + "/readyz", timeout=10).json()["checks"]
    assert checks["index"]["ok"], checks
    return str(checks["index"]["collection"])


def test_two_replicas_on_one_chroma_server_answer_every_turn_alike(tmp_path: Path, chroma: Chroma):
    home = replica_home(tmp_path / "home")
    report = rag_build(home, chroma)
    assert report["documents"] > 0 and not report["unchanged"]
    # the index lives in the server: no embedded Chroma under the home
    assert chroma.collections() == [report["collection"]]
    assert not (home / "rag" / "chroma").exists()
    requests = turn_requests()
    with served_many(home, 2, **chroma.env()) as (a, b):
        assert index_of(a) == index_of(b) == report["collection"]
        load = asyncio.run(drive([a.base, b.base], requests, TURNS, CONCURRENT))
    assert load.errors == []
    assert load.done == TURNS
    assert differing(load, 2) == []
    assert len(load.prompts) == 2 * len(requests)
    # every turn naming three of her people ranked them by a query to the server
    assert load.ranked == sum((i // 2) % len(requests) < RANKED for i in range(TURNS))


def test_replicas_switch_to_a_rebuilt_index_without_a_failed_request(
    tmp_path: Path, chroma: Chroma
):
    home = replica_home(tmp_path / "home")
    first = rag_build(home, chroma)["collection"]
    requests = turn_requests()
    curated = next(i for i, r in enumerate(requests) if r["message"].startswith("莉莉安"))
    with served_many(home, 2, **chroma.env()) as (a, b):
        bases = [a.base, b.base]
        before = asyncio.run(drive(bases, requests, 2 * len(requests)))
        assert before.errors == [] and differing(before, 2) == []
        assert not any(CURATED[:3] in p for ps in before.prompts.values() for p in ps)

        # rebuilt while the replicas serve: a new graph, then the index from it, then the index
        # again (which deletes the first collection from the server); load all along
        load = Load()
        done: list[str] = []

        def rebuild() -> None:
            save_graph(replica_graph(1), home / "relation_graph.json")
            done.append(rag_build(home, chroma)["collection"])
            # every turn begun on the first collection ends before it is deleted (the one
            # step of rollback a rebuild keeps: the previous collection)
            load.settled(load.started)
            done.append(rag_build(home, chroma, "--force")["collection"])

        async def serve_while_rebuilding() -> None:
            task = asyncio.create_task(asyncio.to_thread(rebuild))
            await drive(bases, requests, 100_000, until=task.done, into=load)
            await task

        asyncio.run(serve_while_rebuilding())
        second, third = done
        assert load.errors == []
        assert load.done > 2 * len(requests)  # the load ran through both rebuilds
        assert chroma.collections() == sorted([second, third])  # the first is gone
        assert first not in (second, third)

        after = asyncio.run(drive(bases, requests, 2 * len(requests)))
        assert after.errors == []
        assert differing(after, 2) == []
        assert index_of(a) == index_of(b) == third
        # both serve the documents of the new graph's index: the new curated view, no warning
        for rep in (0, 1):
            (prompt,) = after.prompts[(curated, rep)]
            assert CURATED.format(variant=1) in prompt
            assert not any(STALE in w for w in after.warnings[(curated, rep)])
