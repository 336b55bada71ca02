"""SQLite files with named, ordered migrations: the one way arklore opens a database.

Every layer declares its tables as a list of :class:`Migration` in its own ``schema`` module
(``corpus/schema.py``, ``names/schema.py``, ...). Whoever opens a file passes the migrations
that file needs, in order; :meth:`Database.migrate` applies the ones not yet recorded in the
``_migrations`` table, each in its own transaction together with its record, so a crash
leaves a migration applied and recorded, or neither. A second open applies nothing. The
approach is simonw/llm's: a migration is never edited once released; a change is a new one.

Connections: WAL mode (readers never block the writer), ``busy_timeout`` 30 s, autocommit
outside :meth:`Database.transaction`, usable from several threads (calls are serialised by a
lock; SQLite's own locking keeps processes apart).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arklore.core.errors import StoreError

MIGRATIONS_TABLE = "_migrations"


@dataclass(frozen=True)
class Migration:
    """One named schema step of a layer: SQL (several statements allowed) or a function."""

    layer: str  # "corpus", "names", ...
    name: str  # "001_core": ordered within the layer, never renamed once released
    sql: str = ""
    run: Callable[[sqlite3.Connection], None] | None = None

    @property
    def key(self) -> str:
        return f"{self.layer}/{self.name}"


def split_sql(script: str) -> list[str]:
    """The statements of ``script`` (semicolons inside strings, comments and triggers kept)."""
    out: list[str] = []
    buf = ""
    for part in script.split(";"):
        buf += part + ";"
        if sqlite3.complete_statement(buf):
            if _has_code(buf):
                out.append(buf.strip())
            buf = ""
    if _has_code(buf.rstrip(";")):
        out.append(buf.rstrip(";").strip())
    return out


def _has_code(sql: str) -> bool:
    lines = [ln.split("--", 1)[0] for ln in sql.splitlines()]
    return bool("".join(lines).strip(" \t\r\n;"))


class Database:
    """One SQLite file with its migrations applied (see the module docstring)."""

    def __init__(
        self,
        path: Path | str,
        migrations: Sequence[Migration] = (),
        *,
        create: bool = True,
        missing_hint: str | None = None,
    ) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"no database at {self.path}", hint=missing_hint)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where a folder should be, no permission, disk full
            raise StoreError(
                f"cannot create the folder {self.path.parent}: {exc.strerror or exc}",
                hint="set ARKLORE_HOME to a folder arklore can create and write to",
            ) from exc
        self._lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=30000")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.applied = self.migrate(migrations)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open {self.path}: {exc}",
                hint=missing_hint or f"move {self.path} away and run the command again",
            ) from exc

    # -- migrations ------------------------------------------------------------------------
    def applied_migrations(self) -> list[str]:
        """Keys of the migrations recorded in this file, in the order they were applied."""
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE}"
            " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        return [
            r[0] for r in self.conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid")
        ]

    def migrate(self, migrations: Sequence[Migration]) -> list[str]:
        """Apply the migrations not yet recorded, in order; returns the keys applied now."""
        keys = [m.key for m in migrations]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate migration keys in {keys}")
        done = set(self.applied_migrations())
        applied: list[str] = []
        for m in migrations:
            if m.key in done:
                continue
            with self.transaction() as c:
                # another process may have applied it while we waited for the write lock
                if c.execute(
                    f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE name = ?", (m.key,)
                ).fetchone():
                    continue
                for statement in split_sql(m.sql):
                    c.execute(statement)
                if m.run is not None:
                    m.run(c)
                c.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                    (m.key, datetime.now(UTC).isoformat(timespec="seconds")),
                )
            applied.append(m.key)
        return applied

    # -- access ----------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT under the lock, rolled back on any exception
        (KeyboardInterrupt too); nested use joins the outer transaction."""
        with self._lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """Column names of ``table`` in order ([] when it does not exist)."""
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
