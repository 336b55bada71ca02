"""The event-extraction run: stages -> chunk jobs -> model -> store -> checks -> export.

One job per chunk of a stage (``<stage_path>#c<i>``). The handler stores the chunk's answer
as proposed; when every chunk of the stage is stored, the stage is checked as a whole
(overlapping chunks merged, then every check of :mod:`arklore.events.checks` against the
stage's lines) and its events replaced in one transaction. Resume trusts the store: a chunk is
skipped only if ``event_chunks`` holds it with the very same request and model, and a stage
is checked again whenever its chunks or the checks changed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from arklore.base.files import atomic_write_bytes
from arklore.core.model import Line
from arklore.corpus.store import Store
from arklore.events import store as events_db
from arklore.events.checks import (
    CHECKS_VERSION,
    CheckedEvent,
    StageMeta,
    check_stage,
    findings,
    summarize,
)
from arklore.extract.events import (
    PROMPT_VERSION,
    TASK,
    EventsResponse,
    build_messages,
    chunks,
)
from arklore.extract.runner import (
    Progress,
    ResolveFn,
    iter_requests,
    speaker_whitelist,
    stage_title,
)
from arklore.llm import (
    ChatModel,
    ChatRequest,
    ChatResult,
    Estimate,
    Job,
    LLMFiles,
    Prices,
)
from arklore.llm import estimate as estimate_requests
from arklore.llm.runs import TaskRunReport, finish, is_current, require_files, run_task, task_model


@dataclass(frozen=True)
class ChunkContext:
    stage_path: str
    chunk: int
    first_line: int
    last_line: int
    n_chunks: int


def chunk_key(stage_path: str, chunk: int) -> str:
    return f"{stage_path}#c{chunk}"


def stage_jobs(store: Store, stage_path: str, lines: list[Line]) -> list[Job]:
    """One job per chunk; chunks keep their original line numbers."""
    title = stage_title(store, stage_path)
    parts = chunks(lines)
    jobs = []
    for i, chunk in enumerate(parts):
        request = ChatRequest(
            task=TASK,
            messages=build_messages(stage_path, chunk, stage_title=title),
            key=chunk_key(stage_path, i),
            prompt_version=PROMPT_VERSION,
            schema=EventsResponse,
        )
        ctx = ChunkContext(stage_path, i, chunk[0].line_no, chunk[-1].line_no, len(parts))
        jobs.append(Job(request, context=ctx))
    return jobs


def dry_run(
    store: Store, stage_paths: list[str], prices: Prices, progress: Progress | None = None
) -> Estimate:
    """Tokens and cost of extracting the events of ``stage_paths``; calls nothing. Output is
    budgeted higher than for relations: every event carries a summary and memories."""
    requests = iter_requests(store, stage_paths, progress, jobs=stage_jobs)
    return estimate_requests(requests, expected_output_tokens=EXPECTED_OUTPUT_TOKENS, prices=prices)


EXPECTED_OUTPUT_TOKENS = 900
"""Output tokens a chunk is expected to take (several events, each with 2-4 memories)."""


# --- checking a stage -------------------------------------------------------------------


def stage_meta(store: Store, stage_path: str) -> StageMeta:
    info = store.stage_info(stage_path)
    if info is None:
        return StageMeta()
    return StageMeta(
        info.story_code, info.event_id, info.event_name, info.story_name, info.order_rank
    )


def stage_fingerprint(answers: list[events_db.ChunkAnswer]) -> str:
    h = hashlib.sha1(CHECKS_VERSION.encode())
    for a in answers:
        h.update(f"\n{a.chunk}:{a.fingerprint}:{a.model}".encode())
    return h.hexdigest()


def check_and_store(
    store: Store,
    stage_path: str,
    lines: list[Line],
    n_chunks: int,
    *,
    speakers: set[str],
    resolve: ResolveFn,
    force: bool = False,
) -> list[CheckedEvent] | None:
    """Check the stage from its stored chunk answers and replace its events, when every chunk
    is stored and (unless ``force``) the chunks or the checks changed since the last check.
    Returns the events written, or None when nothing was done."""
    answers = events_db.chunk_answers(store, stage_path)
    if len(answers) != n_chunks or [a.chunk for a in answers] != list(range(n_chunks)):
        return None
    fp = stage_fingerprint(answers)
    if not force and events_db.stage_fingerprint(store, stage_path) == fp:
        return None
    models = sorted({a.model for a in answers})
    events = check_stage(
        stage_path,
        [(a.chunk, a.first_line, a.last_line, a.proposals) for a in answers],
        lines,
        speakers=speakers,
        resolve=resolve,
        meta=stage_meta(store, stage_path),
        model=",".join(models),
        prompt_version=PROMPT_VERSION,
    )
    events_db.write_stage(
        store,
        stage_path,
        events,
        chunks=n_chunks,
        fingerprint=fp,
        summary=summarize(events),
        models=models,
        prompt_version=PROMPT_VERSION,
    )
    return events


# --- the run ---------------------------------------------------------------------------


@dataclass
class StageResult:
    stage: str
    chunks: int = 0
    failed_chunks: list[str] = field(default_factory=list)
    checked: bool = False  # every chunk answered and the stage checked
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunReport(TaskRunReport):
    """What an events run did: the shared counts, per-stage counts and the checks' findings."""

    stages: list[StageResult] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    dropped_memories: list[dict[str, Any]] = field(default_factory=list)
    third_person: list[dict[str, Any]] = field(default_factory=list)
    dropped_time_hints: list[dict[str, Any]] = field(default_factory=list)
    dropped_events: list[dict[str, Any]] = field(default_factory=list)
    embedded_memories: int = 0  # memory passages embedded ahead of chat (the rest were cached)

    @property
    def findings(self) -> int:
        """Memories, events and time hints dropped or flagged by the checks."""
        return findings(self.summary)

    def to_dict(self) -> dict[str, Any]:
        return self.counts() | {
            "summary": self.summary,
            "dropped_memories": self.dropped_memories,
            "third_person": self.third_person,
            "dropped_time_hints": self.dropped_time_hints,
            "dropped_events": self.dropped_events,
            "stages": [vars(s) for s in self.stages],
            "embedded_memories": self.embedded_memories,
        }


def extract_events(
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
    """Extract, store and check the events of ``stage_paths``; failed chunks are logged to
    the errors file and the run goes on (their stage stays unchecked until a rerun)."""
    speakers = speaker_whitelist(store) if speakers is None else speakers
    files = require_files(llm, files, "extract_events")
    model = task_model(llm, TASK)
    report = RunReport()
    stage_lines: dict[str, list[Line]] = {}
    n_chunks: dict[str, int] = {}
    todo: list[Job] = []
    for sp in stage_paths:
        lines = store.lines(sp)
        jobs = stage_jobs(store, sp, lines)
        n_chunks[sp] = len(jobs)
        events_db.drop_stale_chunks(store, sp, len(jobs))
        have = events_db.chunk_state(store, sp) if resume else {}
        report.stages.append(StageResult(sp, chunks=len(jobs)))
        report.jobs += len(jobs)
        stage_lines[sp] = lines
        for job in jobs:
            if is_current(have.get(job.context.chunk), job, model):
                report.skipped += 1
                continue
            todo.append(job)

    def handler(job: Job, result: ChatResult) -> str:
        ctx: ChunkContext = job.context
        parsed: EventsResponse = result.parsed
        events_db.write_chunk(
            store,
            ctx.stage_path,
            ctx.chunk,
            parsed.events,
            job_key=job.key,
            fingerprint=job.request.fingerprint(),
            model=result.model or model,
            prompt_version=PROMPT_VERSION,
            first_line=ctx.first_line,
            last_line=ctx.last_line,
            from_cache=result.from_cache,
        )
        check_and_store(
            store,
            ctx.stage_path,
            stage_lines[ctx.stage_path],
            ctx.n_chunks,
            speakers=speakers,
            resolve=resolve,
        )
        return f"{job.key}:{len(parsed.events)}"

    run_task(
        TASK,
        todo,
        llm,
        report,
        handler=handler,
        files=files,
        label="extract events",
        progress=progress,
        concurrency=concurrency,
        stop_after_unreachable=stop_after_unreachable,
        max_cost=max_cost,
    )
    # stages whose chunks were all stored already, but checked by older rules (or never)
    for sp in stage_paths:
        check_and_store(
            store, sp, stage_lines[sp], n_chunks[sp], speakers=speakers, resolve=resolve
        )
    _fill(store, report)
    finish(report, llm)
    return report


def _fill(store: Store, report: RunReport) -> None:
    failed = set(report.failures)
    everything: list[CheckedEvent] = []
    for res in report.stages:
        res.failed_chunks = [
            chunk_key(res.stage, i) for i in range(res.chunks) if chunk_key(res.stage, i) in failed
        ]
        res.checked = events_db.has_events(store, res.stage)
        if not res.checked:
            continue
        events = events_db.load_events(store, res.stage)
        res.summary = summarize(events)
        everything.extend(events)
        for e in events:
            where = {"stage": e.stage, "event": e.idx, "lines": [e.line_start, e.line_end]}
            if not e.kept:
                report.dropped_events.append(
                    {**where, "reason": e.drop_reason, "detail": e.drop_detail}
                )
                continue
            if e.time_hint_verdict == "not_in_text":
                report.dropped_time_hints.append({**where, "time_hint": e.time_hint_claimed})
            for m in e.memories:
                item = {**where, "actor": m.actor, "actor_id": m.actor_id, "text": m.text}
                if not m.kept:
                    report.dropped_memories.append({**item, "reason": m.drop_reason})
                elif m.person != "first":
                    report.third_person.append(item)
    report.summary = summarize(everything)
    report.summary["stages_checked"] = sum(r.checked for r in report.stages)
    report.summary["presence"] = dict(
        Counter(m.presence for e in everything if e.kept for m in e.memories if m.kept)
    )


# --- export ----------------------------------------------------------------------------


def export_name(stage_path: str) -> str:
    """``obt/main/level_main_01-01_beg`` -> ``story_events_obt__main__level_main_01-01_beg.json``."""
    return f"story_events_{stage_path.replace('/', '__')}.json"


EXPORT_FORMAT = "arklore-story-events/1"


def export_doc(store: Store, stage_path: str) -> dict[str, Any]:
    events = events_db.load_events(store, stage_path)
    meta = stage_meta(store, stage_path)
    return {
        "format": EXPORT_FORMAT,
        "stage": stage_path,
        "stage_code": meta.stage_code,
        "event_id": meta.event_id,
        "event_name": meta.event_name,
        "story_name": meta.story_name,
        "order_rank": meta.order_rank,
        "prompt_version": PROMPT_VERSION,
        "checks_version": CHECKS_VERSION,
        "models": sorted({m for e in events for m in e.model.split(",") if m}),
        "summary": summarize(events),
        "events": [events_db.event_record(e) for e in events if e.kept],
        "dropped_events": [events_db.event_record(e) for e in events if not e.kept],
    }


def export_stage(store: Store, stage_path: str, out_dir: Path) -> Path:
    """Write the stage's checked events (memories with their verdicts), atomically."""
    data = orjson.dumps(export_doc(store, stage_path), option=orjson.OPT_INDENT_2, default=repr)
    return atomic_write_bytes(out_dir / export_name(stage_path), data)


def export_stages(store: Store, stage_paths: list[str], out_dir: Path) -> list[Path]:
    """Export the stages that were checked (a stage with a failed chunk has no result)."""
    return [
        export_stage(store, sp, out_dir) for sp in stage_paths if events_db.has_events(store, sp)
    ]
