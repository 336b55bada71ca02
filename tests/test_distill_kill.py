"""Killing `arklore distill` (SIGKILL of the subprocess) and resuming gives the same files,
byte for byte, as a run that was never interrupted; requests answered before the kill are
not sent again; a killed run never leaves half a profile."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.distill_fake import Fake
from support.llm_stub import stub_env
from support.profiles_world import AT, make_home

from arklore.profiles.charfile import CharProfile


def _env(stub, home: Path, gamedata: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "ARKLORE_"))}
    return (
        env
        | stub_env(stub)
        | {
            "ARKLORE_HOME": str(home),
            "ARKLORE_GAMEDATA": str(gamedata),
            "PYTHONUNBUFFERED": "1",
        }
    )


def _cmd() -> list[str]:
    return [sys.executable, "-m", "arklore", "distill", "--concurrency", "1", "--generated-at", AT]


def _model_results(home: Path) -> int:
    db = home / "arklore.sqlite3"
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            row = c.execute("SELECT COUNT(*) FROM distill_results WHERE model != ''").fetchone()
            n: int = row[0]
            return n
    except sqlite3.OperationalError:
        return 0


def _files(home: Path) -> dict[str, bytes]:
    d = home / "chars"
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.is_dir() else {}


def _run_to_end(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(_cmd(), env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _run_and_kill(env: dict[str, str], home: Path, after_results: int) -> None:
    p = subprocess.Popen(_cmd(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while _model_results(home) < after_results:
            assert p.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL


@pytest.mark.slow  # several SIGKILLed runs: part of `make test`, not the fast loop
def test_kill_and_resume_gives_the_files_of_an_uninterrupted_run(tmp_path: Path, llm_stub) -> None:
    fake = Fake(delay=0.1)
    llm_stub.default = fake
    home_a, gd_a = make_home(tmp_path / "a")
    _run_to_end(_env(llm_stub, home_a, gd_a))
    expected = _files(home_a)
    jobs = len(llm_stub.requests)
    assert len(expected) == 3 and jobs >= 9

    home_b, gd_b = make_home(tmp_path / "b")
    env_b = _env(llm_stub, home_b, gd_b)
    llm_stub.requests.clear()
    _run_and_kill(env_b, home_b, after_results=3)
    done_before = _model_results(home_b)
    assert 3 <= done_before < jobs
    # whatever profile exists after a kill is whole: a generated file whose hash matches
    for path in (home_b / "chars").glob("*.char"):
        prof = CharProfile.read(path)
        assert prof.tier == "B" and not prof.hand_edited
    _run_and_kill(env_b, home_b, after_results=done_before + 2)  # killed a second time
    sent = len(llm_stub.requests)
    _run_to_end(env_b)
    # answers stored before a kill were not asked for again (at most the one in flight was)
    assert len(llm_stub.requests) - sent <= jobs - (done_before + 2) + 1
    assert _files(home_b) == expected
    assert not list((home_b / "chars").glob(".*.tmp"))
