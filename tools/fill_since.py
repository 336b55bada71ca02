#!/usr/bin/env python3
"""Propose, or write, the ``since`` of every curated relation that lacks one: the stage of its
earliest evidence line in the project's story order (:mod:`arklore.corpus.story`).

Usage (a built home with the real data):
    ARKLORE_HOME=... python3 tools/fill_since.py [MATRIX] [--write]

Without ``--write`` it prints one line per entry (from, to, the proposed stage, where that
stage stands in the story: main / curated / backstory / fallback). With ``--write`` it adds a
``since = "..."`` line after each entry's ``evidence`` line, in place (atomically); entries that
already say ``since`` are left as they are. A curator then reads the description against the
stage: a description that tells of something later than ``since`` must be reworded or dated
later by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from arklore.base.files import atomic_write_text
from arklore.core.blocks import stage_of
from arklore.graph.matrix import default_matrix_path
from arklore.settings import Settings
from arklore.workspace import Workspace

_HEADER = re.compile(r"^\s*\[\[\s*relation\s*\]\]")
_EVIDENCE = re.compile(r"^\s*evidence\s*=\s*\[(.*)\]\s*$")
_SINCE = re.compile(r"^\s*since\s*=")
_FIELD = re.compile(r'^\s*(from|to)\s*=\s*"([^"]*)"')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("matrix", nargs="?", type=Path, default=default_matrix_path())
    ap.add_argument("--write", action="store_true", help="add the since lines in place")
    args = ap.parse_args()
    with Workspace(Settings.from_env()) as ws:
        order = ws.corpus.story_order()
    lines = args.matrix.read_text(encoding="utf-8").split("\n")
    out: list[str] = []
    block: list[str] = []
    proposed = 0

    def flush() -> None:
        nonlocal proposed
        if not block or not _HEADER.match(block[0]) or any(_SINCE.match(x) for x in block):
            out.extend(block)
            return
        names = dict(m.groups() for x in block if (m := _FIELD.match(x)))
        for x in block:
            out.append(x)
            m = _EVIDENCE.match(x)
            if m is None:
                continue
            stages = [stage_of(s.strip().strip('"')) for s in m.group(1).split(",") if s.strip()]
            placed = [s for s in stages if order.position(s) is not None]
            if not placed:
                print(f"{names.get('from')} -> {names.get('to')}: no evidence stage is in the "
                      "story order; left without since", file=sys.stderr)  # fmt: skip
                continue
            first = min(placed, key=lambda s: order.positions[s])
            how = order.how[order.groups[first]]
            print(f"{names.get('from')} -> {names.get('to')}\t{first}\t{how}")
            out.append(f'since = "{first}"')
            proposed += 1

    for x in lines:
        if _HEADER.match(x):
            flush()
            block = []
        block.append(x)
    flush()
    print(f"{proposed} entries given a since", file=sys.stderr)
    if args.write and proposed:
        atomic_write_text(args.matrix, "\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
