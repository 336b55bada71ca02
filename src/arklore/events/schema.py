"""The events layer's tables, as named migrations (see :mod:`arklore.base.db`).

``event_chunks``: one row per answered chunk — the model's proposals as it gave them, what
resume trusts and what a stage's events are checked from again. ``event_stages``: one row per
stage whose chunks were all answered and checked (with the counts). ``story_events``: the
checked events of a stage (kept and dropped, with the reason), in line order; columns are
the fields of :class:`arklore.events.checks.CheckedEvent`. ``event_memories``: one row per
memory (kept, dropped, flagged), keyed by event and actor, indexed by operator id.
``appearances``: every person's stages (she speaks or is addressed there), computed for all
operators in one corpus pass and rebuilt when the names it was computed from change.
"""

from __future__ import annotations

from arklore.base.db import Migration
from arklore.extract.schema import chunk_ledger

_EVENTS = (
    chunk_ledger(
        "event_chunks",
        "e",
        "first_line INTEGER NOT NULL, last_line INTEGER NOT NULL,\n"
        "    proposals TEXT NOT NULL",  # JSON: the validated answer's events, as proposed
    )
    + """

CREATE TABLE IF NOT EXISTS event_stages (
    stage_path TEXT PRIMARY KEY,
    chunks INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,        -- what the checks read: answers, lines, checks version
    summary TEXT NOT NULL,            -- JSON counts (arklore.events.checks.summarize)
    models TEXT NOT NULL,             -- JSON list
    prompt_version TEXT NOT NULL,
    checked REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS story_events (
    stage_path TEXT NOT NULL,
    idx INTEGER NOT NULL,             -- line order within the stage (dropped events last)
    verdict TEXT NOT NULL,            -- kept | dropped
    drop_reason TEXT, drop_detail TEXT,
    phase TEXT, phase_claimed TEXT NOT NULL,
    summary TEXT NOT NULL,
    actors TEXT NOT NULL,             -- JSON [CheckedActor]
    time_hint TEXT, time_hint_claimed TEXT, time_hint_verdict TEXT NOT NULL,
    line_start INTEGER, line_end INTEGER,
    range_claimed TEXT NOT NULL,      -- JSON
    line_ids TEXT NOT NULL,           -- JSON [line_id] of the range
    branches TEXT NOT NULL, alternatives TEXT NOT NULL, flags TEXT NOT NULL, chunks TEXT NOT NULL,
    merged_from INTEGER NOT NULL,
    stage_code TEXT, event_id TEXT, event_name TEXT, story_name TEXT, order_rank INTEGER,
    model TEXT NOT NULL, prompt_version TEXT NOT NULL,
    PRIMARY KEY (stage_path, idx)
);

CREATE TABLE IF NOT EXISTS event_memories (
    stage_path TEXT NOT NULL,
    event_idx INTEGER NOT NULL,
    pos INTEGER NOT NULL,             -- position in the event's memories
    actor TEXT NOT NULL, written_as TEXT NOT NULL, actor_id TEXT, doctor INTEGER NOT NULL,
    text TEXT NOT NULL,
    verdict TEXT NOT NULL,            -- kept | dropped
    drop_reason TEXT,                 -- not_present | empty_name | empty_text
    person TEXT NOT NULL,             -- the first-person guard: first | third
    flags TEXT NOT NULL,              -- JSON
    presence TEXT,
    evidence_line_ids TEXT NOT NULL,  -- JSON: lines of the range showing her present
    PRIMARY KEY (stage_path, event_idx, pos)
);
CREATE INDEX IF NOT EXISTS event_memories_actor ON event_memories (actor_id);
"""
)

_APPEARANCES = """
CREATE TABLE IF NOT EXISTS appearances (
    base_id TEXT NOT NULL,            -- the person: her base form's id (all forms share it)
    stage_path TEXT NOT NULL,
    spoken INTEGER NOT NULL, uncertain INTEGER NOT NULL, addressed INTEGER NOT NULL,
    line_ids TEXT NOT NULL,           -- JSON: the first lines showing her there
    PRIMARY KEY (base_id, stage_path)
);
CREATE TABLE IF NOT EXISTS appearances_meta (
    key TEXT PRIMARY KEY, value TEXT NOT NULL  -- 'built_for': the names state it was built from
);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration("events", "001_story_events", _EVENTS),
    Migration("events", "002_appearances", _APPEARANCES),
)
