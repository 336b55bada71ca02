"""The names layer's tables, as named migrations (see :mod:`arklore.base.db`).

``operators`` (the registry), ``aliases`` (every surface form with its source and evidence),
``portrait_stats`` (speaker <-> portrait statistics, for audits), ``speaker_ids`` (which
operator each corpus speaker is; no row = an NPC) and ``names_meta`` (rebuild bookkeeping).
"""

from __future__ import annotations

import sqlite3

from arklore.base.db import Migration, table_columns

_TABLES = """
CREATE TABLE IF NOT EXISTS operators (
    char_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    appellation TEXT,
    data TEXT NOT NULL               -- JSON of the full Operator record
);
CREATE TABLE IF NOT EXISTS aliases (
    alias TEXT NOT NULL,
    char_id TEXT NOT NULL,
    source TEXT NOT NULL,            -- registry | alternate_form | appellation | handbook | portrait
    evidence TEXT NOT NULL,          -- JSON, e.g. {"share": 0.93, "lines": 412}
    PRIMARY KEY (alias, char_id, source)
);
DROP TABLE IF EXISTS portrait_stats_v0;
CREATE TABLE IF NOT EXISTS portrait_stats (
    speaker TEXT PRIMARY KEY,
    char_id TEXT NOT NULL,           -- the dominant operator among the portraits shown
    share REAL NOT NULL,
    lines INTEGER NOT NULL,
    runner_up TEXT,
    portrait_of TEXT,                -- the portrait's own id when it is an alternate form
    accepted INTEGER NOT NULL,       -- passed MIN_LINES and MIN_SHARE, and does not talk with her
    speaker_only INTEGER NOT NULL    -- a descriptive label: resolves the speaker, not an alias
);
CREATE TABLE IF NOT EXISTS speaker_ids (
    speaker TEXT PRIMARY KEY,        -- a name of the corpus speakers table
    char_id TEXT NOT NULL            -- the operator that speaker is
);
CREATE TABLE IF NOT EXISTS names_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _copy_speaker_ids(c: sqlite3.Connection) -> None:
    """A store made by arklore 0.1 kept speaker ids in ``speakers.char_id``: keep them."""
    if "char_id" in table_columns(c, "speakers"):
        c.execute(
            "INSERT OR REPLACE INTO speaker_ids (speaker, char_id)"
            " SELECT name, char_id FROM speakers WHERE char_id IS NOT NULL"
        )


MIGRATIONS: tuple[Migration, ...] = (
    Migration("names", "001_registry_aliases_speaker_ids", _TABLES, run=_copy_speaker_ids),
    Migration(
        "names",
        "002_portrait_talks_with",
        # exchanges with her own name while her portrait shows (portraits.MIN_TALKS)
        "ALTER TABLE portrait_stats ADD COLUMN talks_with INTEGER NOT NULL DEFAULT 0;",
    ),
)
