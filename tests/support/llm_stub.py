"""A real OpenAI-compatible HTTP server for tests (stdlib only, 127.0.0.1, port 0).

Script it with replies matched per request: ``stub.script(marker, *replies)`` answers
requests whose last user message contains ``marker`` with ``replies`` in order (the last
one repeats); otherwise ``stub.queue(*replies)`` answers by call order; otherwise
``stub.default(body)`` (an echo of the last user message as JSON). Every request is
recorded (path, headers, body) and the maximum number of concurrent requests is tracked;
a request whose client hung up before the answer was complete (while the stub waited out a
``delay`` or a stream's ``chunk_delay``) is also listed in ``stub.aborted``.

It also accepts absolute-form request lines, so it can act as an HTTP proxy for a
made-up host like ``http://api.deepseek.test`` (host-dependent behaviour, no network).

Use the ``llm_stub`` fixture: add ``pytest_plugins = ["support.llm_stub"]`` to
tests/conftest.py (or ``from support.llm_stub import llm_stub_fixture`` in the test module).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from arklore.llm import LLM, LLMFiles

CHAT_PATHS = {"/v1/chat/completions", "/chat/completions"}


@dataclass
class Reply:
    """One scripted answer: a chat completion (``status`` 200) or an HTTP error."""

    status: int = 200
    content: str | None = ""
    headers: dict[str, str] = field(default_factory=dict)
    error: str = ""
    delay: float = (
        0.0  # seconds to sleep before answering (longer than the client timeout = timeout)
    )
    usage: dict[str, Any] | None = None  # None: DeepSeek-style default usage
    raw_body: bytes | None = None  # send these bytes verbatim (malformed HTTP body)
    chunk_delay: float = 0.0  # streams: seconds before each chunk

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj, ensure_ascii=False), **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def empty(cls) -> Reply:
        return cls(content="")

    @classmethod
    def malformed(cls) -> Reply:
        return cls(content='{"relations": [ {"a": 1,')

    @classmethod
    def rate_limited(cls, retry_after: float = 0) -> Reply:
        return cls(status=429, error="rate limited", headers={"Retry-After": str(retry_after)})

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls(status=status, error="internal error")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls(status=401, error="invalid api key")

    @classmethod
    def slow(cls, seconds: float, then: Reply | None = None) -> Reply:
        base = then or cls.json({"ok": True})
        return cls(**{**base.__dict__, "delay": seconds})


@dataclass(frozen=True)
class Recorded:
    path: str
    host: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    raw: bytes

    @property
    def last_user(self) -> str:
        users = [m for m in self.body.get("messages", []) if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


def default_reply(body: dict[str, Any]) -> Reply:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return Reply.json({"echo": users[-1]["content"] if users else ""})


class StubServer:
    """Start with ``start()`` (or the fixture); ``url`` is the base URL to configure."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.aborted: list[Recorded] = []  # the client hung up before the answer was complete
        self.default: Callable[[dict[str, Any]], Reply] = default_reply
        self.in_flight = 0
        self.max_in_flight = 0
        self._rules: list[tuple[str, deque[Reply]]] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # scripting -----------------------------------------------------------
    def script(self, marker: str, *replies: Reply) -> None:
        """Requests whose last user message contains ``marker`` get ``replies`` in order."""
        with self._lock:
            self._rules.append((marker, deque(replies)))

    def queue(self, *replies: Reply) -> None:
        """Unmatched requests get these in call order, then ``default``."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget the scripts and the requests (a stub shared by several tests)."""
        with self._lock:
            self.requests.clear()
            self.aborted.clear()
            self._rules.clear()
            self._queue.clear()
            self.max_in_flight = 0

    def calls(self, marker: str = "") -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if marker in r.last_user]

    # lifecycle -------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                stub._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # internals -------------------------------------------------------------
    def _pick(self, body: dict[str, Any], last_user: str) -> Reply:
        with self._lock:
            for marker, replies in self._rules:
                if marker in last_user and replies:
                    return replies.popleft() if len(replies) > 1 else replies[0]
            if self._queue:
                return self._queue.popleft()
        return self.default(body)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        rec = Recorded(
            path=parsed.path,
            host=parsed.hostname or h.headers.get("Host") or "",
            headers={k.lower(): v for k, v in h.headers.items()},
            body=body,
            raw=raw,
        )
        with self._lock:
            self.requests.append(rec)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if parsed.path not in CHAT_PATHS:
                self._send(h, 404, {"error": {"message": f"no route {parsed.path}"}})
                return
            reply = self._pick(body, rec.last_user)
            if reply.delay and self._wait(h, reply.delay):
                return
            if reply.raw_body is not None:
                self._send_bytes(h, reply.status, reply.raw_body, reply.headers)
            elif reply.status != 200:
                err = {"error": {"message": reply.error, "type": "stub", "code": reply.status}}
                self._send(h, reply.status, err, reply.headers)
            elif body.get("stream"):
                self._send_stream(h, body, reply)
            else:
                self._send(h, 200, self._completion(body, reply), reply.headers)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and went away
            with self._lock:
                self.aborted.append(rec)
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        usage = reply.usage or {
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "total_tokens": 110,
            "prompt_cache_hit_tokens": 40,
            "prompt_cache_miss_tokens": 60,
        }
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }

    def _wait(self, h: BaseHTTPRequestHandler, seconds: float) -> bool:
        """Sleep ``seconds`` watching the connection: ConnectionResetError as soon as the
        client hangs up; True when the stub is stopping."""
        end = time.monotonic() + seconds
        # poll, not select: a test process that has opened many files hands out descriptors
        # above select's 1024 limit, and select's ValueError read as a client hanging up
        watch = select.poll()
        watch.register(h.connection, select.POLLIN)
        while (left := end - time.monotonic()) > 0:
            if self._stopping.is_set():
                return True
            try:
                readable = watch.poll(int(min(left, 0.02) * 1000))
                if readable and not h.connection.recv(1, socket.MSG_PEEK):
                    raise ConnectionResetError("client hung up")
            except OSError as exc:
                raise ConnectionResetError("client hung up") from exc
        return False

    def _send_stream(self, h: BaseHTTPRequestHandler, body: dict[str, Any], reply: Reply) -> None:
        """The reply as server-sent events, a few characters per chunk, then the usage."""
        full = self._completion(body, reply)
        text = reply.content or ""
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()

        def event(obj: Any) -> None:
            h.wfile.write(b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n")
            h.wfile.flush()

        base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk",
                "created": full["created"], "model": full["model"]}  # fmt: skip
        for i in range(0, len(text), 3):
            if reply.chunk_delay and self._wait(h, reply.chunk_delay):
                return
            delta = {"content": text[i : i + 3]}
            event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        event({**base, "choices": [], "usage": full["usage"]})
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()
        h.close_connection = True

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        obj: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._send_bytes(h, status, json.dumps(obj).encode(), headers)

    @staticmethod
    def _send_bytes(
        h: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None
    ) -> None:
        headers = {"Content-Type": "application/json", **(headers or {})}  # a script may override
        h.send_response(status)
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()


@pytest.fixture(name="llm_stub")
def llm_stub_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubServer]:
    """A running stub; proxies are bypassed for 127.0.0.1 so requests never leave the box."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    stub = StubServer().start()
    try:
        yield stub
    finally:
        stub.stop()


TEST_KEY = "sk-test-SECRET-7f3a9c1e5b"
"""A recognisable fake key: tests grep every written file and the logs for it."""


def stub_env(stub: StubServer, **overrides: str) -> dict[str, str]:
    """An explicit LLM environment pointing at the stub, with tiny timeouts and backoff.

    Passed to :func:`make_llm` so the real environment can never route a test elsewhere.
    """
    env = {
        "LLM_BASE_URL": stub.url,
        "LLM_MODEL": "stub-model",
        "LLM_API_KEY": TEST_KEY,
        "LLM_TIMEOUT": "0.5",
        "LLM_MAX_RETRIES": "3",
        "LLM_BACKOFF_INITIAL": "0.01",
        "LLM_BACKOFF_MAX": "0.05",
    }
    env.update(overrides)
    return env


def llm_files(home: Path) -> LLMFiles:
    """The LLM layer's files under ``home``, as the workspace lays them out."""
    from arklore.workspace import Paths

    return Paths(Path(home)).llm


def make_llm(home: Path, env: dict[str, str], **kw: Any) -> LLM:
    """An LLM service on ``home`` configured from an explicit ``env`` (never the real one)."""
    from arklore.settings import Settings

    settings = Settings.from_env({**env, "ARKLORE_HOME": str(home)})
    return LLM(settings.llm.config, llm_files(home), secrets=settings.llm.secrets(), **kw)
