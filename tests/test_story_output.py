"""What `arklore timeline` and `arklore memories` print about stages: a level's in-battle
dialogue by that level's code and name, never a bare file path; the tables' multi-line
summaries (and extracted events) on one indented line under their entry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.lines import line
from support.service_world import LINES, STAGES, kb_workspace, write_graph, write_store
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.model import Source, Stage
from arklore.corpus.levels import IN_LEVEL, labelled
from arklore.corpus.store import StageInfo
from arklore.events.timeline import Timeline, TimelineEvent, TimelineStage, render_text

IN_BATTLE = "obt/tutorial/level/test_01"  # the dialogue inside the level of S1 (T-1 晨雾)
TRAINING = "activities/act_test/training/training_act_test_01"
EVENT_STORY = "activities/act_test/level_act_test_01_beg"
TWO_LINE_SUMMARY = "阿米娅在甲板上画路线。\n凯尔希让她换一条。"


def info(path: str, code: str | None = None, name: str | None = None, event: str | None = None,
         event_name: str | None = None, tag: str | None = None) -> StageInfo:  # fmt: skip
    return StageInfo(path, "avg", event, event_name, code, name, tag, None, 1, 3)


def test_a_levels_in_battle_dialogue_takes_the_code_and_name_of_that_levels_story() -> None:
    every = [
        info("obt/main/level_main_08-17_beg", "JT8-3", "昂首，足践烈焰", "main_8", "怒号光明", "行动前"),
        info("obt/tutorial/level/main_08-17"),
        info("obt/tutorial/level/main_99-01"),  # no story tells of this level
    ]  # fmt: skip
    got = {i.stage_path: i for i in labelled(every[1:], every)}
    battle = got["obt/tutorial/level/main_08-17"]
    assert (battle.story_code, battle.story_name, battle.avg_tag) == (
        "JT8-3",
        "昂首，足践烈焰",
        IN_LEVEL,
    )
    assert battle.event_id is None  # it sorts with the tutorials, not inside main_8
    assert got["obt/tutorial/level/main_99-01"] == every[2]


def test_an_untitled_stage_of_an_event_folder_or_a_chapter_takes_its_event() -> None:
    every = [
        info(EVENT_STORY, "TS-1", "开场", "act_test", "测试活动", "行动前"),
        info("obt/main/level_main_09-01_beg", "9-1", "启程", "main_9", "风暴瞭望", "行动前"),
        info(TRAINING),
        info("obt/main/level_main_9_chapter_recap"),
    ]  # fmt: skip
    got = labelled(every[2:], every)
    assert [(i.event_id, i.event_name, i.story_code) for i in got] == [
        ("act_test", "测试活动", None),
        ("main_9", "风暴瞭望", None),
    ]


def stage(path: str, summary: str | None, events: list[TimelineEvent] = ()) -> TimelineStage:  # type: ignore[assignment]
    return TimelineStage(7, path, None, None, None, None, None, summary, 3, events=list(events))


def test_the_timeline_never_prints_a_bare_path_or_a_broken_line() -> None:
    event = TimelineEvent(1, 2, 4, "起", None, "第一句。\n第二句。", [], [], False)
    tl = Timeline("note", None, [], None, [stage(TRAINING, TWO_LINE_SUMMARY, [event])])
    out = render_text(tl).split("\n")
    entry = next(ln for ln in out if TRAINING in ln)
    assert not entry.strip().split(" ", 1)[1].startswith(TRAINING)  # a name first
    body = out[out.index(entry) + 1 : out.index(entry) + 3]
    assert body == [
        "      阿米娅在甲板上画路线。 凯尔希让她换一条。",
        "      - 2-4 起: 第一句。 第二句。",
    ]


@pytest.fixture
def kb_home(tmp_path: Path) -> Path:
    """The service world's store with its first stage's in-battle dialogue, and a summary of
    two lines (as the tables write some)."""
    home = tmp_path / "home"
    home.mkdir()
    battle = Stage(IN_BATTLE, Source.AVG, f"{IN_BATTLE}.txt", content_hash="t")
    first, rank = STAGES[0]
    two_lines = dataclasses.replace(first, story_info=TWO_LINE_SUMMARY, lines=[])
    lines = LINES | {IN_BATTLE: [line(IN_BATTLE, 1, "阿米娅", "博士，小心左边！")]}
    write_store(home, stages=[(two_lines, rank), *STAGES[1:], (battle, 99)], lines=lines)
    write_graph(home)
    return home


def test_timeline_and_memories_print_names_and_one_line_summaries(
    kb_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with kb_workspace(kb_home) as ws:
        ws.events.index()
    monkeypatch.setenv("ARKLORE_HOME", str(kb_home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    r = CliRunner().invoke(app, ["timeline", "--operator", "阿米娅"])
    assert r.exit_code == 0, r.output
    assert "T-1 晨雾 关卡中" in r.stdout and IN_BATTLE not in r.stdout
    r = CliRunner().invoke(app, ["memories", "阿米娅", "-k", "5"])
    assert r.exit_code == 0, r.output
    assert "  阿米娅在甲板上画路线。 凯尔希让她换一条。" in r.stdout.split("\n")
    for ln in r.stdout.split("\n")[1:]:  # every line of an entry under its "- " head
        assert not ln or ln.startswith(("- ", "  ")), ln


def test_counts_take_the_number_of_their_noun() -> None:
    from arklore.cli.demo import block_head
    from arklore.core.blocks import Block
    from arklore.core.text import counted

    assert block_head(Block("memories", "…", 10, 500, line_ids=["s#1:a"])) == (
        "[memories] 10/500 tokens; cites 1 line"
    )
    assert block_head(Block("memories", "…", 10, 500, line_ids=["s#1:a", "s#2:b"])).endswith(
        "cites 2 lines"
    )
    assert [counted(n, w) for n, w in [(1, "memory"), (0, "memory"), (2, "entry"),
            (1_200, "relation"), (3, "day")]] == [
        "1 memory", "0 memories", "2 entries", "1,200 relations", "3 days"]  # fmt: skip
