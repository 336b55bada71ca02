"""The relation graph built from the whole real corpus with no LLM (interaction, mentions, the
packaged curated matrix). Skips without ARKLORE_GAMEDATA / ARKLORE_ASTR. Build and load times
are measured by ``python -m bench bench_graph``, not asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arklore.graph.io import load_graph, save_graph
from arklore.graph.model import DOCTOR_ID, bond
from arklore.graph.strength import WORTH_DESCRIBING
from arklore.rag.docs import ANCHOR_K, ANCHOR_WRITTEN_MAX, anchor_edges

pytestmark = pytest.mark.realdata


def test_real_graph_covers_300_operators(real_graph_built) -> None:
    graph = real_graph_built
    c = graph.meta["counts"]
    assert c["operator_nodes_with_edges"] >= 300, c
    assert graph.meta["voice_lines"] > 1000 and graph.meta["matrix"]["relations"] >= 200
    assert graph.meta["matrix"]["examples"] == 0 and graph.meta["curated"]["rejected"] == 0


def test_threshold_selects_a_sensible_set(real_graph_built) -> None:
    passing = [e for e in real_graph_built.edges() if e.strength > WORTH_DESCRIBING]
    assert 300 <= len(passing) <= 0.1 * len(real_graph_built)


def test_amiya_top3_anchors_with_signals(real_graph_built) -> None:
    graph = real_graph_built
    top = graph.get_top_anchor_relations("阿米娅", k=3)
    assert len(top) == 3
    # the kind of bond before the strength: 特蕾西娅 (who raised her) leads
    assert [bond(e) for e in top] == sorted(bond(e) for e in top)
    # 特蕾西娅: the story's NPC, or the operator who is the same person (魔王) once the
    # archive's real name joins them
    assert top[0].target in {"npc:特蕾西娅", "char_4134_cetsyr"}
    # her strongest anchors are curated relations from the packaged matrix
    curated = {e.target for e in graph.out_edges("阿米娅") if "matrix" in e.origins}
    assert {"char_003_kalts", DOCTOR_ID} <= curated and len(curated) >= 5
    assert all("matrix" in e.origins for e in top) and {e.target for e in top} <= curated
    assert all(e.signals and e.origins for e in top)
    assert graph.get_faction("阿米娅")  # members of her nation/group from the registry


def test_her_holiday_form_keeps_her_kin_and_brings_the_holidays_people(
    real_workspace, real_graph_built
) -> None:
    """假日威龙陈 is 陈 at 多索雷斯: her uncle and sister stay first, and 林, with whom she
    spends the holiday, takes one of the last anchor slots (in her first five she is not)."""
    graph, names = real_graph_built, real_workspace.names
    base = [e.target for e in anchor_edges(graph, "char_010_chen")]
    holiday = names.form_stages("char_1013_chen2")
    form = [e.target for e in anchor_edges(graph, "char_010_chen", prefer=holiday)]
    assert len(holiday) >= 10 and all("act" in p or "memory" in p for p in holiday)
    assert "char_4080_lin" not in base[:ANCHOR_K] and "char_4080_lin" in form[:ANCHOR_K]
    assert form[:3] == base[:3] and len(base) < len(form) <= ANCHOR_WRITTEN_MAX
    assert "char_308_swire" in base and "char_308_swire" in form  # her written rival stays


def test_real_graph_round_trip_is_byte_identical(real_graph_built, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_graph(real_graph_built, a)
    save_graph(load_graph(a), b)
    assert a.read_bytes() == b.read_bytes()


def test_cli_show_amiya_lists_three_anchors(real_workspace, monkeypatch) -> None:
    from arklore.cli.app import app

    monkeypatch.setenv("ARKLORE_HOME", str(real_workspace.paths.home))
    r = CliRunner().invoke(app, ["graph", "show", "阿米娅", "--json"])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    assert shown["id"] == "char_002_amiya" and len(shown["anchors"]) == 3
    assert all(a["signals"] and a["contributions"] for a in shown["anchors"])


DEFINING = {
    "陈": ("魏彦吾", "塔露拉", "诗怀雅"),
    "银灰": ("崖心", "初雪"),
    "W": ("特蕾西娅",),
    "临光": ("瑕光", "玛恩纳"),
    "左乐": ("左宣辽",),
}


def test_the_bonds_that_define_her_are_among_her_anchors(real_graph_built) -> None:
    graph = real_graph_built
    for who, people in DEFINING.items():
        got = [graph.nodes[e.target].name for e in anchor_edges(graph, graph.resolve(who))]
        assert set(people) <= set(got), (who, got)
    # the Doctor keeps his edge but takes no anchor slot (his own block shows her view of him)
    amiya = graph.resolve("阿米娅")
    assert graph.get_relation(amiya, DOCTOR_ID)
    assert DOCTOR_ID not in [e.target for e in anchor_edges(graph, amiya)]


def test_a_stranger_name_ties_nobody_to_her(real_graph_built) -> None:
    """医生 and 林 are [[stranger]] labels: 阿米娅 calling 凯尔希 医生 ties her to nobody (not
    R6's Doc), and 董阿伯 greeting 鼠王 as 林 does not tie him to 林雨霞."""
    graph = real_graph_built
    amiya = graph.resolve("阿米娅")
    assert not graph.get_relation(amiya, "char_4125_rdoc")
    dong = graph.resolve("董阿伯")
    assert dong is not None and not graph.get_relation(dong, "char_4080_lin")
    assert graph.get_relation(graph.resolve("陈"), "char_4080_lin")  # her own name still ties
