"""What the built distribution says about itself: one version, and the typing marker."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from setuptools.config.expand import read_attr

import arklore

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_has_one_home_the_package_attribute() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project, "pyproject.toml must not repeat the version"
    assert "version" in project["dynamic"]
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "arklore.__version__"}


def built_version() -> str:
    """The version a wheel's metadata will carry: the static one, or the ``attr`` directive
    read by setuptools' own reader."""
    static = PYPROJECT["project"].get("version")
    if static is not None:
        assert isinstance(static, str), static
        return static
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    version = read_attr(attr, {"": "src"}, ROOT)
    assert isinstance(version, str), version
    return version


def test_the_built_version_agrees_with_arklore_version() -> None:
    assert built_version() == arklore.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", arklore.__version__)


def test_the_package_ships_its_typing_marker() -> None:
    assert (Path(arklore.__file__).parent / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["arklore"]
