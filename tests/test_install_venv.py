"""tools/install_venv.py hands uv the package sources pip is configured with, so the fast
install resolves from the same places as the pip install it replaces."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "install_venv.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("install_venv", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_uv_gets_pips_links_indexes_and_constraints(tmp_path: Path) -> None:
    present = tmp_path / "simple"
    present.mkdir()
    config = {
        "find-links": ["/opt/wheels"],
        "index-url": ["https://mirror.example/simple"],
        "extra-index-url": [f"file://{present}", f"file://{tmp_path / 'gone'}"],
        "constraint": ["/etc/pip/constraints.txt"],
        "cert": ["/etc/ssl/ca.pem"],
    }
    args, env = _tool().uv_arguments(config)
    pairs = list(zip(args[::2], args[1::2], strict=True))
    assert ("--index-strategy", "unsafe-best-match") in pairs
    assert ("--find-links", "/opt/wheels") in pairs
    assert ("--index-url", "https://mirror.example/simple") in pairs
    assert ("--extra-index-url", f"file://{present}") in pairs
    assert ("--constraint", "/etc/pip/constraints.txt") in pairs
    assert all(value != f"file://{tmp_path / 'gone'}" for _, value in pairs)
    assert env["SSL_CERT_FILE"] == os.environ.get("SSL_CERT_FILE", "/etc/ssl/ca.pem")


def test_pips_config_listing_is_read_from_every_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _tool()
    listing = (
        "global.extra-index-url='file:///a/simple file:///b/simple'\n"
        "global.find-links='/opt/wheels'\n"
        ":env:.find-links='/opt/wheels'\n"
        ":env:.default-timeout='180'\n"
    )

    class Ran:
        stdout = listing

    monkeypatch.setattr(tool.subprocess, "run", lambda *a, **k: Ran())
    config = tool.pip_config()
    assert config["extra-index-url"] == ["file:///a/simple", "file:///b/simple"]
    assert config["find-links"] == ["/opt/wheels"]
