"""Relaying a chat app's own chat completion to the configured endpoint (the OpenAI-compatible
service route): the client's body goes out as sent, but for the model and the messages the
caller sets; the endpoint's answer comes back as it was given.

Unlike :class:`~arklore.llm.service.LLM` (the tasks' path), a relayed request is

* **never cached**: it is sampled (a regenerate or a swipe must give a new answer, not the
  stored one), keyed on a whole private conversation (no rerun would ever hit it), and the
  cache would keep people's chats on disk;
* **sent once, never retried**: the chat app sees the endpoint's 429 or 5xx and decides
  itself (they all have a retry button and their own backoff); a retry here would hide rate
  limits, multiply the wait behind the app's own timeout, and a stream cannot be retried once
  text went out anyway;
* **counted** in the cost ledger like every other request (task ``chat``).

It is async: the service awaits it in the event loop, so a client that goes away cancels the
upstream request (the connection is closed) instead of leaving a thread reading it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio

from arklore.core.errors import LLMError
from arklore.llm.client import parse_usage
from arklore.llm.config import LLMConfig, redact
from arklore.llm.ledger import CostLedger
from arklore.llm.types import Usage

if TYPE_CHECKING:
    import openai

Failure = Literal["status", "timeout", "unreachable", "bad_response"]


class RelayError(LLMError):
    """The endpoint gave no usable answer. ``failure`` says how; ``status`` is the endpoint's
    HTTP status (``failure == "status"``), ``retry_after`` its Retry-After in seconds.
    The message is the endpoint's own (shortened, keys removed)."""

    def __init__(
        self,
        failure: Failure,
        message: str,
        *,
        status: int | None = None,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        self.failure = failure
        self.status = status
        self.retry_after = retry_after


@dataclass
class Relayed:
    """A whole answer: the endpoint's JSON body and the tokens it reports."""

    body: dict[str, Any]
    usage: Usage


class ChatRelay:
    """One endpoint (``config``: the task's base URL, model, key and timeout), one client
    kept open for the process; :meth:`aclose` at shutdown."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        task: str,
        secrets: Sequence[str] = (),
        ledger: CostLedger | None = None,
        run_id: str = "",
    ) -> None:
        self.config = config
        self.task = task
        self.secrets = tuple(secrets) + ((config.api_key,) if config.api_key else ())
        self.ledger = ledger
        self.run_id = run_id
        self._client: openai.AsyncOpenAI | None = None

    def _openai(self) -> openai.AsyncOpenAI:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=self.config.key_for_client(),
                timeout=self.config.timeout,
                max_retries=0,
            )
        return self._client

    def _kwargs(self, body: dict[str, Any], messages: list[Any], stream: bool) -> dict[str, Any]:
        """The request: the client's parameters as sent (the provider's own extras first, so
        the client's win), the configured model, ``messages``; streams report their usage."""
        params = {**self.config.extra_body(), **body}
        for k in ("model", "messages", "stream"):
            params.pop(k, None)
        if stream:
            opts = params.get("stream_options")
            params["stream_options"] = {**(opts if isinstance(opts, dict) else {}),
                                        "include_usage": True}  # fmt: skip
        return {"model": self.config.model, "messages": messages, "stream": stream,
                "extra_body": params}  # fmt: skip

    async def complete(
        self, body: dict[str, Any], messages: list[Any], *, key: str = ""
    ) -> Relayed:
        """Send once and return the endpoint's answer; :class:`RelayError` otherwise."""
        usage, ok = Usage(), False
        try:
            response = await self._openai().chat.completions.create(
                **self._kwargs(body, messages, stream=False)
            )
            out = response.model_dump(mode="json", exclude_unset=True)
            if not isinstance(out.get("choices"), list):
                raise RelayError("bad_response", "the endpoint's answer is not a chat completion")
            usage, ok = parse_usage(response.usage), True
            return Relayed(out, usage)
        except Exception as exc:
            raise self._error(exc) from None
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled request is still counted
                await self._record(key, usage, ok)

    async def stream(
        self, body: dict[str, Any], messages: list[Any], *, key: str = ""
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The endpoint's chunks as sent (the last one carries the usage); the request is
        closed when the caller stops early or is cancelled (a client that went away).

        Errors before the first chunk are raised from the first ``__anext__`` (the caller can
        still answer with a status); later ones in the middle of the iteration."""
        usage, ok = Usage(), False
        response = None
        try:
            try:
                response = await self._openai().chat.completions.create(
                    **self._kwargs(body, messages, stream=True)
                )
                n = 0
                async for chunk in response:
                    n += 1
                    if getattr(chunk, "usage", None) is not None:
                        usage = parse_usage(chunk.usage)
                    yield chunk.model_dump(mode="json", exclude_unset=True)
                if not n:  # not a stream at all (a proxy's error page with status 200...)
                    raise RelayError("bad_response", "the endpoint's answer held no stream chunk")
                ok = True
            except (GeneratorExit, asyncio.CancelledError):
                raise
            except Exception as exc:
                raise self._error(exc) from None
        finally:  # also when cancelled: close the connection (the endpoint stops), count it
            with anyio.CancelScope(shield=True):
                if response is not None:
                    await response.close()
                await self._record(key, usage, ok)

    async def _record(self, key: str, usage: Usage, ok: bool) -> None:
        if self.ledger is None:
            return
        ledger = self.ledger
        await asyncio.to_thread(
            lambda: ledger.record(
                run_id=self.run_id, task=self.task, key=key, model=self.config.model,
                usage=usage, prices=self.config.prices, ok=ok,
            )
        )  # fmt: skip

    def _error(self, exc: Exception) -> Exception:
        """The openai client's exception as a :class:`RelayError` (anything else unchanged)."""
        import openai

        if isinstance(exc, RelayError):
            return exc
        if isinstance(exc, openai.APITimeoutError):
            return RelayError(
                "timeout", f"the endpoint did not answer within {self.config.timeout:g} s"
            )
        if isinstance(exc, openai.APIConnectionError):
            return RelayError("unreachable", "could not connect to the endpoint")
        if isinstance(exc, openai.APIStatusError):
            ra = exc.response.headers.get("retry-after") if exc.response is not None else None
            return RelayError("status", self._short(exc.message), status=exc.status_code,
                              retry_after=ra)  # fmt: skip
        if isinstance(exc, openai.APIError):  # an error event in the middle of a stream
            return RelayError("bad_response", self._short(exc.message))
        if isinstance(exc, ValueError):  # a 200 whose body is not JSON (proxy error page...)
            return RelayError("bad_response", f"unusable answer: {self._short(str(exc))}")
        return exc

    def _short(self, text: str, limit: int = 300) -> str:
        text = redact(" ".join(str(text).split()), self.secrets)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
