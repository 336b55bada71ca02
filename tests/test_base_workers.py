"""Worker processes (:func:`arklore.base.workers.spawn_pool`) do not outlive a command killed
outright: with no pool left to stop them, they notice and exit instead of waiting for work
forever (a killed ``arklore build`` would otherwise leave its embedding workers behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

COMMAND = """
import os, sys
from arklore.base.workers import spawn_pool

def pid(_: int) -> int:
    return os.getpid()

if __name__ == "__main__":
    pool = spawn_pool(1)
    print(pool.submit(pid, 0).result(), flush=True)
    os.kill(os.getpid(), 9)  # killed outright: no shutdown, no atexit
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_worker_whose_command_was_killed_exits_by_itself(tmp_path: Path) -> None:
    script = tmp_path / "command.py"
    script.write_text(COMMAND, encoding="utf-8")
    out = tmp_path / "out.txt"
    with out.open("w") as stdout:  # a file, not a pipe: a worker left behind holds it open
        code = subprocess.Popen(
            [sys.executable, str(script)], stdout=stdout,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        ).wait(timeout=120)  # fmt: skip
    assert code == -signal.SIGKILL
    worker = int(out.read_text().split()[0])
    deadline = time.monotonic() + 60  # a bound on the wait, not a measure: it takes ~1 s
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    still = alive(worker)
    if still:
        os.kill(worker, signal.SIGKILL)  # leave nothing behind, then fail
    assert not still, "the worker outlived the command that started it"
