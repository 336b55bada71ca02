"""Extraction commands: `arklore extract relations`, `arklore review relations`.

Exit codes: 0 all fine; 1 when a gate dropped any edge of the selected stages (a signal
for scripts; the drop summary is printed); 2 configuration errors (via ArkloreError).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from arklore.cli._common import (
    AllOpt,
    ConcurrencyOpt,
    DryRunOpt,
    EventOpt,
    JsonOpt,
    MaxCostOpt,
    NoCacheOpt,
    ResumeOpt,
    RetryOpt,
    StagesArg,
    console,
    end_llm_run,
    err_console,
    print_dry_run,
    print_json,
    progress_bar,
    styled,
    workspace,
)
from arklore.cli.app import app
from arklore.core.errors import ConfigError
from arklore.extract import review
from arklore.extract.runner import RunReport
from arklore.extract.store import has_chunks, load_edges

extract_app = typer.Typer(help="LLM extraction over the story corpus.", no_args_is_help=True)
review_app = typer.Typer(help="Human review reports of extracted data.", no_args_is_help=True)
app.add_typer(extract_app, name="extract")
app.add_typer(review_app, name="review")


@extract_app.command("relations")
def extract_relations(
    stages: StagesArg = None,
    event: EventOpt = None,
    all_: AllOpt = False,
    retry: RetryOpt = None,
    concurrency: ConcurrencyOpt = 8,
    resume: ResumeOpt = True,
    no_cache: NoCacheOpt = False,
    dry_run: DryRunOpt = False,
    max_cost: MaxCostOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Export folder (default: $ARKLORE_HOME/exports/relations)."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Propose relations with the LLM, gate them, store them and export story_relations_<stage>.json.

    Exit codes: 0 done; 3 some chunks failed (see llm_errors.jsonl, rerun to retry); 4 stopped
    early (endpoint unreachable, or --max-cost reached; rerun resumes); 5 edges dropped by a gate.
    """
    ws = workspace()
    paths = ws.select_stages(stages, event=event, all_=all_)
    if dry_run:
        with progress_bar(not json) as progress:
            est = ws.extract_relations_dry_run(paths, progress)
        print_dry_run(len(paths), est, json)
        return
    with progress_bar(not json) as progress:
        report = ws.extract_relations(
            paths,
            concurrency=concurrency,
            resume=resume,
            no_cache=no_cache,
            retry=retry,
            max_cost=max_cost,
            out=out,
            progress=progress,
        )
    out_dir = out or ws.paths.relation_exports
    if json:
        print_json(report.to_dict())
        err_console.print(report.cost_line)
    else:
        _print_report(report, out_dir)
    end_llm_run(report.stopped, report.failed, report.exit_code)


def _print_report(report: RunReport, out_dir: Path) -> None:
    sm = report.summary
    for st in report.stages:
        fails = f", {len(st.failed_chunks)} chunks failed" if st.failed_chunks else ""
        reasons = f" {st.drop_reasons}" if st.drop_reasons else ""
        console.print(f"{st.stage}: {st.kept} kept, {st.dropped} dropped{reasons}{fails}")
    console.print(
        f"{len(report.stages)} stages, {report.jobs} chunks: {report.done} run "
        f"({report.cached} from cache), {report.skipped} already stored, {report.failed} failed",
    )
    console.print(
        f"edges: {sm.get('kept', 0)} kept, {sm.get('dropped', 0)} dropped; "
        f"other share {sm.get('other_share', 0.0):.1%}; "
        f"{sm.get('presence_downgraded', 0)} downgraded, {sm.get('basis_overclaimed', 0)} overclaimed",
    )
    if report.dropped:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(report.drop_reasons().items()))
        console.print(styled("dropped by gates", "yellow", f": {reasons}"))
    if report.failures:
        console.print(
            styled(
                f"{len(report.failures)} chunks failed",
                "yellow",
                f" (see {report.errors_file}; rerun to retry)",
            )
        )
    if report.not_started:
        console.print(f"{report.not_started} chunks not sent (the run stopped)")
    console.print(f"exported {len(report.exports)} files (stages with results) to {out_dir}")
    console.print(report.cost_line)


@review_app.command("relations")
def review_relations(
    stage: Annotated[str, typer.Argument(help="Stage path.")],
    html: Annotated[
        bool, typer.Option("--html", help="A self-contained HTML page instead of text.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this file instead of stdout.")
    ] = None,
    context: Annotated[
        int, typer.Option("--context", min=0, help="Lines shown around evidence.")
    ] = 2,
) -> None:
    """Every extracted edge of a stage with its evidence lines marked and the lines around them."""
    ws = workspace()
    (path,) = ws.select_stages([stage])
    store = ws.store()
    edges = load_edges(store, path)
    if not edges and not has_chunks(store, path):
        raise ConfigError(
            f"no relations extracted for {path}",
            hint=f"run `arklore extract relations {path}` first",
        )
    lines = store.lines(path)
    render = review.render_html if html else review.render_text
    text = render(path, edges, lines, context)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        err_console.print(f"wrote {out}")
    else:
        sys.stdout.write(text + "\n")
