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
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypedDict, Unpack

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
from arklore.llm.runs import Progress, TaskRunReport, TaskSpec, run_task
from arklore.llm.types import Message, Validator
from arklore.names.aliases import AliasTable
from arklore.names.build import load_operators

ResolveFn = Callable[[str], str | None]


# --- stage selection -------------------------------------------------------------------


def select_stages(
    store: Store, paths: list[str] | None = None, *, event: str | None = None, all_: bool = False
) -> list[str]:
    """Explicit stages (a path, an extension tolerated; a story code such as ``CW-ST-1``; an
    event's name or id, or a fragment of one name: :meth:`Store.find_stages`), an event's
    stages, or every primary stage; unknown ones are a ConfigError with a hint, never
    silently skipped."""
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
        if path in known_set:
            chosen.append(path)
            continue
        found = store.find_stages(path)
        if not found:
            near = get_close_matches(path, store.stage_names(), n=3, cutoff=0.5)
            raise ConfigError(
                f"unknown stage {raw!r}",
                hint=f"did you mean {', '.join(near)}?"
                if near
                else "give a stage path (obt/main/level_main_01-01_beg), a story code "
                "(CW-ST-1) or an event name (孤星)",
            )
        chosen.extend(found)
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
    n_chunks: int  # of the stage


def stage_title(store: Store, stage_path: str) -> str | None:
    info = store.stage_info(stage_path)
    if info is None:
        return None
    title = " ".join(p for p in (info.story_code, info.story_name, info.avg_tag) if p)
    return title or None


def chunk_key(stage_path: str, chunk: int) -> str:
    return f"{stage_path}#c{chunk}"


def chunk_jobs(
    store: Store,
    stage_path: str,
    parts: list[list[Line]],
    *,
    task: str,
    build: Callable[..., list[Message]],
    prompt_version: str,
    schema: Validator,
) -> list[Job]:
    """One job per chunk of a stage (``build`` makes a chunk's messages: the task's prompt);
    chunks keep their original line numbers."""
    title = stage_title(store, stage_path)
    jobs = []
    for i, chunk in enumerate(parts):
        request = ChatRequest(
            task=task,
            messages=build(stage_path, chunk, stage_title=title),
            key=chunk_key(stage_path, i),
            prompt_version=prompt_version,
            schema=schema,
        )
        ctx = ChunkContext(stage_path, i, chunk[0].line_no, chunk[-1].line_no, len(parts))
        jobs.append(Job(request, context=ctx))
    return jobs


def stage_jobs(store: Store, stage_path: str, lines: list[Line]) -> list[Job]:
    """The relation task's jobs for a stage."""
    return chunk_jobs(
        store, stage_path, chunk_lines(lines), task=TASK, build=build_messages,
        prompt_version=PROMPT_VERSION, schema=RelationsResponse,
    )  # fmt: skip


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


class ChunkTables(Protocol):
    """What a chunked task's store module keeps per answered chunk (relations, events)."""

    def chunk_state(self, store: Store, stage_path: str) -> dict[int, tuple[str, str]]: ...

    def drop_stale_chunks(self, store: Store, stage_path: str, n_chunks: int) -> None: ...


STAGE_LINES_CACHED = 64
"""Stages whose lines a run keeps at hand for its handler (answers come in stage order)."""


class ChunkPlan:
    """The chunk jobs of ``stage_paths`` and resume from the task's own chunk rows: a chunk
    is stored when its row holds the very same request and model (``model`` "" = any)."""

    def __init__(
        self,
        store: Store,
        stage_paths: list[str],
        stage_jobs: StageJobs,
        tables: ChunkTables,
        model: str,
    ) -> None:
        self.store, self.stage_paths, self.model = store, stage_paths, model
        self._stage_jobs, self._tables = stage_jobs, tables
        self.chunks: dict[str, int] = {}  # stage -> its chunks, once planned
        self._stored: dict[str, dict[int, tuple[str, str]]] = {}
        self.lines = lru_cache(maxsize=STAGE_LINES_CACHED)(store.lines)

    def jobs(self) -> Iterator[Job]:
        """Every chunk job, stage by stage; a stage that now has fewer chunks loses the rest."""
        for sp in self.stage_paths:
            jobs = self._stage_jobs(self.store, sp, self.lines(sp))
            self._tables.drop_stale_chunks(self.store, sp, len(jobs))
            self._stored[sp] = self._tables.chunk_state(self.store, sp)
            self.chunks[sp] = len(jobs)
            yield from jobs

    def stored(self, job: Job) -> bool:
        ctx: ChunkContext = job.context
        have = self._stored[ctx.stage_path].get(ctx.chunk)
        return have is not None and have == (job.request.fingerprint(), self.model or have[1])

    def failed_chunks(self, stage_path: str, failures: list[str]) -> list[str]:
        """The keys of the stage's chunks among ``failures``, in chunk order."""
        failed = set(failures)
        keys = (chunk_key(stage_path, i) for i in range(self.chunks[stage_path]))
        return [k for k in keys if k in failed]


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
    def finding_count(self) -> int:
        """Edges dropped by a gate."""
        return self.dropped

    def drop_reasons(self) -> dict[str, int]:
        return dict(self.summary.get("drop_reasons", {}))

    def to_dict(self) -> dict[str, Any]:
        return self.counts() | {
            "summary": self.summary,
            "stages": [vars(s) for s in self.stages],
        }


class ChunkRunOptions(TypedDict, total=False):
    """The options of a chunked extraction run (relations, events); defaults in :func:`run_chunks`.

    ``resolve`` maps a name to an operator id (the workspace passes the alias table's; default:
    nobody); ``speakers`` the names that count as speakers (default: the store's); ``files``
    the LLM layer's progress/errors files (default: the service's own)."""

    concurrency: int
    resume: bool
    progress: Progress | None
    speakers: set[str] | None
    resolve: ResolveFn
    files: LLMFiles | None
    stop_after_unreachable: int
    max_cost: float | None


@dataclass
class ChunkRun:
    """What a chunked run's answer handler reads."""

    store: Store
    plan: ChunkPlan
    model: str  # the task's configured model (an answer may name its own)
    speakers: set[str]
    resolve: ResolveFn


Handler = Callable[[Job, ChatResult], str]


def run_chunks(
    name: str,
    task: str,
    store: Store,
    llm: ChatModel,
    stage_paths: list[str],
    jobs: tuple[StageJobs, ChunkTables],
    report: TaskRunReport,
    handler: Callable[[ChunkRun], Handler],
    options: ChunkRunOptions,
) -> ChunkRun:
    """Send the chunk jobs of ``stage_paths`` (``jobs``: the task's jobs of a stage and its
    chunk table, for resume) and hand each answer to ``handler(run)``; failed chunks are
    logged to the errors file and the run goes on."""
    speakers = options.get("speakers")
    model = llm.config_for(task).model
    run = ChunkRun(
        store,
        ChunkPlan(store, stage_paths, jobs[0], jobs[1], model),
        model,
        speaker_whitelist(store) if speakers is None else speakers,
        options.get("resolve", lambda name: None),
    )
    spec = TaskSpec(name, run.plan.jobs(), handler(run), report, stored=run.plan.stored)
    run_task(
        spec,
        llm,
        resume=options.get("resume", True),
        files=options.get("files"),
        concurrency=options.get("concurrency", 8),
        progress=options.get("progress"),
        stop_after_unreachable=options.get("stop_after_unreachable", 5),
        max_cost=options.get("max_cost"),
    )
    return run


def extract_relations(
    store: Store, llm: ChatModel, stage_paths: list[str], **options: Unpack[ChunkRunOptions]
) -> RunReport:
    """Extract, gate and store the relations of ``stage_paths`` (see :func:`run_chunks`)."""
    report = RunReport()
    run = run_chunks(
        "extract relations", TASK, store, llm, stage_paths, (stage_jobs, edges_db), report,
        _relations_handler, options,
    )  # fmt: skip
    _fill_stage_counts(store, run.plan, report)
    return report


def _relations_handler(run: ChunkRun) -> Handler:
    store, plan, model = run.store, run.plan, run.model

    def handler(job: Job, result: ChatResult) -> str:
        ctx: ChunkContext = job.context
        parsed: RelationsResponse = result.parsed
        gated = gate_edges(
            parsed.edges,
            plan.lines(ctx.stage_path),
            speakers=run.speakers,
            resolve=run.resolve,
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

    return handler


def _fill_stage_counts(store: Store, plan: ChunkPlan, report: RunReport) -> None:
    everything: list[GatedEdge] = []
    for sp, n in plan.chunks.items():
        res = StageResult(sp, chunks=n, failed_chunks=plan.failed_chunks(sp, report.failures))
        edges = edges_db.load_edges(store, sp)
        everything.extend(edges)
        res.kept = sum(e.kept for e in edges)
        res.dropped = len(edges) - res.kept
        res.drop_reasons = dict(Counter(e.drop_reason or "" for e in edges if not e.kept))
        report.stages.append(res)
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
