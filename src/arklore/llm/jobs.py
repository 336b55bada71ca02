"""Batch runner: many ChatRequests through a ChatModel with bounded concurrency, progress
persisted per (task, key) so an interrupted run resumes where it stopped.

Each finished job is committed on its own (handler first, then the progress row), so a
kill at any moment loses at most the requests in flight. A job killed between its
handler and its progress commit is redone on resume: handlers must be idempotent
(upsert keyed by task/key); the response cache makes the redo free.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sized
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arklore.base.db import Database, Migration
from arklore.core.errors import (
    CostLimitError,
    EndpointUnreachableError,
    LLMError,
    RunStoppedError,
)
from arklore.llm.errorlog import ErrorLog
from arklore.llm.estimate import estimate
from arklore.llm.types import ChatModel, ChatRequest, ChatResult, LLMFiles

log = logging.getLogger("arklore.llm.jobs")

SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_jobs (
    task TEXT NOT NULL,
    key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    fingerprint TEXT NOT NULL,
    result_ref TEXT,
    attempts INTEGER NOT NULL,
    error TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (task, key)
)
"""
MIGRATIONS = (Migration("llm", "jobs_001_jobs", SCHEMA),)


@dataclass(frozen=True)
class Job:
    """One request plus whatever the handler needs to store its answer (not persisted)."""

    request: ChatRequest
    context: Any = field(default=None, compare=False)

    @property
    def task(self) -> str:
        return self.request.task

    @property
    def key(self) -> str:
        return self.request.key


Handler = Callable[[Job, ChatResult], str | None]
"""Stores a job's output (main thread); returns a reference to it (row id...) or None."""


@dataclass
class JobsSummary:
    """Counts so far; passed to the progress callback after every job."""

    total: int | None = None
    done: int = 0
    failed: int = 0
    skipped: int = 0  # already done in an earlier run (resume)
    cached: int = 0
    stopped: RunStoppedError | None = None  # the run stopped early (breaker, cost limit)
    not_started: int = 0  # jobs never sent because the run stopped
    failures: list[tuple[Job, str]] = field(default_factory=list)  # failed in this run: why

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.skipped


Progress = Callable[[JobsSummary], None]


class JobStore:
    """Table ``llm_jobs`` in ``home/llm_state.sqlite3``: done/failed per (task, key)."""

    def __init__(self, path: Path) -> None:
        self.db = Database(path, MIGRATIONS)

    def status(self, task: str, key: str) -> tuple[str, str, str | None] | None:
        """(status, fingerprint, result_ref) or None."""
        rows = self.db.query(
            "SELECT status, fingerprint, result_ref FROM llm_jobs WHERE task = ? AND key = ?",
            (task, key),
        )
        return rows[0] if rows else None

    def is_done(self, job: Job) -> bool:
        """Done with the very same request (a new prompt version or message redoes it)."""
        row = self.status(job.task, job.key)
        return row is not None and row[0] == "done" and row[1] == job.request.fingerprint()

    def mark(
        self,
        job: Job,
        status: str,
        *,
        attempts: int,
        result_ref: str | None = None,
        error: str | None = None,
    ) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO llm_jobs (task, key, status, fingerprint, result_ref,"
                " attempts, error, updated) VALUES (?,?,?,?,?,?,?,?)",
                (
                    job.task,
                    job.key,
                    status,
                    job.request.fingerprint(),
                    result_ref,
                    attempts,
                    error,
                    time.time(),
                ),
            )

    def counts(self, task: str | None = None) -> dict[str, int]:
        where, params = ("WHERE task = ?", (task,)) if task else ("", ())
        rows = self.db.query(
            f"SELECT status, COUNT(*) FROM llm_jobs {where} GROUP BY status", params
        )
        return {s: int(n) for s, n in rows}

    def close(self) -> None:
        self.db.close()


@dataclass(frozen=True)
class _Outcome:
    result: ChatResult | None = None
    error: LLMError | None = None


def _call(model: ChatModel, request: ChatRequest) -> _Outcome:
    try:
        return _Outcome(result=model.complete(request))
    except LLMError as exc:
        return _Outcome(error=exc)


WORST_CASE_OUTPUT_TOKENS = 4096
"""Output tokens the cost limit assumes for a request without ``max_tokens``: the limit
check needs an upper bound (the input side already is one: the token counter overcounts)."""


def _estimated_cost(model: ChatModel, job: Job) -> float:
    prices = model.config_for(job.task).prices
    worst = job.request.max_tokens or WORST_CASE_OUTPUT_TOKENS
    return estimate([job.request], expected_output_tokens=worst, prices=prices).cost_usd


def run_jobs(
    jobs: Iterable[Job],
    model: ChatModel,
    *,
    handler: Handler,
    concurrency: int = 8,
    resume: bool = True,
    progress: Progress | None = None,
    files: LLMFiles | None = None,
    store: JobStore | None = None,
    errors: ErrorLog | None = None,
    run_id: str = "",
    stop_after_unreachable: int = 5,
    max_cost: float | None = None,
) -> JobsSummary:
    """Run ``jobs`` through ``model`` with at most ``concurrency`` requests in flight.

    ``handler`` runs in the calling thread, one job at a time, and its job is committed
    as done right after it returns. A job whose model call fails for good (retries
    exhausted or permanent error) is marked failed, written to ``llm_errors.jsonl`` and
    listed in ``summary.failures``, and the run goes on. With ``resume`` jobs already done
    with the same request are skipped; failed ones are tried again. ``jobs`` may be a lazy
    iterable; ``files`` default to the model's.

    The run stops early (``summary.stopped``, nothing more is sent, what finished is kept)
    when ``stop_after_unreachable`` jobs in a row failed because the endpoint could not be
    reached at all (the circuit breaker: refused, DNS, TLS, 401/403), or when the next
    request's estimated cost, added to what this run spent and what is in flight, would pass
    ``max_cost`` (USD).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    files = files or model.files
    own_store = store is None
    jobs_store = store or JobStore(files.state)
    errors = errors or ErrorLog(files.errors, model.secrets)
    run_id = run_id or model.run_id
    summary = JobsSummary(total=len(jobs) if isinstance(jobs, Sized) else None)
    seen: set[tuple[str, str]] = set()
    in_flight: dict[Future[_Outcome], Job] = {}
    in_flight_cost: dict[Future[_Outcome], float] = {}
    unreachable: list[LLMError] = []  # the current run of consecutive unreachable failures

    def finish(fut: Future[_Outcome]) -> None:
        job = in_flight.pop(fut)
        in_flight_cost.pop(fut, None)
        outcome = fut.result()
        if outcome.result is not None:
            unreachable.clear()
            ref = handler(job, outcome.result)
            jobs_store.mark(job, "done", attempts=outcome.result.attempts, result_ref=ref)
            summary.done += 1
            summary.cached += int(outcome.result.from_cache)
        else:
            err = outcome.error
            assert err is not None
            if err.unreachable:
                unreachable.append(err)
            else:
                unreachable.clear()
            attempts = err.attempts
            reason = f"{type(err).__name__}: {err.message}"
            log.warning(
                "llm job %s/%s skipped after %d attempt(s): %s", job.task, job.key, attempts, reason
            )
            errors.record(
                key=job.key,
                task=job.task,
                reason=reason,
                attempts=attempts,
                run_id=run_id,
                model=job.request.model or model.config_for(job.task).model,
            )
            jobs_store.mark(job, "failed", attempts=attempts, error=reason)
            summary.failed += 1
            summary.failures.append((job, reason))
        if progress:
            progress(summary)

    def drain(block_until_below: int) -> None:
        while len(in_flight) >= block_until_below and in_flight:
            finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for fut in finished:
                finish(fut)

    def should_stop(job: Job) -> RunStoppedError | None:
        if stop_after_unreachable and len(unreachable) >= stop_after_unreachable:
            last = unreachable[-1]
            return EndpointUnreachableError(
                f"stopped after {len(unreachable)} requests in a row could not reach the "
                f"endpoint ({last.message})"
            )
        if max_cost is not None:
            spent = model.summary().cost_usd
            pending = sum(in_flight_cost.values())
            next_cost = _estimated_cost(model, job)
            if spent + pending + next_cost > max_cost:
                return CostLimitError(
                    f"stopped before passing --max-cost ${max_cost:.4g}: this run spent "
                    f"${spent:.4g}, ${pending:.4g} in flight, the next request ~${next_cost:.4g}"
                )
        return None

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="llm")
    try:
        for job in jobs:
            ident = (job.task, job.key)
            if ident in seen:
                raise ValueError(f"duplicate job {job.task}/{job.key} in one run")
            seen.add(ident)
            if summary.stopped is not None:
                summary.not_started += 1
                continue
            if resume and jobs_store.is_done(job):
                summary.skipped += 1
                if progress:
                    progress(summary)
                continue
            drain(concurrency)
            summary.stopped = should_stop(job)
            if summary.stopped is not None:
                summary.not_started += 1
                continue
            fut = pool.submit(_call, model, job.request)
            in_flight[fut] = job
            if max_cost is not None:
                in_flight_cost[fut] = _estimated_cost(model, job)
        drain(1)
    except BaseException:
        # Interrupted (Ctrl-C, handler error): drop queued work, keep what is committed.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if own_store:
            jobs_store.close()
    pool.shutdown(wait=True)
    return summary
