"""What the service refuses before any route runs: request bodies over the size limit (before
they are read) and text that breaks the one text rule (``core.text.check_text``); and what it
tolerates: a path with repeated slashes (:class:`SlashMiddleware`).

:class:`BodyLimitMiddleware` answers 413 from the ``Content-Length`` header alone, before the
body is read, and otherwise counts the bytes of a streamed (chunked) body as they arrive, so a
huge upload never sits in memory. :func:`check_request_text` is an app-wide dependency: every
route's path, query parameters and JSON strings (keys too) are checked, so a lone surrogate
(``"\\ud800"`` in JSON) or a control character is a 400 ``bad_text``, never a 500 from a
step further down that cannot encode it. A route that only passes some text on (the chat
completions' history and system messages) names those fields (:data:`FORWARDED`) and checks
them itself with :func:`~arklore.core.text.check_forwarded`.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, unquote_to_bytes

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arklore.core.text import TEXT_PATTERN, check_text
from arklore.service.errors import BodyTooLarge, body_too_large

FORWARDED = "x-arklore-forwarded"
"""A route's ``openapi_extra`` key: the body's lists of messages whose ``content`` the route
only passes on, so :func:`check_request_text` leaves it to the route."""


class SlashMiddleware:
    """Pure ASGI: repeated slashes in a path as one (``/v1//models`` is ``/v1/models``). A
    chat app appends ``/models`` to a base URL typed with a trailing slash (SillyTavern's
    custom source does); every route answers it, not one route at a time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and "//" in scope["path"]:
            scope = dict(scope)
            scope["path"] = _one_slash(scope["path"])
            raw = scope.get("raw_path")
            if isinstance(raw, bytes):
                scope["raw_path"] = _ONE_SLASH_B.sub(b"/", raw)
        await self.app(scope, receive, send)


_ONE_SLASH = re.compile(r"/{2,}")
_ONE_SLASH_B = re.compile(rb"/{2,}")


def _one_slash(path: str) -> str:
    return _ONE_SLASH.sub("/", path)


class BodyLimitMiddleware:
    """Pure ASGI: refuse a request body over ``limit`` bytes without reading it into memory."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self.limit:
            await body_too_large(self.limit, length, path=scope["path"])(scope, receive, send)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if started:
                raise
            await body_too_large(self.limit, path=scope["path"])(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def check_request_text(request: Request) -> None:
    """The one text rule over everything a request carries (400 ``bad_text``): the path and
    the query string as sent (bytes that are not UTF-8 are refused, not replaced), and every
    string of a JSON body but the message contents a route only forwards (:data:`FORWARDED`)."""
    scope = request.scope
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogatepass")
    check_text(unquote_to_bytes(raw_path).decode("utf-8", "surrogateescape"), what="path")
    query = scope.get("query_string", b"").decode("latin-1")
    for key, value in parse_qsl(query, keep_blank_values=True, errors="surrogateescape"):
        check_text(key, what="query parameter name")
        check_text(value, what=f"query parameter {key!r}")
    if request.method in ("POST", "PUT", "PATCH") and "json" in request.headers.get(
        "content-type", ""
    ):
        try:
            body = await request.json()  # parsed once: FastAPI has read it already
        except (ValueError, UnicodeDecodeError):
            return  # not JSON: the route's own validation answers
        route = scope.get("route")
        extra = getattr(route, "openapi_extra", None) or {}
        _check_json(body, "body", frozenset(extra.get(FORWARDED, ())))


def _check_json(value: Any, where: str, forwarded: frozenset[str] = frozenset()) -> None:
    if isinstance(value, str):
        check_text(value, what=where)
    elif isinstance(value, dict):
        for k, v in value.items():
            check_text(k, what=f"key of {where}")
            if k in forwarded and isinstance(v, list):
                for i, m in enumerate(v):
                    _check_message(m, f"{where}.{k}[{i}]")
            else:
                _check_json(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]")


def _check_message(message: Any, where: str) -> None:
    """A forwarded message: everything but its ``content`` under the text rule."""
    if not isinstance(message, dict):
        _check_json(message, where)
        return
    for k, v in message.items():
        check_text(k, what=f"key of {where}")
        if k != "content":
            _check_json(v, f"{where}.{k}")


# -- what the OpenAPI document says of these rules ---------------------------------------------
BAD_INPUT = (
    "bad input: text with a control character or invalid UTF-8 (bad_text), a body that is not JSON"
)
TOO_LARGE = "request body over ARKLORE_MAX_BODY_BYTES (body_too_large)"


def document_rules(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (an OpenAPI document) saying what this module enforces on every route: each
    text field of a request has the text rule as its ``pattern``, each operation may answer
    400 (and 413 when it takes a body). Applied to the generated document, so a route added
    later is described too; schemathesis checks the document against the server."""
    components = schema.get("components", {}).get("schemas", {})
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
    in_requests: set[str] = set()
    for ops in schema.get("paths", {}).values():
        for op in ops.values():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            for param in op.get("parameters", []):
                _pattern(param.get("schema", {}), components, in_requests)
            body = op.get("requestBody")
            for media in (body or {}).get("content", {}).values():
                _pattern(media.get("schema", {}), components, in_requests)
            responses = op["responses"]
            responses.setdefault("400", {"description": BAD_INPUT, **error})
            if body:
                responses.setdefault("413", {"description": TOO_LARGE, **error})
    return schema


def _pattern(node: Any, components: dict[str, Any], seen: set[str]) -> None:
    """The text rule as ``pattern`` on every free-text string under ``node`` ($refs followed
    once; strings with their own pattern, format or enum are left as they are)."""
    if isinstance(node, list):
        for item in node:
            _pattern(item, components, seen)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name not in seen:
            seen.add(name)
            _pattern(components.get(name), components, seen)
        return
    if node.get("type") == "string" and not {"pattern", "format", "enum", "const"} & set(node):
        node["pattern"] = TEXT_PATTERN
    for key in ("properties", "additionalProperties", "items", "anyOf", "oneOf", "allOf"):
        value = node.get(key)
        if isinstance(value, dict) and key == "properties":
            for sub in value.values():
                _pattern(sub, components, seen)
        elif value is not None:
            _pattern(value, components, seen)
