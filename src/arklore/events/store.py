"""Store access for story events (tables in :mod:`arklore.events.schema`).

A chunk's answer is written in one transaction with its ``event_chunks`` row; a stage's
checked events replace the stage's rows in one transaction with its ``event_stages`` row.
So retries, resumes and reruns never duplicate an event, and a kill leaves each stage with
its old events or its new ones.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from arklore.corpus.store import Store
from arklore.events.checks import CheckedActor, CheckedEvent, CheckedMemory
from arklore.extract.events import EventProposal


def _j(value: Any) -> str:
    return orjson.dumps(value, default=repr).decode()


# --- chunks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkAnswer:
    chunk: int
    first_line: int
    last_line: int
    proposals: list[EventProposal]
    model: str
    fingerprint: str


def write_chunk(
    store: Store,
    stage_path: str,
    chunk: int,
    proposals: Sequence[EventProposal],
    *,
    job_key: str,
    fingerprint: str,
    model: str,
    prompt_version: str,
    first_line: int,
    last_line: int,
    from_cache: bool,
) -> None:
    """Store (replace) one chunk's answer."""
    with store.transaction() as c:
        c.execute(
            "INSERT OR REPLACE INTO event_chunks (stage_path, chunk, job_key, fingerprint, model,"
            " prompt_version, first_line, last_line, proposals, from_cache, updated)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                stage_path, chunk, job_key, fingerprint, model, prompt_version, first_line,
                last_line, _j([p.model_dump() for p in proposals]), int(from_cache), time.time(),
            ),
        )  # fmt: skip


def chunk_state(store: Store, stage_path: str) -> dict[int, tuple[str, str]]:
    """chunk -> (fingerprint, model) of what is stored for the stage."""
    rows = store.conn.execute(
        "SELECT chunk, fingerprint, model FROM event_chunks WHERE stage_path = ?", (stage_path,)
    )
    return {c: (f, m) for c, f, m in rows}


def chunk_answers(store: Store, stage_path: str) -> list[ChunkAnswer]:
    rows = store.conn.execute(
        "SELECT chunk, first_line, last_line, proposals, model, fingerprint FROM event_chunks"
        " WHERE stage_path = ? ORDER BY chunk",
        (stage_path,),
    )
    return [
        ChunkAnswer(
            c, first, last, [EventProposal.model_validate(p) for p in orjson.loads(ps)], m, f
        )
        for c, first, last, ps, m, f in rows
    ]


def drop_stale_chunks(store: Store, stage_path: str, n_chunks: int) -> None:
    """A stage that now splits into fewer chunks loses the rest."""
    with store.transaction() as c:
        c.execute(
            "DELETE FROM event_chunks WHERE stage_path = ? AND chunk >= ?", (stage_path, n_chunks)
        )


# --- checked stages --------------------------------------------------------------------

_EVENT_COLUMNS = (
    "stage_path", "idx", "verdict", "drop_reason", "drop_detail", "phase", "phase_claimed",
    "summary", "actors", "time_hint", "time_hint_claimed", "time_hint_verdict", "line_start",
    "line_end", "range_claimed", "line_ids", "branches", "alternatives", "flags", "chunks",
    "merged_from", "stage_code", "event_id", "event_name", "story_name", "order_rank", "model",
    "prompt_version",
)  # fmt: skip
_EVENT_JSON = frozenset(
    {"actors", "range_claimed", "line_ids", "branches", "alternatives", "flags", "chunks"}
)
_MEMORY_COLUMNS = (
    "stage_path", "event_idx", "pos", "actor", "written_as", "actor_id", "doctor", "text",
    "verdict", "drop_reason", "person", "flags", "presence", "evidence_line_ids",
)  # fmt: skip


def _event_row(e: CheckedEvent) -> tuple[Any, ...]:
    d = e.to_dict()
    d["stage_path"] = d.pop("stage")
    return tuple(_j(d[c]) if c in _EVENT_JSON else d[c] for c in _EVENT_COLUMNS)


def _memory_rows(e: CheckedEvent) -> list[tuple[Any, ...]]:
    return [
        (
            e.stage, e.idx, pos, m.actor, m.written_as, m.actor_id, int(m.doctor), m.text,
            m.verdict, m.drop_reason, m.person, _j(m.flags), m.presence, _j(m.evidence_line_ids),
        )
        for pos, m in enumerate(e.memories)
    ]  # fmt: skip


def write_stage(
    store: Store,
    stage_path: str,
    events: list[CheckedEvent],
    *,
    chunks: int,
    fingerprint: str,
    summary: dict[str, Any],
    models: list[str],
    prompt_version: str,
) -> None:
    """Replace the stage's checked events and memories (one transaction)."""
    with store.transaction() as c:
        c.execute("DELETE FROM event_memories WHERE stage_path = ?", (stage_path,))
        c.execute("DELETE FROM story_events WHERE stage_path = ?", (stage_path,))
        c.executemany(
            f"INSERT INTO story_events ({', '.join(_EVENT_COLUMNS)})"
            f" VALUES ({','.join('?' * len(_EVENT_COLUMNS))})",
            [_event_row(e) for e in events],
        )
        c.executemany(
            f"INSERT INTO event_memories ({', '.join(_MEMORY_COLUMNS)})"
            f" VALUES ({','.join('?' * len(_MEMORY_COLUMNS))})",
            [row for e in events for row in _memory_rows(e)],
        )
        c.execute(
            "INSERT OR REPLACE INTO event_stages (stage_path, chunks, fingerprint, summary,"
            " models, prompt_version, checked) VALUES (?,?,?,?,?,?,?)",
            (stage_path, chunks, fingerprint, _j(summary), _j(models), prompt_version, time.time()),
        )


def stage_fingerprint(store: Store, stage_path: str) -> str | None:
    row = store.conn.execute(
        "SELECT fingerprint FROM event_stages WHERE stage_path = ?", (stage_path,)
    ).fetchone()
    return row[0] if row else None


def has_events(store: Store, stage_path: str) -> bool:
    """Were the stage's events extracted and checked (even if none was kept)?"""
    return stage_fingerprint(store, stage_path) is not None


def checked_stages(store: Store) -> list[str]:
    return [r[0] for r in store.conn.execute("SELECT stage_path FROM event_stages ORDER BY 1")]


def stage_summary(store: Store, stage_path: str) -> dict[str, Any]:
    row = store.conn.execute(
        "SELECT summary FROM event_stages WHERE stage_path = ?", (stage_path,)
    ).fetchone()
    return orjson.loads(row[0]) if row else {}


def revision(store: Store) -> tuple[int, float]:
    """Changes whenever a stage's events are (re)written: memory indexes reload on change."""
    n, last = store.conn.execute("SELECT count(*), max(checked) FROM event_stages").fetchone()
    return int(n), float(last or 0.0)


def _row_event(row: tuple[Any, ...], memories: list[CheckedMemory]) -> CheckedEvent:
    d = dict(zip(_EVENT_COLUMNS, row, strict=True))
    for c in _EVENT_JSON:
        d[c] = orjson.loads(d[c])
    d["stage"] = d.pop("stage_path")
    d["actors"] = [CheckedActor(**a) for a in d["actors"]]
    return CheckedEvent(**d, memories=memories)


def _row_memory(row: tuple[Any, ...]) -> CheckedMemory:
    d = dict(zip(_MEMORY_COLUMNS, row, strict=True))
    for c in ("stage_path", "event_idx", "pos"):
        d.pop(c)
    d["doctor"] = bool(d["doctor"])
    d["flags"] = orjson.loads(d["flags"])
    d["evidence_line_ids"] = orjson.loads(d["evidence_line_ids"])
    return CheckedMemory(**d)


def load_events(store: Store, stage_path: str) -> list[CheckedEvent]:
    """The stage's checked events (kept and dropped) with their memories, in order."""
    mems: dict[int, list[CheckedMemory]] = {}
    for row in store.conn.execute(
        f"SELECT {', '.join(_MEMORY_COLUMNS)} FROM event_memories WHERE stage_path = ?"
        " ORDER BY event_idx, pos",
        (stage_path,),
    ):
        mems.setdefault(row[1], []).append(_row_memory(row))
    rows = store.conn.execute(
        f"SELECT {', '.join(_EVENT_COLUMNS)} FROM story_events WHERE stage_path = ? ORDER BY idx",
        (stage_path,),
    )
    return [_row_event(r, mems.get(r[1], [])) for r in rows]


@dataclass(frozen=True)
class MemoryRow:
    """One kept memory with what a chat shows beside it."""

    stage_path: str
    event_idx: int
    actor: str
    actor_id: str | None
    text: str
    person: str
    evidence_line_ids: list[str]
    line_start: int
    line_end: int
    line_ids: list[str]
    phase: str | None
    time_hint: str | None
    stage_code: str | None
    event_id: str | None
    event_name: str | None
    story_name: str | None
    order_rank: int | None


def kept_memories(store: Store, actor_ids: Iterable[str]) -> list[MemoryRow]:
    """Every kept memory of these operator ids (guard verdict included), any stage."""
    ids = sorted(set(actor_ids))
    if not ids:
        return []
    return _memory_rows_where(f"m.actor_id IN ({','.join('?' * len(ids))})", ids, store)


def stage_memories(store: Store, stage_paths: Iterable[str]) -> list[MemoryRow]:
    """Every kept memory of operators in these stages (to embed them ahead of chat)."""
    out: list[MemoryRow] = []
    paths = sorted(set(stage_paths))
    for i in range(0, len(paths), 500):
        chunk = paths[i : i + 500]
        where = f"m.actor_id IS NOT NULL AND m.stage_path IN ({','.join('?' * len(chunk))})"
        out.extend(_memory_rows_where(where, chunk, store))
    return out


def _memory_rows_where(where: str, args: Sequence[object], store: Store) -> list[MemoryRow]:
    rows = store.conn.execute(
        "SELECT m.stage_path, m.event_idx, m.actor, m.actor_id, m.text, m.person,"
        " m.evidence_line_ids, e.line_start, e.line_end, e.line_ids, e.phase, e.time_hint,"
        " e.stage_code, e.event_id, e.event_name, e.story_name, e.order_rank"
        " FROM event_memories m JOIN story_events e"
        " ON e.stage_path = m.stage_path AND e.idx = m.event_idx"
        f" WHERE m.verdict = 'kept' AND e.verdict = 'kept' AND {where}"
        " ORDER BY coalesce(e.order_rank, 1 << 40), m.stage_path, e.line_start, m.event_idx, m.pos",
        list(args),
    ).fetchall()
    out = []
    for r in rows:
        r = list(r)
        r[6], r[9] = orjson.loads(r[6]), orjson.loads(r[9])
        out.append(MemoryRow(*r))
    return out


def kept_events(store: Store, stage_paths: Iterable[str] | None = None) -> Iterator[CheckedEvent]:
    """Kept events of the given stages (default: every checked stage), stage by stage."""
    for sp in stage_paths if stage_paths is not None else checked_stages(store):
        for e in load_events(store, sp):
            if e.kept:
                yield e


def cited_line_ids(store: Store) -> Iterator[tuple[str, str]]:
    """(line_id, what cites it) for the evidence of every kept memory, for verify-anchors."""
    rows = store.conn.execute(
        "SELECT stage_path, event_idx, actor, evidence_line_ids FROM event_memories"
        " WHERE verdict = 'kept' ORDER BY stage_path, event_idx, pos"
    )
    for sp, idx, actor, ids in rows:
        for line_id in orjson.loads(ids):
            yield line_id, f"event_memories: {actor} ({sp} #{idx})"


def event_record(e: CheckedEvent) -> dict[str, Any]:
    return asdict(e)
