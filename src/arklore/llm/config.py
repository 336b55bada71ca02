"""What one LLM task talks to: endpoint, model, key, timeouts, retries and prices.

Plain data: :mod:`arklore.settings` builds an :class:`LLMConfig` per task from the ``LLM_*``
environment variables (the table of variables is there), so nothing here reads the
environment. Every task (``relations``, ``relation_descriptions``, ``events``, ``distill_a``,
...) uses the global settings unless ``LLM_<TASK>_BASE_URL`` / ``_MODEL`` / ``_API_KEY``
override them (``<TASK>`` = the task name upper-cased, non-alphanumerics as ``_``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlparse

from arklore.core.errors import ConfigError

DEFAULT_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-flash"

# Configurable defaults (USD per million tokens) for deepseek-flash; override with
# LLM_PRICE_INPUT_HIT / LLM_PRICE_INPUT_MISS / LLM_PRICE_OUTPUT. Check the provider's page.
DEFAULT_PRICE_INPUT_HIT = 0.07
DEFAULT_PRICE_INPUT_MISS = 0.27
DEFAULT_PRICE_OUTPUT = 1.10

NO_KEY_PLACEHOLDER = "EMPTY"  # local servers (Ollama, vLLM, llama.cpp) ignore the key


@dataclass(frozen=True)
class Prices:
    """USD per million tokens; one place so cost lines and estimates agree."""

    input_hit: float = DEFAULT_PRICE_INPUT_HIT
    input_miss: float = DEFAULT_PRICE_INPUT_MISS
    output: float = DEFAULT_PRICE_OUTPUT

    def cost(self, hit: int, miss: int, output: int) -> float:
        return (hit * self.input_hit + miss * self.input_miss + output * self.output) / 1e6


@dataclass(frozen=True)
class LLMConfig:
    """Resolved settings for one task. ``api_key`` is kept out of repr on purpose."""

    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    api_key: str = field(default="", repr=False)
    json_mode: bool = True
    timeout: float = 120.0
    max_retries: int = 3
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    prices: Prices = field(default_factory=Prices)

    @property
    def is_deepseek(self) -> bool:
        """DeepSeek needs ``thinking: disabled`` so flash models answer without reasoning."""
        return "deepseek" in (urlparse(self.base_url).hostname or "")

    def extra_body(self) -> dict[str, object]:
        """Provider-specific request fields (also part of the cache key)."""
        return {"thinking": {"type": "disabled"}} if self.is_deepseek else {}

    def key_for_client(self) -> str:
        """The key to hand to the HTTP client; hosted DeepSeek without a key is a config error."""
        if self.api_key:
            return self.api_key
        if self.is_deepseek:
            raise ConfigError(
                "LLM_API_KEY is not set", hint="export LLM_API_KEY, or point LLM_BASE_URL elsewhere"
            )
        return NO_KEY_PLACEHOLDER


def task_var(task: str, name: str) -> str:
    """``relation_descriptions`` + ``MODEL`` -> ``LLM_RELATION_DESCRIPTIONS_MODEL``."""
    return f"LLM_{re.sub(r'[^A-Za-z0-9]+', '_', task).upper()}_{name}"


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every API key in ``text`` with ``***`` (keys must never reach disk or logs)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
