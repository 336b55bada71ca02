"""The rag layer's tables in the store, as named migrations (see :mod:`arklore.base.db`).

``scene_windows``: her scenes (:mod:`arklore.rag.exemplars`): short runs of one stage's lines
in which she speaks, one row per window and operator, with its line ids (the text stays in the
corpus tables), its tokens, who is there and whether the Doctor is. ``stage_terms``: per
stage, the tokens of its official summary and the people in it (the story's names that speak
or are written there). ``scene_meta``: what the windows were computed from (the names state
and the windowing rule), so an unchanged build is skipped.
"""

from __future__ import annotations

from arklore.base.db import Migration

_SCENES = """
CREATE TABLE IF NOT EXISTS scene_windows (
    id INTEGER PRIMARY KEY,
    base_id TEXT NOT NULL,            -- the operator: her base form's id
    stage_path TEXT NOT NULL,
    first_line INTEGER NOT NULL,
    last_line INTEGER NOT NULL,
    order_rank INTEGER,               -- the stage's story order
    lines TEXT NOT NULL,              -- JSON [[line_id, kind, speaker, hers, option]]: text in `lines`
    tokens TEXT NOT NULL,             -- space-separated tokens of every line
    her_tokens TEXT NOT NULL,         -- space-separated tokens of her lines
    people TEXT NOT NULL,             -- JSON: who speaks or is named there (base ids, npc:<name>)
    doctor INTEGER NOT NULL,          -- 0 absent, 1 present (a choice, Dr.{@nickname}), 2 she calls him
    hers INTEGER NOT NULL,            -- how many of the lines are hers
    size INTEGER NOT NULL             -- how many lines
);
CREATE INDEX IF NOT EXISTS scene_windows_by_base ON scene_windows (base_id, stage_path);

CREATE TABLE IF NOT EXISTS stage_terms (
    stage_path TEXT PRIMARY KEY,
    tokens TEXT NOT NULL,             -- space-separated tokens of its name and official summary
    people TEXT NOT NULL              -- JSON: the names that speak or are written in its lines
);

CREATE TABLE IF NOT EXISTS scene_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

MIGRATIONS: tuple[Migration, ...] = (Migration("rag", "001_scene_windows", _SCENES),)
