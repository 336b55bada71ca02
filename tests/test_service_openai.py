"""The OpenAI-compatible endpoint, driven by the ``openai`` SDK (the client every chat app's
protocol is) against the app served by uvicorn, with the stub as the chat model: models per
operator, the turn's knowledge in front of the client's own messages, parameters passed
through, the answer unchanged (plain and streamed), the endpoint's failures as OpenAI errors,
a client that hangs up cancelling the upstream request, and the client keys."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from fastapi.testclient import TestClient
from openai.types.chat import ChatCompletionMessageParam
from support.llm_stub import TEST_KEY, Reply, StubServer
from support.service_world import kb_settings
from support.sisters_world import (
    CLIFFHEART,
    PRAMANIX,
    SILVERASH,
    SILVERASH_ON_CLIFFHEART,
    SILVERASH_ON_PRAMANIX,
    SILVERASH_PROFILE_PERSONALITY,
    make_sisters_kb,
)

import arklore
from arklore.core.errors import ConfigError
from arklore.llm.ledger import CostLedger
from arklore.llm.relay import RelayError
from arklore.service.app import create_app
from arklore.service.openai import check_exposure, relay_error, split_messages
from arklore.settings import LLMSettings, Settings, api_key_label
from arklore.workspace import Workspace

CLIENT_KEY = "arklore-client-key-6d1f0a9e"  # what the chat app sends
OTHER_KEY = "arklore-second-key-0b7c44d2"
UPSTREAM_MODEL = "upstream-chat-model"  # LLM_CHAT_MODEL: what the endpoint must be asked for
CARD = (
    "你是SillyTavern角色卡里的银灰：说话简洁，称呼对方为盟友。"  # the client's own system message
)
REPLY = "初雪？她前几天来信说山上又下雪了。我让她别一个人出门。"
QUESTION = "你和初雪最近联系了吗？"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sisters_kb(tmp_path_factory.mktemp("openai") / "home")


def settings_for(home: Path, stub: StubServer, **kw) -> Settings:
    llm = LLMSettings(
        base_url=stub.url, model="global-model", api_key=TEST_KEY, timeout=kw.pop("timeout", 5.0),
        max_retries=3, backoff_initial=0.01, backoff_max=0.05,
        overrides={"LLM_CHAT_MODEL": UPSTREAM_MODEL},
    )  # fmt: skip
    return kb_settings(home, llm=llm, **kw)


@contextmanager
def serve(settings: Settings) -> Iterator[str]:
    """The app on a free 127.0.0.1 port under uvicorn (a real server: streaming, client
    disconnects and proxy headers behave as in production); yields the base URL."""
    import uvicorn

    app = create_app(Workspace(settings), warm_up=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def shared_stub() -> Iterator[StubServer]:
    """One stub for the module's shared servers (reset before each test by ``llm_stub``)."""
    with pytest.MonkeyPatch.context() as mp:
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                    "all_proxy"):  # fmt: skip
            mp.delenv(var, raising=False)
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.setenv("no_proxy", "127.0.0.1,localhost")
        stub = StubServer().start()
        try:
            yield stub
        finally:
            stub.stop()


@pytest.fixture
def llm_stub(shared_stub: StubServer) -> StubServer:
    shared_stub.reset()
    return shared_stub


@pytest.fixture(scope="module")
def base(home: Path, shared_stub: StubServer) -> Iterator[str]:
    """The service with client keys (as served off this machine)."""
    with serve(settings_for(home, shared_stub, api_keys=(CLIENT_KEY, OTHER_KEY))) as url:
        yield url


@pytest.fixture(scope="module")
def local(home: Path, shared_stub: StubServer) -> Iterator[str]:
    """The service without client keys, and a short upstream timeout (0.5 s)."""
    with serve(settings_for(home, shared_stub, timeout=0.5)) as url:
        yield url


def sdk(base: str, key: str = CLIENT_KEY, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, **kw)


CLIENT_MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": CARD},
    {"role": "user", "content": "早上好。"},
    {"role": "assistant", "content": "早，盟友。"},
    {"role": "user", "content": QUESTION},
]


def error_body(exc: openai.APIError) -> dict[str, Any]:
    """The OpenAI error object an SDK exception carries (the endpoint always sends one)."""
    assert isinstance(exc.body, dict), exc.body
    return exc.body


def assert_reached_upstream(stub: StubServer, marker: str) -> dict[str, Any]:
    """The one request the endpoint received: the configured model, arklore's system prompt
    holding 银灰's knowledge of 初雪 first, then the client's messages as sent, in order."""
    calls = stub.calls(marker)
    assert len(calls) == 1, "sent once: forwarded requests are not retried"
    sent = calls[0]
    body = sent.body
    assert body["model"] == UPSTREAM_MODEL
    system = body["messages"][0]
    assert system["role"] == "system"
    assert SILVERASH_ON_PRAMANIX in system["content"]  # his view of his sister
    assert SILVERASH_PROFILE_PERSONALITY in system["content"]  # his persona
    assert "干员银灰的身份" in system["content"]
    assert body["messages"][1:] == CLIENT_MESSAGES  # the card kept, the history in order
    assert "participants" not in body and "l3_targets" not in body
    assert sent.headers["authorization"] == f"Bearer {TEST_KEY}"  # the owner's key upstream
    assert CLIENT_KEY.encode() not in sent.raw and CLIENT_KEY not in str(sent.headers)
    return body


# -- models --------------------------------------------------------------------------------
def test_models_list_every_operator_by_name(base: str) -> None:
    models = sdk(base).models.list().data
    assert {m.id for m in models} == {"银灰", "初雪", "崖心", "阿米娅"}
    by_id = {m.id: m for m in models}
    assert by_id["银灰"].owned_by == "arklore" and by_id["银灰"].object == "model"
    silverash, pramanix = by_id["银灰"].model_extra, by_id["初雪"].model_extra
    assert silverash is not None and silverash["char_id"] == SILVERASH
    assert pramanix is not None and pramanix["char_id"] == PRAMANIX
    # any name finds her: real name, char id
    assert sdk(base).models.retrieve("恩希欧迪斯").id == "银灰"
    assert sdk(base).models.retrieve(CLIFFHEART).id == "崖心"


def test_models_and_chat_follow_the_manifest(
    home: Path, llm_stub: StubServer, tmp_path: Path
) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text('operators = ["银灰", "初雪"]\n', encoding="utf-8")
    with serve(settings_for(home, llm_stub, manifest=manifest)) as url:
        c = sdk(url, key="unused-without-keys")
        assert [m.id for m in c.models.list().data] == ["银灰", "初雪"]
        with pytest.raises(openai.PermissionDeniedError) as exc:
            c.chat.completions.create(model="崖心", messages=[{"role": "user", "content": "你好"}])
    err = error_body(exc.value)
    assert err["code"] == "model_not_available" and err["param"] == "model"
    assert "崖心" in err["message"]
    assert llm_stub.requests == []


# -- chat completions ----------------------------------------------------------------------
def test_a_completion_for_silverash_about_pramanix(base: str, llm_stub: StubServer) -> None:
    llm_stub.script(QUESTION, Reply.text(REPLY))
    r = sdk(base).chat.completions.create(
        model="银灰", messages=CLIENT_MESSAGES, temperature=0.5, top_p=0.9, max_tokens=300,
        stop=["\n\n"], presence_penalty=0.1, frequency_penalty=0.2, seed=7,
        extra_body={"top_k": 40},
    )  # fmt: skip
    assert r.choices[0].message.content == REPLY  # unchanged
    assert r.object == "chat.completion" and r.choices[0].finish_reason == "stop"
    assert r.model == UPSTREAM_MODEL and r.usage is not None and r.usage.prompt_tokens == 100
    body = assert_reached_upstream(llm_stub, QUESTION)
    assert {k: body[k] for k in ("temperature", "top_p", "max_tokens", "stop", "presence_penalty",
                                 "frequency_penalty", "seed", "top_k")} == {
        "temperature": 0.5, "top_p": 0.9, "max_tokens": 300, "stop": ["\n\n"],
        "presence_penalty": 0.1, "frequency_penalty": 0.2, "seed": 7, "top_k": 40,
    }  # fmt: skip
    assert "stream" not in body or body["stream"] is False


def test_a_streamed_completion_comes_back_unchanged(base: str, llm_stub: StubServer) -> None:
    llm_stub.script(QUESTION, Reply.text(REPLY))
    stream = sdk(base).chat.completions.create(model="银灰", messages=CLIENT_MESSAGES, stream=True)
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == REPLY
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)  # the client did not ask for the usage
    body = assert_reached_upstream(llm_stub, QUESTION)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_stream_ends_with_done_and_gives_the_usage_when_asked(
    base: str, llm_stub: StubServer
) -> None:
    llm_stub.script("用量", Reply.text("好的。"))
    body = {"model": "银灰", "messages": [{"role": "user", "content": "用量"}], "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=10,
                      headers={"Authorization": f"Bearer {CLIENT_KEY}"}) as r:  # fmt: skip
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-arklore-operator"] == SILVERASH
        raw = r.read().decode()
    events = [b.removeprefix("data: ") for b in raw.strip().split("\n\n")]
    assert events[-1] == "[DONE]"
    usage = orjson.loads(events[-2])
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 10


def test_group_chat_through_participants(base: str, llm_stub: StubServer) -> None:
    llm_stub.script("一起", Reply.text("嗯。"))
    sdk(base).chat.completions.create(
        model="银灰", messages=[{"role": "user", "content": "你们一起去吗？"}],
        extra_body={"participants": ["崖心"]},
    )  # fmt: skip
    system = llm_stub.calls("一起")[0].body["messages"][0]["content"]
    assert "这是一场群聊，在场的干员有：银灰、崖心" in system
    assert f"银灰→崖心：{SILVERASH_ON_CLIFFHEART}" in system


def test_content_parts_and_a_prefill_after_the_last_user_message(
    base: str, llm_stub: StubServer
) -> None:
    """The turn's message is the text of the last user message even when the client sends
    parts (an image beside the text) or an assistant prefill after it; the model gets every
    message as sent."""
    llm_stub.script("雪崩", Reply.text("……"))
    parts = [{"type": "text", "text": "初雪那边"}, {"type": "text", "text": "有雪崩吗？"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]  # fmt: skip
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": CARD}, {"role": "user", "content": parts, "name": "Dr"},
        {"role": "assistant", "content": "（银灰沉默了片刻）"}]  # fmt: skip
    r = httpx.post(base + "/v1/chat/completions", json={"model": "银灰", "messages": msgs},
                   headers={"Authorization": f"Bearer {CLIENT_KEY}"}, timeout=10)  # fmt: skip
    assert r.status_code == 200, r.text
    sent = llm_stub.calls()[0].body["messages"]
    assert sent[1:] == msgs
    assert split_messages(msgs) == ("初雪那边\n有雪崩吗？", [])  # what the turn was built on
    hist: list[dict[str, Any]] = [
        {"role": "user", "content": "在吗"}, {"role": "assistant", "content": "在。"}]  # fmt: skip
    assert split_messages([*hist, *msgs]) == ("初雪那边\n有雪崩吗？", hist)


def test_an_unknown_participant_is_named_as_such(base: str, llm_stub: StubServer) -> None:
    body = {"model": "银灰", "messages": [{"role": "user", "content": "你好"}],
            "participants": ["崖心", "谁也不是"]}  # fmt: skip
    r = httpx.post(base + "/v1/chat/completions", json=body, timeout=10,
                   headers={"Authorization": f"Bearer {CLIENT_KEY}"})  # fmt: skip
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["param"] == "participants[1]" and err["code"] == "unknown_operator"
    assert "谁也不是" in err["message"] and llm_stub.requests == []


@pytest.mark.parametrize(
    "failure,status,code",
    [
        (RelayError("status", "forbidden", status=403), 502, "upstream_auth_failed"),
        (RelayError("status", "no such model", status=404), 502, "upstream_not_found"),
        (RelayError("status", "gateway timeout", status=504), 504, "upstream_timeout"),
        (RelayError("status", "overloaded", status=503), 503, "upstream_unavailable"),
        (RelayError("status", "bad field", status=422), 422, "upstream_rejected"),
        (RelayError("status", "teapot", status=418), 418, "upstream_rejected"),
        (RelayError("unreachable", "refused"), 502, "upstream_unreachable"),
    ],
)
def test_the_other_endpoint_failures_map_to_what_a_client_acts_on(
    failure: RelayError, status: int, code: str
) -> None:
    err = relay_error(failure)
    assert (err.status, err.code) == (status, code)
    assert err.body()["error"]["type"] == (
        "invalid_request_error" if status < 500 else "server_error"
    )


def test_chat_defaults_apply_only_where_the_client_set_nothing(
    base: str, llm_stub: StubServer
) -> None:
    c = sdk(base)
    c.chat.completions.create(model="char_172_svrash", messages=[{"role": "user", "content": "甲"}])
    c.chat.completions.create(model="银灰", messages=[{"role": "user", "content": "乙"}],
                              max_completion_tokens=64, temperature=0)  # fmt: skip
    first, second = llm_stub.calls("甲")[0].body, llm_stub.calls("乙")[0].body
    assert (first["temperature"], first["max_tokens"]) == (0.8, 800)
    assert second["temperature"] == 0 and second["max_completion_tokens"] == 64
    assert "max_tokens" not in second


def test_forwarded_requests_are_not_cached(base: str, llm_stub: StubServer) -> None:
    """A regenerate (the same request again) reaches the model again and gets a new answer."""
    llm_stub.script("再来", Reply.text("第一次。"), Reply.text("第二次。"))
    c = sdk(base)
    msgs: list[ChatCompletionMessageParam] = [{"role": "user", "content": "再来一次"}]
    answers = [c.chat.completions.create(model="银灰", messages=msgs).choices[0].message.content
               for _ in range(2)]  # fmt: skip
    assert answers == ["第一次。", "第二次。"] and len(llm_stub.calls("再来")) == 2


def test_the_cost_is_recorded_under_the_chat_task(
    home: Path, base: str, llm_stub: StubServer
) -> None:
    llm_stub.script("记账", Reply.text("好。"))
    sdk(base).chat.completions.create(model="银灰", messages=[{"role": "user", "content": "记账"}])
    ledger = CostLedger(home / "llm_state.sqlite3")
    rows = ledger.db.query("SELECT task, key, model, ok, input_miss FROM llm_requests"
                           " WHERE task = 'chat' ORDER BY id DESC LIMIT 1")  # fmt: skip
    ledger.close()
    assert tuple(rows[0]) == ("chat", SILVERASH, UPSTREAM_MODEL, 1, 60)


# -- errors --------------------------------------------------------------------------------
UPSTREAM_FAILURES = [
    # (scripted answer, status, SDK exception, code)
    (Reply.rate_limited(retry_after=7), 429, openai.RateLimitError, "rate_limit_exceeded"),
    (Reply.server_error(500), 502, openai.InternalServerError, "upstream_error"),
    (Reply.slow(3.0), 504, openai.InternalServerError, "upstream_timeout"),
    (Reply.unauthorized(), 502, openai.InternalServerError, "upstream_auth_failed"),
    (Reply(status=400, error="context too long"), 400, openai.BadRequestError, "upstream_rejected"),
    (Reply(raw_body=b"<html>proxy error</html>"), 502, openai.InternalServerError,
     "bad_upstream_response"),
]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("reply,status,exc_type,code", UPSTREAM_FAILURES,
                         ids=["429", "500", "timeout", "401", "400", "not-json"])  # fmt: skip
def test_upstream_failures_are_openai_errors(
    local: str, llm_stub: StubServer, reply: Reply, status: int,
    exc_type: type[openai.APIStatusError], code: str,
    stream: bool,
) -> None:  # fmt: skip
    llm_stub.script("失败", reply)
    c = sdk(local, key="local-needs-no-key")
    with pytest.raises(exc_type) as exc:
        r = c.chat.completions.create(model="银灰", stream=stream,
                                      messages=[{"role": "user", "content": "失败了吗"}])  # fmt: skip
        list(r) if stream else None
    err = exc.value
    assert err.status_code == status
    body = error_body(err)
    assert set(body) == {"message", "type", "code", "param"} and body["code"] == code
    assert "Traceback" not in err.response.text and TEST_KEY not in err.response.text
    if status == 429:
        assert err.response.headers["retry-after"] == "7"
    assert len(llm_stub.calls("失败")) == 1  # one attempt: the client decides about retrying


def test_a_failure_in_the_middle_of_a_stream_is_an_error_event(
    base: str, llm_stub: StubServer
) -> None:
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "雪"}, "finish_reason": None}]}  # fmt: skip
    raw = (b"data: " + orjson.dumps(chunk) + b"\n\n"
           + b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n')  # fmt: skip
    llm_stub.script("半路", Reply(raw_body=raw, headers={"Content-Type": "text/event-stream"}))
    got = []
    with pytest.raises(openai.APIError, match="overloaded"):
        for c in sdk(base).chat.completions.create(
            model="银灰", messages=[{"role": "user", "content": "半路"}], stream=True
        ):
            got.append(c.choices[0].delta.content)
    assert got == ["雪"]


@pytest.mark.parametrize(
    "body,status,code,says",
    [
        ({"model": "银k", "messages": [{"role": "user", "content": "你好"}]}, 404,
         "model_not_found", "银灰"),
        ({"model": "银灰", "messages": [{"role": "user", "content": "长" * 8001}]}, 413,
         "message_too_long", "8000"),
        ({"model": "银灰", "messages": [{"role": "system", "content": "只有设定"}]}, 400,
         "invalid_request", "no user message"),
        ({"model": "银灰", "messages": [{"role": "robot", "content": "嗨"}]}, 400,
         "invalid_request", "messages[0].role"),
        ({"model": "银灰"}, 400, "invalid_request", "messages"),
        ({"model": "银灰", "messages": [{"role": "user", "content": 5}]}, 400,
         "invalid_request", "content"),
    ],
    ids=["unknown-operator", "too-long", "no-user-message", "bad-role", "no-messages",
         "bad-content"],
)  # fmt: skip
def test_arklore_errors_are_openai_errors_too(
    base: str, llm_stub: StubServer, body: dict[str, Any], status: int, code: str, says: str
) -> None:
    r = httpx.post(base + "/v1/chat/completions", json=body, timeout=10,
                   headers={"Authorization": f"Bearer {CLIENT_KEY}"})  # fmt: skip
    assert r.status_code == status
    err = r.json()["error"]
    assert err["code"] == code and says in err["message"] and err["type"] == "invalid_request_error"
    assert llm_stub.requests == []  # nothing was forwarded


def test_an_unknown_operator_through_the_sdk(base: str) -> None:
    with pytest.raises(openai.NotFoundError) as exc:
        sdk(base).chat.completions.create(model="银k", messages=[{"role": "user", "content": "嗨"}])
    err = error_body(exc.value)
    assert "did you mean" in err["message"] and "银灰" in err["message"]


# -- a client that hangs up ----------------------------------------------------------------
def wait_for(cond, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_a_client_hanging_up_mid_stream_cancels_the_upstream_request(
    base: str, llm_stub: StubServer
) -> None:
    # 40 chunks, 0.1 s apart: 4 s if nobody hangs up
    llm_stub.script("长篇", Reply(content="雪" * 120, chunk_delay=0.1))
    body = {"model": "银灰", "messages": [{"role": "user", "content": "讲个长篇"}], "stream": True}
    t0 = time.monotonic()
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=10,
                      headers={"Authorization": f"Bearer {CLIENT_KEY}"}) as r:  # fmt: skip
        for line in r.iter_lines():
            if line.startswith("data: "):
                break  # the first chunk arrived: hang up
    assert wait_for(lambda: llm_stub.aborted, timeout=3.0), "the upstream request kept running"
    assert time.monotonic() - t0 < 3.0
    assert [a.last_user for a in llm_stub.aborted] == ["讲个长篇"]


def test_a_client_giving_up_on_a_plain_request_cancels_it(base: str, llm_stub: StubServer) -> None:
    llm_stub.script("慢慢", Reply.slow(4.0, then=Reply.text("终于。")))  # the server waits 5 s
    with pytest.raises(openai.APITimeoutError):
        sdk(base, timeout=0.5).chat.completions.create(
            model="银灰", messages=[{"role": "user", "content": "慢慢说"}]
        )
    assert wait_for(lambda: llm_stub.aborted, timeout=2.5), "the upstream request kept running"
    assert [a.last_user for a in llm_stub.aborted] == ["慢慢说"]


# -- keys ----------------------------------------------------------------------------------
def metric_values(base: str) -> dict[str, float]:
    """``/metrics`` as ``{'name{labels}': value}``; the raw text must not hold a client key."""
    text = httpx.get(base + "/metrics").text
    assert CLIENT_KEY not in text and OTHER_KEY not in text
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^(arklore_openai_\w+\{[^}]*\}) ([0-9.e+]+)$", text, re.M)}  # fmt: skip


def test_the_keys_are_required_when_set(base: str, llm_stub: StubServer) -> None:
    before = metric_values(base)
    llm_stub.script("钥匙", Reply.text("好。"))
    msgs: list[ChatCompletionMessageParam] = [{"role": "user", "content": "钥匙"}]
    for bad in ("wrong-key-000000000000", CLIENT_KEY + "x", ""):
        with pytest.raises(openai.AuthenticationError) as exc:
            sdk(base, key=bad or "x").chat.completions.create(model="银灰", messages=msgs)
        assert error_body(exc.value)["code"] == "invalid_api_key"
        assert exc.value.response.headers["www-authenticate"] == "Bearer"
    with pytest.raises(openai.AuthenticationError):
        sdk(base, key="nope-nope-nope-nope").models.list()
    assert httpx.get(base + "/v1/models").status_code == 401  # no header at all
    assert llm_stub.calls("钥匙") == []
    for key in (CLIENT_KEY, OTHER_KEY):
        r = sdk(base, key=key).chat.completions.create(model="银灰", messages=msgs)
        assert r.choices[0].message.content == "好。"
    after = metric_values(base)

    def grew(name: str, **labels: str) -> float:
        key = name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
        return after.get(key, 0.0) - before.get(key, 0.0)

    one, other = api_key_label(CLIENT_KEY), api_key_label(OTHER_KEY)
    assert grew("arklore_openai_requests_total", key=one, status="200") == 1
    assert grew("arklore_openai_requests_total", key=other, status="200") == 1
    assert grew("arklore_openai_requests_total", key="invalid", status="401") == 5
    assert grew("arklore_openai_tokens_total", key=one, kind="prompt") == 100
    assert grew("arklore_openai_tokens_total", key=one, kind="completion") == 10


def test_without_keys_only_this_machine_is_answered(
    home: Path, local: str, llm_stub: StubServer
) -> None:
    llm_stub.script("本机", Reply.text("在。"))
    url = local  # no ARKLORE_API_KEYS
    msgs: list[ChatCompletionMessageParam] = [{"role": "user", "content": "本机在吗"}]
    assert sdk(url, key="anything").chat.completions.create(
        model="银灰", messages=msgs).choices[0].message.content == "在。"  # fmt: skip
    # a reverse proxy on this machine forwarding someone else: uvicorn's proxy headers
    r = httpx.post(url + "/v1/chat/completions", json={"model": "银灰", "messages": msgs},
                   headers={"X-Forwarded-For": "203.0.113.9"}, timeout=10)  # fmt: skip
    assert r.status_code == 403 and r.json()["error"]["code"] == "api_keys_not_configured"
    # her reply through /v1/turn spends the key too: the same rule
    turn = {"operator": "银灰", "message": "本机在吗", "reply": True}
    r = httpx.post(url + "/v1/turn", json=turn, headers={"X-Forwarded-For": "203.0.113.9"},
                   timeout=10)  # fmt: skip
    assert r.status_code == 403 and r.json()["error"] == "api_keys_not_configured"
    r = httpx.post(url + "/v1/turn", json={**turn, "reply": False},
                   headers={"X-Forwarded-For": "203.0.113.9"}, timeout=10)  # fmt: skip
    assert r.status_code == 200  # the knowledge alone stays public
    assert len(llm_stub.calls("本机")) == 1
    # a client elsewhere (not an IP on this machine) is refused as well
    with TestClient(create_app(Workspace(settings_for(home, llm_stub)), warm_up=False)) as c:
        elsewhere = c.get("/v1/models")
        assert elsewhere.status_code == 403
        assert elsewhere.json()["error"]["type"] == "permission_error"


def test_check_exposure() -> None:
    plain = Settings()
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_exposure(host, plain)  # this machine: no keys needed
    for host in ("0.0.0.0", "::", "192.168.1.20", "arklore.example"):
        check_exposure(host, Settings(api_keys=(CLIENT_KEY,)))
    with pytest.raises(Exception, match="ARKLORE_API_KEYS"):
        check_exposure("0.0.0.0", plain)


def test_serve_refuses_to_listen_elsewhere_without_keys(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "ARKLORE_"))}
    env.update(
        ARKLORE_HOME=str(tmp_path / "h"),
        ARKLORE_EMBEDDER="hash",
        PYTHONPATH=str(Path(arklore.__file__).parents[1]),
    )  # this checkout's arklore
    cmd = [sys.executable, "-m", "arklore", "serve", "--host",
           "0.0.0.0", "--port", "0"]  # fmt: skip
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refusing to serve on 0.0.0.0 without "
                                                   "ARKLORE_API_KEYS")  # fmt: skip


def test_the_keys_are_secrets() -> None:
    s = Settings.from_env({"ARKLORE_API_KEYS": f"{CLIENT_KEY}, {OTHER_KEY}"})
    assert s.api_keys == (CLIENT_KEY, OTHER_KEY)
    shown = orjson.dumps(s.redacted()).decode() + repr(s)
    assert CLIENT_KEY not in shown and OTHER_KEY not in shown
    assert s.redacted()["api_keys"] == [f"*** ({api_key_label(CLIENT_KEY)})",
                                        f"*** ({api_key_label(OTHER_KEY)})"]  # fmt: skip
    with pytest.raises(ConfigError) as exc:  # too short: refused, and never echoed
        Settings.from_env({"ARKLORE_API_KEYS": f"{CLIENT_KEY},short-secret"})
    assert "ARKLORE_API_KEYS" in exc.value.one_line() and "short-secret" not in exc.value.one_line()
    assert CLIENT_KEY not in exc.value.one_line()
