"""Jobs given up on go to ``home/llm_errors.jsonl`` (one JSON object per line) so a run can
go on and a human can see later what was skipped and why."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import orjson
from filelock import FileLock

from arklore.llm.config import redact


class ErrorLog:
    """Append-only JSONL, safe across threads and processes; API keys are redacted."""

    def __init__(self, path: Path, secrets: Sequence[str] = ()) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._secrets = tuple(secrets)
        self._lock = threading.Lock()
        self._file_lock = FileLock(str(path) + ".lock")

    def record(
        self, *, key: str, task: str, reason: str, attempts: int, run_id: str = "", model: str = ""
    ) -> None:
        row = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "run_id": run_id,
            "key": key,
            "task": task,
            "model": model,
            "reason": redact(reason, self._secrets),
            "attempts": attempts,
        }
        line = orjson.dumps(row) + b"\n"
        with self._lock, self._file_lock, self.path.open("ab") as fh:
            fh.write(line)

    def rows(self) -> list[dict[str, object]]:
        if not self.path.exists():
            return []
        return [orjson.loads(x) for x in self.path.read_bytes().splitlines() if x.strip()]
