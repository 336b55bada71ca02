"""Extraction commands: `arklore extract relations`, `arklore review relations`.

Exit codes: 0 all fine; 1 when a gate dropped any edge of the selected stages (a signal
for scripts; the drop summary is printed); 2 configuration errors (via ArkloreError).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from arklore.cli._common import console, err_console, open_store, print_json, progress_bar, settings
from arklore.cli.app import app
from arklore.extract import store as _edges_store  # noqa: F401  (registers tables + anchors)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable result on stdout.")]

extract_app = typer.Typer(help="LLM extraction over the story corpus.", no_args_is_help=True)
review_app = typer.Typer(help="Human review reports of extracted data.", no_args_is_help=True)
app.add_typer(extract_app, name="extract")
app.add_typer(review_app, name="review")


@extract_app.command("relations")
def extract_relations(
    stages: Annotated[list[str] | None, typer.Argument(help="Stage paths to extract.")] = None,
    event: Annotated[
        str | None, typer.Option("--event", help="Every stage of this event id.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every primary stage.")] = False,
    retry: Annotated[
        int | None,
        typer.Option(
            "--retry", min=0, help="Retries per request (default: LLM_MAX_RETRIES, else 3)."
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Requests in flight.")
    ] = 8,
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="Skip chunks already stored.")
    ] = True,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not answer from the response cache.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Estimate tokens and cost; call nothing.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Export folder (default: $ARKLORE_HOME/exports/relations)."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Propose relations with the LLM, gate them, store them and export story_relations_<stage>.json.

    Exits 1 when any edge was dropped by a gate; failed requests go to llm_errors.jsonl.
    """
    from arklore.extract import runner

    s = settings()
    with open_store() as store:
        paths = runner.select_stages(store, stages, event=event, all_=all_)
        env = dict(os.environ)
        if retry is not None:
            env["LLM_MAX_RETRIES"] = str(retry)
        if dry_run:
            est = runner.dry_run(store, paths, env)
            if json:
                print_json({"stages": len(paths), **vars(est)})
            else:
                console.print(f"{len(paths)} stages: {est.line()}", highlight=False)
            return
        from arklore.llm import LLM

        llm = LLM(s.home, env=env, no_cache=no_cache)
        try:
            with progress_bar(not json) as progress:
                report = runner.extract_relations(
                    store, llm, paths, concurrency=concurrency, resume=resume, progress=progress
                )
            out_dir = out or s.home / runner.EXPORT_SUBDIR
            report.exports = [str(p) for p in runner.export_stages(store, paths, out_dir)]
        finally:
            llm.close()
    if json:
        print_json(report.to_dict())
        err_console.print(report.cost_line, highlight=False)
    else:
        _print_report(report, out_dir)
    raise typer.Exit(1 if report.dropped else 0)


def _print_report(report, out_dir: Path) -> None:
    sm = report.summary
    for st in report.stages:
        fails = f", {len(st.failed_chunks)} chunks failed" if st.failed_chunks else ""
        reasons = f" {st.drop_reasons}" if st.drop_reasons else ""
        console.print(
            f"{st.stage}: {st.kept} kept, {st.dropped} dropped{reasons}{fails}", highlight=False
        )
    console.print(
        f"{len(report.stages)} stages, {report.jobs} chunks: {report.done} run "
        f"({report.cached} from cache), {report.skipped} already stored, {report.failed} failed",
        highlight=False,
    )
    console.print(
        f"edges: {sm.get('kept', 0)} kept, {sm.get('dropped', 0)} dropped; "
        f"other share {sm.get('other_share', 0.0):.1%}; "
        f"{sm.get('presence_downgraded', 0)} downgraded, {sm.get('basis_overclaimed', 0)} overclaimed",
        highlight=False,
    )
    if report.dropped:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(report.drop_reasons().items()))
        console.print(f"[yellow]dropped by gates[/]: {reasons}", highlight=False)
    if report.failures:
        console.print(
            f"[yellow]{len(report.failures)} chunks failed[/] (see {report.errors_file}; rerun to retry)",
            highlight=False,
        )
    console.print(f"exported {len(report.exports)} files to {out_dir}", highlight=False)
    console.print(report.cost_line, highlight=False)


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
    from arklore.core.errors import ConfigError
    from arklore.extract import review, runner
    from arklore.extract.store import load_edges

    with open_store() as store:
        (path,) = runner.select_stages(store, [stage])
        edges = load_edges(store, path)
        if (
            not edges
            and not store.conn.execute(
                "SELECT 1 FROM relation_chunks WHERE stage_path = ?", (path,)
            ).fetchone()
        ):
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
        err_console.print(f"wrote {out}", highlight=False)
    else:
        sys.stdout.write(text + "\n")
