"""relation_graph.json: the graph on disk, byte-for-byte deterministic.

Layout (UTF-8, one JSON object; keys sorted; one node / edge per line so diffs stay readable)::

    {"alternates": {"char_1012_skadi2": "char_263_skadi", ...},
     "edges": [
      {"description": null, "evidence_line_ids": [...], "predicate": "监护", "signals": {...},
       "origins": ["matrix", "interaction"], "source": "char_002_amiya", "stages": [...],
       "strength": 0.9731, "target": "char_003_kalts"},
      ...],
     "format": "arklore-relation-graph/2",
     "meta": {...build report...},
     "nodes": [
      {"faction": {"nation": "...", ...}, "id": "char_002_amiya", "kind": "operator", "name": "阿米娅"},
      ...]}

Nodes are sorted by id, edges by (source, target, predicate); strengths are rounded to 4
decimals; so ``save(load(f))`` reproduces ``f`` exactly. Writes are atomic
(:func:`arklore.base.files.atomic_write_bytes`): a crash or a failed build never leaves a
half-written or missing graph. Format ``/1`` files (``"sources"`` instead of ``"origins"``)
are still read.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import orjson

from arklore.base.files import atomic_write_bytes
from arklore.core.errors import InputFileError, NotBuiltError
from arklore.graph.model import GRAPH_FORMAT as FORMAT
from arklore.graph.model import Edge, Node, RelationGraph
from arklore.graph.strength import ROUND

FORMATS_READ = (FORMAT, "arklore-relation-graph/1")
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


class GraphNotBuiltError(NotBuiltError):
    """No relation graph file (``arklore build`` makes it; ``arklore graph build`` alone too)."""


def _node_dict(n: Node) -> dict[str, Any]:
    return {"id": n.id, "name": n.name, "kind": n.kind, "faction": dict(sorted(n.faction.items()))}


def edge_record(e: Edge) -> dict[str, Any]:
    """An edge as written to relation_graph.json (and shown by ``--json`` commands)."""
    return {
        "source": e.source,
        "target": e.target,
        "predicate": e.predicate,
        "strength": round(float(e.strength), ROUND),
        "origins": list(e.origins),
        "signals": e.signals,
        "evidence_line_ids": list(e.evidence_line_ids),
        "description": e.description,
        "stages": list(e.stages),
        # only on curated edges: the other ~18k records stay as they were
        **({"curated_from": e.curated_from} if e.curated_from else {}),
        **({"since": e.since} if e.since else {}),
        **({"curated_evidence": list(e.curated_evidence)} if e.curated_evidence else {}),
    }


def dumps_graph(graph: RelationGraph) -> bytes:
    nodes = [_node_dict(graph.nodes[k]) for k in sorted(graph.nodes)]
    edges = sorted(graph.edges(), key=lambda e: (e.source, e.target, e.predicate))
    parts = [
        b'{"alternates":',
        orjson.dumps(graph.alternates, option=_OPTS),
        b',\n"edges":[\n',
        b",\n".join(orjson.dumps(edge_record(e), option=_OPTS) for e in edges),
        b'\n],\n"format":',
        orjson.dumps(FORMAT),
        b',\n"meta":',
        orjson.dumps(graph.meta, option=_OPTS),
        b',\n"nodes":[\n',
        b",\n".join(orjson.dumps(n, option=_OPTS) for n in nodes),
        b"\n]}\n",
    ]
    return b"".join(parts)


def save_graph(graph: RelationGraph, path: Path) -> None:
    """Atomic write of the deterministic bytes of :func:`dumps_graph`."""
    atomic_write_bytes(path, dumps_graph(graph))


def loads_graph(data: bytes, where: str = "<bytes>") -> RelationGraph:
    """Parse relation_graph.json bytes. The cyclic GC is paused meanwhile: the load allocates
    ~10^6 containers that are never garbage, and the collections it would trigger cost more
    than the parse itself (50k edges: ~0.8 s -> ~0.3 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _loads(data, where)
    finally:
        if was_enabled:
            gc.enable()


def _loads(data: bytes, where: str) -> RelationGraph:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise InputFileError(where, "json", f"not valid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") not in FORMATS_READ:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise InputFileError(
            where, "key 'format'", f"not a relation graph (want {FORMAT!r}, got {got!r})"
        )
    try:
        nodes = {n["id"]: Node(n["id"], n["name"], n["kind"], n["faction"]) for n in doc["nodes"]}
        edges = [
            Edge(
                e["source"],
                e["target"],
                e["predicate"],
                e["strength"],
                e["origins"] if "origins" in e else e["sources"],
                e["signals"],
                e["evidence_line_ids"],
                e["description"],
                e["stages"],
                e.get("curated_from"),
                e.get("since", ""),
                e.get("curated_evidence", []),
            )  # fmt: skip
            for e in doc["edges"]
        ]
    except (KeyError, TypeError) as e:
        raise InputFileError(where, "nodes/edges", f"malformed record: {e!r}") from None
    return RelationGraph(
        nodes, edges, alternates=doc.get("alternates") or {}, meta=doc.get("meta") or {}
    )


def load_graph(path: Path) -> RelationGraph:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GraphNotBuiltError(f"no relation graph ({path.name})", path.parent) from None
    return loads_graph(data, str(path))
