"""Store tables for relation extraction: one row per gated proposal, one row per chunk.

Rows are keyed by (stage_path, chunk, idx) and a chunk's rows are replaced as a whole in
one transaction together with its ``relation_chunks`` row, so re-running a chunk (retry,
resume, ``--no-resume``) can never leave duplicates or a half-written chunk; and the
chunk row is what resume trusts (the store, not the LLM progress file, is the truth).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import asdict, fields
from typing import Any

import orjson

from arklore.corpus.store import Store
from arklore.extract.gates import GatedEdge, GatedEvidence

_KEY_COLUMNS = ("stage_path", "chunk", "idx")
_RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(GatedEdge) if f.name != "stage")
"""Every GatedEdge field is a column of the same name (``stage`` is the ``stage_path`` key)."""
_BOOL_FIELDS = frozenset(f.name for f in fields(GatedEdge) if f.type in ("bool", bool))
_JSON_FIELDS = frozenset({"evidence", "evidence_line_ids"})
COLUMNS: tuple[str, ...] = _KEY_COLUMNS + _RECORD_FIELDS
_SELECT = ", ".join(COLUMNS)


def _encode(name: str, value: Any) -> Any:
    if name == "evidence":
        return orjson.dumps([asdict(ev) for ev in value], default=repr).decode()
    if name in _JSON_FIELDS:
        return orjson.dumps(value).decode()
    if name in _BOOL_FIELDS:
        return int(value)
    return value


def _decode(name: str, value: Any) -> Any:
    if name == "evidence":
        return [GatedEvidence(**ev) for ev in orjson.loads(value)]
    if name in _JSON_FIELDS:
        return orjson.loads(value)
    if name in _BOOL_FIELDS:
        return bool(value)
    return value


def _edge_row(stage_path: str, chunk: int, idx: int, e: GatedEdge) -> tuple[Any, ...]:
    return (stage_path, chunk, idx, *(_encode(n, getattr(e, n)) for n in _RECORD_FIELDS))


def _row_edge(row: tuple[Any, ...]) -> GatedEdge:
    values = dict(zip(COLUMNS, row, strict=True))
    return GatedEdge(
        stage=values["stage_path"], **{n: _decode(n, values[n]) for n in _RECORD_FIELDS}
    )


def write_chunk(
    store: Store,
    stage_path: str,
    chunk: int,
    edges: list[GatedEdge],
    *,
    job_key: str,
    fingerprint: str,
    model: str,
    prompt_version: str,
    line_span: tuple[int, int] | None,
    from_cache: bool,
) -> None:
    """Replace one chunk's rows (caller may hold a transaction; otherwise one is opened)."""
    with store.transaction() as c:
        c.execute(
            "DELETE FROM relation_edges WHERE stage_path = ? AND chunk = ?", (stage_path, chunk)
        )
        c.executemany(
            f"INSERT INTO relation_edges ({_SELECT}) VALUES ({','.join('?' * len(COLUMNS))})",
            [_edge_row(stage_path, chunk, i, e) for i, e in enumerate(edges)],
        )
        first, last = line_span or (None, None)
        c.execute(
            "INSERT OR REPLACE INTO relation_chunks (stage_path, chunk, job_key, fingerprint,"
            " model, prompt_version, first_line, last_line, edges, kept, from_cache, updated)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                stage_path, chunk, job_key, fingerprint, model, prompt_version, first, last,
                len(edges), sum(e.kept for e in edges), int(from_cache), time.time(),
            ),
        )  # fmt: skip


def chunk_state(store: Store, stage_path: str) -> dict[int, tuple[str, str]]:
    """chunk -> (fingerprint, model) of what is stored for the stage."""
    rows = store.conn.execute(
        "SELECT chunk, fingerprint, model FROM relation_chunks WHERE stage_path = ?",
        (stage_path,),
    )
    return {c: (f, m) for c, f, m in rows}


def drop_stale_chunks(store: Store, stage_path: str, n_chunks: int) -> None:
    """A stage that now splits into fewer chunks (shorter after an update) loses the rest."""
    with store.transaction() as c:
        for table in ("relation_edges", "relation_chunks"):
            c.execute(
                f"DELETE FROM {table} WHERE stage_path = ? AND chunk >= ?", (stage_path, n_chunks)
            )


def load_edges(store: Store, stage_path: str) -> list[GatedEdge]:
    """Every stored edge of a stage (kept and dropped), in chunk/answer order."""
    rows = store.conn.execute(
        f"SELECT {_SELECT} FROM relation_edges WHERE stage_path = ? ORDER BY chunk, idx",
        (stage_path,),
    )
    return [_row_edge(r) for r in rows]


def stages_with_edges(store: Store) -> list[str]:
    return [
        r[0]
        for r in store.conn.execute(
            "SELECT DISTINCT stage_path FROM relation_chunks ORDER BY stage_path"
        )
    ]


def kept_edges(store: Store) -> list[GatedEdge]:
    """Every kept edge of every stage, in a fixed order (stage, chunk, answer)."""
    rows = store.conn.execute(
        f"SELECT {_SELECT} FROM relation_edges WHERE verdict = 'kept'"
        " ORDER BY stage_path, chunk, idx"
    )
    return [_row_edge(r) for r in rows]


def kept_state(store: Store) -> str:
    """A digest of every kept edge, every field (notes too): what the relation documents
    read from this table, so the index knows when an extraction changed them."""
    rows = [e.to_dict() for e in kept_edges(store)]
    return hashlib.sha256(orjson.dumps(rows, default=repr)).hexdigest()[:16]


def has_chunks(store: Store, stage_path: str) -> bool:
    """Was the stage extracted at all (even if every edge was dropped)?"""
    row = store.conn.execute(
        "SELECT 1 FROM relation_chunks WHERE stage_path = ? LIMIT 1", (stage_path,)
    ).fetchone()
    return row is not None


def cited_line_ids(store: Store) -> Iterator[tuple[str, str]]:
    """(line_id, what cites it) for the evidence of every kept edge, for ``verify-anchors``."""
    for e in kept_edges(store):
        label = f"relation_edges: {e.subject} -> {e.object} ({e.predicate}, {e.stage})"
        for line_id in e.evidence_line_ids:
            yield line_id, label


def edge_record(edge: GatedEdge) -> dict[str, Any]:
    """The exported record of an edge: every GatedEdge field, evidence as dicts."""
    return edge.to_dict()
