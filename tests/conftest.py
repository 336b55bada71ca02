"""Shared fixtures. Tests that need the real game data are marked ``realdata`` and skip
when ARKLORE_GAMEDATA / ARKLORE_ASTR do not point at it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["llm_stub"]

STORY = Path("zh_CN/gamedata/story")


def _real(var: str) -> Path | None:
    value = os.environ.get(var)
    if value and (Path(value) / STORY).is_dir():
        return Path(value)
    return None


@pytest.fixture(scope="session")
def gamedata_root() -> Path:
    """Root of the real ArknightsGameData checkout (skips when absent)."""
    root = _real("ARKLORE_GAMEDATA")
    if root is None:
        pytest.skip("real game data not available (set ARKLORE_GAMEDATA)")
    return root


@pytest.fixture(scope="session")
def astr_root() -> Path:
    """Root of the real ArknightsStoryJson checkout (skips when absent)."""
    root = _real("ARKLORE_ASTR")
    if root is None:
        pytest.skip("real ASTR data not available (set ARKLORE_ASTR)")
    return root


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ARKLORE_HOME per test."""
    h = tmp_path / "home"
    monkeypatch.setenv("ARKLORE_HOME", str(h))
    return h
