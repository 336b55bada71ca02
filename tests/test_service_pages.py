"""The web pages a newcomer opens, in headless Chromium against a real ``arklore serve``
(a subprocess on a free loopback port, no LLM) over the pages' world
(:mod:`support.pages_world`): every page renders with its assets, ``/`` opens on
suggestions, a 20-edge graph keeps its labels apart, names tell two forms apart, and the chat
page keeps the conversation without an LLM. One server and one browser for the module.

Screenshots go to ``test-artifacts/browser/`` (not committed). Without chromium, a CJK font or
``make web`` the tests skip, except in CI (``CI`` set), where they fail naming what is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.browser import NO_DATA, require_browser, shot
from support.pages_world import AMIYA_GUARD, STRANGERS, make_pages_kb
from support.serve_proc import served
from support.service_world import AMIYA, LONELY, S1

from arklore.chat.blocks import BLOCK_NAMES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _browser_ready() -> None:
    require_browser()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = make_pages_kb(tmp_path_factory.mktemp("pages") / "home")
    with served(home, **NO_DATA) as srv:
        yield srv.base


# each page, what shows it finished rendering
PAGES: dict[str, tuple[str, str]] = {
    "page-home": ("/", "#suggestions li.result"),
    "page-graph": (f"/?op={AMIYA}", "window.arkloreGraph || document.querySelector('#cy .error')"),
    "page-operator": ("/operator?name=陈", "#timeline table"),
    "page-stage": (f"/stage?path={S1}#L3", "#L3.target"),
    "page-review": (f"/review?id={AMIYA}", "#detail textarea"),
    "page-chat": ("/chat", "document.querySelectorAll('#operators option').length > 0"),
    "page-docs": ("/docs", ".opblock-summary-path"),
}  # fmt: skip


def test_every_page_renders_with_its_assets_and_no_error(server: str, page: Any) -> None:
    shots: list[Path] = []
    for name, (path, ready) in PAGES.items():
        page.goto(server + path)
        if ready.startswith(("#", ".")):
            page.wait_for_selector(ready)
        else:
            page.wait_for_function(ready)
        text = page.inner_text("body")
        assert "is not installed" not in text and "make web" not in text, (name, text[:300])
        shots.append(shot(page, name))
        if name == "page-graph":
            assert page.evaluate("typeof cytoscape === 'function'")
            assert page.evaluate("window.arkloreGraph.nodes().length") == 8
        if name == "page-docs":
            assert page.evaluate("typeof SwaggerUIBundle === 'function'")
            assert page.locator(".opblock-summary-path").count() >= 15
    assert len(shots) == 7  # the page fixture checks: no console error, failed request, 4xx/5xx


def test_home_opens_on_the_most_connected_operators_and_a_search_box(
    server: str, page: Any
) -> None:
    page.goto(server + "/")
    page.wait_for_selector("#suggestions li.result")
    chips = page.locator("#suggestions li.result").all_inner_texts()
    assert chips[:2] == ["独行者 20", "阿米娅 7"], chips
    assert not page.is_visible("#cy")  # no empty canvas
    shot(page, "home-suggestions")
    page.fill("#q", "阿米娅")  # typing lists who the name finds, both forms named apart
    page.wait_for_selector("#results li.result")
    assert page.locator("#results li.result").all_inner_texts() == ["阿米娅", "阿米娅（近卫）"]
    page.click("#suggestions li.result >> nth=0")
    page.wait_for_function("window.arkloreGraph && window.arkloreGraph.edges().length === 20")
    assert page.is_visible("#cy") and page.url.endswith(f"/?op={LONELY}")


OVERLAPS = """() => {
  const cy = window.arkloreGraph;
  const r = document.querySelector('#cy').getBoundingClientRect();
  const boxes = cy.nodes().map(n => ({id: n.data('label'), ...n.renderedBoundingBox({includeLabels: true})}));
  const pairs = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
    if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) pairs.push(`${a.id} / ${b.id}`);
  }));
  const outside = boxes.filter(b => b.x1 < 0 || b.y1 < 0 || b.x2 > r.width || b.y2 > r.height).map(b => b.id);
  return {nodes: boxes.length, pairs, outside};
}"""


def test_a_twenty_edge_graph_lays_out_every_label_apart(server: str, page: Any) -> None:
    page.goto(server + f"/?op={LONELY}")
    page.wait_for_function("window.arkloreGraph && window.arkloreGraph.edges().length === 20")
    labels = page.evaluate("window.arkloreGraph.nodes().map(n => n.data('label'))")
    assert sorted(labels) == sorted(["独行者", *STRANGERS])
    first = page.evaluate(OVERLAPS)
    shot(page, "graph-20-edges")
    assert first == {"nodes": 21, "pairs": [], "outside": []}
    where = "() => window.arkloreGraph.nodes().map(n => [n.id(), n.position()])"
    drawn = page.evaluate(where)
    redrawn = page.evaluate(  # drawn again: the same picture (no random start)
        f"async () => {{ const old = window.arkloreGraph; await show('{LONELY}');"
        " return window.arkloreGraph !== old; }"
    )
    assert redrawn and page.evaluate(where) == drawn


def test_two_forms_of_one_name_are_named_apart_in_review_the_chat_picker_and_her_page(
    server: str, page: Any
) -> None:
    page.goto(server + "/review")
    page.wait_for_selector("#queue tr.clickable")
    names = page.eval_on_selector_all(
        "#queue tr.clickable td:first-child", "els => els.map(e => e.innerText)"
    )
    assert {"阿米娅", "阿米娅（近卫）"} <= set(names) and len(set(names)) == len(names), names
    page.click(f"#queue tr[data-id='{AMIYA_GUARD}']")
    page.wait_for_selector("#detail h2")
    assert page.inner_text("#detail h2") == f"阿米娅（近卫） ({AMIYA_GUARD})"
    shot(page, "review-forms")
    page.goto(server + "/chat")
    page.wait_for_function("document.querySelectorAll('#operators option').length > 0")
    options = page.eval_on_selector_all("#operators option", "els => els.map(e => e.value)")
    assert {"阿米娅", "阿米娅（近卫）", "暮落", "暮落（异格）"} <= set(options)
    assert len(set(options)) == len(options)
    page.goto(server + f"/operator?name={AMIYA_GUARD}")
    page.wait_for_selector("#facts a")
    assert page.inner_text("#title") == f"阿米娅（近卫） ({AMIYA_GUARD})"
    assert "forms: 阿米娅, 阿米娅（近卫）" in page.inner_text("#facts")


TURNS = ["凯尔希医生在哪里？", "陈小姐最近怎么样？", "星熊呢？"]


def test_chat_without_an_llm_shows_each_turns_blocks_and_sends_the_history_back(
    server: str, page: Any
) -> None:
    sent: list[dict[str, Any]] = []
    page.on(
        "request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/v1/turn") else None
    )
    page.goto(server + "/chat")
    page.wait_for_function("document.querySelectorAll('#operators option').length > 0")
    assert "No LLM configured" in page.inner_text("#mode")
    page.fill("#op", "阿米娅（近卫）")
    for i, message in enumerate(TURNS, 1):
        page.fill("#message", message)
        page.click("#send")
        page.wait_for_function(f"document.querySelectorAll('.turn').length === {i}")
    assert [b["operator"] for b in sent] == [AMIYA_GUARD] * 3
    assert [b["message"] for b in sent] == TURNS
    assert [b["history"] for b in sent] == [
        [{"role": "user", "content": m} for m in TURNS[:i]] for i in range(3)
    ]
    assert page.locator(".msg.me").all_inner_texts() == [f"博士：{m}" for m in TURNS]
    blocks = page.eval_on_selector_all(
        ".turn:last-child .block", "els => els.map(e => e.dataset.block)"
    )
    assert blocks == list(BLOCK_NAMES)
    assert "3 turns" in page.inner_text("#status")
    shot(page, "chat-without-llm")
