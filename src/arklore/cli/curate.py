"""Curation commands: relation candidates for one person, with evidence, for the matrix."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from arklore.cli import group
from arklore.cli._common import JsonOpt, console, print_json, workspace
from arklore.graph.confirm import EDITED, STATUSES
from arklore.graph.curate import CandidateReport

app = group("curate", "Curate the relationship matrix from the corpus.")


@app.command("candidates")
def candidates_cmd(
    operator: Annotated[
        str, typer.Argument(help="Operator name, alias or char id (or 博士, an NPC speaker).")
    ],
    json: JsonOpt = False,
    with_: Annotated[
        str | None, typer.Option("--with", help="Only the candidate relation with this person.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many candidates.")] = 15,
    per_signal: Annotated[
        int, typer.Option("--per-signal", min=0, help="Evidence lines shown per signal.")
    ] = 2,
    no_graph: Annotated[
        bool, typer.Option("--no-graph", help="Skip interaction signals from the graph.")
    ] = False,
    brief: Annotated[
        bool, typer.Option("--brief", help="Evidence lines only, without their context.")
    ] = False,
) -> None:
    """Relations worth curating for OPERATOR: vocatives, kinship/role words, archive
    sentences and interaction, each with its evidence lines and +-2 lines of context."""
    report = workspace().graph.curate_candidates(
        operator, use_graph=not no_graph, limit=limit, per_signal=per_signal, only=with_
    )
    if json:
        print_json(report.to_dict())
        return
    _print_report(report, brief)


def _flat(text: str, cut: int) -> str:
    text = " ".join(text.split())
    return text[:cut] + "…" if cut and len(text) > cut else text


def _print_report(report: CandidateReport, brief: bool = False) -> None:
    out = console.print
    out(
        f"{report.name} ({report.node}): {report.lines} lines in {report.stages} stages "
        f"as {', '.join(report.speaker_names) or '-'}",
    )
    if not report.candidates:
        out("no candidates")
    for i, c in enumerate(report.candidates, 1):
        sig = " ".join(f"{k}={v}" for k, v in sorted(c.signals.items()))
        inter = " ".join(
            f"{k}={v:.3f}" if k == "strength" else f"{k}={v:g}" for k, v in c.interaction.items()
        )
        out(f"\n{i}. {c.name} ({c.node})  score {c.score:g}")
        if sig:
            out(f"   signals: {sig}")
        if c.words:
            words = ", ".join(f"{w}×{n}" for w, n in c.words.items())
            out(f"   words: {words}")
        if inter:
            out(f"   graph: {inter}")
        for s in c.suggestions:
            out(
                f"   suggest: {s.source} -> {s.target} {s.predicate} ({s.because})",
            )
        for ev in c.evidence:
            word = f" [{ev.word}]" if ev.word else ""
            out(f"   [{ev.signal}{word}] {ev.line_id}")
            for ctx in ev.context:
                if brief and not ctx.focus:
                    continue
                mark = ">" if ctx.focus else " "
                out(
                    f"     {mark} {ctx.speaker or '(narration)'}: {_flat(ctx.text, 0)}",
                )
        for a in c.archive:
            out(
                f"   [{a.signal}] {a.char_id} {a.title}: {_flat(a.sentence, 0)}",
            )


@app.command("central")
def central_cmd(
    n: Annotated[int, typer.Argument(min=1, help="How many operators.")] = 60,
    json: JsonOpt = False,
) -> None:
    """The N operators with the most story lines (the set the shipped matrix covers)."""
    rows = workspace().graph.central(n)
    if json:
        print_json(rows)
        return
    for i, r in enumerate(rows, 1):
        console.print(f"{i:3}. {r['name']} ({r['char_id']}) {r['lines']:,}")


@app.command("check")
def check_cmd(
    matrix: Annotated[
        Path | None,
        typer.Option("--matrix", help="Relationship matrix TOML (default: the packaged one)."),
    ] = None,
    central: Annotated[
        int,
        typer.Option(
            "--central", min=0, help="Also report coverage of the N most central operators."
        ),
    ] = 60,
    json: JsonOpt = False,
) -> None:
    """Check a matrix against the corpus without building the graph: evidence ids must name
    stored lines and both parties must be around one of them. Exits 1 on any rejection."""
    out = workspace().graph.check_matrix(matrix, central=central)
    failures = out["rejected"]
    if json:
        print_json(out)
    else:
        console.print(
            f"{out['relations']} relations ({out['with_evidence']} with evidence), "
            f"{len(failures)} rejected; {out['central_with_2']}/{out['central']} central operators "
            "have >= 2",
        )
        for f in failures:
            console.print(
                f"rejected: line {f['line']} {f['from']} -> {f['to']}: {f['reason']}",
            )
        for s in out["central_short"]:
            console.print(f"short: {s['name']} ({s['char_id']}) has {s['relations']}")
    if failures:
        raise typer.Exit(1)


@app.command("search")
def search_cmd(
    text: Annotated[str, typer.Argument(help="Substring of the line text ('' for any).")],
    speaker: Annotated[
        str | None, typer.Option("--speaker", help="Only lines spoken by this person.")
    ] = None,
    near: Annotated[
        str | None,
        typer.Option("--near", help="Only lines with this person speaking within +-2 lines."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 20,
    json: JsonOpt = False,
) -> None:
    """Primary-corpus lines containing TEXT, with their line ids and +-2 lines of context."""
    hits = workspace().graph.search_lines(text, speaker=speaker, near=near, limit=limit)
    if json:
        print_json([asdict(h) for h in hits])
        return
    for h in hits:
        console.print(f"{h.line_id}")
        for c in h.context:
            mark = ">" if c.focus else " "
            console.print(
                f"   {mark} {c.speaker or '(narration)'}: {_flat(c.text, 0)}",
            )


# -- a person's verdicts on the curated relations ------------------------------------------------
@app.command("status")
def status_cmd(
    json: JsonOpt = False,
    unconfirmed: Annotated[
        bool,
        typer.Option(
            "--unconfirmed", help="Only those waiting for a person (unconfirmed, edited)."
        ),
    ] = False,
) -> None:
    """Every curated relation the next graph build layers, with its status: unconfirmed,
    confirmed, rejected, or edited-since-confirmed (an edit voids a verdict); counts per status."""
    out = workspace().graph.curated_status()
    if unconfirmed:
        out["relations"] = [r for r in out["relations"] if r["status"] in ("unconfirmed", EDITED)]
    if json:
        print_json(out)
        return
    for r in out["relations"]:
        by = f"  ({r['by']}, {r['at']})" if r["verdict"] else ""
        console.print(
            f"{r['status']:<22} {r['from_name']} -> {r['to_name']} {r['predicate']}  "
            f"[{r['matrix']}:{r['line']}]{by}",
        )
    console.print(", ".join(f"{out['counts'][s]} {s}" for s in STATUSES))


FromArg = Annotated[str, typer.Argument(help="Whose view: a name, alias or node id.")]
ToArg = Annotated[str, typer.Argument(help="Of whom: a name, alias or node id.")]
PredicateOpt = Annotated[
    str | None,
    typer.Option("--predicate", help="The relation's predicate, when the pair has several."),
]
ByOpt = Annotated[str, typer.Option("--by", help="Your name, recorded with the verdict.")]
NoteOpt = Annotated[str, typer.Option("--note", help="A note kept with the verdict.")]


def _verdict(
    verdict: str, frm: str, to: str, predicate: str | None, by: str, note: str, json: bool
) -> None:
    row = workspace().graph.curate_verdict(frm, to, verdict, predicate=predicate, by=by, note=note)
    if json:
        print_json(row)
        return
    console.print(
        f"{row['status']}: {row['from_name']} -> {row['to_name']} {row['predicate']} "
        f"[{row['matrix']}:{row['line']}] by {row['by']}",
    )


@app.command("confirm")
def confirm_cmd(
    frm: FromArg, to: ToArg, predicate: PredicateOpt = None, by: ByOpt = "cli",
    note: NoteOpt = "", json: JsonOpt = False,
) -> None:  # fmt: skip
    """Confirm the curated relation FROM -> TO as its text is now (an edit voids it)."""
    _verdict("confirmed", frm, to, predicate, by, note, json)


@app.command("reject")
def reject_cmd(
    frm: FromArg, to: ToArg, predicate: PredicateOpt = None, by: ByOpt = "cli",
    note: NoteOpt = "", json: JsonOpt = False,
) -> None:  # fmt: skip
    """Reject the curated relation FROM -> TO: every graph build leaves it out (reported)."""
    _verdict("rejected", frm, to, predicate, by, note, json)
