"""The OpenAI-compatible endpoint: chat apps (SillyTavern, Open WebUI, LobeChat, NextChat) plug
in with a base URL, a key and a model name, and every reply is written with the operator's
knowledge in the prompt. No code in the app.

* ``GET /v1/models``: one model per operator a chat may use (``ARKLORE_MANIFEST`` applies),
  ``id`` a name that names her alone (:meth:`~arklore.names.facade.NamesFacade.unique_name`:
  her name, an alternate form's with its distinction, 阿米娅（近卫）, 暮落（异格）), ``char_id``
  beside it; a char id is still accepted wherever a model id is.
* ``POST /v1/chat/completions``: the standard body. ``model`` is the operator (name, alias,
  model id or char id). The last ``user`` message is the turn's message, the one message
  arklore reads: it is held to ``ARKLORE_MAX_MESSAGE_CHARS`` (413) and the text rule (400).
  Every other message (the card, World Info, the history) is only passed on, untouched
  whatever its length or control characters (only a lone surrogate, which is not text, is a
  400); the body limit bounds them. Group chat through the extra body field ``participants``
  (the other operators present), ``l3_targets`` as on ``/v1/turn``; SillyTavern's default
  prompts, naming the character it writes for and a group's members, stand in for ``model``
  and ``participants`` when they name an operator (:func:`played`). The turn is assembled
  (:meth:`~arklore.chat.facade.ChatFacade.turn`) and placed in the client's messages by
  :func:`arklore.chat.layout.messages` (``ARKLORE_PROMPT_LAYOUT``; ``cache``: the steady
  knowledge opens the system message, this message's knowledge goes ahead of the last user
  message, so a provider's prompt cache keeps everything before it; a line the client's own
  system messages already carry, an exported card's or lorebook's, is not sent again). The
  configured chat model (task ``chat``: ``LLM_CHAT_MODEL``..., never the operator's name)
  receives the client's messages in their order, its system messages where it put them.
  Every other body field is passed through (temperature, top_p, max_tokens, stop,
  penalties, seed, n, the provider's own...); without them the chat defaults apply
  (``temperature`` 0.8, ``max_tokens`` 800). The answer comes back as the endpoint gave it;
  ``stream: true`` as its ``chat.completion.chunk`` events, then ``data: [DONE]`` (the usage
  chunk only when the client asked with ``stream_options``). Forwarded requests are neither
  cached nor retried (:mod:`arklore.llm.relay` says why); a client that goes away cancels the
  upstream request, streamed or not. On a home whose last ``arklore build`` did not finish,
  the answer carries the turn's warnings: header ``X-Arklore-Warning`` and, not streamed, a
  ``warnings`` list beside the endpoint's fields.
* Paths with repeated slashes (``/v1//models``: a base URL typed with a trailing slash) are
  the same routes (:class:`~arklore.service.guard.SlashMiddleware`).
* Errors, arklore's and the endpoint's, are OpenAI error objects,
  ``{"error": {"message", "type", "code", "param"}}``, with the status an OpenAI client
  expects (:func:`relay_error` for the endpoint's: a 429 stays a 429 with its Retry-After, a
  timeout is a 504, a 5xx or an unusable answer a 502, the endpoint refusing arklore's own key
  a 502, since the client's key was fine); never a 500 with a traceback.

**Not an open relay** (it spends the owner's LLM key): with ``ARKLORE_API_KEYS`` set, these
routes want ``Authorization: Bearer <one of them>`` (compared in constant time); without, they
answer only clients on this machine, and ``arklore serve`` refuses to listen anywhere else
(:func:`check_exposure`). Requests and tokens per key are counted in ``/metrics`` under the
key's label (:func:`~arklore.settings.api_key_label`), never the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar

import anyio
import orjson
from fastapi import APIRouter, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response, StreamingResponse

from arklore.chat import layout
from arklore.chat.session import CHAT_MAX_TOKENS, CHAT_TASK, CHAT_TEMPERATURE
from arklore.chat.turn import Turn
from arklore.core.errors import ArkloreError, ConfigError
from arklore.core.text import check_forwarded, check_message
from arklore.llm.relay import ChatRelay, RelayError
from arklore.service import turns
from arklore.service.errors import (
    BodyTooLarge,
    ServiceError,
    error_body,
    json_response,
    openai_error_body,
)
from arklore.service.guard import FORWARDED
from arklore.service.state import ServiceState, service_state
from arklore.service.turns import turn_runner
from arklore.settings import Settings, api_key_label

log = logging.getLogger("arklore.service")

T = TypeVar("T")

LOCAL_LABEL = "local"  # requests from this machine when no client keys are set
REFUSED_LABEL = "invalid"  # requests whose key was missing or wrong
GONE = 499  # the client went away before the answer (nginx's "client closed request")
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


# -- errors --------------------------------------------------------------------------------
class OpenAIError(Exception):
    """An answer in OpenAI's error shape (status, ``type``, ``code``, ``param``)."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str,
        code: str,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param
        self.headers = headers

    def body(self) -> dict[str, Any]:
        return openai_error_body(self.message, self.type, self.code, self.param)

    def response(self) -> Response:
        return json_response(self.body(), self.status, headers=self.headers)


def _type_for(status: int) -> str:
    if status == 401:
        return "invalid_request_error"  # what OpenAI answers for a bad key
    if status == 403:
        return "permission_error"
    if status == 429:
        return "rate_limit_error"
    return "invalid_request_error" if status < 500 else "server_error"


_ARKLORE_PARAM = {"unknown_operator": "model", "ambiguous_name": "model",
                  "not_available": "model", "message_too_long": "messages"}  # fmt: skip
_ARKLORE_CODE = {"unknown_operator": "model_not_found", "not_available": "model_not_available",
                 "ambiguous_name": "ambiguous_model"}  # fmt: skip


def arklore_error(exc: ArkloreError) -> OpenAIError:
    """arklore's own error (status and code as on every route, :func:`error_body`) in
    OpenAI's shape: an unknown operator is a 404 ``model_not_found`` whose message names the
    closest operators, a message over the limit a 413."""
    if isinstance(exc, RelayError):
        return relay_error(exc)
    status, body = error_body(exc)
    code = str(body["error"])
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return OpenAIError(status, exc.one_line(), _type_for(status), _ARKLORE_CODE.get(code, code),
                       param=_ARKLORE_PARAM.get(code), headers=headers)  # fmt: skip


def relay_error(exc: RelayError) -> OpenAIError:
    """The chat endpoint's failure as the status an OpenAI client acts on."""
    where = f"the chat model ({CHAT_TASK} task: LLM_CHAT_* or LLM_*)"
    if exc.failure == "timeout":
        return OpenAIError(504, f"{where}: {exc.message}", "server_error", "upstream_timeout")
    if exc.failure == "unreachable":
        return OpenAIError(502, f"{where}: {exc.message}", "server_error", "upstream_unreachable")
    if exc.failure == "bad_response":
        return OpenAIError(502, f"{where}: {exc.message}", "server_error", "bad_upstream_response")
    status = exc.status or 502
    said = f"{where} answered HTTP {status}: {exc.message}"
    if status == 429:
        headers = {"Retry-After": exc.retry_after} if exc.retry_after else None
        return OpenAIError(429, said, "rate_limit_error", "rate_limit_exceeded", headers=headers)
    if status in (401, 403):  # arklore's key, not the client's: the client cannot fix it
        return OpenAIError(502, said + " (check LLM_CHAT_API_KEY / LLM_API_KEY)", "server_error",
                           "upstream_auth_failed")  # fmt: skip
    if status == 404:
        return OpenAIError(502, said + " (check LLM_CHAT_MODEL and LLM_CHAT_BASE_URL)",
                           "server_error", "upstream_not_found")  # fmt: skip
    if status in (408, 504):
        return OpenAIError(504, said, "server_error", "upstream_timeout")
    if status == 503:
        return OpenAIError(503, said, "server_error", "upstream_unavailable")
    if 400 <= status < 500:  # the request itself (a parameter, the context length): the client's
        return OpenAIError(status, said, "invalid_request_error", "upstream_rejected")
    return OpenAIError(502, said, "server_error", "upstream_error")


def validation_error(exc: RequestValidationError) -> OpenAIError:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    loc = [str(x) for x in first.get("loc", ()) if x != "body"]
    param = ".".join(loc) or None
    msg = f"{param}: {first.get('msg', '')}" if param else str(first.get("msg", ""))
    return OpenAIError(400, msg, "invalid_request_error", "invalid_request", param=param)


def to_openai_error(exc: Exception, request: Request) -> OpenAIError:
    if isinstance(exc, OpenAIError):
        return exc
    if isinstance(exc, RequestValidationError):
        return validation_error(exc)
    if isinstance(exc, BodyTooLarge):  # a streamed body passed the limit while it was read
        return OpenAIError(413, str(exc.detail), "invalid_request_error", "body_too_large",
                           headers={"connection": "close"})  # fmt: skip
    if isinstance(exc, StarletteHTTPException):  # FastAPI's own: a body it could not parse
        return OpenAIError(exc.status_code, str(exc.detail), _type_for(exc.status_code),
                           "invalid_request" if exc.status_code < 500 else "http_error")  # fmt: skip
    if isinstance(exc, ArkloreError):
        err = arklore_error(exc)
        if err.status >= 500:
            log.warning("%s %s -> %d %s", request.method, request.url.path, err.status, err.message)
        return err
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return OpenAIError(500, f"unexpected {type(exc).__name__} (a bug)", "server_error", "internal")


# -- who may call --------------------------------------------------------------------------
def _is_local(host: str | None) -> bool:
    """A loopback address (uvicorn puts the proxied client's address here when a proxy on
    this machine forwards it, so a local reverse proxy does not make everyone local)."""
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def authorize(request: Request, settings: Settings) -> str:
    """The metrics label of the caller's key. ServiceError 401 for a missing or wrong key,
    403 for a client elsewhere when no keys are set: every route that spends the LLM key
    calls it (also ``/v1/turn`` with ``reply``)."""
    keys = settings.api_keys
    if not keys:
        if _is_local(request.client.host if request.client else None):
            return LOCAL_LABEL
        raise ServiceError(
            403, "api_keys_not_configured",
            "this server has no client keys: it answers only clients on its own machine",
            hint="set ARKLORE_API_KEYS on the server",
        )  # fmt: skip
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    given = _digest(token.strip()) if scheme.lower() == "bearer" else b""
    match = None
    for key in keys:  # every key compared, in constant time: no early exit to time
        if hmac.compare_digest(given, _digest(key)):
            match = key
    if match is None:
        raise ServiceError(401, "invalid_api_key", "missing or invalid API key",
                           hint="send Authorization: Bearer <one of ARKLORE_API_KEYS>")  # fmt: skip
    return api_key_label(match)


def check_exposure(host: str, settings: Settings) -> None:
    """``arklore serve`` on anything but this machine needs client keys: the chat route spends
    the owner's LLM key for whoever can reach it. ConfigError otherwise."""
    if settings.api_keys or _is_local(host) or host == "localhost":
        return
    raise ConfigError(
        f"refusing to serve on {host} without ARKLORE_API_KEYS: /v1/chat/completions would "
        "spend your LLM key for anyone who can reach this address",
        hint="set ARKLORE_API_KEYS=<token>[,<token>...] (each at least 16 characters), or "
        "serve on 127.0.0.1",
    )


class OpenAIRoute(APIRoute):
    """A route of this module: the caller's key checked first, every error in OpenAI's
    shape (validation errors included: OpenAI answers 400, not 422), counted per key."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            label = REFUSED_LABEL
            try:
                label = authorize(request, request.app.state.arklore.ws.settings)
                request.state.openai_key = label
                response = await handler(request)
            except Exception as exc:
                response = to_openai_error(exc, request).response()
            request.app.state.metrics.observe_openai(label, response.status_code)
            return response

        return route


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    code: str
    param: str | None = None


class OpenAIErrorOut(BaseModel):
    error: OpenAIErrorDetail


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    what = {400: "bad body, no user message", 401: "missing or wrong client key",
            403: "no client keys and not this machine; operator hidden by the manifest",
            404: "unknown operator (the message names the closest)", 409: "ambiguous name",
            413: "the last user message over ARKLORE_MAX_MESSAGE_CHARS", 429: "the chat model's rate limit",
            502: "the chat model failed or answered something unusable",
            503: "no chat model configured, or the knowledge base not built",
            504: "the chat model did not answer in time"}  # fmt: skip
    return {s: {"model": OpenAIErrorOut, "description": what[s]} for s in statuses}


router = APIRouter(route_class=OpenAIRoute, tags=["openai"])


# -- models --------------------------------------------------------------------------------
def _created(st: ServiceState) -> int:
    """When the knowledge base was ingested (seconds), the models' ``created``."""
    with contextlib.suppress(Exception):
        run = st.ws.corpus.store().last_ingest_run()
        if run is not None and run.finished_at:
            return int(datetime.fromisoformat(run.finished_at).timestamp())
    return 0


def _model(model_id: str, char_id: str, name: str, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "arklore",
            "name": name, "char_id": char_id}  # fmt: skip


def _model_id(st: ServiceState, char_id: str) -> str:
    """A name that names her alone (what a chat app shows): an alternate form's with its
    distinction, 阿米娅（近卫） (:meth:`~arklore.names.facade.NamesFacade.unique_name`)."""
    return st.ws.names.unique_name(char_id)


def operator_name(st: ServiceState, model: str) -> str:
    """What a request's ``model`` (or participant) names, for the chat layer to resolve: a
    form's model id as her char id; any other name, alias or char id as it is."""
    return st.ws.names.from_unique_name(model) or model


@router.get("/v1/models", responses=_errors(401, 403))
def list_models(request: Request) -> Response:
    """One model per operator a chat may use (the manifest applies), ``id`` her name."""
    st = service_state(request)
    m = st.ws.chat.manifest()
    created = _created(st)
    data = [
        _model(_model_id(st, op.char_id), op.char_id, st.ws.names.display_name(op.char_id), created)
        for op in st.ws.names.operators()
        if m is None or m.allows(op.char_id)
    ]
    return json_response({"object": "list", "data": data})


@router.get("/v1/models/{model}", responses=_errors(401, 403, 404, 409))
def get_model(
    model: Annotated[str, Path(min_length=1, max_length=200)], request: Request
) -> Response:
    """One operator as a model (any name, alias or char id; 404 with the closest names)."""
    st = service_state(request)
    sp = st.ws.chat.speaker(operator_name(st, model))
    return json_response(_model(_model_id(st, sp.char_id), sp.char_id, sp.name, _created(st)))


# -- chat completions ----------------------------------------------------------------------
POINT_MARK = "@"
"""``银灰@孤星``: a model id with a story point after it (:func:`model_and_point`)."""


def model_and_point(model: str) -> tuple[str, str | None]:
    """A request's model as (the operator, the story point after ``@``, or None): a client
    that can set nothing but the model (SillyTavern's model box) still sets the point."""
    name, mark, point = model.rpartition(POINT_MARK)
    if not mark or not name.strip() or not point.strip():
        return model, None
    return name.strip(), point.strip()


class ArkloreOptions(BaseModel):
    """arklore's own part of a chat completion body (``"arklore": {...}``)."""

    model_config = ConfigDict(extra="forbid")

    until: str | None = Field(
        None, min_length=1, max_length=200,
        description="the story point the chat is set at (a stage code, an event or chapter "
        "name, an id): nothing later reaches her; wins over a point in the model id",
    )  # fmt: skip


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completion body. arklore reads the fields named here; every other field
    is passed to the chat model as sent (:func:`forwarded`)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(
        min_length=1, max_length=200, description="the operator: name, alias or char id"
    )
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    participants: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=20,
        description="group chat: the other operators present (arklore's extension)",
    )  # fmt: skip
    l3_targets: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=200,
        description="people another memory layer already recalled (left out of the relations)",
    )  # fmt: skip
    arklore: ArkloreOptions | None = None


def message_text(content: Any, where: str) -> str:
    """A message's text: the string, or the text parts of a list of parts (images dropped)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )  # fmt: skip
    raise OpenAIError(400, f"{where}.content must be a string or a list of content parts",
                      "invalid_request_error", "invalid_request", param=f"{where}.content")  # fmt: skip


def split_messages(messages: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """The turn's message (the last ``user`` message) and the history before it (its
    ``user`` and ``assistant`` messages, as text)."""
    last = last_user(messages)
    history = [
        {"role": str(m["role"]), "content": message_text(m.get("content"), f"messages[{i}]")}
        for i, m in enumerate(messages[:last])
        if m["role"] in ("user", "assistant")
    ]
    return message_text(messages[last].get("content"), f"messages[{last}]"), history


def last_user(messages: Sequence[dict[str, Any]]) -> int:
    """The index of the last ``user`` message (400 when there is none, or a role is bad)."""
    last = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ROLES:
            raise OpenAIError(400, f"messages[{i}].role must be one of {', '.join(ROLES)}",
                              "invalid_request_error", "invalid_request",
                              param=f"messages[{i}].role")  # fmt: skip
        if role == "user":
            last = i
    if last is None:
        raise OpenAIError(400, "messages holds no user message: the last one is what the "
                          "operator answers", "invalid_request_error", "invalid_request",
                          param="messages")  # fmt: skip
    return last


def check_messages(messages: Sequence[dict[str, Any]], limit: int) -> tuple[int, str]:
    """The last user message's index and text, the one message arklore reads: within the
    message limit (413) and the text rule (400). The others are only passed on: any length,
    control characters and all (:func:`~arklore.core.text.check_forwarded`); the body limit
    bounds them."""
    last = last_user(messages)
    message = message_text(messages[last].get("content"), f"messages[{last}]")
    check_message(message, limit, what=f"messages[{last}] (the message the operator answers)")
    for i, m in enumerate(messages):
        if i != last:
            check_forwarded(_forwarded_text(m.get("content")), what=f"messages[{i}].content")
    return last, message


def _forwarded_text(content: Any) -> str:
    """Every string a forwarded message's content holds (parts and their fields too; walked
    without recursion, however deep a client nests it)."""
    out: list[str] = []
    todo = [content]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            todo += item
    return "".join(out)


SILLYTAVERN_MAIN = re.compile(
    r"Write (?P<speaker>[^\n]{1,80}?)'s next reply in a fictional chat between "
    r"(?P<cast>[^\n]{1,800}?) and [^\n]{1,80}?\."
)
"""SillyTavern's main prompt (1.12.6's preset: ``Write {{char}}'s next reply in a fictional
chat between {{char}} and {{user}}.``, ``{{charIfNotGroup}}`` for the second in its prompt
manager's default, which lists a group's members joined by ``, ``)."""
SILLYTAVERN_GROUP = re.compile(
    r"\[Start a new group chat\. Group members: (?P<cast>[^\]\n]{1,800})\]"
)
SILLYTAVERN_NUDGE = re.compile(r"\[Write the next reply only as (?P<speaker>[^\]\n]{1,80}?)\.\]")
"""What its group chat adds (``[Start a new group chat. Group members: {{group}}]``, and
after the last message ``[Write the next reply only as {{char}}.]``)."""


def sillytavern_cast(messages: Sequence[dict[str, Any]]) -> tuple[str, list[str]] | None:
    """(speaker, members) as SillyTavern's prompts name them in the client's system messages
    (the group's nudge and member list before its main prompt); None without them (another
    app, or prompts the user rewrote)."""
    speaker: str | None = None
    cast: str | None = None
    main: re.Match[str] | None = None
    for m in messages:
        if m.get("role") not in ("system", "developer"):
            continue
        text = _forwarded_text(m.get("content"))
        main = main or SILLYTAVERN_MAIN.search(text)
        if (nudge := SILLYTAVERN_NUDGE.search(text)) is not None:
            speaker = nudge["speaker"]
        if (group := SILLYTAVERN_GROUP.search(text)) is not None:
            cast = group["cast"]
    if main is not None:
        speaker, cast = speaker or main["speaker"], cast or main["cast"]
    if speaker is None:
        return None
    return speaker.strip(), [n.strip() for n in (cast or speaker).split(", ")]


def played(
    st: ServiceState, model: str, messages: Sequence[dict[str, Any]], participants: Sequence[str]
) -> tuple[str, list[str]]:
    """The operator whose reply this is and the others present: the request's ``model`` and
    ``participants``, unless SillyTavern's main prompt asks for another operator's reply. A
    group chat there sends every member's turn under the connection's one model id, and a
    chat with another card keeps the id set for the last one: the operator it names plays,
    with the group's other members who are operators present (an explicit ``participants``
    wins). A name that is no operator (the user's own character) changes nothing."""
    cast = sillytavern_cast(messages)
    if cast is None:
        return model, list(participants)
    speaker, members = cast
    known = {}
    for name in dict.fromkeys([speaker, *members]):
        with contextlib.suppress(ArkloreError):
            known[name] = st.ws.names.resolve(operator_name(st, name))  # a card's name
    if speaker not in known:
        return model, list(participants)
    others = [n for n in members if n in known and known[n] != known[speaker]]
    return speaker, list(participants) or others


def check_participants(st: ServiceState, model: str, participants: Sequence[str]) -> None:
    """The operator, then each participant, resolved: an error names the field at fault."""
    st.ws.chat.speaker(operator_name(st, model))
    for i, name in enumerate(participants):
        try:
            st.ws.chat.speaker(operator_name(st, name))
        except ArkloreError as exc:
            err = arklore_error(exc)
            err.code, err.param = str(error_body(exc)[1]["error"]), f"participants[{i}]"
            raise err from None


def forwarded(body: ChatCompletionRequest) -> dict[str, Any]:
    """The client's parameters for the chat model, with the chat defaults where it set none."""
    params = dict(body.model_extra or {})
    params.setdefault("temperature", CHAT_TEMPERATURE)
    if "max_tokens" not in params and "max_completion_tokens" not in params:
        params["max_tokens"] = CHAT_MAX_TOKENS
    return params


@router.post(
    "/v1/chat/completions",
    responses=_errors(400, 401, 403, 404, 409, 413, 429, 502, 503, 504),
    openapi_extra={FORWARDED: ["messages"]},
)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
    """The operator's reply: the client's messages with the turn's knowledge placed in them
    (:func:`arklore.chat.layout.messages`), sent to the configured chat model (see the module
    docstring)."""
    st = service_state(request)
    settings = st.ws.settings
    last, message = check_messages(body.messages, settings.max_message_chars)
    if not st.llm_configured():
        raise OpenAIError(
            503,
            f"no LLM configured for task {CHAT_TASK} (set LLM_API_KEY, or LLM_CHAT_BASE_URL "
            "for a local server)",
            "server_error",
            "llm_not_configured",
        )
    model, until = model_and_point(body.model)
    until = (body.arklore.until if body.arklore else None) or until
    check_participants(st, model, body.participants)
    model, present = played(st, model, body.messages, body.participants)
    cache = settings.prompt_layout == "cache"
    turn = await turn_runner(request).run(
        turns.turn, operator_name(st, model), message, (),
        [operator_name(st, p) for p in present], body.l3_targets, steady=cache, until=until,
    )  # fmt: skip
    request.app.state.metrics.observe_turn(turn)
    messages = layout.messages(turn, body.messages, last, settings.prompt_layout,
                               settings.nickname)  # fmt: skip
    relay = st.relay()
    params = forwarded(body)
    headers = {"X-Arklore-Operator": turn.operator_id,
               "X-Arklore-System-Tokens": str(turn.total_tokens)}  # fmt: skip
    if turn.warnings:  # a build that did not finish: a header (streams too) and the body
        headers["X-Arklore-Warning"] = ascii_header(" | ".join(turn.warnings))
    if body.stream:
        return await _stream(request, relay, params, messages, turn, headers)
    try:
        result = await until_gone(request, relay.complete(params, messages, key=turn.operator_id))
    except ClientGone:
        return Response(status_code=GONE)
    _count_tokens(request, result.body.get("usage"))
    body_out = result.body | {"warnings": list(turn.warnings)} if turn.warnings else result.body
    return json_response(body_out, headers=headers)


def ascii_header(text: str) -> str:
    """``text`` as a header value: HTTP headers are Latin-1; anything else is escaped."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


async def _stream(
    request: Request,
    relay: ChatRelay,
    params: dict[str, Any],
    messages: list[Any],
    turn: Turn,
    headers: dict[str, str],
) -> Response:
    """The endpoint's chunks as server-sent events. The first chunk is awaited before the
    answer starts, so a failure to start (429, 5xx, timeout) is still an error status; a
    failure later is an ``error`` event (the OpenAI client raises it), then ``[DONE]``."""
    opts = params.get("stream_options")
    wants_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
    chunks = relay.stream(params, messages, key=turn.operator_id)
    try:
        first = await until_gone(request, anext(chunks, None))
    except ClientGone:
        return Response(status_code=GONE)
    except BaseException:
        await chunks.aclose()
        raise

    def event(chunk: dict[str, Any]) -> bytes | None:
        if "usage" in chunk and chunk["usage"]:
            _count_tokens(request, chunk["usage"])
            if not chunk.get("choices") and not wants_usage:
                return None  # the usage arklore asked for, not the client
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    async def body() -> AsyncIterator[bytes]:
        try:
            if first is not None and (data := event(first)) is not None:
                yield data
            async for chunk in chunks:
                if (data := event(chunk)) is not None:
                    yield data
        except RelayError as exc:
            yield b"data: " + orjson.dumps(relay_error(exc).body()) + b"\n\n"
        finally:  # a client that went away cancels us here: the relay closes the request
            with anyio.CancelScope(shield=True):
                await chunks.aclose()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(
        body(), media_type="text/event-stream",
        headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )  # fmt: skip


def _count_tokens(request: Request, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    request.app.state.metrics.observe_openai_tokens(
        getattr(request.state, "openai_key", LOCAL_LABEL),
        prompt if isinstance(prompt, int) and prompt > 0 else 0,
        completion if isinstance(completion, int) and completion > 0 else 0,
    )


class ClientGone(Exception):
    """The client closed the connection before the answer."""


async def until_gone(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result, or :class:`ClientGone` (``work`` cancelled) when the client
    disconnects first: a chat app's stop button or timeout cancels the upstream request."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    if task.cancelled():
        raise ClientGone
    return task.result()


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        await asyncio.sleep(0.05)  # nothing else is expected once the body was read


async def shutdown(st: ServiceState) -> None:
    """Close the relay's connections (the app's lifespan calls it)."""
    await st.aclose()
