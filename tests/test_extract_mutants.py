"""Each safety gate's tests must fail when the gate is broken on purpose (and pass when it is
not): runs bench/check_gate_mutants.py, which re-runs the gate's tests under each mutant in a
subprocess (evidence gates, RAG validation, token budget, ingest rollback, anchor drift, and
the profile gates: verbatim quotes, anchor fields equal to source, no overwrite of S/edited
files, the tier rule).
Kept in its own file so the mutant runs do not recurse into it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_every_gate_mutant_is_caught_by_the_gate_tests(metrics) -> None:
    proc = subprocess.run(
        [sys.executable, "bench/check_gate_mutants.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    metrics("gate mutants:\n" + proc.stdout.rstrip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for mutant in (
        "basis_max_not_min",
        "presence_disabled",
        "presence_always_downgrades",
        "gate1_accepts_bool_float",
        "rag_validation_disabled",
        "rag_budget_ignored",
        "rag_budget_drops_anchors_first",
        "ingest_without_rollback",
        "anchor_drift_blind",
        "verbatim_gate_disabled",
        "anchor_check_blind",
        "writer_overwrites_everything",
        "tier_b_shows_everything",
        "event_presence_disabled",
        "event_first_person_disabled",
        "event_time_hint_unchecked",
        "event_chunks_not_merged",
        "event_range_coerced",
        "event_range_not_clamped",
        "event_names_not_normalized",
        "event_branches_ignored",
    ):
        assert mutant in proc.stdout
