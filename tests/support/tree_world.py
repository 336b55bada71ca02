"""Builds a tiny pair of data checkouts (raw AVG + ASTR) written for the tests.

The stories are invented for this project; they only share the file formats with the game.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arklore.workspace import Workspace

STORY = Path("zh_CN/gamedata/story")
EXCEL = Path("zh_CN/gamedata/excel")

AVG_STAGE_A = """\
[HEADER(key="title_test", is_skippable=true, fit_mode="BLACK_MASK")] 测试关
[Background(image="bg_test")]
[Character(name="char_900_tester_1")]
[name="测试员"]  今天的巡逻路线定好了吗？
[Character(name="char_900_tester_1", name2="char_901_guide_1", focus=2)]
[name="向导"]  定好了，Dr.{@nickname}，我们走北边。
晨雾还没有散去。
[Decision(options="走北边;走南边", values="1;2")]
[Predicate(references="1")]
[name="向导"]  北边的桥还算结实。
[Predicate(references="2")]
[name="向导"]  南边要绕很远。
[Predicate(references="1;2")]
[name="测试员"]  那就出发吧。
"""

AVG_STAGE_B = """\
[name="“旅人”"]  有人在吗？
[name="守卫？"]  站住。
[name="旅人"]  我只是路过。
"""


def _astr_from_lines(header: dict[str, Any], elements: list[dict[str, Any]]) -> dict[str, Any]:
    return {**header, "storyList": [{"id": i, **e} for i, e in enumerate(elements)]}


ASTR_STAGE_A = _astr_from_lines(
    {
        "lang": "zh_CN",
        "eventid": "test_1",
        "eventName": "测试篇",
        "entryType": "MAINLINE",
        "storyCode": "T-1",
        "avgTag": "行动前",
        "storyName": "晨雾",
        "storyInfo": "一段测试用的简介。",
    },
    [
        {"prop": "HEADER", "attributes": {"key": "title_test"}},
        {"prop": "Background", "attributes": {"image": "bg_test"}},
        {"prop": "Character", "attributes": {"name": "char_900_tester_1"}},
        {
            "prop": "name",
            "attributes": {"name": "测试员", "content": "  今天的巡逻路线定好了吗？"},
            "figure_art": "char_900_tester_1",
        },
        {
            "prop": "Character",
            "attributes": {"name": "char_900_tester_1", "name2": "char_901_guide_1", "focus": 2.0},
        },
        {
            "prop": "name",
            "attributes": {"name": "向导", "content": "  定好了，Dr.{@nickname}，我们走北边。"},
            "figure_art": "char_901_guide_1",
        },
        {"prop": "name", "attributes": {"content": "晨雾还没有散去。"}},
        {
            "prop": "Decision",
            "attributes": {"options": "走北边;走南边", "values": "1;2"},
            "targetLine": {"option1": "line8", "option2": "line10"},
        },
        {"prop": "Predicate", "attributes": {"references": "1"}, "endOfOpt": False},
        {"prop": "name", "attributes": {"name": "向导", "content": "  北边的桥还算结实。"}},
        {"prop": "Predicate", "attributes": {"references": "2"}, "endOfOpt": False},
        {"prop": "name", "attributes": {"name": "向导", "content": "  南边要绕很远。"}},
        {"prop": "Predicate", "attributes": {"references": "1;2"}, "endOfOpt": True},
        {"prop": "name", "attributes": {"name": "测试员", "content": "  那就出发吧。"}},
    ],
)


FIXTURE_EXCEL = Path(__file__).parents[1] / "fixtures" / "excel"


def make_workspace(
    home: Path, gamedata: Path | None = None, astr: Path | None = None, **kw: Any
) -> Workspace:
    """A Workspace on ``home`` reading the given data checkouts (no environment involved)."""
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    return Workspace(Settings(home=home, gamedata=gamedata, astr=astr, **kw))


def write_tree(root: Path, *, tables: bool = True) -> tuple[Path, Path]:
    """Write the two checkouts under ``root``; returns (gamedata_root, astr_root).

    ``tables`` copies the invented excel tables of ``tests/fixtures/excel`` (the registry needs
    ``character_table`` and ``skin_table``)."""
    gamedata, astr = root / "gamedata", root / "astr"
    story = gamedata / STORY
    (story / "obt/main").mkdir(parents=True)
    (story / "obt/main/level_test_01_beg.txt").write_text(AVG_STAGE_A, encoding="utf-8")
    (story / "obt/main/level_test_01_end.txt").write_text(AVG_STAGE_B, encoding="utf-8")
    (story / "[uc]info/obt/main").mkdir(parents=True)
    (story / "[uc]info/obt/main/level_test_01_beg.txt").write_text(
        "一段测试用的简介。", encoding="utf-8"
    )
    (gamedata / EXCEL).mkdir(parents=True)
    if tables:
        for f in FIXTURE_EXCEL.glob("*.json"):
            if f.name != "astr_chardict.json":
                shutil.copy(f, gamedata / EXCEL / f.name)
    astr_story = astr / STORY
    (astr_story / "obt/main").mkdir(parents=True)
    (astr_story / "obt/main/level_test_01_beg.json").write_text(
        json.dumps(ASTR_STAGE_A, ensure_ascii=False), encoding="utf-8"
    )
    return gamedata, astr


PATROL_STAGE = "obt/main/level_test_02_beg"
PATROL_SCRIPT = """\
[HEADER(key="title_test", is_skippable=true, fit_mode="BLACK_MASK")] 巡逻
[name="阿米娅"]  陈小姐，北边的路线定好了吗？
[name="陈"]  定好了，阿米娅。今晚我带队。
[name="阿米娅"]  那我去通知推进之王。
[name="推进之王"]  不必了，我已经听到了，陈。
[name="陈"]  好，一起出发。
"""


def write_tree_with_patrol(root: Path) -> tuple[Path, Path]:
    """The invented tree and one more stage where three operators talk (so their views get
    relation documents): a world whose build fills the index with something to rebuild."""
    gamedata, astr = write_tree(root)
    (gamedata / STORY / f"{PATROL_STAGE}.txt").write_text(PATROL_SCRIPT, encoding="utf-8")
    return gamedata, astr


def avg_file(gamedata: Path, name: str = "level_test_01_beg") -> Path:
    return gamedata / STORY / "obt/main" / f"{name}.txt"


def astr_file(astr: Path, name: str = "level_test_01_beg") -> Path:
    return astr / STORY / "obt/main" / f"{name}.json"
