"""Root Typer app; turns ArkloreError into a one-line message and a non-zero exit."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from arklore.cli._common import close_workspace
from arklore.core.errors import ArkloreError

app = typer.Typer(
    name="arklore",
    help="Arknights story knowledge for character role-play.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: no "<bool>" metavars on flags, no boxes
    add_completion=False,
)
err_console = Console(stderr=True)


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Arknights story knowledge for character role-play."""
    # one workspace per command run, made from the environment of that run
    close_workspace()
    ctx.call_on_close(close_workspace)


def _register() -> None:
    # Each area registers its commands in its own module; imported here for the side effect.
    import arklore.cli.chat  # noqa: F401  (chat, turn, serve)
    from arklore.cli import corpus, curate, demo, events, extract, graph, names, profiles, rag  # noqa: F401


def main() -> None:
    _register()
    try:
        app()
    except ArkloreError as exc:
        err_console.print(f"[bold red]error:[/] {exc.one_line()}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    finally:
        close_workspace()
