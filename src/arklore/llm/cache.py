"""Response cache: identical requests are answered from SQLite, so reruns cost nothing and
give identical results. Only answers that passed validation are stored."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from arklore.base.db import Database, Migration
from arklore.llm.types import Usage, sha256_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    content TEXT NOT NULL,
    usage TEXT NOT NULL,
    created REAL NOT NULL
)
"""
MIGRATIONS = (Migration("llm", "cache_001_responses", SCHEMA),)


def cache_key(
    *,
    model: str,
    messages: list[dict[str, str]],
    temperature: float,
    max_tokens: int | None,
    json_mode: bool,
    extra_body: dict[str, Any],
    prompt_version: str,
) -> str:
    """sha256 over the model, every sampling parameter, the messages and the prompt version."""
    return sha256_json(
        {
            "model": model,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "json_mode": json_mode,
            "extra_body": extra_body,
            "messages": messages,
            "prompt_version": prompt_version,
        }
    )


class ResponseCache:
    """``home/llm_cache.sqlite3``; each put is one committed transaction."""

    def __init__(self, path: Path) -> None:
        self.db = Database(path, MIGRATIONS)

    def get(self, key: str) -> tuple[str, Usage] | None:
        rows = self.db.query("SELECT content, usage FROM responses WHERE key = ?", (key,))
        if not rows:
            return None
        content, usage = rows[0]
        return content, Usage.from_dict(orjson.loads(usage))

    def put(self, key: str, *, task: str, model: str, content: str, usage: Usage) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, task, model, content, usage, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, task, model, content, orjson.dumps(usage.to_dict()).decode(), time.time()),
            )

    def __len__(self) -> int:
        return int(self.db.query("SELECT COUNT(*) FROM responses")[0][0])

    def close(self) -> None:
        self.db.close()
