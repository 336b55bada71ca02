"""Task B without a model: the quote rule and the verbatim gate, on invented lines."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from arklore.profiles.quotes import (
    MAX_STORY_CHARS,
    Quote,
    QuoteSource,
    StoryLine,
    VoiceLine,
    choose_quotes,
    choose_story,
    choose_voice,
    is_candidate,
    parse_quote_line,
    spread,
    verify_quotes,
    voice_group,
    voice_lines_from_table,
    voice_sources,
)
from arklore.profiles.sources import load_tables

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
T = "char_900_tester"


@pytest.fixture(scope="module")
def charword() -> Mapping[str, Any]:
    table = load_tables(FIXTURES).charword
    assert table is not None  # fixtures/profiles ships charword_table.json
    return table


def test_candidate_rule() -> None:
    assert is_candidate("今天的巡逻路线，我已经替你画好了。", 90)
    assert not is_candidate("到位。", 90)  # too short
    assert not is_candidate("博士，博士，Dr.{@nickname}！", 90)  # mostly the Doctor's name
    assert not is_candidate("Dr.{@nickname}，Dr.{@nickname}！", 90)
    assert not is_candidate("走" * 91, 90)
    assert not is_candidate("……！？……！？……", 90)  # punctuation, no words
    assert is_candidate("  晨雾\n散了，\u3000该出发了。  ", 90)  # whitespace does not count
    assert voice_group("标题") is None and voice_group("戳一下") is None
    assert voice_group("信赖提升后交谈2") == "talk" and voice_group("非3星结束行动") == "battle"
    assert voice_group("精英化晋升1") == "daily"


def test_spread_is_even_and_in_range() -> None:
    assert spread(6, 4) == [0, 2, 3, 5]
    assert spread(4, 1) == [2]
    assert spread(3, 5) == [0, 1, 2]
    assert spread(0, 3) == [] and spread(5, 0) == []
    for n in range(1, 30):
        for k in range(1, n + 1):
            got = spread(n, k)
            assert len(set(got)) == k and got == sorted(got) and got[-1] < n


def test_voice_lines_by_form(charword: Mapping[str, Any]) -> None:
    base = voice_lines_from_table(charword, "char_902_twin")
    form = voice_lines_from_table(charword, "char_1902_twin2")
    assert [v.word_id for v in base] == ["char_902_twin_CN_001"]
    assert [v.word_id for v in form] == ["char_1902_twin2_CN_002", "char_1902_twin2_CN_003"]
    assert all(v.char_id == "char_1902_twin2" for v in form)


def test_voice_choice_follows_the_rule(charword: Mapping[str, Any]) -> None:
    lines = voice_lines_from_table(charword, T)
    picked, n = choose_voice(lines)
    # talk candidates 2,4,5,6,7,9 (8 repeats 2) -> spread 4 of 6: 2,5,6,9; daily 1,10,11,12,13,42
    # -> 2 of 6: 10,13; battle 19,20,25,29 -> 1 of 4: 25. Never 3 (nickname), 23 (short),
    # 34 (戳一下), 37 (标题).
    assert [v.index for v in picked] == [2, 5, 6, 9, 10, 13, 25]
    assert n == 16


def test_a_battle_line_to_an_enemy_is_never_a_quote() -> None:
    """作战中: 你 is the enemy; in a chat with the Doctor it would be the Doctor."""
    me = "char_999_newcomer"
    enemy = VoiceLine(f"{me}_CN_020", me, "作战中1", 20, "所有的路都通向灯塔，但你的好像走不到了。")
    cry = VoiceLine(f"{me}_CN_021", me, "作战中2", 21, "雾散了，跟上我的脚步，前进！")
    talk = VoiceLine(f"{me}_CN_002", me, "交谈1", 2, "你要是累了，就在灯塔下面歇一会儿吧。")
    picked, n = choose_voice([talk, enemy, cry])
    assert [v.word_id for v in picked] == [talk.word_id, cry.word_id] and n == 2


def test_choice_is_deterministic_whatever_the_input_order(charword: Mapping[str, Any]) -> None:
    lines = voice_lines_from_table(charword, T)
    first = choose_quotes(lines)
    for seed in range(5):
        shuffled = list(lines)
        random.Random(seed).shuffle(shuffled)
        assert choose_quotes(sorted(shuffled, key=lambda v: (v.index, v.word_id))) == first
    assert first.origin == "voice" and 5 <= len(first.quotes) <= 8
    assert first.quotes[0] == Quote(
        "北边的桥每到雨季就会松动，我每周都去检查一次，从来没有漏过。",
        "voice:char_900_tester_CN_002",
        "交谈1",
    )


def _story(stage: str, order: int, no: int, text: str, who: str = "char_999_newcomer") -> StoryLine:
    return StoryLine(f"{stage}#{no}:00000000", stage, no, order, "新人", who, text, stage)


STORY = [
    _story("s/a", 1, 1, "我第一次来到测试国的时候，连一张地图都没有。"),  # 19 CJK
    _story("s/a", 2, 2, "那时候我只能跟着河流走，一直走到看见灯塔为止，真的很远。"),
    _story("s/b", 2, 7, "好。"),  # too short
    _story("s/b", 2, 8, "你们的巡逻队总是这么早出发吗，天还没亮呢。"),
    _story("s/c", 3, 4, "如果我能画出一条没有人走过的路，那条路就会有我的名字吗，我想知道答案。"),
    _story("s/c", 3, 5, "我想留在这里，至少等到雨季结束。"),
    _story("s/c", 3, 6, "博士，博士，博士？"),
    _story("s/d", 4, 1, "灯塔的光又亮起来了，今晚大家都能平安回家。"),
]


def test_story_choice_spreads_over_stages() -> None:
    picked, n = choose_story(STORY, 2)
    assert n == 6
    # 4 stages, 2 picks: stages b and d (spread), each its line with the most Chinese characters
    assert [s.line_id for s in picked] == ["s/b#8:00000000", "s/d#1:00000000"]
    picked, _ = choose_story(list(reversed(STORY)), 6)
    assert [s.line_id for s in picked] == [
        "s/a#1:00000000", "s/a#2:00000000", "s/b#8:00000000",
        "s/c#4:00000000", "s/c#5:00000000", "s/d#1:00000000",
    ]  # fmt: skip
    assert all(len(s.text) <= MAX_STORY_CHARS for s in picked)


def test_a_stages_quote_reads_on_its_own() -> None:
    """From a stage, a line that goes on from the one before (不过…) or speaks of a 他 the
    model cannot see comes after one that stands alone, however long."""
    lines = [
        _story("s/e", 1, 1, "不过，那条河一直通到灯塔下面，我们顺着它走了整整三天三夜。"),
        _story("s/e", 1, 2, "他说那条河一直通到灯塔下面，所以我们就跟着他走了很久。"),
        _story("s/e", 1, 3, "我喜欢这座灯塔，站在下面就会想起家。"),
        _story("s/f", 2, 1, "他把地图给了我，说以后的路要我自己走。"),
        _story("s/f", 2, 2, "所以我就一个人留了下来。"),
    ]
    picked, _ = choose_story(lines, 2)
    assert [s.line_id for s in picked] == ["s/e#3:00000000", "s/f#1:00000000"]


def test_story_fills_up_when_voice_is_short() -> None:
    voice = [
        VoiceLine(
            "char_999_newcomer_CN_001", "char_999_newcomer", "交谈1", 1, "新来的，请多指教。"
        ),
    ]
    choice = choose_quotes(voice, STORY)
    assert choice.origin == "voice+story"
    assert [q.source_id for q in choice.quotes] == [
        "voice:char_999_newcomer_CN_001",
        "story:s/a#2:00000000", "story:s/b#8:00000000",
        "story:s/c#4:00000000", "story:s/c#5:00000000", "story:s/d#1:00000000",
    ]  # fmt: skip
    assert choose_quotes([], []).origin == "none"


def test_quote_line_round_trip() -> None:
    for q in (
        Quote("今天的巡逻路线，我已经替你画好了。", "voice:char_900_tester_CN_001", "任命助理"),
        Quote("他说「别走」，我没有回头。", "story:obt/test/a_b#12:0123abcd", "T-1 晨雾 行动前"),
        Quote("没有注释的一句。", "story:obt/test/a#3:0123abcd"),
    ):
        assert parse_quote_line(q.line()) == q
    assert parse_quote_line("- 只是一句普通的笔记") is None
    assert parse_quote_line("* 「旧写法也行」 -- voice:x_CN_001") == Quote(
        "旧写法也行", "voice:x_CN_001"
    )


def test_gate_removes_fabricated_and_foreign_quotes(charword: Mapping[str, Any]) -> None:
    lines = voice_lines_from_table(charword, T)
    sources = voice_sources(lines) | {
        "story:s/x#1:aaaaaaaa": QuoteSource("北边的桥\n每到雨季就会松动。", T),
        "story:s/x#2:bbbbbbbb": QuoteSource("我从来不检查桥。", "char_901_guide"),
    }
    quotes = [
        Quote("今天的巡逻路线，我已经替你画好了。", "voice:char_900_tester_CN_001"),
        Quote("我从来不检查桥，那是向导的事。", "voice:char_900_tester_CN_001"),  # fabricated
        Quote("北边的桥 每到雨季", "story:s/x#1:aaaaaaaa"),  # excerpt, whitespace differs
        Quote("我从来不检查桥。", "story:s/x#2:bbbbbbbb"),  # someone else's line
        Quote("巡逻。", "voice:char_900_tester_CN_999"),  # no such source
    ]
    res = verify_quotes(quotes, sources, owners={T})
    assert res.kept == [quotes[0], quotes[2]]
    reasons = [r.reason for r in res.removed]
    assert reasons == [
        "not verbatim in voice:char_900_tester_CN_001",
        "story:s/x#2:bbbbbbbb is char_901_guide's line",
        "cited source voice:char_900_tester_CN_999 not found",
    ]
    assert [r.quote for r in res.removed] == [quotes[1], quotes[3], quotes[4]]
    # without owners only the text is checked
    assert quotes[3] in verify_quotes(quotes, sources).kept


def test_chosen_quotes_always_pass_the_gate(charword: Mapping[str, Any]) -> None:
    lines = voice_lines_from_table(charword, T)
    choice = choose_quotes(lines)
    assert verify_quotes(choice.quotes, voice_sources(lines), owners={T}).removed == []
