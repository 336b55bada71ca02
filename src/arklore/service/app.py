"""The HTTP service: one FastAPI app over one workspace (``arklore serve``).

:func:`create_app` takes a workspace (tests, programs with their own settings);
:func:`app_from_env` is the factory uvicorn calls in each worker: with the CLI and the
module-level API, the entry points allowed to read the environment (:meth:`Settings.from_env`).

The app serves the JSON API (:mod:`~arklore.service.routes`, OpenAPI at ``/openapi.json``,
docs at ``/docs``) and the web pages (:mod:`~arklore.service.web`) with no external network.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from arklore import __version__
from arklore.core.errors import ArkloreError
from arklore.service import errors, guard, openai, review, web
from arklore.service.metrics import Metrics, MetricsMiddleware
from arklore.service.routes import router
from arklore.service.state import ServiceState
from arklore.service.turns import TurnRunner
from arklore.settings import Settings
from arklore.workspace import Workspace

log = logging.getLogger("arklore.service")


def create_app(workspace: Workspace, *, warm_up: bool = True, turn_processes: int = 0) -> FastAPI:
    """The service over ``workspace`` (closed when the app shuts down). ``warm_up`` loads the
    knowledge base in the background at startup (``/readyz`` says when it is done);
    ``turn_processes``: worker processes for the per-turn work (:mod:`.turns`; 0: the thread
    pool)."""
    state = ServiceState(workspace)
    turns = TurnRunner(workspace, turn_processes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if warm_up:
            threading.Thread(
                target=state.warm_up, args=(turns.warm,), name="arklore-warm-up", daemon=True
            ).start()
        else:
            state.warm = True
        try:
            yield
        finally:
            await openai.shutdown(state)
            turns.close()
            state.close()

    app = FastAPI(
        title="arklore",
        version=__version__,
        summary="What a chat with an Arknights operator receives, from the official story text.",
        lifespan=lifespan,
        docs_url=None,  # served by web.mount from the local Swagger UI (no CDN)
        redoc_url=None,
        dependencies=[Depends(guard.check_request_text)],
    )
    metrics = Metrics()
    app.state.arklore = state
    app.state.turns = turns
    app.state.metrics = metrics
    app.add_exception_handler(ArkloreError, errors.arklore_error_handler)
    app.add_exception_handler(RequestValidationError, errors.validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, errors.http_error_handler)
    app.add_exception_handler(Exception, errors.unexpected_error_handler)
    app.include_router(router)
    app.include_router(openai.router)
    app.include_router(review.router)
    web.mount(app)
    generated = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = guard.document_rules(generated())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(guard.BodyLimitMiddleware, limit=workspace.settings.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(guard.SlashMiddleware)  # outermost: every layer sees the one path
    return app


def app_from_env() -> FastAPI:
    """The uvicorn factory: a workspace made from this process's environment."""
    settings = Settings.from_env()
    if settings.e5_threads == 0:  # turns run in several processes at once: one thread each
        settings = settings.model_copy(update={"e5_threads": 1})
    return create_app(Workspace(settings), turn_processes=settings.turn_processes)
