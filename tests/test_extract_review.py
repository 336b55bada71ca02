"""`review relations`: every edge with its evidence marked and ±2 lines of context, as text
and as one self-contained, escaped HTML page. Invented lines only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.llm_stub import Reply, StubServer, stub_env
from support.tree_world import make_workspace, write_tree
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.errors import ConfigError
from arklore.core.model import Line, LineKind
from arklore.extract.gates import gate_edges
from arklore.extract.relations import EdgeProposal
from arklore.extract.review import excerpt, render_html, render_text

STAGE = "test/review_stage"


def make_lines() -> list[Line]:
    texts = [
        ("甲", "今天天气不错。"),
        ("乙", "是啊，<甲>。"),
        ("", "风吹过 & 树梢。"),
        ("甲", "我们去看看老师吧。"),
        ("乙", "好。"),
        ("丙", "你们来了。"),
        ("", "一段很久以后的旁白。"),
        ("", "又一段。"),
        ("", "再一段。"),
        ("丁", "没人认识我。"),
    ]
    return [
        Line(STAGE, i, LineKind.DIALOGUE if sp else LineKind.NARRATION, text, speaker=sp)
        for i, (sp, text) in enumerate(texts, 1)
    ]


def proposal(subject: str, obj: str, line_nos: list[int], basis: str = "direct") -> EdgeProposal:
    return EdgeProposal.model_validate(
        {
            "subject": subject,
            "subject_kind": "character",
            "predicate": "朋友",
            "object": obj,
            "object_kind": "character",
            "basis_claimed": basis,
            "evidence": [{"line_no": n, "supports": "direct", "note": "n<b>"} for n in line_nos],
            "note": "<script>alert(1)</script>",
        }
    )


@pytest.fixture
def gated():
    lines = make_lines()
    props = [
        proposal("甲", "乙", [2]),
        proposal("甲", "丁", [10]),  # apart: direct downgraded to reported
        proposal("甲", "乙", [42]),  # out of range: dropped
    ]
    return lines, gate_edges(props, lines, speakers={"甲", "乙", "丙", "丁"}, stage=STAGE)


def test_excerpt_marks_evidence_and_merges_context(gated) -> None:
    lines, edges = gated
    by_no = {ln.line_no: ln for ln in lines}
    runs = excerpt(edges[0], by_no)
    assert [[s.line_no for s in r] for r in runs] == [[1, 2, 3, 4]]
    assert [s.line_no for r in runs for s in r if s.evidence] == [2]
    assert excerpt(edges[2], by_no) == []


def test_text_report(gated) -> None:
    lines, edges = gated
    text = render_text(STAGE, edges, lines)
    assert "3 edges, 2 kept, 1 dropped" in text
    assert ">>    2 乙：是啊，<甲>。" in text
    assert "      1 甲：今天天气不错。" in text and "      4 甲" in text
    assert "   5 " not in text.split("#2")[0]  # ±2 only
    assert "DROPPED (evidence_out_of_range" in text and "!! line 42" in text
    assert "downgraded" in text and "basis=reported claimed=direct" in text
    assert "(旁白)：风吹过 & 树梢。" in text


def test_text_report_names_a_letters_writer_and_addressee() -> None:
    texts = ["亲爱的乙：", "好久不见，你还好吗？", "——甲", "乙把信收好。"]
    lines = [Line(STAGE, i, LineKind.NARRATION, t) for i, t in enumerate(texts, 1)]
    edges = gate_edges([proposal("甲", "乙", [2])], lines, speakers={"甲", "乙"}, stage=STAGE)
    text = render_text(STAGE, edges, lines)
    assert "present:letter" in text
    assert "letter-to:乙" in text and "letter-from:甲" in text


def test_html_is_self_contained_and_escaped(gated) -> None:
    lines, edges = gated
    page = render_html(STAGE, edges, lines)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "&lt;甲&gt;" in page and "风吹过 &amp; 树梢" in page
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", page)
    assert page.count("<tr class='ev'>") == 2  # evidence of the two kept edges
    assert "edge dropped" in page and "DROPPED: evidence_out_of_range" in page


@pytest.fixture
def cli_home(tmp_path: Path, llm_stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    gamedata, astr = write_tree(tmp_path / "data")
    with make_workspace(tmp_path / "home", gamedata, astr) as ws:
        ws.ingest()
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    for k, v in stub_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    edge = {
        "subject": "测试员",
        "subject_kind": "character",
        "predicate": "同事",
        "object": "向导",
        "object_kind": "character",
        "basis_claimed": "direct",
        "evidence": [{"line_no": 2, "supports": "direct", "note": ""}],
    }
    llm_stub.default = lambda body: Reply.json({"edges": [edge]})
    return tmp_path / "home"


def test_cli_review_text_and_html(cli_home: Path, tmp_path: Path) -> None:
    stage = "obt/main/level_test_01_beg"
    runner = CliRunner()
    res = runner.invoke(app, ["review", "relations", stage])
    assert isinstance(res.exception, ConfigError)  # nothing extracted yet
    assert runner.invoke(app, ["extract", "relations", stage]).exit_code == 0
    res = runner.invoke(app, ["review", "relations", stage])
    assert res.exit_code == 0, res.output
    assert "测试员 --同事--> 向导" in res.stdout and ">>    2 向导" in res.stdout
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["review", "relations", stage, "--html", "--out", str(out)])
    assert res.exit_code == 0 and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    exported = cli_home / "exports/relations/story_relations_obt__main__level_test_01_beg.json"
    assert json.loads(exported.read_text(encoding="utf-8"))["summary"]["kept"] == 1
