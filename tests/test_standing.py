"""Where she stands now (events.standing and the now block): the latest sentence of the game's
summaries that names her, an office she took, where she went, and her own record, each with
its stage. Every summary here is invented for these tests."""

from __future__ import annotations

from pathlib import Path

from support.service_world import S3, kb_workspace, make_kb

from arklore.chat.turn import render_why
from arklore.corpus.store import StageInfo
from arklore.events.appearances import Appearance
from arklore.events.standing import LATEST, OFFICE_TAKEN, PLACE, Standing, standing

ME = "char_900_mira"
FAMILY = (ME,)
NAMES = ("米拉",)


def names_her(text: str) -> bool:
    return any(n in text for n in NAMES)


def stage(path: str, event: str | None, opened: int | None, summary: str, rank: int):
    """(her appearance there, the stage's info)."""
    app = Appearance(path, rank, f"{event}-{rank}" if event else None, event, event, "标题",
                     "行动前", summary, spoken=3)  # fmt: skip
    info = StageInfo(path, "avg", event, event, None, "标题", "行动前", summary, rank, 10, opened)
    return app, info


def run(*stages: tuple[Appearance, StageInfo]) -> list[Standing]:
    return standing([a for a, _ in stages], {i.stage_path: i for _, i in stages}, names_her, FAMILY)


def test_the_latest_event_comes_first_by_when_it_opened_not_by_its_rank() -> None:
    old = stage("activities/act1/s1", "act1", 100, "米拉在旧城里迷了路，走了很久。", rank=900)
    new = stage("obt/main/level_main_17-01_beg", "main_17", 500, "米拉和同伴们守住了城门。", 10)
    got = run(old, new)
    assert [g.text for g in got] == ["米拉和同伴们守住了城门。"] and got[0].why == LATEST


def test_at_a_story_point_the_latest_is_in_story_order_not_by_when_it_opened() -> None:
    chapter = stage("obt/main/level_main_05-01_beg", "main_5", 100, "米拉和同伴们守住了城门。", 1)
    prequel = stage("activities/act9/s1", "act9", 900, "多年以前，米拉离开了故乡的小镇。", 2)
    stages = (chapter, prequel)
    by_opening = run(*stages)  # no point: the prequel opened last
    assert by_opening[0].text == "多年以前，米拉离开了故乡的小镇。"
    story = {chapter[0].stage_path: 2, prequel[0].stage_path: 1}  # the prequel happens first
    at_point = standing([a for a, _ in stages], {i.stage_path: i for _, i in stages}, names_her,
                        FAMILY, story.__getitem__)  # fmt: skip
    assert at_point[0].text == "米拉和同伴们守住了城门。" and at_point[0].why == LATEST


def test_an_office_she_took_is_kept_and_one_denied_or_wished_is_not() -> None:
    last = stage("activities/act9/s3", "act9", 900, "米拉与老友们在酒馆重聚，一醉方休。", 3)
    took = stage("activities/act9/s1", "act9", 900, "战后，米拉主动接过了议长的位置。", 1)
    refused = stage(
        "activities/act9/s2", "act9", 900, "米拉正式宣告她不会成为国王，也不会继任国王。", 2
    )
    wished = stage("activities/act9/s0", "act9", 900, "有人试图劝说米拉成为女王，她没有回答。", 0)
    got = run(last, took, refused, wished)
    assert [(g.why, g.text) for g in got][:2] == [
        (LATEST, "米拉与老友们在酒馆重聚，一醉方休。"),
        (OFFICE_TAKEN, "战后，米拉主动接过了议长的位置。"),
    ]
    assert [g.text for g in got if g.why == OFFICE_TAKEN] == ["战后，米拉主动接过了议长的位置。"]


def test_a_word_of_office_or_place_counts_only_when_it_is_said_of_her() -> None:
    """Another person's office after a comma is theirs (海伦…担任秘书), and so is a place word
    before her name is reached in the clause."""
    latest = stage("activities/act9/s9", "act9", 900, "米拉在雨里等了一夜，没有等到回信。", 9)
    theirs = stage("activities/act9/s1", "act9", 900, "米拉赶到时，老板已经担任了议长。", 1)
    left = stage("activities/act9/s2", "act9", 900, "米拉离开了故乡的矿场，一路向北。", 2)
    got = run(latest, theirs, left)
    assert [g.why for g in got] == [LATEST, PLACE] and "离开" in got[1].text


def test_her_own_record_is_kept_apart_and_last_with_its_office() -> None:
    latest = stage("activities/act9/s9", "act9", 900, "米拉在雨里等了一夜，没有等到回信。", 9)
    record = stage("obt/memory/story_mira_1_1", None, None,
                   "秘书走进办公室，而米拉继任总辖后，第一件事便是开会。", 2000)  # fmt: skip
    other = stage("obt/memory/story_zeta_1_1", None, None, "米拉继任总辖后请泽塔喝茶。", 2001)
    got = run(record, latest, other)
    assert [g.why for g in got] == [LATEST, OFFICE_TAKEN]
    assert got[-1].own_record and got[-1].opened is None and "继任总辖" in got[-1].text


def test_game_modes_how_to_play_and_short_sentences_are_never_her_standing() -> None:
    mode = stage(
        "obt/rogue/rogue_1/level_rogue1_1", "rogue_1", 990, "米拉在集成战略里当上了队长。", 5
    )
    guide = stage("activities/act9/guide/g1", "act9", 995, "米拉教你如何摆放干员。", 6)
    short = stage("activities/act9/s1", "act9", 900, "米拉来了。", 1)
    assert run(mode, guide, short) == []


def test_the_now_block_says_it_is_newer_than_the_archive_and_names_the_stage(
    tmp_path: Path,
) -> None:
    ws = kb_workspace(make_kb(tmp_path / "home", index=False))
    try:
        block = ws.chat.turn("阿米娅", "你好").block("now")
        assert block.text == (
            "【阿米娅的近况（剧情概要，新于档案资料，有出入时以此为准）】\n"
            "- AT-1 幕间 《夜谈》（测试活动）：阿米娅和陈在夜里聊起了过去。"
        )
        assert [s.path for s in block.stages] == [S3] and block.tokens <= block.budget
        why = render_why(ws.chat.turn("阿米娅", "你好"))  # the trace names each entry
        assert "      - latest: 阿米娅和陈在夜里聊起了过去。\n" in why
        tiny = kb_workspace(ws.paths.home, now_token_budget=10).chat.turn("阿米娅", "你好")
        assert tiny.block("now").empty and "budget" in tiny.block("now").reason
        nobody = ws.chat.turn("独行者", "你好").block("now")
        assert nobody.empty and "names her" in nobody.reason
    finally:
        ws.close()
