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
from typing import BinaryIO

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
    with served_many(home, 1, *args, **env) as (one,):
        yield one


@contextmanager
def served_many(home: Path, n: int, *args: str, **env: str) -> Iterator[list[Served]]:
    """``n`` servers as :func:`served` makes one, started together (each on its own port;
    they warm up at the same time), all ready."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "PROMETHEUS_"))}
    full.update(ARKLORE_HOME=str(home), ARKLORE_EMBEDDER="hash", NO_PROXY="127.0.0.1",
                PYTHONPATH=SRC, **env)  # fmt: skip
    started: list[tuple[Served, BinaryIO]] = []
    try:
        for _ in range(n):
            port = free_port()
            cmd = [sys.executable, "-m", "arklore", "serve", "--port", str(port),
                   "--log-level", "warning", *args]  # fmt: skip
            log = open(home.parent / f"serve-{port}.log", "wb")  # noqa: SIM115 - closed below
            proc = subprocess.Popen(cmd, env=full, stdout=log, stderr=subprocess.STDOUT)
            started.append((Served(f"http://127.0.0.1:{port}", port, proc, Path(log.name)), log))
        for srv, _ in started:
            wait_ready(srv.base, srv.proc)
        yield [srv for srv, _ in started]
    finally:
        for srv, _ in started:
            srv.proc.send_signal(signal.SIGTERM)
        for srv, out in started:
            try:
                srv.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.proc.kill()
                srv.proc.wait()
            out.close()
