"""The web pages in headless Chromium (Debian's ``chromium`` driven by Playwright), against
the service started on a free loopback port over the invented knowledge base; ``/docs`` with
every request off the machine refused (the network off).

What the tests need from the system: Debian's ``chromium`` and a CJK font (``fonts-noto-cjk``:
without it every Chinese character is a box in the screenshots); ``make test`` installs both
where it can (root, apt). Missing, the tests skip, except in CI (``CI`` set): there they fail,
naming the package, so a fresh machine never passes without having run them
(:mod:`support.browser`, shared with the other page tests).

Screenshots go to ``test-artifacts/browser/`` (not committed): the graph, the evidence panel,
the stage reader, the chat page, the review page and /docs.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
from support.browser import launch, require_browser, shot
from support.service_world import S1, SWIRE, kb_workspace, make_kb, write_swire_profile

from arklore.chat.blocks import BLOCK_NAMES
from arklore.service.app import create_app

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _browser_ready() -> None:
    require_browser()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    home = make_kb(tmp_path_factory.mktemp("browser") / "home")
    write_swire_profile(home)  # a voice quote the review page cannot check without the data
    app = create_app(kb_workspace(home))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture
def page(browser) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    yield pg
    ctx.close()
    assert errors == [], errors


def test_search_graph_edge_evidence_and_the_stage_reader(server: str, page) -> None:
    page.goto(server + "/")
    page.fill("#q", "Amiya")
    page.click("#search-btn")
    page.wait_for_function("window.arkloreGraph && window.arkloreGraph.edges().length > 0")
    n_edges = page.evaluate("window.arkloreGraph.edges().length")
    n_nodes = page.evaluate("window.arkloreGraph.nodes().length")
    assert (n_edges, n_nodes) == (9, 8), (n_edges, n_nodes)  # her 7 relations, 2 views of her
    colours = page.evaluate(
        "window.arkloreGraph.edges().map(e => e.data('category')).sort().join(',')"
    )
    assert "curated" in colours and "story-direct" in colours and "interaction" in colours
    shot(page, "graph")
    # click the edge 阿米娅 -> 凯尔希 where it is drawn
    point = page.evaluate(
        """() => {
          const e = window.arkloreGraph.edges().filter(x => x.data('target') === 'char_003_kalts'
                     && x.data('source') === 'char_002_amiya')[0];
          const m = e.renderedMidpoint();
          const r = document.querySelector('#cy').getBoundingClientRect();
          return {x: r.left + m.x, y: r.top + m.y};
        }"""
    )
    page.mouse.click(point["x"], point["y"])
    page.wait_for_selector("#evidence .line.cited")
    panel = page.inner_text("#evidence")
    assert "阿米娅 ⇄ 凯尔希" in panel and "师徒" in panel
    cited = page.locator("#evidence .line.cited").all_inner_texts()
    assert any("巡逻路线我已经画好了" in c for c in cited) and len(cited) == 2
    shot(page, "graph-evidence")
    # the evidence links into the stage reader at the cited line
    page.click("#evidence a[href*='level_test_01_beg#L3']")
    page.wait_for_selector("#L3.target")
    assert page.url.endswith(f"/stage?path={S1.replace('/', '%2F')}#L3")
    assert "T-1" in page.inner_text("#title")
    assert "师徒" in page.inner_text("#L2") or "监护" in page.inner_text("#L3")
    assert "走南边" in page.inner_text("#L5") and "分支 5:1" in page.inner_text("#L6")
    shot(page, "stage-reader")


def test_chat_without_an_llm_shows_the_blocks_of_a_group_turn(server: str, page) -> None:
    page.goto(server + "/chat")
    page.wait_for_function("document.querySelectorAll('#operators option').length > 0")
    page.fill("#op", "阿米娅")
    page.fill("#others", "凯尔希")
    page.fill("#message", "星熊最近好吗？")
    page.click("#send")
    page.wait_for_function("document.querySelectorAll('.turn').length === 1")
    blocks = page.eval_on_selector_all(".turn .block", "els => els.map(e => e.dataset.block)")
    assert blocks == list(BLOCK_NAMES)
    first = page.inner_text(".turn")
    assert "阿米娅" in first and "tier B" in first and "【在场者之间的关系】" in first
    assert "tokens" in first and "T-1" in first
    shot(page, "chat-preview")


def test_operator_and_review_pages(server: str, page) -> None:
    page.goto(server + "/operator?name=陈")
    page.wait_for_selector("#persona pre")
    page.wait_for_selector("#relations table")  # its own request: it may come after the persona
    assert "tier A" in page.inner_text("#facts") and "诗怀雅" in page.inner_text("#relations")
    page.wait_for_selector("#timeline table")
    assert "T-2" in page.inner_text("#timeline")
    shot(page, "operator")
    page.goto(server + "/review")
    page.wait_for_selector("#queue tr.clickable")
    page.click("#queue tr.clickable >> nth=0")
    page.wait_for_selector("#detail textarea")
    assert "verbatim" in page.inner_text("#detail")
    page.click("#approve")
    page.wait_for_selector("#result .error")  # no token on this server: writes disabled
    assert "disabled" in page.inner_text("#result")
    shot(page, "review")


def test_review_marks_quotes_it_cannot_check_as_unverified(server: str, page) -> None:
    page.goto(server + f"/review?id={SWIRE}")
    page.wait_for_selector("#detail td.unverified")
    detail = page.inner_text("#detail")
    assert "verbatim" in detail  # the story quote, checked against the stored line
    assert "unverified: voice table not available (set ARKLORE_GAMEDATA)" in detail
    assert "not found" not in detail
    shot(page, "review-unverified")


def test_docs_render_with_the_network_off(server: str, page) -> None:
    off_machine: list[str] = []

    def only_local(route) -> None:  # noqa: ANN001 - playwright's Route
        host = urlparse(route.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            off_machine.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(server + "/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=30_000)
    paths = page.eval_on_selector_all(
        ".opblock-summary-path", "els => els.map(e => e.dataset.path || e.innerText)"
    )
    assert {"/v1/turn", "/v1/relation-context", "/v1/operators/{name}", "/healthz"} <= set(paths)
    assert len(paths) >= 15
    assert "arklore" in page.inner_text(".info .title")
    assert off_machine == [], off_machine
    shot(page, "docs")
