"""Prove the gate tests bite: break each gate on purpose and check tests/test_extract_gates.py
then fails (and passes unbroken).

Run: ``.venv/bin/python bench/check_gate_mutants.py`` — prints mutant -> failed tests and
exits non-zero if any mutant survives. Each run is a subprocess
``pytest tests/test_extract_gates.py -p bench.check_gate_mutants`` with ARKLORE_GATE_MUTANT
set; imported as that plugin, this module patches ``arklore.extract.gates`` before the test
module is collected (so names the tests import are the broken ones too).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = "tests/test_extract_gates.py"
ENV = "ARKLORE_GATE_MUTANT"


def _basis_max(gates: Any) -> None:
    from arklore.core.predicates import BASIS_RANK

    gates.evidence_basis = lambda supports: max(supports, key=BASIS_RANK.__getitem__)


def _presence_always_ok(gates: Any) -> None:
    gates.check_presence = lambda *a, **k: gates.Presence(True, "mutant")


def _presence_always_down(gates: Any) -> None:
    gates.check_presence = lambda *a, **k: gates.Presence(False, "mutant")


def _gate1_accepts_bool_float(gates: Any) -> None:
    original = gates.as_line_no
    gates.as_line_no = lambda v: int(v) if isinstance(v, bool | float) else original(v)


MUTANTS: dict[str, Callable[[Any], None]] = {
    "basis_max_not_min": _basis_max,
    "presence_disabled": _presence_always_ok,
    "presence_always_downgrades": _presence_always_down,
    "gate1_accepts_bool_float": _gate1_accepts_bool_float,
}


def _apply_from_env() -> None:
    name = os.environ.get(ENV)
    if not name:
        return
    from arklore.extract import gates

    MUTANTS[name](gates)


_apply_from_env()  # runs when pytest loads this module as a plugin


def run(mutant: str | None) -> tuple[int, int, int]:
    """(returncode, failed, passed) of the gate tests under one mutant (None: unbroken)."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if mutant:
        env[ENV] = mutant
    cmd = [sys.executable, "-m", "pytest", TESTS, "-q", "-p", "no:cacheprovider"]
    cmd += ["-p", "bench.check_gate_mutants", "-o", "addopts="]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    failed = int(m.group(1)) if (m := re.search(r"(\d+) failed", tail)) else 0
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", tail)) else 0
    return proc.returncode, failed, passed


def check() -> list[tuple[str, int, int, bool]]:
    """Rows (mutant, failed, passed, as_expected): unbroken passes, every mutant fails."""
    rows = []
    for mutant in (None, *MUTANTS):
        code, failed, passed = run(mutant)
        expected = (code == 0 and failed == 0) if mutant is None else (code == 1 and failed > 0)
        rows.append((mutant or "(unbroken)", failed, passed, expected))
    return rows


def main() -> int:
    rows = check()
    print(f"{'mutant':<28} {'failed':>6} {'passed':>6}  verdict")
    for name, failed, passed, ok in rows:
        verdict = "ok" if ok else "SURVIVED" if name != "(unbroken)" else "BROKEN"
        print(f"{name:<28} {failed:>6} {passed:>6}  {verdict}")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
