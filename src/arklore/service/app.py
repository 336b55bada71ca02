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

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from arklore import __version__
from arklore.core.errors import ArkloreError
from arklore.service import errors, openai, review, web
from arklore.service.metrics import Metrics, MetricsMiddleware
from arklore.service.routes import router
from arklore.service.state import ServiceState
from arklore.settings import Settings
from arklore.workspace import Workspace

log = logging.getLogger("arklore.service")


def create_app(workspace: Workspace, *, warm_up: bool = True) -> FastAPI:
    """The service over ``workspace`` (closed when the app shuts down). ``warm_up`` loads the
    knowledge base in the background at startup (``/readyz`` says when it is done)."""
    state = ServiceState(workspace)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if warm_up:
            threading.Thread(target=state.warm_up, name="arklore-warm-up", daemon=True).start()
        else:
            state.warm = True
        try:
            yield
        finally:
            await openai.shutdown(state)
            state.close()

    app = FastAPI(
        title="arklore",
        version=__version__,
        summary="What a chat with an Arknights operator receives, from the official story text.",
        lifespan=lifespan,
    )
    metrics = Metrics()
    app.state.arklore = state
    app.state.metrics = metrics
    app.add_exception_handler(ArkloreError, errors.arklore_error_handler)
    app.add_exception_handler(RequestValidationError, errors.validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, errors.http_error_handler)
    app.add_exception_handler(Exception, errors.unexpected_error_handler)
    app.include_router(router)
    app.include_router(openai.router)
    app.include_router(review.router)
    web.mount(app)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


def app_from_env() -> FastAPI:
    """The uvicorn factory: a workspace made from this process's environment."""
    return create_app(Workspace(Settings.from_env()))
