"""Stage metadata from the excel tables: fixture tables plus a real-data coverage check."""

from __future__ import annotations

from pathlib import Path

import pytest

from arklore.core.errors import MalformedSourceError
from arklore.core.model import Source, Stage
from arklore.sources.gamedata import (
    META_ARCHIVE,
    META_FOLDER,
    META_REVIEW,
    StageMeta,
    load_stage_meta,
    meta_for,
    read_table,
)

EXCEL = Path(__file__).parent / "fixtures" / "excel"


def _story_tree(root: Path) -> Path:
    """A tiny story folder: invented scripts and one [uc]info summary."""
    files = {
        "obt/main/level_main_01-01_beg.txt": '[name="A"]x',
        "activities/act9x/level_act9x_01_beg.txt": "x",
        "activities/act9x/level_act9x_extra.txt": "x",  # not in the review table
        "activities/act9x/level_act9x_hidden.txt": "x",
        "obt/tutorial/tut_01.txt": "x",
        "[uc]info/obt/main/level_main_01-01_beg.txt": "\ufeff  测试摘要。\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_stage_meta_is_keyed_by_story_txt_with_event_fields() -> None:
    metas = load_stage_meta(EXCEL)
    m = metas["obt/main/level_main_01-01_beg"]
    assert (m.event_id, m.event_name, m.entry_type) == ("main_1", "测试章节一", "MAINLINE")
    assert (m.story_code, m.avg_tag, m.story_name, m.story_sort) == ("1-1", "行动前", "第一幕", 1)
    assert m.start_time is None  # main chapters have startTime -1 (and this one no show time)
    assert m.story_info is None  # no story folder given
    assert m.meta_source == META_REVIEW
    assert metas["activities/act9x/level_act9x_01_end"].start_time == 1600000000


def test_a_main_chapter_opens_when_the_story_review_shows_it() -> None:
    """Its startTime is -1: its startShowTime places it among the events."""
    metas = load_stage_meta(EXCEL)
    chapter_two = [m for m in metas.values() if m.event_id == "main_2"]
    assert chapter_two and all(m.start_time == 1700000000 for m in chapter_two)


def test_operator_record_sets_keep_entry_type_none_and_no_start_time() -> None:
    m = load_stage_meta(EXCEL)["obt/memory/story_testop_1_1"]
    assert m.entry_type == "NONE" and m.start_time is None and m.story_code is None


def test_archive_avgs_are_added_under_lower_case_paths() -> None:
    metas = load_stage_meta(EXCEL)
    m = metas["activities/act9x/level_act9x_hidden"]
    assert m.meta_source == META_ARCHIVE
    assert (m.event_id, m.story_name) == ("act9x", "隐藏一")
    assert meta_for(metas, "Activities/Act9x/level_act9x_hidden") is m


def test_story_root_reads_info_summaries_and_fills_event_folders(tmp_path: Path) -> None:
    metas = load_stage_meta(EXCEL, _story_tree(tmp_path))
    assert metas["obt/main/level_main_01-01_beg"].story_info == "测试摘要。"
    extra = metas["activities/act9x/level_act9x_extra"]
    assert extra.meta_source == META_FOLDER
    assert (extra.event_id, extra.start_time, extra.story_name) == ("act9x", 1600000000, None)
    assert "obt/tutorial/tut_01" not in metas  # no table knows it: no invented metadata


def test_folder_named_differently_from_event_id_maps_through_story_txt(tmp_path: Path) -> None:
    (tmp_path / "activities/zz001").mkdir(parents=True)
    (tmp_path / "activities/zz001/level_zz001_extra.txt").write_text("x", encoding="utf-8")
    metas = load_stage_meta(EXCEL, tmp_path)
    assert metas["activities/zz001/level_zz001_extra"].event_id == "1stfest"


def test_apply_fills_only_missing_stage_fields() -> None:
    stage = Stage("obt/main/level_main_01-01_beg", Source.ASTR, "x.json", story_name="自带")
    StageMeta(event_id="main_1", story_name="表", story_sort=1).apply(stage)
    assert (stage.event_id, stage.story_name, stage.story_sort) == ("main_1", "自带", 1)


def test_missing_table_reads_as_none_and_empty_meta(tmp_path: Path) -> None:
    assert read_table(tmp_path, "story_review_table") is None
    assert load_stage_meta(tmp_path) == {}


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]"])
def test_malformed_table_raises_with_path(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "story_review_table.json").write_bytes(content)
    with pytest.raises(MalformedSourceError) as err:
        load_stage_meta(tmp_path)
    assert err.value.path.endswith("story_review_table.json")


def test_entry_without_story_list_is_malformed(tmp_path: Path) -> None:
    (tmp_path / "story_review_table.json").write_bytes(b'{"x": {"id": "x"}}')
    with pytest.raises(MalformedSourceError):
        load_stage_meta(tmp_path)


@pytest.mark.realdata
def test_real_stage_meta_covers_story_files(gamedata_root: Path) -> None:
    root = gamedata_root / "zh_CN/gamedata"
    story = root / "story"
    metas = load_stage_meta(root / "excel", story)
    files = {
        p.relative_to(story).as_posix()[: -len(".txt")]
        for p in story.rglob("*.txt")
        if not p.relative_to(story).as_posix().startswith("[uc]info/")
    }
    listed = {p for p, m in metas.items() if m.meta_source in (META_REVIEW, META_ARCHIVE)}
    # every stage the tables list is a real file...
    assert len(listed & files) / len(listed) >= 0.99
    # ...but the tables list only about half the files (tutorials, roguelike, sandbox,
    # minigames have no review rows); with folder inheritance about 70% get metadata
    assert len(set(metas) & files) / len(files) >= 0.65
    with_info = [m for p, m in metas.items() if m.meta_source == META_REVIEW and m.story_info]
    assert len(with_info) >= 0.95 * sum(1 for m in metas.values() if m.meta_source == META_REVIEW)
    m = metas["obt/main/level_main_01-01_beg"]
    assert m.event_id == "main_1" and m.story_code == "1-1"


@pytest.mark.realdata
def test_real_stage_meta_covers_every_astr_stage(gamedata_root: Path, astr_root: Path) -> None:
    """ASTR parses exactly the stages the review list shows, so all of them have full meta."""
    root = gamedata_root / "zh_CN/gamedata"
    metas = load_stage_meta(root / "excel")
    astr = astr_root / "zh_CN/gamedata/story"
    paths = [p.relative_to(astr).as_posix()[: -len(".json")] for p in astr.rglob("*.json")]
    found = [p for p in paths if meta_for(metas, p) is not None]
    assert len(found) / len(paths) >= 0.95
