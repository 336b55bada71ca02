"""The `arklore` command: the one registry of every command module, and the entry point that
turns ArkloreError into a one-line message and a documented exit code.

Each module under ``cli/`` owns its Typer apps (a group like ``graph``, or top-level commands)
and never imports this one; a new command goes into its area's module and, for a new module,
one line below."""

from __future__ import annotations

import codecs
import gc
import io
import logging
import signal
import sys
from typing import Annotated

import typer

from arklore.cli import (
    build,
    chat,
    corpus,
    curate,
    demo,
    evaluate,
    events,
    export,
    extract,
    graph,
    names,
    profiles,
    rag,
    review,
    setup,
)
from arklore.cli._common import QuietInterrupt, close_workspace, err_console, home_note, say
from arklore.core.errors import EXIT_ERROR, EXIT_INTERRUPTED, ArkloreError, UsageError
from arklore.core.text import check_text

app = typer.Typer(
    name="arklore",
    help="Arknights story knowledge for character role-play.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: no "<bool>" metavars on flags, no boxes
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log every retried or failed LLM request.")
    ] = False,
) -> None:
    """Arknights story knowledge for character role-play."""
    # A batch run's failed requests are summed up at its end and kept in llm_errors.jsonl;
    # one warning per retry would bury that line on a long run.
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    llm_log = logging.getLogger("arklore.llm")
    before = llm_log.level
    llm_log.setLevel(logging.INFO if verbose else logging.ERROR)
    ctx.call_on_close(lambda: llm_log.setLevel(before))
    # one workspace per command run, made from the environment of that run
    close_workspace()
    ctx.call_on_close(close_workspace)


SUBCOMMANDS: tuple[typer.Typer, ...] = (
    build.app,  # build: the main job
    setup.app,  # doctor
    setup.config_app,
    corpus.app,  # ingest, stats, verify-anchors, crosscheck, speakers, settings, version
    corpus.operators_app,
    names.app,
    demo.app,
    graph.app,
    curate.app,
    rag.rag_app,
    rag.app,  # context
    extract.app,
    review.app,
    events.app,  # timeline, memories
    events.events_app,
    profiles.app,  # distill, persona, review-queue
    profiles.chars_app,  # chars check
    chat.app,  # chat, turn, serve
    export.app,  # export card, export lorebook, export lint
    evaluate.app,
)
"""Groups (a Typer with a name) and top-level commands (one without), in help order."""

for _sub in SUBCOMMANDS:
    app.add_typer(_sub)


def check_argv(argv: list[str]) -> None:
    """Every command-line argument under the one text rule (``core.text.check_text``): bytes
    that are not UTF-8 reach Python as lone surrogates, which no later step could print,
    match or store."""
    for i, arg in enumerate(argv, 1):
        try:
            check_text(arg, what=f"command-line argument {i}")
        except ArkloreError as exc:
            # typed in a terminal whose locale is not UTF-8 (LANG=C): the fix is the locale
            if codecs.lookup(sys.getfilesystemencoding()).name != "utf-8":
                raise UsageError(
                    f"command-line argument {i} is not text in this locale's encoding "
                    f"({sys.getfilesystemencoding()}): use a UTF-8 locale such as "
                    "LANG=C.UTF-8 (or set PYTHONUTF8=1)"
                ) from exc
            raise


def console_hint() -> str | None:
    """What to set when this console cannot show Chinese (``LANG=C`` without Python's UTF-8
    mode, ``PYTHONIOENCODING=ascii``, a legacy code page), or None when it can."""
    for stream in (sys.stdout, sys.stdin):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "银灰".encode(encoding)
        except (UnicodeError, LookupError):
            return (
                f"this console's encoding ({encoding}) cannot show Chinese: set "
                "PYTHONIOENCODING=utf-8, or a UTF-8 locale such as LANG=C.UTF-8"
            )
    return None


GC_THRESHOLD = (100_000, 20, 10)
"""The garbage collector's thresholds for a command: a command loads large structures (the
graph, the kept corpus pass, the index's documents) that hold few reference cycles, and with
the default ones (700 allocations) it spends up to a third of a one-edit build walking them."""


def main() -> None:
    # what the imports made lives as long as the process: out of every collection's walk
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    # an error line must reach the user whatever the console can show: what it cannot is
    # written as \uXXXX escapes rather than raising inside the error handler
    if isinstance(sys.stderr, io.TextIOWrapper):
        sys.stderr.reconfigure(errors="backslashreplace")
    try:
        check_argv(sys.argv[1:])
        app()
    except UnicodeError as exc:
        # printing Chinese to (or reading it from) a console that has no encoding for it; a
        # file's bad bytes are the layers' ArkloreError, so anything else here is the console
        say("error:", "bold red", console_hint() or f"{exc} (please report it, with the command)")
        sys.exit(EXIT_ERROR)
    except ArkloreError as exc:
        note = home_note(exc)
        line = exc.one_line(local=True)
        if note:  # inside the hint's parentheses
            line = line[:-1] + note + ")" if line.endswith(")") else f"{line} ({note[2:]})"
        say("error:", "bold red", line)
        sys.exit(exc.exit_code)
    except OSError as exc:
        # the last line of defence for the environment (permissions, a full disk, a file where
        # a folder should be): one line, no traceback; the layers raise ArkloreError themselves
        # where they know better what to say
        where = f" ({exc.filename})" if exc.filename else ""
        say(
            "error:",
            "bold red",
            f"{exc.strerror or exc}{where} (check that the path exists and that arklore may "
            "write there: ARKLORE_HOME, --out)",
        )
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:  # Ctrl-C outside a command (Typer catches it inside one)
        interrupted()
    except SystemExit as exc:
        # Typer turns Ctrl-C in a command into a silent exit 130; nothing else exits with it
        if exc.code == EXIT_INTERRUPTED and not isinstance(exc, QuietInterrupt):
            interrupted()
        raise
    finally:
        close_workspace()


def interrupted() -> None:
    """Ctrl-C: one line on a fresh line (the cursor may be after a progress bar or ``^C``
    when stderr is a terminal), exit 130. Every step resumes: finished work is kept."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C cannot cut the cleanup
    if err_console.is_terminal:
        err_console.print()
    say("interrupted:", "bold yellow", "run the same command to resume")
    sys.exit(EXIT_INTERRUPTED)
