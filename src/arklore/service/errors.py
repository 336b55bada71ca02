"""Errors as HTTP answers: one JSON shape, a status per cause, never a 500 for bad input.

``{"error": "<code>", "message": "...", "hint": "...", ...}``; an unknown operator also
carries ``closest`` (names the alias table knows), an ambiguous one ``candidates``.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from arklore.core.errors import (
    AmbiguousNameError,
    ArkloreError,
    BadTextError,
    ConfigError,
    CuratedChangedError,
    InputFileError,
    LLMError,
    MessageTooLongError,
    OperatorNotAvailableError,
    StoreError,
    StoryPointError,
    UnknownEventError,
    UnknownNameError,
    UnknownOperatorError,
    UsageError,
)
from arklore.graph.io import GraphNotBuiltError
from arklore.profiles.charfile import ApproveRefusedError, InvalidProfileError
from arklore.profiles.facade import ProfileNotFoundError
from arklore.rag.index import RagIndexError

log = logging.getLogger("arklore.service")


class ErrorOut(BaseModel):
    error: str
    message: str
    hint: str = ""
    closest: list[str] | None = None
    candidates: list[str] | None = None


class ServiceError(ArkloreError):
    """An error the service itself raises with its status (bad path, auth, not found)."""

    def __init__(self, status: int, code: str, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.code = code


# (class, status, code), first match wins: subclasses before their parents
_MAP: tuple[tuple[type[ArkloreError], int, str], ...] = (
    (UnknownOperatorError, 404, "unknown_operator"),
    (UnknownEventError, 404, "unknown_event"),
    (UnknownNameError, 404, "unknown_name"),
    (AmbiguousNameError, 409, "ambiguous_name"),
    (CuratedChangedError, 409, "curated_changed"),
    (OperatorNotAvailableError, 403, "not_available"),
    (MessageTooLongError, 413, "message_too_long"),
    (BadTextError, 400, "bad_text"),
    (InvalidProfileError, 400, "bad_profile"),
    (StoryPointError, 400, "unknown_story_point"),
    (UsageError, 400, "bad_request"),
    (GraphNotBuiltError, 503, "not_built"),
    (RagIndexError, 503, "not_built"),
    (StoreError, 503, "not_built"),
    (InputFileError, 503, "misconfigured"),
    (ConfigError, 503, "misconfigured"),
    (LLMError, 502, "llm_failed"),
)


class BodyTooLarge(StarletteHTTPException):
    """A streamed request body passed the limit while a route read it (raised by
    :class:`~arklore.service.guard.BodyLimitMiddleware`; an ``HTTPException``, which FastAPI
    passes through unchanged to :func:`http_error_handler`)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than the limit of {limit} bytes")
        self.limit = limit


OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
"""The OpenAI-compatible routes (:mod:`arklore.service.openai`): their errors, a refused body
included, are OpenAI error objects."""


def is_openai_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in OPENAI_PATHS)


def openai_error_body(
    message: str, type_: str, code: str, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object, the one shape of every error on its routes."""
    return {"error": {"message": message, "type": type_, "code": code, "param": param}}


def body_too_large(limit: int, length: int | None = None, *, path: str = "") -> Response:
    """The 413 of a body over ``ARKLORE_MAX_BODY_BYTES`` (in OpenAI's error shape on its
    routes); the connection is closed after it, as the rest of the body is never read."""
    size = f"has {length} bytes, more than" if length is not None else "is larger than"
    message = f"the request body {size} the limit of {limit} bytes"
    body: dict[str, Any] = (
        openai_error_body(message, "invalid_request_error", "body_too_large")
        if is_openai_path(path)
        else {"error": "body_too_large", "message": message, "limit": limit,
              "hint": "send a smaller body, or raise ARKLORE_MAX_BODY_BYTES on the server"}
    )  # fmt: skip
    return json_response(body, 413, headers={"connection": "close"})


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """JSON with orjson (non-str keys allowed): the service's every answer."""
    body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def error_body(exc: ArkloreError) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, ServiceError):
        status, code = exc.status, exc.code
    elif isinstance(exc, ApproveRefusedError):
        status, code = (404 if isinstance(exc, ProfileNotFoundError) else 409), exc.code
    else:
        status, code = 500, "internal"
        for cls, st, cd in _MAP:
            if isinstance(exc, cls):
                status, code = st, cd
                break
    body: dict[str, Any] = {"error": code, "message": exc.message, "hint": exc.hint}
    if isinstance(exc, UnknownOperatorError):
        body["closest"] = exc.closest
    if isinstance(exc, AmbiguousNameError):
        body["candidates"] = exc.candidates
    if isinstance(exc, MessageTooLongError):
        body["limit"] = exc.limit
        body["length"] = exc.length
    return status, body


async def arklore_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ArkloreError)
    status, body = error_body(exc)
    if status >= 500:
        log.warning("%s %s -> %d %s", request.method, request.url.path, status, exc.one_line())
    return json_response(body, status)


async def validation_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type", "")}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(x) for x in first["loc"])
    return json_response(
        {"error": "invalid_request", "message": f"{where}: {first['msg']}", "hint": "see /docs",
         "detail": errors},
        422,
    )  # fmt: skip


async def http_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if isinstance(exc, BodyTooLarge):
        return body_too_large(exc.limit, path=request.url.path)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return json_response(
        {"error": code, "message": str(exc.detail), "hint": "see /docs for the routes"},
        exc.status_code,
        headers=getattr(exc, "headers", None),
    )


async def unexpected_error_handler(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return json_response(
        {"error": "internal", "message": f"unexpected {type(exc).__name__}", "hint": "a bug"},
        500,
    )
