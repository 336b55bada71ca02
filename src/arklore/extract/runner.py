"""The relation-extraction run: stages -> chunk jobs -> model -> gates -> store -> export.

One job per chunk of a stage (``<stage_path>#c<i>``). The handler gates the answer against
the stage's FULL lines and replaces the chunk's rows in one transaction, so retries,
resumes and reruns never duplicate anything. Resume trusts the store: a chunk is skipped
only if ``relation_chunks`` holds it with the very same request and model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import orjson

from arklore.base.files import atomic_write_bytes
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
from arklore.llm import (
    ChatModel,
    ChatRequest,
    ChatResult,
    Estimate,
    Job,
    LLMFiles,
    Prices,
    estimate,
)
from arklore.llm.runs import TaskRunReport, finish, is_current, require_files, run_task, task_model
from arklore.names.aliases import AliasTable
from arklore.names.build import load_operators

ResolveFn = Callable[[str], str | None]
Progress = Callable[[str, int, int], None]


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
        paths = store.event_stage_paths(event)
        if not paths:
            near = get_close_matches(event, store.event_ids(), n=3)
            raise ConfigError(
                f"no stage belongs to event {event!r}",
                hint=f"did you mean {', '.join(near)}?" if near else "check the event id",
            )
        chosen.extend(paths)
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
    names = set(store.speaker_counts()) | {op.name for op in load_operators(store)}
    return names - {""}


def table_resolver(table: AliasTable) -> ResolveFn:
    """Name -> operator id through the alias table (None when unknown or ambiguous)."""

    def resolve(name: str) -> str | None:
        return table.resolve(name).char_id

    return resolve


# --- jobs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkContext:
    stage_path: str
    chunk: int
    first_line: int
    last_line: int


def stage_title(store: Store, stage_path: str) -> str | None:
    info = store.stage_info(stage_path)
    if info is None:
        return None
    title = " ".join(p for p in (info.story_code, info.story_name, info.avg_tag) if p)
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


StageJobs = Callable[[Store, str, list[Line]], list[Job]]


def iter_requests(
    store: Store,
    stage_paths: list[str],
    progress: Progress | None = None,
    jobs: StageJobs = stage_jobs,
) -> Iterator[ChatRequest]:
    """Every request a run over ``stage_paths`` would send (``jobs``: the task's planner),
    lazily, for estimates."""
    for i, sp in enumerate(stage_paths, 1):
        for job in jobs(store, sp, store.lines(sp)):
            yield job.request
        if progress:
            progress("estimate", i, len(stage_paths))


def dry_run(
    store: Store, stage_paths: list[str], prices: Prices, progress: Progress | None = None
) -> Estimate:
    """Tokens and cost of extracting ``stage_paths`` at ``prices``; calls nothing."""
    return estimate(iter_requests(store, stage_paths, progress), prices=prices)


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
class RunReport(TaskRunReport):
    """What a relations run did: the shared counts, per-stage counts and the gate summary."""

    stages: list[StageResult] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return int(self.summary.get("dropped", 0))

    @property
    def findings(self) -> int:
        """Edges dropped by a gate."""
        return self.dropped

    def drop_reasons(self) -> dict[str, int]:
        return dict(self.summary.get("drop_reasons", {}))

    def to_dict(self) -> dict[str, Any]:
        return self.counts() | {
            "summary": self.summary,
            "stages": [vars(s) for s in self.stages],
        }


def extract_relations(
    store: Store,
    llm: ChatModel,
    stage_paths: list[str],
    *,
    concurrency: int = 8,
    resume: bool = True,
    progress: Progress | None = None,
    speakers: set[str] | None = None,
    resolve: ResolveFn = lambda name: None,
    files: LLMFiles | None = None,
    stop_after_unreachable: int = 5,
    max_cost: float | None = None,
) -> RunReport:
    """Extract, gate and store the relations of ``stage_paths``; failed chunks are logged to
    the errors file and the run goes on. ``resolve`` maps a name to an operator id (the
    workspace passes the alias table's); ``files`` are the LLM layer's progress/errors files
    (default: the service's own)."""
    speakers = speaker_whitelist(store) if speakers is None else speakers
    files = require_files(llm, files, "extract_relations")
    model = task_model(llm, TASK)
    report = RunReport()
    full_lines: dict[str, list[Line]] = {}
    todo: list[Job] = []
    for sp in stage_paths:
        lines = store.lines(sp)
        jobs = stage_jobs(store, sp, lines)
        edges_db.drop_stale_chunks(store, sp, len(jobs))
        have = edges_db.chunk_state(store, sp) if resume else {}
        report.stages.append(StageResult(sp, chunks=len(jobs)))
        report.jobs += len(jobs)
        for job in jobs:
            if is_current(have.get(job.context.chunk), job, model):
                report.skipped += 1
                continue
            full_lines[sp] = lines
            todo.append(job)

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

    run_task(
        TASK,
        todo,
        llm,
        report,
        handler=handler,
        files=files,
        label="extract relations",
        progress=progress,
        concurrency=concurrency,
        stop_after_unreachable=stop_after_unreachable,
        max_cost=max_cost,
    )
    _fill_stage_counts(store, report)
    finish(report, llm)
    return report


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
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2, default=repr)
    return atomic_write_bytes(out_dir / export_name(stage_path), data)


def export_stages(store: Store, stage_paths: list[str], out_dir: Path) -> list[Path]:
    """Export the stages that have results (a stage whose every chunk failed has none)."""
    return [
        export_stage(store, sp, out_dir) for sp in stage_paths if edges_db.has_chunks(store, sp)
    ]
