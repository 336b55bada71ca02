"""The OpenAI-compatible endpoint, driven by the ``openai`` SDK (the client every chat app's
protocol is) against the app served by uvicorn, with the stub as the chat model: models per
operator, the turn's knowledge in front of the client's own messages, parameters passed
through, the answer unchanged (plain and streamed), the endpoint's failures as OpenAI errors,
a client that hangs up cancelling the upstream request, and the client keys."""

from __future__ import annotations

import itertools
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
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionSystemMessageParam
from support.gamedata import write_gamedata
from support.llm_stub import TEST_KEY, Recorded, Reply, StubServer
from support.service_world import kb_settings, kb_workspace, make_kb
from support.sisters_world import (
    AMIYA,
    AMIYA_GUARD,
    AMIYA_MEDIC,
    CLIFFHEART,
    PRAMANIX,
    SHALEM,
    SHALEM2,
    SILVERASH,
    SILVERASH_ON_CLIFFHEART,
    SILVERASH_ON_PRAMANIX,
    SILVERASH_PROFILE_PERSONALITY,
    make_forms_kb,
    make_sisters_kb,
)

import arklore
from arklore.cards.lint import Matchable, fires
from arklore.chat.layout import KNOWLEDGE_HEAD, MESSAGE_HEAD
from arklore.core.errors import ConfigError
from arklore.core.tokens import count_tokens
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


def asked(rec: Recorded) -> str:
    """The client's own text of the last user message a request carried (the knowledge for
    this message goes ahead of it)."""
    return rec.last_user.rsplit(MESSAGE_HEAD + "\n", 1)[-1]


def error_body(exc: openai.APIError) -> dict[str, Any]:
    """The OpenAI error object an SDK exception carries (the endpoint always sends one)."""
    assert isinstance(exc.body, dict), exc.body
    return exc.body


def assert_reached_upstream(stub: StubServer, marker: str) -> dict[str, Any]:
    """The one request the endpoint received: the configured model, arklore's system prompt
    with 银灰's steady knowledge first, the client's messages as sent, in order, and his
    knowledge of 初雪 (this message's) ahead of the question in the last user message."""
    calls = stub.calls(marker)
    assert len(calls) == 1, "sent once: forwarded requests are not retried"
    sent = calls[0]
    body = sent.body
    assert body["model"] == UPSTREAM_MODEL
    system, *client, last = body["messages"]
    assert system["role"] == "system"
    assert SILVERASH_PROFILE_PERSONALITY in system["content"]  # his persona
    assert "干员银灰的身份" in system["content"]
    assert SILVERASH_ON_PRAMANIX not in system["content"]
    assert client == CLIENT_MESSAGES[:-1]  # the card kept, the history in order
    assert last["role"] == "user" and last["content"].endswith(f"{MESSAGE_HEAD}\n{QUESTION}")
    assert last["content"].startswith(KNOWLEDGE_HEAD)
    assert SILVERASH_ON_PRAMANIX in last["content"]  # his view of his sister
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
    system, message = (m["content"] for m in llm_stub.calls("一起")[0].body["messages"])
    assert "这是一场群聊，在场的干员有：银灰、崖心" in system
    assert f"银灰→崖心：{SILVERASH_ON_CLIFFHEART}" in message  # the group: this message's


def _sillytavern_main(speaker: str, cast: str) -> ChatCompletionSystemMessageParam:
    """SillyTavern 1.12.6's default main prompt as its client fills it in."""
    return {"role": "system",
            "content": f"Write {speaker}'s next reply in a fictional chat between {cast} and 博士."}  # fmt: skip


def test_sillytavern_naming_another_operator_plays_her_with_the_group_present(
    base: str, llm_stub: StubServer
) -> None:
    """SillyTavern sends every turn of a group chat under the connection's one model id,
    and keeps that id when the user opens another card; the operator its main prompt asks a
    reply of is the one arklore plays, the group's other operators present."""
    llm_stub.script("一起", Reply.text("嗯。"))
    for cast in ("崖心", "银灰, 崖心"):  # her chat opened with 银灰's model id; the group
        r = sdk(base).chat.completions.with_raw_response.create(
            model="银灰",
            messages=[_sillytavern_main("崖心", cast), {"role": "user", "content": "你们一起去吗？"}],
        )  # fmt: skip
        assert r.headers["x-arklore-operator"] == CLIFFHEART
    solo, group = (c.body["messages"][0]["content"] for c in llm_stub.calls("一起"))
    assert "干员崖心的身份" in solo and "群聊" not in solo
    assert "干员崖心的身份" in group and "这是一场群聊，在场的干员有：崖心、银灰" in group


def test_a_sillytavern_group_turn_as_its_client_sends_it(base: str, llm_stub: StubServer) -> None:
    """The prompts of a group chat as SillyTavern 1.12.6's own client sent them (its preset's
    main prompt names the speaker only; the member list and the nudge are its group's)."""
    llm_stub.script("聊聊", Reply.text("嗯。"))
    r = sdk(base).chat.completions.with_raw_response.create(
        model="银灰",
        messages=[
            _sillytavern_main("崖心", "崖心"),
            {"role": "system", "content": "[Start a new group chat. Group members: 银灰, 崖心]"},
            {"role": "assistant", "content": "银灰: 我在这里，盟友。"},
            {"role": "user", "content": "你哥哥在这里，你们聊聊吧。"},
            {"role": "system", "content": "[Write the next reply only as 崖心.]"},
        ],
    )  # fmt: skip
    assert r.headers["x-arklore-operator"] == CLIFFHEART
    system = llm_stub.calls("聊聊")[0].body["messages"][0]["content"]
    assert "干员崖心的身份" in system and "这是一场群聊，在场的干员有：崖心、银灰" in system


def test_a_name_sillytavern_plays_that_is_no_operator_leaves_the_model(
    base: str, llm_stub: StubServer
) -> None:
    llm_stub.script("雪山", Reply.text("嗯。"))
    r = sdk(base).chat.completions.with_raw_response.create(
        model="银灰",
        messages=[_sillytavern_main("Alice", "Alice, 崖心"), {"role": "user", "content": "雪山冷吗"}],
    )  # fmt: skip
    assert r.headers["x-arklore-operator"] == SILVERASH
    assert "群聊" not in llm_stub.calls("雪山")[0].body["messages"][0]["content"]


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
    assert [sent[1], sent[3]] == [msgs[0], msgs[2]]
    knowledge, *sent_parts = sent[2]["content"]  # the knowledge as a text part ahead of hers
    assert sent_parts == parts and knowledge["text"].startswith(KNOWLEDGE_HEAD)
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


def test_a_story_point_in_the_model_id_or_the_body_sets_the_same_turn(
    base: str, llm_stub: StubServer
) -> None:
    client = sdk(base)
    bodies = []
    for i, (model, extra) in enumerate(
        [("银灰@SN-1", {}), ("银灰", {"arklore": {"until": "雪线之上"}}), ("银灰@冬日", {"arklore": {"until": "SN-1"}})]
    ):  # fmt: skip
        marker = f"{QUESTION}#{i}"
        llm_stub.script(marker, Reply.text(REPLY))
        msgs: list[ChatCompletionMessageParam] = [
            *CLIENT_MESSAGES[:-1],
            {"role": "user", "content": marker},
        ]
        client.chat.completions.create(model=model, messages=msgs, extra_body=extra)
        (sent,) = llm_stub.calls(marker)
        assert "arklore" not in sent.body  # arklore's own field is not forwarded
        bodies.append([m["content"].replace(marker, "?") for m in sent.body["messages"]])
    # the suffix, the body field, and the body field winning over a bad suffix: one turn
    assert bodies[0] == bodies[1] == bodies[2]
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="银灰@冬日", messages=CLIENT_MESSAGES)
    err = error_body(exc.value)
    assert err["code"] == "unknown_story_point" and "冬日" in err["message"]


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
    assert [asked(a) for a in llm_stub.aborted] == ["讲个长篇"]


def test_a_client_giving_up_on_a_plain_request_cancels_it(base: str, llm_stub: StubServer) -> None:
    llm_stub.script("慢慢", Reply.slow(4.0, then=Reply.text("终于。")))  # the server waits 5 s
    with pytest.raises(openai.APITimeoutError):
        sdk(base, timeout=0.5).chat.completions.create(
            model="银灰", messages=[{"role": "user", "content": "慢慢说"}]
        )
    assert wait_for(lambda: llm_stub.aborted, timeout=2.5), "the upstream request kept running"
    assert [asked(a) for a in llm_stub.aborted] == ["慢慢说"]


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


# -- tolerant: what SillyTavern sends --------------------------------------------------------
def test_a_base_url_typed_with_a_trailing_slash_works(base: str, llm_stub: StubServer) -> None:
    """SillyTavern's custom source appends ``/models`` to the URL as typed: ``/v1//models``."""
    llm_stub.script("斜杠", Reply.text("在。"))
    paths: list[bytes] = []
    http = openai.DefaultHttpxClient(
        event_hooks={"request": [lambda r: paths.append(r.url.raw_path)]}
    )
    c = openai.OpenAI(base_url=base + "/v1//", api_key=CLIENT_KEY, max_retries=0, http_client=http)
    assert "银灰" in {m.id for m in c.models.list().data}
    assert c.models.retrieve("银灰").id == "银灰"
    r = c.chat.completions.create(model="银灰", messages=[{"role": "user", "content": "斜杠"}])
    assert r.choices[0].message.content == "在。"
    assert paths == [b"/v1//models", b"/v1//models/%E9%93%B6%E7%81%B0", b"/v1//chat/completions"]
    assert httpx.get(base + "//healthz").status_code == 200  # every route, not one by one


LONG = "山道上的雪一直没有停。" * 2000  # 22,000 characters: over the message limit of 8,000


def test_a_long_history_and_card_are_forwarded_untouched(base: str, llm_stub: StubServer) -> None:
    """Only the last user message is held to ARKLORE_MAX_MESSAGE_CHARS: the history and the
    card are passed on whole, on this turn and on every later one."""
    llm_stub.script("后来", Reply.text("嗯。"))
    msgs: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": CARD + LONG},
        {"role": "user", "content": LONG},
        {"role": "assistant", "content": LONG},
        {"role": "user", "content": "后来呢？"},
    ]
    r = sdk(base).chat.completions.create(model="银灰", messages=msgs)
    assert r.choices[0].message.content == "嗯。"
    sent = llm_stub.calls("后来")[0].body["messages"]
    assert sent[1:4] == msgs[:3] and asked(llm_stub.calls("后来")[0]) == "后来呢？"
    with pytest.raises(openai.APIStatusError) as exc:  # the message it answers: still limited
        sdk(base).chat.completions.create(
            model="银灰", messages=[*msgs[:3], {"role": "user", "content": LONG}]
        )
    assert exc.value.status_code == 413 and error_body(exc.value)["code"] == "message_too_long"
    assert len(llm_stub.calls("后来")) == 1


def test_a_control_character_in_a_forwarded_message_is_passed_on(
    base: str, llm_stub: StubServer
) -> None:
    """A card's stray control character (a bell, an ANSI colour) is the app's business: it
    reaches the model as sent. In the message arklore reads it is a 400, and so is a lone
    surrogate anywhere (not text: it cannot be sent on); never a traceback."""
    llm_stub.script("铃声", Reply.text("嗯。"))
    odd = CARD + "\x07\x1b[0m\x00"
    msgs: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": odd},
        {"role": "assistant", "content": "\x0b早。"},
        {"role": "user", "content": "铃声响了吗？"},
    ]
    assert sdk(base).chat.completions.create(model="银灰", messages=msgs).choices[0].message.content
    sent = llm_stub.calls("铃声")[0].body["messages"]
    assert sent[1] == msgs[0] and sent[2] == msgs[1]
    for raw, at in (
        (b'{"model":"x","messages":[{"role":"user","content":"\\u0007"}]}', "messages[0]"),
        (b'{"model":"x","messages":[{"role":"system","content":"\\ud800"},'
         b'{"role":"user","content":"hi"}]}', "messages[0].content"),
        (b'{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"\\udfff"}]}'
         b',{"role":"user","content":"hi"}]}', "messages[0].content"),
    ):  # fmt: skip
        r = httpx.post(base + "/v1/chat/completions", content=raw, timeout=10,
                       headers={"Authorization": f"Bearer {CLIENT_KEY}",
                                "Content-Type": "application/json"})  # fmt: skip
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["code"] == "bad_text" and at in err["message"], err
        assert "Traceback" not in r.text
    assert len(llm_stub.calls()) == 1


def test_the_usage_chunk_is_passed_on_when_asked(base: str, llm_stub: StubServer) -> None:
    llm_stub.script("用量", Reply.text("好的。"))
    stream = sdk(base).chat.completions.create(
        model="银灰", messages=[{"role": "user", "content": "用量多少"}], stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "好的。"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (100, 10)
    assert all(c.usage is None for c in chunks[:-1])


# -- cache-friendly: the prompt's start stays the same -----------------------------------------
SETTING = (
    "You are playing a character in an ongoing role-play. Stay in character, keep replies "
    "short, never speak for the user, and describe actions in parentheses.",
    "罗德岛的舰桥上灯光很暗，值夜班的干员轮流在走廊里巡视，窗外的荒原一直延伸到地平线。",
    "这段故事发生在一次长途航行中，舰上补给充足，但大家都在等待下一次靠岸的消息。",
    "她习惯在清晨整理桌上的文件，把需要签字的部分用红色的夹子夹好，再放到博士的门口。",
    "回答时请保持她一贯的语气，不要突然改变话题，也不要一次说出太多设定。",
    "如果对方提到过去的事情，她会先想一想，再用简短的话回答，不会长篇大论。",
)
"""Invented card and main-prompt text, cycled to the size of a SillyTavern prompt."""


def card_prompt(chars: int = 4000) -> str:
    """A client system message of ``chars`` characters (~2,300 tokens): what a card with its
    description, scenario and examples, the app's main prompt and a few World Info entries
    weigh in SillyTavern."""
    out: list[str] = []
    i = 0
    while sum(len(x) + 1 for x in out) < chars:
        out.append(f"{i + 1}. {SETTING[i % len(SETTING)]}")
        i += 1
    return "\n".join(out)


CHAT = ["早上好。", "凯尔希医生今天在哪？", "陈小姐来过吗？", "星熊和诗怀雅又吵架了吗？",
        "你还记得特蕾西娅吗？", "巡逻路线改好了吗？", "奥黛丽最近怎么样？", "今天的雨下得真大。",
        "维罗妮卡说她明天到。", "晚安。"]  # fmt: skip
"""Ten messages to 阿米娅 naming different people (the per-message knowledge changes)."""


@pytest.fixture(scope="module")
def amiya_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_kb(tmp_path_factory.mktemp("layout") / "home")


def flat(messages: list[dict[str, Any]]) -> str:
    """A request's messages as the text a provider's cache sees, in order."""
    return "".join(f"<{m['role']}>{m['content']}\n" for m in messages)


def prefix_reuse(amiya_home: Path, stub: StubServer, layout: str) -> list[float]:
    """Per turn of a 10-turn chat with 阿米娅, the share of its prompt tokens (the one token
    counter) that open the next turn's prompt unchanged, from the requests the stub got."""
    replies = [f"（阿米娅想了想）第{i + 1}次回答：" + REPLY * 5 for i in range(len(CHAT))]
    stub.queue(*(Reply.text(r) for r in replies))
    with serve(settings_for(amiya_home, stub, prompt_layout=layout)) as url:
        c = sdk(url, key="local")
        msgs: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": card_prompt()},
            {"role": "assistant", "content": "博士，您来了。今天的文件我已经整理好了。"},
        ]
        for text in CHAT:
            msgs.append({"role": "user", "content": text})
            answer = c.chat.completions.create(model="阿米娅", messages=msgs)
            msgs.append({"role": "assistant", "content": answer.choices[0].message.content or ""})
    sent = [flat(r.body["messages"]) for r in stub.calls()]
    assert len(sent) == len(CHAT)
    return [count_tokens(os.path.commonprefix([a, b])) / count_tokens(a)
            for a, b in itertools.pairwise(sent)]  # fmt: skip


def test_each_turn_opens_the_next_ones_prompt(amiya_home: Path, llm_stub: StubServer) -> None:
    """Cache layout: at least 90% of each turn's prompt tokens are an unchanged prefix of the
    next turn's (the steady knowledge, the card, the history; only this message's knowledge
    and the message itself are new)."""
    reuse = prefix_reuse(amiya_home, llm_stub, "cache")
    print("prefix reuse per turn (cache layout):", " ".join(f"{r:.1%}" for r in reuse))
    assert min(reuse) >= 0.90, reuse


def test_the_old_layout_remains_a_setting(amiya_home: Path, llm_stub: StubServer) -> None:
    """``ARKLORE_PROMPT_LAYOUT=system``: all the knowledge in one system message before the
    client's messages, as before (its start changes with the message: the cache misses)."""
    reuse = prefix_reuse(amiya_home, llm_stub, "system")
    print("prefix reuse per turn (system layout):", " ".join(f"{r:.1%}" for r in reuse))
    first = llm_stub.calls()[1].body["messages"]
    assert "【阿米娅身边的人】" in first[0]["content"] and first[-1]["content"] == CHAT[1]
    assert min(reuse) < 0.5
    with pytest.raises(ConfigError, match="ARKLORE_PROMPT_LAYOUT='top': must be one of cache"):
        Settings.from_env({"ARKLORE_PROMPT_LAYOUT": "top"})


# -- no duplicate knowledge --------------------------------------------------------------------
def sillytavern_system(card: dict[str, Any], message: str) -> str:
    """The system text SillyTavern builds from an imported card: its description, its
    personality, and the World Info entries whose keys ``message`` fires."""
    data = card["data"]
    entries = [e["content"] for e in data["character_book"]["entries"]
               if fires(Matchable.from_book_entry(e), message)]  # fmt: skip
    return "\n".join([data["description"], f"银灰's personality: {data['personality']}",
                      *entries]).replace("{{user}}", "Doctor")  # fmt: skip


def facts(text: str) -> list[str]:
    """The fact lines of an injected text (headings aside), and each one's words after its
    label: what must reach the model once."""
    out = []
    for line in text.split("\n"):
        fact = line.strip().removeprefix("- ")
        if len(fact) < 4 or fact.startswith(("【", "〔", "#")):
            continue
        out.append(fact)
        _, _, tail = fact.partition("：")
        if tail and len(tail) >= 8:
            out.append(tail)
    return out


def test_a_card_exported_by_arklore_is_not_injected_twice(
    home: Path, base: str, llm_stub: StubServer
) -> None:
    """The client's system message already carries 银灰's card (description, personality) and
    his lorebook's entry on 初雪: the model gets each fact once, and the client's text as sent."""
    gamedata = write_gamedata(home.parent / "gamedata")
    ws = Workspace(settings_for(home, llm_stub, gamedata=gamedata))
    card = ws.cards.card("银灰").card
    knowledge = ws.chat.turn("银灰", QUESTION, steady=True)
    ws.close()
    system = sillytavern_system(card, QUESTION)
    assert SILVERASH_PROFILE_PERSONALITY in system and SILVERASH_ON_PRAMANIX in system
    llm_stub.script(QUESTION, Reply.text(REPLY))
    msgs: list[ChatCompletionMessageParam] = [{"role": "system", "content": system},
                                              {"role": "user", "content": QUESTION}]  # fmt: skip
    sdk(base).chat.completions.create(model="银灰", messages=msgs)
    sent = llm_stub.calls(QUESTION)[0].body["messages"]
    assert sent[1] == msgs[0]
    whole = flat(sent)
    injected = [f for b in knowledge.blocks for f in facts(b.text)]
    assert injected and SILVERASH_ON_PRAMANIX in injected
    assert {f: n for f in injected if (n := whole.count(f)) > 1} == {}  # never twice
    assert whole.count(SILVERASH_ON_PRAMANIX) == whole.count(SILVERASH_PROFILE_PERSONALITY) == 1
    assert SILVERASH_ON_CLIFFHEART in sent[-1]["content"]  # the entry that did not fire: injected
    assert "干员银灰的身份" in sent[0]["content"]


# -- alternate forms ---------------------------------------------------------------------------
def test_alternate_forms_are_models_by_readable_names(tmp_path: Path, llm_stub: StubServer) -> None:
    """Forms sharing a name are told apart as the game does (a profession, else 异格), never
    by a char id; the char ids a client saved before still work."""
    home = make_forms_kb(tmp_path / "home")
    with serve(settings_for(home, llm_stub)) as url:
        c = sdk(url, key="local")
        models = {m.id: (m.model_extra or {})["char_id"] for m in c.models.list().data}
        assert {k: v for k, v in models.items() if k.startswith(("阿米娅", "暮落"))} == {
            "阿米娅": AMIYA, "阿米娅（近卫）": AMIYA_GUARD, "阿米娅（医疗）": AMIYA_MEDIC,
            "暮落": SHALEM, "暮落（异格）": SHALEM2,
        }  # fmt: skip
        assert not any(k.startswith("char_") for k in models)
        assert c.models.retrieve("阿米娅（医疗）").id == "阿米娅（医疗）"
        assert c.models.retrieve(AMIYA_GUARD).id == "阿米娅（近卫）"  # the old id
        llm_stub.script("近卫", Reply.text("在。"))
        for model in ("阿米娅（近卫）", AMIYA_GUARD):
            r = c.chat.completions.with_raw_response.create(
                model=model, messages=[{"role": "user", "content": "近卫来了吗"}],
                extra_body={"participants": ["暮落（异格）"]},
            )  # fmt: skip
            assert r.headers["x-arklore-operator"] == AMIYA_GUARD
        # SillyTavern names the card it writes for, a form's card by its model id
        r = c.chat.completions.with_raw_response.create(
            model="阿米娅", messages=[_sillytavern_main("阿米娅（近卫）", "阿米娅（近卫）"),
                                   {"role": "user", "content": "近卫来了吗"}],
        )  # fmt: skip
        assert r.headers["x-arklore-operator"] == AMIYA_GUARD
    assert len(llm_stub.calls("近卫")) == 3


DOSSIER = (
    "银灰年轻时曾离开雪山，在外游历多年，学会了与各方势力打交道的方法。回到故乡后，他把这些经验"
    "都用在了家族的事务上，很少向旁人提起那段日子。他的妹妹们只知道他回来时带着一身的伤。"
)  # invented: longer than the small-talk opening of a 档案资料 paragraph


def test_the_steady_knowledge_does_not_change_with_small_talk(tmp_path: Path) -> None:
    """Small talk gets a 档案资料 paragraph by its opening, a question gets it whole; a steady
    turn (the cache layout's) gets it whole either way, so the prompt's start stays put."""
    home = make_sisters_kb(tmp_path / "home")
    profile = (home / "chars" / f"{SILVERASH}.char").read_text(encoding="utf-8")
    profile = profile.replace("- 种族：菲林", f"- 种族：菲林\n- 档案资料一：{DOSSIER}")
    (home / "chars" / f"{SILVERASH}.char").write_text(profile, encoding="utf-8")
    ws = kb_workspace(home)
    try:

        def persona(message: str, steady: bool) -> str:
            return ws.chat.turn("银灰", message, steady=steady).block("persona").text

        assert DOSSIER in persona(QUESTION, steady=False)
        assert DOSSIER not in persona("你好。", steady=False)  # small talk: its opening
        assert persona("你好。", steady=True) == persona(QUESTION, steady=True)
        assert DOSSIER in persona("你好。", steady=True)
    finally:
        ws.close()


def test_no_body_is_a_500(base: str, llm_stub: StubServer) -> None:
    """Bytes that are not UTF-8, and a forwarded message nested as deep as JSON parsing
    allows: a 400 or an answer, never a 500 or a traceback."""
    nested = "[" * 900 + "]" * 900
    deep = [{"role": "system", "content": "@"}, {"role": "user", "content": "深处"}]
    deep_body = orjson.dumps({"model": "银灰", "messages": deep}).replace(b'"@"', nested.encode())
    bodies = [b"\xff\xfe\x00", b'{"model":"\xff","messages":[]}', deep_body]
    statuses = []
    for raw in bodies:
        r = httpx.post(base + "/v1//chat/completions", content=raw, timeout=10,
                       headers={"Authorization": f"Bearer {CLIENT_KEY}",
                                "Content-Type": "application/json"})  # fmt: skip
        assert "Traceback" not in r.text and set(r.json()) <= {"error", "id", "object",
                                                               "created", "model", "choices",
                                                               "usage"}  # fmt: skip
        statuses.append(r.status_code)
    assert statuses == [400, 400, 200]
