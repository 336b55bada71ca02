"""verify-anchors checks what a chat can cite: matrix evidence, graph edges, index documents.

An invented corpus (``support.tree_world``), a user matrix citing one of its lines, the graph built
from it and a relation index over the ``hash`` embedder; then the cited line is edited, or the
matrix cites a line the stage does not hold, and the command must exit 5 naming the relation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_main
from support.tree_world import avg_file, write_tree

from arklore.core.errors import EXIT_FINDINGS

STAGE = "obt/main/level_test_01_beg"
#: line 2 of the invented stage: the guide answers the tester
CITED = f"{STAGE}#2:66185409"

#: the invented tester speaks as an operator (a user alias), so the relation is a view a chat
#: can use and reaches the index (the guide stays a person of the story only)
ALIASES = """\
[[alias]]
name = "测试员"
id = "char_112_siege"
note = "the invented tester, an operator for these tests"
"""
PAIR = "推进之王 -> 向导"  # as the graph and the index name it (a user matrix: as written)

MATRIX = """\
[[relation]]
from = "测试员"
to = "向导"
predicate = "同事"
description = "每天一起巡逻的搭档，彼此信任，分工明确"
evidence = ["{evidence}"]
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    gamedata, astr = write_tree(tmp_path / "data")
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(gamedata))
    monkeypatch.setenv("ARKLORE_ASTR", str(astr))
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    aliases = tmp_path / "aliases.toml"
    aliases.write_text(ALIASES, encoding="utf-8")
    monkeypatch.setenv("ARKLORE_ALIASES", str(aliases))
    matrix = tmp_path / "my_matrix.toml"
    matrix.write_text(MATRIX.format(evidence=CITED), encoding="utf-8")
    return gamedata, matrix


def run(monkeypatch: pytest.MonkeyPatch, capsys, *args: str) -> tuple[int, str]:
    """``arklore *args`` through the real entry point -> (exit code, stdout)."""
    code, out, _ = run_main(monkeypatch, capsys, *args)
    return code, out


def _build(monkeypatch, capsys, matrix: Path) -> None:
    assert run(monkeypatch, capsys, "ingest", "--json")[0] == 0
    code, out = run(
        monkeypatch, capsys, "graph", "build", "--matrix", str(matrix), "--matrix-replace", "--json"
    )
    assert code == 0 and json.loads(out)["curated"]["with_evidence"] == 1, out
    assert run(monkeypatch, capsys, "rag", "build", "--no-llm", "--json")[0] == 0


def _verify(monkeypatch, capsys, matrix: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out = run(
        monkeypatch, capsys, "verify-anchors", "--json", "--matrix", str(matrix), *extra
    )
    return code, json.loads(out)


def test_clean_case_counts_every_citing_kind(env, monkeypatch, capsys) -> None:
    _, matrix = env
    _build(monkeypatch, capsys, matrix)
    code, report = _verify(monkeypatch, capsys, matrix)
    assert code == 0 and report["drifted"] == 0
    cited = report["cited"]
    assert set(cited) >= {"relation_edges", "event_memories", "matrix", "user_matrix", "graph"}
    assert cited["user_matrix"] == {"citations": 1, "line_ids": 1, "drifted": 0, "referrers_hit": 0}
    assert cited["graph"]["line_ids"] >= 1 and cited["rag"]["line_ids"] >= 1
    assert cited["matrix"]["citations"] == 0  # the graph was not built from the packaged one
    assert report["notes"] == []


def test_edited_line_names_the_relation_in_every_layer(env, monkeypatch, capsys) -> None:
    gamedata, matrix = env
    _build(monkeypatch, capsys, matrix)
    f = avg_file(gamedata)
    f.write_text(f.read_text(encoding="utf-8").replace("定好了", "还没定"), encoding="utf-8")
    code, report = _verify(monkeypatch, capsys, matrix, "--data-changed")
    assert code == EXIT_FINDINGS
    [drift] = [d for d in report["drifts"] if d["line_id"] == CITED]
    assert drift["kind"] == "changed" and drift["now_text"].startswith("还没定")
    refs = drift["referenced_by"]
    assert "user_matrix: 测试员 -> 向导 (同事, my_matrix.toml:1)" in refs
    assert any(r.startswith(f"graph: {PAIR} (同事, matrix") for r in refs), refs
    assert any(r.startswith(f"rag: {PAIR} (同事, matrix") for r in refs), refs
    for kind in ("user_matrix", "graph", "rag"):
        assert report["cited"][kind]["drifted"] == 1, kind
    # the text output names the relation too
    code, out = run(
        monkeypatch, capsys, "verify-anchors", "--matrix", str(matrix), "--data-changed"
    )
    assert code == EXIT_FINDINGS
    assert "cited by user_matrix: 测试员 -> 向导 (同事, my_matrix.toml:1)" in out


def test_a_cited_line_the_stage_does_not_hold_is_found_without_a_data_change(
    env, monkeypatch, capsys, tmp_path: Path
) -> None:
    """The data did not change, so no stage would be re-parsed: a cited id the store lacks
    (another hash at #2, a line past the end) must be checked anyway."""
    _, matrix = env
    _build(monkeypatch, capsys, matrix)
    stale = tmp_path / "stale.toml"
    gone = f"{STAGE}#99:0badc0de"
    stale.write_text(
        MATRIX.format(evidence=f"{STAGE}#2:00000000")
        + MATRIX.format(evidence=gone).replace('"同事"', '"朋友"'),
        encoding="utf-8",
    )
    code, report = _verify(monkeypatch, capsys, stale)
    assert code == EXIT_FINDINGS
    kinds = {d["line_id"]: (d["kind"], d["referenced_by"]) for d in report["drifts"]}
    assert kinds[f"{STAGE}#2:00000000"] == (
        "changed",
        ["user_matrix: 测试员 -> 向导 (同事, stale.toml:1)"],
    )
    assert kinds[gone] == ("out_of_range", ["user_matrix: 测试员 -> 向导 (朋友, stale.toml:7)"])
    assert report["cited"]["user_matrix"]["drifted"] == 2
    assert report["cited"]["graph"]["drifted"] == 0
    # the graph was built from my_matrix.toml, not given this time: said in a note
    assert any("my_matrix.toml" in n for n in report["notes"])


def test_without_graph_or_index_only_the_store_is_checked(env, monkeypatch, capsys) -> None:
    assert run(monkeypatch, capsys, "ingest", "--json")[0] == 0
    code, out = run(monkeypatch, capsys, "verify-anchors", "--json")
    report = json.loads(out)
    assert code == 0 and report["anchors"] > 0
    assert all(c["citations"] == 0 for c in report["cited"].values())
