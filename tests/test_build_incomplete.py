"""A build that did not finish marks its home incomplete: turns still answer but say which
steps are missing and that `arklore build` resumes, exports refuse the home unless allowed,
`serve` and `/readyz` name `arklore build`; Ctrl-C ends any command with one line (a chat
with a fresh line alone), exit 130, no traceback."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from support.llm_stub import TEST_KEY, Reply, StubServer
from support.service_world import kb_settings, kb_workspace, make_kb
from support.tree_world import make_workspace, write_tree
from typer.testing import CliRunner

from arklore.base.buildmark import BUILD_STEPS, MARK_FILE, BuildMark
from arklore.build import run_build
from arklore.cli.app import app
from arklore.core.errors import EXIT_INTERRUPTED, IncompleteBuildError
from arklore.graph.facade import GraphFacade
from arklore.service.app import create_app
from arklore.settings import LLMSettings
from arklore.workspace import Workspace

LLM_VARS = ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_CHAT_API_KEY", "LLM_CHAT_BASE_URL")
AFTER_INGEST = ("graph", "appearances", "profiles", "index", "exemplars")


@pytest.fixture(scope="module")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_kb(tmp_path_factory.mktemp("incomplete") / "home")


def half_built(kb_home: Path, home: Path, done: tuple[str, ...] = ("ingest",)) -> Path:
    """A copy of the built knowledge base whose last `arklore build` stopped after ``done``."""
    shutil.copytree(kb_home, home)
    mark = BuildMark(home)
    mark.start()
    for step in done:
        mark.step_done(step)
    return home


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    for var in LLM_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def matrix_file(root: Path) -> Path:
    path = root / "matrix.toml"
    path.write_text("# the invented world's curated relations: none\n", encoding="utf-8")
    return path


# -- the state a build leaves --------------------------------------------------------------------
def test_a_build_stopped_in_a_step_leaves_the_home_incomplete_until_a_build_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_tree(tmp_path / "data")
    home = tmp_path / "home"

    def ws() -> Workspace:
        return make_workspace(home, *data, embedder="hash", matrix=matrix_file(tmp_path))

    assert ws().build_state().state == "not built"
    assert ws().build_state().missing == BUILD_STEPS

    def stopped(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(GraphFacade, "build", stopped)
    w = ws()
    with pytest.raises(KeyboardInterrupt):
        run_build(w)
    w.close()
    st = ws().build_state()
    assert st.state == "incomplete" and st.done == ("ingest",) and st.missing == AFTER_INGEST
    monkeypatch.undo()
    w = ws()
    run_build(w)
    assert w.build_state().state == "built" and w.build_state().warnings() == []
    assert not (home / MARK_FILE).exists()
    w.close()


def test_a_build_started_again_counts_only_what_it_finished(tmp_path: Path) -> None:
    """A new build starts with every step missing: a step skipped as unchanged counts as done
    once this build has checked it."""
    mark = BuildMark(tmp_path)
    mark.start()
    for step in BUILD_STEPS[:3]:
        mark.step_done(step)
    BuildMark(tmp_path).start()
    st = BuildMark(tmp_path).status(has_store=True)
    assert st.state == "incomplete" and st.done == () and st.missing == BUILD_STEPS


def test_a_home_built_before_the_mark_existed_is_built(kb_home: Path) -> None:
    ws = kb_workspace(kb_home)
    assert ws.build_state().state == "built" and ws.chat.turn("阿米娅", "你好").warnings == []
    ws.close()


# -- turns --------------------------------------------------------------------------------------
def test_a_turn_on_an_incomplete_home_answers_with_a_warning_naming_the_missing_steps(
    kb_home: Path, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    home = half_built(kb_home, tmp_path / "home")
    env.setenv("ARKLORE_HOME", str(home))
    r = CliRunner().invoke(app, ["turn", "阿米娅", "你好"])
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if ln]
    assert len(warning) == 1 and warning[0].startswith("warning:")
    assert "arklore build" in warning[0] and "graph, appearances" in warning[0]
    assert str(home) in warning[0] and "【阿米娅的人设】" in r.stdout
    r = CliRunner().invoke(app, ["turn", "阿米娅", "你好", "--json"])
    out = orjson.loads(r.stdout)
    assert out["warnings"] == [warning[0].removeprefix("warning: ")]


def test_the_python_api_turn_carries_the_warning(kb_home: Path, tmp_path: Path) -> None:
    from arklore import api

    home = half_built(kb_home, tmp_path / "home", done=("ingest", "graph"))
    api.set_default_workspace(kb_workspace(home))
    try:
        warnings = api.assemble_turn("阿米娅", "你好").warnings
    finally:
        api.set_default_workspace(None)
    assert len(warnings) == 1 and "missing: appearances, profiles" in warnings[0]


def test_a_chat_on_an_incomplete_home_warns_once(
    kb_home: Path, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    env.setenv("ARKLORE_HOME", str(half_built(kb_home, tmp_path / "home")))
    r = CliRunner().invoke(app, ["chat", "阿米娅"], input="你好\n早上好\n/quit\n")
    assert r.exit_code == 0, r.output
    assert r.stderr.count("did not finish") == 1 and "run `arklore build` again" in r.stderr


# -- exports ------------------------------------------------------------------------------------
def test_exports_refuse_an_incomplete_home_unless_allowed(
    kb_home: Path, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    env.setenv("ARKLORE_HOME", str(half_built(kb_home, tmp_path / "home")))
    out = tmp_path / "lorebook.json"
    r = CliRunner().invoke(app, ["export", "lorebook", "--out", str(out)])
    assert isinstance(r.exception, IncompleteBuildError) and r.exit_code == 1
    line = r.exception.one_line()
    assert "\n" not in line and "arklore build" in line and "--allow-incomplete" in line
    assert not out.exists()
    r = CliRunner().invoke(app, ["export", "card", "阿米娅", "--out", str(tmp_path / "cards")])
    assert isinstance(r.exception, IncompleteBuildError)
    r = CliRunner().invoke(app, ["export", "lorebook", "--out", str(out), "--allow-incomplete"])
    assert r.exit_code == 0, r.output
    assert out.is_file()


# -- the service --------------------------------------------------------------------------------
def client_for(ws: Workspace) -> TestClient:
    return TestClient(
        create_app(ws, warm_up=False), raise_server_exceptions=False, client=("127.0.0.1", 50000)
    )


def test_http_turns_on_an_incomplete_home_carry_the_warning(
    kb_home: Path, tmp_path: Path, llm_stub: StubServer
) -> None:
    home = half_built(kb_home, tmp_path / "home")
    llm = LLMSettings(base_url=llm_stub.url, model="m", api_key=TEST_KEY, max_retries=0)
    llm_stub.script("你好", Reply.text("博士，欢迎回来。"))
    with client_for(Workspace(kb_settings(home, llm=llm))) as c:
        r = c.post("/v1/turn", json={"operator": "阿米娅", "message": "你好"})
        assert r.status_code == 200
        (warning,) = r.json()["warnings"]
        assert "arklore build" in warning and "missing: graph" in warning
        r = c.post("/v1/chat/completions", json={
            "model": "阿米娅", "messages": [{"role": "user", "content": "你好"}]})  # fmt: skip
        assert r.status_code == 200, r.text
        assert r.json()["warnings"] == [warning]
        assert r.json()["choices"][0]["message"]["content"] == "博士，欢迎回来。"
        assert "arklore build" in r.headers["X-Arklore-Warning"]
    with client_for(kb_workspace(kb_home)) as c:  # a finished build: nothing to say
        assert c.post("/v1/turn", json={"operator": "阿米娅", "message": "你好"}).json()[
            "warnings"] == []  # fmt: skip


@pytest.mark.parametrize("state", ["not built", "incomplete"])
def test_readyz_names_arklore_build_and_the_home(kb_home: Path, tmp_path: Path, state: str) -> None:
    home = tmp_path / "home"
    if state == "incomplete":
        half_built(kb_home, home)
    with client_for(kb_workspace(home)) as c:
        r = c.get("/readyz")
    assert r.status_code == 503
    body = r.json()
    assert body["checks"]["build"] == {
        "ok": False, "state": state, "missing": list(BUILD_STEPS if state == "not built"
                                                     else AFTER_INGEST),
        "error": body["checks"]["build"]["error"],
    }  # fmt: skip
    assert "arklore build" in body["hint"] and str(home) in body["hint"]
    # one thing to do, whatever is missing: not `graph build`, `rag build` or `ingest`
    assert r.text.count("`arklore ") == r.text.count("`arklore build`") >= 1


@pytest.mark.parametrize("state", ["not built", "incomplete"])
def test_serve_on_a_home_not_fully_built_says_so_in_one_line(
    kb_home: Path, tmp_path: Path, env: pytest.MonkeyPatch, state: str
) -> None:
    home = tmp_path / "home"
    if state == "incomplete":
        half_built(kb_home, home)
    env.setenv("ARKLORE_HOME", str(home))
    env.setenv("ARKLORE_GAMEDATA", str(write_tree(tmp_path / "data")[0]))
    served: list[str] = []
    env.setattr("arklore.service.run.serve", lambda **kw: served.append("served"))
    r = CliRunner().invoke(app, ["serve"])
    assert r.exit_code == 0 and served == ["served"], r.output
    lines = [ln for ln in r.stderr.splitlines() if ln]
    assert len(lines) == 1 and "arklore build" in lines[0] and str(home) in lines[0]
    assert ("did not finish" if state == "incomplete" else "nothing is built") in lines[0]


def test_serve_on_a_built_home_starts_without_a_word(
    kb_home: Path, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    env.setenv("ARKLORE_HOME", str(kb_home))
    env.setenv("ARKLORE_GAMEDATA", str(write_tree(tmp_path / "data")[0]))
    env.setattr("arklore.service.run.serve", lambda **kw: None)
    r = CliRunner().invoke(app, ["serve"])
    assert r.exit_code == 0 and r.stderr == ""


# -- Ctrl-C -------------------------------------------------------------------------------------
STALLED_GRAPH = """
import signal, sys
from arklore.graph.facade import GraphFacade
def stalled(*a, **k):
    print("graph step", flush=True)
    signal.pause()  # until Ctrl-C
GraphFacade.build = stalled
from arklore.cli.app import main
sys.argv = ["arklore", "build"]
main()
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "ARKLORE_"))}
    return env | {"PYTHONUNBUFFERED": "1", "ARKLORE_EMBEDDER": "hash"} | extra


def _interrupt(argv: list[str], env: dict[str, str], ready: str) -> tuple[int, str, str]:
    """Run ``argv``, wait for ``ready`` on its stdout, send SIGINT (what Ctrl-C sends)."""
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert p.stdout is not None
    seen = ""
    while ready not in seen:
        ch = p.stdout.read(1)
        assert ch, f"ended before {ready!r}: {seen!r}"
        seen += ch
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    return p.returncode, seen + out, err


def test_ctrl_c_in_a_build_says_how_to_resume_and_leaves_it_incomplete(tmp_path: Path) -> None:
    data = write_tree(tmp_path / "data")
    home = tmp_path / "home"
    env = _env(ARKLORE_HOME=str(home), ARKLORE_GAMEDATA=str(data[0]), ARKLORE_ASTR=str(data[1]),
               ARKLORE_MATRIX=str(matrix_file(tmp_path)))  # fmt: skip
    rc, _, err = _interrupt([sys.executable, "-c", STALLED_GRAPH], env, "graph step")
    assert rc == EXIT_INTERRUPTED
    assert err == "interrupted: run the same command to resume\n"  # one line, no traceback
    ws = make_workspace(home, *data, embedder="hash", matrix=matrix_file(tmp_path))
    st = ws.build_state()
    assert st.state == "incomplete" and st.missing == AFTER_INGEST
    ws.close()


def test_ctrl_c_ends_a_chat_on_a_fresh_line_without_a_word(kb_home: Path) -> None:
    env = _env(ARKLORE_HOME=str(kb_home))
    rc, out, err = _interrupt(
        [sys.executable, "-m", "arklore", "chat", "阿米娅", "--no-llm"], env, "博士> "
    )
    assert rc == EXIT_INTERRUPTED and err == ""
    assert out.endswith("博士> \n")  # the shell's prompt starts on a line of its own


def test_a_server_started_before_the_first_build_is_ready_once_it_is_done(tmp_path: Path) -> None:
    from arklore.service.state import ServiceState

    home = tmp_path / "home"
    st = ServiceState(kb_workspace(home))
    st.warm_up()
    assert not st.readiness()["ready"] and st.warm_error is not None
    make_kb(home)  # what `arklore build` leaves
    st._checked = 0.0  # the next request looks for a rebuild (at most once a second)
    st.watch()
    assert st.rewarm is not None
    st.rewarm.join(timeout=120)
    ready = st.readiness()
    assert ready["ready"], ready
    st.close()
