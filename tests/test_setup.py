"""Set-up that cannot half-work: the commands find the data and the home the way `make` does,
one home has one spelling, `arklore doctor` says what is missing, and every failure of the
set-up is one line naming the setting and the real fix. Every command runs through the real
entry point with the user's config and data folders under tmp."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_main
from support.tree_world import write_tree

from arklore import locations
from arklore.base.buildmark import BuildMark
from arklore.build import STEPS
from arklore.core.errors import EXIT_CONFIG
from arklore.settings import Settings

ROOT = Path(__file__).parents[1]
PATH_VARS = ("ARKLORE_HOME", "ARKLORE_GAMEDATA", "ARKLORE_ASTR", "ARKLORE_CHARS_DIR",
             "ARKLORE_MANIFEST", "ARKLORE_ALIASES", "ARKLORE_MATRIX", "CHROMA_HOST")  # fmt: skip


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with nothing set: HOME and the XDG folders under tmp, no path variable, the
    hash embedder (no model) and a matrix for the invented world."""
    for var in PATH_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user" / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user" / ".local" / "share"))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    (tmp_path / "matrix.toml").write_text("# none\n", encoding="utf-8")
    monkeypatch.setenv("ARKLORE_MATRIX", str(tmp_path / "matrix.toml"))
    return tmp_path / "user"


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    return write_tree(tmp_path / "data")


@pytest.fixture
def set_data(data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The invented data named by ARKLORE_GAMEDATA and ARKLORE_ASTR."""
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(data[0]))
    monkeypatch.setenv("ARKLORE_ASTR", str(data[1]))
    return data


@pytest.fixture
def checkout(tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """arklore running from a source checkout with the data next to it, as in the workplace:
    ``<checkout>/../shared/arknights/{gamedata,astr}``."""
    root = tmp_path / "place" / "arklore"
    shared = tmp_path / "place" / "shared" / "arknights"
    root.mkdir(parents=True)
    shared.mkdir(parents=True)
    (shared / "gamedata").symlink_to(data[0])
    (shared / "astr").symlink_to(data[1])
    monkeypatch.setattr(locations, "package_checkout", lambda: root)
    monkeypatch.delenv("ARKLORE_IGNORE_CHECKOUT")
    return root


def steps(out: str) -> dict[str, bool]:
    """Step name -> skipped, from `arklore build --json`."""
    return {s["name"]: s["skipped"] for s in json.loads(out)["steps"]}


# -- 1. make demo -------------------------------------------------------------------------------


def test_make_demo_fetches_the_web_assets_the_pages_need() -> None:
    rule = re.search(r"^demo:(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert rule is not None and "web" in rule.group(1).split()


# -- 2. where the data is -----------------------------------------------------------------------


def test_the_data_next_to_the_checkout_is_found_from_any_directory(
    user: Path, checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    s = Settings.from_env()
    shared = (checkout.parent / "shared" / "arknights").resolve()
    assert s.gamedata == (shared / "gamedata").resolve()
    assert s.astr == (shared / "astr").resolve()
    assert s.origins["gamedata"] == s.origins["astr"] == "checkout"


def test_the_environment_wins_over_the_checkout_and_the_checkout_over_the_config(
    user: Path, checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    other = write_tree(tmp_path / "other")
    code, _, err = run_main(monkeypatch, capsys, "config", "set", "gamedata", str(other[0]))
    assert code == 0, err
    assert Settings.from_env().origins["gamedata"] == "checkout"
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(other[0]))
    s = Settings.from_env()
    assert s.gamedata == other[0].resolve() and s.origins["gamedata"] == "env"


def test_config_set_stores_the_data_and_the_home_for_every_shell(
    user: Path, data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    for key, value in (("gamedata", data[0]), ("astr", data[1]), ("home", Path("myhome"))):
        code, _, err = run_main(monkeypatch, capsys, "config", "set", key, str(value))
        assert code == 0, err
    stored = user / ".config" / "arklore" / "config.toml"
    assert stored.is_file() and not list(stored.parent.glob("*.tmp*"))
    s = Settings.from_env()
    assert (s.gamedata, s.astr) == (data[0].resolve(), data[1].resolve())
    assert s.home == (tmp_path / "myhome").resolve()  # stored absolute, not cwd-relative
    assert {s.origins[k] for k in ("gamedata", "astr", "home")} == {"config"}
    code, out, _ = run_main(monkeypatch, capsys, "config", "show", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["used"]["home"] == {"path": str(s.home), "from": "config"}
    code, _, _ = run_main(monkeypatch, capsys, "config", "unset", "home", "astr")
    s = Settings.from_env()
    assert code == 0 and s.astr is None and s.origins["home"] == "default"
    assert s.gamedata == data[0].resolve()


def test_config_set_refuses_a_folder_that_is_not_that_checkout(
    user: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    code, _, err = run_main(monkeypatch, capsys, "config", "set", "gamedata", str(data[1]))
    assert code == EXIT_CONFIG and len(err.strip().splitlines()) == 1
    assert "swapped" in err
    assert not (user / ".config" / "arklore" / "config.toml").exists()


def test_a_broken_config_file_is_one_line_naming_the_file(
    user: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    cfg = user / ".config" / "arklore" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("gamedata = [unclosed\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "build")
    assert code == EXIT_CONFIG and len(err.strip().splitlines()) == 1
    assert str(cfg) in err and "Traceback" not in err


def test_a_stored_path_that_points_nowhere_names_the_config_file(
    user: Path, data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    copy = tmp_path / "copy"
    write_tree(copy)
    code, _, _ = run_main(monkeypatch, capsys, "config", "set", "astr", str(copy / "astr"))
    assert code == 0
    shutil.rmtree(copy)
    code, _, err = run_main(monkeypatch, capsys, "build")
    assert code == EXIT_CONFIG and len(err.strip().splitlines()) == 1
    assert "config.toml" in err and "arklore config set astr" in err


# -- 3. one home, one spelling ------------------------------------------------------------------


def test_one_home_spelled_two_ways_is_built_once(
    user: Path, set_data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ARKLORE_HOME", "var")  # relative, as the commands' old default
    code, out, err = run_main(monkeypatch, capsys, "build", "--json")
    assert code == 0, err
    assert not any(steps(out).values())
    collection = json.loads((work / "var" / "rag" / "active.json").read_text())["collection"]
    (tmp_path / "link").symlink_to(work)
    for spelling in (work / "sub" / ".." / "var", tmp_path / "link" / "var"):
        monkeypatch.setenv("ARKLORE_HOME", str(spelling))  # absolute, as `make` passes it
        code, out, err = run_main(monkeypatch, capsys, "build", "--json")
        assert code == 0, err
        # ingest always runs (cheap, it finds nothing changed); every other step is skipped
        assert steps(out) == {name: name != "ingest" for name in STEPS}
        assert json.loads(out)["steps"][0]["summary"]["changed"] == 0
        code, out, _ = run_main(monkeypatch, capsys, "doctor", "--json")
        checks = {c["name"]: c for c in json.loads(out)["checks"]}
        assert code == 0 and checks["built"]["ok"] and checks["home"]["found"] == str(work / "var")
    pointer = json.loads((work / "var" / "rag" / "active.json").read_text())
    assert pointer["collection"] == collection  # no new Chroma collection


def test_the_default_home_is_the_one_make_builds_whatever_the_working_directory(
    user: Path, checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = Settings.from_env()
    assert s.home == (checkout / "var").resolve() and s.origins["home"] == "default"
    monkeypatch.setattr(locations, "package_checkout", lambda: None)  # an installed arklore
    assert Settings.from_env().home == (user / ".local" / "share" / "arklore").resolve()


# -- 4. arklore doctor --------------------------------------------------------------------------


def test_doctor_says_where_each_root_came_from_and_exits_0_when_the_build_can_run(
    user: Path, checkout: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("ARKLORE_ASTR", str(data[1]))
    monkeypatch.setenv("LLM_API_KEY", "sk-secret-value-1234")
    code, out, err = run_main(monkeypatch, capsys, "doctor", "--json")
    report = json.loads(out)
    checks = {c["name"]: c for c in report["checks"]}
    assert code == 0 and report["ok"], err
    assert checks["gamedata"]["origin"] == "checkout" and checks["astr"]["origin"] == "env"
    assert checks["home"]["origin"] == "default"
    assert checks["built"]["ok"] is False and "arklore build" in checks["built"]["fix"]
    assert checks["llm"]["ok"] and "sk-secret" not in out
    assert {"embedder", "chroma", "web", "chromium"} <= set(checks)
    code, out, _ = run_main(monkeypatch, capsys, "doctor")
    assert code == 0 and "sk-secret" not in out and "[checkout]" in out


def test_doctor_says_a_graph_built_after_the_index_leaves_the_home_stale(
    user: Path, set_data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """`arklore graph build` by hand after a build: turns read the old relation index, so
    the home is not "built" until `arklore build` runs again."""
    monkeypatch.setenv("ARKLORE_HOME", str(user / "home"))

    def built() -> dict[str, Any]:
        _, out, _ = run_main(monkeypatch, capsys, "doctor", "--json")
        checks: dict[str, dict[str, Any]] = {c["name"]: c for c in json.loads(out)["checks"]}
        return checks["built"]

    assert run_main(monkeypatch, capsys, "build")[0] == 0
    assert built()["ok"]
    graph = user / "home" / "relation_graph.json"
    graph.write_bytes(graph.read_bytes().replace(b"{", b"{ ", 1))  # another graph
    stale = built()
    assert not stale["ok"] and "relation graph changed" in stale["found"], stale
    assert stale["fix"] == "run `arklore build`"
    assert run_main(monkeypatch, capsys, "build")[0] == 0
    assert built()["ok"]


def test_doctor_says_a_build_stopped_part_way_left_the_home_incomplete(
    user: Path, set_data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    home = user / "stopped"
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    home.mkdir(parents=True)
    (home / "arklore.sqlite3").write_bytes(b"")  # a store from an earlier build
    mark = BuildMark(home)
    mark.start()
    mark.step_done("ingest")  # then Ctrl-C in the graph step
    _, out, _ = run_main(monkeypatch, capsys, "doctor", "--json")
    built = {c["name"]: c for c in json.loads(out)["checks"]}["built"]
    assert not built["ok"] and built["found"].startswith("incomplete (missing: graph"), built
    assert "arklore build" in built["fix"] and "resume" in built["fix"]


def test_doctor_exits_non_zero_with_the_first_fix_when_no_data_is_found(
    user: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    code, out, err = run_main(monkeypatch, capsys, "doctor")
    assert code == EXIT_CONFIG
    assert err.startswith("error: gamedata: ") and len(err.strip().splitlines()) == 1
    assert "arklore config set gamedata" in err
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--json")
    report = json.loads(out)
    assert code == EXIT_CONFIG and not report["ok"] and "ARKLORE_GAMEDATA" in report["first_fix"]


def test_doctor_names_an_unreachable_chroma_server(
    user: Path, set_data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", "1")  # nothing listens on port 1
    code, _, err = run_main(monkeypatch, capsys, "doctor")
    assert code == EXIT_CONFIG and "chroma" in err and "CHROMA_HOST" in err


# -- 5. swapped roots ---------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["both", "gamedata", "astr"])
def test_swapped_data_roots_are_said_to_look_swapped(
    which: str, user: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    gamedata, astr = data
    given = {"both": (astr, gamedata), "gamedata": (astr, astr), "astr": (gamedata, gamedata)}
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(given[which][0]))
    monkeypatch.setenv("ARKLORE_ASTR", str(given[which][1]))
    monkeypatch.setenv("ARKLORE_HOME", str(user / "home"))
    code, _, err = run_main(monkeypatch, capsys, "build")
    assert code == EXIT_CONFIG and len(err.strip().splitlines()) == 1
    assert "look swapped" in err and "ARKLORE_GAMEDATA" in err and "ARKLORE_ASTR" in err
    assert not (user / "home" / "arklore.sqlite3").exists()


@pytest.mark.realdata
def test_the_real_roots_swapped_are_said_to_look_swapped(
    gamedata_root: Path, astr_root: Path, user: Path
) -> None:
    from arklore.core.errors import DataNotFoundError
    from arklore.sources.roots import DataRoots

    DataRoots(gamedata_root, astr_root).check_not_swapped()
    with pytest.raises(DataNotFoundError, match="look swapped"):
        DataRoots(astr_root, gamedata_root).check_not_swapped()


# -- 6. not built -------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("turn", "陈", "你好"), ("stats",), ("rag", "status")])
def test_a_home_not_built_is_named_with_arklore_build_and_the_working_directory(
    args: tuple[str, ...], user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARKLORE_HOME", "var")
    code, _, err = run_main(monkeypatch, capsys, *args)
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "arklore build" in err and "arklore ingest" not in err
    assert f"{tmp_path.resolve() / 'var'} is not built" in err
    assert "relative to the working directory" in err
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "var"))  # absolute: no such note
    code, _, err = run_main(monkeypatch, capsys, *args)
    assert "arklore build" in err and "relative to the working directory" not in err


def test_a_home_without_its_graph_is_named_with_arklore_build(
    user: Path, set_data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    assert run_main(monkeypatch, capsys, "ingest")[0] == 0
    code, _, err = run_main(monkeypatch, capsys, "graph", "show", "陈")
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "arklore build" in err and f"{(tmp_path / 'home').resolve()} is not built" in err


# -- 7. path settings that point nowhere ---------------------------------------------------------


@pytest.mark.parametrize(
    ("var", "kind"),
    [("ARKLORE_CHARS_DIR", "folder"), ("ARKLORE_MANIFEST", "file"), ("ARKLORE_ALIASES", "file"),
     ("ARKLORE_MATRIX", "file"), ("ARKLORE_GAMEDATA", "folder"), ("ARKLORE_ASTR", "folder")],
)  # fmt: skip
def test_a_path_setting_that_points_nowhere_is_an_error_naming_it(
    var: str, kind: str, user: Path, set_data: tuple[Path, Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys,
) -> None:  # fmt: skip
    monkeypatch.setenv(var, str(tmp_path / "nowhere"))
    code, _, err = run_main(monkeypatch, capsys, "turn", "陈", "你好")
    assert code == EXIT_CONFIG and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {var}=") and f"no such {kind}" in err


# -- 8. the unknown-name hint -------------------------------------------------------------------


def test_the_unknown_name_hint_names_the_real_alias_file_and_the_entry_form(
    user: Path, set_data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from arklore.core.errors import UnknownOperatorError
    from arklore.names.aliases import default_alias_path
    from arklore.workspace import Workspace

    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    assert run_main(monkeypatch, capsys, "ingest")[0] == 0
    code, _, err = run_main(monkeypatch, capsys, "persona", "无名氏")
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert str(default_alias_path()) in err and default_alias_path().is_file()
    assert "ARKLORE_ALIASES" in err and '[[alias]], name = "无名氏" and id = "char_' in err
    assert "data/aliases.toml" not in err.replace(str(default_alias_path()), "")
    with Workspace(Settings.from_env()) as ws, pytest.raises(UnknownOperatorError) as exc:
        ws.names.resolve("无名氏")
    assert str(default_alias_path()) not in exc.value.one_line()  # what the service sends
    mine = tmp_path / "aliases.toml"
    mine.write_text("", encoding="utf-8")
    monkeypatch.setenv("ARKLORE_ALIASES", str(mine))
    code, _, err = run_main(monkeypatch, capsys, "persona", "无名氏")
    assert (
        code != 0
        and str(mine.resolve()) in err
        and '[[alias]], name = "无名氏" and id = "char_' in err
    )
