"""Corpus commands: ingest, stats, verify-anchors, crosscheck, operators, speakers, settings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from arklore import __version__
from arklore.cli import group
from arklore.cli._common import (
    JsonOpt,
    console,
    print_json,
    progress_bar,
    say,
    styled,
    table,
    workspace,
)
from arklore.core.errors import EXIT_FINDINGS, EXIT_PARTIAL
from arklore.corpus.anchors import STORED
from arklore.corpus.crosscheck import CrosscheckReport

app = typer.Typer()
operators_app = group("operators", "The operator registry.")

DataChangedOpt = Annotated[
    bool,
    typer.Option(
        "--data-changed",
        help="Accept data checkouts other than the ones the store was ingested from.",
    ),
]


@app.command()
def version() -> None:
    """Print the arklore version."""
    print(__version__)


@app.command()
def ingest(
    json: JsonOpt = False,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="Only this source: avg or astr (repeatable)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Re-parse every file even if unchanged.")] = False,
    data_changed: DataChangedOpt = False,
) -> None:
    """Read both story sources into the store under ARKLORE_HOME (unchanged stages are skipped).

    Exit codes: 0 done; 3 some files did not parse (listed; a stage that had been ingested
    before keeps that older version); 1/2 nothing usable (unreadable registry table, settings).
    """
    sources = tuple(source or ("avg", "astr"))
    for name in sources:
        if name not in ("avg", "astr"):
            raise typer.BadParameter(
                f"unknown source {name!r}: use avg or astr", param_hint="--source"
            )
    with progress_bar(not json) as progress:
        report = workspace().ingest(
            sources=sources, force=force, allow_data_change=data_changed, progress=progress
        )
    if json:
        print_json(report.to_dict())
    else:
        t = table(
            "source", "files", "added", "updated", "unchanged", "removed", "failed", "warnings",
            "lines written",
        )  # fmt: skip
        for name, r in report.sources.items():
            values = (r.files, r.added, r.updated, r.unchanged, r.removed, r.failed, r.warnings,
                      r.lines_written)  # fmt: skip
            t.add_row(name, *(str(v) for v in values))
        console.print(t)
        print_problems(report.errors, report.parse_warnings, report.warnings)
        print_counts(report.counts)
        console.print(f"done in {report.seconds:.1f} s")
    if report.errors:
        kept = sum(e["kept_previous"] for e in report.errors)
        say(
            f"{len(report.errors)} files did not parse",
            "yellow",
            f"({kept} of their stages keep the version ingested before): fix or restore them "
            "and run `arklore ingest` again",
        )
        raise typer.Exit(EXIT_PARTIAL)


def print_problems(
    errors: list[dict[str, Any]], parse_warnings: list[dict[str, Any]], warnings: list[str]
) -> None:
    """Files that failed (and whether an older version is kept), parse warnings, table warnings."""
    for e in errors[:20]:
        kept = " (kept the version ingested before)" if e.get("kept_previous") else ""
        console.print(
            styled("skipped", "yellow", f" {e['source']}:{e['path']}: {e['reason']}{kept}")
        )
    if len(errors) > 20:
        console.print(f"... and {len(errors) - 20} more (see `arklore stats --json`)")
    n = sum(len(p["warnings"]) for p in parse_warnings)
    if n:
        console.print(
            f"{n} parse warnings in {len(parse_warnings)} stages (lines the readers could not "
            "trust; see `arklore stats --json`), e.g.:",
        )
        for p in parse_warnings[:5]:
            where = p.get("path") or p.get("stage")
            console.print(f"  {p['source']}:{where}: {p['warnings'][0]}")
    for w in warnings:
        console.print(styled("warning", "yellow", f" {w}"))


def print_counts(c: dict[str, int]) -> None:
    console.print(
        f"store: {c['avg_stages']} raw scripts ({c['avg_lines']:,} lines), "
        f"{c['astr_stages']} ASTR stages ({c['astr_lines']:,} lines), "
        f"{c['speakers']:,} speakers ({c['avg_speakers']:,} in raw scripts), "
        f"{c['operators']} operators, {c['ingest_errors']} files skipped",
    )


@app.command()
def stats(json: JsonOpt = False) -> None:
    """Counts of what the store holds, files that failed to parse, registry warnings."""
    result = workspace().stats()
    if json:
        print_json(result)
        return
    print_counts(result["counts"])
    print_problems(result["ingest_errors"], result["parse_warnings"], result["warnings"])


@app.command("verify-anchors")
def verify_anchors(
    json: JsonOpt = False,
    full: Annotated[
        bool, typer.Option(help="Re-parse every stage, even files that did not change.")
    ] = False,
    matrix: Annotated[
        list[Path] | None,
        typer.Option(
            "--matrix",
            help="Also check the evidence of this relationship matrix TOML (repeatable); "
            "the packaged one is always checked.",
        ),
    ] = None,
    data_changed: DataChangedOpt = False,
) -> None:
    """Report every stored or cited line id whose stage no longer holds that text there.

    Cited ids come from extracted relations, event memories, the matrix the graph was built
    from (the packaged one; pass your own with --matrix), registered relation imports, the
    saved graph and the live relation index; each drifted line names the relations it
    supports. Exits 5 (findings) when any anchor drifted.
    """
    with progress_bar(not json) as progress:
        report = workspace().verify_anchors(
            full=full, allow_data_change=data_changed, matrices=matrix or (), progress=progress
        )
    if json:
        print_json(report.to_dict())
    else:
        console.print(
            f"{report.anchors:,} anchors in {report.stages_checked:,} stages "
            f"({report.stages_reparsed} re-parsed) in {report.seconds:.1f} s: "
            f"{len(report.drifts)} drifted {report.by_kind()}",
        )
        for kind, c in report.cited.items():
            hit = f", {c.referrers_hit} citing them" if c.drifted else ""
            console.print(
                f"  {kind:15} {c.citations:>7,} citations of {c.line_ids:>7,} lines: "
                f"{c.drifted} drifted{hit}",
            )
        for note in report.notes:
            console.print(f"  note: {note}")
        for d in report.drifts[:50]:
            where = f" -> now at {d.now_line_nos}" if d.now_line_nos else ""
            now = f" now: {d.now_text[:40]!r}" if d.now_text else ""
            console.print(f"  {d.kind:13} {d.line_id}{where}{now}")
            cited = [r for r in d.referenced_by if r != STORED]
            for r in cited[:10]:
                console.print(f"      cited by {r}")
            if len(cited) > 10:
                console.print(f"      ... and {len(cited) - 10} more (use --json)")
        if len(report.drifts) > 50:
            console.print(f"  ... {len(report.drifts) - 50} more (use --json)")
    raise typer.Exit(0 if report.ok else EXIT_FINDINGS)


@operators_app.command("show")
def operators_show(
    name: Annotated[str, typer.Argument(help="Any name the alias table knows, or an id.")],
    json: JsonOpt = False,
) -> None:
    """Show one operator, found by any of her names (alias, real name, appellation, id)."""
    names = workspace().names
    data = names.record(names.resolve(name))
    if json:
        print_json(data)
        return
    for k, v in data.items():
        if v not in (None, [], "", 0):
            console.print(styled(str(k), "bold", f": {v}"))


@app.command()
def speakers(
    json: JsonOpt = False,
    limit: Annotated[int, typer.Option(min=1, help="How many, by line count.")] = 30,
    npc_only: Annotated[
        bool, typer.Option("--npc", help="Only speakers no operator id matches.")
    ] = False,
) -> None:
    """The speaker whitelist: every distinct normalized speaker name with its line count."""
    rows = workspace().names.speakers(npc_only=npc_only, limit=limit)
    if json:
        print_json(rows)
        return
    keys = ("name", "line_count", "stage_count", "avg_lines", "astr_lines", "char_id")
    t = table(*keys)
    for r in rows:
        t.add_row(*(str(r[k]) if r[k] is not None else "" for k in keys))
    console.print(t)


@app.command()
def crosscheck(
    json: JsonOpt = False,
    from_files: Annotated[
        bool, typer.Option("--from-files", help="Re-read both sources instead of using the store.")
    ] = False,
    limit: Annotated[int, typer.Option(help="Disagreeing stages to list in the text report.")] = 30,
    min_agreement: Annotated[
        float | None,
        typer.Option(
            "--min-agreement",
            min=0.0,
            max=1.0,
            help="Exit 5 when a field's line agreement is below this share (e.g. 0.99).",
        ),
    ] = None,
) -> None:
    """Compare the stages present in both sources line by line, judged per field."""
    with progress_bar(not json) as progress:
        report = workspace().corpus.crosscheck(
            from_files=from_files, progress=lambda done, total: progress("crosscheck", done, total)
        )
    below = report.below(min_agreement) if min_agreement is not None else {}
    if json:
        out = report.to_dict()
        if min_agreement is not None:
            out |= {"min_agreement": min_agreement, "below": below}
        print_json(out)
    else:
        print_crosscheck(report, limit)
    if below:
        fields = ", ".join(f"{name} {share:.2%}" for name, share in below.items())
        say("findings:", "yellow", f"line agreement under {min_agreement:.2%}: {fields}")
        raise typer.Exit(EXIT_FINDINGS)


def print_crosscheck(report: CrosscheckReport, limit: int) -> None:
    console.print(report.summary())
    if report.disagreeing:
        t = table("stage", "category", "first difference (raw | ASTR)")
        for cmp in report.disagreeing[:limit]:
            d = cmp.first_diff
            diff = ""
            if d is not None:
                diff = (
                    f"#{d.avg_line_no} {d.avg_speaker or ''}：{(d.avg_text or '')[:30]}\n"
                    f"#{d.astr_line_no} {d.astr_speaker or ''}：{(d.astr_text or '')[:30]}"
                )
            t.add_row(cmp.stage_path, cmp.category, diff)
        console.print(t)
        if len(report.disagreeing) > limit:
            console.print(f"... {len(report.disagreeing) - limit} more (use --json or --limit)")


@app.command("settings")
def settings_cmd(json: JsonOpt = False) -> None:
    """Every setting with its value (from the environment or the default); keys are masked."""
    data = workspace().settings.redacted()
    if json:
        print_json(data)
        return
    for k, v in data.items():
        if k != "llm":
            console.print(f"{k}: {v}")
    for k, v in data["llm"].items():
        console.print(f"llm.{k}: {v}")
