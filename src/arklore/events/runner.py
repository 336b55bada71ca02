"""The event-extraction run: stages -> chunk jobs -> model -> store -> checks -> export.

One job per chunk of a stage (``<stage_path>#c<i>``). The handler stores the chunk's answer
as proposed; when every chunk of the stage is stored, the stage is checked as a whole
(overlapping chunks merged, then every check of :mod:`arklore.events.checks` against the
stage's lines) and its events replaced in one transaction. Resume trusts the store: a chunk is
skipped only if ``event_chunks`` holds it with the very same request and model, and a stage
is checked again whenever what its checks read changed: the chunk answers (a forced rerun may
store new answers to the same requests), the stage's lines or the checks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

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
    ChunkContext,
    ChunkPlan,
    ChunkRun,
    ChunkRunOptions,
    Handler,
    ResolveFn,
    chunk_jobs,
    iter_requests,
    run_chunks,
)
from arklore.llm import ChatModel, ChatResult, Estimate, Job, Prices
from arklore.llm import estimate as estimate_requests
from arklore.llm.runs import Progress, TaskRunReport
from arklore.llm.types import sha256_json


def stage_jobs(store: Store, stage_path: str, lines: list[Line]) -> list[Job]:
    """The event task's jobs for a stage."""
    return chunk_jobs(
        store, stage_path, chunks(lines), task=TASK, build=build_messages,
        prompt_version=PROMPT_VERSION, schema=EventsResponse,
    )  # fmt: skip


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


def stage_fingerprint(answers: list[events_db.ChunkAnswer], lines: list[Line]) -> str:
    """What the checks of a stage read: its chunk answers as stored (their content, not the
    requests: a forced rerun may store other answers to the same requests), the stage's
    lines and the checks' version. The stage is checked again whenever it changes."""
    return sha256_json(
        {
            "checks": CHECKS_VERSION,
            "prompt_version": PROMPT_VERSION,
            "answers": [
                [a.chunk, a.first_line, a.last_line, a.model, [p.model_dump() for p in a.proposals]]
                for a in answers
            ],
            "lines": lines,  # dataclasses: orjson writes every field
        }
    )


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
    fp = stage_fingerprint(answers, lines)
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
    def finding_count(self) -> int:
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
    store: Store, llm: ChatModel, stage_paths: list[str], **options: Unpack[ChunkRunOptions]
) -> RunReport:
    """Extract, store and check the events of ``stage_paths`` (see
    :func:`arklore.extract.runner.run_chunks`; a stage with a failed chunk stays unchecked
    until a rerun)."""
    report = RunReport()
    run = run_chunks(
        "extract events", TASK, store, llm, stage_paths, (stage_jobs, events_db), report,
        _events_handler, options,
    )  # fmt: skip
    # stages whose chunks were all stored already, but checked by older rules (or never)
    for sp in stage_paths:
        _check(run, sp)
    _fill(store, run.plan, report)
    return report


def _fill(store: Store, plan: ChunkPlan, report: RunReport) -> None:
    everything: list[CheckedEvent] = []
    for sp, n in plan.chunks.items():
        res = StageResult(sp, chunks=n, failed_chunks=plan.failed_chunks(sp, report.failures))
        report.stages.append(res)
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


def _check(run: ChunkRun, stage_path: str) -> None:
    check_and_store(
        run.store, stage_path, run.plan.lines(stage_path), run.plan.chunks[stage_path],
        speakers=run.speakers, resolve=run.resolve,
    )  # fmt: skip


def _events_handler(run: ChunkRun) -> Handler:
    store, model = run.store, run.model

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
        _check(run, ctx.stage_path)
        return f"{job.key}:{len(parsed.events)}"

    return handler


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
