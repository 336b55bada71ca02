"""What the command line says to input that is empty, pasted whole, out of range or of the
wrong kind: one line naming the problem and a non-zero exit, never a silent 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.errors import ArkloreError, NotBuiltError, UsageError
from arklore.profiles.facade import ProfilesFacade


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def error_line(result) -> str:
    assert isinstance(result.exception, ArkloreError), result.output
    return result.exception.one_line()


def test_a_blank_or_pasted_operator_name_is_told_in_one_short_line(kb_env: Path) -> None:
    assert "no operator name given" in error_line(run("turn", "", "你好"))
    pasted = error_line(run("turn", "银" * 5000, "你好"))
    assert "5,000 characters" in pasted and len(pasted) < 300


def test_an_empty_operator_option_is_an_error_not_the_option_left_out(kb_env: Path) -> None:
    assert "no operator named" in error_line(run("turn", "阿米娅", "你好", "--group", ""))
    assert "no operator name given" in error_line(
        run("names", "find", "星熊和凯尔希", "--speaking-to", "")
    )


@pytest.mark.parametrize(
    "args",
    [
        ("curate", "search", "星熊", "-n", "0"),
        ("curate", "candidates", "阿米娅", "-n", "-5"),
        ("curate", "central", "0"),
        ("rag", "build", "--dry-run", "--embedder", "bogus"),
        ("rag", "build", "--dry-run", "--graph", "/nonexistent/graph.json"),
        ("review", "approve", "阿米娅", "--out", "/nonexistent/chars"),
    ],
)
def test_a_bad_value_is_a_usage_error_before_anything_runs(kb_env: Path, args) -> None:
    r = run(*args)
    assert r.exit_code == 2, r.output


def test_config_refuses_an_empty_folder(kb_env: Path) -> None:
    assert isinstance(run("config", "set", "home", "").exception, UsageError)


def test_distill_needs_at_least_one_task() -> None:
    with pytest.raises(UsageError, match="no task named"):
        ProfilesFacade.tasks([""])
    assert ProfilesFacade.tasks(["a,C"]) == ["A", "C"]


def test_chars_check_on_an_unbuilt_home_is_one_not_built_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chars = tmp_path / "chars"
    chars.mkdir()
    for n in ("char_002_amiya", "char_003_kalts"):
        (chars / f"{n}.char").write_text("# x\n\n## 锚\n她。\n", encoding="utf-8")
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "empty"))
    r = run("chars", "check", str(chars))
    assert isinstance(r.exception, NotBuiltError) and r.exit_code != 0
    assert "maps to no operator" not in r.output
