"""The extract layer's tables, as named migrations (see :mod:`arklore.base.db`).

``relation_edges``: one row per gated proposal (kept or dropped, with the reason), keyed by
(stage, chunk, position in the answer); its columns are the fields of
:class:`arklore.extract.gates.GatedEdge` (``stage`` stored as ``stage_path``).
``relation_chunks``: one row per answered chunk, what resume trusts.
"""

from __future__ import annotations

from arklore.base.db import Migration


def chunk_ledger(table: str, mark: str, columns: str) -> str:
    """The table of answered chunks a chunked LLM run keeps (one row per chunk; what resume
    trusts: the request's fingerprint), with the run's own ``columns`` after the shared ones.
    ``mark`` tells the run's job keys apart ('<stage_path>#<mark><chunk>')."""
    return f"""
CREATE TABLE IF NOT EXISTS {table} (
    stage_path TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    job_key TEXT NOT NULL,           -- '<stage_path>#{mark}<chunk>'
    fingerprint TEXT NOT NULL,       -- ChatRequest.fingerprint(): same request -> skip on resume
    model TEXT NOT NULL, prompt_version TEXT NOT NULL,
    {columns},
    from_cache INTEGER NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (stage_path, chunk)
);
"""


_RELATIONS = """
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
""" + chunk_ledger(
    "relation_chunks",
    "c",
    "first_line INTEGER, last_line INTEGER,\n    edges INTEGER NOT NULL, kept INTEGER NOT NULL",
)

MIGRATIONS: tuple[Migration, ...] = (Migration("extract", "001_relations", _RELATIONS),)
