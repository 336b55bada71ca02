"""The one place profiles read the store and the excel tables (repoint it here, nowhere else).

Everything else in :mod:`arklore.profiles` takes plain values: :class:`~.archive.Tables`,
lists of :class:`~.quotes.StoryLine`, :class:`~arklore.core.operators.Operator` records.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from arklore.core.operators import Operator
from arklore.corpus.store import Store
from arklore.profiles.archive import CHARACTER, CHARWORD, HANDBOOK, TEAM, Tables
from arklore.profiles.quotes import QuoteSource, StoryLine
from arklore.sources.gamedata import read_table

MAX_RAW_CHARS = 400
"""Story lines longer than this (raw) are never quote candidates; not loaded."""


def load_tables(excel_root: Path | None) -> Tables:
    """The four tables profiles read; a missing file (or no excel root) is ``None``."""
    if excel_root is None:
        return Tables()
    return Tables(
        handbook_info=read_table(excel_root, HANDBOOK),
        character=read_table(excel_root, CHARACTER),
        charword=read_table(excel_root, CHARWORD),
        handbook_team=read_table(excel_root, TEAM),
    )


def load_operators(store: Store) -> list[Operator]:
    """Every operator of the registry the store holds, by char id."""
    from arklore.names.build import load_operators as _load

    return _load(store)


def _label(code: str | None, tag: str | None, name: str | None) -> str:
    return " ".join(p for p in (code, name, tag) if p)


def story_lines(store: Store, char_ids: Iterable[str] | None = None) -> dict[str, list[StoryLine]]:
    """Dialogue lines of the primary corpus whose speaker resolves to an operator
    (``speakers.char_id``), by that operator, in story order. Lines whose speaker is written
    with a question mark (uncertain) are left out."""
    sql = (
        "SELECT l.line_id, l.stage_path, l.line_no, coalesce(p.order_rank, 0), l.speaker,"
        " s.char_id, l.text, p.story_code, p.avg_tag, p.story_name"
        " FROM lines l"
        " JOIN primary_stages p ON p.source = l.source AND p.stage_path = l.stage_path"
        " JOIN speakers s ON s.name = l.speaker"
        " WHERE s.char_id IS NOT NULL AND l.kind = 'dialogue' AND l.uncertain = 0"
        " AND length(l.text) <= ?"
    )
    params: list = [MAX_RAW_CHARS]
    if char_ids is not None:
        ids = sorted(set(char_ids))
        if not ids:
            return {}
        sql += f" AND s.char_id IN ({','.join('?' * len(ids))})"
        params += ids
    out: dict[str, list[StoryLine]] = {}
    for lid, path, no, order, speaker, cid, text, code, tag, name in store.conn.execute(
        sql, params
    ):
        out.setdefault(cid, []).append(
            StoryLine(lid, path, no, order, speaker, cid, text, _label(code, tag, name))
        )
    for lines in out.values():
        lines.sort(key=lambda s: (s.order, s.stage_path, s.line_no))
    return out


def story_line_sources(store: Store, line_ids: Iterable[str]) -> dict[str, QuoteSource]:
    """``story:<line_id>`` -> the line's text and its speaker's operator, for the verbatim
    gate; ids the primary corpus no longer holds are simply absent."""
    ids = sorted(set(line_ids))
    out: dict[str, QuoteSource] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        rows = store.conn.execute(
            "SELECT l.line_id, l.text, s.char_id FROM primary_lines l"
            " LEFT JOIN speakers s ON s.name = l.speaker"
            f" WHERE l.line_id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for lid, text, cid in rows:
            out[f"story:{lid}"] = QuoteSource(text, cid)
    return out


def people(store: Store, excel_root: Path | None):
    """The graph's name resolver over the store's alias table (for counting mentions
    without a built graph)."""
    from arklore.graph.build import load_registry
    from arklore.graph.people import People

    return People.from_store(store, load_registry(store, excel_root))
