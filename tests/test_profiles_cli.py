"""The store adapter (profiles/sources.py) on a tiny invented store, and the thin CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.lines import line, stage
from support.profiles_world import NEW_LINES
from support.store import ingested_store
from typer.testing import CliRunner

from arklore.core.errors import UsageError
from arklore.core.operators import Operator
from arklore.corpus.store import Store
from arklore.names.registry import Registry
from arklore.profiles import sources
from arklore.profiles.charfile import TIER_B, CharProfile

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
T, NEW = "char_900_tester", "char_999_newcomer"
OPS = [Operator(T, "测试员"), Operator(NEW, "岚烟")]


def make_store(path: Path) -> Store:
    stages = []
    for k in range(4):
        sp = f"test/s{k}"
        lines = [line(sp, i + 1, "岚烟", t) for i, t in enumerate(NEW_LINES[k::4])]
        lines.append(line(sp, 10, "测试员", "北边的桥每到雨季就会松动，要小心。"))
        lines.append(
            line(sp, 11, "岚烟", "这一句的说话人带着问号，不能算是她说的。", uncertain=True)
        )
        stages.append(stage(sp, lines))
    for sp in ("test/training/t_01", "activities/act7fun/level_act7fun_01_end"):  # not story
        said = line(sp, 1, "岚烟", "这一句出自玩法教学或愚人节活动，不是她的故事。")
        stages.append(stage(sp, [said]))
    return ingested_store(path, stages, Registry({o.char_id: o for o in OPS}))


def test_story_lines_and_sources_from_the_store(tmp_path: Path) -> None:
    with make_store(tmp_path / "arklore.sqlite3") as store:
        by_op = sources.story_lines(store)
        assert set(by_op) == {T, NEW}
        new = by_op[NEW]
        assert len(new) == len(NEW_LINES)  # the uncertain line is not hers, nor a non-story one
        assert [(s.stage_path, s.line_no) for s in new] == sorted(
            (s.stage_path, s.line_no) for s in new
        )
        assert all(s.char_id == NEW and s.speaker == "岚烟" for s in new)
        assert sources.story_lines(store, [T]).keys() == {T}
        src = sources.story_line_sources(store, [new[0].line_id, "test/s0#99:deadbeef"])
        assert list(src) == [f"story:{new[0].line_id}"]
        assert src[f"story:{new[0].line_id}"].text == new[0].text
        assert src[f"story:{new[0].line_id}"].owner == NEW
        assert [o.char_id for o in sources.load_operators(store)] == [T, NEW]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from arklore.cli.app import app

    home = tmp_path / "home"
    gamedata = tmp_path / "gamedata"
    (gamedata / "zh_CN/gamedata/story").mkdir(parents=True)
    shutil.copytree(FIXTURES, gamedata / "zh_CN/gamedata/excel")
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(gamedata))
    for var in ("LLM_API_KEY", "LLM_BASE_URL", "ARKLORE_CHARS_DIR"):
        monkeypatch.delenv(var, raising=False)
    make_store(home / "arklore.sqlite3").close()
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=True)

    return run, home


def test_cli_distill_persona_review(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, home = cli
    r = run("distill", "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    est = json.loads(r.stdout)
    assert est["B"]["requests"] == 2 and est["total"]["cost_usd"] > 0
    assert not (home / "chars").exists()
    r = run("distill", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["writes"] == {"written": 2} and out["llm_tasks"] == []
    assert out["statuses"]["C"] == {"ok": 1, "skipped": 1}  # the rule: the tester's lines
    chars = home / "chars"
    new = CharProfile.read(chars / f"{NEW}.char")
    assert new.tier == TIER_B and len(new.quotes()) == 6
    assert all(q.kind == "story" for q in new.quotes())

    r = run("persona", "岚烟", "--json")
    shown = json.loads(r.stdout)
    assert shown["tier"] == "B" and [s["title"] for s in shown["sections"]] == ["语录"]
    assert shown["sections"][0]["tokens"] > 0 and shown["relation_context"] is True

    r = run("review-queue", "--json")
    assert r.exit_code == 0, r.output
    queue = json.loads(r.stdout)
    entry = next(e for e in queue["entries"] if e["char_id"] == NEW)
    assert entry["gaps"].startswith("no source: handbook_info_table (archive)")
    assert entry["tasks"]["B"]["status"] == "ok" and entry["tasks"]["D"]["status"] == "skipped"
    md = Path(queue["path"]).read_text(encoding="utf-8")
    assert md.startswith("# Character profile review queue") and "## No source" in md
    r = run("review-queue", "--html", "--out", str(tmp_path / "q.html"))
    assert r.exit_code == 0 and (tmp_path / "q.html").read_text().startswith("<!DOCTYPE html>")

    # a person takes the tester's file over: the next run leaves it alone
    person = "# 测试员\n\n## 我·性格\n认真。\n"
    (chars / f"{T}.char").write_text(person, encoding="utf-8")
    r = run("distill", "--op", "测试员", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["protected"] == {T: str(chars / f"{T}.char")}
    assert (chars / f"{T}.char").read_text(encoding="utf-8") == person

    r = run("review", "approve", "岚烟")
    assert r.exit_code == 0, r.output
    assert CharProfile.read(chars / f"{NEW}.char").tier == "A"
    r = run("review", "approve", "测试员")
    assert r.exit_code == 1 and "written by a person" in str(r.exception)

    # a folder of hand-written files is read first and never written to
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / f"{NEW}.char").write_text("# 岚烟\n\n## 我·性格\n爱看灯塔。\n", encoding="utf-8")
    monkeypatch.setenv("ARKLORE_CHARS_DIR", str(mine))
    r = run("persona", NEW, "--json")
    assert json.loads(r.stdout)["tier"] == "S"
    r = run("distill", "--out", str(mine))
    assert isinstance(r.exception, UsageError) and r.exception.exit_code == 2
    assert "never written to" in r.exception.hint

    r = run("distill", "--op", "谁也不是")
    assert r.exit_code != 0 and "谁也不是" in str(r.exception)
