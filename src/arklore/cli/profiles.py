"""Character profile commands: `arklore distill`, `arklore persona`, `arklore review-queue`
(approving a draft is `arklore review approve`), and `arklore chars check` for the user's own
.char files.

Exit codes of `distill` (see arklore.core.errors): 0 done; 3 some tasks failed for some
operators (see distill_errors.jsonl; rerun to retry); 4 stopped early (endpoint unreachable
or --max-cost; rerun resumes); 5 done, with gate findings to review (quotes removed,
anchor fields corrected, people dropped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arklore.base.files import atomic_write_text
from arklore.cli import group
from arklore.cli._common import (
    BatchOptions,
    CharsDirOpt,
    JsonOpt,
    OperatorArg,
    batch_command,
    console,
    end_llm_run,
    err_console,
    print_json,
    progress_bar,
    styled,
    workspace,
)
from arklore.core.errors import EXIT_FINDINGS
from arklore.profiles.distill import TASK_NAMES, DistillReport, total_estimate
from arklore.profiles.userdir import FileCheck

app = typer.Typer()

TaskOpt = Annotated[
    list[str],
    typer.Option("--task", help="A, B, C, D, E or all (repeat or comma-separate for several)."),
]
OpOpt = Annotated[
    list[str] | None,
    typer.Option("--op", help="An operator (any name the alias table knows, or her id); repeat."),
]


@app.command("distill")
@batch_command
def distill_cmd(
    task: TaskOpt = ["all"],  # noqa: B006 - typer reads the default, never mutates it
    op: OpOpt = None,
    out: CharsDirOpt = None,
    generated_at: Annotated[
        str | None,
        typer.Option("--generated-at", hidden=True, help="Pin the header's generated time."),
    ] = None,
    json: JsonOpt = False,
    *,
    batch: BatchOptions,
) -> None:
    """Draft character profiles (.char) from the archives, voice and story lines: A anchor,
    B quotes + personality, C attitude to the Doctor, D her key people, E relation candidates.

    Tasks with a model configured (LLM_DISTILL_<X>_MODEL / _BASE_URL / _API_KEY, else the
    global LLM_*) use it; without one A and B run their documented rules, C and D are
    skipped. Files written by a person (tier S, or ARKLORE_CHARS_DIR) and hand-edited files
    are never overwritten: the new draft goes beside them.
    """
    ws = workspace()
    if batch.dry_run:
        parts = ws.profiles.distill_dry_run(task, op)
        total = total_estimate(parts)
        if json:
            print_json({t: vars(e) for t, e in parts.items()} | {"total": vars(total)})
            return
        for t, est in parts.items():
            model = ws.settings.llm_config(TASK_NAMES[t]).model
            console.print(f"task {t} ({TASK_NAMES[t]}, {model}): {est.line()}")
        console.print(f"all tasks: {total.line()}")
        return
    with progress_bar(not json) as progress:
        report = ws.profiles.distill(
            task,
            op,
            out=out,
            generated_at=generated_at,
            progress=progress,
            **batch.run_options(),
        )
    if json:
        print_json(report.to_dict())
        if report.cost_line:
            err_console.print(report.cost_line)
    else:
        _print_report(report)
    end_llm_run(report.stopped, report.failed, report.exit_code)


def _print_report(r: DistillReport) -> None:
    llm = f"; with a model: {', '.join(r.llm_tasks)}" if r.llm_tasks else "; no model"
    console.print(f"{r.operators} operators, tasks {', '.join(r.tasks)}{llm}")
    for t in r.tasks:
        counts = r.statuses.get(t, {})
        console.print(f"  {t}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if r.llm_tasks:
        console.print(
            f"requests: {r.done} run ({r.cached} from cache), {r.resumed} already stored, "
            f"{r.failed} failed, {r.not_started} not sent",
        )
    console.print(
        "files: " + (", ".join(f"{k} {v}" for k, v in sorted(r.writes.items())) or "none"),
    )
    if r.protected:
        console.print(f"{len(r.protected)} written by a person (skipped)")
    if r.findings:
        console.print(styled(f"{len(r.findings)} gate findings", "yellow", ":"))
        for f in r.findings[:10]:
            console.print(f"  {f}")
        if len(r.findings) > 10:
            console.print(f"  ... see {r.errors_file} and `arklore review-queue`")
    if r.cost_line:
        console.print(r.cost_line)


@app.command("persona")
def persona_cmd(
    operator: OperatorArg,
    json: JsonOpt = False,
) -> None:
    """Exactly the sections a chat may inject for her tier, with their token counts
    (S/A: all; B: 锚, 物理标签 and verified quotes; C: nothing, and no relation context)."""
    p = workspace().profiles.persona(operator)
    if json:
        print_json(p.to_dict())
        return
    edited = " (edited by hand)" if p.hand_edited else ""
    where = p.path or "no profile"
    console.print(f"{p.name} ({p.char_id}): tier {p.tier}{edited}, {where}")
    for s in p.sections:
        console.print(f"## {s.title}  [{s.tokens} tokens]")
        console.print(s.text)
    for title, why in p.excluded:
        console.print(f"(not used: {title}: {why})")
    console.print(f"total: {p.total_tokens} tokens")
    if p.note:
        console.print(p.note)


@app.command("review-queue")
def review_queue_cmd(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Where to write it (default $ARKLORE_HOME/char-auto-review-queue.md)."
        ),
    ] = None,
    html: Annotated[bool, typer.Option("--html", help="A self-contained HTML page.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the 10% relation-document sample.")] = 0,
    op: OpOpt = None,
    json: JsonOpt = False,
) -> None:
    """Per operator: her .char file and tier, each task's status and why, quotes the
    verbatim gate removed, anchor fields set back to source, the sources used, a seeded 10%
    sample of her relation documents; then every operator some source has nothing for."""
    ws = workspace()
    queue = ws.profiles.review_queue(seed=seed, operators=op)
    target = out or ws.paths.review_queue
    if html and out is None:
        target = target.with_suffix(".html")
    atomic_write_text(target, queue.html() if html else queue.markdown())
    if json:
        print_json({"path": str(target)} | queue.to_dict())
        return
    tiers: dict[str, int] = {}
    for e in queue.entries:
        tiers[e.tier] = tiers.get(e.tier, 0) + 1
    attention = sum(1 for e in queue.entries if e.needs_attention())
    console.print(
        f"{len(queue.entries)} operators in the queue (tiers "
        + ", ".join(f"{t} {n}" for t, n in sorted(tiers.items()))
        + f"), {attention} need attention; {len(queue.no_source)} with missing sources",
    )
    console.print(f"wrote {target}")


chars_app = group("chars", "Your own .char files (ARKLORE_CHARS_DIR).")


@chars_app.command("check")
def chars_check_cmd(
    folder: Annotated[
        Path | None,
        typer.Argument(help="The folder of .char files (default: ARKLORE_CHARS_DIR)."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """For each .char file of the folder: the operator it maps to (its `- operator:` header,
    else its file name as any name, alias or char id), its tier, the sections a chat will
    inject, headings read in the design's spelling (锚段, 我段·性格 ...); and the files that
    map to nobody, with the closest names. Never writes. Exit codes: 0 every file is used;
    5 some file maps to nobody or is shadowed by another file for the same operator."""
    checks = workspace().chat.chars_check(folder)
    findings = sum(1 for c in checks if not c.used)
    if json:
        print_json(
            {"files": [c.to_dict() for c in checks], "used": len(checks) - findings,
             "not_used": findings}
        )  # fmt: skip
    else:
        for c in checks:
            _print_check(c)
        console.print(f"{len(checks)} files: {len(checks) - findings} used, {findings} not used")
    raise typer.Exit(EXIT_FINDINGS if findings else 0)


def _print_check(c: FileCheck) -> None:
    if c.char_id is None:
        near = f" (closest: {', '.join(c.closest)})" if c.closest else ""
        console.print(styled(c.file, "bold red", f": maps to no operator: {c.problem}{near}"))
        return
    console.print(
        styled(c.file, "bold", f" -> {c.name} ({c.char_id}) by its {c.mapped_by}, tier {c.tier}")
    )
    if not c.used:
        console.print(styled("  not used: ", "yellow", c.problem))
        return
    console.print("  injects: " + (", ".join(c.injected) or "nothing"))
    if c.left_out:
        console.print(f"  {c.left_out}")
    for title, why in c.excluded:
        console.print(f"  not used: {title}: {why}")
    if c.design_headings:
        console.print(
            "  read as arklore's: " + ", ".join(f"{h} -> {t}" for h, t in c.design_headings)
        )
    if c.own_sections:
        console.print("  sections you added: " + ", ".join(c.own_sections))
