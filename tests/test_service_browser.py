"""The web pages in headless Chromium (Debian's ``chromium`` driven by Playwright), against
the service started on a free loopback port over the invented knowledge base.

Screenshots go to ``test-artifacts/browser/`` (not committed): the graph, the evidence panel,
the stage reader and the chat preview.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_kb import S1, kb_workspace, make_kb

from arklore.service.app import create_app
from arklore.service.web import cytoscape_installed

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "browser"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)"
    ),
    pytest.mark.skipif(not cytoscape_installed(), reason="cytoscape.js not installed (make web)"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    home = make_kb(tmp_path_factory.mktemp("browser") / "home")
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
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


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


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    return path


def test_search_graph_edge_evidence_and_the_stage_reader(server: str, page) -> None:
    page.goto(server + "/")
    page.fill("#q", "Amiya")
    page.click("#search-btn")
    page.wait_for_function("window.arkloreGraph && window.arkloreGraph.edges().length > 0")
    n_edges = page.evaluate("window.arkloreGraph.edges().length")
    n_nodes = page.evaluate("window.arkloreGraph.nodes().length")
    assert n_edges == 7 and n_nodes == 6  # her 5 relations, 2 people's view of her
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


def test_chat_preview_shows_the_blocks(server: str, page) -> None:
    page.goto(server + "/chat")
    page.fill("#ops", "阿米娅, 凯尔希")
    page.fill("#message", "星熊最近好吗？")
    page.click("#send")
    page.wait_for_function("document.querySelectorAll('.turn').length === 2")
    blocks = page.eval_on_selector_all(
        ".turn:first-child .block", "els => els.map(e => e.dataset.block)"
    )
    assert blocks == ["persona", "relations", "memories", "group"]
    first = page.inner_text(".turn:first-child")
    assert "阿米娅" in first and "tier B" in first and "【在场者之间的关系】" in first
    assert "tokens" in first and "T-1" in first
    shot(page, "chat-preview")


def test_operator_and_review_pages(server: str, page) -> None:
    page.goto(server + "/operator?name=陈")
    page.wait_for_selector("#persona pre")
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
