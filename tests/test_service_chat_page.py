"""The chat page with an LLM: a real ``arklore serve`` whose chat model is the local stub
(:mod:`support.llm_stub`), the page in headless Chromium. Her replies stream through
``/v1/chat/completions`` (the one chat path of every client) and the page sends the whole
conversation back each turn. One server, one stub and one browser for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import NO_DATA, require_browser, shot
from support.llm_stub import Reply, StubServer
from support.pages_world import make_pages_kb
from support.serve_proc import Served, served

pytestmark = pytest.mark.slow

TURNS = [
    ("凯尔希医生在哪里？", "凯尔希医生在甲板上，她在看巡逻路线。"),
    ("陈小姐最近怎么样？", "陈小姐还是老样子，一有案子就冲在最前面。"),
    ("星熊呢？", "星熊姐姐在近卫局值班，她让我代她向博士问好。"),
]


@pytest.fixture(scope="module", autouse=True)
def _browser_ready() -> None:
    require_browser()


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    s = StubServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, stub: StubServer) -> Iterator[Served]:
    home = make_pages_kb(tmp_path_factory.mktemp("chat-page") / "home")
    llm = {"LLM_CHAT_BASE_URL": stub.url, "LLM_CHAT_MODEL": "stub-chat"}
    with served(home, **NO_DATA, **llm) as srv:
        yield srv


def _why(srv: Served, stub: StubServer) -> str:
    """What the server logged and what reached the stub: said when a reply never came."""
    log = srv.log.read_text(encoding="utf-8", errors="replace")[-3000:]
    got = [(c.body.get("model"), c.last_user[-60:]) for c in stub.calls()]
    return f"server log: {log!r}; the stub got {got!r}"


# every text her reply bubble showed, in order (the stream arrives a few characters a time)
RECORD = """() => {
  window.shown = [];
  new MutationObserver(() => {
    const her = document.querySelectorAll('.msg.her .text');
    if (her.length) window.shown.push(her[her.length - 1].textContent);
  }).observe(document.querySelector('#log'), {subtree: true, childList: true, characterData: true});
}"""


def test_chat_with_an_llm_streams_her_replies_and_keeps_the_conversation(
    server: Served, stub: StubServer, page: Any
) -> None:
    for message, reply in TURNS:
        stub.script(message, Reply.text(reply, chunk_delay=0.02))
    types: list[str] = []
    page.on("response", lambda r: types.append(r.headers.get("content-type", ""))
            if r.url.endswith("/v1/chat/completions") else None)  # fmt: skip
    page.goto(server.base + "/chat?op=阿米娅")
    page.wait_for_function("document.querySelectorAll('#operators option').length > 0")
    assert "chat model" in page.inner_text("#mode")
    page.evaluate(RECORD)
    for i, (message, reply) in enumerate(TURNS, 1):
        page.fill("#message", message)
        page.click("#send")
        try:
            page.wait_for_function(
                f"document.querySelectorAll('.msg.her:not(.streaming)').length === {i}"
            )
        except PlaywrightTimeout:
            raise AssertionError(_why(server, stub)) from None
        assert page.locator(".msg.her").nth(i - 1).inner_text() == f"阿米娅：{reply}"
    shown = page.evaluate("window.shown")
    partial = {t for t in shown if t not in ("…", *(r for _, r in TURNS))}
    assert any(TURNS[2][1].startswith(t) for t in partial), shown  # she was read as she wrote
    assert types == ["text/event-stream; charset=utf-8"] * 3
    calls = stub.calls()
    assert len(calls) == 3 and all(
        c.body["stream"] and c.body["model"] == "stub-chat" for c in calls
    )
    said = [(m["role"], m["content"]) for m in calls[2].body["messages"]
            if m["role"] in ("user", "assistant")]  # fmt: skip
    assert said[:4] == [("user", TURNS[0][0]), ("assistant", TURNS[0][1]),
                        ("user", TURNS[1][0]), ("assistant", TURNS[1][1])]  # fmt: skip
    assert said[4][0] == "user" and TURNS[2][0] in said[4][1]
    shot(page, "chat-with-llm")
