"""The SQLite store: stages, lines, speakers, operators and ingest errors.

One file under ARKLORE_HOME. Every write that changes a stage happens in one
transaction, so a crash leaves either the old or the new stage, never a mix.
Later layers (aliases, relations, events, memories, profiles) add their own
tables through :func:`register_schema` so the store stays the one place state lives.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from arklore.core.errors import NotIngestedError, StoreError
from arklore.core.model import Branch, Line, LineKind, Stage

SCHEMA_VERSION = 1

_CORE_SCHEMA = """
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

-- The corpus downstream layers read: the raw AVG script when the stage has one
-- (newer game version), else the ASTR copy.
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
    astr_lines INTEGER NOT NULL,
    char_id TEXT                     -- operator id when the name is an operator's, else NULL (NPC)
);

CREATE TABLE IF NOT EXISTS operators (
    char_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    appellation TEXT,
    data TEXT NOT NULL               -- JSON of the full Operator record
);

CREATE TABLE IF NOT EXISTS ingest_errors (
    source TEXT NOT NULL, path TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (source, path)
);
"""

_extra_schemas: list[str] = []


def register_schema(sql: str) -> None:
    """Let a later layer add its tables (CREATE ... IF NOT EXISTS) to every opened store."""
    if sql not in _extra_schemas:
        _extra_schemas.append(sql)


class Store:
    """A connection to the arklore database with typed helpers for the corpus tables."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise NotIngestedError(f"no store at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._init_schema()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from exc

    def _init_schema(self) -> None:
        row = None
        has_meta = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if has_meta:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is not None and int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema version {row[0]}, this arklore needs {SCHEMA_VERSION}",
                hint=f"delete {self.path} and run `arklore ingest` again",
            )
        # One script, one transaction: a crash mid-way leaves no half-made schema.
        self.conn.executescript(
            "BEGIN IMMEDIATE;"
            + _CORE_SCHEMA
            + "".join(_extra_schemas)
            + f"INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');"
            + "COMMIT;"
        )

    def ensure_schema(self, sql: str) -> None:
        """Create a layer's tables on an already open store (idempotent, one transaction)."""
        self.conn.executescript("BEGIN IMMEDIATE;" + sql + "COMMIT;")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (KeyboardInterrupt too)."""
        if self.conn.in_transaction:
            yield self.conn
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    # -- stages and lines -------------------------------------------------------------

    def stage_hashes(self, source: str) -> dict[str, str]:
        """stage_path -> content hash of what is stored for that source."""
        rows = self.conn.execute(
            "SELECT stage_path, content_hash FROM stages WHERE source = ?", (source,)
        )
        return dict(rows.fetchall())

    def replace_stage(self, stage: Stage, principal: list[str] | None = None) -> None:
        """Store a stage and its lines, replacing what was there (caller holds a transaction)."""
        c = self.conn
        c.execute(
            "DELETE FROM lines WHERE source = ? AND stage_path = ?",
            (stage.source, stage.stage_path),
        )
        c.execute(
            "INSERT OR REPLACE INTO stages (source, stage_path, source_path, event_id, event_name,"
            " entry_type, story_code, avg_tag, story_name, story_info, story_sort, start_time,"
            " content_hash, line_count, principal_speakers)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                str(stage.source),
                stage.stage_path,
                stage.source_path,
                stage.event_id,
                stage.event_name,
                stage.entry_type,
                stage.story_code,
                stage.avg_tag,
                stage.story_name,
                stage.story_info,
                stage.story_sort,
                stage.start_time,
                stage.content_hash,
                len(stage.lines),
                orjson.dumps(principal or []).decode(),
            ),
        )
        c.executemany(
            "INSERT INTO lines (source, stage_path, line_no, line_id, kind, speaker, speaker_raw,"
            " uncertain, text, figure_art, branch, addresses_doctor, options)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [_line_row(str(stage.source), ln) for ln in stage.lines],
        )

    def delete_stage(self, source: str, stage_path: str) -> None:
        self.conn.execute(
            "DELETE FROM lines WHERE source = ? AND stage_path = ?", (source, stage_path)
        )
        self.conn.execute(
            "DELETE FROM stages WHERE source = ? AND stage_path = ?", (source, stage_path)
        )

    def lines(self, stage_path: str, source: str | None = None) -> list[Line]:
        """The stage's lines from the given source, or from the primary one (avg, else astr)."""
        if source is None:
            source = self.primary_source(stage_path)
            if source is None:
                return []
        rows = self.conn.execute(
            "SELECT stage_path, line_no, kind, text, speaker, speaker_raw, uncertain, figure_art,"
            " branch, addresses_doctor, options FROM lines WHERE source = ? AND stage_path = ?"
            " ORDER BY line_no",
            (source, stage_path),
        )
        return [_row_line(r) for r in rows]

    def primary_source(self, stage_path: str) -> str | None:
        row = self.conn.execute(
            "SELECT source FROM primary_stages WHERE stage_path = ?", (stage_path,)
        ).fetchone()
        return row[0] if row else None

    def stage_paths(self, source: str | None = None) -> list[str]:
        if source is None:
            q = self.conn.execute("SELECT stage_path FROM primary_stages ORDER BY stage_path")
        else:
            q = self.conn.execute(
                "SELECT stage_path FROM stages WHERE source = ? ORDER BY stage_path", (source,)
            )
        return [r[0] for r in q]

    def require_ingested(self) -> None:
        if self.conn.execute("SELECT 1 FROM stages LIMIT 1").fetchone() is None:
            raise NotIngestedError(f"the store {self.path} holds no stages")

    def counts(self) -> dict[str, int]:
        q = self.conn.execute
        return {
            "avg_stages": q("SELECT count(*) FROM stages WHERE source='avg'").fetchone()[0],
            "astr_stages": q("SELECT count(*) FROM stages WHERE source='astr'").fetchone()[0],
            "avg_lines": q(
                "SELECT coalesce(sum(line_count),0) FROM stages WHERE source='avg'"
            ).fetchone()[0],
            "astr_lines": q(
                "SELECT coalesce(sum(line_count),0) FROM stages WHERE source='astr'"
            ).fetchone()[0],
            "primary_stages": q("SELECT count(*) FROM primary_stages").fetchone()[0],
            "speakers": q("SELECT count(*) FROM speakers").fetchone()[0],
            "avg_speakers": q("SELECT count(*) FROM speakers WHERE avg_lines > 0").fetchone()[0],
            "operators": q("SELECT count(*) FROM operators").fetchone()[0],
            "ingest_errors": q("SELECT count(*) FROM ingest_errors").fetchone()[0],
        }


def _line_row(source: str, ln: Line) -> tuple:
    options = (
        orjson.dumps([list(ln.options), list(ln.option_values)]).decode() if ln.options else None
    )
    return (
        source,
        ln.stage_path,
        ln.line_no,
        ln.line_id,
        str(ln.kind),
        ln.speaker,
        ln.speaker_raw,
        int(ln.uncertain),
        ln.text,
        ln.figure_art,
        ln.branch.key() if ln.branch else None,
        int(ln.addresses_doctor),
        options,
    )


def _row_line(r: Iterable) -> Line:
    (
        stage_path,
        line_no,
        kind,
        text,
        speaker,
        speaker_raw,
        uncertain,
        figure_art,
        branch,
        addresses_doctor,
        options,
    ) = r
    opts, vals = orjson.loads(options) if options else ([], [])
    return Line(
        stage_path=stage_path,
        line_no=line_no,
        kind=LineKind(kind),
        text=text,
        speaker=speaker,
        speaker_raw=speaker_raw,
        uncertain=bool(uncertain),
        figure_art=figure_art,
        branch=Branch.from_key(branch),
        addresses_doctor=bool(addresses_doctor),
        options=tuple(opts),
        option_values=tuple(vals),
    )
