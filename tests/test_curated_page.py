"""The curated relations on the review page, in headless Chromium against a real ``arklore
serve`` (a subprocess, no LLM) over the service world with a curated matrix
(:mod:`support.curated_world`): each relation shows its description and its evidence lines; a
reviewer confirms one with the admin token and ``GET /v1/curated`` says so; a wrong token shows
the error and writes nothing. One server and one browser for the module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.browser import NO_DATA, launch, require_browser, shot, watched_page
from support.curated_world import curated_env, write_matrix
from support.serve_proc import served
from support.service_world import AMIYA, CHEN, HOSHI, KALTS, make_kb

pytestmark = pytest.mark.slow
TOKEN = "curated-page-admin-token-0123456789"


@pytest.fixture(scope="module", autouse=True)
def _browser_ready() -> None:
    require_browser()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("curated")
    home = make_kb(root / "home", profiles=False)
    matrix = write_matrix(root / "matrix.toml")
    with served(home, **NO_DATA, **curated_env(matrix), ARKLORE_ADMIN_TOKEN=TOKEN) as srv:
        yield srv.base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    yield from watched_page(browser)


def relation(base: str, frm: str, to: str) -> dict[str, Any]:
    rows = httpx.get(base + "/v1/curated").json()["relations"]
    return next(r for r in rows if (r["from"], r["to"]) == (frm, to))


def card(page: Any, text: str) -> Any:
    return page.locator(".card.curated", has_text=text)


def test_a_reviewer_confirms_a_relation_beside_its_evidence_lines(server: str, page: Any) -> None:
    page.goto(server + "/review?tab=curated")
    page.wait_for_selector(".card.curated .evidence .line.target")
    assert page.locator(".card.curated").count() == 3
    chen = card(page, "陈 → 星熊")
    assert "近卫局里跟在她身后的部下。" in chen.inner_text()
    chen.locator(".evidence .line.target").wait_for()
    assert "星熊，跟上" in chen.locator(".evidence .line.target").inner_text()  # the cited line
    assert chen.locator(".status").inner_text() == "unconfirmed"
    page.fill("#token", TOKEN)
    page.fill("#reviewer", "小林")
    chen.locator(".note").fill("原文里是她的部下")
    chen.locator("button.confirm").click()
    page.wait_for_function(
        "[...document.querySelectorAll('.card.curated')].some(c => c.innerText.includes('陈 → 星熊')"
        " && c.querySelector('.status').innerText === 'confirmed')"
    )
    shot(page, "review-curated-confirmed")
    got = relation(server, CHEN, HOSHI)
    assert (got["status"], got["by"], got["note"]) == ("confirmed", "小林", "原文里是她的部下")


def test_a_wrong_token_shows_the_error_and_confirms_nothing(server: str, browser: Any) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = ctx.new_page()  # not watched: the refused write is an expected 401 in the console
    try:
        page.goto(server + "/review?tab=curated")
        page.wait_for_selector(".card.curated .evidence .line.target")
        page.fill("#token", "not-the-token")
        amiya = card(page, "阿米娅 → 凯尔希")
        amiya.locator("button.confirm").click()
        amiya.locator(".result .error").wait_for()
        assert "admin bearer token" in amiya.locator(".result").inner_text()
        shot(page, "review-curated-wrong-token")
    finally:
        ctx.close()
    assert relation(server, AMIYA, KALTS)["status"] == "unconfirmed"
