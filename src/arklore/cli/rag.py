"""Relation RAG commands: `arklore rag build`, `arklore rag status`, `arklore context`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arklore.cli import group
from arklore.cli._common import (
    DryRunOpt,
    JsonOpt,
    L3Opt,
    MessageArg,
    OperatorArg,
    console,
    err_console,
    print_json,
    progress_bar,
    read_message,
    say,
    workspace,
)
from arklore.rag.embedders import EMBEDDER_NAMES
from arklore.rag.index import RagIndexMissingError

app = typer.Typer()
rag_app = group("rag", "The relation RAG index (ChromaDB).")


def _known_embedder(name: str | None) -> str | None:
    """An --embedder arklore has, checked before a dry run too (it builds nothing)."""
    if name is not None and name not in EMBEDDER_NAMES:
        raise typer.BadParameter(
            f"unknown embedder {name!r}: use one of {', '.join(EMBEDDER_NAMES)}"
        )
    return name


@rag_app.command("build")
def rag_build(
    graph: Annotated[
        Path | None,
        typer.Option(
            "--graph",
            exists=True,
            dir_okay=False,
            help="Graph file (default: $ARKLORE_HOME/relation_graph.json).",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            callback=_known_embedder,
            help=f"{' | '.join(EMBEDDER_NAMES)} (default: ARKLORE_EMBEDDER).",
        ),
    ] = None,
    no_llm: Annotated[
        bool,
        typer.Option(
            "--no-llm", help="Evidence-built descriptions even when an LLM is configured."
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild even when nothing changed.")
    ] = False,
    dry_run: DryRunOpt = False,
    json: JsonOpt = False,
) -> None:
    """Rebuild the relation index from the graph (and extracted relations): full replacement.

    Run it after every change to the matrix or the graph (`arklore graph build` first); the
    previous index keeps serving until the new one is complete. With --dry-run: what the LLM
    descriptions (task relation_descriptions) would cost, nothing sent or built.
    """
    if dry_run:
        est = workspace().rag.dry_run(graph)
        if json:
            print_json(vars(est))
        else:
            console.print(f"relation descriptions: {est.line()}", highlight=False)
        return
    with progress_bar(not json) as progress:
        report = workspace().build_index(
            embedder=embedder, no_llm=no_llm, force=force, graph_path=graph, progress=progress
        )
    if json:
        print_json(report.to_dict())
        return
    if report.unchanged:
        console.print(
            f"relation index {report.collection} is up to date: {report.documents} documents, "
            f"nothing embedded, {report.seconds:.2f}s [{report.embedder}]",
        )
        return
    console.print(
        f"relation index {report.collection}: {report.documents} documents "
        f"({', '.join(f'{k} {v}' for k, v in sorted(report.by_source.items()))}), "
        f"{report.embedded} embedded, {report.cached} from cache, {report.rejected} rejected, "
        f"{report.seconds:.2f}s [{report.embedder}]",
    )
    if report.gate_reasons:
        console.print(
            "LLM descriptions not used (evidence-built kept): "
            + ", ".join(f"{k} {v}" for k, v in sorted(report.gate_reasons.items())),
            highlight=False,
        )
    if report.rejected:
        err_console.print(f"rejected documents: see {report.errors_path}")


@rag_app.command("status")
def rag_status(json: JsonOpt = False) -> None:
    """Which collection is live, with which embedder, how many documents, whether it is older
    than the graph, and the disk it uses."""
    ptr = workspace().rag.status()
    if ptr is None:
        raise RagIndexMissingError("no relation index (rag)", workspace().paths.home)
    if json:
        print_json(ptr)
        return
    for k, v in ptr.items():
        if k not in ("stale", "graph"):
            console.print(f"{k}: {v}")
    if ptr["stale"]:
        say("stale:", "yellow", ptr["stale"])


@app.command("context")
def context_cmd(
    operator: OperatorArg,
    message: MessageArg,
    l3: L3Opt = None,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Token budget (default 800).")
    ] = None,
    json: JsonOpt = False,
) -> None:
    """The relation context a chat turn with OPERATOR would inject for MESSAGE."""
    ws = workspace()
    message = read_message(message, ws.settings.max_message_chars)
    targets = [ws.graph.node(x.strip()) for x in (l3 or "").split(",") if x.strip()]
    sp = ws.chat.speaker(operator)
    ctx = ws.chat.relation_context(sp, message, targets, budget)
    for w in ctx.warnings:
        say("warning:", "yellow", w)
    if json:
        print_json({"operator_id": sp.node_id, **ctx.to_dict()})
    else:
        console.print(ctx.text or "(no relation context)")
