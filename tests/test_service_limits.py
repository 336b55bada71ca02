"""The real `arklore serve` under hostile requests: a 300 MB body is refused (413, the
service's error shape) before it is read, with the server's resident memory growing less
than 20 MB, whether the body announces its length or streams in chunks; turns run in a
worker process of their own, and their errors come back as the same answers."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from support.serve_proc import Served, served
from support.service_world import AMIYA, make_kb

pytestmark = pytest.mark.slow

BODY = 300 * 1024 * 1024
CHUNK = 1024 * 1024
RSS_GROWTH_KB = 20 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = make_kb(tmp_path_factory.mktemp("limits") / "home")
    with served(home) as s:
        for _ in range(3):  # what a turn loads is loaded before measuring
            assert httpx.post(s.base + "/v1/turn", json={"operator": "阿米娅",
                              "message": "陈和星熊"}, timeout=60).status_code == 200  # fmt: skip
        yield s


class Peak:
    """The server's largest resident memory while a block runs (sampled every 20 ms)."""

    def __init__(self, server: Served) -> None:
        self.server, self.peak, self._stop = server, server.rss_kb(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.server.rss_kb())
            time.sleep(0.02)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.2)
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.server.rss_kb())


def upload(port: int, chunked: bool) -> tuple[bytes, int]:
    """POST a 300 MB body to /v1/turn (sent while the answer is read); the raw answer and
    how many body bytes the server let us send before it closed."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = b"POST /v1/turn HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    head += (
        b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: %d\r\n\r\n" % BODY
    )
    sock.sendall(head)
    answer = bytearray()

    def read() -> None:
        try:
            while chunk := sock.recv(65536):
                answer.extend(chunk)
        except OSError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    sent, piece = 0, b"x" * CHUNK
    frame = (b"%x\r\n" % CHUNK + piece + b"\r\n") if chunked else piece
    try:
        while sent < BODY:
            sock.sendall(frame)
            sent += CHUNK
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:  # the server answered and closed the connection
        pass
    reader.join(timeout=30)
    sock.close()
    return bytes(answer), sent


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_300_mb_body_is_refused_before_it_is_read(server: Served, chunked: bool, metrics) -> None:
    before = server.rss_kb()
    with Peak(server) as peak:
        answer, sent = upload(server.port, chunked)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), answer[:300]
    err = orjson.loads(body)
    assert err["error"] == "body_too_large" and "ARKLORE_MAX_BODY_BYTES" in err["hint"]
    assert sent < BODY  # refused, not read to the end
    growth = peak.peak - before
    metrics(f"300 MB body ({'chunked' if chunked else 'Content-Length'}): 413 after "
            f"{sent / CHUNK:.0f} MB sent, server RSS +{growth / 1024:.1f} MB (goal < 20 MB)")  # fmt: skip
    assert growth < RSS_GROWTH_KB, f"RSS grew {growth} KiB"
    assert httpx.get(server.base + "/healthz", timeout=5).json()["ok"] is True


def test_a_body_within_the_limit_still_works(server: Served) -> None:
    r = httpx.post(server.base + "/v1/turn", timeout=60,
                   json={"operator": "阿米娅", "message": "你好" * 3000})  # fmt: skip
    assert r.status_code == 200 and r.json()["operator"]["id"] == AMIYA


def test_turns_run_in_a_worker_process_and_errors_come_back_unchanged(server: Served) -> None:
    r = httpx.post(server.base + "/v1/turn", json={"operator": "阿米亚", "message": "你好"})
    assert r.status_code == 404 and "阿米娅" in r.json()["closest"]
    r = httpx.post(server.base + "/v1/relation-context",
                   json={"operator": "阿米娅", "message": "长" * 8001})  # fmt: skip
    assert r.status_code == 413 and r.json()["limit"] == 8000
    kids = server.children()
    assert kids, "no turn worker process"
    cmdlines = [Path(f"/proc/{k}/cmdline").read_bytes() for k in kids]
    assert any(b"multiprocessing" in c for c in cmdlines), cmdlines
