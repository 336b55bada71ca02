"""Run every benchmark module in this folder (or the ones named on the command line)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).parent
    # options (``--scaling-only``, ``--rows 6``) are left in sys.argv for the modules' own parsers
    names = [a for a in sys.argv[1:] if a.startswith("bench_")] or sorted(
        m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_")
    )
    for name in names:
        print(f"\n== {name} ==", flush=True)
        module = importlib.import_module(f"bench.{name}")
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
