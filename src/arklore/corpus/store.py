"""The SQLite store: one file under ARKLORE_HOME that every layer keeps its tables in.

This module is the corpus layer's access to it: stages, lines, speakers (tables declared in
:mod:`arklore.corpus.schema`). Other layers declare their own tables as migrations and pass
them when the store is opened (the workspace passes every layer's, in order); they read the
corpus through the methods here, never with SQL of their own. Every write that changes a stage
happens in one transaction, so a crash leaves either the old or the new stage, never a mix.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from arklore.base.db import Database, Migration
from arklore.core.errors import NotIngestedError
from arklore.core.model import DOCTOR, Branch, Line, LineKind, Source, Stage
from arklore.corpus.order import chapter_event
from arklore.corpus.schema import MIGRATIONS as CORPUS_MIGRATIONS
from arklore.corpus.story import StageRow


@dataclass(frozen=True, slots=True)
class SpokenLine:
    """A dialogue or choice line of the primary corpus, as the interaction scan reads it."""

    stage_path: str
    line_no: int
    kind: str  # "dialogue" | "choice"
    speaker: str
    uncertain: bool
    text: str
    branch: str | None
    line_id: str
    scene: int = 0  # cuts before it in its stage (Line.scene)


@dataclass(frozen=True, slots=True)
class IngestRun:
    """One ``arklore ingest``: when, from which data roots, and whether it finished."""

    id: int
    started_at: str
    finished_at: str | None  # None: killed or crashed before the end
    gamedata: str | None
    astr: str | None
    tables_fingerprint: str | None
    sources: tuple[str, ...]

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


StageLabels = tuple[str | None, str | None, str | None, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class StageInfo:
    """What the tables say about a stage of the primary corpus."""

    stage_path: str
    source: str
    event_id: str | None
    event_name: str | None
    story_code: str | None
    story_name: str | None
    avg_tag: str | None
    story_info: str | None
    order_rank: int | None
    line_count: int
    start_time: int | None = None  # when its event or chapter opened (sources.gamedata.opened)

    def labels(self) -> StageLabels:
        """How a reader is shown the stage, in the order the event layer's rows hold them:
        story code, event id, event name, story name, avg tag, the game's summary."""
        return (
            self.story_code,
            self.event_id,
            self.event_name,
            self.story_name,
            self.avg_tag,
            self.story_info,
        )


@dataclass(frozen=True, slots=True)
class StageRows:
    """A stage as the store writes it: its metadata (``stage``, its lines left out), the rows
    of its lines (line ids computed) and its principal speakers. Made where the stage is
    parsed (an ingest's worker process), so the writer only writes."""

    stage: Stage
    lines: list[tuple[Any, ...]]
    principal: list[str]

    @classmethod
    def of(cls, stage: Stage, principal: list[str] | None = None) -> StageRows:
        rows = [_line_row(str(stage.source), ln) for ln in stage.lines]
        return cls(replace(stage, lines=[]), rows, list(principal or []))

    def stage_row(self) -> tuple[Any, ...]:
        st = self.stage
        return (
            str(st.source),
            st.stage_path,
            st.source_path,
            st.event_id,
            st.event_name,
            st.entry_type,
            st.story_code,
            st.avg_tag,
            st.story_name,
            st.story_info,
            st.story_sort,
            st.start_time,
            st.content_hash,
            len(self.lines),
            orjson.dumps(self.principal).decode(),
        )

    def warning_rows(self) -> list[tuple[str, str, int, str]]:
        st = self.stage
        return [(str(st.source), st.stage_path, i, w) for i, w in enumerate(st.parse_warnings)]


class Store:
    """A connection to the arklore database with typed helpers for the corpus tables."""

    def __init__(
        self,
        path: Path | str,
        *,
        create: bool = True,
        migrations: Sequence[Migration] = CORPUS_MIGRATIONS,
    ) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise NotIngestedError(f"no store ({self.path.name})", self.path.parent)
        self.db = Database(self.path, migrations)
        self.conn: sqlite3.Connection = self.db.conn

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (KeyboardInterrupt too)."""
        with self.db.transaction() as c:
            yield c

    # -- stages and lines -------------------------------------------------------------

    def stage_hashes(self, source: str) -> dict[str, str]:
        """stage_path -> content hash of what is stored for that source."""
        rows = self.conn.execute(
            "SELECT stage_path, content_hash FROM stages WHERE source = ?", (source,)
        )
        return dict(rows.fetchall())

    def replace_stage(self, stage: Stage, principal: list[str] | None = None) -> None:
        """Store a stage and its lines, replacing what was there (caller holds a transaction)."""
        self.write_stages([StageRows.of(stage, principal)])

    def write_stages(self, stages: Sequence[StageRows]) -> None:
        """Store stages and their lines, replacing what was there: one statement per table for
        the whole batch (caller holds a transaction, so the batch is written whole or not at
        all)."""
        c = self.conn
        keys = [(str(s.stage.source), s.stage.stage_path) for s in stages]
        c.executemany("DELETE FROM lines WHERE source = ? AND stage_path = ?", keys)
        c.executemany("DELETE FROM parse_warnings WHERE source = ? AND stage_path = ?", keys)
        c.executemany(
            "INSERT OR REPLACE INTO stages (source, stage_path, source_path, event_id, event_name,"
            " entry_type, story_code, avg_tag, story_name, story_info, story_sort, start_time,"
            " content_hash, line_count, principal_speakers)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [s.stage_row() for s in stages],
        )
        c.executemany(
            "INSERT INTO parse_warnings (source, stage_path, idx, warning) VALUES (?,?,?,?)",
            [row for s in stages for row in s.warning_rows()],
        )
        c.executemany(
            "INSERT INTO lines (source, stage_path, line_no, line_id, kind, speaker, speaker_raw,"
            " uncertain, text, figure_art, branch, addresses_doctor, options, scene)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [row for s in stages for row in s.lines],
        )

    LINE_INDEXES = (
        "CREATE INDEX IF NOT EXISTS lines_by_speaker ON lines (speaker)",
        "CREATE INDEX IF NOT EXISTS lines_by_id ON lines (line_id)",
    )

    def drop_line_indexes(self) -> None:
        """Before a bulk load: writing rows is several times faster without the indexes;
        :meth:`ensure_line_indexes` builds them again in one pass."""
        with self.transaction() as c:
            c.execute("DROP INDEX IF EXISTS lines_by_speaker")
            c.execute("DROP INDEX IF EXISTS lines_by_id")

    def ensure_line_indexes(self) -> None:
        with self.transaction() as c:
            for sql in self.LINE_INDEXES:
                c.execute(sql)

    def delete_stage(self, source: str, stage_path: str) -> None:
        self.conn.execute(
            "DELETE FROM parse_warnings WHERE source = ? AND stage_path = ?", (source, stage_path)
        )
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
            " branch, addresses_doctor, options, scene FROM lines"
            " WHERE source = ? AND stage_path = ?"
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
            raise NotIngestedError(f"the store {self.path.name} holds no stages", self.path.parent)

    def counts(self) -> dict[str, int]:
        """What the corpus tables hold (other layers add their own counts)."""
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
            "ingest_errors": q("SELECT count(*) FROM ingest_errors").fetchone()[0],
            "parse_warnings": q("SELECT count(*) FROM parse_warnings").fetchone()[0],
        }

    # -- what other layers read ------------------------------------------------------------
    def speaker_counts(self) -> dict[str, tuple[int, int]]:
        """speaker name -> (lines, stages) in the primary corpus."""
        rows = self.conn.execute("SELECT name, line_count, stage_count FROM speakers")
        return {name: (n, stages) for name, n, stages in rows}

    def speaker_rows(self) -> list[tuple[str, int, int, int, int]]:
        """(name, lines, stages, avg_lines, astr_lines) for every speaker, most lines first."""
        return self.conn.execute(
            "SELECT name, line_count, stage_count, avg_lines, astr_lines FROM speakers"
            " ORDER BY line_count DESC, name"
        ).fetchall()

    def spoken_lines(self) -> Iterator[SpokenLine]:
        """Dialogue and choice lines of the primary corpus in (stage, line_no) order."""
        return self._spoken("1 = 1", [], "ORDER BY stage_path, line_no")

    def dialogue_portraits(self) -> Iterator[tuple[str, str | None, int]]:
        """(speaker, portrait on screen, lines) over the attributed dialogue lines of the
        primary corpus: how often each speaker talks with each portrait shown."""
        yield from self.conn.execute(
            "SELECT speaker, figure_art, count(*) FROM primary_lines"
            " WHERE kind = 'dialogue' AND speaker != '' GROUP BY speaker, figure_art"
        )

    def dialogue_exchanges(self) -> Iterator[tuple[str, str | None, str, str | None, int]]:
        """(speaker, portrait, next speaker, their portrait, times) over consecutive attributed
        dialogue lines of one stage of the primary corpus where the speaker changes: who talks
        with whom, and what was on screen while they did."""
        yield from self.conn.execute(
            "SELECT speaker, figure_art, next_speaker, next_art, count(*) FROM ("
            " SELECT stage_path, speaker, figure_art,"
            "  LEAD(speaker) OVER w AS next_speaker, LEAD(figure_art) OVER w AS next_art"
            " FROM primary_lines WHERE kind = 'dialogue' AND speaker != ''"
            " WINDOW w AS (PARTITION BY source, stage_path ORDER BY line_no))"
            " WHERE next_speaker IS NOT NULL AND next_speaker != speaker"
            " GROUP BY speaker, figure_art, next_speaker, next_art"
        )

    def principal_speakers(self) -> dict[str, list[str]]:
        """stage_path -> the speakers who carry it (see :func:`corpus.order.principal_speakers`)."""
        return {
            path: orjson.loads(ps)
            for path, ps in self.conn.execute(
                "SELECT stage_path, principal_speakers FROM primary_stages"
            )
        }

    def stage_info(self, stage_path: str) -> StageInfo | None:
        """Metadata of a stage of the primary corpus (None when it is not stored)."""
        row = self.conn.execute(
            "SELECT stage_path, source, event_id, event_name, story_code, story_name, avg_tag,"
            " story_info, order_rank, line_count, start_time FROM primary_stages WHERE stage_path = ?",
            (stage_path,),
        ).fetchone()
        return StageInfo(*row) if row else None

    def stage_infos(self, stage_paths: Iterable[str] | None = None) -> list[StageInfo]:
        """Metadata of every primary stage (or of ``stage_paths``) in story order
        (``order_rank``, then path): one query, for timelines and appearance lists; a few
        ``stage_paths`` are looked up by the primary key (0.6 ms, not a 35 ms pass)."""
        cols = (
            "SELECT stage_path, source, event_id, event_name, story_code, story_name, avg_tag,"
            " story_info, order_rank, line_count, start_time FROM primary_stages"
        )
        order = " ORDER BY coalesce(order_rank, 1 << 62), stage_path"
        wanted = None if stage_paths is None else sorted(set(stage_paths))
        if wanted is None or len(wanted) > 500:
            rows = self.conn.execute(cols + order).fetchall()
            if wanted is not None:
                keep = set(wanted)
                rows = [r for r in rows if r[0] in keep]
        else:
            sources = [s.value for s in Source]
            rows = self.conn.execute(
                f"{cols} WHERE source IN ({','.join('?' * len(sources))})"
                f" AND stage_path IN ({','.join('?' * len(wanted))}){order}",
                [*sources, *wanted],
            ).fetchall()
        return [StageInfo(*r) for r in rows]

    def spoken_lines_by(self, speakers: Iterable[str]) -> Iterator[SpokenLine]:
        """Dialogue and choice lines of the primary corpus spoken by ``speakers`` (uncertain
        ones included), in (stage, line_no) order."""
        names = sorted(set(speakers))
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            yield from self._spoken(
                f"speaker IN ({','.join('?' * len(chunk))})", chunk, "ORDER BY stage_path, line_no"
            )

    def spoken_lines_containing(self, words: Iterable[str]) -> Iterator[SpokenLine]:
        """Dialogue and choice lines of the primary corpus whose text contains any of
        ``words`` (one scan), in (stage, line_no) order: candidates for a vocative check."""
        ws = sorted({w for w in words if w})
        for i in range(0, len(ws), 200):
            chunk = ws[i : i + 200]
            yield from self._spoken(
                "(" + " OR ".join("instr(text, ?) > 0" for _ in chunk) + ")",
                chunk,
                "ORDER BY stage_path, line_no",
            )

    def spoken_lines_in(self, stage_paths: Iterable[str]) -> Iterator[SpokenLine]:
        """Dialogue and choice lines of the primary corpus in ``stage_paths``, in (stage,
        line_no) order: a few stages read without scanning the corpus (the sources named too,
        so that the primary key finds the stages: a few ms, not a 150 ms table scan)."""
        paths = sorted(set(stage_paths))
        sources = [s.value for s in Source]
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            yield from self._spoken(
                f"source IN ({','.join('?' * len(sources))})"
                f" AND stage_path IN ({','.join('?' * len(chunk))})",
                [*sources, *chunk], "ORDER BY stage_path, line_no", of_stages=True,
            )  # fmt: skip

    def _spoken(
        self, where: str, args: Sequence[object], order: str, *, of_stages: bool = False
    ) -> Iterator[SpokenLine]:
        # The ``lines`` table filtered by the primary source in Python: much faster than the
        # ``primary_lines`` view for a scan (its NOT EXISTS runs per row). ``of_stages``:
        # ``where`` names stages only (source, stage_path), so the primary sources of those
        # stages alone are read (a few rows, not every stage's)
        primary = dict(
            self.conn.execute(
                f"SELECT stage_path, source FROM primary_stages WHERE {where}", list(args)
            )
            if of_stages
            else self.conn.execute("SELECT stage_path, source FROM primary_stages")
        )
        rows = self.conn.execute(
            "SELECT source, stage_path, line_no, kind, speaker, uncertain, text, branch, line_id,"
            f" scene FROM lines WHERE kind IN ('dialogue', 'choice') AND {where} {order}",
            list(args),
        )
        for source, path, no, kind, speaker, uncertain, text, branch, line_id, scene in rows:
            if primary.get(path) == source:
                yield SpokenLine(
                    path, no, kind, speaker, bool(uncertain), text, branch, line_id, scene
                )

    def doctor_stages(self) -> set[str]:
        """Primary stages where the corpus alone shows the Doctor present: a choice line (the
        player picks it), a line spoken as 博士, or a line containing the player placeholder
        (``Dr.{@nickname}``, ``{@nickname}``)."""
        where = "(kind = 'choice' OR speaker = ? OR instr(text, '{@nickname}') > 0)"
        return {ln.stage_path for ln in self._spoken(where, [DOCTOR], "")}

    def event_ids(self) -> list[str]:
        """Every event id any source's metadata names."""
        rows = self.conn.execute("SELECT DISTINCT event_id FROM stages WHERE event_id IS NOT NULL")
        return sorted(r[0] for r in rows)

    def event_stage_paths(self, event_id: str) -> list[str]:
        """The primary stages of an event, in story order (any source's metadata counts: a raw
        script may lack what its ASTR copy carries)."""
        rows = self.conn.execute(
            "SELECT p.stage_path FROM primary_stages p WHERE p.stage_path IN"
            " (SELECT stage_path FROM stages WHERE event_id = ?)"
            " ORDER BY coalesce(p.order_rank, 0), p.stage_path",
            (event_id,),
        )
        return [r[0] for r in rows]

    def find_stages(self, query: str) -> list[str]:
        """The primary stages ``query`` names, in story order: a stage path, a story code
        (``CW-1``, ``to-st-1``: every stage of that code), an event id (``act25side``) or an
        event's name (孤星), exactly; else an event name holding it (``理想城``), when only
        one does. Empty when nothing, or more than one event by a fragment, matches."""
        q = query.strip()
        if not q:
            return []
        q = chapter_event(q) or q  # 第十一章 -> main_11
        rows = self.conn.execute(
            "SELECT DISTINCT p.stage_path FROM primary_stages p JOIN stages s"
            " ON s.stage_path = p.stage_path WHERE s.stage_path = ? OR upper(s.story_code) = ?"
            " OR s.event_id = ? OR s.event_name = ?"
            " ORDER BY coalesce(p.order_rank, 0), p.stage_path",
            (q, q.upper(), q, q),
        ).fetchall()
        if rows:
            return [r[0] for r in rows]
        events = self.conn.execute(
            "SELECT DISTINCT event_id FROM stages WHERE instr(event_name, ?) > 0", (q,)
        ).fetchall()
        return self.event_stage_paths(events[0][0]) if len(events) == 1 else []

    def story_rows(self) -> tuple[list[StageRow], dict[str, str]]:
        """Every primary stage with its event (any source's metadata) and release rank, and
        every event's name: what the story order is built from (:mod:`arklore.corpus.story`)."""
        rows = self.conn.execute(
            "SELECT p.stage_path, coalesce(p.event_id, (SELECT max(s.event_id) FROM stages s"
            " WHERE s.stage_path = p.stage_path)), coalesce(p.order_rank, 1 << 62)"
            " FROM primary_stages p"
        ).fetchall()
        names = dict(
            self.conn.execute(
                "SELECT event_id, max(event_name) FROM stages WHERE event_id IS NOT NULL"
                " GROUP BY event_id"
            ).fetchall()
        )
        return [StageRow(*r) for r in rows], names

    def stage_names(self) -> list[str]:
        """Every stage path, story code and event name: what a mistyped stage is matched
        against for the "did you mean"."""
        rows = self.conn.execute("SELECT stage_path, story_code, event_name FROM stages")
        return sorted({v for r in rows for v in r if v})

    def dialogue_lines(
        self, speakers: Sequence[str], *, max_chars: int | None = None
    ) -> Iterator[tuple[str, str, int, int, str, str, StageInfo]]:
        """Attributed (not uncertain) dialogue lines of ``speakers`` in the primary corpus:
        (line_id, stage_path, line_no, order_rank, speaker, text, stage info) in no set order."""
        infos: dict[str, StageInfo] = {}
        names = sorted(set(speakers))
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            q = (
                "SELECT line_id, stage_path, line_no, speaker, text FROM primary_lines"
                f" WHERE kind = 'dialogue' AND uncertain = 0 AND speaker IN ({','.join('?' * len(chunk))})"
            )
            args: list[object] = list(chunk)
            if max_chars is not None:
                q += " AND length(text) <= ?"
                args.append(max_chars)
            rows = self.conn.execute(q, args).fetchall()
            missing = {r[1] for r in rows} - infos.keys()
            if missing:  # one query for the stages' metadata (one per stage: 2 ms each)
                infos.update((i.stage_path, i) for i in self.stage_infos(missing))
            for line_id, path, no, speaker, text in rows:
                info = infos.get(path)
                if info is None:  # primary_lines joins primary_stages: only a racing delete
                    continue
                yield line_id, path, no, info.order_rank or 0, speaker, text, info

    def all_speaker_stage_counts(self) -> list[tuple[str, str, int]]:
        """(stage_path, speaker, dialogue lines) of every speaker in the primary corpus."""
        return self.conn.execute(
            "SELECT stage_path, speaker, count(*) FROM primary_lines WHERE kind = 'dialogue'"
            " AND speaker != '' GROUP BY stage_path, speaker"
        ).fetchall()

    def speaker_stage_counts(self, speakers: Sequence[str]) -> list[tuple[str, str, int]]:
        """(stage_path, speaker, dialogue lines) of ``speakers`` in the primary corpus."""
        return self._for_speakers(
            "SELECT stage_path, speaker, count(*) FROM primary_lines WHERE kind = 'dialogue'"
            " AND speaker IN ({}) GROUP BY stage_path, speaker",
            speakers,
        )

    def speaker_stage_portraits(self, speakers: Sequence[str]) -> list[tuple[str, str]]:
        """(stage_path, portrait on screen) of the dialogue lines of ``speakers`` in the
        primary corpus, each pair once: which pictures show them in which stages."""
        rows = self._for_speakers(
            "SELECT DISTINCT stage_path, figure_art FROM primary_lines WHERE kind = 'dialogue'"
            " AND figure_art IS NOT NULL AND speaker IN ({})",
            speakers,
        )
        return list(dict.fromkeys(rows))

    def _for_speakers(self, sql: str, speakers: Sequence[str]) -> list[Any]:
        """The rows of ``sql`` (its ``{}`` the list of ``speakers``), run in chunks of 500
        names: SQLite limits the parameters of one statement."""
        names = sorted(set(speakers))
        out: list[Any] = []
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            out += self.conn.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
        return out

    def lines_by_id(self, line_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """line_id -> (speaker, text) for the ids the primary corpus holds (others absent)."""
        ids = sorted(set(line_ids))
        out: dict[str, tuple[str, str]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            rows = self.conn.execute(
                "SELECT line_id, speaker, text FROM primary_lines"
                f" WHERE line_id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            out.update({lid: (sp, text) for lid, sp, text in rows})
        return out

    def find_text(
        self, text: str, *, speakers: Sequence[str] | None = None
    ) -> Iterator[tuple[str, int]]:
        """(stage_path, line_no) of primary-corpus lines containing ``text`` (spoken by one of
        ``speakers`` when given), in story order."""
        q = (
            "SELECT l.stage_path, l.line_no FROM primary_lines l JOIN primary_stages s"
            " ON s.source = l.source AND s.stage_path = l.stage_path WHERE instr(l.text, ?) > 0"
        )
        args: list[object] = [text]
        if speakers:
            q += f" AND l.speaker IN ({','.join('?' * len(speakers))})"
            args += list(speakers)
        q += " ORDER BY s.order_rank, l.stage_path, l.line_no"
        yield from self.conn.execute(q, args)

    def ingest_errors(self) -> list[dict[str, str]]:
        """Files the last ingest could not parse, with the reason."""
        return [
            {"source": s, "path": p, "reason": r, "at": a}
            for s, p, r, a in self.conn.execute(
                "SELECT source, path, reason, at FROM ingest_errors ORDER BY source, path"
            )
        ]

    # -- ingest runs ------------------------------------------------------------------------
    def begin_ingest_run(
        self, gamedata: str | None, astr: str | None, sources: Sequence[str]
    ) -> int:
        """Record that an ingest started; :meth:`finish_ingest_run` marks it complete."""
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO ingest_runs (started_at, gamedata, astr, sources) VALUES (?,?,?,?)",
                (_now(), gamedata, astr, orjson.dumps(list(sources)).decode()),
            )
            return int(cur.lastrowid or 0)

    def finish_ingest_run(self, run_id: int, tables_fingerprint: str) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE ingest_runs SET finished_at = ?, tables_fingerprint = ? WHERE id = ?",
                (_now(), tables_fingerprint, run_id),
            )

    def last_ingest_run(self) -> IngestRun | None:
        """The most recent ingest run; for a store made before runs were recorded, a finished
        run with unknown roots when its post-processing completed."""
        row = self.conn.execute(
            "SELECT id, started_at, finished_at, gamedata, astr, tables_fingerprint, sources"
            " FROM ingest_runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is not None:
            run_id, started, finished, gamedata, astr, fingerprint, sources = row
            return IngestRun(
                run_id, started, finished, gamedata, astr, fingerprint, tuple(orjson.loads(sources))
            )
        if self.get_meta("post_done"):
            return IngestRun(0, "", "", None, None, self.get_meta("tables_hash"), ())
        return None

    def parse_warnings(self) -> list[dict[str, object]]:
        """Per stage with warnings: what the readers could not trust and dropped or kept as is."""
        out: dict[tuple[str, str], list[str]] = {}
        for source, path, warning in self.conn.execute(
            "SELECT source, stage_path, warning FROM parse_warnings ORDER BY source, stage_path, idx"
        ):
            out.setdefault((source, path), []).append(warning)
        return [{"source": s, "stage": p, "warnings": w} for (s, p), w in out.items()]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _line_row(source: str, ln: Line) -> tuple[Any, ...]:
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
        ln.scene,
    )


def _row_line(r: Iterable[Any]) -> Line:
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
        scene,
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
        scene=scene,
    )
