"""The task runner every LLM task shares (relations, events, distill): resume from the task's
own tables, progress, failed keys and the failure hook, stopping early, the cost line and the
exit codes. The task-specific parts (gates, checks, profiles) are tested with their task."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.llm_stub import (
    Reply,
    StubServer,
    llm_files,
    llm_stub_fixture,  # noqa: F401  (fixture `llm_stub`)
    make_llm,
    stub_env,
)

from arklore.core.errors import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_STOPPED,
    CostLimitError,
    EndpointUnreachableError,
)
from arklore.llm import LLM, ChatModel, ChatRequest, ChatResult, Job
from arklore.llm.runs import TaskRunReport, TaskSpec, run_task


def make_jobs(n: int) -> list[Job]:
    return [
        Job(
            ChatRequest(
                task="relations",
                key=f"stage#c{i}",
                messages=[{"role": "user", "content": f"chunk-{i} reply in json"}],
            ),
            context=i,
        )
        for i in range(n)
    ]


@dataclass
class Task:
    """A task's side of a run: its table of answers, and the failures it was told of."""

    table: dict[str, tuple[str, object]] = field(default_factory=dict)  # key -> (fp, answer)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def handler(self, job: Job, result: ChatResult) -> str:
        self.table[job.key] = (job.request.fingerprint(), result.data)
        return job.key

    def stored(self, job: Job) -> bool:
        have = self.table.get(job.key)
        return have is not None and have[0] == job.request.fingerprint()

    def on_failed(self, job: Job, why: str) -> None:
        self.failed.append((job.key, why))

    def spec(self, jobs: list[Job], report: TaskRunReport | None = None) -> TaskSpec:
        return TaskSpec(
            "test run", iter(jobs), self.handler, report or TaskRunReport(),
            stored=self.stored, on_failed=self.on_failed,
        )  # fmt: skip


@pytest.fixture
def llm(llm_stub: StubServer, tmp_path: Path) -> Iterator[LLM]:
    model = make_llm(tmp_path, stub_env(llm_stub, LLM_MAX_RETRIES="1"))
    yield model
    model.close()


def test_the_llm_service_is_a_chat_model(llm: LLM) -> None:
    assert isinstance(llm, ChatModel)


def test_resume_skips_what_the_task_stored_and_progress_counts_it_finished(
    llm: LLM, llm_stub: StubServer, tmp_path: Path
) -> None:
    task = Task()
    first = run_task(task.spec(make_jobs(3)), llm)
    assert (first.jobs, first.done, first.skipped, first.exit_code) == (3, 3, 0, EXIT_OK)
    assert task.table["stage#c1"][1] == {"echo": "chunk-1 reply in json"}

    seen: list[tuple[str, int, int]] = []
    again = run_task(task.spec(make_jobs(5)), llm, progress=lambda *a: seen.append(a))
    assert (again.jobs, again.skipped, again.done) == (5, 3, 2)
    assert len(llm_stub.requests) == 5  # only the two new chunks were sent
    assert seen == [("test run", 4, 5), ("test run", 5, 5)]  # stored ones count as finished

    fresh = make_llm(tmp_path, stub_env(llm_stub))  # a new run: its own cost line
    forced = run_task(task.spec(make_jobs(5)), fresh, resume=False)
    fresh.close()
    assert (forced.skipped, forced.done, forced.cached) == (0, 5, 5)  # sent, from the cache
    assert "5 requests (5 cached" in forced.cost_line and "cost $0.0000" in forced.cost_line


def test_failed_jobs_are_reported_by_key_and_handed_to_the_task(
    llm: LLM, llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.script("chunk-1 ", Reply.server_error())
    task = Task()
    report = run_task(task.spec(make_jobs(3)), llm)
    assert (report.done, report.failed, report.failures) == (2, 1, ["stage#c1"])
    assert report.exit_code == EXIT_PARTIAL and "stage#c1" not in task.table
    ((key, why),) = task.failed
    assert key == "stage#c1" and "HTTP 500" in why
    assert report.errors_file == str(llm_files(tmp_path).errors)
    (row,) = [json.loads(x) for x in Path(report.errors_file).read_text().splitlines()]
    assert row["key"] == "stage#c1" and row["run_id"] == llm.run_id

    llm_stub._rules.clear()  # the endpoint recovers: a rerun sends only the failed job
    rerun = run_task(task.spec(make_jobs(3)), llm)
    assert (rerun.skipped, rerun.done, rerun.failures, rerun.exit_code) == (2, 1, [], EXIT_OK)


def test_the_breaker_stops_the_run_and_keeps_what_finished(llm: LLM, llm_stub: StubServer) -> None:
    llm_stub.default = lambda body: Reply.unauthorized()
    task = Task()
    report = run_task(task.spec(make_jobs(6)), llm, concurrency=1, stop_after_unreachable=2)
    assert isinstance(report.stopped, EndpointUnreachableError)
    assert (report.failed, report.not_started, report.exit_code) == (2, 4, EXIT_STOPPED)
    assert report.failures == ["stage#c0", "stage#c1"] and len(task.failed) == 2
    assert len(llm_stub.requests) == 2


def test_the_cost_limit_stops_before_the_request_that_would_pass_it(
    llm: LLM, llm_stub: StubServer
) -> None:
    report = run_task(Task().spec(make_jobs(3)), llm, max_cost=0.0)
    assert isinstance(report.stopped, CostLimitError) and report.exit_code == EXIT_STOPPED
    assert (report.done, report.not_started) == (0, 3) and llm_stub.requests == []


@dataclass
class Findings(TaskRunReport):
    dropped: int = 0
    own_failures: int = 0

    @property
    def finding_count(self) -> int:
        return self.dropped

    @property
    def partial(self) -> bool:
        return super().partial or self.own_failures > 0


@pytest.mark.parametrize(
    ("report", "code"),
    [
        (Findings(), EXIT_OK),
        (Findings(dropped=2), EXIT_FINDINGS),
        (Findings(dropped=2, own_failures=1), EXIT_PARTIAL),  # a task's own failures
        (Findings(dropped=2, failed=1), EXIT_PARTIAL),
        (Findings(dropped=2, failed=1, stopped=CostLimitError("limit")), EXIT_STOPPED),
    ],
)
def test_exit_code_stopped_beats_failed_beats_findings(report: Findings, code: int) -> None:
    assert report.exit_code == code and report.counts()["exit_code"] == code
