"""The `arklore` command line: one module per area, each owning its Typer apps, registered in
one place (:mod:`arklore.cli.app`, whose ``main`` is the console script)."""

from __future__ import annotations

from typing import Any

import typer


def group(name: str, help: str, **settings: Any) -> typer.Typer:
    """A command group (``arklore <name> ...``) as every area module makes one: it shows its
    help when called with no command."""
    return typer.Typer(name=name, help=help, no_args_is_help=True, **settings)
