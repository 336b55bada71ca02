"""Relation graph commands: build, show, relation, neighbors, export, import."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import orjson
import typer
from rich.table import Table

from arklore.cli._common import console, err_console, open_store, print_json, progress_bar, settings
from arklore.cli.app import app
from arklore.core.errors import InputFileError, UnknownNameError

if TYPE_CHECKING:
    from arklore.graph.model import RelationGraph

graph_app = typer.Typer(help="The relation graph (no LLM needed).", no_args_is_help=True)
app.add_typer(graph_app, name="graph")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable result on stdout.")]
IMPORTS_DIR = "graph_imports"
"""Folder under ARKLORE_HOME holding the registered relation imports (used by every build)."""


def _home() -> Path:
    return settings().home


def _graph_path() -> Path:
    from arklore.graph.io import default_graph_path

    return default_graph_path(_home())


def _registered_imports() -> list[Path]:
    d = _home() / IMPORTS_DIR
    return sorted(d.glob("*.json")) if d.is_dir() else []


def _build_and_save(
    matrix: Path | None, imports: list[Path], json: bool
) -> tuple[RelationGraph, dict]:
    """Build, write relation_graph.json, and return the graph with the build report."""
    from arklore.graph.build import build_graph
    from arklore.graph.io import save_graph

    t0 = time.perf_counter()
    with open_store() as store, progress_bar(not json) as progress:
        graph = build_graph(store, matrix_path=matrix, import_paths=imports, progress=progress)
    path = _graph_path()
    save_graph(graph, path)  # only reached when the build succeeded: the old file is kept otherwise
    return graph, {"path": str(path), "seconds": round(time.perf_counter() - t0, 2), **graph.meta}


def _print_build(report: dict) -> None:
    c = report["counts"]
    console.print(
        f"graph: {c['nodes']:,} nodes ({c['operator_nodes']} operators, "
        f"{c['operator_nodes_with_edges']} with edges; {c['npc_nodes']:,} NPCs), "
        f"{c['edges']:,} edges ({c['named_edges']:,} named), "
        f"{c['edges_over_threshold']:,} with strength > 0.6",
        highlight=False,
        markup=False,
    )
    cur = report.get("curated") or {}
    if cur:
        console.print(
            f"curated relations: {cur['with_evidence']} with evidence, "
            f"{cur['no_evidence']} without, {cur['rejected']} rejected",
            highlight=False,
        )
    for r in report.get("curated_rejected") or []:
        console.print(
            f"rejected: {r['path']}:{r['line']} {r['from']} -> {r['to']}: {r['reason']}",
            highlight=False,
            markup=False,
        )
    console.print(f"wrote {report['path']} in {report['seconds']:.1f} s", highlight=False)


@graph_app.command("build")
def build(
    json: JsonOpt = False,
    matrix: Annotated[
        Path | None,
        typer.Option("--matrix", help="Relationship matrix TOML (default: the packaged one)."),
    ] = None,
    imports: Annotated[
        list[Path] | None,
        typer.Option("--import", help="Also merge this relation import JSON (repeatable)."),
    ] = None,
) -> None:
    """Build relation_graph.json under ARKLORE_HOME from the corpus, the matrix and imports."""
    _, report = _build_and_save(matrix, _registered_imports() + list(imports or []), json)
    if json:
        print_json(report)
    else:
        _print_build(report)


def _load():
    from arklore.graph.io import load_graph

    return load_graph(_graph_path())


def _resolve(graph, who: str) -> str:
    nid = graph.resolve(who)
    if nid is not None:
        return nid
    try:  # appellations and other registry names: cheap, no alias table needed
        from arklore.graph.people import registry_from_store

        with open_store() as store:
            op = registry_from_store(store).resolve(who)
        nid = graph.resolve(op.base_id or op.char_id)
    except Exception:  # noqa: BLE001 - fall through to the one error below
        nid = None
    if nid is None:
        raise UnknownNameError(
            f"{who!r} is not in the relation graph",
            hint="use an operator name or char id, or run `arklore graph build`",
        )
    return nid


def _edge_json(graph, e) -> dict:
    from arklore.graph.io import _edge_dict
    from arklore.graph.strength import contributions

    d = _edge_dict(e)
    d["target_name"] = graph.nodes[e.target].name if e.target in graph.nodes else e.target
    d["source_name"] = graph.nodes[e.source].name if e.source in graph.nodes else e.source
    d["contributions"] = {k: round(v, 4) for k, v in contributions(e.signals).items() if v}
    return d


def _signals_text(e) -> str:
    return " ".join(f"{k}={v}" for k, v in e.signals.items())


def _edges_table(graph, edges, title: str) -> Table:
    t = Table("target", "predicate", "strength", "sources", "signals", title=title)
    for e in edges:
        name = graph.nodes[e.target].name if e.target in graph.nodes else e.target
        t.add_row(
            f"{name} ({e.target})",
            e.predicate,
            f"{e.strength:.4f}",
            ",".join(e.sources),
            _signals_text(e),
        )
    return t


@graph_app.command("show")
def show(
    operator: Annotated[
        str, typer.Argument(help="Operator name, alias or char id (or npc:<name>).")
    ],
    json: JsonOpt = False,
    k: Annotated[int, typer.Option("-k", help="How many anchors to list.")] = 3,
) -> None:
    """One node: its faction and its k strongest relations with the signals behind each."""
    graph = _load()
    nid = _resolve(graph, operator)
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
    console.print(
        f"{node.name} ({node.id}, {node.kind}){': ' + fac if fac else ''}", highlight=False
    )
    console.print(f"top {len(top)} of {len(graph.out_edges(nid))} relations:", highlight=False)
    for i, e in enumerate(top, 1):
        _print_edge(graph, e, i)


def _print_edge(graph, e, i: int) -> None:
    from arklore.graph.strength import contributions

    name = graph.nodes[e.target].name if e.target in graph.nodes else e.target
    console.print(
        f"{i}. {name} ({e.target})  {e.predicate}  strength {e.strength:.4f}  [{', '.join(e.sources)}]",
        highlight=False,
        markup=False,
    )
    contrib = ", ".join(f"{k} {v:.3f}" for k, v in contributions(e.signals).items() if v)
    console.print(f"   signals: {_signals_text(e)}", highlight=False)
    console.print(f"   contributions: {contrib}", highlight=False)
    if e.description:
        console.print(f"   description: {e.description}", highlight=False)


@graph_app.command("relation")
def relation(a: str, b: str, json: JsonOpt = False) -> None:
    """Every edge a -> b (A's view of B)."""
    graph = _load()
    ida, idb = _resolve(graph, a), _resolve(graph, b)
    edges = graph.get_relation(ida, idb)
    if json:
        print_json([_edge_json(graph, e) for e in edges])
    else:
        console.print(
            _edges_table(graph, edges, f"{graph.nodes[ida].name} -> {graph.nodes[idb].name}")
        )


@graph_app.command("neighbors")
def neighbors(
    operator: str,
    json: JsonOpt = False,
    predicate: Annotated[
        str | None, typer.Option(help="Only this predicate (or 'interaction').")
    ] = None,
    min_strength: Annotated[float, typer.Option(help="Only edges at least this strong.")] = 0.0,
    source: Annotated[
        str | None, typer.Option(help="Only edges with this source (matrix, story, ...).")
    ] = None,
    limit: Annotated[int, typer.Option(help="Print at most this many.")] = 50,
) -> None:
    """a's relations passing the filters, strongest first."""
    graph = _load()
    nid = _resolve(graph, operator)
    edges = graph.neighbors(nid, predicate=predicate, min_strength=min_strength, source=source)[
        :limit
    ]
    if json:
        print_json([_edge_json(graph, e) for e in edges])
    else:
        console.print(_edges_table(graph, edges, f"{graph.nodes[nid].name}: {len(edges)} shown"))


@graph_app.command("export")
def export(
    path: Annotated[Path, typer.Argument(help="Where to write relation_graph.json.")],
) -> None:
    """Write the built graph to PATH (deterministic bytes: export -> import -> export is identical)."""
    from arklore.graph.io import save_graph

    graph = _load()
    save_graph(graph, path)
    err_console.print(
        f"wrote {path} ({len(graph.nodes):,} nodes, {len(graph):,} edges)", highlight=False
    )


@graph_app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A relation_graph.json, or a relation import JSON.")],
    json: JsonOpt = False,
    build_now: Annotated[
        bool, typer.Option("--build/--no-build", help="Rebuild after registering an import.")
    ] = True,
) -> None:
    """Install a relation_graph.json as the current graph, or register a relation import
    (wiki export, see arklore.graph.importer) and rebuild with it."""
    from arklore.graph.importer import FORMAT as IMPORT_FORMAT
    from arklore.graph.io import FORMAT as GRAPH_FORMAT
    from arklore.graph.io import loads_graph, save_graph

    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputFileError(str(path), "file", f"cannot read: {e.strerror or e}") from None
    try:
        fmt = orjson.loads(data).get("format")
    except (orjson.JSONDecodeError, AttributeError):
        fmt = None
    if fmt == GRAPH_FORMAT:
        graph = loads_graph(data, str(path))
        save_graph(graph, _graph_path())
        result = {"installed": str(_graph_path()), "nodes": len(graph.nodes), "edges": len(graph)}
        print_json(result) if json else console.print(
            f"installed {path} as {_graph_path()} ({result['nodes']:,} nodes, {result['edges']:,} edges)",
            highlight=False,
            markup=False,
        )
        return
    if fmt != IMPORT_FORMAT:
        raise InputFileError(
            str(path),
            "key 'format'",
            f"expected {GRAPH_FORMAT!r} or {IMPORT_FORMAT!r}, got {fmt!r}",
        )
    dest = _home() / IMPORTS_DIR / path.name
    others = [p for p in _registered_imports() if p.name != path.name]
    if build_now:
        _, report = _build_and_save(None, [*others, path], json)  # validates before writing
    else:
        _validate_import(path)
        report = None
    dest.parent.mkdir(parents=True, exist_ok=True)
    if path.resolve() != dest.resolve():
        shutil.copyfile(path, dest)
    if json:
        print_json({"registered": str(dest), "build": report})
        return
    console.print(f"registered {dest}", highlight=False)
    if report:
        _print_build(report)


def _validate_import(path: Path) -> None:
    from arklore.graph.build import Resolver, default_excel_root, load_registry
    from arklore.graph.importer import load_import
    from arklore.graph.people import People

    with open_store() as store:
        people = People.from_store(store, load_registry(store, default_excel_root()))
        speakers = [n for (n,) in store.conn.execute("SELECT name FROM speakers")]
    load_import(path, Resolver(people, speakers))
