"""One rooted exception hierarchy, and the exit codes a script can trust.

Every error carries a ``hint`` that tells the user what to do; the CLI prints
``error: <message> (<hint>)`` on one line and exits with the error's ``exit_code``:

====  =========================================================================================
0     done as asked
1     error: the command could not do what was asked (no store, unknown name, bad input file)
2     configuration or usage error (a setting, an option, a missing data checkout)
3     done, but some items failed (LLM requests given up on, files that did not parse): rerun
4     stopped early on purpose (circuit breaker, cost limit): finished work is kept, rerun
5     done, with findings to review (edges dropped by a gate, drifted anchors, rejected entries)
130   interrupted (Ctrl-C)
====  =========================================================================================
"""

from __future__ import annotations

from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_PARTIAL, EXIT_STOPPED, EXIT_FINDINGS = 0, 1, 2, 3, 4, 5
EXIT_INTERRUPTED = 130


class ArkloreError(Exception):
    """Root of every error arklore raises on purpose."""

    exit_code = EXIT_ERROR
    default_hint = ""
    local_hint = ""
    """Advice for whoever runs arklore on this machine (a file of theirs to edit): the command
    line shows it, the HTTP service does not send it to its clients."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def one_line(self, *, local: bool = False) -> str:
        """The message and the hint on one line; ``local``: with the local hint, as the CLI
        prints it."""
        hint = "; or ".join(h for h in (self.hint, self.local_hint if local else "") if h)
        return f"{self.message} ({hint})" if hint else self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take other arguments than ``args``: pickle the attributes as they are,
        # so an error crosses a process boundary (the service's turn workers) unchanged.
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[ArkloreError], args: tuple[Any, ...], state: dict[str, Any]) -> ArkloreError:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class ConfigError(ArkloreError):
    """A setting is missing or invalid."""

    exit_code = EXIT_CONFIG


class DataNotFoundError(ConfigError):
    """The game data checkout is not where the settings say."""

    default_hint = (
        "set ARKLORE_GAMEDATA to an ArknightsGameData checkout and ARKLORE_ASTR to an "
        "ArknightsStoryJson checkout, or store them once with `arklore config set gamedata "
        "PATH` and `arklore config set astr PATH`; `arklore doctor` shows where arklore looked"
    )


class MalformedSourceError(ArkloreError):
    """A story file or table could not be parsed; the file is skipped, nothing else is."""

    def __init__(self, path: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason


class StoreError(ArkloreError):
    """The SQLite store is missing, locked or from an incompatible version."""

    default_hint = "run `arklore build` to (re)build the store under ARKLORE_HOME"


class NotBuiltError(ArkloreError):
    """Something `arklore build` makes under the home is not there (the store, the graph, the
    index...). The message names the home it looked in; the command line adds how that home
    was found (a home relative to the working directory is the usual cause)."""

    default_hint = "run `arklore build` to build it, or point ARKLORE_HOME at a built home"

    def __init__(self, what: str, home: object = None, *, hint: str | None = None) -> None:
        super().__init__(f"{what}: the home {home} is not built" if home else what, hint=hint)
        self.home = str(home) if home else ""


class NotIngestedError(StoreError, NotBuiltError):
    """A command needs the corpus but nothing has been ingested yet."""

    default_hint = NotBuiltError.default_hint


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

    exit_code = EXIT_CONFIG


class StoryPointError(UsageError):
    """A story point (``--until``) names no stage or event, or stages of several stories."""


class OutputPathError(ArkloreError):
    """A file cannot be written where the user asked (a folder, no permission, no such place)."""

    default_hint = "choose a writable file path"


class UnknownNameError(ArkloreError):
    """A name, id or appellation matches no operator or speaker."""

    default_hint = "check the spelling"


SHOWN = 40
"""How much of a name a message repeats: a pasted page is not echoed back whole."""


def shown(name: str) -> str:
    """``name`` quoted for a message, cut to :data:`SHOWN` characters with its length told."""
    if len(name) <= SHOWN:
        return repr(name)
    return f"{name[:SHOWN]!r}… ({len(name):,} characters)"


class UnknownOperatorError(UnknownNameError):
    """No operator has this name; carries the closest names (the names layer's one rule)."""

    def __init__(self, name: str, closest: list[str], *, add_alias: str = "") -> None:
        """``add_alias``: how to teach arklore the name (the names layer knows the file; the
        local hint: the service's clients cannot edit it)."""
        if not name.strip():
            super().__init__(
                "no operator name given",
                hint="give her name or id, such as 银灰 or char_172_svrash",
            )
        else:
            hint = ("did you mean " + ", ".join(closest) + "?") if closest else "check the spelling"
            super().__init__(f"no operator is called {shown(name)}", hint=hint)
            self.local_hint = add_alias if len(name) <= SHOWN else ""
        self.name = name
        self.closest = closest


class UnknownEventError(UnknownNameError):
    """No story event has this id."""

    default_hint = "event ids look like main_0, act18d0…"


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
    """The model endpoint failed or answered something unusable.

    ``unreachable`` marks failures that say nothing about the request and everything about
    the endpoint (connection refused, DNS, TLS, 401/403): enough of them in a row stop a run.
    """

    unreachable = False
    attempts = 1  # calls made before giving up (the LLM service sets it)


class ResponseShapeError(ValueError):
    """A model's reply is not JSON or not the asked shape. A ``ValueError``: the LLM layer
    treats it as a bad answer and retries, then gives the job up."""


class TransientLLMError(LLMError):
    """Worth retrying: rate limit, 5xx, timeout, empty or unparseable output."""

    retry_after: float | None = None  # seconds the endpoint asked to wait (Retry-After)


class PermanentLLMError(LLMError):
    """Not worth retrying: bad key, unknown model, request rejected."""

    default_hint = "check LLM_BASE_URL, LLM_MODEL and LLM_API_KEY"


class RunStoppedError(ArkloreError):
    """A batch run stopped early on purpose; what finished is kept and a rerun resumes."""

    exit_code = EXIT_STOPPED


class EndpointUnreachableError(RunStoppedError):
    """The circuit breaker: several requests in a row could not reach the endpoint."""

    default_hint = "check LLM_BASE_URL and LLM_API_KEY (and the network), then run it again"


class CostLimitError(RunStoppedError):
    """The next request would pass the run's --max-cost."""

    default_hint = "run it again with a higher --max-cost to finish; finished work is kept"


class MessageTooLongError(ArkloreError):
    """A chat message is longer than ``ARKLORE_MAX_MESSAGE_CHARS`` (checked by
    :func:`arklore.core.text.check_message` before any work is done)."""

    default_hint = "send a shorter message, or raise ARKLORE_MAX_MESSAGE_CHARS"

    def __init__(
        self, length: int, limit: int, *, what: str = "message", truncated: bool = False
    ) -> None:
        """``truncated``: only the first ``length`` characters were read (stdin), so the true
        length is unknown."""
        if truncated:
            message = f"the {what} is longer than the limit of {limit} characters"
        else:
            message = f"the {what} has {length} characters, more than the limit of {limit}"
        super().__init__(message)
        self.length = length
        self.limit = limit


class BadTextError(UsageError):
    """Text no entry point accepts: a lone surrogate (invalid UTF-8 read from the command line,
    a ``"\\ud800"`` escape in JSON) or a control character (checked by
    :func:`arklore.core.text.check_text` before any work is done)."""

    default_hint = "send UTF-8 text without control characters; tabs and line breaks are fine"

    def __init__(self, what: str, position: int, problem: str) -> None:
        super().__init__(f"the {what} holds {problem} at character {position}")
        self.what = what
        self.position = position


class OperatorNotAvailableError(ArkloreError):
    """The operator exists but the app's manifest (``ARKLORE_MANIFEST``) does not expose her."""

    default_hint = "pick an operator the manifest lists, or add her to the manifest file"


class CuratedChangedError(ArkloreError):
    """A verdict on a curated relation whose text changed since the reviewer saw it."""


class IncompleteBuildError(ArkloreError):
    """``arklore build`` was started in this home and did not finish: what it would export
    lacks what the missing steps build (see :mod:`arklore.base.buildmark`)."""

    default_hint = "run `arklore build` again to resume, or pass --allow-incomplete"
