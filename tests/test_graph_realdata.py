"""The relation graph built from the whole real corpus with no LLM (interaction, mentions,
the packaged curated matrix). Skips without ARKLORE_GAMEDATA / ARKLORE_ASTR."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arklore.graph.io import default_graph_path, load_graph, save_graph
from arklore.graph.model import DOCTOR_ID
from arklore.graph.strength import WORTH_DESCRIBING

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def real_graph(real_graph_built):
    return real_graph_built


def test_real_graph_covers_300_operators_fast(real_graph) -> None:
    graph, seconds = real_graph
    c = graph.meta["counts"]
    assert c["operator_nodes_with_edges"] >= 300, c
    assert seconds < 60, seconds
    assert graph.meta["voice_lines"] > 1000 and graph.meta["matrix"]["relations"] >= 200
    assert graph.meta["matrix"]["examples"] == 0 and graph.meta["curated"]["rejected"] == 0


def test_threshold_selects_a_sensible_set(real_graph) -> None:
    graph, _ = real_graph
    passing = [e for e in graph.edges() if e.strength > WORTH_DESCRIBING]
    assert 300 <= len(passing) <= 0.1 * len(graph)


def test_amiya_top3_anchors_with_signals(real_graph) -> None:
    graph, _ = real_graph
    top = graph.get_top_anchor_relations("阿米娅", k=3)
    assert len(top) == 3
    assert [e.strength for e in top] == sorted((e.strength for e in top), reverse=True)
    # her strongest anchors are curated relations from the packaged matrix
    curated = {e.target for e in graph.out_edges("阿米娅") if "matrix" in e.sources}
    assert {"char_003_kalts", DOCTOR_ID} <= curated and len(curated) >= 5
    assert all("matrix" in e.sources for e in top) and {e.target for e in top} <= curated
    assert all(e.signals and e.sources for e in top)
    assert graph.get_faction("阿米娅")  # members of her nation/group from the registry


def test_real_graph_round_trip_is_byte_identical(real_graph, tmp_path: Path) -> None:
    graph, _ = real_graph
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_graph(graph, a)
    t0 = time.perf_counter()
    loaded = load_graph(a)
    assert time.perf_counter() - t0 < 2.0
    save_graph(loaded, b)
    assert a.read_bytes() == b.read_bytes()


def test_cli_show_amiya_lists_three_anchors(real_graph, tmp_path: Path, monkeypatch) -> None:
    import arklore.cli.graph  # noqa: F401
    from arklore.cli.app import app

    graph, _ = real_graph
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path))
    save_graph(graph, default_graph_path(tmp_path))
    r = CliRunner().invoke(app, ["graph", "show", "阿米娅", "--json"])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    assert shown["id"] == "char_002_amiya" and len(shown["anchors"]) == 3
    assert all(a["signals"] and a["contributions"] for a in shown["anchors"])
