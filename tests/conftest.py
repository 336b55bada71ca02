"""Shared fixtures. Tests that need the real game data are marked ``realdata`` and skip
when ARKLORE_GAMEDATA / ARKLORE_ASTR do not point at it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support.measured import Metrics
from support.service_world import make_kb
from support.tree_world import make_workspace

if TYPE_CHECKING:
    from arklore.graph.model import RelationGraph
    from arklore.profiles.inputs import OperatorInputs
    from arklore.rag.index import BuildReport
    from arklore.workspace import Workspace

pytest_plugins = ["support.llm_stub"]

STORY = Path("zh_CN/gamedata/story")


REAL_FIXTURES = frozenset({"real_workspace", "real_store_path", "real_graph_built",
                           "real_index_built", "real_profile_inputs"})  # fmt: skip


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``) the tests that share the one ingest of the
    real corpus (and its graph and index: :data:`REAL_FIXTURES`) run in one worker, one after
    another, so it is made once per run; the other worker takes the rest of the suite
    meanwhile, the real-data tests that read the data files themselves included."""
    for item in items:
        if set(getattr(item, "fixturenames", ())) & REAL_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("realdata"))


def _real(var: str) -> Path | None:
    value = os.environ.get(var)
    if value and (Path(value) / STORY).is_dir():
        return Path(value)
    return None


@pytest.fixture(scope="session")
def _user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("user-dirs")


@pytest.fixture(autouse=True)
def _no_user_config(_user_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's config or data folders, nor finds the data next to
    this checkout (``arklore.locations``): a test sets what it needs."""
    from arklore import locations

    monkeypatch.setenv("XDG_CONFIG_HOME", str(_user_dirs / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(_user_dirs / "data"))
    monkeypatch.setenv("ARKLORE_IGNORE_CHECKOUT", "1")  # the commands tests start, too
    monkeypatch.setattr(locations, "package_checkout", lambda: None)


LLM_VARS = ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_CHAT_API_KEY", "LLM_CHAT_BASE_URL")


@pytest.fixture
def kb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The invented knowledge base (support/service_world.py) as ARKLORE_HOME, the hash
    embedder, and no LLM configured: what the command-line tests run against."""
    home = make_kb(tmp_path / "home")
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    for var in LLM_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright, one per test module (the browser tests call
    ``support.browser.require_browser`` first: it fails under CI when chromium is missing)."""
    from support.browser import launch

    yield from launch()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page of :func:`browser` that fails the test on a console error or a failed request
    (``support.browser.watched_page``)."""
    from support.browser import watched_page

    yield from watched_page(browser)


@pytest.fixture(scope="session")
def real_workspace(
    gamedata_root: Path, astr_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workspace]:
    """One ingest of the whole real corpus (both sources) shared by every realdata test that
    only reads it (do not write to its store)."""
    ws = make_workspace(tmp_path_factory.mktemp("real-home"), gamedata_root, astr_root)
    report = ws.ingest()
    assert not report.errors, report.errors[:5]
    yield ws
    ws.close()


@pytest.fixture(scope="session")
def real_store_path(real_workspace: Workspace) -> Path:
    """The store of :func:`real_workspace`; open it with ``open_store(path)``, read only."""
    return real_workspace.paths.db


@pytest.fixture(scope="session")
def real_graph_built(real_workspace: Workspace) -> RelationGraph:
    """The relation graph of the whole real corpus, no LLM, built once (and saved in the
    shared workspace)."""
    return real_workspace.graph.build().graph


@pytest.fixture(scope="session")
def real_index_built(real_workspace: Workspace, real_graph_built: RelationGraph) -> BuildReport:
    """The relation index of the real graph (hash embedder, no LLM), built once in the shared
    workspace's home; ``arklore demo`` (test_demo_realdata) builds the same index there, so
    whichever comes second finds it unchanged. Open a workspace with ``embedder="hash"`` on
    ``real_workspace.paths.home`` to query it."""
    s = real_workspace.settings
    ws = make_workspace(s.home, s.gamedata, s.astr, embedder="hash")
    try:
        report = ws.build_index(no_llm=True)
    finally:
        ws.close()
    assert report.documents > 500 and report.rejected == 0
    return report


@pytest.fixture(scope="session")
def real_profile_inputs(
    real_workspace: Workspace, real_graph_built: RelationGraph
) -> list[OperatorInputs]:
    """What the profile tasks read about every operator of the real corpus, with her way of
    speaking and what others say of her (two passes over the corpus, ~25 s): made once for
    the tests that read it (speech, 我·性格, the fidelity eval's rule-built profiles)."""
    ws = real_workspace
    return ws.profiles.inputs(ws.names.select(), speech=True, remarks=True)


@pytest.fixture(scope="session")
def rule_profiles(
    real_profile_inputs: list[OperatorInputs], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Every operator's rule-built profile (no model), as ``arklore build`` drafts them (her
    way of speaking and what others say of her included), in a folder of their own: made
    once for the fidelity eval and the cards' real-data tests."""
    from arklore.profiles.assemble import assemble
    from arklore.profiles.charfile import SUFFIX
    from arklore.profiles.draft import rule_results, utc_now

    out = tmp_path_factory.mktemp("rule-chars")
    at = utc_now()
    for inp in real_profile_inputs:
        built = assemble(inp, rule_results(inp), generated_at=at)
        if built.text is not None:
            (out / f"{inp.char_id}{SUFFIX}").write_text(built.text, encoding="utf-8")
    return out


MEASURED = "measured"
FIGURES = "figures"
FIGURES_OUT = "ARKLORE_FIGURES_OUT"
"""A record file (docs/figures.json): the figures the tests pass by name go into its
``suite`` part (``make docs-measure``; arklore.docfigs quotes them in the docs)."""


@pytest.fixture
def metrics(request: pytest.FixtureRequest) -> Metrics:
    """``metrics("text", name=value, ...)`` records a measured figure; they are printed at the
    end of the run (the terminal summary), so CI logs show them without ``-s``, and the named
    values are written into the record ``$ARKLORE_FIGURES_OUT`` when it is set. Kept in the
    test's report (``user_properties``), so they reach the summary from pytest-xdist's workers
    too."""

    def record(text: str, **figures: float) -> None:
        request.node.user_properties.append((MEASURED, text))
        if figures:
            request.node.user_properties.append((FIGURES, figures))

    return record


def _write_figures(terminalreporter: pytest.TerminalReporter, out: Path) -> int:
    """The named figures of the run into the ``suite`` part of the record ``out`` (the other
    parts kept); how many were written."""
    found: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for rep in reports:
            for key, value in getattr(rep, "user_properties", ()):
                if key == FIGURES:
                    found.update(value)
    if not found:
        return 0
    record = json.loads(out.read_text("utf-8")) if out.is_file() else {}
    record["suite"] = dict(sorted((record.get("suite", {}) | found).items()))
    out.write_text(json.dumps(record, ensure_ascii=False, indent=2, sort_keys=True) + "\n", "utf-8")
    return len(found)


def _measured(terminalreporter: pytest.TerminalReporter) -> list[str]:
    """Every figure the run's tests recorded, once each, in the order their tests ended."""
    seen: dict[tuple[str, str], None] = {}
    for reports in terminalreporter.stats.values():
        for rep in reports:
            for key, text in getattr(rep, "user_properties", ()):
                if key == MEASURED:
                    seen.setdefault((rep.nodeid, text), None)
    return [text for _, text in seen]


BROWSER_TESTS = ("tests/test_service_browser.py", "tests/test_service_pages.py",
                 "tests/test_service_chat_page.py")  # fmt: skip


def _browser_count(terminalreporter: pytest.TerminalReporter) -> str | None:
    """How many browser tests ran, passed and were skipped (None: none was collected), so a
    run that skipped them all says so."""
    outcomes: dict[str, int] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for rep in terminalreporter.stats.get(outcome, []):
            if getattr(rep, "nodeid", "").startswith(BROWSER_TESTS) and (
                rep.when == "call" or outcome in ("skipped", "error")
            ):
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
    if not outcomes:
        return None
    ran = outcomes.get("passed", 0) + outcomes.get("failed", 0)
    return f"browser tests (chromium): {ran} run, " + ", ".join(
        f"{v} {k}" for k, v in sorted(outcomes.items())
    )


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter,
    exitstatus: int,  # noqa: ARG001
    config: pytest.Config,  # noqa: ARG001
) -> None:
    lines = _measured(terminalreporter)
    browser = _browser_count(terminalreporter)
    if browser:
        lines.append(browser)
    if lines:
        terminalreporter.section("measured")
        for line in lines:
            terminalreporter.write_line(line)
    out = os.environ.get(FIGURES_OUT)
    if out:
        n = _write_figures(terminalreporter, Path(out))
        terminalreporter.write_line(f"{n} named figures written into {out}")
