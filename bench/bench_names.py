"""Throughput of operator-mention detection vs a plain ``re`` alternation of the same names.

    python bench/bench_names.py [--mb 1] [--repeat 3]

Text: the labelled chat messages of ``data/names_eval.jsonl``, shuffled with a fixed seed and
joined with newlines until ~1 MB.  Names: the real inventory when ARKLORE_GAMEDATA is set (via the
registry), else ``data/aliases.toml`` only.  Both contenders run on one core in the same process;
the regex is a compiled alternation of the same alias keys, longest first (no word rules, so it
does strictly less work).  Prints chars/s for each and the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from pathlib import Path

from arklore.names.evaluation import load_eval_set, operators_from_excel
from arklore.names.matcher import build_matcher


def chat_text(n_chars: int, seed: int = 20260701) -> str:
    msgs = [r["text"] for r in load_eval_set()]
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        batch = msgs[:]
        rng.shuffle(batch)
        for m in batch:
            parts.append(m)
            size += len(m) + 1
            if size >= n_chars:
                break
    return "\n".join(parts)[:n_chars]


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    ops = None
    gd = os.environ.get("ARKLORE_GAMEDATA")
    if gd and (Path(gd) / "zh_CN/gamedata/excel").is_dir():
        ops = operators_from_excel(Path(gd) / "zh_CN/gamedata/excel")
    t0 = time.perf_counter()
    matcher = build_matcher(operators=ops)
    build_s = time.perf_counter() - t0
    keys = matcher.table.keys()
    text = chat_text(int(args.mb * 1_000_000))
    n = len(text)

    regex = re.compile("|".join(map(re.escape, sorted(keys, key=len, reverse=True))), re.I)
    t_re, n_re = best_of(lambda: sum(1 for _ in regex.finditer(text)), args.repeat)
    t_ac, found = best_of(lambda: matcher.find(text), args.repeat)
    n_ac = len(found)  # type: ignore[arg-type]

    print(f"names: {len(keys)} alias keys, {matcher.n_stopwords} blocking words; build {build_s:.2f}s")
    print(f"text: {n:,} chars ({len(text.encode('utf-8')):,} bytes UTF-8)")
    print(f"re alternation : {n / t_re / 1e6:8.2f} M chars/s  ({n_re} raw matches, {t_re * 1000:.1f} ms)")
    print(f"find_mentions  : {n / t_ac / 1e6:8.2f} M chars/s  ({n_ac} mentions, {t_ac * 1000:.1f} ms)")
    print(f"ratio matcher/re: {t_re / t_ac:.2f}x")
    ok = t_ac < t_re and n / t_ac >= 5e6
    print("PASS" if ok else "FAIL: matcher must beat the regex and reach 5 M chars/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
