"""Review commands: `arklore review relations|events` (what a model extracted, beside its
lines) and `arklore review approve` (a reviewer promotes a profile draft)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arklore.cli import group
from arklore.cli._common import OperatorArg, StageArg, console, emit, workspace

app = group("review", "Human review of extracted data and profile drafts.")

HtmlOpt = Annotated[
    bool, typer.Option("--html", help="A self-contained HTML page instead of text.")
]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Write to this file instead of stdout.")]


@app.command("relations")
def review_relations(
    stage: StageArg,
    html: HtmlOpt = False,
    out: OutOpt = None,
    context: Annotated[
        int, typer.Option("--context", min=0, help="Lines shown around evidence.")
    ] = 2,
) -> None:
    """Every extracted edge of a stage with its evidence lines marked and the lines around them."""
    emit(workspace().extract.review(stage, html=html, context=context), out)


@app.command("events")
def review_events(
    stage: StageArg,
    html: HtmlOpt = False,
    out: OutOpt = None,
) -> None:
    """Every extracted event of a stage: line range, memories with their verdicts, and the
    lines they came from."""
    emit(workspace().events.review(stage, html=html), out)


@app.command("approve")
def review_approve(
    operator: OperatorArg,
    accept_edits: Annotated[
        bool,
        typer.Option("--accept-edits", help="Approve a draft a person edited since generation."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            exists=True,
            file_okay=False,
            help="Folder of the generated .char files (default $ARKLORE_HOME/chars).",
        ),
    ] = None,
) -> None:
    """Promote her tier-B draft to tier A ([AUTO-DRAFT] -> [AUTO]) after a person looked at
    it; refuses a draft edited by hand unless --accept-edits."""
    path = workspace().profiles.approve(operator, accept_edits=accept_edits, char_dir=out)
    console.print(f"approved: {path} is tier A")
