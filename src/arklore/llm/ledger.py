"""Cost ledger: one row per request (cached answers included, at zero cost), so every run
can end with a cost line and past spending stays auditable."""

from __future__ import annotations

import time
from pathlib import Path

from arklore.base.db import Database, Migration
from arklore.llm.config import Prices
from arklore.llm.types import CostSummary, Usage

SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_requests (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    ts REAL NOT NULL,
    task TEXT NOT NULL,
    key TEXT NOT NULL,
    model TEXT NOT NULL,
    from_cache INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    input_hit INTEGER NOT NULL,
    input_miss INTEGER NOT NULL,
    output INTEGER NOT NULL,
    cost_usd REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS llm_requests_run ON llm_requests (run_id)
"""
MIGRATIONS = (Migration("llm", "ledger_001_requests", SCHEMA),)


class CostLedger:
    """``home/llm_state.sqlite3`` table ``llm_requests``."""

    def __init__(self, path: Path) -> None:
        self.db = Database(path, MIGRATIONS)

    def record(
        self,
        *,
        run_id: str,
        task: str,
        key: str,
        model: str,
        usage: Usage,
        prices: Prices,
        from_cache: bool = False,
        ok: bool = True,
    ) -> float:
        """Store one request (a failed attempt that returned tokens still costs); return its cost."""
        cost = (
            0.0
            if from_cache
            else prices.cost(
                usage.prompt_cache_hit_tokens,
                usage.prompt_cache_miss_tokens,
                usage.completion_tokens,
            )
        )
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO llm_requests (run_id, ts, task, key, model, from_cache, ok,"
                " input_hit, input_miss, output, cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    time.time(),
                    task,
                    key,
                    model,
                    int(from_cache),
                    int(ok),
                    0 if from_cache else usage.prompt_cache_hit_tokens,
                    0 if from_cache else usage.prompt_cache_miss_tokens,
                    0 if from_cache else usage.completion_tokens,
                    cost,
                ),
            )
        return cost

    def summary(self, run_id: str | None = None) -> CostSummary:
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
        row = self.db.query(
            "SELECT COUNT(*), COALESCE(SUM(from_cache),0), COALESCE(SUM(1-ok),0),"
            " COALESCE(SUM(input_hit),0), COALESCE(SUM(input_miss),0), COALESCE(SUM(output),0),"
            f" COALESCE(SUM(cost_usd),0) FROM llm_requests {where}",
            params,
        )[0]
        requests, cached, failed, hit, miss, output = (int(v) for v in row[:6])
        return CostSummary(requests, cached, failed, hit, miss, output, float(row[6]))

    def close(self) -> None:
        self.db.close()


def format_cost_line(summary: CostSummary) -> str:
    """The line every LLM run ends with."""
    s = summary
    return (
        f"LLM: {s.requests} requests ({s.cached} cached, {s.failed} failed), "
        f"input {s.input_hit + s.input_miss:,} tokens (cache hit {s.input_hit:,} / miss "
        f"{s.input_miss:,}), output {s.output:,} tokens, cost ${s.cost_usd:.4f}"
    )
