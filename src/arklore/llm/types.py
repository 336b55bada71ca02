"""The small interface every LLM task codes against, so tasks and tests can swap models."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson
from pydantic import BaseModel

if TYPE_CHECKING:  # config imports nothing of the LLM layer; a type only
    from arklore.llm.config import LLMConfig

Message = dict[str, str]


@dataclass(frozen=True)
class CostSummary:
    """Totals over ledger rows (one run, or everything)."""

    requests: int = 0
    cached: int = 0
    failed: int = 0
    input_hit: int = 0
    input_miss: int = 0
    output: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class LLMFiles:
    """Where the LLM layer keeps its state (the workspace decides, under ARKLORE_HOME)."""

    cache: Path  # responses, shared by every run and task
    state: Path  # cost ledger and job progress
    errors: Path  # one JSON line per job given up on


Validator = type[BaseModel] | Callable[[Any], Any]
"""A pydantic model (validated with ``model_validate``) or a callable that returns the
parsed value and raises (``ValueError``, ``ValidationError``...) on bad output."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion. ``task`` picks the per-task config; ``key`` groups work (a stage).

    ``model=None`` means the task's configured model. ``schema`` is not part of the cache
    key: bump ``prompt_version`` when the prompt or the expected shape changes.
    """

    task: str
    messages: list[Message]
    key: str = ""
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    json_mode: bool = True
    prompt_version: str = "1"
    schema: Validator | None = field(default=None, compare=False, repr=False)

    def fingerprint(self) -> str:
        """Stable hash of everything that defines the request (for resume bookkeeping)."""
        return sha256_json(
            {
                "task": self.task,
                "key": self.key,
                "model": self.model,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "json_mode": self.json_mode,
                "prompt_version": self.prompt_version,
                "messages": self.messages,
            }
        )


@dataclass(frozen=True)
class Usage:
    """Tokens as the endpoint reports them; input split into prompt-cache hit and miss."""

    prompt_cache_hit_tokens: int = 0
    prompt_cache_miss_tokens: int = 0
    completion_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        return self.prompt_cache_hit_tokens + self.prompt_cache_miss_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_cache_hit_tokens": self.prompt_cache_hit_tokens,
            "prompt_cache_miss_tokens": self.prompt_cache_miss_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        data = data or {}
        return cls(**{k: int(data.get(k) or 0) for k in cls().to_dict()})


@dataclass(frozen=True)
class ChatResult:
    """A usable answer: raw ``content``, decoded JSON ``data`` (json mode) and the
    validator's output ``parsed`` (``data`` itself when no schema was given).

    ``usage`` is what this answer cost now: all zero when ``from_cache``.
    """

    content: str
    data: Any = None
    parsed: Any = None
    usage: Usage = field(default_factory=Usage)
    from_cache: bool = False
    attempts: int = 1
    model: str = ""
    cache_key: str = ""


@runtime_checkable
class ChatModel(Protocol):
    """What every LLM task codes against: the real ``LLM`` service, or a test fake.

    ``complete`` raises ``TransientLLMError`` / ``PermanentLLMError`` (from
    ``arklore.core.errors``) when no usable answer could be had, with ``attempts`` set. The
    rest is what a batch run needs besides answers: the task's resolved settings (its model
    for resume, its prices for ``max_cost``), where progress and errors go, the run's id for
    the errors file, the keys to keep out of it, and what the run spent so far.
    """

    files: LLMFiles
    run_id: str
    secrets: tuple[str, ...]

    def complete(self, request: ChatRequest) -> ChatResult: ...

    def config_for(self, task: str) -> LLMConfig: ...

    def summary(self) -> CostSummary: ...


class ChatBackend(Protocol):
    """One endpoint as the ``LLM`` service drives it: a single attempt per call, no cache,
    no retries (:class:`~arklore.llm.client.OpenAIChatModel`, or a test's stand-in).

    ``stream`` yields the text deltas as they come, then the ``Usage`` when the endpoint
    reports it."""

    def complete(self, request: ChatRequest) -> ChatResult: ...

    def stream(self, request: ChatRequest) -> Iterator[str | Usage]: ...

    def close(self) -> None: ...


def sha256_json(obj: Any) -> str:
    """sha256 of canonical JSON (sorted keys), the basis of every cache/resume key."""
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()
