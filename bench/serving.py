"""What the benchmarks that start servers share: wait until one answers, stop them all."""

from __future__ import annotations

import signal
import subprocess
import time


def wait_ready(
    base: str, proc: subprocess.Popen, what: str, path: str = "/readyz", limit: float = 300
) -> float:
    """Seconds until ``base + path`` answers 200; SystemExit naming ``what`` when the process
    exits first or ``limit`` seconds pass."""
    import httpx

    t0 = time.perf_counter()
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited")
        try:
            if httpx.get(base + path, timeout=5).status_code == 200:
                return time.perf_counter() - t0
        except httpx.HTTPError:
            pass
        if time.perf_counter() - t0 > limit:
            raise SystemExit(f"{what} was not ready in {limit:.0f} s")
        time.sleep(0.2)


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every process, then wait for each (killed after 30 s)."""
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
