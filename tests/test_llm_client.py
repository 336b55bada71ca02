"""The real client against the stub server: parameters sent, usage read, retries, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel
from support.llm_stub import (
    TEST_KEY,
    Reply,
    StubServer,
    llm_stub_fixture,  # noqa: F401  (fixture `llm_stub`)
    make_llm,
    stub_env,
)

from arklore.core.errors import PermanentLLMError, TransientLLMError
from arklore.llm import ChatRequest


class Answer(BaseModel):
    answer: int


def ask(text: str, **kw: object) -> ChatRequest:
    return ChatRequest(
        task="relations",
        key="stage/a",
        messages=[
            {"role": "system", "content": "Reply in JSON."},
            {"role": "user", "content": text},
        ],
        **kw,  # type: ignore[arg-type]
    )


def test_success_returns_content_json_and_usage(llm_stub: StubServer, tmp_path: Path) -> None:
    llm_stub.script("q1", Reply.json({"answer": 42}))
    llm = make_llm(tmp_path, stub_env(llm_stub))
    res = llm.complete(ask("q1", schema=Answer))
    assert res.data == {"answer": 42}
    assert res.parsed == Answer(answer=42)
    assert res.usage.prompt_cache_hit_tokens == 40
    assert res.usage.prompt_cache_miss_tokens == 60
    assert res.usage.completion_tokens == 10
    assert (res.from_cache, res.attempts, res.model) == (False, 1, "stub-model")


def test_sends_temperature_zero_json_mode_and_model(llm_stub: StubServer, tmp_path: Path) -> None:
    llm = make_llm(tmp_path, stub_env(llm_stub))
    llm.complete(ask("hello", max_tokens=50))
    (req,) = llm_stub.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["temperature"] == 0
    assert req.body["model"] == "stub-model"
    assert req.body["max_tokens"] == 50
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.body["messages"][-1] == {"role": "user", "content": "hello"}
    assert "thinking" not in req.body  # not a DeepSeek host


def test_json_mode_can_be_switched_off_for_endpoints_without_it(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm = make_llm(tmp_path, stub_env(llm_stub, LLM_JSON_MODE="0"))
    res = llm.complete(ask("plain"))
    assert "response_format" not in llm_stub.requests[0].body
    assert res.data == {"echo": "plain"}  # still parsed client-side


def test_thinking_disabled_flag_sent_for_deepseek_host_only(
    llm_stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stub acts as an HTTP proxy for a made-up DeepSeek host: real client, no network.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{llm_stub.port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{llm_stub.port}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    env = stub_env(llm_stub, LLM_BASE_URL="http://api.deepseek.test/v1")
    make_llm(tmp_path / "a", env).complete(ask("ds"))
    make_llm(tmp_path / "b", stub_env(llm_stub)).complete(ask("other"))
    ds, other = llm_stub.requests
    assert ds.host == "api.deepseek.test"
    assert ds.body["thinking"] == {"type": "disabled"}
    assert ds.body["temperature"] == 0
    assert "thinking" not in other.body


def test_openai_style_usage_is_split_into_cache_hit_and_miss(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "total_tokens": 127,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    llm_stub.script("oa", Reply.json({"x": 1}, usage=usage))
    res = make_llm(tmp_path, stub_env(llm_stub)).complete(ask("oa"))
    assert res.usage.to_dict() == {
        "prompt_cache_hit_tokens": 100,
        "prompt_cache_miss_tokens": 20,
        "completion_tokens": 7,
    }


def test_task_env_overrides_base_url_and_model(llm_stub: StubServer, tmp_path: Path) -> None:
    other = StubServer().start()
    try:
        env = stub_env(
            llm_stub, LLM_EVENTS_BASE_URL=other.url, LLM_RELATION_DESCRIPTIONS_MODEL="big-model"
        )
        llm = make_llm(tmp_path, env)
        llm.complete(ChatRequest(task="events", messages=[{"role": "user", "content": "e"}]))
        llm.complete(
            ChatRequest(task="relation_descriptions", messages=[{"role": "user", "content": "d"}])
        )
        llm.complete(ask("r"))
        assert [r.body["model"] for r in other.requests] == ["stub-model"]
        assert [r.body["model"] for r in llm_stub.requests] == ["big-model", "stub-model"]
    finally:
        other.stop()


def test_api_key_arrives_only_in_authorization_header(llm_stub: StubServer, tmp_path: Path) -> None:
    make_llm(tmp_path, stub_env(llm_stub)).complete(ask("k"))
    (req,) = llm_stub.requests
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"
    others = {k: v for k, v in req.headers.items() if k != "authorization"}
    assert TEST_KEY not in repr(others)
    assert TEST_KEY.encode() not in req.raw


@pytest.mark.parametrize(
    "failure",
    [
        Reply.rate_limited(retry_after=0),
        Reply.server_error(500),
        Reply.server_error(503),
        Reply.slow(2.0),  # longer than LLM_TIMEOUT=0.5
        Reply.malformed(),
        Reply.empty(),
        Reply.json({"answer": "not a number"}),  # schema-invalid
        Reply(raw_body=b"<html>gateway</html>"),  # not a chat completion at all
    ],
    ids=["429", "500", "503", "timeout", "malformed-json", "empty", "schema-invalid", "bad-body"],
)
def test_transient_failure_is_retried_then_succeeds(
    llm_stub: StubServer, tmp_path: Path, failure: Reply
) -> None:
    llm_stub.script("r", failure, Reply.json({"answer": 1}))
    res = make_llm(tmp_path, stub_env(llm_stub)).complete(ask("r", schema=Answer))
    assert res.parsed == Answer(answer=1)
    assert res.attempts == 2
    assert len(llm_stub.requests) == 2


def test_permanent_401_is_not_retried(llm_stub: StubServer, tmp_path: Path) -> None:
    llm_stub.script("p", Reply.unauthorized())
    with pytest.raises(PermanentLLMError) as info:
        make_llm(tmp_path, stub_env(llm_stub)).complete(ask("p"))
    assert "401" in info.value.message
    assert info.value.attempts == 1
    assert len(llm_stub.requests) == 1


@pytest.mark.parametrize("status", [400, 403, 404])
def test_other_client_errors_are_permanent(
    llm_stub: StubServer, tmp_path: Path, status: int
) -> None:
    llm_stub.script("p", Reply(status=status, error="nope"))
    with pytest.raises(PermanentLLMError):
        make_llm(tmp_path, stub_env(llm_stub)).complete(ask("p"))
    assert len(llm_stub.requests) == 1


def test_exhausted_retries_raise_transient_with_attempt_count(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.script("x", Reply.server_error())
    with pytest.raises(TransientLLMError) as info:
        make_llm(tmp_path, stub_env(llm_stub, LLM_MAX_RETRIES="2")).complete(ask("x"))
    assert info.value.attempts == 3
    assert len(llm_stub.requests) == 3


def test_retry_after_is_capped_by_backoff_max(llm_stub: StubServer, tmp_path: Path) -> None:
    import time

    llm_stub.script("ra", Reply.rate_limited(retry_after=30), Reply.json({"ok": 1}))
    t0 = time.monotonic()
    make_llm(tmp_path, stub_env(llm_stub)).complete(ask("ra"))
    assert time.monotonic() - t0 < 2
