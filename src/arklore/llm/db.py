"""A thread-safe SQLite connection in WAL mode: one writer at a time, each write its own
transaction, so a killed process loses nothing that was committed."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CACHE_FILE = "llm_cache.sqlite3"  # responses; safe to share across runs and tasks
STATE_FILE = "llm_state.sqlite3"  # cost ledger and job progress
ERRORS_FILE = "llm_errors.jsonl"  # one row per job given up on


class Database:
    """Serialises access to one connection; cheap enough for our request rates."""

    def __init__(self, path: Path, schema: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        with self.transaction() as conn:
            for statement in _split(schema):
                conn.execute(statement)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT under the lock; rolled back on any exception."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _split(schema: str) -> list[str]:
    return [s.strip() for s in schema.split(";") if s.strip()]
