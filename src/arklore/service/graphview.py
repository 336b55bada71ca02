"""The relation graph and the corpus as the service shows them: edges with their origin
category, evidence lines in context, stages with the relations citing each line.

Origin categories (the colours of the graph explorer):

==================  ==============================================================
``curated``         the hand-written matrix or a relation import says so
``story-direct``    extracted from the story, with direct evidence (both present)
``story-reported``  extracted from the story, only reported or inferred
``evidence-built``  no named relation, but interaction/mentions strong enough
                    (strength > 0.6) that the relation index describes it
``interaction``     contact only (turns, vocatives, shared stages, mentions)
==================  ==============================================================
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from arklore.core.blocks import stage_of
from arklore.core.model import parse_line_id
from arklore.corpus.store import StageInfo, Store
from arklore.graph.model import Edge, RelationGraph
from arklore.graph.strength import WORTH_DESCRIBING
from arklore.names.facade import NamesFacade

CATEGORIES = ("curated", "story-direct", "story-reported", "evidence-built", "interaction")
CONTEXT_LINES = 2
MAX_EVIDENCE = 12
MAX_LINES_PER_PAGE = 500

STAGE_PATH = re.compile(r"^[A-Za-z0-9_\-\[\]]+(?:/[A-Za-z0-9_\-\[\]]+)*$")
MAX_STAGE_PATH = 200
STAGE_PATH_SCHEMA = {"pattern": STAGE_PATH.pattern, "minLength": 1, "maxLength": MAX_STAGE_PATH}
"""What the OpenAPI document says a stage path is (checked by :func:`check_stage_path`, 400)."""


Label = Callable[[str], str]
"""A graph node's name as the pages show it."""


def labeller(graph: RelationGraph, names: NamesFacade) -> Label:
    """A node's name as the pages show it: an operator's name that names her alone
    (:meth:`~arklore.names.facade.NamesFacade.unique_name`: 阿米娅（近卫）), anyone else's
    name in the graph."""

    def label(nid: str) -> str:
        unique = names.unique_name(nid) if nid.startswith("char_") else nid
        return unique if unique != nid else graph.node_name(nid)

    return label


def category(e: Edge) -> str:
    """The edge's origin category (see the module docstring)."""
    if "matrix" in e.origins or "import" in e.origins:
        return "curated"
    if "story" in e.origins:
        return "story-direct" if (e.signals or {}).get("direct") else "story-reported"
    if e.strength > WORTH_DESCRIBING:
        return "evidence-built"
    return "interaction"


def node_dict(graph: RelationGraph, nid: str, label: Label | None = None) -> dict[str, Any]:
    node = graph.nodes.get(nid)
    return {
        "id": nid,
        "name": (label or graph.node_name)(nid),
        "kind": node.kind if node else ("npc" if nid.startswith("npc:") else "operator"),
        "faction": dict(node.faction) if node else {},
    }


def edge_dict(
    graph: RelationGraph, e: Edge, text: str | None = None, label: Label | None = None
) -> dict[str, Any]:
    name = label or graph.node_name
    return {
        "source": e.source,
        "source_name": name(e.source),
        "target": e.target,
        "target_name": name(e.target),
        "predicate": e.predicate,
        "strength": e.strength,
        "category": category(e),
        "origins": list(e.origins),
        "signals": dict(e.signals),
        "description": e.description,
        "text": text,
        "evidence_line_ids": list(e.evidence_line_ids),
        "stages": list(e.stages),
    }


def stage_dict(info: StageInfo) -> dict[str, Any]:
    return {
        "path": info.stage_path,
        "source": info.source,
        "code": info.story_code,
        "name": info.story_name,
        "event": info.event_name,
        "event_id": info.event_id,
        "avg_tag": info.avg_tag,
        "summary": info.story_info,
        "order": info.order_rank,
        "line_count": info.line_count,
    }


def check_stage_path(path: str) -> str | None:
    """Why ``path`` cannot be a stage path (None: it can): no ``..``, no leading slash, no
    backslash or other characters stage paths never have."""
    if not path or len(path) > MAX_STAGE_PATH:
        return "a stage path has 1 to 200 characters"
    if ".." in path or path.startswith("/") or "\\" in path:
        return "a stage path is relative and never contains '..'"
    if not STAGE_PATH.match(path):
        return "a stage path has only letters, digits, '_', '-', '[', ']' and '/'"
    return None


class CitationIndex:
    """line id -> the graph edges citing it, built once per graph."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._graph: RelationGraph | None = None
        self._by_line: dict[str, list[Edge]] = {}

    def of(self, graph: RelationGraph) -> dict[str, list[Edge]]:
        with self._lock:
            if self._graph is not graph:
                idx: dict[str, list[Edge]] = {}
                for e in graph.edges():
                    for lid in e.evidence_line_ids:
                        idx.setdefault(lid, []).append(e)
                self._graph, self._by_line = graph, idx
            return self._by_line


def line_dict(
    ln: Any,
    cited: Iterable[Edge] = (),
    graph: RelationGraph | None = None,
    label: Label | None = None,
) -> dict[str, Any]:
    out = {
        "line_no": ln.line_no,
        "line_id": ln.line_id,
        "kind": str(ln.kind),
        "speaker": ln.speaker,
        "text": ln.text,
        "branch": ln.branch.key() if ln.branch else None,
        "options": list(ln.options),
        "uncertain": ln.uncertain,
    }
    if graph is not None:
        name = label or graph.node_name
        out["cited_by"] = [
            {"source": e.source, "source_name": name(e.source), "target": e.target,
             "target_name": name(e.target), "predicate": e.predicate,
             "category": category(e)}
            for e in cited
        ]  # fmt: skip
    return out


def evidence(
    store: Store,
    line_ids: Iterable[str],
    *,
    context: int = CONTEXT_LINES,
    limit: int = MAX_EVIDENCE,
) -> list[dict[str, Any]]:
    """Each cited line with ``context`` lines either side, the cited one flagged; a line id
    whose stage no longer has that line (same number and content hash) is marked stale."""
    out = []
    by_stage: dict[str, list[Any]] = {}
    for lid in list(dict.fromkeys(line_ids))[:limit]:
        try:
            path, no, _ = parse_line_id(lid)
        except ValueError:
            path, no = stage_of(lid), 0
        if path not in by_stage:
            by_stage[path] = store.lines(path)
        lines = by_stage[path]
        info = store.stage_info(path)
        hit = next((ln for ln in lines if ln.line_no == no), None)
        window = [
            {**line_dict(ln), "cited": ln.line_no == no}
            for ln in lines
            if no - context <= ln.line_no <= no + context
        ]
        out.append(
            {
                "line_id": lid,
                "stage_path": path,
                "line_no": no,
                "stage": None if info is None else {
                    "code": info.story_code, "name": info.story_name, "event": info.event_name,
                },
                "stale": hit is None or hit.line_id != lid,
                "context": window,
            }
        )  # fmt: skip
    return out
