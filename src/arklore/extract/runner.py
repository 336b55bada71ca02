"""The relation-extraction run: stages -> chunk jobs -> model -> gates -> store -> export.

One job per chunk of a stage (``<stage_path>#c<i>``). The handler gates the answer against
the stage's FULL lines and replaces the chunk's rows in one transaction, so retries,
resumes and reruns never duplicate anything. Resume trusts the store: a chunk is skipped
only if ``relation_chunks`` holds it with the very same request and model.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import orjson

from arklore.core.errors import ConfigError
from arklore.core.model import Line
from arklore.corpus.store import Store
from arklore.extract import store as edges_db
from arklore.extract.gates import GatedEdge, gate_edges, summarize
from arklore.extract.relations import (
    PROMPT_VERSION,
    TASK,
    RelationsResponse,
    build_messages,
    chunk_lines,
)
from arklore.llm import ChatModel, ChatRequest, ChatResult, Estimate, Job, estimate, run_jobs
from arklore.llm.config import LLMConfig
from arklore.llm.db import ERRORS_FILE, STATE_FILE
from arklore.llm.jobs import JobsSummary, JobStore

ResolveFn = Callable[[str], str | None]
Progress = Callable[[str, int, int], None]

EXPORT_SUBDIR = Path("exports/relations")


# --- stage selection -------------------------------------------------------------------


def select_stages(
    store: Store, paths: list[str] | None = None, *, event: str | None = None, all_: bool = False
) -> list[str]:
    """Explicit stage paths (an extension is tolerated), an event's stages, or every primary
    stage; unknown paths/events are a ConfigError with a hint, never silently skipped."""
    store.require_ingested()
    known = store.stage_paths()
    if all_:
        return known
    chosen: list[str] = []
    if event:
        # any source's metadata counts: a raw script may lack what its ASTR copy carries
        rows = store.conn.execute(
            "SELECT p.stage_path FROM primary_stages p WHERE p.stage_path IN"
            " (SELECT stage_path FROM stages WHERE event_id = ?)"
            " ORDER BY coalesce(p.order_rank, 0), p.stage_path",
            (event,),
        ).fetchall()
        if not rows:
            events = [r[0] for r in store.conn.execute("SELECT DISTINCT event_id FROM stages")]
            near = get_close_matches(event, [e for e in events if e], n=3)
            raise ConfigError(
                f"no stage belongs to event {event!r}",
                hint=f"did you mean {', '.join(near)}?" if near else "check the event id",
            )
        chosen.extend(r[0] for r in rows)
    known_set = set(known)
    for raw in paths or []:
        path = raw.strip().removesuffix(".txt").removesuffix(".json")
        if path not in known_set:
            near = get_close_matches(path, known, n=3)
            raise ConfigError(
                f"unknown stage {raw!r}",
                hint=f"did you mean {', '.join(near)}?"
                if near
                else "stage paths look like obt/main/level_main_01-01_beg",
            )
        chosen.append(path)
    if not chosen:
        raise ConfigError("no stages selected", hint="give stage paths, --event ID or --all")
    return list(dict.fromkeys(chosen))


# --- names -----------------------------------------------------------------------------


def speaker_whitelist(store: Store) -> set[str]:
    """Known speakers plus operator names: what vocatives and addressees may match."""
    names = {r[0] for r in store.conn.execute("SELECT name FROM speakers")}
    names |= {r[0] for r in store.conn.execute("SELECT name FROM operators")}
    return names - {""}


def operator_resolver(store: Store) -> ResolveFn:
    """Name -> char_id by exact operator name or appellation, only when unique."""
    table: dict[str, set[str]] = {}
    for cid, name, appellation in store.conn.execute(
        "SELECT char_id, name, appellation FROM operators"
    ):
        for key in (name, (appellation or "").lower()):
            if key:
                table.setdefault(key, set()).add(cid)

    def resolve(name: str) -> str | None:
        ids = table.get(name) or table.get(name.lower()) or set()
        return next(iter(ids)) if len(ids) == 1 else None

    return resolve


def default_resolver(store: Store) -> ResolveFn:
    """The store's alias table (names layer), falling back to the operators table.

    A broken user alias file must not stop extraction: the stored aliases are used without it.
    """
    from arklore.core.errors import InputFileError
    from arklore.names.aliases import AliasTable
    from arklore.names.build import load_alias_table, stored_aliases

    fallback = operator_resolver(store)
    try:
        table = load_alias_table(store)
    except InputFileError:
        table = AliasTable(stored_aliases(store))

    def resolve(name: str) -> str | None:
        return table.resolve(name).char_id or fallback(name)

    return resolve


# --- jobs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkContext:
    stage_path: str
    chunk: int
    first_line: int
    last_line: int


def stage_title(store: Store, stage_path: str) -> str | None:
    row = store.conn.execute(
        "SELECT story_code, story_name, avg_tag FROM primary_stages WHERE stage_path = ?",
        (stage_path,),
    ).fetchone()
    if not row:
        return None
    title = " ".join(p for p in row if p)
    return title or None


def chunk_key(stage_path: str, chunk: int) -> str:
    return f"{stage_path}#c{chunk}"


def stage_jobs(store: Store, stage_path: str, lines: list[Line]) -> list[Job]:
    """One job per chunk; chunks keep their original line numbers."""
    title = stage_title(store, stage_path)
    jobs = []
    for i, chunk in enumerate(chunk_lines(lines)):
        request = ChatRequest(
            task=TASK,
            messages=build_messages(stage_path, chunk, stage_title=title),
            key=chunk_key(stage_path, i),
            prompt_version=PROMPT_VERSION,
            schema=RelationsResponse,
        )
        ctx = ChunkContext(stage_path, i, chunk[0].line_no, chunk[-1].line_no)
        jobs.append(Job(request, context=ctx))
    return jobs


def iter_requests(store: Store, stage_paths: list[str]) -> Iterator[ChatRequest]:
    for sp in stage_paths:
        for job in stage_jobs(store, sp, store.lines(sp)):
            yield job.request


def dry_run(store: Store, stage_paths: list[str], env: dict[str, str] | None = None) -> Estimate:
    """Tokens and cost of extracting ``stage_paths`` at the configured prices; calls nothing."""
    prices = LLMConfig.from_env(TASK, env).prices
    return estimate(iter_requests(store, stage_paths), prices=prices)


# --- the run ---------------------------------------------------------------------------


@dataclass
class StageResult:
    stage: str
    chunks: int = 0
    failed_chunks: list[str] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0
    drop_reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class RunReport:
    """What a run did: jobs, per-stage counts, gate summary, failures and the cost line."""

    stages: list[StageResult] = field(default_factory=list)
    jobs: int = 0
    done: int = 0
    cached: int = 0
    skipped: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    cost_line: str = ""
    errors_file: str = ""
    exports: list[str] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return int(self.summary.get("dropped", 0))

    def drop_reasons(self) -> dict[str, int]:
        return dict(self.summary.get("drop_reasons", {}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "done": self.done,
            "cached": self.cached,
            "skipped": self.skipped,
            "failed": self.failed,
            "failures": self.failures,
            "summary": self.summary,
            "stages": [vars(s) for s in self.stages],
            "cost_line": self.cost_line,
            "errors_file": self.errors_file,
            "exports": self.exports,
        }


def _model_name(llm: ChatModel) -> str:
    config_for = getattr(llm, "config_for", None)
    return config_for(TASK).model if config_for else ""


def extract_relations(
    store: Store,
    llm: ChatModel,
    stage_paths: list[str],
    *,
    concurrency: int = 8,
    resume: bool = True,
    progress: Progress | None = None,
    speakers: set[str] | None = None,
    resolve: ResolveFn | None = None,
    home: Path | None = None,
) -> RunReport:
    """Extract, gate and store the relations of ``stage_paths``; failed chunks are logged to
    the errors file and the run goes on. ``home`` holds the LLM progress/errors files
    (default: the service's home, else ARKLORE_HOME)."""
    speakers = speaker_whitelist(store) if speakers is None else speakers
    resolve = default_resolver(store) if resolve is None else resolve
    home = home or getattr(llm, "home", None)
    if home is None:
        from arklore.config import Settings

        home = Settings.from_env().home
    model = _model_name(llm)
    report = RunReport(errors_file=str(Path(home) / ERRORS_FILE))
    full_lines: dict[str, list[Line]] = {}
    todo: list[Job] = []
    all_keys: list[tuple[str, str]] = []
    for sp in stage_paths:
        lines = store.lines(sp)
        jobs = stage_jobs(store, sp, lines)
        edges_db.drop_stale_chunks(store, sp, len(jobs))
        have = edges_db.chunk_state(store, sp) if resume else {}
        result = StageResult(sp, chunks=len(jobs))
        report.stages.append(result)
        for job in jobs:
            all_keys.append((sp, job.key))
            ctx: ChunkContext = job.context
            stored = have.get(ctx.chunk)
            if stored is not None and stored == (job.request.fingerprint(), model or stored[1]):
                report.skipped += 1
                continue
            full_lines[sp] = lines
            todo.append(job)
    report.jobs = len(all_keys)

    def handler(job: Job, result: ChatResult) -> str:
        ctx: ChunkContext = job.context
        parsed: RelationsResponse = result.parsed
        gated = gate_edges(
            parsed.edges,
            full_lines[ctx.stage_path],
            speakers=speakers,
            resolve=resolve,
            stage=ctx.stage_path,
            model=result.model or model,
            prompt_version=PROMPT_VERSION,
        )
        edges_db.write_chunk(
            store,
            ctx.stage_path,
            ctx.chunk,
            gated,
            job_key=job.key,
            fingerprint=job.request.fingerprint(),
            model=result.model or model,
            prompt_version=PROMPT_VERSION,
            line_span=(ctx.first_line, ctx.last_line),
            from_cache=result.from_cache,
        )
        return f"{job.key}:{len(gated)}"

    def on_progress(s: JobsSummary) -> None:
        if progress:
            progress("extract relations", report.skipped + s.finished, report.jobs)

    summary = run_jobs(
        todo,
        llm,
        handler=handler,
        concurrency=concurrency,
        resume=False,  # resume was decided above from the store itself
        progress=on_progress,
        home=Path(home),
    )
    report.done, report.cached, report.failed = summary.done, summary.cached, summary.failed
    report.failures = _failed_keys(Path(home), [j.key for j in todo])
    _fill_stage_counts(store, report)
    cost_line = getattr(llm, "format_cost_line", None)
    report.cost_line = cost_line() if cost_line else ""
    return report


def _failed_keys(home: Path, keys: list[str]) -> list[str]:
    if not keys:
        return []
    js = JobStore(home / STATE_FILE)
    try:
        return [k for k in keys if (row := js.status(TASK, k)) is not None and row[0] == "failed"]
    finally:
        js.close()


def _fill_stage_counts(store: Store, report: RunReport) -> None:
    failed = set(report.failures)
    everything: list[GatedEdge] = []
    for res in report.stages:
        edges = edges_db.load_edges(store, res.stage)
        everything.extend(edges)
        res.kept = sum(e.kept for e in edges)
        res.dropped = len(edges) - res.kept
        res.drop_reasons = dict(Counter(e.drop_reason for e in edges if not e.kept))
        res.failed_chunks = [
            chunk_key(res.stage, i) for i in range(res.chunks) if chunk_key(res.stage, i) in failed
        ]
    report.summary = summarize(everything)


# --- export ----------------------------------------------------------------------------


def export_name(stage_path: str) -> str:
    """``obt/main/level_main_01-01_beg`` -> ``story_relations_obt__main__level_main_01-01_beg.json``:
    '/' becomes '__' so every stage gets one flat, unique file name."""
    return f"story_relations_{stage_path.replace('/', '__')}.json"


def export_stage(store: Store, stage_path: str, out_dir: Path) -> Path:
    """Write the stage's kept edges, dropped edges with reasons and a summary, atomically."""
    edges = edges_db.load_edges(store, stage_path)
    doc = {
        "stage": stage_path,
        "prompt_version": PROMPT_VERSION,
        "models": sorted({e.model for e in edges}),
        "summary": summarize(edges),
        "edges": [edges_db.edge_record(e) for e in edges if e.kept],
        "dropped": [edges_db.edge_record(e) for e in edges if not e.kept],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / export_name(stage_path)
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2, default=repr)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def export_stages(store: Store, stage_paths: list[str], out_dir: Path) -> list[Path]:
    return [export_stage(store, sp, out_dir) for sp in stage_paths]
