"""`arklore serve` as a subprocess on a free loopback port: for the tests that need the real
server (several workers, turn worker processes, what reaches the socket)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

SRC = str(Path(__file__).resolve().parents[2] / "src")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Served:
    base: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def rss_kb(self, pid: int | None = None) -> int:
        """Resident memory of the server process (or ``pid``) from /proc, in KiB."""
        for line in Path(f"/proc/{pid or self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def children(self) -> list[int]:
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(x) for x in path.read_text().split()]


def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("the server never became ready")


@contextmanager
def served(home: Path, *args: str, **env: str) -> Iterator[Served]:
    """``arklore serve --port <free> *args`` over ``home`` (hash embedder, no LLM), ready."""
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "PROMETHEUS_"))}
    full.update(ARKLORE_HOME=str(home), ARKLORE_EMBEDDER="hash", NO_PROXY="127.0.0.1",
                PYTHONPATH=SRC, **env)  # fmt: skip
    cmd = [sys.executable, "-m", "arklore", "serve", "--port", str(port),
           "--log-level", "warning", *args]  # fmt: skip
    log = open(home.parent / f"serve-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=full, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc)
        yield Served(base, port, proc, Path(log.name))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
