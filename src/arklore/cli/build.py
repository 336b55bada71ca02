"""`arklore build`: the main job. Everything a chat needs from the data, with no LLM."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from arklore.build import TRY_NEXT, BuildReport, run_build
from arklore.cli._common import JsonOpt, console, print_json, progress_bar, workspace

app = typer.Typer()


@app.command("build")
def build_cmd(
    force: Annotated[
        bool,
        typer.Option("--force", help="Run every step again, even when its inputs are the same."),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Ingest the story data, build the relation graph, every operator's appearances and
    rule-built profile, and the relation index — no LLM. Resumable: a step whose inputs did
    not change since it last finished is skipped, so a rerun after a kill or an update only
    does what is needed. Exit codes: 0 done; 3 some story files did not parse (listed by
    `arklore stats`); 1/2 nothing usable (data roots, settings)."""
    ws = workspace()
    ws.roots.require_gamedata()
    ws.roots.require_astr()
    with progress_bar(not json) as progress:
        report = run_build(ws, force=force, progress=progress)
    if json:
        print_json(report.to_dict())
    else:
        print_build_report(report)
    raise typer.Exit(report.exit_code)


def print_build_report(report: BuildReport) -> None:
    for s in report.steps:
        how = "unchanged, skipped" if s.skipped else f"{s.seconds:.1f} s"
        console.print(f"{s.name:<12} {how:<20} {_summary(s.name, s.summary)}")
    if (ahead := report.ahead) and "embedded" in ahead:
        console.print(
            f"  (beside {', '.join(ahead['overlapped'])}: {ahead['embedded']:,} relation texts "
            f"embedded in {ahead['workers']} worker processes; the index waited "
            f"{ahead['waited']:.1f} s for them)"
        )
    console.print(f"build done in {report.seconds:.1f} s. Try next:")
    for cmd in TRY_NEXT:
        console.print(f"  {cmd}")


def _summary(name: str, s: dict[str, Any]) -> str:
    if name == "ingest":
        c = s.get("counts") or {}
        return (f"{c.get('primary_stages', 0):,} stages, {c.get('avg_lines', 0):,} lines, "
                f"{c.get('speakers', 0):,} speakers, {c.get('operators', 0)} operators")  # fmt: skip
    if name == "graph":
        c = s.get("counts") or {}
        return f"{c.get('nodes', 0):,} people, {c.get('edges', 0):,} relations"
    if name == "appearances":
        return f"{s['people']} people" if s.get("people") else "up to date"
    if name == "profiles":
        tiers = ", ".join(f"{t} {n}" for t, n in sorted((s.get("tiers") or {}).items()))
        return f"{s.get('operators', 0)} operators; profiles by tier: {tiers or 'none'}"
    if name == "index":
        # the texts the workers embedded before the step count: the step only found them cached
        embedded = s.get("embedded", 0) + s.get("embedded_ahead", 0)
        return (f"{s.get('documents', 0):,} relation documents, {embedded:,} "
                f"embedded [{s.get('embedder', '')}]")  # fmt: skip
    if name == "exemplars":
        return (f"{s.get('windows', 0):,} scenes of {s.get('operators', 0)} operators' own lines "
                f"in {s.get('stages', 0):,} stages")  # fmt: skip
    return ""
