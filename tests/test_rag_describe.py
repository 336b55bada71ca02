"""LLM descriptions of graph edges through the LLM layer, with the template as fallback."""

from __future__ import annotations

from llm_stub import Reply, StubServer, stub_env
from test_rag_support import AMIYA, CHEN, HOSHI, small_graph

from arklore.llm import LLM
from arklore.rag.describe import llm_configured, llm_describer
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import build_index, open_active


def test_llm_descriptions_with_template_fallback(home, llm_stub: StubServer):
    llm_stub.script(
        "从阿米娅的角度描述她/他如何看待陈",
        Reply.json({"description": "阿米娅很信赖陈，在龙门并肩作战后更是如此。"}),
    )
    llm_stub.script("从阿米娅的角度描述她/他如何看待星熊", Reply.json({"description": "太短"}))
    llm_stub.default = lambda body: Reply.server_error()  # everything else fails for good
    llm = LLM(home, env=stub_env(llm_stub, LLM_MAX_RETRIES="0"))
    try:
        rep = build_index(
            home, small_graph(), embedder=HashEmbedder(), describer=llm_describer(llm, home)
        )
    finally:
        llm.close()
    col, _ = open_active(home, HashEmbedder())
    got = col.get(include=["documents", "metadatas"])
    by = {(m["operator_id"], m["target_id"]): (d, m["generated_by"])
          for d, m in zip(got["documents"], got["metadatas"], strict=True)}  # fmt: skip
    assert by[(AMIYA, CHEN)] == ("阿米娅很信赖陈，在龙门并肩作战后更是如此。", "llm")
    assert by[(AMIYA, HOSHI)][1] == "template"  # answer too short: template kept
    assert rep.generated_by == {"as_written": 1, "llm": 1, "template": 7}


def test_llm_configured():
    assert not llm_configured({})
    assert llm_configured({"LLM_API_KEY": "k"})
    assert llm_configured({"LLM_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert not llm_configured({"LLM_BASE_URL": "https://api.deepseek.com"})
