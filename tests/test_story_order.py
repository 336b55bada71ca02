"""The story order and story points on invented stages (no game data): main chapters in
sequence, side stories where the curated file places them, records as backstory, the rest
after the last chapter flagged as fallback; a point names one story, or fails naming the
closest; the packaged order file is well formed."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from arklore.core.errors import InputFileError, StoryPointError
from arklore.corpus.story import (
    BACKSTORY,
    CURATED,
    FALLBACK,
    MAIN,
    CuratedOrder,
    Placement,
    StageRow,
    StoryOrder,
    StoryView,
    build_order,
    default_order_path,
    load_order,
    resolve_point,
)
from arklore.events.memories import in_story_order, told_as_past
from arklore.events.store import MemoryRow

ROWS = [  # (path, event, release rank): release order is not story order
    StageRow("obt/main/level_main_00-01_beg", "main_0", 1),
    StageRow("obt/main/level_main_01-01_beg", "main_1", 2),
    StageRow("obt/main/level_main_02-01_beg", "main_2", 3),
    StageRow("activities/act_a/level_a_01_beg", "act_a", 4),  # after main_1 in the story
    StageRow("activities/act_a/level_a_02_beg", "act_a", 5),
    StageRow("activities/act_b/level_b_01_beg", "act_b", 6),  # a sequel of act_a
    StageRow("activities/act_c/level_c_01_beg", "act_c", 7),  # unplaced: fallback
    StageRow("activities/act_d/level_d_01_beg", "act_d", 8),  # a prequel
    StageRow("obt/memory/story_kit_1_1", "story_kit_set_1", 9),  # her backstory
    StageRow("obt/memory/story_kit_2_1", "story_kit_set_2", 10),  # after main_2
    StageRow("obt/tutorial/level/main_01-05", None, 11),  # a level's dialogue in chapter 1
    StageRow("obt/rogue/rogue_1/x", None, 0),  # nothing says where
]
CURATED_ORDER = CuratedOrder(
    ("main_0", "main_1", "main_2"),
    (
        Placement("act_a", ("main_1",), ("main_2",), "its people talk of chapter 1's end"),
        Placement("act_b", ("main_0", "act_a"), (), "a sequel of act_a"),
        Placement("act_d", (), ("main_0",), "years before the main story"),
        Placement("story_kit_set_2", ("main_2",), (), "after chapter 2"),
    ),
)
NAMES = {"main_0": "序章", "main_1": "第一章", "main_2": "第二章", "act_a": "雪原",
         "act_b": "雪原续", "act_c": "无名", "act_d": "往昔", "story_kit_set_1": "旧事"}  # fmt: skip


def _order() -> StoryOrder:
    return build_order(ROWS, CURATED_ORDER, NAMES)


def _sequence() -> list[str]:
    order = _order()
    return sorted(order.positions, key=order.positions.__getitem__)


def test_stages_follow_the_story_not_the_release() -> None:
    seq = _sequence()
    # the prequel and her backstory before chapter 0; act_a after chapter 1 (and its level
    # dialogue), act_b after act_a, before chapter 2; her later record after chapter 2;
    # what nothing places after the last chapter
    assert seq == [
        "activities/act_d/level_d_01_beg",
        "obt/memory/story_kit_1_1",
        "obt/main/level_main_00-01_beg",
        "obt/main/level_main_01-01_beg",
        "obt/tutorial/level/main_01-05",  # at its chapter's end (its release rank is later)
        "activities/act_a/level_a_01_beg",
        "activities/act_a/level_a_02_beg",
        "activities/act_b/level_b_01_beg",
        "obt/main/level_main_02-01_beg",
        "obt/memory/story_kit_2_1",
        "obt/rogue/rogue_1/x",
        "activities/act_c/level_c_01_beg",
    ]


def test_each_story_says_how_its_place_is_known() -> None:
    order = _order()
    assert order.how["main_1"] == MAIN and order.how["act_a"] == CURATED
    assert order.how["story_kit_set_1"] == BACKSTORY and order.how["act_d"] == CURATED
    assert order.fallback_groups() == ["other:obt/rogue/rogue_1", "act_c"]
    assert order.counts() == {MAIN: 3, CURATED: 4, BACKSTORY: 1, FALLBACK: 2}


def test_a_loop_in_the_curated_file_falls_back_instead_of_hanging() -> None:
    looped = CuratedOrder(
        ("main_0",),
        (Placement("act_a", ("act_b",)), Placement("act_b", ("act_a",))),
    )
    order = build_order(ROWS, looped)
    assert FALLBACK in {order.how["act_a"], order.how["act_b"]}
    assert len(order.positions) == len(ROWS)


def test_a_point_is_the_end_of_the_one_story_it_names() -> None:
    order = _order()
    point = resolve_point(
        order, "雪原", ["activities/act_a/level_a_01_beg", "activities/act_a/level_a_02_beg"]
    )
    assert point.group == "act_a" and point.label == "雪原"
    view = StoryView(order, point)
    assert view.knows("activities/act_a/level_a_02_beg")  # the whole story it names
    assert view.knows("obt/memory/story_kit_1_1")  # her backstory: known at every point
    assert not view.knows("activities/act_b/level_b_01_beg")  # its sequel comes later
    assert not view.knows("activities/act_c/level_c_01_beg")  # placed by fallback only
    assert not view.knows("obt/main/level_main_02-01_beg")
    assert not view.knows("not/stored")  # what the order does not hold is never known
    assert view.knows_lines(["obt/main/level_main_01-01_beg#3:0123abcd"])
    assert not view.knows_lines(["story:obt/main/level_main_02-01_beg#3:0123abcd"])


def test_an_unknown_or_ambiguous_point_names_the_closest() -> None:
    order = _order()
    with pytest.raises(StoryPointError, match="no story point") as exc:
        resolve_point(order, "雪源", [], candidates=lambda: ["雪原", "雪原续", "序章"])
    assert "雪原" in exc.value.hint
    both = ["activities/act_a/level_a_01_beg", "activities/act_b/level_b_01_beg"]
    with pytest.raises(StoryPointError, match="several stories") as exc:
        resolve_point(order, "A-1", both)
    assert "雪原 (act_a)" in exc.value.message and "雪原续 (act_b)" in exc.value.message


def test_the_curated_file_is_refused_when_it_places_a_story_twice(tmp_path: Path) -> None:
    bad = tmp_path / "order.toml"
    bad.write_text(
        '[[main]]\nid = "main_0"\n\n[[place]]\ngroup = "act_a"\nafter = "main_0"\n\n'
        '[[place]]\ngroup = "act_a"\nafter = "main_0"\n',
        encoding="utf-8",
    )
    with pytest.raises(InputFileError, match="placed twice"):
        load_order(bad)
    bad.write_text('[[main]]\nid = "main_0"\n\n[[place]]\ngroup = "x"\nafter = 3\n')
    with pytest.raises(InputFileError, match="after/before"):
        load_order(bad)


def test_the_packaged_order_places_every_main_chapter_once_with_a_reason() -> None:
    order = load_order(default_order_path())
    doc = tomllib.loads(default_order_path().read_text(encoding="utf-8"))
    assert list(order.mains) == [f"main_{i}" for i in range(len(order.mains))]
    assert len(order.mains) >= 18
    groups = [p.group for p in order.places]
    assert len(groups) == len(set(groups))  # no story placed twice
    defined = set(order.mains) | set(groups)
    for p in order.places:
        assert p.reason.strip(), p.group
        assert p.confidence in ("high", "medium", "low"), p.group
        # a point it is placed after is a chapter, a placed story or a story id of the tables
        assert all(a in defined or a.startswith(("act", "story_", "1stact")) for a in p.after)
    assert doc["records"]["default"] == BACKSTORY


def test_timeline_shows_story_and_release_order_and_checks_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from support.service_world import make_kb
    from typer.testing import CliRunner

    from arklore.cli.app import app

    home = make_kb(tmp_path / "home", index=False)
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    r = CliRunner().invoke(app, ["timeline", "--order", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    # the invented stories are in no curated file: the release order places them, flagged
    assert [(s["story"], s["release"], s["group"], s["how"]) for s in got["stories"]] == [
        (1, 1, "test_1", FALLBACK), (2, 2, "act_test", FALLBACK),
    ]  # fmt: skip
    r = CliRunner().invoke(app, ["timeline", "--check"])
    assert r.exit_code == 0 and "act_test 测试活动" in r.stdout and "2 fallback" in r.stdout


def _memory(stage: str, line: int, hint: str | None = None) -> MemoryRow:
    return MemoryRow(stage, 0, "她", None, f"我在{stage}第{line}行。", "first", [], line, line,
                     [], None, hint, None, None, None, None, 0)  # fmt: skip


def test_memories_run_in_story_order_and_a_dated_flashback_opens_its_story() -> None:
    a1, a2 = "activities/act_a/level_a_01_beg", "activities/act_a/level_a_02_beg"
    ch1, ch2 = "obt/main/level_main_01-01_beg", "obt/main/level_main_02-01_beg"
    rows = [_memory(ch2, 1), _memory(a2, 9, "三年前"), _memory(a2, 3, "那天夜里"),
            _memory(a1, 5), _memory(ch1, 2)]  # fmt: skip
    got = [(r.stage_path, r.line_start) for r in in_story_order(rows, _order())]
    # release order would put act_a after chapter 2; "三年前" in its second stage happened
    # before act_a began; "那天夜里" keeps its place
    assert got == [(ch1, 2), (a2, 9), (a1, 5), (a2, 3), (ch2, 1)]
    assert told_as_past("十几年前") and told_as_past("小时候") and not told_as_past("两周后")
    assert _order().moment("nowhere/at/all") == len(_order().positions)  # unplaced: last
