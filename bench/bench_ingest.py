"""Ingest cost against the cost of merely reading and parsing the same files.

Issue #2 acceptance: a full ingest takes no more than 4x the read+parse baseline, and a
second ingest with nothing changed takes under 10% of the first. Both are measured here,
in one run, on the real data (ARKLORE_GAMEDATA / ARKLORE_ASTR).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

from arklore.core.errors import ArkloreError
from arklore.settings import Settings
from arklore.sources import astr, avg
from arklore.sources.roots import DataRoots
from arklore.workspace import Workspace


def read_and_parse(roots: DataRoots) -> int:
    """The baseline: read every file and parse it, store nothing."""
    n = 0
    for root, files, read in (
        (roots.avg_story_root(), avg.iter_avg_files, avg.read_avg_stage),
        (roots.astr_story_root(), astr.iter_astr_files, astr.read_astr_stage),
    ):
        for f in files(root):
            with contextlib.suppress(ArkloreError):  # the baseline counts what parses
                n += len(read(root, f).lines)
    return n


def main() -> None:
    env = Settings.from_env()  # a benchmark is an entry point: it reads the environment
    with tempfile.TemporaryDirectory() as tmp:
        settings = env.model_copy(update={"home": Path(tmp)})
        t0 = time.perf_counter()
        lines = read_and_parse(DataRoots(settings.gamedata, settings.astr))
        t_parse = time.perf_counter() - t0

        with Workspace(settings) as ws:
            t0 = time.perf_counter()
            first = ws.ingest()
            t_first = time.perf_counter() - t0
            t0 = time.perf_counter()
            second = ws.ingest()
            t_second = time.perf_counter() - t0
    print(f"read+parse only     : {t_parse:7.2f} s  ({lines:,} lines)")
    print(
        f"full ingest         : {t_first:7.2f} s  ratio to read+parse {t_first / t_parse:.2f}x (limit 4x)"
    )
    print(
        f"second ingest (noop): {t_second:7.2f} s  ratio to first ingest {t_second / t_first:.1%} (limit 10%)"
    )
    assert not second.changed, "the second ingest changed something"
    print(f"stored: {first.counts}")


if __name__ == "__main__":
    main()
