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

from arklore.config import Settings
from arklore.core.errors import ArkloreError
from arklore.corpus.ingest import ingest
from arklore.corpus.store import Store


def read_and_parse(settings: Settings) -> int:
    """The baseline: read every file and parse it, store nothing."""
    from arklore.sources import astr, avg

    n = 0
    for root, files, read in (
        (settings.avg_story_root(), avg.iter_avg_files, avg.read_avg_stage),
        (settings.astr_story_root(), astr.iter_astr_files, astr.read_astr_stage),
    ):
        for f in files(root):
            with contextlib.suppress(ArkloreError):  # the baseline counts what parses
                n += len(read(root, f).lines)
    return n


def main() -> None:
    env = Settings.from_env()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp), gamedata=env.gamedata, astr=env.astr)
        t0 = time.perf_counter()
        lines = read_and_parse(settings)
        t_parse = time.perf_counter() - t0

        with Store(settings.db_path) as store:
            t0 = time.perf_counter()
            first = ingest(settings, store)
            t_first = time.perf_counter() - t0
            t0 = time.perf_counter()
            second = ingest(settings, store)
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
