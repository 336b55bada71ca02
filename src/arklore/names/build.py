"""The names layer's tables in the store: the registry, the alias table and speaker ids.

:func:`rebuild_names` runs after every ingest that changed the corpus, the registry or the
user alias file (:func:`names_stale`; the workspace's ingest step calls it): it stores the operator registry, then recomputes every alias from

* the registry: code names, alternate-form names, appellations, handbook 代号;
* speaker <-> portrait statistics over the primary corpus (:mod:`arklore.names.portraits`);
* avatar-id speakers of popup lines (``$avatar_nearl``, :mod:`arklore.names.avatars`);

and which operator each corpus speaker is (``speaker_ids``), resolved with those aliases plus
the user file (``data/aliases.toml`` or ``ARKLORE_ALIASES``), whose entries always win. The user
file is read fresh by every :func:`load_alias_table`, so an edit takes effect without
re-ingesting (speaker ids follow at the next ``arklore ingest``, which rebuilds the names
because the file changed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import orjson

from arklore.core.operators import Alias, Operator
from arklore.corpus.store import Store
from arklore.names.aliases import STRANGER_SOURCE, AliasTable, aliases_from_operators
from arklore.names.avatars import avatar_aliases
from arklore.names.matcher import MentionMatcher
from arklore.names.portraits import portrait_aliases
from arklore.names.registry import Registry


def load_operators(store: Store) -> list[Operator]:
    """The stored registry, sorted by id."""
    ops = []
    for (data,) in store.conn.execute("SELECT data FROM operators ORDER BY char_id"):
        d = orjson.loads(data)
        ops.append(Operator(**{k: d[k] for k in Operator.__slots__ if k in d}))
    return ops


def stored_registry(store: Store) -> Registry:
    """The stored registry as a :class:`Registry`, with its faction names and warnings."""
    return Registry(
        {op.char_id: op for op in load_operators(store)},
        team_names=orjson.loads(get_meta(store, "team_names") or "{}"),
        archive_names=orjson.loads(get_meta(store, "archive_names") or "{}"),
        warnings=registry_warnings(store),
    )


def registry_warnings(store: Store) -> list[str]:
    """What the last rebuild could not read (optional tables missing or unreadable)."""
    warnings: list[str] = orjson.loads(get_meta(store, "registry_warnings") or "[]")
    return warnings


def operator_count(store: Store) -> int:
    return int(store.conn.execute("SELECT count(*) FROM operators").fetchone()[0])


def rebuild_names(
    store: Store, registry: Registry, user_aliases: Sequence[Alias] = ()
) -> dict[str, int]:
    """Store ``registry`` and recompute aliases, portrait statistics and speaker ids."""
    ops = sorted(registry, key=lambda op: op.char_id)
    items: list[Alias] = aliases_from_operators(ops)
    for cid, code in registry.code_names.items():
        items.append(Alias(code, cid, "handbook", {"field": "代号"}))
    base_of = {op.char_id: op.base_id for op in ops if op.base_id}
    portrait, stats = portrait_aliases(
        store.dialogue_portraits(),
        [op.char_id for op in ops],
        base_of=base_of,
        exchanges=store.dialogue_exchanges(),
        own_names={op.char_id: op.name for op in ops},
    )
    items += portrait
    items += avatar_aliases(store.speaker_counts(), [op.char_id for op in ops])
    table = AliasTable(items + list(user_aliases))
    speaker_only = {
        sp: s["char_id"] for sp, s in stats.items() if s["accepted"] and s["speaker_only"]
    }
    strangers = {a.alias for a in user_aliases if a.source == STRANGER_SOURCE}
    speaker_ids = {
        name: speaker_id
        for name in store.speaker_counts()
        if name not in strangers
        and (speaker_id := resolve_speaker(table, speaker_only, name)) is not None
    }
    with store.transaction() as c:
        c.execute("DELETE FROM operators")
        c.executemany(
            "INSERT INTO operators (char_id, name, appellation, data) VALUES (?,?,?,?)",
            [(op.char_id, op.name, op.appellation, orjson.dumps(op).decode()) for op in ops],
        )
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
            "INSERT INTO portrait_stats (speaker, char_id, share, lines, runner_up, portrait_of,"
            " accepted, speaker_only, talks_with) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (sp, s["char_id"], s["share"], s["lines"], s["runner_up"], s["portrait_of"],
                 int(s["accepted"]), int(s["speaker_only"]), s["talks_with"])
                for sp, s in stats.items()
            ],
        )  # fmt: skip
        c.execute("DELETE FROM speaker_ids")
        c.executemany(
            "INSERT INTO speaker_ids (speaker, char_id) VALUES (?, ?)", speaker_ids.items()
        )
        set_meta(store, "team_names", orjson.dumps(registry.team_names).decode())
        set_meta(store, "archive_names", orjson.dumps(registry.archive_names).decode())
        set_meta(store, NAMES_FINGERPRINT, names_fingerprint(registry, user_aliases))
        set_meta(store, "registry_warnings", orjson.dumps(registry.warnings).decode())
    return {"operators": len(ops), "aliases": len(items), "portrait_aliases": len(portrait)}


NAMES_FINGERPRINT = "names_fingerprint"
NAME_RULES = 4
"""Bumped when a rule of this layer changes what the tables hold (2: a name that talks with
her is not her; 3: a picture shown for two other people is not hers; 4: 信使 is a job, not a
name; all in :mod:`arklore.names.portraits`), so a store built before is rebuilt."""


def names_fingerprint(registry: Registry, user_aliases: Sequence[Alias] = ()) -> str:
    """What the names tables are computed from besides the corpus: the registry and the user
    alias file. A rebuild stores it; when it changes the names must be rebuilt (an edited
    ``data/aliases.toml`` reaches the speaker ids only then)."""
    doc = {
        "rules": NAME_RULES,
        "registry": registry.to_dict(),
        "user": sorted((a.alias, a.char_id, a.source) for a in user_aliases),
    }
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def stored_fingerprint(store: Store) -> str:
    """The fingerprint the names tables were last computed with ("" before the first)."""
    return get_meta(store, NAMES_FINGERPRINT) or ""


def names_stale(store: Store, registry: Registry, user_aliases: Sequence[Alias] = ()) -> bool:
    """Were the names tables computed from another registry or user alias file?"""
    return stored_fingerprint(store) != names_fingerprint(registry, user_aliases)


def resolve_speaker(table: AliasTable, speaker_only: dict[str, str], name: str) -> str | None:
    """The operator a speaker name belongs to: an unambiguous alias, else a descriptive label
    whose portraits point at one operator, else None (an NPC)."""
    return table.resolve(name).char_id or speaker_only.get(name)


def speaker_ids(store: Store) -> dict[str, str]:
    """speaker name -> operator id, for the speakers that are operators."""
    return dict(store.conn.execute("SELECT speaker, char_id FROM speaker_ids"))


def portrait_stats(store: Store) -> dict[str, tuple[str, float, int, bool]]:
    """speaker -> (dominant operator, share, lines, accepted), for audits."""
    return {
        sp: (cid, share, lines, bool(accepted))
        for sp, cid, share, lines, accepted in store.conn.execute(
            "SELECT speaker, char_id, share, lines, accepted FROM portrait_stats"
        )
    }


def stored_aliases(store: Store) -> list[Alias]:
    return [
        Alias(a, c, s, orjson.loads(e))
        for a, c, s, e in store.conn.execute("SELECT alias, char_id, source, evidence FROM aliases")
    ]


def load_alias_table(store: Store, user_aliases: Sequence[Alias] = ()) -> AliasTable:
    """Stored aliases plus the user's (read by the caller, so edits apply at once)."""
    return AliasTable(stored_aliases(store) + list(user_aliases))


def store_matcher(store: Store, user_aliases: Sequence[Alias] = ()) -> MentionMatcher:
    """A mention matcher over everything the store knows."""
    return MentionMatcher(load_alias_table(store, user_aliases))


def get_meta(store: Store, key: str) -> str | None:
    row = store.conn.execute("SELECT value FROM names_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(store: Store, key: str, value: str) -> None:
    store.conn.execute("INSERT OR REPLACE INTO names_meta (key, value) VALUES (?, ?)", (key, value))
