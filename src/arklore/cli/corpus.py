"""Corpus commands: ingest, verify-anchors, crosscheck, operators, speakers, stats."""

from __future__ import annotations

from typing import Annotated

import orjson
import typer
from rich.table import Table

from arklore.cli._common import console, open_store, print_json, progress_bar, settings
from arklore.cli.app import app
from arklore.corpus.store import Store

JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable result on stdout.")]

operators_app = typer.Typer(help="The operator registry.", no_args_is_help=True)
app.add_typer(operators_app, name="operators")


@app.command()
def version() -> None:
    """Print the arklore version."""
    from arklore import __version__

    print(__version__)


@app.command()
def ingest(
    json: JsonOpt = False,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="Only this source: avg or astr (repeatable)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Re-parse every file even if unchanged.")] = False,
) -> None:
    """Read both story sources into the store under ARKLORE_HOME (unchanged stages are skipped)."""
    from arklore.corpus.ingest import ingest as run_ingest

    s = settings()
    sources = tuple(source or ("avg", "astr"))
    for name in sources:
        if name not in ("avg", "astr"):
            raise typer.BadParameter(
                f"unknown source {name!r}: use avg or astr", param_hint="--source"
            )
    with Store(s.db_path) as store, progress_bar(not json) as progress:
        report = run_ingest(s, store, sources=sources, progress=progress, force=force)
    if json:
        print_json(report.to_dict())
        return
    t = Table(
        "source", "files", "added", "updated", "unchanged", "removed", "failed", "lines written"
    )
    for name, r in report.sources.items():
        t.add_row(
            name,
            *(
                str(v)
                for v in (
                    r.files,
                    r.added,
                    r.updated,
                    r.unchanged,
                    r.removed,
                    r.failed,
                    r.lines_written,
                )
            ),
        )
    console.print(t)
    for e in report.errors[:20]:
        console.print(
            f"[yellow]skipped[/] {e['source']}:{e['path']}: {e['reason']}", highlight=False
        )
    if len(report.errors) > 20:
        console.print(f"... and {len(report.errors) - 20} more (see `arklore stats --json`)")
    _print_counts(report.counts)
    console.print(f"done in {report.seconds:.1f} s")


def _print_counts(c: dict[str, int]) -> None:
    console.print(
        f"store: {c['avg_stages']} raw scripts ({c['avg_lines']:,} lines), "
        f"{c['astr_stages']} ASTR stages ({c['astr_lines']:,} lines), "
        f"{c['speakers']:,} speakers ({c['avg_speakers']:,} in raw scripts), "
        f"{c['operators']} operators, {c['ingest_errors']} files skipped",
        highlight=False,
    )


@app.command()
def stats(json: JsonOpt = False) -> None:
    """Counts of what the store holds, and the files that failed to parse."""
    with open_store() as store:
        counts = store.counts()
        errors = [
            {"source": s, "path": p, "reason": r, "at": a}
            for s, p, r, a in store.conn.execute(
                "SELECT source, path, reason, at FROM ingest_errors"
            )
        ]
    if json:
        print_json({"counts": counts, "ingest_errors": errors})
        return
    _print_counts(counts)
    for e in errors:
        console.print(
            f"[yellow]skipped[/] {e['source']}:{e['path']}: {e['reason']}", highlight=False
        )


@app.command("verify-anchors")
def verify_anchors(
    json: JsonOpt = False,
    full: Annotated[
        bool, typer.Option(help="Re-parse every stage, even files that did not change.")
    ] = False,
) -> None:
    """Report every stored line id whose stage no longer holds that text at that position.

    Exits 1 when any anchor drifted.
    """
    from arklore.corpus.anchors import verify_anchors as run

    s = settings()
    with open_store() as store, progress_bar(not json) as progress:
        report = run(s, store, full=full, progress=progress)
    if json:
        print_json(report.to_dict())
    else:
        console.print(
            f"{report.anchors:,} anchors in {report.stages_checked:,} stages "
            f"({report.stages_reparsed} re-parsed): {len(report.drifts)} drifted {report.by_kind()}",
            highlight=False,
        )
        for d in report.drifts[:50]:
            where = f" -> now at {d.now_line_nos}" if d.now_line_nos else ""
            now = f" now: {d.now_text[:40]!r}" if d.now_text else ""
            console.print(f"  {d.kind:13} {d.line_id}{where}{now}", highlight=False)
        if len(report.drifts) > 50:
            console.print(f"  ... {len(report.drifts) - 50} more (use --json)")
    raise typer.Exit(0 if report.ok else 1)


@operators_app.command("show")
def operators_show(query: str, json: JsonOpt = False) -> None:
    """Show one operator by id, Chinese name or appellation."""
    from arklore.core.errors import AmbiguousNameError, UnknownNameError

    with open_store() as store:
        rows = store.conn.execute(
            "SELECT char_id, data FROM operators WHERE char_id = ?1 OR name = ?1"
            " OR lower(appellation) = lower(?1)",
            (query,),
        ).fetchall()
        if not rows:
            raise UnknownNameError(f"no operator called {query!r}")
        if len(rows) > 1:
            raise AmbiguousNameError(query, [r[0] for r in rows])
        data = orjson.loads(rows[0][1])
        sp = store.conn.execute(
            "SELECT line_count, stage_count FROM speakers WHERE name = ?", (data["name"],)
        ).fetchone()
        data["speaker_lines"], data["speaker_stages"] = sp if sp else (0, 0)
    if json:
        print_json(data)
        return
    for k, v in data.items():
        if v not in (None, [], ""):
            console.print(f"[bold]{k}[/]: {v}", highlight=False)


@app.command()
def speakers(
    json: JsonOpt = False,
    limit: Annotated[int, typer.Option(help="How many, by line count.")] = 30,
    npc_only: Annotated[
        bool, typer.Option("--npc", help="Only speakers no operator id matches.")
    ] = False,
) -> None:
    """The speaker whitelist: every distinct normalized speaker name with its line count."""
    where = "WHERE char_id IS NULL" if npc_only else ""
    with open_store() as store:
        rows = store.conn.execute(
            f"SELECT name, line_count, stage_count, avg_lines, astr_lines, char_id FROM speakers {where}"
            " ORDER BY line_count DESC, name LIMIT ?",
            (limit,),
        ).fetchall()
    keys = ("name", "line_count", "stage_count", "avg_lines", "astr_lines", "char_id")
    if json:
        print_json([dict(zip(keys, r, strict=True)) for r in rows])
        return
    t = Table(*keys)
    for r in rows:
        t.add_row(*(str(v) if v is not None else "" for v in r))
    console.print(t)


@app.command()
def crosscheck(
    json: JsonOpt = False,
    from_files: Annotated[
        bool, typer.Option("--from-files", help="Re-read both sources instead of using the store.")
    ] = False,
    limit: Annotated[int, typer.Option(help="Disagreeing stages to list in the text report.")] = 30,
) -> None:
    """Compare the stages present in both sources line by line, judged per field."""
    from arklore.corpus import crosscheck as cc

    s = settings()
    with progress_bar(not json) as progress:
        tick = lambda done, total: progress("crosscheck", done, total)  # noqa: E731
        if from_files:
            report = cc.crosscheck(s.avg_story_root(), s.astr_story_root(), tick)
        else:
            with open_store() as store:
                report = cc.crosscheck_store(store, tick)
    if json:
        print_json(report.to_dict())
        return
    _print_crosscheck(report, limit)


def _print_crosscheck(report, limit: int) -> None:
    console.print(report.summary(), highlight=False)
    if report.disagreeing:
        t = Table("stage", "category", "first difference (raw | ASTR)")
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


@app.command()
def demo(json: JsonOpt = False) -> None:
    """The main job on the real data: ingest both sources, cross-check them, resolve speakers,
    build the relation graph (no LLM) and show one operator's strongest relations."""
    from arklore.cli.graph import _build_and_save, _registered_imports
    from arklore.corpus import crosscheck as cc
    from arklore.corpus.ingest import ingest as run_ingest
    from arklore.names.audit import audit

    s = settings()
    s.require_gamedata()
    s.require_astr()
    with Store(s.db_path) as store:
        with progress_bar(not json) as progress:
            report = run_ingest(s, store, progress=progress)
            check = cc.crosscheck_store(store, lambda d, t: progress("crosscheck", d, t))
        top = store.conn.execute(
            "SELECT name, line_count FROM speakers ORDER BY line_count DESC LIMIT 10"
        ).fetchall()
        names = audit(store)
    graph, graph_report = _build_and_save(None, _registered_imports(), json=True)
    anchors = [
        {
            "target": graph.nodes[e.target].name if e.target in graph.nodes else e.target,
            "predicate": e.predicate,
            "strength": e.strength,
            "sources": e.sources,
        }
        for e in graph.get_top_anchor_relations(DEMO_OPERATOR, 3)
    ]
    if json:
        print_json(
            {
                "ingest": report.to_dict(),
                "crosscheck": check.to_dict(),
                "top_speakers": top,
                "names": {k: names[k] for k in ("big_speakers_operators", "big_speakers_npcs")}
                | {"suspects": len(names["suspects"])},
                "graph": graph_report,
                "anchors": {DEMO_OPERATOR: anchors},
            }
        )
        return
    console.rule("arklore demo: corpus")
    _print_counts(report.counts)
    parsed = sum(r.added + r.updated for r in report.sources.values())
    unchanged = sum(r.unchanged for r in report.sources.values())
    console.print(
        f"ingest took {report.seconds:.1f} s ({parsed} stages parsed, {unchanged} unchanged, "
        f"{len(report.errors)} skipped)",
        highlight=False,
    )
    console.print("top speakers: " + ", ".join(f"{n} {c:,}" for n, c in top), highlight=False)
    console.rule("cross-check of the two sources")
    _print_crosscheck(check, 10)
    console.rule("names")
    console.print(
        f"speakers with >= 200 lines: {names['big_speakers_operators']} operators, "
        f"{names['big_speakers_npcs']} NPCs; {len(names['suspects'])} suspects for "
        "`arklore names audit`",
        highlight=False,
    )
    console.rule("relation graph (no LLM)")
    from arklore.cli.graph import _print_build

    _print_build(graph_report)
    console.print(f"{DEMO_OPERATOR} 阿米娅's strongest relations:", highlight=False)
    for i, a in enumerate(anchors, 1):
        console.print(
            f"  {i}. {a['target']}  {a['predicate']}  {a['strength']:.3f}  {a['sources']}",
            highlight=False,
            markup=False,
        )


DEMO_OPERATOR = "char_002_amiya"
