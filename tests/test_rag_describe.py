"""LLM descriptions of graph edges through the LLM layer, with the template as fallback."""

from __future__ import annotations

from llm_stub import Reply, StubServer, make_llm, stub_env
from rag_helpers import AMIYA, CHEN, HOSHI, build, small_graph

from arklore.rag.describe import TASK, llm_describer
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import open_active
from arklore.settings import Settings


def test_llm_descriptions_with_template_fallback(home, llm_stub: StubServer):
    llm_stub.script(
        "从阿米娅的角度描述她/他如何看待陈",
        Reply.json({"description": "阿米娅很信赖陈，在龙门并肩作战后更是如此。"}),
    )
    llm_stub.script("从阿米娅的角度描述她/他如何看待星熊", Reply.json({"description": "太短"}))
    llm_stub.default = lambda body: Reply.server_error()  # everything else fails for good
    llm = make_llm(home, stub_env(llm_stub, LLM_MAX_RETRIES="0"))
    try:
        rep = build(home, small_graph(), describer=llm_describer(llm))
    finally:
        llm.close()
    col, _ = open_active(home, HashEmbedder())
    got = col.get(include=["documents", "metadatas"])
    by = {(m["operator_id"], m["target_id"]): (d, m["generated_by"])
          for d, m in zip(got["documents"], got["metadatas"], strict=True)}  # fmt: skip
    assert by[(AMIYA, CHEN)] == ("阿米娅很信赖陈，在龙门并肩作战后更是如此。", "llm")
    assert by[(AMIYA, HOSHI)][1] == "template"  # answer too short: template kept
    assert rep.generated_by == {"as_written": 1, "llm": 1, "template": 7}


def test_an_llm_is_configured_by_a_key_or_a_keyless_local_endpoint():
    def configured(env: dict[str, str]) -> bool:
        return Settings.from_env(env).llm.configured(TASK)

    assert not configured({})
    assert configured({"LLM_API_KEY": "k"})
    assert configured({"LLM_RELATION_DESCRIPTIONS_API_KEY": "k"})
    assert configured({"LLM_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert not configured({"LLM_BASE_URL": "https://api.deepseek.com"})
