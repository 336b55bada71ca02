"""`arklore ingest`: read both story sources into the store, idempotently.

A stage whose file bytes did not change is skipped without parsing; a changed stage
is replaced in one transaction; a file that cannot be parsed is recorded with its
path and reason and skipped, and whatever was stored for it before stays.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from arklore.base.files import read_cached, write_cached
from arklore.base.workers import spawn_pool
from arklore.core.errors import ArkloreError, MalformedSourceError
from arklore.core.model import Source, Stage
from arklore.corpus.order import order_key, principal_speakers
from arklore.corpus.store import StageRows, Store
from arklore.sources import astr, avg
from arklore.sources.gamedata import StageMeta, load_stage_meta
from arklore.sources.roots import DataRoots
from arklore.sources.speakers import digest_rules, stage_digest

Progress = Callable[[str, int, int], None]
"""progress(description, done, total): called as files are processed."""

COMMIT_EVERY_SECONDS = 1.0  # a crash loses at most this much parsing work, never stored data
PARALLEL_FROM = 64
"""Files to parse from which parsing runs in worker processes (fewer: in this process)."""
BATCH = 24
"""Files per worker task: large enough to amortize the pickling, small enough to balance."""
BULK_FROM = 1000
"""Stages to write from which the line indexes are dropped and rebuilt once at the end (a
first ingest): one index build is much cheaper than keeping it up to date row by row."""
FRESH_NS = 2_000_000_000
"""A file changed (``st_ctime``/``st_mtime``) this recently is not kept in the digest memo: a
file system's clock ticks coarsely, so a file rewritten within the tick of the stat, to the
same size, would show the very same stat (git's "racy clean" entries)."""


@dataclass
class SourceReport:
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    lines_written: int = 0
    warnings: int = 0  # parse warnings of the stages read in this run (Stage.parse_warnings)


@dataclass
class IngestReport:
    sources: dict[str, SourceReport] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    #: {"source", "path", "warnings": [...]} per stage read with parse warnings
    parse_warnings: list[dict[str, Any]] = field(default_factory=list)
    post_processed: bool = False
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # optional tables missing or unreadable
    names_rebuilt: bool = False

    @property
    def changed(self) -> bool:
        return any(r.added or r.updated or r.removed for r in self.sources.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": {k: vars(v) for k, v in self.sources.items()},
            "errors": self.errors,
            "warnings": self.warnings,
            "parse_warnings": self.parse_warnings,
            "post_processed": self.post_processed,
            "names_rebuilt": self.names_rebuilt,
            "seconds": round(self.seconds, 3),
            "counts": self.counts,
        }


@dataclass(frozen=True)
class _SourceSpec:
    source: Source
    root: Path
    list_files: Callable[[Path], list[str]]  # paths under the root (``obt/main/x.txt``)
    stage_path_of: Callable[[str], str]
    read: Callable[[Path, Path, bytes], Stage]


def _specs(roots: DataRoots, sources: tuple[str, ...]) -> list[_SourceSpec]:
    specs = []
    if "avg" in sources:
        specs.append(
            _SourceSpec(
                Source.AVG,
                roots.avg_story_root(),
                avg.avg_files,
                avg.stage_path_of,
                avg.read_avg_stage,
            )
        )
    if "astr" in sources:
        specs.append(
            _SourceSpec(
                Source.ASTR,
                roots.astr_story_root(),
                astr.astr_files,
                astr.stage_path_of,
                astr.read_astr_stage,
            )
        )
    return specs


def ingest(
    roots: DataRoots,
    store: Store,
    *,
    sources: tuple[str, ...] = ("avg", "astr"),
    progress: Progress | None = None,
    force: bool = False,
    workers: int = 1,
    memo: Path | None = None,
) -> IngestReport:
    """Bring the corpus tables in line with the sources; returns what changed.

    ``post_processed`` on the report says the corpus-wide tables (speakers, story order) were
    recomputed; the names layer's tables depend on them and are rebuilt by the caller
    (the workspace's ingest step) when it is set. ``workers`` > 1 parses changed files in that
    many processes when there are many of them (the store is written by this one).

    ``memo``: a file keeping the digest of each source file by its stat (size, times, inode):
    a file whose stat did not change is not read again (:class:`DigestMemo`); without it,
    every file is read and hashed.
    """
    started = time.perf_counter()
    report = IngestReport()
    specs = _specs(roots, sources)
    meta_loader = _StageMetaLoader(roots)
    store.ensure_line_indexes()  # a run killed during a bulk load left them dropped
    digests = DigestMemo(memo, [str(s.root) for s in specs])
    plans = [_plan(spec, store, force, progress, digests) for spec in specs]
    bulk = sum(len(plan.todo) for plan in plans) >= BULK_FROM
    if bulk:
        store.drop_line_indexes()
    with _Parser(workers) as parser:
        # every source's files go to the workers now: they parse the next source's while
        # this process writes the first's
        parsed = [parser.parse(s.read, s.root, [f for f, _, _ in p.todo]) for s, p in zip(specs, plans, strict=True)]  # fmt: skip
        for spec, plan, stages in zip(specs, plans, parsed, strict=True):
            report.sources[str(spec.source)] = _load_source(
                spec, plan, stages, store, report, meta_loader, progress, digests
            )
    digests.save()
    store.ensure_line_indexes()  # after a bulk load: built once, over every line
    tables_hash = tables_fingerprint(roots)
    if (
        report.changed
        or force
        or store.get_meta("tables_hash") != tables_hash
        or not store.get_meta("post_done")
    ):
        _post_process(store, meta_loader)
        store.set_meta("tables_hash", tables_hash)
        store.set_meta("post_done", "1")
        report.post_processed = True
    report.counts = store.counts()
    report.seconds = time.perf_counter() - started
    return report


Stat = tuple[int, int, int, int]
"""A file's (size, mtime_ns, ctime_ns, inode): what :class:`DigestMemo` compares."""


class DigestMemo:
    """The stage digest (:func:`~arklore.sources.speakers.stage_digest`) of each source file,
    kept by its stat, so that an ingest with nothing changed reads no file: a file whose size,
    times and inode are those it had when it was last hashed has the digest it had then. The
    kept digests are valid under the same digest rules only (the memo file's key);
    a file changed within :data:`FRESH_NS` of its stat is hashed again next time. Files are
    named by their path; those under roots this run does not read (``--source``) are kept."""

    def __init__(self, path: Path | None, roots: list[str]) -> None:
        self.path = path
        self.key = hashlib.sha1(orjson.dumps([digest_rules()])).hexdigest()
        kept = read_cached(path, self.key, dict) if path is not None else None
        self.kept: dict[str, tuple[Stat, str]] = kept or {}
        under = tuple(f"{r}/" for r in roots)
        # what this run sees (and the files of the roots it does not read): the next run's memo
        self.now = {n: v for n, v in self.kept.items() if not n.startswith(under)}
        self.started_ns = time.time_ns()

    def get(self, name: str, stat: Stat) -> str | None:
        """The digest kept for the file ``name`` when its stat is still ``stat``."""
        kept = self.kept.get(name)
        if kept is not None and kept[0] == stat:
            self.now[name] = kept
            return kept[1]
        return None

    def put(self, name: str, stat: Stat, digest: str) -> None:
        """Keep ``digest`` of the file ``name`` read after its stat was ``stat``."""
        if self.started_ns - max(stat[1], stat[2]) >= FRESH_NS:
            self.now[name] = (stat, digest)

    def save(self) -> None:
        if self.path is not None and self.now != self.kept:
            write_cached(self.path, self.key, self.now)


def _stat(path: str) -> Stat:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass
class _Plan:
    """A source's files sorted out by their digests: those to parse and what the others are."""

    out: SourceReport
    stored: dict[str, str]  # stage_path -> the content hash stored
    files: list[tuple[Path, str, str]]  # every file: (file, rel, stage_path)
    todo: list[tuple[Path, str, str]]  # (file, rel, stage_path) to parse
    failures: list[tuple[str, str, bool]]  # (path, reason, an older version is kept)
    ok_paths: list[str]
    stats: dict[str, Stat] = field(default_factory=dict)  # rel -> stat, of the files to parse


def _plan(
    spec: _SourceSpec, store: Store, force: bool, progress: Progress | None, memo: DigestMemo
) -> _Plan:
    src = str(spec.source)
    stored = store.stage_hashes(src)
    files = [(spec.root / rel, rel, spec.stage_path_of(rel)) for rel in spec.list_files(spec.root)]
    plan = _Plan(SourceReport(files=len(files)), stored, files, [], [], [])
    for entry in files:  # only changed files are read: unchanged ones by their stat
        file, rel, stage_path = entry
        name = f"{spec.root}/{rel}"  # the memo's name of the file
        try:
            stat = _stat(name)  # before reading: a later write changes it
            if force or stage_path not in stored:  # parsed whatever its hash
                plan.stats[rel] = stat
                plan.todo.append(entry)
                continue
            digest = memo.get(name, stat)
            if digest is None:
                digest = stage_digest(file.read_bytes(), stage_path)
                memo.put(name, stat, digest)
        except OSError as exc:
            plan.failures.append((rel, f"{type(exc).__name__}: {exc}", stage_path in stored))
            continue
        if stored[stage_path] == digest:
            plan.out.unchanged += 1
            plan.ok_paths.append(rel)
        else:
            plan.stats[rel] = stat
            plan.todo.append(entry)
    if progress:
        progress(f"ingest {src}", len(files) - len(plan.todo), len(files))
    return plan


def _load_source(
    spec: _SourceSpec,
    plan: _Plan,
    parsed: Iterator[Parsed],
    store: Store,
    report: IngestReport,
    meta_loader: _StageMetaLoader,
    progress: Progress | None,
    memo: DigestMemo,
) -> SourceReport:
    """Write a source's parsed stages (a batch per :data:`COMMIT_EVERY_SECONDS`, each in one
    transaction), remove the stages whose files are gone, record what could not be read."""
    src = str(spec.source)
    out, stored, files, todo = plan.out, plan.stored, plan.files, plan.todo
    failures, ok_paths = plan.failures, plan.ok_paths
    done = len(files) - len(todo)

    def tick() -> None:
        if progress:
            progress(f"ingest {src}", done, len(files))

    pending: list[StageRows] = []
    last_commit = time.monotonic()

    def flush() -> None:
        nonlocal last_commit
        if pending:
            with store.transaction():
                store.write_stages(pending)
            pending.clear()
        last_commit = time.monotonic()

    for (_, rel, stage_path), (rows, error) in zip(todo, parsed, strict=True):
        done += 1
        if rows is None:
            failures.append((rel, error or "unreadable", stage_path in stored))
        else:
            stage = rows.stage
            memo.put(f"{spec.root}/{rel}", plan.stats[rel], stage.content_hash)
            if spec.source == Source.AVG:
                meta_loader.apply(stage)
            pending.append(rows)
            out.lines_written += len(rows.lines)
            if stage.parse_warnings:
                out.warnings += len(stage.parse_warnings)
                report.parse_warnings.append(
                    {"source": src, "path": rel, "warnings": stage.parse_warnings}
                )
            if stage_path in stored:
                out.updated += 1
            else:
                out.added += 1
            ok_paths.append(rel)
        if time.monotonic() - last_commit >= COMMIT_EVERY_SECONDS:
            flush()
        tick()
    flush()

    seen = {stage_path for _, _, stage_path in files}
    gone = [p for p in stored if p not in seen]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    with store.transaction() as c:
        for stage_path in gone:
            store.delete_stage(src, stage_path)
        out.removed = len(gone)
        c.executemany(
            "DELETE FROM ingest_errors WHERE source = ? AND path = ?", [(src, p) for p in ok_paths]
        )
        c.executemany(
            "INSERT OR REPLACE INTO ingest_errors (source, path, reason, at) VALUES (?,?,?,?)",
            [(src, p, r, now) for p, r, _ in failures],
        )
        c.execute(
            "DELETE FROM ingest_errors WHERE source = ? AND path NOT IN (SELECT value FROM json_each(?))",
            (src, orjson.dumps([rel for _, rel, _ in files]).decode()),
        )
    out.failed = len(failures)
    report.errors.extend(
        {"source": src, "path": p, "reason": r, "kept_previous": kept} for p, r, kept in failures
    )
    return out


Parsed = tuple[StageRows | None, str | None]  # the stage's rows, or why it could not be read


def _parse_files(
    read: Callable[[Path, Path, bytes], Stage], root: Path, files: list[Path]
) -> list[Parsed]:
    """Read and parse ``files`` into the rows the store writes (a worker process's task, or
    the whole list in-process): the writer only writes."""
    out: list[Parsed] = []
    for file in files:
        try:
            stage = read(root, file, file.read_bytes())
            out.append((StageRows.of(stage, principal_speakers(stage.lines)), None))
        except MalformedSourceError as exc:
            out.append((None, exc.reason))
        except (OSError, UnicodeError, ValueError) as exc:
            out.append((None, f"{type(exc).__name__}: {exc}"))
    return out


class _Parser:
    """Parses files in order, in worker processes when there are many
    (:func:`~arklore.base.workers.spawn_pool`)."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> _Parser:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def parse(
        self, read: Callable[[Path, Path, bytes], Stage], root: Path, files: list[Path]
    ) -> Iterator[Parsed]:
        """``files`` parsed, in order: in this process as they are read from the iterator, or
        handed to the workers at once when there are many."""
        if self.workers == 1 or len(files) < PARALLEL_FROM:
            return (parsed for file in files for parsed in _parse_files(read, root, [file]))
        if self._pool is None:
            self._pool = spawn_pool(self.workers)
        batches = [files[i : i + BATCH] for i in range(0, len(files), BATCH)]
        results = self._pool.map(partial(_parse_files, read, root), batches)  # submitted now
        return (parsed for result in results for parsed in result)


class _StageMetaLoader:
    """Loads the stage metadata tables once, only if a raw script actually needs them."""

    def __init__(self, roots: DataRoots) -> None:
        self.roots = roots
        self._meta: dict[str, StageMeta] | None = None

    @property
    def meta(self) -> dict[str, StageMeta]:
        if self._meta is None:
            try:
                self._meta = load_stage_meta(self.roots.excel_root(), self.roots.avg_story_root())
            except ArkloreError:
                self._meta = {}
        return self._meta

    def apply(self, stage: Stage) -> None:
        m = self.meta.get(stage.stage_path)
        if m is not None:
            m.apply(stage)


TABLES_READ_VERSION = 2
"""How the excel tables are read into stage metadata; part of :func:`tables_fingerprint`, so a
new rule redoes the post-processing of every stage (2: a main chapter's opening time,
:func:`arklore.sources.gamedata.opened`)."""


def tables_fingerprint(roots: DataRoots) -> str:
    """Size and mtime of every excel table, and :data:`TABLES_READ_VERSION`: a changed table
    re-runs the post-processing (and the names layer's rebuild, which reads the registry
    tables)."""
    try:
        root = roots.excel_root()
    except ArkloreError:
        return ""
    h = hashlib.sha1(f"read:{TABLES_READ_VERSION}\n".encode())
    for p in sorted(root.glob("*.json")):
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _post_process(store: Store, meta_loader: _StageMetaLoader) -> None:
    """Recompute what depends on the whole corpus: speakers and story order."""
    with store.transaction() as c:
        rebuild_speakers(c)
        _rebuild_order(c, meta_loader)


def rebuild_speakers(c: sqlite3.Connection) -> None:
    """Line and stage counts per speaker of the primary corpus, with per-source line counts."""
    c.execute("DELETE FROM speakers")
    c.execute(
        """
        INSERT INTO speakers (name, line_count, stage_count, avg_lines, astr_lines)
        SELECT p.speaker, p.n, p.stages, s.avg_lines, s.astr_lines
        FROM (SELECT speaker, count(*) AS n, count(DISTINCT stage_path) AS stages
              FROM primary_lines WHERE speaker != '' GROUP BY speaker) p
        JOIN (SELECT speaker, sum(source = 'avg') AS avg_lines, sum(source = 'astr') AS astr_lines
              FROM lines WHERE speaker != '' GROUP BY speaker) s USING (speaker)
        """
    )


def _rebuild_order(c: sqlite3.Connection, meta_loader: _StageMetaLoader) -> None:
    """Every stage's story order, and its opening time as the tables give it now (a stage the
    last ingest left unread keeps its lines, not a stale time)."""
    paths = [r[0] for r in c.execute("SELECT DISTINCT stage_path FROM stages")]
    metas = {p: meta_loader.meta.get(p) for p in paths}
    ranked = sorted(paths, key=lambda p: order_key(p, metas[p]))
    c.executemany(  # by the primary key (source, stage_path): one row lookup each, no scan
        "UPDATE stages SET order_rank = ?, start_time = coalesce(?, start_time)"
        " WHERE source = ? AND stage_path = ?",
        [
            (rank, m.start_time if m is not None else None, src, p)
            for rank, p in enumerate(ranked, 1)
            for m in (metas[p],)
            for src in ("avg", "astr")
        ],
    )
