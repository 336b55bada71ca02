"""The web pages, served by the same app with no external network: plain HTML + JS calling
the JSON API, and cytoscape.js and Swagger UI from the npm registry, installed by ``make web``
(``web/``, ``npm ci``) and copied into ``static/vendor/`` (not committed).

=================  ===========================================================
``/``              graph explorer: suggestions (the most connected operators),
                   search, neighbourhood, evidence of an edge
``/stage``         stage reader: ``?path=<stage>#L<line_no>``
``/operator``      operator page: persona by tier, relations, appearances
``/review``        review queue: drafts beside their sources, approve / edit
``/chat``          chat: a conversation with her; with an LLM her replies stream
                   from ``/v1/chat/completions``, without one each turn's blocks
``/docs``          Swagger UI over ``/openapi.json`` (its assets from npm too)
=================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.responses import FileResponse, HTMLResponse
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


SWAGGER = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")
CYTOSCAPE = ("cytoscape.min.js", "layout-base.js", "cose-base.js", "cytoscape-fcose.js")
"""cytoscape.js and its fcose layout (with the two libraries it builds on), in load order."""


def cytoscape_installed() -> bool:
    return all((VENDOR / f).is_file() for f in CYTOSCAPE)


def swagger_installed() -> bool:
    return all((VENDOR / f).is_file() for f in SWAGGER)


async def docs() -> HTMLResponse:
    """Swagger UI from the local copy (FastAPI's default loads it from a CDN: a blank page
    offline), or a page saying how to install it."""
    if not swagger_installed():
        return HTMLResponse(
            "<!doctype html><title>arklore API</title><p>Swagger UI is not installed: run "
            '<code>make web</code>. The API is described at <a href="/openapi.json">'
            "/openapi.json</a>.</p>",
            status_code=503,
        )
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="arklore API",
        swagger_js_url="/static/vendor/swagger-ui-bundle.js",
        swagger_css_url="/static/vendor/swagger-ui.css",
        swagger_favicon_url="/static/vendor/favicon-32x32.png",
        swagger_ui_parameters={"validatorUrl": None},  # no badge from validator.swagger.io
    )


def _page(path: Path) -> Callable[[], Awaitable[FileResponse]]:
    async def page() -> FileResponse:
        return FileResponse(path, media_type="text/html; charset=utf-8")

    return page


def mount(app: FastAPI) -> None:
    for route, filename in PAGES.items():
        app.add_api_route(route, _page(STATIC / filename), methods=["GET"], include_in_schema=False)
    app.add_api_route("/docs", docs, methods=["GET"], include_in_schema=False)
    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")
