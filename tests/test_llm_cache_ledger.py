"""Response cache, cost ledger, dry-run estimates and configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.llm_stub import (
    Reply,
    StubServer,
    llm_stub_fixture,  # noqa: F401  (fixture `llm_stub`)
    make_llm,
    stub_env,
)

from arklore.core.errors import ConfigError
from arklore.core.tokens import count_tokens
from arklore.llm import ChatRequest, Prices, estimate
from arklore.llm.config import LLMConfig, task_var
from arklore.settings import Settings


def config(task: str | None = None, env: dict[str, str] | None = None) -> LLMConfig:
    return Settings.from_env(env or {}).llm_config(task)


PRICES = {"LLM_PRICE_INPUT_HIT": "1", "LLM_PRICE_INPUT_MISS": "2", "LLM_PRICE_OUTPUT": "10"}


def ask(text: str, **kw: Any) -> ChatRequest:
    return ChatRequest(
        task="relations", key="s1", messages=[{"role": "user", "content": text}], **kw
    )


def test_cache_hit_costs_zero_and_does_not_hit_the_server(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    env = stub_env(llm_stub, **PRICES)
    first = make_llm(tmp_path, env)
    a = first.complete(ask("same"))
    assert first.summary().cost_usd == pytest.approx((40 * 1 + 60 * 2 + 10 * 10) / 1e6)
    first.close()

    again = make_llm(tmp_path, env)  # a fresh run over the same home
    b = again.complete(ask("same"))
    assert len(llm_stub.requests) == 1
    assert b.from_cache and b.attempts == 0
    assert (b.content, b.data) == (a.content, a.data)
    assert b.usage.input_tokens == 0
    summary = again.summary()
    assert (summary.requests, summary.cached, summary.cost_usd) == (1, 1, 0.0)
    assert "1 cached" in again.format_cost_line() and "$0.0000" in again.format_cost_line()


def test_cache_key_covers_model_params_messages_and_prompt_version(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm = make_llm(tmp_path, stub_env(llm_stub))
    variants = [
        ask("m"),
        ask("m", prompt_version="2"),
        ask("m", max_tokens=10),
        ask("m", temperature=0.5),
        ask("m", model="other"),
        ask("m2"),
    ]
    for req in variants:
        llm.complete(req)
    for req in variants:
        assert llm.complete(req).from_cache
    assert len(llm_stub.requests) == len(variants)
    assert len({llm.cache_key(r) for r in variants}) == len(variants)
    assert llm.cache_key(ask("m")) == llm.cache_key(ask("m", schema=dict))  # schema excluded


def test_no_cache_skips_reading_but_refreshes_the_entry(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.script("n", Reply.json({"v": 1}), Reply.json({"v": 2}))
    env = stub_env(llm_stub)
    assert make_llm(tmp_path, env).complete(ask("n")).data == {"v": 1}
    assert make_llm(tmp_path, env, no_cache=True).complete(ask("n")).data == {"v": 2}
    res = make_llm(tmp_path, env).complete(ask("n"))
    assert res.from_cache and res.data == {"v": 2}
    assert len(llm_stub.requests) == 2


def test_cached_answer_failing_a_new_schema_is_asked_again(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.script("s", Reply.json({"a": 1}), Reply.json({"a": 1, "b": 2}))
    env = stub_env(llm_stub)
    make_llm(tmp_path, env).complete(ask("s"))

    def need_b(data: dict[str, int]) -> int:
        return data["b"]

    res = make_llm(tmp_path, env).complete(ask("s", schema=need_b))
    assert (res.from_cache, res.parsed) == (False, 2)


def test_failed_attempts_with_tokens_are_charged(llm_stub: StubServer, tmp_path: Path) -> None:
    llm_stub.script("f", Reply.malformed(), Reply.json({"ok": 1}))
    llm = make_llm(tmp_path, stub_env(llm_stub, **PRICES))
    llm.complete(ask("f"))
    s = llm.summary()
    assert (s.requests, s.failed, s.input_hit, s.input_miss, s.output) == (2, 1, 80, 120, 20)
    assert s.cost_usd == pytest.approx(2 * (40 + 120 + 100) / 1e6)
    line = llm.format_cost_line()
    assert line.startswith("LLM: 2 requests") and "cache hit 80 / miss 120" in line


def test_estimate_counts_tokens_conservatively_without_calling_anything(
    llm_stub: StubServer,
) -> None:
    assert count_tokens("博士你好") == 3  # 4 * 0.6 = 2.4 -> 3
    assert count_tokens("abcdefghij") == 3  # 10 * 0.3
    reqs = [ask("阿米娅" * 10), ask("hello world", max_tokens=50)]
    est = estimate(reqs, expected_output_tokens=200, prices=Prices(0, 1, 2))
    assert est.requests == 2
    assert est.input_tokens == (18 + 4) + (4 + 4)
    assert est.output_tokens == 250
    assert est.cost_usd == pytest.approx((30 * 1 + 250 * 2) / 1e6)
    assert "2 requests" in est.line()
    assert llm_stub.requests == []


def test_config_defaults_and_task_overrides() -> None:
    cfg = config(env={})
    assert (cfg.base_url, cfg.model, cfg.json_mode, cfg.max_retries) == (
        "https://api.deepseek.com",
        "deepseek-flash",
        True,
        3,
    )
    assert cfg.is_deepseek and cfg.extra_body() == {"thinking": {"type": "disabled"}}
    assert (cfg.prices.input_hit, cfg.prices.input_miss, cfg.prices.output) == (0.07, 0.27, 1.10)
    assert task_var("relation_descriptions", "MODEL") == "LLM_RELATION_DESCRIPTIONS_MODEL"
    env = {
        "LLM_MODEL": "m",
        "LLM_DISTILL_MODEL": "d",
        "LLM_DISTILL_BASE_URL": "http://localhost:11434/v1/",
    }
    d = config("distill", env)
    assert (d.model, d.base_url, d.is_deepseek, d.extra_body()) == (
        "d",
        "http://localhost:11434/v1",
        False,
        {},
    )
    assert config("events", env).model == "m"
    assert "sk-zzzz" not in repr(config(env={"LLM_API_KEY": "sk-zzzz"}))


def test_missing_key_for_deepseek_is_a_config_error_and_local_needs_none(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        config(env={}).key_for_client()
    assert config(env={"LLM_BASE_URL": "http://127.0.0.1:8080/v1"}).key_for_client()
    with pytest.raises(ConfigError):
        config(env={"LLM_MAX_RETRIES": "many"})
