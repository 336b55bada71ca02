"""The profiles layer's tables, as named migrations (see :mod:`arklore.base.db`).

``distill_results``: one row per (task, operator): the checked result of the last run of that
task for her (``ok``), or why there is none (``skipped`` / ``failed``), what the rule checks
removed or replaced (``findings``), and the request fingerprint and model that resume trusts.
Profiles are assembled from these rows, so a killed run loses at most the requests in flight.
"""

from __future__ import annotations

from arklore.base.db import Migration

_DISTILL = """
CREATE TABLE IF NOT EXISTS distill_results (
    task TEXT NOT NULL,                 -- A | B | C | D | E
    char_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'skipped', 'failed')),
    reason TEXT NOT NULL DEFAULT '',
    output TEXT NOT NULL DEFAULT '{}',  -- JSON: the checked result (see profiles/results.py)
    findings TEXT NOT NULL DEFAULT '[]',-- JSON [str]: what the gates removed or replaced
    model TEXT NOT NULL DEFAULT '',     -- '' when no model was used (the documented rule)
    fingerprint TEXT NOT NULL DEFAULT '',  -- ChatRequest.fingerprint(), or a hash of the inputs
    updated REAL NOT NULL,
    PRIMARY KEY (task, char_id)
);
"""

MIGRATIONS: tuple[Migration, ...] = (Migration("profiles", "001_distill", _DISTILL),)
