"""The alias table in the store: built at ingest from the registry and the corpus.

Sources (see :mod:`arklore.names.aliases` for their precedence):

* the registry: code names, alternate-form names, appellations, handbook 代号;
* speaker <-> portrait statistics over the primary corpus (:mod:`arklore.names.portraits`);
* avatar-id speakers of popup lines (``$avatar_nearl``, :mod:`arklore.names.avatars`);
* ``data/aliases.toml``, the user file, read fresh on every load so an edit takes effect
  without re-ingesting; its entries always win.

The same pass fills ``speakers.char_id`` so the speaker whitelist says which speakers are
operators and which are NPCs.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from arklore.core.operators import Alias, Operator
from arklore.corpus.store import Store, register_schema
from arklore.names.aliases import AliasTable, aliases_from_operators, load_user_aliases
from arklore.names.avatars import avatar_aliases
from arklore.names.portraits import portrait_aliases

SCHEMA = """
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
    accepted INTEGER NOT NULL,       -- passed MIN_LINES and MIN_SHARE
    speaker_only INTEGER NOT NULL    -- a descriptive label: resolves the speaker, not an alias
);
"""
register_schema(SCHEMA)


def load_operators(store: Store) -> list[Operator]:
    ops = []
    for (data,) in store.conn.execute("SELECT data FROM operators ORDER BY char_id"):
        d = orjson.loads(data)
        ops.append(Operator(**{k: d[k] for k in Operator.__slots__ if k in d}))
    return ops


def rebuild_aliases(store: Store, code_names: dict[str, str] | None = None) -> dict[str, int]:
    """Recompute stored aliases, portrait statistics and speakers.char_id."""
    store.ensure_schema(SCHEMA)
    ops = load_operators(store)
    items: list[Alias] = aliases_from_operators(ops)
    for cid, code in (code_names or {}).items():
        items.append(Alias(code, cid, "handbook", {"field": "代号"}))
    pairs = store.conn.execute(
        "SELECT speaker, figure_art FROM primary_lines WHERE kind = 'dialogue' AND speaker != ''"
    )
    base_of = {op.char_id: op.base_id for op in ops if op.base_id}
    portrait, stats = portrait_aliases(pairs, [op.char_id for op in ops], base_of=base_of)
    items += portrait
    items += avatar_aliases(
        (r[0] for r in store.conn.execute("SELECT name FROM speakers")),
        [op.char_id for op in ops],
    )
    with store.transaction() as c:
        c.execute("DELETE FROM aliases")
        c.executemany(
            "INSERT OR IGNORE INTO aliases (alias, char_id, source, evidence) VALUES (?,?,?,?)",
            [
                (a.alias, a.char_id, a.source, orjson.dumps(a.evidence or {}).decode())
                for a in items
            ],
        )
        c.execute("DELETE FROM portrait_stats")
        c.executemany(
            "INSERT INTO portrait_stats VALUES (?,?,?,?,?,?,?,?)",
            [
                (
                    sp,
                    s["char_id"],
                    s["share"],
                    s["lines"],
                    s["runner_up"],
                    s["portrait_of"],
                    int(s["accepted"]),
                    int(s["speaker_only"]),
                )
                for sp, s in stats.items()
            ],
        )
    table = load_alias_table(store)
    speaker_only = {
        sp: s["char_id"] for sp, s in stats.items() if s["accepted"] and s["speaker_only"]
    }
    speakers = [r[0] for r in store.conn.execute("SELECT name FROM speakers")]
    with store.transaction() as c:
        c.executemany(
            "UPDATE speakers SET char_id = ? WHERE name = ?",
            [(resolve_speaker(table, speaker_only, name), name) for name in speakers],
        )
    return {"aliases": len(items), "portrait_aliases": len(portrait)}


def resolve_speaker(table: AliasTable, speaker_only: dict[str, str], name: str) -> str | None:
    """The operator a speaker name belongs to: an unambiguous alias, else a descriptive label
    whose portraits point at one operator, else None (an NPC)."""
    return table.resolve(name).char_id or speaker_only.get(name)


def stored_aliases(store: Store) -> list[Alias]:
    return [
        Alias(a, c, s, orjson.loads(e))
        for a, c, s, e in store.conn.execute("SELECT alias, char_id, source, evidence FROM aliases")
    ]


def load_alias_table(store: Store, user_path: Path | None = None) -> AliasTable:
    """Stored aliases plus the user file (read now, so its edits apply at once)."""
    store.ensure_schema(SCHEMA)
    return AliasTable(stored_aliases(store) + load_user_aliases(user_path))


def store_matcher(store: Store, user_path: Path | None = None):
    """A mention matcher over everything the store knows."""
    from arklore.names.matcher import MentionMatcher

    return MentionMatcher(load_alias_table(store, user_path))
