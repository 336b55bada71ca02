"""The web pages, served by the same app with no external network: plain HTML + JS calling
the JSON API, and cytoscape.js from the npm registry, installed by ``make web`` (``web/``,
``npm ci``) and copied into ``static/vendor/`` (not committed).

=================  ===========================================================
``/``              graph explorer: search, neighbourhood, evidence of an edge
``/stage``         stage reader: ``?path=<stage>#L<line_no>``
``/operator``      operator page: persona by tier, relations, appearances
``/review``        review queue: drafts beside their sources, approve / edit
``/chat``          chat preview: the blocks a turn injects, the reply
=================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI
from starlette.responses import FileResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
VENDOR = STATIC / "vendor"
PAGES = {
    "/": "graph.html",
    "/stage": "stage.html",
    "/operator": "operator.html",
    "/review": "review.html",
    "/chat": "chat.html",
}


def cytoscape_installed() -> bool:
    return (VENDOR / "cytoscape.min.js").is_file()


def _page(path: Path) -> Callable[[], Awaitable[FileResponse]]:
    async def page() -> FileResponse:
        return FileResponse(path, media_type="text/html; charset=utf-8")

    return page


def mount(app: FastAPI) -> None:
    for route, filename in PAGES.items():
        app.add_api_route(route, _page(STATIC / filename), methods=["GET"], include_in_schema=False)
    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")
