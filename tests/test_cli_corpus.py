"""The corpus and names commands end to end: JSON output, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run_main
from support.tree_world import EXCEL, avg_file, write_tree

FIXTURE_EXCEL = Path(__file__).parent / "fixtures" / "excel"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gamedata, astr = write_tree(tmp_path / "data")
    for f in FIXTURE_EXCEL.glob("*.json"):
        shutil.copy(f, gamedata / EXCEL / f.name)
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(gamedata))
    monkeypatch.setenv("ARKLORE_ASTR", str(astr))
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    return gamedata


run = run_main  # `arklore *args` through the real entry point


def test_ingest_json_then_stats_and_operators(env, monkeypatch, capsys):
    code, out, _ = run(monkeypatch, capsys, "ingest", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["sources"]["avg"]["added"] == 2 and report["counts"]["operators"] > 0
    code, out, _ = run(monkeypatch, capsys, "operators", "show", "假日威龙陈", "--json")
    assert code == 0
    op = json.loads(out)
    assert op["char_id"] == "char_1013_chen2" and op["base_id"] == "char_010_chen"
    code, out, _ = run(monkeypatch, capsys, "stats", "--json")
    assert json.loads(out)["counts"]["avg_stages"] == 2


def test_commands_before_ingest_say_what_to_do(env, monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, "stats")
    assert code == 1 and out == ""
    assert "arklore build" in err and len(err.strip().splitlines()) == 1


def test_unknown_operator_is_a_one_line_error(env, monkeypatch, capsys):
    run(monkeypatch, capsys, "ingest", "--json")
    code, _, err = run(monkeypatch, capsys, "operators", "show", "不存在的人")
    assert code == 1 and "不存在的人" in err and "aliases.toml" in err


def test_missing_data_setting_is_a_config_error(env, monkeypatch, capsys):
    monkeypatch.delenv("ARKLORE_GAMEDATA")
    code, _, err = run(monkeypatch, capsys, "ingest")
    assert code == 2 and "ARKLORE_GAMEDATA" in err


def test_verify_anchors_exit_code_follows_drift(env, monkeypatch, capsys):
    run(monkeypatch, capsys, "ingest", "--json")
    code, out, _ = run(monkeypatch, capsys, "verify-anchors", "--json")
    assert code == 0 and json.loads(out)["drifted"] == 0
    f = avg_file(env, "level_test_01_end")
    f.write_text(f.read_text(encoding="utf-8").replace("站住。", "停下。"), encoding="utf-8")
    code, out, _ = run(monkeypatch, capsys, "verify-anchors", "--json")
    assert code == 5 and json.loads(out)["by_kind"] == {"changed": 1}


def test_names_resolve_find_and_audit(env, monkeypatch, capsys):
    run(monkeypatch, capsys, "ingest", "--json")
    code, out, _ = run(monkeypatch, capsys, "names", "resolve", "推进之王", "--json")
    res = json.loads(out)
    assert code == 0 and res["char_id"] == "char_112_siege" and res["source"] == "registry"
    code, out, _ = run(monkeypatch, capsys, "names", "resolve", "谁也不是", "--json")
    assert code == 1 and json.loads(out)["ids"] == []
    code, out, _ = run(monkeypatch, capsys, "names", "find", "我和假日威龙陈聊天", "--json")
    assert [(m["surface"], m["char_id"]) for m in json.loads(out)] == [
        ("假日威龙陈", "char_1013_chen2")
    ]
    code, out, _ = run(monkeypatch, capsys, "names", "audit", "--json")
    assert code == 0 and "suspects" in json.loads(out)


def test_crosscheck_json_from_store(env, monkeypatch, capsys):
    run(monkeypatch, capsys, "ingest", "--json")
    code, out, _ = run(monkeypatch, capsys, "crosscheck", "--json")
    report = json.loads(out)
    assert code == 0 and report["stages_compared"] == 1
    assert report["fields"]["text"]["agreeing"] == report["fields"]["text"]["compared"] == 7


def test_crosscheck_below_the_minimum_agreement_exits_5(env, monkeypatch, capsys):
    f = avg_file(env)
    f.write_text(f.read_text(encoding="utf-8").replace("晨雾还没有散去。", "晨雾散了。"), "utf-8")
    run(monkeypatch, capsys, "ingest", "--json")
    code, out, err = run(monkeypatch, capsys, "crosscheck", "--min-agreement", "0.99")
    assert code == 5, err
    [line] = [ln for ln in err.splitlines() if ln.strip()]
    assert line.startswith("findings: line agreement under 99.00%: text 85.71%")
    assert "6/7 lines agree" in out  # the report is printed as usual
    code, out, _ = run(monkeypatch, capsys, "crosscheck", "--json", "--min-agreement", "0.99")
    below = json.loads(out)["below"]
    assert code == 5 and below["text"] == 6 / 7 and set(below) <= {"text", "figure_art"}
    code, _, err = run(monkeypatch, capsys, "crosscheck", "--min-agreement", "0.5")
    assert code == 0 and "findings" not in err
    code, _, err = run(monkeypatch, capsys, "crosscheck", "--min-agreement", "1.5")
    assert code == 2 and "--min-agreement" in err


@pytest.mark.parametrize(
    "args",
    [("distill",), ("distill", "--task", "A", "--dry-run"), ("review-queue",), ("verify-anchors",)],
)
def test_commands_reading_the_data_say_so_without_it(env, monkeypatch, capsys, args):
    run(monkeypatch, capsys, "ingest", "--json")
    monkeypatch.delenv("ARKLORE_GAMEDATA")
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 2 and out == "", err
    [line] = [ln for ln in err.splitlines() if ln.strip()]
    assert line.startswith("error: ARKLORE_GAMEDATA is not set"), line


def test_distill_of_tasks_not_reading_the_tables_needs_no_data(env, monkeypatch, capsys):
    run(monkeypatch, capsys, "ingest", "--json")
    monkeypatch.delenv("ARKLORE_GAMEDATA")
    code, _, err = run(monkeypatch, capsys, "distill", "--task", "E", "--json")
    assert code in (0, 5) and "ARKLORE_GAMEDATA" not in err


def test_graph_build_without_the_voice_table_says_what_it_left_out(
    env, monkeypatch, capsys, tmp_path
):
    run(monkeypatch, capsys, "ingest", "--json")
    monkeypatch.delenv("ARKLORE_GAMEDATA")
    matrix = tmp_path / "matrix.toml"  # the shipped one names operators these stories lack
    matrix.write_text("", encoding="utf-8")
    code, _, err = run(monkeypatch, capsys, "graph", "build", "--matrix", str(matrix))
    assert code == 0, err
    assert "warning: ARKLORE_GAMEDATA is not set" in err and "voice lines" in err
