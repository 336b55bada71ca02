"""Store tables for relation extraction: one row per gated proposal, one row per chunk.

Rows are keyed by (stage_path, chunk, idx) and a chunk's rows are replaced as a whole in
one transaction together with its ``relation_chunks`` row, so re-running a chunk (retry,
resume, ``--no-resume``) can never leave duplicates or a half-written chunk; and the
chunk row is what resume trusts (the store, not the LLM progress file, is the truth).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from arklore.corpus.anchors import register_anchor_query
from arklore.corpus.store import Store, register_schema
from arklore.extract.gates import GatedEdge, GatedEvidence

SCHEMA = """
CREATE TABLE IF NOT EXISTS relation_edges (
    stage_path TEXT NOT NULL,
    chunk INTEGER NOT NULL,          -- index of the chunk (job) that proposed the edge
    idx INTEGER NOT NULL,            -- position in that chunk's answer
    verdict TEXT NOT NULL,           -- kept | dropped
    drop_reason TEXT, drop_detail TEXT,
    subject TEXT NOT NULL, subject_kind TEXT NOT NULL, subject_id TEXT,
    predicate TEXT NOT NULL, predicate_family TEXT,
    object TEXT NOT NULL, object_kind TEXT NOT NULL, object_id TEXT,
    basis TEXT, basis_claimed TEXT NOT NULL, basis_overclaimed INTEGER NOT NULL,
    presence_ok INTEGER NOT NULL, presence_downgraded INTEGER NOT NULL, presence_reason TEXT,
    narration_addressee TEXT,
    note TEXT NOT NULL,
    evidence TEXT NOT NULL,          -- JSON [{line_id, line_no, supports, note, addressee}]
    evidence_line_ids TEXT NOT NULL, -- JSON [line_id]; empty for dropped edges
    model TEXT NOT NULL, prompt_version TEXT NOT NULL,
    PRIMARY KEY (stage_path, chunk, idx)
);
CREATE INDEX IF NOT EXISTS relation_edges_subject ON relation_edges (subject_id);
CREATE INDEX IF NOT EXISTS relation_edges_object ON relation_edges (object_id);

CREATE TABLE IF NOT EXISTS relation_chunks (
    stage_path TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    job_key TEXT NOT NULL,           -- '<stage_path>#c<chunk>'
    fingerprint TEXT NOT NULL,       -- ChatRequest.fingerprint(): same request -> skip on resume
    model TEXT NOT NULL, prompt_version TEXT NOT NULL,
    first_line INTEGER, last_line INTEGER,
    edges INTEGER NOT NULL, kept INTEGER NOT NULL,
    from_cache INTEGER NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (stage_path, chunk)
);
"""

register_schema(SCHEMA)
register_anchor_query(
    "relation_edges",
    "SELECT DISTINCT j.value FROM relation_edges e, json_each(e.evidence_line_ids) j"
    " WHERE e.verdict = 'kept'",
)

_COLUMNS = (
    "stage_path, chunk, idx, verdict, drop_reason, drop_detail, subject, subject_kind,"
    " subject_id, predicate, predicate_family, object, object_kind, object_id, basis,"
    " basis_claimed, basis_overclaimed, presence_ok, presence_downgraded, presence_reason,"
    " narration_addressee, note, evidence, evidence_line_ids, model, prompt_version"
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
            f"INSERT INTO relation_edges ({_COLUMNS}) VALUES ({','.join('?' * 26)})",
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
        f"SELECT {_COLUMNS} FROM relation_edges WHERE stage_path = ? ORDER BY chunk, idx",
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


def edge_record(edge: GatedEdge) -> dict[str, Any]:
    """The exported/stored record of an edge: every GatedEdge field, evidence as dicts."""
    return edge.to_dict()


def _edge_row(stage_path: str, chunk: int, idx: int, e: GatedEdge) -> tuple:
    evidence = [
        {
            "line_id": ev.line_id,
            "line_no": ev.line_no,
            "supports": ev.supports,
            "note": ev.note,
            "addressee": ev.addressee,
        }
        for ev in e.evidence
    ]
    return (
        stage_path, chunk, idx, e.verdict, e.drop_reason, e.drop_detail, e.subject,
        e.subject_kind, e.subject_id, e.predicate, e.predicate_family, e.object, e.object_kind,
        e.object_id, e.basis, e.basis_claimed, int(e.basis_overclaimed), int(e.presence_ok),
        int(e.presence_downgraded), e.presence_reason, e.narration_addressee, e.note,
        orjson.dumps(evidence, default=repr).decode(), orjson.dumps(e.evidence_line_ids).decode(),
        e.model, e.prompt_version,
    )  # fmt: skip


def _row_edge(r: tuple) -> GatedEdge:
    (stage_path, _chunk, _idx, verdict, drop_reason, drop_detail, subject, subject_kind,
     subject_id, predicate, predicate_family, obj, object_kind, object_id, basis, basis_claimed,
     overclaimed, presence_ok, downgraded, presence_reason, addressee, note, evidence, line_ids,
     model, prompt_version) = r  # fmt: skip
    return GatedEdge(
        subject=subject,
        subject_kind=subject_kind,
        predicate=predicate,
        object=obj,
        object_kind=object_kind,
        basis_claimed=basis_claimed,
        note=note,
        verdict=verdict,
        drop_reason=drop_reason,
        drop_detail=drop_detail,
        subject_id=subject_id,
        object_id=object_id,
        predicate_family=predicate_family,
        basis=basis,
        basis_overclaimed=bool(overclaimed),
        presence_ok=bool(presence_ok),
        presence_downgraded=bool(downgraded),
        presence_reason=presence_reason,
        narration_addressee=addressee,
        evidence=[GatedEvidence(**ev) for ev in orjson.loads(evidence)],
        evidence_line_ids=orjson.loads(line_ids),
        stage=stage_path,
        model=model,
        prompt_version=prompt_version,
    )
