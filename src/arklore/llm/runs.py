"""One batch run of a chunked LLM task (relations, events): what every such run reports, and
the run itself around :func:`~arklore.llm.jobs.run_jobs`.

A task module plans its jobs (one per chunk of a stage), skips the chunks its own tables hold
with the very same request and model (:func:`is_current`), and hands the rest to
:func:`run_task`, which fills the shared counts of a :class:`TaskRunReport`. The task's report
adds its own findings (edges dropped by a gate, memories dropped by a check) and says how many
there are in :meth:`TaskRunReport.findings`, which decides the exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arklore.core.errors import EXIT_FINDINGS, EXIT_OK, EXIT_PARTIAL, RunStoppedError
from arklore.llm.jobs import Handler, Job, JobsSummary, JobStore, run_jobs
from arklore.llm.types import ChatModel, LLMFiles

Progress = Callable[[str, int, int], None]


@dataclass
class TaskRunReport:
    """The counts every chunked task run reports (task reports subclass it)."""

    jobs: int = 0  # chunks selected
    done: int = 0  # answered in this run (from the endpoint or the response cache)
    cached: int = 0  # of those, from the response cache
    skipped: int = 0  # already stored with the same request and model
    failed: int = 0
    failures: list[str] = field(default_factory=list)  # job keys that failed for good
    cost_line: str = ""
    errors_file: str = ""
    exports: list[str] = field(default_factory=list)
    stopped: RunStoppedError | None = None  # the run stopped early (breaker, cost limit)
    not_started: int = 0  # chunks never sent because the run stopped

    @property
    def findings(self) -> int:
        """How many results a check dropped or flagged (the task's reports say)."""
        return 0

    @property
    def exit_code(self) -> int:
        """Stopped early (4) > some chunks failed (3) > findings to review (5) > ok (0)."""
        if self.stopped is not None:
            return self.stopped.exit_code
        if self.failed:
            return EXIT_PARTIAL
        return EXIT_FINDINGS if self.findings else EXIT_OK

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


def task_model(llm: ChatModel, task: str) -> str:
    """The model name ``llm`` uses for ``task`` ("" for a model without per-task configs)."""
    config_for = getattr(llm, "config_for", None)
    return config_for(task).model if config_for else ""


def is_current(stored: tuple[str, str] | None, job: Job, model: str) -> bool:
    """Whether a chunk stored as ``(request fingerprint, model)`` answers ``job`` already:
    the same request, and the same model when the model is known."""
    return stored is not None and stored == (job.request.fingerprint(), model or stored[1])


def require_files(llm: ChatModel, files: LLMFiles | None, what: str) -> LLMFiles:
    files = files or getattr(llm, "files", None)
    if files is None:
        raise ValueError(f"{what} needs files= (the LLM layer's state files)")
    return files


def run_task(
    task: str,
    todo: Sequence[Job],
    llm: ChatModel,
    report: TaskRunReport,
    *,
    handler: Handler,
    files: LLMFiles,
    label: str,
    progress: Progress | None = None,
    concurrency: int = 8,
    stop_after_unreachable: int = 5,
    max_cost: float | None = None,
) -> None:
    """Send ``todo`` (resume was decided by the caller from its own tables) and fill
    ``report``'s counts; progress counts the skipped chunks as finished."""

    def on_progress(s: JobsSummary) -> None:
        if progress:
            progress(label, report.skipped + s.finished, report.jobs)

    summary = run_jobs(
        todo,
        llm,
        handler=handler,
        concurrency=concurrency,
        resume=False,
        progress=on_progress,
        files=files,
        stop_after_unreachable=stop_after_unreachable,
        max_cost=max_cost,
    )
    report.done, report.cached, report.failed = summary.done, summary.cached, summary.failed
    report.stopped, report.not_started = summary.stopped, summary.not_started
    report.failures = failed_keys(files.state, task, [j.key for j in todo])
    report.errors_file = str(files.errors)


def finish(report: TaskRunReport, llm: ChatModel) -> None:
    """The cost line of the run (models without a ledger give none)."""
    cost_line = getattr(llm, "format_cost_line", None)
    report.cost_line = cost_line() if cost_line else ""


def failed_keys(state: Path, task: str, keys: list[str]) -> list[str]:
    """Which of ``keys`` the job store holds as failed for ``task``."""
    if not keys:
        return []
    js = JobStore(state)
    try:
        return [k for k in keys if (row := js.status(task, k)) is not None and row[0] == "failed"]
    finally:
        js.close()
