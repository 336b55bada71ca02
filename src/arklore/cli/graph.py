"""Relation graph commands: build, show, relation, neighbors, export, import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from arklore.cli import group
from arklore.cli._common import (
    JsonOpt,
    console,
    err_console,
    print_json,
    progress_bar,
    say,
    table,
    workspace,
)
from arklore.core.errors import UsageError
from arklore.core.predicates import PREDICATE_NAMES
from arklore.graph.io import edge_record, save_graph
from arklore.graph.model import INTERACTION, ORIGINS, Edge, RelationGraph
from arklore.graph.strength import contributions

app = group("graph", "The relation graph (no LLM needed).")


def print_build(report: dict[str, Any]) -> None:
    c = report["counts"]
    console.print(
        f"graph: {c['nodes']:,} nodes ({c['operator_nodes']} operators, "
        f"{c['operator_nodes_with_edges']} with edges; {c['npc_nodes']:,} NPCs), "
        f"{c['edges']:,} edges ({c['named_edges']:,} named), "
        f"{c['edges_over_threshold']:,} with strength > 0.6",
    )
    m = report.get("matrix") or {}
    if len(m.get("paths") or ()) > 1:
        console.print(
            f"matrices: {' + '.join(m['paths'])} ({m['replaced']} packaged relations replaced "
            "by yours)"
        )
    cur = report.get("curated") or {}
    if cur:
        console.print(
            f"curated relations: {cur['with_evidence']} with evidence, "
            f"{cur['no_evidence']} without, {cur['rejected']} rejected",
        )
    for r in report.get("curated_rejected") or []:
        console.print(
            f"rejected: {r['path']}:{r['line']} {r['from']} -> {r['to']}: {r['reason']}",
        )
    ver = report.get("verdicts") or {}
    if ver:
        n = ver["counts"]
        only = (
            f", {ver['unconfirmed_left_out']} unconfirmed left out" if ver["confirmed_only"] else ""
        )
        console.print(
            f"verdicts: {n['confirmed']} confirmed, {n['rejected']} rejected (left out){only}"
        )
    for r in ver.get("rejected") or []:
        console.print(f"rejected by a person: {r['path']}:{r['line']} {r['from']} -> {r['to']}")
    console.print(f"wrote {report['path']} in {report['seconds']:.1f} s")


@app.command("build")
def build(
    json: JsonOpt = False,
    matrix: Annotated[
        Path | None,
        typer.Option(
            "--matrix",
            help="Your relationship matrix TOML, layered over the packaged one (your view of "
            "a pair wins).",
        ),
    ] = None,
    matrix_replace: Annotated[
        bool,
        typer.Option("--matrix-replace", help="Your --matrix replaces the packaged one."),
    ] = False,
    imports: Annotated[
        list[Path] | None,
        typer.Option("--import", help="Also merge this relation import JSON (repeatable)."),
    ] = None,
) -> None:
    """Build relation_graph.json under ARKLORE_HOME from the corpus, the matrix and imports."""
    ws = workspace()
    if matrix_replace and len(ws.graph.matrices(matrix, replace=False)) == 1:
        raise UsageError("--matrix-replace needs your matrix: --matrix PATH (or ARKLORE_MATRIX)")
    with progress_bar(not json) as progress:
        built = ws.graph.build(
            matrix=matrix,
            replace=True if matrix_replace else None,
            imports=[*ws.graph.imports(), *(imports or [])],
            progress=progress,
        )
    if json:
        print_json(built.report)
    else:
        print_build(built.report)
    for w in built.report.get("warnings", []):
        say("warning:", "yellow", w)


def _edge_json(graph: RelationGraph, e: Edge) -> dict[str, Any]:
    d = edge_record(e)
    d["target_name"] = graph.nodes[e.target].name if e.target in graph.nodes else e.target
    d["source_name"] = graph.nodes[e.source].name if e.source in graph.nodes else e.source
    d["contributions"] = {k: round(v, 4) for k, v in contributions(e.signals).items() if v}
    return d


def _signals_text(e: Edge) -> str:
    return " ".join(f"{k}={v}" for k, v in e.signals.items())


def _edges_table(graph: RelationGraph, edges: list[Edge], title: str) -> Any:
    t = table("target", "predicate", "strength", "origins", "signals", title=title)
    for e in edges:
        name = graph.nodes[e.target].name if e.target in graph.nodes else e.target
        t.add_row(
            f"{name} ({e.target})",
            e.predicate,
            f"{e.strength:.4f}",
            ",".join(e.origins),
            _signals_text(e),
        )
    return t


@app.command("show")
def show(
    operator: Annotated[
        str, typer.Argument(help="Operator name, alias or char id (or npc:<name>).")
    ],
    json: JsonOpt = False,
    k: Annotated[int, typer.Option("-k", help="How many anchors to list (1 or more).")] = 3,
) -> None:
    """One node: its faction and its k strongest relations with the signals behind each."""
    if k < 1:
        raise UsageError(f"-k {k}: must be 1 or more")
    ws = workspace()
    graph = ws.graph.current()
    nid = ws.graph.node(operator)
    node = graph.nodes[nid]
    top = graph.get_top_anchor_relations(nid, k)
    faction = graph.get_faction(nid)
    if json:
        print_json(
            {
                "id": node.id, "name": node.name, "kind": node.kind, "faction": node.faction,
                "faction_members": {kind: len(m) for kind, m in faction.items()},
                "degree": len(graph.out_edges(nid)),
                "anchors": [_edge_json(graph, e) for e in top],
            }
        )  # fmt: skip
        return
    fac = ", ".join(
        f"{kind} {name} ({len(faction.get(kind, []))} others)"
        for kind, name in node.faction.items()
    )
    console.print(f"{node.name} ({node.id}, {node.kind}){': ' + fac if fac else ''}")
    console.print(f"top {len(top)} of {len(graph.out_edges(nid))} relations:")
    for i, e in enumerate(top, 1):
        _print_edge(graph, e, i)


def _print_edge(graph: RelationGraph, e: Edge, i: int) -> None:
    name = graph.nodes[e.target].name if e.target in graph.nodes else e.target
    console.print(
        f"{i}. {name} ({e.target})  {e.predicate}  strength {e.strength:.4f}  [{', '.join(e.origins)}]",
    )
    contrib = ", ".join(f"{k} {v:.3f}" for k, v in contributions(e.signals).items() if v)
    console.print(f"   signals: {_signals_text(e)}")
    console.print(f"   contributions: {contrib}")
    if e.description:
        console.print(f"   description: {e.description}")


@app.command("relation")
def relation(a: str, b: str, json: JsonOpt = False) -> None:
    """Every edge a -> b (A's view of B)."""
    ws = workspace()
    graph = ws.graph.current()
    ida, idb = ws.graph.node(a), ws.graph.node(b)
    edges = graph.get_relation(ida, idb)
    if json:
        print_json([_edge_json(graph, e) for e in edges])
    else:
        console.print(
            _edges_table(graph, edges, f"{graph.nodes[ida].name} -> {graph.nodes[idb].name}")
        )


@app.command("neighbors")
def neighbors(
    operator: str,
    json: JsonOpt = False,
    predicate: Annotated[
        str | None, typer.Option(help="Only this predicate (or 'interaction').")
    ] = None,
    min_strength: Annotated[
        float, typer.Option(help="Only edges at least this strong (0 to 1).")
    ] = 0.0,
    origin: Annotated[
        str | None, typer.Option(help=f"Only edges from this origin ({', '.join(ORIGINS)}).")
    ] = None,
    limit: Annotated[int, typer.Option(help="Print at most this many (1 or more).")] = 50,
) -> None:
    """a's relations passing the filters, strongest first."""
    if predicate is not None and predicate not in (*PREDICATE_NAMES, INTERACTION):
        raise UsageError(
            f"--predicate {predicate!r} is not a predicate",
            hint=f"use one of {', '.join((*PREDICATE_NAMES, INTERACTION))}",
        )
    if origin is not None and origin not in ORIGINS:
        raise UsageError(f"--origin {origin!r} is unknown", hint=f"use one of {', '.join(ORIGINS)}")
    if not 0.0 <= min_strength <= 1.0:
        raise UsageError(f"--min-strength {min_strength:g}: strengths are between 0 and 1")
    if limit < 1:
        raise UsageError(f"--limit {limit}: must be 1 or more")
    ws = workspace()
    graph = ws.graph.current()
    nid = ws.graph.node(operator)
    edges = graph.neighbors(nid, predicate=predicate, min_strength=min_strength, origin=origin)
    edges = edges[:limit]
    if json:
        print_json([_edge_json(graph, e) for e in edges])
    else:
        console.print(_edges_table(graph, edges, f"{graph.nodes[nid].name}: {len(edges)} shown"))


@app.command("export")
def export(
    path: Annotated[Path, typer.Argument(help="Where to write relation_graph.json.")],
) -> None:
    """Write the built graph to PATH (deterministic bytes: export -> import -> export is identical)."""
    graph = workspace().graph.current()
    save_graph(graph, path)
    err_console.print(f"wrote {path} ({len(graph.nodes):,} nodes, {len(graph):,} edges)")


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A relation_graph.json, or a relation import JSON.")],
    json: JsonOpt = False,
    build_now: Annotated[
        bool, typer.Option("--build/--no-build", help="Rebuild after registering an import.")
    ] = True,
) -> None:
    """Install a relation_graph.json as the current graph, or register a relation import
    (wiki export, see arklore.graph.importer) and rebuild with it."""
    done = workspace().graph.import_file(path, build=build_now)
    if json:
        print_json(done.to_dict())
        return
    if done.graph is not None:
        console.print(
            f"installed {path} as {done.path} ({len(done.graph.nodes):,} nodes, "
            f"{len(done.graph):,} edges)",
        )
        return
    console.print(f"registered {done.path}")
    if done.build is not None:
        print_build(done.build.report)
