"""Story commands with no LLM: `arklore timeline`, `arklore memories`; and `arklore events
diff` (two extractions compared). Extraction itself is `arklore extract events`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from arklore.cli import group
from arklore.cli._common import JsonOpt, OperatorArg, console, print_json, workspace
from arklore.core.text import one_line
from arklore.corpus.story import FALLBACK
from arklore.events import diff as events_diff
from arklore.events import timeline as events_timeline

app = typer.Typer()
events_app = group("events", "Story events: compare extractions.")


@events_app.command("diff")
def diff(
    run_a: Annotated[str, typer.Argument(help="Export folder, story_events file, or @store.")],
    run_b: Annotated[str, typer.Argument(help="Export folder, story_events file, or @store.")],
    json: JsonOpt = False,
) -> None:
    """Compare two extractions (another model or prompt version) by line-range overlap:
    matched, split, merged, reshaped, missing and new events."""
    result = workspace().events.diff(run_a, run_b)
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
    order: Annotated[
        bool,
        typer.Option("--order", help="The stories in story order, their release order beside."),
    ] = False,
    check: Annotated[
        bool,
        typer.Option("--check", help="The stories placed by release order only (no curation)."),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Stages in release order with the official summaries, and their extracted events in
    line order; --order: every story in the project's story order (where it happens in
    Terra, data/story_order.toml) with its place by release beside it and how it is known;
    --check: the stories only the release order places."""
    if order or check:
        story = workspace().corpus.story_order()
        rows = [r for r in story.rows() if not check or r["how"] == FALLBACK]
        if json:
            print_json({"counts": story.counts(), "stories": rows})
            return
        for r in rows:
            after = f"after {', '.join(r['after'])}: " if r["after"] else ""
            why = f"  {after}{r['reason']}" if r["reason"] else ""
            console.print(f"{r['story']:>4} {r['release']:>4}  {r['how']:<9} {r['group']} "
                          f"{r['name']}{why}", markup=False)  # fmt: skip
        counts = ", ".join(f"{n} {how}" for how, n in story.counts().items())
        console.print(f"story groups: {counts} (columns: story order, release order)")
        return
    tl = workspace().events.timeline(operator=operator, event=event)
    if json:
        print_json(tl.to_dict())
    else:
        sys.stdout.write(events_timeline.render_text(tl) + "\n")


@app.command("memories")
def memories(
    operator: OperatorArg,
    query: Annotated[str | None, typer.Argument(help="What the chat asks about.")] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many to return.")] = 3,
    json: JsonOpt = False,
) -> None:
    """Her own first-person memories, ranked by similarity to QUERY (story order without
    one); with none extracted, the stages she appears in with the game's summaries."""
    result = workspace().events.memories(operator, query, k)
    if json:
        print_json(result.to_dict())
        return
    console.print(f"{result.operator} [{result.kind}] {result.reason}")
    for item in result.items:
        where = item.ref.heading()
        score = f" {item.score:.3f}" if item.score is not None else ""
        console.print(f"- ({item.kind}{score}) {where} [{item.stage_path}]")
        body = item.summary if item.kind == "appearance" else item.text  # not the heading again
        if body:  # the tables' summaries hold line breaks: one line under its entry
            console.print(f"  {one_line(body)}", markup=False)
        for q in item.quotes:
            console.print(f"  {q['speaker']}：「{one_line(q['text'])}」", markup=False)
        console.print(f"  lines: {', '.join(item.line_ids)}")
