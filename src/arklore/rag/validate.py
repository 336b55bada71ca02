"""Rule-based validation of relation documents before indexing.

A document is indexed only when: its text is non-empty and 10-200 characters, every
metadata field is present and well-typed, its operator and target exist in the graph, its
operator is an operator (a view no chat can speak is never indexed), and
its doc_id matches ``^[a-zA-Z0-9_\\-\\.]+$`` and is unique. Failures are appended to the rejects
file (``$ARKLORE_HOME/rag_rejects.jsonl``: one JSON object per line, with the reason) and skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from arklore.graph.model import RelationGraph
from arklore.rag.docs import DOC_ID_RE, DOC_SOURCES, MAX_CHARS, MIN_CHARS, RelationDoc


@dataclass(slots=True)
class Rejected:
    doc: RelationDoc
    reason: str


def check(doc: RelationDoc, graph: RelationGraph) -> str | None:
    """The first rule ``doc`` breaks, or None when it may be indexed."""
    if not isinstance(doc.doc_id, str) or not DOC_ID_RE.match(doc.doc_id):
        return f"invalid doc_id {doc.doc_id!r}"
    if not isinstance(doc.text, str) or not doc.text.strip():
        return "empty document"
    n = len(doc.text.strip())
    if n < MIN_CHARS or n > MAX_CHARS:
        return f"length {n} outside {MIN_CHARS}-{MAX_CHARS} characters"
    for name in ("operator_id", "target_id", "predicate", "source", "source_path"):
        v = getattr(doc, name)
        if not isinstance(v, str) or not v.strip():
            return f"missing metadata {name}"
    if doc.source not in DOC_SOURCES:
        return f"unknown source {doc.source!r}"
    if not isinstance(doc.strength, int | float) or not 0.0 <= float(doc.strength) <= 1.0:
        return f"strength {doc.strength!r} not in [0, 1]"
    if not isinstance(doc.evidence_line_ids, list) or not all(
        isinstance(x, str) for x in doc.evidence_line_ids
    ):
        return "evidence_line_ids is not a list of line ids"
    facts: object = doc.facts  # documents may come from a file: check what the type says
    if not isinstance(facts, dict):
        return "facts is not a mapping"
    if doc.operator_id not in graph.nodes:
        return f"operator_id {doc.operator_id!r} is not in the graph"
    if graph.nodes[doc.operator_id].kind != "operator":
        return f"operator_id {doc.operator_id!r} is no operator: no chat speaks as them"
    if doc.target_id not in graph.nodes:
        return f"target_id {doc.target_id!r} is not in the graph"
    if doc.target_id == doc.operator_id:
        return "target_id equals operator_id"
    return None


def validate(
    docs: list[RelationDoc], graph: RelationGraph
) -> tuple[list[RelationDoc], list[Rejected]]:
    ok: list[RelationDoc] = []
    bad: list[Rejected] = []
    seen: set[str] = set()
    for d in docs:
        reason = check(d, graph)
        if reason is None and d.doc_id in seen:
            reason = f"duplicate doc_id {d.doc_id!r}"
        if reason is None:
            seen.add(d.doc_id)
            ok.append(d)
        else:
            bad.append(Rejected(d, reason))
    return ok, bad


def write_rejects(path: Path, rejected: list[Rejected], *, run_id: str = "") -> Path:
    """Append one line per rejected document to the rejects file ``path``."""
    path = Path(path)
    if not rejected:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    with path.open("ab") as f:
        for r in rejected:
            rec = {
                "time": now,
                "run_id": run_id,
                "stage": "rag_validate",
                "reason": r.reason,
                "doc_id": r.doc.doc_id,
                "source": r.doc.source,
                "operator_id": r.doc.operator_id,
                "target_id": r.doc.target_id,
                "text": r.doc.text,
            }
            f.write(orjson.dumps(rec, default=str) + b"\n")
    return path
