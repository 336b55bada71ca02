"""`arklore rag build`, `arklore rag status` and `arklore context` through Typer."""

from __future__ import annotations

from typing import Any

import orjson
from support.rag_world import AMIYA, CHEN, names_store, small_graph, write_graph
from typer.testing import CliRunner

from arklore.cli.app import app


def test_build_status_and_context(home, monkeypatch):
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    for var in ("LLM_API_KEY", "LLM_BASE_URL", "LLM_RELATION_DESCRIPTIONS_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    write_graph(home, small_graph())
    runner = CliRunner()
    r = runner.invoke(app, ["rag", "build", "--json"])
    assert r.exit_code == 0, r.output
    rep = orjson.loads(r.stdout)
    assert rep["documents"] == 12 and rep["generated_by"] == {"as_written": 1, "template": 11}
    r = runner.invoke(app, ["rag", "build"])
    assert r.exit_code == 0 and "up to date" in r.stdout
    r = runner.invoke(app, ["rag", "build", "--force"])
    assert r.exit_code == 0 and "0 embedded" in r.stdout
    r = runner.invoke(app, ["rag", "status", "--json"])
    assert orjson.loads(r.stdout)["doc_count"] == 12
    names_store(home, small_graph())
    # the one tier-C rule: no profile, no relation context (as in a turn) unless opted in
    r = runner.invoke(app, ["context", "阿米娅", "星熊和诗怀雅最近怎么样", "--json"])
    assert r.exit_code == 0 and orjson.loads(r.stdout)["anchors"] == []
    assert "tier C" in orjson.loads(r.stdout)["warnings"][0]
    monkeypatch.setenv("ARKLORE_TIER_C_RELATIONS", "1")
    r = runner.invoke(app, ["context", "阿米娅", "星熊和诗怀雅最近怎么样", "--l3", CHEN, "--json"])
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert out["operator_id"] == AMIYA and out["tokens"] <= 800
    assert [a["target_id"] for a in out["anchors"]][:2] == ["char_003_kalts", "npc:特蕾西娅"]
    assert CHEN not in [a["target_id"] for a in out["anchors"]]
    assert {c["target_id"] for c in out["contextual"]} == {"char_136_hsguma", "char_308_swire"}
    r = runner.invoke(app, ["context", AMIYA, "你好"])
    assert r.exit_code == 0 and r.stdout.startswith("【阿米娅身边的人】")


def test_errors_are_one_line(home, monkeypatch):
    from arklore.core.errors import ArkloreError

    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    runner = CliRunner()
    r = runner.invoke(app, ["rag", "build"])
    assert isinstance(r.exception, ArkloreError) and "graph" in r.exception.one_line()
    write_graph(home, small_graph())
    r = runner.invoke(app, ["context", "nobody", "hi"])
    assert isinstance(r.exception, ArkloreError)


def test_build_dry_run_estimates_the_llm_descriptions_and_builds_nothing(home, monkeypatch):
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    write_graph(home, small_graph())
    r = CliRunner().invoke(app, ["rag", "build", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    est = orjson.loads(r.stdout)
    assert est["requests"] == 11 and est["input_tokens"] > 0 and est["cost_usd"] > 0
    assert est["cached_input_tokens"] > 0  # the instructions are a shared system prompt
    assert not (home / "rag" / "active.json").exists()


def test_an_unchanged_build_reads_nothing_and_a_changed_input_rebuilds(tmp_path, monkeypatch):
    """Nothing the documents are made from changed: no corpus pass, no embedding, and the
    reported time is the whole step's."""
    from support.service_world import kb_workspace, make_kb

    from arklore.graph.facade import GraphFacade
    from arklore.profiles.facade import ProfilesFacade

    home = make_kb(tmp_path / "home", index=False)
    ws = kb_workspace(home)
    first = ws.build_index()
    assert not first.unchanged and first.documents > 0
    assert first.seconds >= sum(v for k, v in first.timings.items() if k != "client_thread") * 0.9
    calls: list[int] = []
    read: list[int] = []
    real = GraphFacade.facts
    real_docs = ProfilesFacade.anchor_documents

    def facts(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    def anchor_documents(*a: Any, **k: Any) -> Any:
        read.append(1)
        return real_docs(*a, **k)

    monkeypatch.setattr(GraphFacade, "facts", facts)
    monkeypatch.setattr(ProfilesFacade, "anchor_documents", anchor_documents)
    again = ws.build_index()
    assert again.unchanged and again.documents == first.documents and calls == read == []
    chars = home / "chars"
    (chars / "char_003_kalts.char").write_text(
        (chars / "char_003_kalts.char").read_text(encoding="utf-8") + "\n补一句。\n", "utf-8"
    )  # a profile edited: its documents may differ
    third = ws.build_index()
    # the profiles are read again; the graph's texts are the last build's (no corpus facts)
    assert read == [1] and calls == [] and third.documents == first.documents
    assert third.described == 0 < first.described
    assert ws.build_index().unchanged and read == [1]
    ws.close()
