"""The corpus layer's tables, as named migrations (see :mod:`arklore.base.db`).

``stages``/``lines`` hold both sources; the views ``primary_stages``/``primary_lines`` are the
corpus downstream layers read (the raw AVG script when a stage has one, else its ASTR copy);
``speakers`` counts lines per normalized speaker name; ``meta`` and ``ingest_runs`` hold ingest
bookkeeping (which data roots, whether the last run finished).
Which operator a speaker is belongs to the names layer (``speaker_ids``).
"""

from __future__ import annotations

import sqlite3

from arklore.base.db import Migration, table_columns

_CORE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS stages (
    source TEXT NOT NULL,            -- 'avg' | 'astr'
    stage_path TEXT NOT NULL,        -- 'obt/main/level_main_01-01_beg'
    source_path TEXT NOT NULL,       -- relative file path with extension
    event_id TEXT, event_name TEXT, entry_type TEXT, story_code TEXT, avg_tag TEXT,
    story_name TEXT, story_info TEXT, story_sort INTEGER, start_time INTEGER,
    content_hash TEXT NOT NULL,      -- sha1 of the file bytes
    line_count INTEGER NOT NULL,
    principal_speakers TEXT NOT NULL DEFAULT '[]',  -- JSON list
    order_rank INTEGER,              -- approximate release order, not in-world time
    PRIMARY KEY (source, stage_path)
);

CREATE TABLE IF NOT EXISTS lines (
    source TEXT NOT NULL,
    stage_path TEXT NOT NULL,
    line_no INTEGER NOT NULL,
    line_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    speaker TEXT NOT NULL,
    speaker_raw TEXT,
    uncertain INTEGER NOT NULL,
    text TEXT NOT NULL,
    figure_art TEXT,
    branch TEXT,                      -- '<decision line_no>:<values;...>' or NULL
    addresses_doctor INTEGER NOT NULL,
    options TEXT,                     -- JSON [options, values] for choice lines
    PRIMARY KEY (source, stage_path, line_no)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lines_by_speaker ON lines (speaker);
CREATE INDEX IF NOT EXISTS lines_by_id ON lines (line_id);

CREATE VIEW IF NOT EXISTS primary_stages AS
    SELECT * FROM stages s
    WHERE s.source = 'avg'
       OR NOT EXISTS (SELECT 1 FROM stages a WHERE a.source = 'avg' AND a.stage_path = s.stage_path);
CREATE VIEW IF NOT EXISTS primary_lines AS
    SELECT l.* FROM lines l JOIN primary_stages p
      ON p.source = l.source AND p.stage_path = l.stage_path;

CREATE TABLE IF NOT EXISTS speakers (
    name TEXT PRIMARY KEY,           -- normalized speaker name
    line_count INTEGER NOT NULL,     -- lines in the primary corpus
    stage_count INTEGER NOT NULL,
    avg_lines INTEGER NOT NULL,
    astr_lines INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS ingest_errors (
    source TEXT NOT NULL, path TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (source, path)
);
"""


def _drop_speaker_char_id(c: sqlite3.Connection) -> None:
    """Stores made by arklore 0.1 kept the operator id in ``speakers.char_id``; it now lives
    in the names layer's ``speaker_ids`` (copied there by ``names/001``, which runs first)."""
    if "char_id" in table_columns(c, "speakers"):
        c.execute("ALTER TABLE speakers DROP COLUMN char_id")


_INGEST_RUNS = """
CREATE TABLE IF NOT EXISTS ingest_runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    finished_at TEXT,                -- NULL: the run was killed or crashed before the end
    gamedata TEXT,                   -- the data roots it read (absolute paths)
    astr TEXT,
    tables_fingerprint TEXT,         -- size + mtime of every excel table read
    sources TEXT NOT NULL            -- JSON list: avg, astr
);
"""

_PARSE_WARNINGS = """
CREATE TABLE IF NOT EXISTS parse_warnings (
    source TEXT NOT NULL,
    stage_path TEXT NOT NULL,
    idx INTEGER NOT NULL,            -- order within the stage
    warning TEXT NOT NULL,           -- 'line 12: Decision has 2 options but 1 value ...'
    PRIMARY KEY (source, stage_path, idx)
);
"""

_LINE_SCENES = """
ALTER TABLE lines ADD COLUMN scene INTEGER NOT NULL DEFAULT 0;  -- cuts before it (Line.scene)
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration("corpus", "001_stages_lines_speakers", _CORE),
    Migration("corpus", "002_speakers_without_char_id", run=_drop_speaker_char_id),
    Migration("corpus", "003_ingest_runs", _INGEST_RUNS),
    Migration("corpus", "004_parse_warnings", _PARSE_WARNINGS),
    # filled by the next ingest: the stage digest holds LINES_VERSION, so every stage is read again
    Migration("corpus", "005_line_scenes", _LINE_SCENES),
)
