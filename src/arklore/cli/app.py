"""The `arklore` command: the one registry of every command module, and the entry point that
turns ArkloreError into a one-line message and a documented exit code.

Each module under ``cli/`` owns its Typer apps (a group like ``graph``, or top-level commands)
and never imports this one; a new command goes into its area's module and, for a new module,
one line below."""

from __future__ import annotations

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
)
from arklore.cli._common import QuietInterrupt, close_workspace, err_console, say
from arklore.core.errors import EXIT_ERROR, EXIT_INTERRUPTED, ArkloreError
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
        check_text(arg, what=f"command-line argument {i}")


def main() -> None:
    try:
        check_argv(sys.argv[1:])
        app()
    except ArkloreError as exc:
        say("error:", "bold red", exc.one_line())
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
