"""The rag layer's tables in the store, as named migrations (see :mod:`arklore.base.db`).

``scene_windows``: her scenes (:mod:`arklore.rag.exemplars`): short runs of one stage's lines
in which she speaks, one row per window and operator, with the lines as the story has them
(and their tokens), who is there and whether the Doctor is. ``stage_terms``: the tokens of
each stage's official summary. ``scene_meta``: what the windows were computed from (the
names state and the windowing rule), so an unchanged build is skipped.
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
    lines TEXT NOT NULL,              -- JSON [[line_id, kind, speaker, text, hers, option, tokens]]
    people TEXT NOT NULL,             -- JSON: operators (base ids) and npc:<speaker> there
    doctor INTEGER NOT NULL,          -- 0 absent, 1 present (a choice, Dr.{@nickname}), 2 she calls him
    hers INTEGER NOT NULL             -- how many of the lines are hers
);
CREATE INDEX IF NOT EXISTS scene_windows_by_base ON scene_windows (base_id, stage_path);

CREATE TABLE IF NOT EXISTS stage_terms (
    stage_path TEXT PRIMARY KEY,
    tokens TEXT NOT NULL              -- space-separated tokens of its name and official summary
);

CREATE TABLE IF NOT EXISTS scene_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

MIGRATIONS: tuple[Migration, ...] = (Migration("rag", "001_scene_windows", _SCENES),)
