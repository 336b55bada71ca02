"""Each safety gate's tests must fail when the gate is broken on purpose (and pass when it is
not): runs bench/check_gate_mutants.py, which re-runs the gate's tests under each mutant in a
subprocess (evidence gates, RAG validation, token budget, ingest rollback, anchor drift, and
the profile gates: verbatim quotes, anchor fields equal to source, no overwrite of S/edited
files, the tier rule).
Kept in its own file so the mutant runs do not recurse into it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "check_gate_mutants.py"
_spec = importlib.util.spec_from_file_location("check_gate_mutants", SCRIPT)
assert _spec is not None and _spec.loader is not None
mutants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutants)  # by path: `pytest` alone does not put the root on sys.path


# No fixed time limit (pytest-timeout off): how long the mutant runs take depends on the
# machine and its load. The suite runs the gate tests unbroken itself, so the script skips
# its own unbroken run (--no-baseline); a mutant that hangs a test ends at pytest's per-test
# timeout inside its run and counts as "HUNG", not as caught.
@pytest.mark.slow
@pytest.mark.timeout(0)
def test_every_gate_mutant_is_caught_by_the_gate_tests(metrics) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--no-baseline"], cwd=ROOT, capture_output=True, text=True
    )
    metrics("gate mutants:\n" + proc.stdout.rstrip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for mutant in mutants.MUTANTS:
        assert mutant in proc.stdout


def test_mutant_runs_are_limited_by_the_measured_unbroken_run(monkeypatch) -> None:
    calls: list[tuple[str | None, float | None]] = []

    def fake_run(mutant: str | None, limit: float | None = None):
        calls.append((mutant, limit))
        if mutant is None:
            return 0, 0, 10, 37.0  # the unbroken run: 37 s on this (pretend) machine
        if mutant == "rag_budget_drops_anchors_first":
            return None, 0, 0, limit  # hung past the limit
        return 1, 1, 0, 5.0

    monkeypatch.setattr(mutants, "run", fake_run)
    monkeypatch.setattr(mutants, "real_data_present", lambda: False)
    rows, limit = mutants.check()
    assert limit == mutants.SLACK * 37.0
    assert calls[0] == (None, None)  # the baseline has no limit but pytest's own per test
    assert all(lim == limit for m, lim in calls[1:]) and len(calls) == 1 + len(mutants.MUTANTS)
    verdicts = {name: verdict for name, _f, _p, verdict in rows}
    assert verdicts.pop("rag_budget_drops_anchors_first") == "HUNG"
    assert set(verdicts.values()) == {"ok"}
    assert mutants.main([]) == 1  # a hung mutant is not a caught one


def test_without_the_unbroken_run_a_test_past_its_timeout_is_a_hung_mutant(monkeypatch) -> None:
    """--no-baseline: no unbroken run, no limit on a run; pytest-timeout's failure of a test
    that hung is read as HUNG, never as the mutant caught."""
    calls: list[tuple[str | None, float | None]] = []

    class Done:
        def __init__(self, out: str) -> None:
            self.stdout, self.returncode = out, 1

    def fake_subprocess_run(cmd, **kw):  # noqa: ANN001, ANN202
        calls.append((cmd[-1], kw.get("timeout")))
        hung = "E   Failed: Timeout >600.0s\n1 failed in 600.12s"
        return Done(hung if "rag_budget" in kw["env"].get(mutants.ENV, "") else "1 failed in 1s")

    monkeypatch.setattr(mutants.subprocess, "run", fake_subprocess_run)
    monkeypatch.setattr(mutants, "real_data_present", lambda: False)
    rows, limit = mutants.check(baseline=False)
    assert limit is None and all(timeout is None for _, timeout in calls)
    assert len(calls) == len(mutants.MUTANTS) and "(unbroken)" not in [r[0] for r in rows]
    verdicts = {name: verdict for name, _f, _p, verdict in rows}
    assert {v for k, v in verdicts.items() if k.startswith("rag_budget")} == {"HUNG"}
    assert {v for k, v in verdicts.items() if not k.startswith("rag_budget")} == {"ok"}


def test_with_the_real_data_each_relation_gate_mutant_also_runs_on_the_real_cases(
    monkeypatch,
) -> None:
    calls: list[tuple[str | None, float | None, bool]] = []

    def fake_run(mutant: str | None, limit: float | None = None, *, real: bool = False):
        calls.append((mutant, limit, real))
        return (0, 0, 10, 100.0 if real else 10.0) if mutant is None else (1, 1, 0, 5.0)

    monkeypatch.setattr(mutants, "run", fake_run)
    monkeypatch.setattr(mutants, "real_data_present", lambda: True)
    rows, limit = mutants.check()
    on_real = {m: lim for m, lim, real in calls if real}
    assert on_real.pop(None) is None  # the unbroken real run, limited by pytest only
    assert set(on_real) == set(mutants.REAL_MUTANTS) >= {"basis_max_not_min", "letters_unread"}
    assert set(on_real.values()) == {mutants.SLACK * 100.0}  # its own limit, not the fast one
    names = [name for name, *_ in rows]
    assert "(unbroken)@realdata" in names
    assert all(f"{m}@realdata" in names for m in mutants.REAL_MUTANTS)
    assert {verdict for *_, verdict in rows} == {"ok"}
