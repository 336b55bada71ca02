"""Per task and operator, the result of a distillation task, kept in ``distill_results``.

Every task (A-E) stores one :class:`TaskResult` per operator; profiles are assembled from
the stored results, never straight from a model's answer. Rows are replaced whole (one
transaction per write), so a retry, a resume or a rerun never duplicates anything.

``output`` by task (JSON):

* A ``{"facts": <n copied>, "core": str | null}``;
* B ``{"quotes": [{"text", "source_id", "note"}], "personality": str | null, "origin": str}``;
* C ``{"about_doctor": str | null, "quotes": [{"text", "source_id", "note"}], "origin": str}``
  (the model's paragraph, her lines to the Doctor by the rule; results stored before the rule
  existed have no ``quotes``: assembly then runs the rule);
* D ``{"people": [{"target", "name", "view", "docs": [doc_id]}], "docs": [doc_id]}``;
* E ``{"candidates": [str]}``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from arklore.corpus.store import Store

OK, SKIPPED, FAILED = "ok", "skipped", "failed"
TASKS: tuple[str, ...] = ("A", "B", "C", "D", "E")


@dataclass(slots=True)
class TaskResult:
    task: str  # A | B | C | D | E
    char_id: str
    status: str  # ok | skipped | failed
    reason: str = ""
    output: dict[str, Any] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    model: str = ""  # "" = no model (the documented rule, or nothing ran)
    fingerprint: str = ""
    updated: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "char_id": self.char_id,
            "status": self.status,
            "reason": self.reason,
            "output": self.output,
            "findings": list(self.findings),
            "model": self.model,
        }


_COLS = "task, char_id, status, reason, output, findings, model, fingerprint, updated"


def save_results(store: Store, results: Iterable[TaskResult]) -> None:
    """Replace the rows of ``results`` in one transaction."""
    now = time.time()
    rows = [
        (
            r.task, r.char_id, r.status, r.reason,
            orjson.dumps(r.output).decode(), orjson.dumps(r.findings).decode(),
            r.model, r.fingerprint, r.updated or now,
        )
        for r in results
    ]  # fmt: skip
    if not rows:
        return
    with store.transaction() as c:
        c.executemany(
            f"INSERT OR REPLACE INTO distill_results ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?)", rows
        )


def _row(row: tuple[Any, ...]) -> TaskResult:
    task, cid, status, reason, output, findings, model, fp, updated = row
    return TaskResult(
        task, cid, status, reason, orjson.loads(output), orjson.loads(findings), model, fp, updated
    )


def load_results(
    store: Store, char_ids: Iterable[str] | None = None
) -> dict[str, dict[str, TaskResult]]:
    """char id -> task -> its stored result (all operators when ``char_ids`` is None)."""
    out: dict[str, dict[str, TaskResult]] = {}
    if char_ids is None:
        rows = store.conn.execute(f"SELECT {_COLS} FROM distill_results").fetchall()
    else:
        ids = sorted(set(char_ids))
        rows = []
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            rows += store.conn.execute(
                f"SELECT {_COLS} FROM distill_results WHERE char_id IN"
                f" ({','.join('?' * len(part))})",
                part,
            ).fetchall()
    for row in rows:
        r = _row(row)
        out.setdefault(r.char_id, {})[r.task] = r
    return out


def reusable(stored: TaskResult | None, fingerprint: str, model: str) -> bool:
    """Resume: the stored result came from the very same request and model."""
    return (
        stored is not None
        and stored.status == OK
        and stored.fingerprint == fingerprint
        and stored.model == model
    )
