"""One rooted exception hierarchy.

Every error carries a ``hint`` that tells the user what to do; the CLI prints
``error: <message> (<hint>)`` on one line and exits non-zero.
"""

from __future__ import annotations


class ArkloreError(Exception):
    """Root of every error arklore raises on purpose."""

    exit_code = 1
    default_hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def one_line(self) -> str:
        """The message and the hint on one line, as the CLI prints it."""
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(ArkloreError):
    """A setting is missing or invalid."""

    exit_code = 2


class DataNotFoundError(ConfigError):
    """The game data checkout is not where the settings say."""

    default_hint = (
        "set ARKLORE_GAMEDATA to an ArknightsGameData checkout and ARKLORE_ASTR to an "
        "ArknightsStoryJson checkout, or run `make data`"
    )


class MalformedSourceError(ArkloreError):
    """A story file or table could not be parsed; the file is skipped, nothing else is."""

    def __init__(self, path: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason


class StoreError(ArkloreError):
    """The SQLite store is missing, locked or from an incompatible version."""

    default_hint = "run `arklore ingest` to (re)build the store under ARKLORE_HOME"


class NotIngestedError(StoreError):
    """A command needs the corpus but nothing has been ingested yet."""


class IncompleteIngestError(StoreError):
    """The last ingest was killed or crashed: the store may be half-built."""

    default_hint = "run `arklore ingest` again; it resumes where it stopped"


class DataRootsChangedError(StoreError):
    """The store was ingested from other data checkouts than the settings now name."""

    default_hint = (
        "point ARKLORE_GAMEDATA/ARKLORE_ASTR back at the data the store was built from, use "
        "another ARKLORE_HOME, or pass --data-changed to accept the new data"
    )


class UsageError(ArkloreError):
    """A command-line option or argument has a value the command cannot use."""

    exit_code = 2


class OutputPathError(ArkloreError):
    """A file cannot be written where the user asked (a folder, no permission, no such place)."""

    default_hint = "choose a writable file path"


class UnknownNameError(ArkloreError):
    """A name, id or appellation matches no operator or speaker."""

    default_hint = "check the spelling, or add the name to data/aliases.toml"


class AmbiguousNameError(ArkloreError):
    """A name belongs to several operators; the caller must pick one."""

    def __init__(self, name: str, candidates: list[str], *, hint: str | None = None) -> None:
        super().__init__(
            f"{name!r} matches several operators: {', '.join(candidates)}",
            hint=hint or "pass the operator id instead of the name",
        )
        self.name = name
        self.candidates = candidates


class InputFileError(ArkloreError):
    """A user-edited file (aliases, matrix, import) is invalid; nothing built is touched."""

    def __init__(self, path: str, where: str, reason: str) -> None:
        super().__init__(
            f"{path}: {where}: {reason}", hint="fix the file and run the command again"
        )
        self.path = path
        self.where = where
        self.reason = reason


class LLMError(ArkloreError):
    """The model endpoint failed or answered something unusable."""


class TransientLLMError(LLMError):
    """Worth retrying: rate limit, 5xx, timeout, empty or unparseable output."""


class PermanentLLMError(LLMError):
    """Not worth retrying: bad key, unknown model, request rejected."""

    default_hint = "check LLM_BASE_URL, LLM_MODEL and LLM_API_KEY"
