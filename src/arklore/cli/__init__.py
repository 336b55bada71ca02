"""The `arklore` command line: one Typer app, one module per area."""

from arklore.cli.app import app, main

__all__ = ["app", "main"]
