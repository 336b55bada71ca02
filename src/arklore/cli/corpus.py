"""Corpus commands: ingest, verify-anchors, crosscheck, operators, demo."""

from __future__ import annotations

from arklore.cli.app import app


@app.command()
def version() -> None:
    """Print the arklore version."""
    from arklore import __version__

    print(__version__)
