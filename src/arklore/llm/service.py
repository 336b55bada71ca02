"""The ``LLM`` service: cache -> retries -> validation -> ledger around single-attempt
backends, one per (base URL, model, key) resolved from the task's config."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, cast

import orjson
from pydantic import BaseModel, ValidationError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from arklore.core.errors import LLMError, TransientLLMError
from arklore.core.text import strip_json_fence
from arklore.llm.cache import ResponseCache, cache_key
from arklore.llm.client import OpenAIChatModel
from arklore.llm.config import LLMConfig
from arklore.llm.ledger import CostLedger, format_cost_line
from arklore.llm.types import ChatBackend, ChatRequest, ChatResult, CostSummary, LLMFiles, Usage

log = logging.getLogger("arklore.llm")

BackendFactory = Callable[[LLMConfig], ChatBackend]
ConfigFor = Callable[[str], LLMConfig]
"""task name -> its resolved settings (``Settings.llm_config``)."""


class LLM:
    """The :class:`~arklore.llm.types.ChatModel` of every task: caching, retries, JSON
    validation and cost accounting around one backend per endpoint.

    ``no_cache=True`` skips cache *reads* but still writes fresh answers, so a forced
    rerun refreshes the cache instead of leaving stale entries behind.
    """

    def __init__(
        self,
        config_for: ConfigFor,
        files: LLMFiles,
        *,
        secrets: Sequence[str] = (),
        backend_factory: BackendFactory = OpenAIChatModel,
        no_cache: bool = False,
        run_id: str | None = None,
    ) -> None:
        self._config_for = config_for
        self.files = files
        self.secrets = tuple(secrets)
        self.no_cache = no_cache
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.cache = ResponseCache(files.cache)
        self.ledger = CostLedger(files.state)
        self._factory = backend_factory
        self._backends: dict[tuple[str, str, str], ChatBackend] = {}
        self._lock = threading.Lock()

    def config_for(self, task: str) -> LLMConfig:
        return self._config_for(task)

    def cache_key(self, request: ChatRequest) -> str:
        cfg = self.config_for(request.task)
        return cache_key(
            model=request.model or cfg.model,
            messages=request.messages,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            json_mode=request.json_mode and cfg.json_mode,
            extra_body=cfg.extra_body(),
            prompt_version=request.prompt_version,
        )

    def complete(self, request: ChatRequest) -> ChatResult:
        """Answer from cache, or call the endpoint with retries; raise LLMError when exhausted."""
        cfg = self.config_for(request.task)
        request = replace(request, model=request.model or cfg.model)
        key = self.cache_key(request)
        if not self.no_cache:
            hit = self._from_cache(request, key)
            if hit is not None:
                return hit
        backend = self._backend(cfg)
        attempts = 0

        def attempt() -> ChatResult:
            nonlocal attempts
            attempts += 1
            try:
                raw = backend.complete(request)
            except LLMError:  # no answer at all: still an attempt the cost line counts
                self.ledger.record(
                    run_id=self.run_id, task=request.task, key=request.key,
                    model=request.model or "", usage=Usage(), prices=cfg.prices, ok=False,
                )  # fmt: skip
                raise
            ok = False
            try:
                data, parsed = decode(request, raw.content)
                ok = True
            finally:  # tokens are paid even when the answer is unusable
                self.ledger.record(
                    run_id=self.run_id,
                    task=request.task,
                    key=request.key,
                    model=request.model or "",
                    usage=raw.usage,
                    prices=cfg.prices,
                    ok=ok,
                )
            return replace(
                raw,
                data=data,
                parsed=parsed,
                attempts=attempts,
                cache_key=key,
                model=raw.model or request.model or "",
            )

        retrying = Retrying(
            stop=stop_after_attempt(cfg.max_retries + 1),
            wait=_backoff(cfg),
            retry=retry_if_exception_type(TransientLLMError),
            before_sleep=lambda st: log.warning(
                "llm %s %s: attempt %d failed (%s), retrying",
                request.task,
                request.key,
                st.attempt_number,
                st.outcome.exception() if st.outcome else "?",
            ),
            reraise=True,
        )
        try:
            result = retrying(attempt)
        except LLMError as exc:
            exc.attempts = attempts
            raise
        self.cache.put(
            key, task=request.task, model=result.model, content=result.content, usage=result.usage
        )
        return result

    def stream(self, request: ChatRequest) -> Iterator[str]:
        """The answer's text as it is generated (free text: ``json_mode`` is ignored).

        From the cache in one piece when there (unless ``no_cache``); else the endpoint is
        asked to stream, retried with backoff while the stream cannot start (transient
        errors), never once text has been given out. The full answer is cached and its cost
        recorded like :meth:`complete`'s."""
        cfg = self.config_for(request.task)
        request = replace(request, model=request.model or cfg.model, json_mode=False)
        key = self.cache_key(request)
        if not self.no_cache:
            hit = self._from_cache(request, key)
            if hit is not None:
                yield hit.content
                return
        backend = self._backend(cfg)
        parts: list[str] = []
        usage = Usage()
        for attempt in range(cfg.max_retries + 1):
            it = backend.stream(request)
            try:
                first = next(it, None)
            except TransientLLMError as exc:
                if attempt >= cfg.max_retries:
                    raise
                log.warning("llm %s: stream attempt %d failed (%s), retrying",
                            request.task, attempt + 1, exc)  # fmt: skip
                time.sleep(min(cfg.backoff_max, cfg.backoff_initial * 2**attempt))
                continue
            break
        else:  # pragma: no cover - the loop either breaks or raises
            return
        ok = False
        try:
            chunks = it if first is None else _chain(first, it)
            for piece in chunks:
                if isinstance(piece, Usage):
                    usage = piece
                elif piece:
                    parts.append(piece)
                    yield piece
            ok = bool("".join(parts).strip())
        finally:
            self.ledger.record(run_id=self.run_id, task=request.task, key=request.key,
                               model=request.model or "", usage=usage, prices=cfg.prices, ok=ok)  # fmt: skip
        if not ok:
            raise TransientLLMError("empty content")
        self.cache.put(key, task=request.task, model=request.model or "",
                       content="".join(parts), usage=usage)  # fmt: skip

    def summary(self) -> CostSummary:
        return self.ledger.summary(self.run_id)

    def format_cost_line(self) -> str:
        """Cost of this run (this service instance), for the end of every LLM command."""
        return format_cost_line(self.summary())

    def close(self) -> None:
        for backend in self._backends.values():
            backend.close()
        self.cache.close()
        self.ledger.close()

    def _from_cache(self, request: ChatRequest, key: str) -> ChatResult | None:
        cached = self.cache.get(key)
        if cached is None:
            return None
        content, _usage = cached
        try:
            data, parsed = decode(request, content)
        except TransientLLMError:
            return None  # stored under an older schema: ask again
        cfg = self.config_for(request.task)
        self.ledger.record(
            run_id=self.run_id,
            task=request.task,
            key=request.key,
            model=request.model or "",
            usage=Usage(),
            prices=cfg.prices,
            from_cache=True,
        )
        return ChatResult(
            content=content,
            data=data,
            parsed=parsed,
            usage=Usage(),
            from_cache=True,
            attempts=0,
            model=request.model or "",
            cache_key=key,
        )

    def _backend(self, cfg: LLMConfig) -> ChatBackend:
        ident = (cfg.base_url, cfg.model, cfg.api_key)
        with self._lock:
            if ident not in self._backends:
                self._backends[ident] = self._factory(cfg)
            return self._backends[ident]


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def decode(request: ChatRequest, content: str) -> tuple[Any, Any]:
    """Content -> (JSON data, validated value). Empty, non-JSON or schema-invalid output is
    transient: the same prompt usually succeeds on a retry."""
    if not content.strip():
        raise TransientLLMError("empty content")
    data: Any = None
    if request.json_mode:
        try:
            data = orjson.loads(strip_json_fence(content))
        except orjson.JSONDecodeError as exc:
            raise TransientLLMError(f"unparseable JSON: {exc}") from None
    subject = data if request.json_mode else content
    schema = request.schema
    if schema is None:
        return data, subject
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return data, schema.model_validate(subject)
        return data, cast(Callable[[Any], Any], schema)(subject)
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        raise TransientLLMError(f"schema-invalid output: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def _backoff(cfg: LLMConfig) -> Callable[[RetryCallState], float]:
    """Exponential backoff; a server's Retry-After wins when longer, capped at backoff_max."""

    def wait(state: RetryCallState) -> float:
        delay: float = min(cfg.backoff_max, cfg.backoff_initial * 2 ** (state.attempt_number - 1))
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after:
            delay = max(delay, min(float(retry_after), cfg.backoff_max))
        return delay

    return wait
