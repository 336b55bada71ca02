"""Headless Chromium for the page tests: Debian's ``chromium`` driven by Playwright, a page
that records every console error, page error and failed request (a test's page must end with
none), and screenshots under ``test-artifacts/browser/``.

Missing chromium, a CJK font or the pages' JavaScript (``make web``), a test skips, except in
CI (``CI`` set): there it fails naming what to install, so a fresh machine never passes
without having run the browser tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arklore.service.web import cytoscape_installed, swagger_installed

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
NO_DATA = {"ARKLORE_GAMEDATA": "", "ARKLORE_ASTR": ""}
"""For ``arklore serve`` over an invented world: not the real data ``make test`` exports."""


def missing() -> str | None:
    """What the browser tests lack on this machine, naming what to install (None: nothing)."""
    if not CHROMIUM.exists():
        return "no /usr/bin/chromium: install Debian's chromium (apt-get install chromium)"
    fonts = ""
    if shutil.which("fc-list"):
        fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True,
                               text=True, check=False).stdout  # fmt: skip
    if not fonts.strip():
        return "no CJK font: install fonts-noto-cjk (apt-get install fonts-noto-cjk)"
    if not cytoscape_installed() or not swagger_installed():
        return "the web pages' JavaScript is not installed: run `make web` (npm)"
    return None


def require_browser() -> None:
    """Skip (fail under CI) when :func:`missing` names something."""
    why = missing()
    if why is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {why}", pytrace=False)
    pytest.skip(why)


def launch() -> Iterator[Any]:
    """A headless Chromium (a generator for a module fixture)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


class Watched:
    """A page and what went wrong on it: console errors, page errors, failed requests and
    answers with an error status."""

    def __init__(self, browser: Any) -> None:
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
        self.page = self.ctx.new_page()
        self.errors: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.on("response", self._response)

    def _console(self, msg: Any) -> None:
        if msg.type == "error":
            self.errors.append(f"console: {msg.text}")

    def _response(self, r: Any) -> None:
        if r.status >= 400:
            self.errors.append(f"HTTP {r.status}: {r.url}")

    def close(self) -> None:
        self.ctx.close()


def watched_page(browser: Any) -> Iterator[Any]:
    """A page that must end its test with no error (a generator for a fixture)."""
    w = Watched(browser)
    yield w.page
    w.close()
    assert w.errors == [], w.errors


def shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    return path
