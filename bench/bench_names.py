"""Throughput of operator-mention detection vs a plain ``re`` alternation of the same names.

    python bench/bench_names.py [--mb 1] [--repeat 3]

Texts (~1 MB each, one message per line, fixed seed):

* ``eval-dense`` – the labelled messages of ``data/names_eval.jsonl`` shuffled and repeated.  They
  were written to test names, so a candidate occurs every ~9 characters: a worst case.
* ``chat``       – the same messages, but 9 of 10 lines drawn from the ones that name nobody:
  about the name density of real dialogue (measured on the story corpus, ~3.5 mentions/1k chars).
* ``story``      – 1 MB of real story dialogue lines (only with ARKLORE_GAMEDATA; read at run
  time, never stored).

Names: the real inventory when ARKLORE_GAMEDATA is set, else ``data/aliases.toml`` only.  Both
contenders run on one core in the same process; the regex is a compiled, case-insensitive
alternation of the same alias keys, longest first (no word rules: it does strictly less work).
Pass: the matcher beats the regex on every text and reaches 5 M chars/s on ``chat`` (the line
``chat >= 5 M chars/s: PASS|FAIL``; ``story`` is reported alongside).

Scaling (``--scaling-only`` runs just this): time per character for one message of 10 KB,
100 KB and 1 MB of the ``chat`` text, as it is (one chat line per text line) and as one line
(the newlines turned into ``，``: a single long message, where the per-line rules see the
whole message as one line), with the ratio to the 10 KB figure.  Pass: the 1 MB figure is
within 2x of the 10 KB one for both shapes (linear detection).  Numbers are the best of
``--repeat`` runs of the whole call, garbage collector on (a ``gc.collect()`` before each run
gives every run the same heap), so they are sensitive to other load on the machine.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import sys
import time
from pathlib import Path

from arklore.names.aliases import load_user_aliases
from arklore.names.evaluation import load_eval_set, operators_from_excel
from arklore.names.matcher import build_matcher

#: the issue's throughput target for the chat-like text, characters per second on one core
TARGET = 5e6


def chat_text(n_chars: int, seed: int = 20260701, quiet_share: float | None = None) -> str:
    """~n_chars of eval messages, one per line; ``quiet_share`` = share of name-free lines."""
    recs = load_eval_set()
    named = [r["text"] for r in recs if r["mentions"]]
    quiet = [r["text"] for r in recs if not r["mentions"]]
    pool = named + quiet
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        if quiet_share is None:
            m = pool[rng.randrange(len(pool))]
        else:
            m = rng.choice(quiet) if rng.random() < quiet_share else rng.choice(named)
        parts.append(m)
        size += len(m) + 1
    return "\n".join(parts)[:n_chars]


_SPEECH = re.compile(r'^\[name="[^"]*"\]\s*(.+)$', re.M)


def story_text(gamedata: Path, n_chars: int) -> str | None:
    root = gamedata / "zh_CN/gamedata/story/activities"
    if not root.is_dir():
        return None
    lines: list[str] = []
    size = 0
    for f in sorted(root.rglob("*.txt")):
        for m in _SPEECH.finditer(f.read_text(encoding="utf-8", errors="replace")):
            lines.append(m.group(1))
            size += len(m.group(1)) + 1
        if size >= n_chars:
            break
    return "\n".join(lines)[:n_chars]


#: message sizes of the scaling table, and the allowed growth of time per character
SCALING_SIZES = (10_000, 100_000, 1_000_000)
SCALING_MAX_RATIO = 2.0


def scaling_table(matcher, repeat: int = 3, min_seconds: float = 0.3, max_repeat: int = 50) -> bool:
    """Print time per character by message size; True when detection scales linearly.

    Each size is timed as the best of ``repeat`` runs, or of more when that fills less than
    ``min_seconds``, so the small messages are not measured on a few noisy calls.
    """
    print(
        f"scaling: chat text, one message of each size; best of >= {repeat} runs "
        f"filling >= {min_seconds}s"
    )
    print(f"{'shape':<10} {'chars':>9} {'ms':>9} {'ns/char':>8} {'vs 10 KB':>9} {'mentions':>9}")
    ok = True
    for shape in ("lines", "one-line"):
        base = None
        for size in SCALING_SIZES:
            text = chat_text(size, quiet_share=0.9)
            if shape == "one-line":
                text = text.replace("\n", "，")
            gc.collect()
            t0 = time.perf_counter()
            found = matcher.find(text)
            best = time.perf_counter() - t0
            runs = max(repeat - 1, min(max_repeat, int(min_seconds / max(best, 1e-9))))
            if runs > 0:
                again, found = best_of(lambda text=text: matcher.find(text), runs)
                best = min(best, again)
            per_char = best / len(text)
            base = base or per_char
            ratio = per_char / base
            print(
                f"{shape:<10} {len(text):>9,} {best * 1e3:>9.1f} "
                f"{per_char * 1e9:>8.1f} {ratio:>8.2f}x {len(found):>9,}"  # type: ignore[arg-type]
            )
            if size == SCALING_SIZES[-1]:
                ok &= ratio <= SCALING_MAX_RATIO
    print(
        f"time per char 1 MB within {SCALING_MAX_RATIO:.0f}x of 10 KB: {'PASS' if ok else 'FAIL'}"
    )
    return ok


def best_of(fn, repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls, and the last result.

    Each call starts from the same heap: the previous result is released and garbage from
    earlier work is collected *before* the clock starts (the collector stays on during the
    call, so collections the call itself sets off are counted).  Without this, whichever
    contender runs after a big result is kept alive pays for traversing it.
    """
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scaling-only", action="store_true", help="only the scaling table")
    # ``python -m bench bench_names`` leaves the module name in sys.argv: ignore positionals
    args, extra = ap.parse_known_args(argv)
    if any(a.startswith("-") for a in extra):
        ap.error(f"unrecognized arguments: {' '.join(extra)}")

    ops = None
    gd = os.environ.get("ARKLORE_GAMEDATA")
    if gd and (Path(gd) / "zh_CN/gamedata/excel").is_dir():
        ops = operators_from_excel(Path(gd) / "zh_CN/gamedata/excel")
    t0 = time.perf_counter()
    matcher = build_matcher(load_user_aliases(), operators=ops)
    build_s = time.perf_counter() - t0
    keys = matcher.table.surfaces()
    if args.scaling_only:
        return 0 if scaling_table(matcher, args.repeat) else 1
    n_chars = int(args.mb * 1_000_000)
    texts = {
        "eval-dense": chat_text(n_chars),
        "chat": chat_text(n_chars, quiet_share=0.9),
    }
    if gd:
        story = story_text(Path(gd), n_chars)
        if story:
            texts["story"] = story
    regex = re.compile("|".join(map(re.escape, sorted(keys, key=len, reverse=True))), re.I)
    print(
        f"names: {len(keys)} alias keys, {matcher.n_stopwords} blocking words; "
        f"build {build_s:.2f}s; best of {args.repeat}"
    )
    print(
        f"{'text':<11} {'chars':>9} {'re M/s':>8} {'matcher M/s':>12} {'ratio':>6} {'mentions':>9}"
    )
    beats_re = True
    fast: dict[str, bool] = {}
    for label, text in texts.items():
        found = None  # do not keep the previous text's mentions alive while timing this one
        n = len(text)
        t_re, _ = best_of(lambda text=text: sum(1 for _ in regex.finditer(text)), args.repeat)
        t_ac, found = best_of(lambda text=text: matcher.find(text), args.repeat)
        speed = n / t_ac
        print(
            f"{label:<11} {n:>9,} {n / t_re / 1e6:>8.2f} {speed / 1e6:>12.2f} "
            f"{t_re / t_ac:>5.1f}x {len(found):>9,}"  # type: ignore[arg-type]
        )
        beats_re &= t_ac < t_re
        fast[label] = speed >= TARGET
    print(f"matcher faster than re on every text: {'PASS' if beats_re else 'FAIL'}")
    print(">= 5 M chars/s: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in fast.items()))
    # the throughput criterion is judged on the chat-like text
    chat_ok = fast["chat"]
    print(f"chat >= {TARGET / 1e6:.0f} M chars/s: {'PASS' if chat_ok else 'FAIL'}")
    linear = scaling_table(matcher, args.repeat)
    ok = beats_re and chat_ok and linear
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
