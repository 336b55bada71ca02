"""One HTTP attempt against any OpenAI-compatible endpoint, errors sorted into
transient (retry) and permanent (give up). Retries, caching and costs live in ``service``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from arklore.core.errors import LLMError, PermanentLLMError, TransientLLMError
from arklore.llm.config import LLMConfig, redact
from arklore.llm.types import ChatRequest, ChatResult, Usage

if TYPE_CHECKING:
    import openai

TRANSIENT_STATUS = {408, 409, 425, 429}  # plus every 5xx

# ``openai`` is imported where a request is made, not with this module: it takes about a
# second to import, which every `arklore` command paid, also those that never call a model.


class OpenAIChatModel:
    """A single-attempt ChatModel over the official ``openai`` client (its own retries off)."""

    def __init__(self, config: LLMConfig) -> None:
        import openai

        self.config = config
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.key_for_client(),
            timeout=config.timeout,
            max_retries=0,
        )

    def complete(self, request: ChatRequest) -> ChatResult:
        """Send ``request`` once; raise Transient/PermanentLLMError on failure."""
        import openai

        kwargs: dict[str, Any] = {
            "model": request.model or self.config.model,
            "messages": request.messages,
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.json_mode and self.config.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        extra = self.config.extra_body()
        if extra:
            kwargs["extra_body"] = extra
        try:
            response = self._client.chat.completions.create(**kwargs)
        except openai.APIError as exc:
            raise classify(exc, (self.config.api_key,)) from None
        except ValueError as exc:  # a 200 whose body is not JSON (proxy error page...)
            raise TransientLLMError(f"unusable response body: {_short(str(exc))}") from None
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise TransientLLMError("response is not a chat completion")
        content = (choices[0].message.content if choices else None) or ""
        return ChatResult(content=content, usage=parse_usage(response.usage), model=kwargs["model"])

    def stream(self, request: ChatRequest) -> Iterator[str | Usage]:
        """Send ``request`` once as a stream: the text deltas as they come, then the usage
        (when the endpoint reports it). Transient/PermanentLLMError as :meth:`complete`."""
        import openai

        kwargs: dict[str, Any] = {
            "model": request.model or self.config.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        extra = self.config.extra_body()
        if extra:
            kwargs["extra_body"] = extra
        try:
            response = self._client.chat.completions.create(**kwargs)
            for chunk in response:
                choices = getattr(chunk, "choices", None) or []
                for ch in choices:
                    delta = getattr(getattr(ch, "delta", None), "content", None)
                    if delta:
                        yield delta
                if getattr(chunk, "usage", None) is not None:
                    yield parse_usage(chunk.usage)
        except openai.APIError as exc:
            raise classify(exc, (self.config.api_key,)) from None
        except ValueError as exc:
            raise TransientLLMError(f"unusable stream: {_short(str(exc))}") from None

    def close(self) -> None:
        self._client.close()


def classify(exc: openai.APIError, secrets: Sequence[str] = ()) -> LLMError:
    """Map an openai exception to our hierarchy; the message never carries the key."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return TransientLLMError("request timed out", hint="raise LLM_TIMEOUT or retry later")
    if isinstance(exc, openai.APIConnectionError):
        down = TransientLLMError("could not connect to the endpoint", hint="check LLM_BASE_URL")
        down.unreachable = True  # refused, DNS, TLS: no request will get through
        return down
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = redact(_short(exc.message), secrets)
        if status in TRANSIENT_STATUS or status >= 500:
            busy = TransientLLMError(f"HTTP {status}: {detail}")
            busy.retry_after = _retry_after(exc)
            return busy
        refused = PermanentLLMError(f"HTTP {status}: {detail}")
        refused.unreachable = status in (401, 403)  # a bad key fails every request alike
        return refused
    return TransientLLMError(f"unusable response: {redact(_short(str(exc)), secrets)}")


def parse_usage(usage: Any) -> Usage:
    """DeepSeek reports ``prompt_cache_hit/miss_tokens``; OpenAI-style servers report
    ``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``; handle both."""
    if usage is None:
        return Usage()
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    hit = getattr(usage, "prompt_cache_hit_tokens", None)
    miss = getattr(usage, "prompt_cache_miss_tokens", None)
    if hit is not None or miss is not None:
        hit, miss = int(hit or 0), int(miss or 0)
        if miss == 0 and prompt > hit:
            miss = prompt - hit
    else:
        details = getattr(usage, "prompt_tokens_details", None)
        hit = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
        miss = max(prompt - hit, 0)
    return Usage(
        prompt_cache_hit_tokens=hit, prompt_cache_miss_tokens=miss, completion_tokens=completion
    )


def _retry_after(exc: openai.APIStatusError) -> float | None:
    raw = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
