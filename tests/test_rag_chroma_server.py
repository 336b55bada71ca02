"""The relation index on a Chroma server (``CHROMA_HOST``/``CHROMA_PORT``), in the fast loop:
built into a real ``chroma run`` server (nothing embedded under the home), ranked by queries to
it, switched and pruned there by a rebuild; a server that does not answer is one line naming it
and what to do. The replicas over one server: ``test_service_replicas.py`` (slow).

Every name and line is invented."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import run_main
from support.replicas import (
    CHROMA,
    CURATED,
    FRIENDS,
    Chroma,
    chroma_server,
    replica_graph,
    replica_home,
)
from support.serve_proc import free_port
from support.service_world import AMIYA, kb_workspace

from arklore.graph.io import save_graph

pytestmark = pytest.mark.skipif(not CHROMA.is_file(), reason="no `chroma` (chromadb) installed")


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Chroma]:
    with chroma_server(tmp_path / "chroma") as c:
        yield c


def test_an_index_on_a_chroma_server_ranks_turns_and_switches_there(tmp_path: Path, chroma: Chroma):
    home = replica_home(tmp_path / "home")
    with kb_workspace(home, chroma_host=chroma.host, chroma_port=chroma.port) as ws:
        first = ws.build_index()
        assert chroma.collections() == [first.collection]
        assert not (home / "rag" / "chroma").exists()  # nothing embedded under the home
        ctx = ws.rag.context(AMIYA, "、".join(FRIENDS[:3]))
        # three documents for two places: ranked by a query to the server
        assert len(ctx.contextual) == 2 and all(r.score is not None for r in ctx.contextual)

        save_graph(replica_graph(1), home / "relation_graph.json")
        ws.reload()  # the new graph file (a CLI run is a new process)
        second = ws.build_index()
        assert chroma.collections() == sorted([first.collection, second.collection])
        third = ws.build_index(force=True)
        assert third.removed_collections == [first.collection]
        assert chroma.collections() == sorted([second.collection, third.collection])
        text = ws.chat.turn("阿米娅", f"{FRIENDS[0]}今天来了吗？").block("relations").text
        assert CURATED.format(variant=1) in text


def test_a_chroma_server_that_does_not_answer_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    home = replica_home(tmp_path / "home")
    port = free_port()  # nothing listens there
    for var, value in {"ARKLORE_HOME": str(home), "ARKLORE_EMBEDDER": "hash",
                       "CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(port)}.items():  # fmt: skip
        monkeypatch.setenv(var, value)
    code, _, err = run_main(monkeypatch, capsys, "rag", "build")
    assert code != 0
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert f"127.0.0.1:{port}" in err and "does not answer" in err
    assert "unset CHROMA_HOST" in err
