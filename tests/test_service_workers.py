"""`arklore serve --workers 2`: two processes over one ARKLORE_HOME answer the same, and the
metrics add up over both workers."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from support.serve_proc import served
from support.service_world import AMIYA, make_kb

pytestmark = pytest.mark.slow


def test_two_workers_share_one_home(tmp_path: Path) -> None:
    home = make_kb(tmp_path / "home")
    with served(home, "--workers", "2") as srv:
        base = srv.base

        def one(i: int) -> tuple[int, int, str]:
            with httpx.Client(base_url=base, timeout=10) as c:  # a new connection each time
                r = c.post("/v1/turn", json={"operator": "阿米娅", "message": f"陈和星熊{i}"})
                pid = c.get("/healthz").json()["pid"]
                return r.status_code, pid, r.json()["operator"]["id"]

        # the kernel hands each new connection to one worker: send rounds of concurrent
        # requests until both have answered (bounded)
        results: list[tuple[int, int, str]] = []
        deadline = time.monotonic() + 60
        with ThreadPoolExecutor(16) as pool:
            while len({p for _, p, _ in results}) < 2 and time.monotonic() < deadline:
                results += pool.map(one, range(len(results), len(results) + 64))
        n = len(results)
        assert {s for s, _, _ in results} == {200}
        assert {op for _, _, op in results} == {AMIYA}
        pids = {pid for _, pid, _ in results}
        assert len(pids) == 2, pids  # both workers answered
        text = ""
        for _ in range(4):  # whichever worker answers, the totals are over both
            text = httpx.get(base + "/metrics", timeout=5).text
            m = re.search(r'arklore_http_requests_total\{method="POST",route="/v1/turn",'
                          r'status="200"\} ([0-9.]+)', text)  # fmt: skip
            assert m and float(m.group(1)) == n
        turns = re.search(r"arklore_turns_total ([0-9.]+)", text)
        assert turns and turns.group(1) == f"{n}.0"
