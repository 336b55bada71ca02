"""LLM extraction commands: `arklore extract relations`, `arklore extract events`.

Exit codes (arklore.core.errors): 0 done; 3 some chunks failed (see llm_errors.jsonl, rerun
to retry); 4 stopped early (endpoint unreachable or --max-cost; rerun resumes); 5 findings to
review (edges dropped by a gate; memories or events dropped, time hints dropped, memories not
in the first person); 2 configuration errors.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from arklore.cli import group
from arklore.cli._common import (
    AllOpt,
    BatchOptions,
    EventOpt,
    ExportDirOpt,
    JsonOpt,
    StagesArg,
    batch_command,
    console,
    end_llm_run,
    err_console,
    print_dry_run,
    print_json,
    progress_bar,
    styled,
    workspace,
)
from arklore.core.text import one_line
from arklore.events.runner import RunReport as EventsReport
from arklore.extract.runner import RunReport
from arklore.llm import Estimate
from arklore.llm.runs import Progress, TaskRunReport

app = group("extract", "LLM extraction over the story corpus.")

SHOWN = 20  # findings listed one by one before "... and N more"
R = TypeVar("R")


def _run_stages(
    stages: list[str] | None,
    event: str | None,
    all_: bool,
    batch: BatchOptions,
    json: bool,
    estimate: Callable[[list[str], Progress], Estimate],
    run: Callable[..., R],
    **extra: Any,
) -> R | None:
    """What both extract commands do: pick the stages, then print the estimate of
    ``--dry-run`` (None) or run with a progress bar and return the run's report."""
    paths = workspace().extract.select_stages(stages, event=event, all_=all_)
    if batch.dry_run:
        with progress_bar(not json) as progress:
            est = estimate(paths, progress)
        print_dry_run(len(paths), est, json)
        return None
    with progress_bar(not json) as progress:
        return run(paths, progress=progress, **batch.run_options(), **extra)


def _print_unfinished(report: TaskRunReport) -> None:
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


@app.command("relations")
@batch_command
def extract_relations(
    stages: StagesArg = None,
    event: EventOpt = None,
    all_: AllOpt = False,
    out: ExportDirOpt = None,
    json: JsonOpt = False,
    *,
    batch: BatchOptions,
) -> None:
    """Propose relations with the LLM, gate them, store them and export story_relations_<stage>.json.

    Exit codes: 0 done; 3 some chunks failed (see llm_errors.jsonl, rerun to retry); 4 stopped
    early (endpoint unreachable, or --max-cost reached; rerun resumes); 5 edges dropped by a gate.
    """
    ws = workspace()
    report = _run_stages(
        stages, event, all_, batch, json, ws.extract.relations_dry_run, ws.extract.relations,
        out=out,
    )  # fmt: skip
    if report is None:
        return
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
    _print_unfinished(report)
    console.print(f"exported {len(report.exports)} files (stages with results) to {out_dir}")
    console.print(report.cost_line)


@app.command("events")
@batch_command
def extract_events(
    stages: StagesArg = None,
    event: EventOpt = None,
    all_: AllOpt = False,
    out: ExportDirOpt = None,
    embed: Annotated[
        bool,
        typer.Option(
            "--embed/--no-embed",
            help="Embed the kept memories for chat now (else on an operator's first query).",
        ),
    ] = True,
    json: JsonOpt = False,
    *,
    batch: BatchOptions,
) -> None:
    """Split stages into events with first-person memories (LLM), check them, store them and
    export story_events_<stage>.json.

    Exit codes: 0 done; 3 some chunks failed (see llm_errors.jsonl, rerun to retry); 4 stopped
    early (endpoint unreachable, or --max-cost reached; rerun resumes); 5 findings: memories
    or events dropped, time hints dropped, memories not in the first person.
    """
    ws = workspace()
    report = _run_stages(
        stages, event, all_, batch, json, ws.events.extract_dry_run, ws.events.extract,
        out=out, embed=embed,
    )  # fmt: skip
    if report is None:
        return
    if json:
        print_json(report.to_dict())
        err_console.print(report.cost_line)
        _loud_drops(report, err_console)
    else:
        _print_events_report(report, out or ws.paths.event_exports)
    end_llm_run(report.stopped, report.failed, report.exit_code)


def _loud_drops(report: EventsReport, con: Console) -> None:
    """Memories dropped because their owner was not there: the one error this subsystem
    must never make silently — one line each."""
    drops = report.dropped_memories
    if not drops:
        return
    con.print(
        styled(
            f"DROPPED {len(drops)} memories",
            "bold red",
            " (the model gave a memory to someone the lines do not show present, or a"
            " nameless/empty one):",
        )
    )
    for d in drops[:SHOWN]:
        con.print(
            f"  {d['stage']} #{d['event']} lines {d['lines'][0]}-{d['lines'][1]}: "
            f"{d['actor']} ({d['reason']}): {one_line(str(d['text']))}",
        )
    if len(drops) > SHOWN:
        con.print(f"  ... and {len(drops) - SHOWN} more (see --json)")


def _print_events_report(report: EventsReport, out_dir: Path) -> None:
    sm = report.summary
    for st in report.stages:
        if not st.checked:
            fails = f", {len(st.failed_chunks)} chunks failed" if st.failed_chunks else ""
            console.print(f"{st.stage}: not checked (chunks missing{fails})")
            continue
        s = st.summary
        console.print(
            f"{st.stage}: {s['events']} events, {s['memories']} memories, "
            f"{s['dropped_memories']} dropped, {s['third_person']} third person",
        )
    console.print(
        f"{len(report.stages)} stages ({sm.get('stages_checked', 0)} checked), {report.jobs} "
        f"chunks: {report.done} run ({report.cached} from cache), {report.skipped} already "
        f"stored, {report.failed} failed",
    )
    console.print(
        f"events: {sm.get('events', 0)} kept, {sm.get('dropped_events', 0)} dropped, "
        f"{sm.get('merged', 0)} merged across chunks, {sm.get('clamped', 0)} ranges clamped, "
        f"{sm.get('alternative_branches', 0)} spanning alternative branches; memories: "
        f"{sm.get('memories', 0)} kept, {sm.get('dropped_memories', 0)} dropped, "
        f"{sm.get('third_person', 0)} not in the first person; time hints: "
        f"{sm.get('time_hints', 0)} kept, {sm.get('dropped_time_hints', 0)} dropped",
    )
    _loud_drops(report, console)
    for label, items in (
        ("memories not in the first person (flagged, kept as written)", report.third_person),
        ("time hints not found in the lines (dropped)", report.dropped_time_hints),
        ("events dropped", report.dropped_events),
    ):
        if items:
            console.print(styled(f"{len(items)} {label}", "yellow", ":"))
            for d in items[:SHOWN]:
                detail = d.get("text") or d.get("time_hint") or d.get("detail")
                who = f"{d['actor']}: " if "actor" in d else ""
                console.print(f"  {d['stage']} #{d['event']}: {who}{detail}")
    _print_unfinished(report)
    console.print(
        f"exported {len(report.exports)} files (checked stages) to {out_dir}; "
        f"{report.embedded_memories} memories embedded for chat",
    )
    console.print(report.cost_line)
