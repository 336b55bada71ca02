"""`arklore turn` and `arklore chat` on the invented knowledge base; the chat against the
local stub model server."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support.llm_stub import Reply, StubServer, stub_env
from support.service_world import AMIYA, KALTS
from typer.testing import CliRunner

from arklore.cli.app import app


def test_turn_json_and_text(kb_env: Path) -> None:
    r = CliRunner().invoke(app, ["turn", "Amiya", "星熊最近好吗", "--group", "凯尔希", "--json"])
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert out["operator"]["id"] == AMIYA and out["participants"] == [AMIYA, KALTS]
    assert [b["name"] for b in out["blocks"]] == [
        "persona",
        "speech",
        "now",
        "doctor",
        "relations",
        "memories",
        "group",
        "exemplars",
    ]
    assert out["total_tokens"] >= out["blocks_tokens"] > 0
    r = CliRunner().invoke(app, ["turn", "阿米娅", "你好"])
    assert r.exit_code == 0 and "persona" in r.stdout and "【阿米娅的人设】" in r.stdout


def test_turn_errors_are_one_line(kb_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arklore.core.errors import ArkloreError

    r = CliRunner().invoke(app, ["turn", "阿米亚", "你好"])
    assert isinstance(r.exception, ArkloreError) and "阿米娅" in r.exception.one_line()
    monkeypatch.setenv("ARKLORE_MAX_MESSAGE_CHARS", "5")
    r = CliRunner().invoke(app, ["turn", "阿米娅", "这条消息太长了"])
    assert isinstance(r.exception, ArkloreError) and "limit of 5" in r.exception.one_line()


def test_chat_without_a_model_prints_the_prompt_and_why(kb_env: Path) -> None:
    script = "你好\n/why\n/who 凯尔希\n早上好\n" + "x" * 9000 + "\n/who 没这个人\n/quit\n"
    r = CliRunner().invoke(app, ["chat", "阿米娅"], input=script)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "no LLM: prompts only" in out
    assert "--- system prompt for 阿米娅" in out and "【阿米娅的人设】" in out
    assert "persona" in out and "tier B" in out and "relations" in out  # /why
    assert "now talking with 凯尔希" in out and "--- system prompt for 凯尔希" in out
    assert "limit of 8000" in r.stderr and "没这个人" in r.stderr  # errors do not end the chat


def test_chat_with_the_stub_model_keeps_the_history(
    kb_env: Path, llm_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in stub_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    llm_stub.script("你好", Reply.text("博士，您回来了。"))
    llm_stub.script("今天做什么", Reply.text("先去看看凯尔希医生吧。"))
    r = CliRunner().invoke(app, ["chat", "Amiya"], input="你好\n今天做什么\n/why\n")
    assert r.exit_code == 0, r.output
    assert "阿米娅：博士，您回来了。" in r.stdout and "阿米娅：先去看看凯尔希医生吧。" in r.stdout
    first, second = llm_stub.calls("你好")[0], llm_stub.calls("今天做什么")[0]
    system = first.body["messages"][0]
    assert system["role"] == "system" and "【阿米娅的人设】" in system["content"]
    assert first.body["temperature"] > 0 and "response_format" not in first.body
    roles = [(m["role"], m["content"]) for m in second.body["messages"][1:]]
    assert roles == [("user", "你好"), ("assistant", "博士，您回来了。"), ("user", "今天做什么")]
    assert "cost" in r.stderr.lower() or "$" in r.stderr


def test_group_chat_lets_each_operator_answer_and_hear_the_others(
    kb_env: Path, llm_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in stub_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    llm_stub.queue(Reply.text("我在。"), Reply.text("我也在。"))
    r = CliRunner().invoke(app, ["chat", "--group", "阿米娅,凯尔希"], input="都在吗\n")
    assert r.exit_code == 0, r.output
    assert "阿米娅：我在。" in r.stdout and "凯尔希：我也在。" in r.stdout
    amiya, kaltsit = llm_stub.requests
    assert "你正在以《明日方舟》干员阿米娅" in amiya.body["messages"][0]["content"]
    assert "【在场者之间的关系】" in kaltsit.body["messages"][0]["content"]
    assert kaltsit.body["messages"][-1] == {"role": "user", "content": "【阿米娅】我在。"}
