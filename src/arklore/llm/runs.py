"""One batch run of an LLM task, the same for every task (relations and events: one job per
chunk of a stage; distillation: one job per task and operator), and what every run reports.

A task describes its run in a :class:`TaskSpec`: the jobs the run covers, whether its own
tables already hold a job's answer from the very same request and model (resume), the handler
that stores an answer in those tables (in its own transaction), what to do with a job given
up on, and the report to fill. :func:`run_task` does the rest: it sends what is not stored
through :func:`~arklore.llm.jobs.run_jobs` (bounded concurrency, circuit breaker, cost limit),
counts progress with the stored jobs as finished, and fills the shared counts of the
:class:`TaskRunReport`, the failed keys, the errors file and the cost line. A task's report
subclasses it with its own findings (edges dropped by a gate, memories dropped by a check),
whose number decides the exit code with the shared counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from arklore.core.errors import EXIT_FINDINGS, EXIT_OK, EXIT_PARTIAL, RunStoppedError
from arklore.llm.jobs import Handler, Job, JobsSummary, run_jobs
from arklore.llm.ledger import format_cost_line
from arklore.llm.types import ChatModel, LLMFiles

Progress = Callable[[str, int, int], None]
"""(what is running, finished so far, total): the progress callback of every task run."""


@dataclass
class TaskRunReport:
    """The counts every task run reports (task reports subclass it)."""

    jobs: int = 0  # jobs the run covers (chunks, task x operator)
    done: int = 0  # answered in this run (from the endpoint or the response cache)
    cached: int = 0  # of those, from the response cache
    skipped: int = 0  # already stored with the same request and model (resume)
    failed: int = 0  # given up on in this run
    failures: list[str] = field(default_factory=list)  # their job keys
    cost_line: str = ""
    errors_file: str = ""
    exports: list[str] = field(default_factory=list)
    stopped: RunStoppedError | None = None  # the run stopped early (breaker, cost limit)
    not_started: int = 0  # jobs never sent because the run stopped

    @property
    def finding_count(self) -> int:
        """How many results a check dropped or flagged (the task's report says)."""
        return 0

    @property
    def partial(self) -> bool:
        """Whether some items failed for good: jobs of this run (a task may add its own)."""
        return self.failed > 0

    @property
    def exit_code(self) -> int:
        """Stopped early (4) > some items failed (3) > findings to review (5) > ok (0)."""
        if self.stopped is not None:
            return self.stopped.exit_code
        if self.partial:
            return EXIT_PARTIAL
        return EXIT_FINDINGS if self.finding_count else EXIT_OK

    def counts(self) -> dict[str, Any]:
        """The shared part of ``to_dict``."""
        return {
            "jobs": self.jobs,
            "done": self.done,
            "cached": self.cached,
            "skipped": self.skipped,
            "failed": self.failed,
            "failures": self.failures,
            "cost_line": self.cost_line,
            "errors_file": self.errors_file,
            "exports": self.exports,
            "stopped": self.stopped.one_line() if self.stopped else None,
            "not_started": self.not_started,
            "exit_code": self.exit_code,
        }


def _nothing_stored(job: Job) -> bool:
    return False


@dataclass
class TaskSpec:
    """What a task tells :func:`run_task` about one run of it."""

    name: str  # what progress calls the run ("extract relations", "distill")
    jobs: Iterable[Job]  # every job the run covers; read once, before anything is sent
    handler: Handler  # stores an answer in the task's tables, in one transaction
    report: TaskRunReport  # the report to fill
    stored: Callable[[Job], bool] = _nothing_stored  # the tables hold this very job's answer
    on_failed: Callable[[Job, str], None] | None = None  # a job given up on in this run, and why


def run_task(
    spec: TaskSpec,
    llm: ChatModel,
    *,
    resume: bool = True,
    files: LLMFiles | None = None,
    concurrency: int = 8,
    progress: Progress | None = None,
    stop_after_unreachable: int = 5,
    max_cost: float | None = None,
) -> TaskRunReport:
    """Send the jobs of ``spec`` that are not stored (all of them without ``resume``) and fill
    its report. ``files``: the LLM layer's progress and errors files (default: the model's).

    Only the jobs to send are kept in memory. Failed jobs go to ``spec.on_failed`` once the
    run has ended; the cost line is what ``llm`` spent in this run."""
    report = spec.report
    todo: list[Job] = []
    for job in spec.jobs:
        report.jobs += 1
        if resume and spec.stored(job):
            report.skipped += 1
        else:
            todo.append(job)
    files = files or llm.files

    def on_progress(s: JobsSummary) -> None:
        if progress:
            progress(spec.name, report.skipped + s.finished, report.jobs)

    summary = run_jobs(
        todo,
        llm,
        handler=spec.handler,
        concurrency=concurrency,
        resume=False,  # decided above, from the task's own tables
        progress=on_progress,
        files=files,
        stop_after_unreachable=stop_after_unreachable,
        max_cost=max_cost,
    )
    report.done, report.cached, report.failed = summary.done, summary.cached, summary.failed
    report.stopped, report.not_started = summary.stopped, summary.not_started
    report.failures = [job.key for job, _ in summary.failures]
    report.errors_file = str(files.errors)
    if spec.on_failed is not None:
        for job, why in summary.failures:
            spec.on_failed(job, why)
    report.cost_line = format_cost_line(llm.summary())
    return report
