"""Small text rules every layer shares (core/text.py, core/blocks.py): how a summary is
shortened and what a stage without a title is called."""

from __future__ import annotations

from arklore.core.blocks import StageRef, book_title, is_story
from arklore.core.text import first_sentences, sentence_pieces, shorten


def test_the_first_sentences_are_whole_and_at_least_one() -> None:
    """The archive's 客观履历 and 档案资料 excerpts: a verbatim prefix, one line."""
    text = "甲，乙国人。\n  擅长丙。  \n丁戊己庚辛壬癸子丑寅卯辰巳午未申酉戌亥。"
    assert first_sentences(text, 12) == "甲，乙国人。擅长丙。"  # the third would pass 12
    assert first_sentences(text, 3) == "甲，乙国人。"  # at least the first, whole
    assert first_sentences("没有句号的一段", 100) == "没有句号的一段"
    assert first_sentences("   ", 100) == ""


def test_a_long_text_keeps_its_whole_sentences_that_fit() -> None:
    text = "雪停了。\n近卫局的人都回来了。远处还有人在等。"
    assert shorten(text, 100) == "雪停了。 近卫局的人都回来了。远处还有人在等。"  # fits: one line
    assert shorten(text, 16) == "雪停了。近卫局的人都回来了。"
    assert sentence_pieces("甲。」乙！丙") == ["甲。」", "乙！", "丙"]


def test_a_first_sentence_too_long_is_cut_at_a_clause_never_inside_a_word() -> None:
    long = "敌人已经逼近城门，近卫干员也做出了自己的决定，所有人都在等待命令。"
    assert shorten(long, 26) == "敌人已经逼近城门，近卫干员也做出了自己的决定…"
    # the only clause mark is in the first half of what fits: a plain cut keeps more
    assert shorten(long, 20) == "敌人已经逼近城门，近卫干员也做出了自己…"
    assert len(shorten(long, 20)) == 20


def test_a_stage_without_a_title_is_its_events_level_dialogue_not_a_path() -> None:
    assert StageRef("activities/a1/training/t_01", None, None, "沃伦姆德的薄暮").label() == (
        "「沃伦姆德的薄暮」关卡中的对话"
    )
    # nothing else to say: still no path, which a model cannot read
    assert StageRef("obt/x/y", None, None, None).label() == "一段无标题的剧情"
    # a game mode's own dialogue says which mode, so a model weighs a tutorial as one
    assert StageRef("obt/guide/beg/g_01").label() == "新手引导中的一段对话"
    assert StageRef("obt/rogue/rogue_9/endbook/e_1").label() == "集成战略中的一段对话"
    assert StageRef("activities/act1sandbox/battleavg/d_1").label() == "生息演算中的一段对话"
    assert StageRef("obt/guidebook/x").label() == "一段无标题的剧情"  # a folder, not a prefix
    assert StageRef("activities/act9x/training/t_01_a").label() == "一段玩法引导对话"
    assert StageRef("activities/act4fun/level_act4fun_01_end").label() == "愚人节活动中的一段对话"
    assert StageRef("activities/act9x/training_day").label() == "一段无标题的剧情"
    assert StageRef("activities/act9x/guide_act9x_first").label() == "一段玩法引导对话"
    assert StageRef("activities/act9x/level/act9x_tutorial").label() == "一段玩法引导对话"
    assert StageRef("activities/act9x/level_act9x_tutorial_end").label() == "一段无标题的剧情"
    assert StageRef("activities/act6fun/level_act6fun_entry").label() == "愚人节活动中的一段对话"
    assert StageRef("obt/main/level_main_9_chapter_recap").label() == "主线前情回顾中的一段对话"
    assert StageRef("obt/main/m_01", "1-1", " 夕", "主线").label() == "1-1 《夕》"


def test_a_title_the_tables_already_wrap_is_wrapped_once() -> None:
    assert book_title("《管理法修正案》") == "《管理法修正案》"
    assert book_title(" 夕") == "《夕》" and book_title("  ") is None and book_title(None) is None
    assert StageRef("a/b", "PV-ST-4", "《管理法修正案》").label() == "PV-ST-4 《管理法修正案》"


def test_an_appearance_names_its_event_unless_the_event_is_its_title() -> None:
    """One rule (StageRef.heading) for the chat block, the appearance text of the CLI and
    HTTP memories: an operator record's event is its own title and is said once."""
    from arklore.chat.blocks.memories import _appearance_head
    from arklore.events.appearances import Appearance
    from arklore.events.memories import MemoryItem, appearance_text

    def heads(name: str, event: str) -> set[str]:
        m = MemoryItem(
            "", "obt/memory/x", None, event, [], "appearance", None, 0, name, None, "幕间"
        )
        a = Appearance("obt/memory/x", None, None, None, event, name, "幕间", None)
        return {
            _appearance_head(m, "").removeprefix("- "),
            appearance_text(a),
            m.ref.heading(),
        }

    assert heads("我，即是“我”", "我，即是“我”") == {"幕间 《我，即是“我”》"}
    assert heads("《管理法修正案》", "《管理法修正案》") == {"幕间 《管理法修正案》"}
    assert heads("暗夜", "生于黑夜") == {"幕间 《暗夜》（生于黑夜）"}
    assert StageRef("a/b", "1-7", None, "某活动").heading() == "1-7 「某活动」关卡中的对话"
    # 行动前 and 行动后 of one level are two stages: their headings differ
    beg, end = (StageRef("a/c", "CB-4", "7:59P.M.", "喧闹法则", t) for t in ("行动前", "行动后"))
    assert beg.label() == end.label() and beg.heading() != end.heading()
    assert end.heading() == "CB-4 行动后 《7:59P.M.》（喧闹法则）"


def test_a_how_to_play_or_an_april_fools_stage_is_not_her_story() -> None:
    assert is_story("obt/main/level_main_01-01_beg") and is_story("obt/rogue/rogue_1/e_1")
    assert not is_story("activities/act49side/training/training_act49side_01_c")  # has an event
    assert not is_story("activities/act1vhalfidle/guide_act1vhalfidle_first")
    assert not is_story("activities/act1enemyduel/level/act1enemyduel_tutorial")
    assert not is_story("activities/act7fun/level_act7fun_03_end")
    assert is_story("activities/act49side/level/act49side_11_a")  # a battle's lines are story
