"""Every setting arklore has, read from the environment in this one module and validated.

:meth:`Settings.from_env` is called by the entry points only (the ``arklore`` command, the HTTP
service factory, the default workspace behind the module-level API); library code receives
values, never the environment. A bad value is a :class:`~arklore.core.errors.ConfigError` with
one line naming the variable, its value and what is allowed.

==============================  ==================================================  ==========================
variable                        meaning                                             default
==============================  ==================================================  ==========================
``ARKLORE_HOME``                where arklore keeps all its state (resolved to one  ``<checkout>/var`` from a
                                absolute path; see :mod:`arklore.locations`)        source checkout, else
                                                                                    ``~/.local/share/arklore``
``ARKLORE_GAMEDATA``            Kengxxiao/ArknightsGameData checkout (zh_CN)        ``../shared/arknights/…``
``ARKLORE_ASTR``                050644zf/ArknightsStoryJson checkout                next to the checkout, else
                                                                                    ``arklore config``
``ARKLORE_ALIASES``             the user alias file (``[[alias]]``/``[[block]]``)   the packaged
                                                                                    ``data/aliases.toml``
``ARKLORE_EMBEDDER``            ``e5-small`` | ``bge-small-zh`` | ``hash``          ``e5-small``
``ARKLORE_E5_THREADS``          threads of the e5 embedder (0: the CPU count, ≤ 8;   ``0``
                                the server: 1 per process)
``ARKLORE_WORKERS``             processes that parse story files during an ingest   the CPU count (at most 8)
                                and, during a build, embed the relation documents
                                ahead and compute her scenes
``ARKLORE_RAG_TOKEN_BUDGET``    tokens of the relation block per chat turn          ``800``
``ARKLORE_MAX_MESSAGE_CHARS``   longest chat message accepted (characters)          ``8000``
``ARKLORE_MAX_BODY_BYTES``      largest HTTP request body the service reads; a      ``8388608`` (8 MiB)
                                larger one is refused (413) before it is read
``CHROMA_HOST``/``CHROMA_PORT`` a Chroma server instead of the embedded index       (embedded) / ``8000``
``ARKLORE_CHARS_DIR``           a user folder of ``.char`` profiles (read only;     (none)
                                wins over ``$ARKLORE_HOME/chars``)
``ARKLORE_MANIFEST``            TOML file ``operators = [...]``: the operators an   (none: every operator)
                                app exposes; any other is "not available"
``ARKLORE_MATRIX``              your relationship matrix (TOML), layered over the   (none: the packaged
                                packaged one by graph builds (your view of a pair   ``data/relationship_matrix.toml``
                                wins); verify-anchors reads it too                  alone)
``ARKLORE_MATRIX_REPLACE``      1: your matrix replaces the packaged one instead    ``0``
``ARKLORE_CONFIRMED_ONLY``      1: graph builds use only the curated relations a    ``0``
                                person confirmed (``arklore curate confirm``);
                                a rejected one is left out either way
``ARKLORE_NPC_MIN_LINES``       lines a named NPC speaks in the corpus to become a  ``20``
                                graph node (the upstream rule: 30)
``ARKLORE_NPC_MIN_SHARE``       share of one story's lines that also makes an NPC   ``0`` (off)
                                a node (the upstream rule: 0.04)
``ARKLORE_UNTIL``               the story point every chat is set at unless a       (none: the whole story)
                                request names one (a spoiler-free deployment): a
                                stage code, an event or chapter name, an id
``ARKLORE_PERSONA_TOKEN_BUDGET`` tokens of the persona block per chat turn          ``1200``
``ARKLORE_MEMORY_TOKEN_BUDGET`` tokens of the memories block per chat turn          ``300``
``ARKLORE_MEMORY_K``            memories (or appearances) per chat turn             ``3``
``ARKLORE_GROUP_TOKEN_BUDGET``  tokens of the group-chat block per chat turn        ``400``
``ARKLORE_DOCTOR_TOKEN_BUDGET`` tokens of her view of the Doctor per chat turn      ``250``
``ARKLORE_SPEECH_TOKEN_BUDGET`` tokens of her way of speaking per chat turn         ``160``
``ARKLORE_EXEMPLAR_TOKEN_BUDGET`` tokens of her own story lines per chat turn       ``280``
``ARKLORE_NOW_TOKEN_BUDGET``    tokens of where she stands now per chat turn        ``160``
``ARKLORE_EXEMPLARS_K``         scenes of her own lines per chat turn (at most)     ``5``
``ARKLORE_NICKNAME``            what ``{@nickname}`` (the player's name in the      ``博士``
                                script) becomes in anything a chat receives
``ARKLORE_TIER_C_RELATIONS``    1: relation context for operators without a         ``0``
                                profile (tier C) too
``ARKLORE_TURN_PROCESSES``      worker processes per ``arklore serve`` process     ``1``
                                assembling turns (0: its thread pool; a turn in
                                the event loop's process slows every request)
``ARKLORE_PROMPT_LAYOUT``       where the OpenAI-compatible endpoint puts a turn's  ``cache``
                                knowledge: ``cache`` (what stays the same all chat
                                opens the system message, the knowledge for this
                                message goes just before it: a provider's prompt
                                cache keeps the rest) or ``system`` (all of it in
                                one system message before the client's messages)
``ARKLORE_ADMIN_TOKEN``         bearer token of the service's write endpoints       (none: writes disabled)
                                (a secret: never logged or shown)
``ARKLORE_API_KEYS``            comma-separated bearer tokens of the chat apps      (none: only clients on
                                using the OpenAI-compatible routes (secrets: never  this machine; ``serve``
                                logged or shown; ``/metrics`` labels them by        refuses to listen
                                :func:`api_key_label`)                              elsewhere)
``LLM_BASE_URL``                any OpenAI-compatible endpoint                      ``https://api.deepseek.com``
``LLM_MODEL``                   model name sent to the endpoint                     ``deepseek-flash``
``LLM_API_KEY``                 bearer key (never written anywhere)                 (none)
``LLM_<TASK>_BASE_URL``         per-task endpoint / model / key, e.g.               the global value
``LLM_<TASK>_MODEL``            ``LLM_RELATIONS_MODEL``,
``LLM_<TASK>_API_KEY``          ``LLM_RELATION_DESCRIPTIONS_BASE_URL``; profile
                                tasks ``distill_a`` ... ``distill_d``
                                (``LLM_DISTILL_C_MODEL``...)
``LLM_JSON_MODE``               send ``response_format=json_object`` (0 for         ``1``
                                endpoints without JSON mode)
``LLM_TIMEOUT``                 seconds per HTTP request                            ``120``
``LLM_MAX_RETRIES``             retries after the first attempt                     ``3``
``LLM_BREAKER_FAILURES``        stop a run after this many requests in a row could  ``5``
                                not reach the endpoint (refused, DNS, TLS, 401/403;
                                0: never)
``LLM_BACKOFF_INITIAL``         first backoff wait, doubled each retry (s)          ``1``
``LLM_BACKOFF_MAX``             longest wait, also caps ``Retry-After`` (s)         ``30``
``LLM_PRICE_INPUT_HIT``         USD per million cached input tokens                 ``0.07``
``LLM_PRICE_INPUT_MISS``        USD per million uncached input tokens               ``0.27``
``LLM_PRICE_OUTPUT``            USD per million output tokens                       ``1.10``
==============================  ==================================================  ==========================
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arklore.core.errors import ConfigError
from arklore.llm.config import (
    DEFAULT_BASE_URL,
    DEFAULT_MODEL,
    DEFAULT_PRICE_INPUT_HIT,
    DEFAULT_PRICE_INPUT_MISS,
    DEFAULT_PRICE_OUTPUT,
    LLMConfig,
    Prices,
    task_var,
)
from arklore.locations import CONFIG, ENV, absolute, locate

EmbedderName = Literal["e5-small", "bge-small-zh", "hash"]
EMBEDDER_NAMES: tuple[str, ...] = ("e5-small", "bge-small-zh", "hash")
PromptLayout = Literal["cache", "system"]
"""``cache``: the steady knowledge first, the per-message part before the last user message
(:mod:`arklore.chat.layout`); ``system``: all of it in one system message before the client's."""
PROMPT_LAYOUTS: tuple[str, ...] = ("cache", "system")

MIN_API_KEY_CHARS = 16
"""Shortest client key accepted: the OpenAI-compatible routes spend the owner's LLM key."""

_TASK_OVERRIDE = re.compile(r"^LLM_([A-Z0-9_]+?)_(BASE_URL|MODEL|API_KEY)$")


class LLMSettings(BaseModel):
    """The global ``LLM_*`` values plus the raw per-task overrides."""

    model_config = ConfigDict(frozen=True)

    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    api_key: str = Field(default="", repr=False)
    json_mode: bool = True
    timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=100)
    breaker_failures: int = Field(default=5, ge=0, le=10_000)
    backoff_initial: float = Field(default=1.0, ge=0)
    backoff_max: float = Field(default=30.0, ge=0)
    price_input_hit: float = Field(default=DEFAULT_PRICE_INPUT_HIT, ge=0)
    price_input_miss: float = Field(default=DEFAULT_PRICE_INPUT_MISS, ge=0)
    price_output: float = Field(default=DEFAULT_PRICE_OUTPUT, ge=0)
    overrides: dict[str, str] = Field(default_factory=dict, repr=False)  # LLM_<TASK>_* -> value

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("is not an http(s) URL")
        return v.rstrip("/")

    def config(self, task: str | None = None, **changes: Any) -> LLMConfig:
        """The resolved settings of ``task`` (global values unless ``LLM_<TASK>_*`` is set)."""

        def pick(name: str, default: str) -> str:
            return (self.overrides.get(task_var(task, name)) if task else None) or default

        base_url = pick("BASE_URL", self.base_url).rstrip("/")
        if not re.match(r"^https?://[^/\s]+", base_url):
            raise ConfigError(
                f"{task_var(task or '', 'BASE_URL')}={base_url!r} is not an http(s) URL"
            )
        values: dict[str, Any] = {
            "base_url": base_url,
            "model": pick("MODEL", self.model),
            "api_key": pick("API_KEY", self.api_key),
            "json_mode": self.json_mode,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "backoff_initial": self.backoff_initial,
            "backoff_max": self.backoff_max,
            "prices": Prices(self.price_input_hit, self.price_input_miss, self.price_output),
        }
        values.update(changes)
        return LLMConfig(**values)

    def configured(self, task: str | None = None) -> bool:
        """Is there an LLM to call for ``task``: a key, or an endpoint that needs none
        (a local server)? With neither, commands use their no-LLM path."""
        cfg = self.config(task)
        return bool(cfg.api_key) or not cfg.is_deepseek

    def secrets(self) -> list[str]:
        """Every configured API key, so writers can redact them defensively."""
        keys = [self.api_key] + [v for k, v in self.overrides.items() if k.endswith("_API_KEY")]
        return [k for k in keys if k]


class Settings(BaseModel):
    """All settings, validated; see the module docstring for the variables."""

    model_config = ConfigDict(frozen=True)

    home: Path = Field(default=Path("var"), validate_default=True)
    gamedata: Path | None = None
    astr: Path | None = None
    aliases_file: Path | None = None
    embedder: EmbedderName = "e5-small"
    e5_threads: int = Field(default=0, ge=0, le=64)
    workers: int = Field(default_factory=lambda: min(os.cpu_count() or 1, 8), ge=1, le=64)
    rag_token_budget: int = Field(default=800, ge=1, le=100_000)
    max_message_chars: int = Field(default=8000, ge=1, le=10_000_000)
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=1 << 31)
    turn_processes: int = Field(default=1, ge=0, le=64)
    chroma_host: str | None = None
    chroma_port: int = Field(default=8000, ge=1, le=65535)
    chars_dir: Path | None = None
    manifest: Path | None = None
    matrix: Path | None = None
    matrix_replace: bool = False
    confirmed_only: bool = False
    npc_min_lines: int = Field(default=20, ge=1, le=1_000_000)
    npc_min_share: float = Field(default=0.0, ge=0.0, le=1.0)
    until: str | None = Field(default=None, max_length=200)
    persona_token_budget: int = Field(default=1200, ge=1, le=100_000)
    memory_token_budget: int = Field(default=300, ge=1, le=100_000)
    memory_k: int = Field(default=3, ge=1, le=50)
    group_token_budget: int = Field(default=400, ge=1, le=100_000)
    doctor_token_budget: int = Field(default=250, ge=1, le=100_000)
    speech_token_budget: int = Field(default=160, ge=1, le=100_000)
    now_token_budget: int = Field(default=160, ge=1, le=100_000)
    exemplar_token_budget: int = Field(default=280, ge=1, le=100_000)
    exemplars_k: int = Field(default=5, ge=1, le=10)
    nickname: str = Field(default="博士", min_length=1, max_length=40)
    tier_c_relations: bool = False
    prompt_layout: PromptLayout = "cache"
    admin_token: str = Field(default="", repr=False)
    api_keys: tuple[str, ...] = Field(default=(), repr=False)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    # where home, gamedata and astr came from (arklore.locations: env, checkout, config,
    # default), the home's spelling when it was relative to the working directory, and the
    # config file read: for messages (`arklore doctor`, "not built"), never for behaviour
    origins: dict[str, str] = Field(default_factory=dict)
    home_spelling: str = ""
    config_file: Path | None = None

    @field_validator("home", "gamedata", "astr", "aliases_file", "chars_dir", "manifest", "matrix")
    @classmethod
    def _path(cls, v: Path | None) -> Path | None:
        if v is not None and not str(v).strip():
            raise ValueError("is an empty path")
        # one spelling of each place (absolute, `..` and symlinks resolved) before anything
        # records it: the same home spelled two ways is the same home
        return absolute(v) if v is not None else None

    @field_validator("api_keys", mode="before")
    @classmethod
    def _api_keys(cls, v: Any) -> tuple[str, ...]:
        """``"k1,k2"`` (the variable) or a sequence; each key long, printable, no spaces."""
        keys = [k.strip() for k in v.split(",")] if isinstance(v, str) else list(v)
        keys = [k for k in keys if k]
        if isinstance(v, str) and not keys:
            raise ValueError("holds no key (comma-separated tokens expected)")
        for k in keys:
            if not isinstance(k, str) or len(k) < MIN_API_KEY_CHARS or not _token_chars(k):
                raise ValueError(
                    f"each key must be at least {MIN_API_KEY_CHARS} printable ASCII characters "
                    "without spaces (e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))')"
                )
        return tuple(dict.fromkeys(keys))

    def redacted(self) -> dict[str, Any]:
        """Every value as JSON-ready data with each secret (API keys, the admin token, the
        client keys) shown as ``***`` when set (a client key with its metrics label): what
        ``arklore settings`` prints."""
        data = self.model_dump(mode="json")
        data["admin_token"] = "***" if self.admin_token else ""
        data["api_keys"] = [f"*** ({api_key_label(k)})" for k in self.api_keys]
        data["llm"]["api_key"] = "***" if self.llm.api_key else ""
        data["llm"]["overrides"] = {
            k: ("***" if k.endswith("API_KEY") else v) for k, v in self.llm.overrides.items()
        }
        return data

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, check_paths: bool = True
    ) -> Settings:
        """Read and validate every variable; ConfigError naming the first bad one. The data
        checkouts and the home the environment does not set come from the source checkout,
        the user's config file or the default (:mod:`arklore.locations`, a lower-priority
        source); ``check_paths``: a path setting that points nowhere is an error too
        (:meth:`path_errors`)."""
        env = os.environ if env is None else env
        raw: dict[str, Any] = {}
        for var, field_name in _VARS.items():
            value = env.get(var)
            if value is not None and value.strip() != "":
                raw[field_name] = value.strip()
        located, raw["config_file"] = locate(env)
        raw["origins"] = {key: loc.origin for key, loc in located.items()}
        for key, loc in located.items():
            if loc.value is not None:
                raw[key] = loc.value
        home = located["home"]
        if home.origin == ENV and not Path(os.path.expanduser(home.value or "")).is_absolute():
            raw["home_spelling"] = home.value
        llm: dict[str, Any] = {}
        for var, field_name in _LLM_VARS.items():
            value = env.get(var)
            if value is not None and value.strip() != "":
                llm[field_name] = value.strip()
        llm["overrides"] = {
            k: v.strip()
            for k, v in env.items()
            if _TASK_OVERRIDE.match(k) and k not in _LLM_VARS and v.strip()
        }
        try:
            llm_settings = LLMSettings(**llm)
        except ValidationError as exc:
            raise _config_error(exc, env, {f: v for v, f in _LLM_VARS.items()}) from None
        try:
            settings = cls(**raw, llm=llm_settings)
        except ValidationError as exc:
            raise _config_error(exc, env, {f: v for v, f in _VARS.items()}) from None
        if check_paths:
            for problem in settings.path_errors():
                raise problem
        return settings

    def path_errors(self) -> list[ConfigError]:
        """Every path setting that points nowhere (or at a file where a folder belongs), each
        one line naming the setting and what to do."""
        errors: list[ConfigError] = []
        for field_name, var, folder in _PATH_SETTINGS:
            path: Path | None = getattr(self, field_name)
            if path is None or (path.is_dir() if folder else path.is_file()):
                continue
            if field_name == "home" and not path.exists():
                continue  # made by the first build
            what = "folder" if folder else "file"
            found = "no such" if not path.exists() else "not a"
            if self.origins.get(field_name) == CONFIG:
                errors.append(ConfigError(
                    f"{field_name} = {str(path)!r} in {self.config_file}: {found} {what}",
                    hint=f"`arklore config set {field_name} PATH` to fix it, or set {var}",
                ))  # fmt: skip
            else:
                errors.append(ConfigError(
                    f"{var}={str(path)!r}: {found} {what}",
                    hint=f"point {var} at an existing {what}, or unset it",
                ))  # fmt: skip
        return errors

    def home_note(self) -> str:
        """How the home was found, said where a "not built" message names it."""
        origin = self.origins.get("home", ENV)
        if self.home_spelling:
            return (f"ARKLORE_HOME={self.home_spelling} is relative to the working directory "
                    f"{Path.cwd()}: give it as an absolute path")  # fmt: skip
        if origin == CONFIG:
            return f"the home is the one stored in {self.config_file}"
        if origin == ENV:
            return "the home is ARKLORE_HOME's"
        return "the home is the default one; ARKLORE_HOME or `arklore config set home PATH` choose another"

    def llm_config(self, task: str | None = None, **changes: Any) -> LLMConfig:
        return self.llm.config(task, **changes)


_VARS: dict[str, str] = {
    "ARKLORE_HOME": "home",
    "ARKLORE_GAMEDATA": "gamedata",
    "ARKLORE_ASTR": "astr",
    "ARKLORE_ALIASES": "aliases_file",
    "ARKLORE_EMBEDDER": "embedder",
    "ARKLORE_E5_THREADS": "e5_threads",
    "ARKLORE_WORKERS": "workers",
    "ARKLORE_RAG_TOKEN_BUDGET": "rag_token_budget",
    "ARKLORE_MAX_MESSAGE_CHARS": "max_message_chars",
    "ARKLORE_MAX_BODY_BYTES": "max_body_bytes",
    "ARKLORE_TURN_PROCESSES": "turn_processes",
    "CHROMA_HOST": "chroma_host",
    "CHROMA_PORT": "chroma_port",
    "ARKLORE_CHARS_DIR": "chars_dir",
    "ARKLORE_MANIFEST": "manifest",
    "ARKLORE_MATRIX": "matrix",
    "ARKLORE_MATRIX_REPLACE": "matrix_replace",
    "ARKLORE_CONFIRMED_ONLY": "confirmed_only",
    "ARKLORE_NPC_MIN_LINES": "npc_min_lines",
    "ARKLORE_NPC_MIN_SHARE": "npc_min_share",
    "ARKLORE_UNTIL": "until",
    "ARKLORE_PERSONA_TOKEN_BUDGET": "persona_token_budget",
    "ARKLORE_MEMORY_TOKEN_BUDGET": "memory_token_budget",
    "ARKLORE_MEMORY_K": "memory_k",
    "ARKLORE_GROUP_TOKEN_BUDGET": "group_token_budget",
    "ARKLORE_DOCTOR_TOKEN_BUDGET": "doctor_token_budget",
    "ARKLORE_SPEECH_TOKEN_BUDGET": "speech_token_budget",
    "ARKLORE_NOW_TOKEN_BUDGET": "now_token_budget",
    "ARKLORE_EXEMPLAR_TOKEN_BUDGET": "exemplar_token_budget",
    "ARKLORE_EXEMPLARS_K": "exemplars_k",
    "ARKLORE_NICKNAME": "nickname",
    "ARKLORE_TIER_C_RELATIONS": "tier_c_relations",
    "ARKLORE_PROMPT_LAYOUT": "prompt_layout",
    "ARKLORE_ADMIN_TOKEN": "admin_token",
    "ARKLORE_API_KEYS": "api_keys",
}
_PATH_SETTINGS: tuple[tuple[str, str, bool], ...] = (
    ("gamedata", "ARKLORE_GAMEDATA", True),
    ("astr", "ARKLORE_ASTR", True),
    ("home", "ARKLORE_HOME", True),
    ("chars_dir", "ARKLORE_CHARS_DIR", True),
    ("manifest", "ARKLORE_MANIFEST", False),
    ("aliases_file", "ARKLORE_ALIASES", False),
    ("matrix", "ARKLORE_MATRIX", False),
)
"""(field, variable, a folder?) of every path setting :meth:`Settings.path_errors` checks."""
_LLM_VARS: dict[str, str] = {
    "LLM_BASE_URL": "base_url",
    "LLM_MODEL": "model",
    "LLM_API_KEY": "api_key",
    "LLM_JSON_MODE": "json_mode",
    "LLM_TIMEOUT": "timeout",
    "LLM_MAX_RETRIES": "max_retries",
    "LLM_BREAKER_FAILURES": "breaker_failures",
    "LLM_BACKOFF_INITIAL": "backoff_initial",
    "LLM_BACKOFF_MAX": "backoff_max",
    "LLM_PRICE_INPUT_HIT": "price_input_hit",
    "LLM_PRICE_INPUT_MISS": "price_input_miss",
    "LLM_PRICE_OUTPUT": "price_output",
}
_ALLOWED = {
    "ARKLORE_EMBEDDER": "one of " + ", ".join(EMBEDDER_NAMES),
    "LLM_JSON_MODE": "1 or 0",
    "ARKLORE_TIER_C_RELATIONS": "1 or 0",
    "ARKLORE_CONFIRMED_ONLY": "1 or 0",
    "ARKLORE_PROMPT_LAYOUT": "one of " + ", ".join(PROMPT_LAYOUTS),
}
_SECRET_VARS = {"ARKLORE_ADMIN_TOKEN", "ARKLORE_API_KEYS"}


def _token_chars(key: str) -> bool:
    """Printable ASCII without spaces or commas: what fits in an HTTP bearer header."""
    return all(c.isascii() and c.isprintable() and not c.isspace() and c != "," for c in key)


def api_key_label(key: str) -> str:
    """What ``/metrics`` and ``arklore settings`` call a client key: 8 hex digits of a hash,
    enough to tell the keys apart, never the key."""
    return hashlib.sha256(b"arklore-api-key:" + key.encode()).hexdigest()[:8]


def _config_error(
    exc: ValidationError, env: Mapping[str, str], variables: dict[str, str]
) -> ConfigError:
    """The first validation error as one line naming the variable (never a key's value)."""
    err = exc.errors()[0]
    field_name = str(err["loc"][0]) if err["loc"] else ""
    var = variables.get(field_name, field_name)
    msg = _ALLOWED.get(var) or str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if var in _ALLOWED:
        msg = f"must be {msg}"
    secret = var.endswith("API_KEY") or var in _SECRET_VARS
    shown = "" if secret else f"={env.get(var, '')!r}"
    return ConfigError(
        f"{var}{shown}: {msg}",
        hint=f"fix or unset {var} (`arklore settings` lists every variable and its default)",
    )
