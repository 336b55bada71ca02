"""Helpers shared by the CLI modules: the workspace, progress bars, JSON output.

The CLI is an adapter: it parses options, calls a workspace step and renders the result.
:func:`workspace` is where the command reads its settings from the environment (the entry
point; library code never does).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from arklore.base.files import atomic_write_text
from arklore.core.errors import EXIT_INTERRUPTED, ArkloreError, MessageTooLongError, NotBuiltError
from arklore.core.text import check_message
from arklore.llm import Estimate
from arklore.locations import config_path
from arklore.settings import Settings
from arklore.workspace import Workspace

# Everything printed is plain text: story text, names and model output can hold "[...]" that
# Rich would read as markup (and crash on "[/x]"); colour goes through styled(). Lines are not
# hard-wrapped, so a piped report keeps each path and id on one line.
console = Console(markup=False, highlight=False, soft_wrap=True)
err_console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)


def styled(label: str, style: str, rest: str = "") -> Text:
    """``label`` in ``style`` followed by ``rest``, both plain text (never markup)."""
    return Text.assemble((label, style), rest)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable result on stdout.")]

# The options every LLM batch command shares (extract relations, extract events, distill).
RetryOpt = Annotated[
    int | None,
    typer.Option("--retry", min=0, help="Retries per request (default: LLM_MAX_RETRIES, else 3)."),
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight.")]
ResumeOpt = Annotated[bool, typer.Option("--resume/--no-resume", help="Skip work already stored.")]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Do not answer from the response cache.")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Estimate tokens and cost; call nothing.")
]
MaxCostOpt = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0,
        help="Stop before this run would spend more than this many USD (a rerun resumes).",
    ),
]


@dataclass(frozen=True)
class BatchOptions:
    """The options every LLM batch command shares, as its body receives them (see
    :func:`batch_command`)."""

    retry: int | None
    concurrency: int
    resume: bool
    no_cache: bool
    dry_run: bool
    max_cost: float | None

    def run_options(self) -> dict[str, Any]:
        """The keyword arguments a layer's run takes from them (all but ``dry_run``)."""
        return {
            "concurrency": self.concurrency,
            "resume": self.resume,
            "no_cache": self.no_cache,
            "retry": self.retry,
            "max_cost": self.max_cost,
        }


_BATCH_PARAMS: tuple[tuple[str, Any, Any], ...] = (
    ("retry", RetryOpt, None),
    ("concurrency", ConcurrencyOpt, 8),
    ("resume", ResumeOpt, True),
    ("no_cache", NoCacheOpt, False),
    ("dry_run", DryRunOpt, False),
    ("max_cost", MaxCostOpt, None),
)


def batch_command(command: Callable[..., None]) -> Callable[..., None]:
    """Give an LLM batch command (extract relations, extract events, distill) the shared
    options, declared once: typer reads them from the signature this returns, after the
    command's own; the body receives them as its keyword-only ``batch: BatchOptions``."""
    sig = inspect.signature(command, eval_str=True)
    own = [p for p in sig.parameters.values() if p.name != "batch"]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
        for name, ann, default in _BATCH_PARAMS
    ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        batch = BatchOptions(**{name: kwargs.pop(name) for name, _, _ in _BATCH_PARAMS})
        command(**kwargs, batch=batch)

    wrapper.__signature__ = sig.replace(parameters=[*own, *shared])  # type: ignore[attr-defined]
    return wrapper


# Which stages an LLM batch command runs over (extract relations, extract events).
StagesArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Stages to extract: paths, story codes (CW-ST-1) or event names (孤星).",
        show_default=False,
    ),
]
EventOpt = Annotated[str | None, typer.Option("--event", help="Every stage of this event id.")]
AllOpt = Annotated[bool, typer.Option("--all", help="Every primary stage.")]
ExportDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", help="Export folder (default: $ARKLORE_HOME/exports/<relations|events>)."
    ),
]

# What several commands take, declared once so that their help and their rules agree.
OperatorArg = Annotated[str, typer.Argument(help="Operator name, alias or id.")]
MessageArg = Annotated[str, typer.Argument(help="The user's chat message ('-': read stdin).")]
StageArg = Annotated[str, typer.Argument(help="Stage path.")]
L3Opt = Annotated[
    str | None,
    typer.Option("--l3", help="Comma-separated people the other memory layer already recalled."),
]
CharsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", help="Folder of the generated .char files (default $ARKLORE_HOME/chars)."
    ),
]


class QuietInterrupt(SystemExit):
    """Ctrl-C where it simply ends the command (a chat): exit 130 with nothing to resume, so
    no "interrupted" line (the entry point prints one for every other command)."""

    def __init__(self) -> None:
        super().__init__(EXIT_INTERRUPTED)


UntilOpt = Annotated[
    str | None,
    typer.Option(
        "--until",
        help="The story point the chat is set at: a stage code as the game shows it (R8-1, "
        "CW-ST-1), an event or chapter name (孤星, 第十一章) or an id; nothing later reaches "
        "it (default: ARKLORE_UNTIL, else the whole story).",
    ),
]

_WORKSPACE: Workspace | None = None
_SETTINGS: Settings | None = None


def workspace() -> Workspace:
    """The workspace of this command run, made from the environment on first use."""
    global _WORKSPACE, _SETTINGS
    if _WORKSPACE is None:
        # e5's OpenMP threads (a build embeds on every core) sleep while they wait: spinning
        # ones starve everything else on a busy machine (a query's p95 went from ~80 ms to
        # ~830 ms under load). Read once per process, when the engine loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        _SETTINGS = Settings.from_env()
        _WORKSPACE = Workspace(_SETTINGS)
    return _WORKSPACE


def read_settings(*, check_paths: bool = True) -> Settings:
    """The settings of this run, for the commands that need no workspace (doctor, config)."""
    return Settings.from_env(check_paths=check_paths)


def user_config_file() -> Path:
    """The user's config file (``arklore config``), as the settings read it."""
    return config_path(os.environ)


def home_note(exc: ArkloreError) -> str:
    """What a "not built" error (:class:`NotBuiltError`) gets appended on the command line:
    how the home it looked in was found (a home relative to the working directory is the
    usual cause of looking in the wrong place)."""
    if not isinstance(exc, NotBuiltError) or _SETTINGS is None:
        return ""
    return f"; {_SETTINGS.home_note()}"


def close_workspace() -> None:
    global _WORKSPACE
    if _WORKSPACE is not None:
        _WORKSPACE.close()
        _WORKSPACE = None


def say(label: str, style: str, message: str) -> None:
    """One message line on stderr: a coloured label, then ``message`` as plain text.

    The message is never read as Rich markup (a name like ``[/x]`` or a matrix key line
    ``[[relation]]`` is shown as it is, and cannot crash the printing) and never wrapped
    (one message, one line, whatever the terminal width)."""
    err_console.print(Text.assemble((label, style), " ", message), highlight=False, soft_wrap=True)


def end_llm_run(stopped: ArkloreError | None, failed: int, exit_code: int) -> None:
    """The end of every LLM batch command: one line on stderr when it stopped early or items
    failed, then the documented exit code (see arklore.core.errors)."""
    if stopped is not None:
        say("stopped:", "bold red", stopped.one_line())
    elif failed:
        say(
            f"{failed} requests failed",
            "yellow",
            "after their retries (see llm_errors.jsonl; run the command again to retry them)",
        )
    raise typer.Exit(exit_code)


def table(*headers: str, title: str | None = None) -> Table:
    """A Rich table whose cells wrap instead of being cut (ids like char_4228_closur stay whole)."""
    t = Table(title=title)
    for h in headers:
        t.add_column(h, overflow="fold")
    return t


def lenient_stdin() -> None:
    """Decode standard input with ``surrogateescape``: bytes that are not UTF-8 arrive as lone
    surrogates, which :func:`~arklore.core.text.check_text` then refuses with their position
    (a strict decoder would raise from inside ``read``/``input``)."""
    if isinstance(sys.stdin, io.TextIOWrapper):
        with contextlib.suppress(ValueError, io.UnsupportedOperation):
            sys.stdin.reconfigure(errors="surrogateescape")


def read_message(message: str, limit: int) -> str:
    """A message argument; ``-`` reads standard input (at most ``limit`` characters are read,
    one more tells it is too long, so a huge input is refused without reading all of it)."""
    if message != "-":
        return check_message(message, limit)
    lenient_stdin()
    text = sys.stdin.read(limit + 1)  # never more than the limit lets through
    if len(text) > limit:
        raise MessageTooLongError(len(text), limit, truncated=True)
    return check_message(text, limit)


def print_dry_run(stages: int, est: Estimate, json: bool) -> None:
    """What ``--dry-run`` of an LLM batch command prints: tokens and cost, with and without
    the provider's prefix cache, and per 10,000 characters of story sent."""
    if json:
        print_json({"stages": stages, **vars(est)})
        return
    per = est.per_10k_chars()
    console.print(f"{stages} stages: {est.line()}")
    console.print(
        f"per 10,000 characters of story sent: ${per[0]:.4f} (${per[1]:.4f} with the cache)"
    )


def emit(text: str, out: Path | None) -> None:
    """A report on stdout, or written to ``out`` (atomically) with one line saying where."""
    if out is None:
        sys.stdout.write(text + "\n")
        return
    atomic_write_text(out, text)
    err_console.print(f"wrote {out}")


def print_json(data: object) -> None:
    sys.stdout.write(
        orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    )
    sys.stdout.write("\n")


class RateColumn(ProgressColumn):
    """Items per second (documents/s while embedding, files/s while ingesting)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f}/s" if speed else "", style="progress.data.speed")


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """A callback ``(description, done, total)`` drawing one Rich bar per description.

    Drawn on stderr so ``--json`` output on stdout stays clean; silent when disabled or
    when stderr is not a terminal.
    """
    if not enabled or not err_console.is_terminal:
        yield lambda desc, done, total: None
        return
    tasks: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as bar:

        def update(desc: str, done: int, total: int) -> None:
            if desc not in tasks:
                tasks[desc] = bar.add_task(desc, total=total)
            bar.update(tasks[desc], completed=done, total=total)

        yield update
