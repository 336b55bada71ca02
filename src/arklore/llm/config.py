"""LLM settings from the environment, with per-task overrides.

Every LLM task (``relations``, ``relation_descriptions``, ``events``, ``distill``, ...)
reads the global ``LLM_*`` variables and may override the endpoint per task:

==============================  ==============================================  =========================
variable                        meaning                                         default
==============================  ==============================================  =========================
``LLM_BASE_URL``                any OpenAI-compatible endpoint (Ollama, vLLM,   ``https://api.deepseek.com``
                                llama.cpp: just change the URL)
``LLM_MODEL``                   model name sent to the endpoint                 ``deepseek-flash``
``LLM_API_KEY``                 bearer key; read from the environment only,     (none)
                                never written anywhere
``LLM_<TASK>_BASE_URL``         per-task endpoint, e.g. ``LLM_EVENTS_BASE_URL`` ``LLM_BASE_URL``
``LLM_<TASK>_MODEL``            per-task model, e.g. ``LLM_RELATIONS_MODEL``    ``LLM_MODEL``
``LLM_<TASK>_API_KEY``          per-task key (when the task uses another host)  ``LLM_API_KEY``
``LLM_JSON_MODE``               send ``response_format=json_object``            ``1`` (0 for endpoints
                                                                                without JSON mode)
``LLM_TIMEOUT``                 seconds per HTTP request                        ``120``
``LLM_MAX_RETRIES``             retries after the first attempt                 ``3``
``LLM_BACKOFF_INITIAL``         first backoff wait, doubled each retry (s)      ``1``
``LLM_BACKOFF_MAX``             longest wait, also caps ``Retry-After`` (s)     ``30``
``LLM_PRICE_INPUT_HIT``         USD per million cached input tokens             ``0.07``
``LLM_PRICE_INPUT_MISS``        USD per million uncached input tokens           ``0.27``
``LLM_PRICE_OUTPUT``            USD per million output tokens                   ``1.10``
==============================  ==============================================  =========================

``<TASK>`` is the task name upper-cased with non-alphanumerics as ``_``
(``relation_descriptions`` -> ``LLM_RELATION_DESCRIPTIONS_MODEL``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
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

    @classmethod
    def from_env(cls, task: str | None = None, env: Mapping[str, str] | None = None) -> LLMConfig:
        """Global ``LLM_*`` settings, with ``LLM_<TASK>_*`` overrides when ``task`` is given."""
        env = os.environ if env is None else env

        def pick(name: str, default: str) -> str:
            if task:
                value = env.get(task_var(task, name))
                if value:
                    return value
            return env.get(f"LLM_{name}") or default

        return cls(
            base_url=pick("BASE_URL", DEFAULT_BASE_URL).rstrip("/"),
            model=pick("MODEL", DEFAULT_MODEL),
            api_key=pick("API_KEY", ""),
            json_mode=_bool(env, "LLM_JSON_MODE", True),
            timeout=_float(env, "LLM_TIMEOUT", 120.0),
            max_retries=int(_float(env, "LLM_MAX_RETRIES", 3)),
            backoff_initial=_float(env, "LLM_BACKOFF_INITIAL", 1.0),
            backoff_max=_float(env, "LLM_BACKOFF_MAX", 30.0),
            prices=Prices(
                input_hit=_float(env, "LLM_PRICE_INPUT_HIT", DEFAULT_PRICE_INPUT_HIT),
                input_miss=_float(env, "LLM_PRICE_INPUT_MISS", DEFAULT_PRICE_INPUT_MISS),
                output=_float(env, "LLM_PRICE_OUTPUT", DEFAULT_PRICE_OUTPUT),
            ),
        )

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


def secrets_from_env(env: Mapping[str, str] | None = None) -> list[str]:
    """Every configured API key, so writers can redact them defensively."""
    env = os.environ if env is None else env
    return [
        v
        for k, v in env.items()
        if k.startswith("LLM_") and k.endswith("API_KEY") and v and len(v) >= 4
    ]


def redact(text: str, secrets: list[str] | None = None) -> str:
    """Replace any API key in ``text`` with ``***`` (keys must never reach disk or logs)."""
    for secret in secrets_from_env() if secrets is None else secrets:
        text = text.replace(secret, "***")
    return text


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise ConfigError(f"{name}={raw!r} must not be negative")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean", hint="use 1 or 0")
