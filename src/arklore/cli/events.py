"""Story-event commands: `arklore extract events`, `arklore review events`, `arklore events
diff`, `arklore timeline`, `arklore memories`.

Exit codes (arklore.core.errors): 0 done; 3 some chunks failed; 4 stopped early (breaker,
--max-cost); 5 done with findings: memories dropped (an actor not present), events dropped
(bad line range), time hints dropped (not in the text) or memories not in the first person.
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
from arklore.cli.extract import extract_app, review_app
from arklore.core.errors import ConfigError
from arklore.events import diff as events_diff
from arklore.events import review
from arklore.events import store as events_db
from arklore.events import timeline as events_timeline
from arklore.events.runner import RunReport

events_app = typer.Typer(help="Story events: compare extractions.", no_args_is_help=True)
app.add_typer(events_app, name="events")

SHOWN = 20  # findings listed one by one before "... and N more"


@extract_app.command("events")
def extract_events(
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
        typer.Option("--out", help="Export folder (default: $ARKLORE_HOME/exports/events)."),
    ] = None,
    embed: Annotated[
        bool,
        typer.Option(
            "--embed/--no-embed",
            help="Embed the kept memories for chat now (else on an operator's first query).",
        ),
    ] = True,
    json: JsonOpt = False,
) -> None:
    """Split stages into events with first-person memories (LLM), check them, store them and
    export story_events_<stage>.json.

    Exit codes: 0 done; 3 some chunks failed (see llm_errors.jsonl, rerun to retry); 4 stopped
    early (endpoint unreachable, or --max-cost reached; rerun resumes); 5 findings: memories
    or events dropped, time hints dropped, memories not in the first person.
    """
    ws = workspace()
    paths = ws.select_stages(stages, event=event, all_=all_)
    if dry_run:
        with progress_bar(not json) as progress:
            est = ws.extract_events_dry_run(paths, progress)
        print_dry_run(len(paths), est, json)
        return
    with progress_bar(not json) as progress:
        report = ws.extract_events(
            paths,
            concurrency=concurrency,
            resume=resume,
            no_cache=no_cache,
            retry=retry,
            max_cost=max_cost,
            out=out,
            embed=embed,
            progress=progress,
        )
    if json:
        print_json(report.to_dict())
        err_console.print(report.cost_line)
        _loud_drops(report, err_console)
    else:
        _print_report(report, out or ws.paths.event_exports)
    end_llm_run(report.stopped, report.failed, report.exit_code)


def _loud_drops(report: RunReport, con) -> None:  # noqa: ANN001
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
            f"{d['actor']} ({d['reason']}): {d['text']}",
        )
    if len(drops) > SHOWN:
        con.print(f"  ... and {len(drops) - SHOWN} more (see --json)")


def _print_report(report: RunReport, out_dir: Path) -> None:
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
    console.print(
        f"exported {len(report.exports)} files (checked stages) to {out_dir}; "
        f"{report.embedded_memories} memories embedded for chat",
    )
    console.print(report.cost_line)


@review_app.command("events")
def review_events(
    stage: Annotated[str, typer.Argument(help="Stage path.")],
    html: Annotated[
        bool, typer.Option("--html", help="A self-contained HTML page instead of text.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Every extracted event of a stage: line range, memories with their verdicts, and the
    lines they came from."""
    ws = workspace()
    (path,) = ws.select_stages([stage])
    store = ws.store()
    if not events_db.has_events(store, path):
        raise ConfigError(
            f"no events extracted for {path}", hint=f"run `arklore extract events {path}` first"
        )
    render = review.render_html if html else review.render_text
    text = render(path, events_db.load_events(store, path), store.lines(path))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        err_console.print(f"wrote {out}")
    else:
        sys.stdout.write(text + "\n")


@events_app.command("diff")
def diff(
    run_a: Annotated[str, typer.Argument(help="Export folder, story_events file, or @store.")],
    run_b: Annotated[str, typer.Argument(help="Export folder, story_events file, or @store.")],
    json: JsonOpt = False,
) -> None:
    """Compare two extractions (another model or prompt version) by line-range overlap:
    matched, split, merged, reshaped, missing and new events."""
    result = workspace().events_diff(run_a, run_b)
    if json:
        print_json(result.to_dict())
    else:
        sys.stdout.write(events_diff.render_text(result) + "\n")


@app.command("timeline")
def timeline(
    operator: Annotated[
        str | None, typer.Option("--operator", help="Only the stages she appears in.")
    ] = None,
    event: Annotated[str | None, typer.Option("--event", help="Only this event id.")] = None,
    json: JsonOpt = False,
) -> None:
    """Stages in story order with the official summaries, and their extracted events in line
    order. The order is release order: an approximation of in-world time."""
    tl = workspace().timeline(operator=operator, event=event)
    if json:
        print_json(tl.to_dict())
    else:
        sys.stdout.write(events_timeline.render_text(tl) + "\n")


@app.command("memories")
def memories(
    operator: Annotated[str, typer.Argument(help="Operator name, alias or id.")],
    query: Annotated[str | None, typer.Argument(help="What the chat asks about.")] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many to return.")] = 3,
    json: JsonOpt = False,
) -> None:
    """Her own first-person memories, ranked by similarity to QUERY (story order without
    one); with none extracted, the stages she appears in with the game's summaries."""
    result = workspace().memories(operator, query, k)
    if json:
        print_json(result.to_dict())
        return
    console.print(f"{result.operator} [{result.kind}] {result.reason}")
    for item in result.items:
        where = " ".join(p for p in (item.event_name, item.stage_code, item.story_name) if p)
        score = f" {item.score:.3f}" if item.score is not None else ""
        console.print(f"- ({item.kind}{score}) {where} [{item.stage_path}]")
        console.print(f"  {item.text}")
        console.print(f"  lines: {', '.join(item.line_ids)}")
