"""Her scenes on the real corpus: the scenes step spread over worker processes ranks exactly
as the one-process step did, on every message of the fidelity eval."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.tree_world import make_workspace

from arklore.chat.fidelity import load_items

pytestmark = pytest.mark.realdata

K = 5


def test_scenes_built_in_worker_processes_give_the_same_top_k_on_the_fidelity_messages(
    real_store_path: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(real_store_path) as src, sqlite3.connect(home / "arklore.sqlite3") as dst:
        src.backup(dst)  # the shared store is only read
    items = load_items()
    ranked: list[list[list[tuple[str, tuple[str, ...], float]]]] = []
    for workers in (1, 2):  # one process (the step as it was), then the pool
        with make_workspace(home, embedder="hash", workers=workers) as ws:
            report = ws.rag.index_exemplars(force=True)
            assert report.windows > 50_000
            got = []
            for item in items:
                family = ws.names.family(ws.names.resolve(item.operator))
                named = [ws.names.family(c)[0] for c in ws.names.mentioned(item.message)]
                scenes = ws.rag.exemplars(family, item.message, named, k=K)
                got.append([(s.stage_path, tuple(s.line_ids), round(s.score, 9)) for s in scenes])
            ranked.append(got)
    one, pool = ranked
    assert sum(1 for g in one if g) > len(items) // 2
    differ = [(i.id, a, b) for i, a, b in zip(items, one, pool, strict=True) if a != b]
    assert differ == [], differ[:3]
