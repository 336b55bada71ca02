"""Running `arklore` through its real entry point (:func:`arklore.cli.app.main`) in the test's
process: the exit code, stdout and stderr as a user sees them (one-line errors included)."""

from __future__ import annotations

import sys

import pytest

from arklore.cli.app import main


def run_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """``arklore *args`` -> (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["arklore", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err
