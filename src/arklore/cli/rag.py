"""Relation RAG commands: `arklore rag build`, `arklore rag status`, `arklore context`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arklore.cli._common import console, err_console, print_json, progress_bar, settings
from arklore.cli.app import app

JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable result on stdout.")]

rag_app = typer.Typer(help="The relation RAG index (ChromaDB).", no_args_is_help=True)
app.add_typer(rag_app, name="rag")


@rag_app.command("build")
def rag_build(
    graph: Annotated[
        Path | None,
        typer.Option("--graph", help="Graph file (default: $ARKLORE_HOME/relation_graph.json)."),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder", help="e5-small | bge-small-zh | hash (default: ARKLORE_EMBEDDER)."
        ),
    ] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Template descriptions even when an LLM is configured.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild even when nothing changed.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Rebuild the relation index from the graph (and extracted relations): full replacement.

    Run it after every change to the matrix or the graph (`arklore graph build` first); the
    previous index keeps serving until the new one is complete.
    """
    from arklore.graph.io import default_graph_path, load_graph
    from arklore.rag.embedders import get_embedder
    from arklore.rag.index import build_index

    s = settings()
    gpath = graph or default_graph_path(s.home)
    g = load_graph(gpath)
    emb = get_embedder(embedder)
    store = None
    if s.db_path.exists():
        from arklore.corpus.store import Store

        store = Store(s.db_path, create=False)
    describer = None
    llm = None
    from arklore.rag.describe import llm_configured

    if not no_llm and llm_configured():
        from arklore.llm import LLM
        from arklore.rag.describe import llm_describer

        llm = LLM(s.home)
        describer = llm_describer(llm, s.home)
    try:
        with progress_bar(not json) as progress:
            report = build_index(
                s.home, g, graph_path=str(gpath), store=store, embedder=emb,
                describer=describer, progress=progress, force=force,
            )  # fmt: skip
    finally:
        if store is not None:
            store.close()
        if llm is not None:
            llm.close()
    if json:
        print_json(report.to_dict())
        return
    if report.unchanged:
        console.print(
            f"relation index {report.collection} is up to date: {report.documents} documents, "
            f"nothing embedded, {report.seconds:.2f}s [{report.embedder}]",
            highlight=False,
        )
        return
    console.print(
        f"relation index {report.collection}: {report.documents} documents "
        f"({', '.join(f'{k} {v}' for k, v in sorted(report.by_source.items()))}), "
        f"{report.embedded} embedded, {report.cached} from cache, {report.rejected} rejected, "
        f"{report.seconds:.2f}s [{report.embedder}]",
        highlight=False,
    )
    if report.rejected:
        err_console.print(f"rejected documents: see {report.errors_path}", highlight=False)


@rag_app.command("status")
def rag_status(json: JsonOpt = False) -> None:
    """Which collection is live, with which embedder and how many documents."""
    from arklore.rag.index import RagIndexError, read_pointer

    ptr = read_pointer(settings().home)
    if ptr is None:
        raise RagIndexError("no relation index yet")
    if json:
        print_json(ptr)
    else:
        for k, v in ptr.items():
            console.print(f"{k}: {v}", highlight=False)


@app.command("context")
def context_cmd(
    operator: Annotated[str, typer.Argument(help="Operator id or name (whose view).")],
    message: Annotated[str, typer.Argument(help="The user's chat message.")],
    l3: Annotated[
        str | None,
        typer.Option(
            "--l3", help="Comma-separated target ids the other memory layer already recalled."
        ),
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Token budget (default 800).")
    ] = None,
    json: JsonOpt = False,
) -> None:
    """The relation context a chat turn with OPERATOR would inject for MESSAGE."""
    from arklore.core.errors import UnknownNameError
    from arklore.rag.context import RelationRAG

    rag = RelationRAG(settings().home)
    op = rag.graph.resolve(operator)
    if op is None:
        raise UnknownNameError(f"{operator!r} is not a node of the relation graph")
    targets = [x.strip() for x in (l3 or "").split(",") if x.strip()]
    ctx = rag.build_context(op, message, targets, budget=budget)
    if json:
        print_json({"operator_id": op, **ctx.to_dict()})
    else:
        console.print(ctx.text or "(no relation context)", highlight=False, soft_wrap=True)
