"""The batch runner: results, failures to the errors file, resume, concurrency, and the
API key never reaching any file or log."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.llm_stub import (
    TEST_KEY,
    Reply,
    StubServer,
    llm_files,
    llm_stub_fixture,  # noqa: F401  (fixture `llm_stub`)
    make_llm,
    stub_env,
)

from arklore.llm import ChatRequest, ChatResult, Job, JobsSummary, JobStore, run_jobs

TESTS = Path(__file__).parent


def make_jobs(n: int, version: str = "1") -> list[Job]:
    return [
        Job(
            ChatRequest(
                task="relations",
                key=f"stage/{i:03d}",
                messages=[{"role": "user", "content": f"job-{i:03d} reply in json"}],
                prompt_version=version,
            ),
            context=i,
        )
        for i in range(n)
    ]


class Store:
    """A handler that upserts results and counts its calls."""

    def __init__(self) -> None:
        self.results: dict[str, object] = {}
        self.calls = 0

    def __call__(self, job: Job, result: ChatResult) -> str:
        self.calls += 1
        self.results[job.key] = result.data
        return f"ref:{job.key}"


def test_run_jobs_stores_results_and_commits_progress(llm_stub: StubServer, tmp_path: Path) -> None:
    llm = make_llm(tmp_path, stub_env(llm_stub))
    store = Store()
    seen: list[int] = []
    summary = run_jobs(make_jobs(5), llm, handler=store, progress=lambda s: seen.append(s.finished))
    assert (summary.total, summary.done, summary.failed, summary.skipped) == (5, 5, 0, 0)
    assert store.results["stage/003"] == {"echo": "job-003 reply in json"}
    assert seen == [1, 2, 3, 4, 5]
    js = JobStore(llm_files(tmp_path).state)
    assert js.counts() == {"done": 5}
    assert js.status("relations", "stage/002")[2] == "ref:stage/002"  # type: ignore[index]

    again = run_jobs(make_jobs(5), llm, handler=store)
    assert (again.done, again.skipped) == (0, 5)
    assert len(llm_stub.requests) == 5


def test_exhausted_retries_write_errors_row_and_the_run_goes_on(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.script("job-001", Reply.server_error())
    llm_stub.script("job-003", Reply.unauthorized())
    llm = make_llm(tmp_path, stub_env(llm_stub, LLM_MAX_RETRIES="2"))
    store = Store()
    summary = run_jobs(make_jobs(5), llm, handler=store)
    assert (summary.done, summary.failed) == (3, 2)
    assert sorted(store.results) == ["stage/000", "stage/002", "stage/004"]
    rows = [json.loads(x) for x in llm_files(tmp_path).errors.read_text().splitlines()]
    by_key = {r["key"]: r for r in rows}
    assert set(by_key) == {"stage/001", "stage/003"}
    assert by_key["stage/001"]["attempts"] == 3 and "HTTP 500" in by_key["stage/001"]["reason"]
    assert by_key["stage/003"]["attempts"] == 1 and "Permanent" in by_key["stage/003"]["reason"]
    assert {r["task"] for r in rows} == {"relations"} and all(r["time"] for r in rows)
    assert {r["model"] for r in rows} == {"stub-model"}
    assert JobStore(llm_files(tmp_path).state).counts() == {"done": 3, "failed": 2}

    # failed jobs are tried again on resume; done ones are not
    llm_stub._rules.clear()
    second = run_jobs(make_jobs(5), llm, handler=store)
    assert (second.done, second.skipped, second.failed) == (2, 3, 0)


def test_resume_after_interrupt_matches_uninterrupted_run(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    env = stub_env(llm_stub)
    reference = Store()
    run_jobs(make_jobs(12), make_llm(tmp_path / "ref", env), handler=reference)

    home = tmp_path / "run"
    interrupted = Store()

    def dies_midway(job: Job, result: ChatResult) -> str:
        if interrupted.calls == 5:
            raise KeyboardInterrupt  # as if Ctrl-C arrived while storing the 6th result
        return interrupted(job, result)

    with pytest.raises(KeyboardInterrupt):
        run_jobs(make_jobs(12), make_llm(home, env), handler=dies_midway, concurrency=3)
    assert JobStore(llm_files(home).state).counts() == {"done": 5}

    resumed = run_jobs(make_jobs(12), make_llm(home, env), handler=interrupted)
    assert resumed.skipped == 5 and resumed.done == 7
    assert interrupted.calls == 12  # each job handled exactly once overall
    assert interrupted.results == reference.results
    assert JobStore(llm_files(home).state).counts() == {"done": 12}


def test_resume_redoes_jobs_whose_prompt_changed(llm_stub: StubServer, tmp_path: Path) -> None:
    llm = make_llm(tmp_path, stub_env(llm_stub))
    run_jobs(make_jobs(3), llm, handler=Store())
    summary = run_jobs(make_jobs(3, version="2"), llm, handler=Store())
    assert (summary.done, summary.skipped) == (3, 0)
    no_resume = run_jobs(make_jobs(3, version="2"), llm, handler=Store(), resume=False)
    assert (no_resume.done, no_resume.cached) == (3, 3)  # redone, but free from the cache


def test_concurrency_limit_is_respected(llm_stub: StubServer, tmp_path: Path) -> None:
    llm_stub.default = lambda body: Reply.slow(0.05, Reply.json({"ok": True}))
    summary = run_jobs(
        make_jobs(16),
        make_llm(tmp_path, stub_env(llm_stub)),
        handler=Store(),
        concurrency=3,
    )
    assert summary.done == 16
    assert llm_stub.max_in_flight == 3


KILL_SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_llm_jobs import make_jobs
from support.llm_stub import make_llm
from arklore.llm import run_jobs
import sqlite3

home = Path({home!r})
out = sqlite3.connect(home / "out.sqlite3", isolation_level=None)
out.execute("CREATE TABLE IF NOT EXISTS r (key TEXT PRIMARY KEY, data TEXT, n INTEGER)")

def handler(job, result):
    out.execute("INSERT INTO r VALUES (?, ?, 1) ON CONFLICT(key) DO UPDATE SET n = n + 1",
                (job.key, result.content))
    return job.key

env = {env!r}
run_jobs(make_jobs(20), make_llm(home, env), handler=handler, concurrency=2)
print("finished")
"""


@pytest.mark.slow  # a subprocess killed mid-run: seconds
def test_resume_after_sigkill_loses_only_in_flight_requests(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.default = lambda body: Reply.slow(
        0.03, Reply.json({"k": body["messages"][-1]["content"]})
    )
    home = tmp_path / "home"
    home.mkdir()
    script = KILL_SCRIPT.format(tests=str(TESTS), home=str(home), env=stub_env(llm_stub))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    deadline = time.monotonic() + 20
    state = llm_files(home).state
    while time.monotonic() < deadline:
        if state.exists():
            try:
                n = sqlite3.connect(state).execute("SELECT COUNT(*) FROM llm_jobs").fetchone()[0]
            except sqlite3.OperationalError:
                n = 0
            if n >= 6:
                break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = JobStore(state).counts().get("done", 0)
    assert 6 <= done_before < 20, "the child was not killed midway"
    requests_before = len(llm_stub.requests)

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "finished" in out.stdout, out.stderr
    rows = sqlite3.connect(home / "out.sqlite3").execute("SELECT key, data, n FROM r").fetchall()
    assert sorted(k for k, _, _ in rows) == [f"stage/{i:03d}" for i in range(20)]
    assert all(json.loads(d) == {"k": f"job-{k[-3:]} reply in json"} for k, d, _ in rows)
    # only jobs whose handler ran but whose progress commit was cut off may run twice
    assert sum(n for _, _, n in rows) <= 20 + 1
    assert JobStore(state).counts() == {"done": 20}
    # requests: the second run asks only what was not done (in-flight ones at most twice)
    assert len(llm_stub.requests) - requests_before <= 20 - done_before + 2


def test_api_key_is_never_written_to_any_file_or_log(
    llm_stub: StubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # includes openai/httpx debug logging
    llm_stub.script("job-000", Reply.unauthorized())
    llm_stub.script("job-001", Reply.server_error())
    llm_stub.script("job-002", Reply.malformed(), Reply.json({"ok": 1}))
    llm = make_llm(tmp_path, stub_env(llm_stub, LLM_MAX_RETRIES="1"))
    summary: JobsSummary = run_jobs(make_jobs(4), llm, handler=Store())
    assert (summary.done, summary.failed) == (2, 2)
    llm.format_cost_line()
    llm.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "llm_errors.jsonl" for p in files) and len(files) >= 3
    for path in files:
        assert TEST_KEY.encode() not in path.read_bytes(), path
    assert caplog.records, "expected some log output to check"
    assert TEST_KEY not in caplog.text
    for rec in caplog.records:
        assert TEST_KEY not in rec.getMessage()
