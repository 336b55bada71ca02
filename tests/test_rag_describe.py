"""LLM descriptions of graph edges: the model sees the evidence, its answer is gated, and a
refused or failed answer keeps the evidence-built description with the reason recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.evidence_world import ANV, ELV, MOX, OPS, SPR, line_id, make_graph, make_people
from support.evidence_world import make_store as make_world_store
from support.llm_stub import Reply, StubServer, make_llm, stub_env
from support.rag_world import build

from arklore.extract.gates import GatedEdge
from arklore.extract.store import write_chunk
from arklore.graph.evidence import pair_facts
from arklore.graph.named import spans_from_mentions
from arklore.llm import estimate
from arklore.names.matcher import build_matcher
from arklore.rag.describe import (
    PROMPT_VERSION,
    TASK,
    describe_requests,
    gate,
    llm_describer,
    people_finder,
)
from arklore.rag.docs import SourceContext, edge_items, fact_pairs
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import open_active
from arklore.settings import Settings


@pytest.fixture
def world(tmp_path: Path):
    store = make_world_store(tmp_path / "arklore.sqlite3")
    note = GatedEdge(
        subject="铁砧", subject_kind="character", predicate="近亲", object="小禾",
        object_kind="character", basis_claimed="direct", note="叔侄", subject_id=ANV,
        object_id=SPR, basis="direct", stage="test/u1", evidence_line_ids=[line_id("test/u1", 1)],
    )  # fmt: skip
    write_chunk(store, "test/u1", 0, [note], job_key="u1#c0", fingerprint="f", model="m",
                prompt_version="v", line_span=None, from_cache=False)  # fmt: skip
    graph = make_graph(curated=None)
    ctx = SourceContext(graph=graph, store=store)
    facts = pair_facts(store, make_people(store), fact_pairs(ctx))
    yield store, graph, facts
    store.close()


def _describer(home: Path, stub: StubServer, graph):
    # no retry, so a slow machine must not turn an answer into a timeout
    llm = make_llm(home, stub_env(stub, LLM_MAX_RETRIES="0", LLM_TIMEOUT="30"))
    find = people_finder(graph, spans_from_mentions(build_matcher(operators=OPS).find))
    return llm, llm_describer(llm, find_people=find, name=SourceContext(graph=graph).name)


def _built(home: Path, stub: StubServer, world) -> dict[tuple[str, str] | str, Any]:
    """The graph-edge documents by (operator, target), and the build report as "report"."""
    store, graph, facts = world
    llm, describer = _describer(home, stub, graph)
    try:
        rep = build(home / "rag", graph, store=store, facts=facts, describer=describer)
    finally:
        llm.close()
    col, _ = open_active(home / "rag", HashEmbedder())
    got = col.get(include=["documents", "metadatas"])
    out: dict[tuple[str, str] | str, Any] = {}
    for doc, meta in zip(got["documents"], got["metadatas"], strict=True):
        if meta["source"] == "graph_edge":
            out[(meta["operator_id"], meta["target_id"])] = meta | {"text": doc}
    out["report"] = rep
    return out


GOOD = "艾尔维娜很依赖墨弦，总亲昵地叫她姐姐，在灯塔边常常和她说话。"


def test_a_good_answer_is_kept_with_the_lines_it_was_shown(home, llm_stub: StubServer, world):
    llm_stub.script("写出艾尔维娜眼中的墨弦", Reply.json({"description": GOOD}))
    llm_stub.default = lambda body: Reply.server_error()
    got = _built(home, llm_stub, world)
    d = got[(ELV, MOX)]
    assert d["text"] == GOOD and d["generated_by"] == "llm" and d["gate_reason"] == ""
    shown = json.loads(d["evidence_line_ids"])
    assert line_id("test/e1", 1) in shown and line_id("test/e2", 1) in shown
    # every other edge failed: evidence-built text, reason recorded
    other = got[(MOX, ELV)]
    assert other["generated_by"] == "evidence" and other["gate_reason"] == "request_failed"
    assert got["report"].gate_reasons == {"request_failed": 7}


def test_the_request_shows_exchanges_with_line_ids_notes_and_the_evidence_text(
    home, llm_stub: StubServer, world
):
    llm_stub.default = lambda body: Reply.json({"description": "太短"})
    _built(home, llm_stub, world)
    (call,) = llm_stub.calls("写出铁砧眼中的小禾")
    prompt = call.last_user
    assert f"[{line_id('test/u1', 1)}] 铁砧：小禾，把锤子递给叔叔。" in prompt
    assert f"[{line_id('test/u1', 2)}] 小禾：叔叔，给。" in prompt
    assert "抽取到的备注：叔侄" in prompt
    assert "语料整理：铁砧视小禾为至亲。铁砧：「小禾，把锤子递给叔叔。」" in prompt
    assert call.body["max_tokens"] == 200


def test_an_invented_third_person_is_refused_and_the_evidence_text_kept(
    home, llm_stub: StubServer, world
):
    llm_stub.script(
        "写出艾尔维娜眼中的墨弦",
        Reply.json({"description": "艾尔维娜和墨弦、灰隼一起守着灯塔，三人情同姐妹。"}),
    )
    llm_stub.script(
        "写出墨弦眼中的艾尔维娜",
        Reply.json({"description": "墨弦把艾尔维娜当作妹妹，出门前总叮嘱她小心台阶。"}),
    )
    llm_stub.default = lambda body: Reply.json({"description": "短"})
    got = _built(home, llm_stub, world)
    refused = got[(ELV, MOX)]
    assert refused["generated_by"] == "evidence" and refused["gate_reason"] == "unknown_person:灰隼"
    assert "墨弦姐姐" in refused["text"]
    kept = got[(MOX, ELV)]
    assert kept["generated_by"] == "llm"


@pytest.mark.parametrize(("answer", "reason"), [("很好。", "length 3"), ("长" * 201, "length 201")])
def test_too_short_or_too_long_is_refused(home, llm_stub: StubServer, world, answer, reason):
    llm_stub.default = lambda body: Reply.json({"description": answer})
    got = _built(home, llm_stub, world)
    d = got[(ANV, SPR)]
    assert d["generated_by"] == "evidence" and d["gate_reason"] == reason


def test_bad_json_falls_back_with_the_reason(home, llm_stub: StubServer, world):
    llm_stub.default = lambda body: Reply.text("我不想用 JSON 回答。")
    got = _built(home, llm_stub, world)
    assert {d["gate_reason"] for k, d in got.items() if k != "report"} == {"request_failed"}
    assert {d["generated_by"] for k, d in got.items() if k != "report"} <= {"evidence", "template"}


def test_dry_run_estimates_one_request_per_described_edge(world):
    store, graph, facts = world
    ctx = SourceContext(graph=graph, store=store, facts=facts)
    reqs = describe_requests(edge_items(ctx), ctx.name)
    assert len(reqs) == 8 and all(r.prompt_version == PROMPT_VERSION for r in reqs)
    est = estimate(reqs)
    assert est.requests == 8 and est.input_tokens > 8 * 100 and est.cost_usd > 0


def test_a_third_person_is_allowed_only_when_the_evidence_shown_names_her(world):
    store, graph, facts = world
    ctx = SourceContext(graph=graph, store=store, facts=facts)
    item = next(it for it in edge_items(ctx) if (it.edge.source, it.edge.target) == (ELV, MOX))
    find = people_finder(graph, spans_from_mentions(build_matcher(operators=OPS).find))
    answer = "艾尔维娜常和墨弦一起守灯塔，也会拜托苏珀帮忙。"
    assert gate(answer, item, "[x] 墨弦：艾尔维娜，帮我拿绳子。", find) == "unknown_person:苏珀"
    assert gate(answer, item, "[y] 苏珀：我也来帮忙。", find) is None
    assert gate("艾尔维娜依赖墨弦姐姐。", item, "", find) is None  # the parties, with a title


def test_an_llm_is_configured_by_a_key_or_a_keyless_local_endpoint():
    def configured(env: dict[str, str]) -> bool:
        return Settings.from_env(env).llm.configured(TASK)

    assert not configured({})
    assert configured({"LLM_API_KEY": "k"})
    assert configured({"LLM_RELATION_DESCRIPTIONS_API_KEY": "k"})
    assert configured({"LLM_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert not configured({"LLM_BASE_URL": "https://api.deepseek.com"})
