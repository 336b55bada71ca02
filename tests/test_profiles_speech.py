"""Her way of speaking (``profiles.speech``), fact by fact, on the invented corpus of
``speech_world``: what she calls the Doctor, 您 or 你, how she calls herself, her signature
words and symbols, what others call her, her line length; each with its counts and floors (a
one-off never qualifies, a name is never an expression), and its source ids."""

from __future__ import annotations

import pytest
from support import speech_world as W

from arklore.core.model import Line
from arklore.profiles import speech
from arklore.profiles.quotes import VoiceLine
from arklore.profiles.speech import (
    CALLED,
    DOCTOR_FORM,
    EXPRESSIONS,
    KINDS,
    LENGTH,
    REGISTER,
    SELF,
    Background,
    Fact,
    parse_fact_line,
    render_section,
    speech_facts,
)


@pytest.fixture(scope="module")
def corpus() -> list[Line]:
    return W.lines()


@pytest.fixture(scope="module")
def bg(corpus: list[Line]) -> Background:
    return W.background(corpus)


def facts_of(
    corpus: list[Line], bg: Background, voice: list[VoiceLine] | None = None
) -> dict[str, Fact]:
    got = speech_facts(
        W.voice() if voice is None else voice, W.her_story(corpus), bg, name="星砂",
        char_ids=[W.SHE], names={"星砂"}, tokenizer=W.tokenizer(),
    )  # fmt: skip
    return {f.kind: f for f in got}


def test_every_fact_in_section_order_with_its_counts_and_sources(corpus, bg) -> None:
    facts = facts_of(corpus, bg)
    assert list(facts) == list(KINDS)  # each kind once, most important first
    section = render_section(list(facts.values()))
    for ln, fact in zip(section.split("\n"), facts.values(), strict=True):
        assert ln == f"- {fact.text} —— {', '.join(fact.sources)}"
        assert parse_fact_line(ln) == (fact.text, list(fact.sources))
        assert 1 <= len(fact.sources) <= speech.MAX_SOURCES
        assert all(s.startswith(("voice:", "story:")) for s in fact.sources)


def test_the_form_she_uses_for_the_doctor_with_the_counts(corpus, bg) -> None:
    fact = facts_of(corpus, bg)[DOCTOR_FORM]
    # 4 voice lines (one with 船长 between commas: the start of a clause), 3 story lines of a
    # scene where only she and the Doctor speak; 博士 never
    assert fact.text == "称博士为「船长」（语音 4 次，剧情 3 次；「博士」0 次）"
    assert fact.sources[0] == f"voice:{W.SHE}_CN_001"


def test_she_says_boshi_when_that_is_what_she_says(corpus, bg) -> None:
    voice = [
        VoiceLine(f"{W.SHE}_CN_{i:03d}", W.SHE, "交谈1", i, t)
        for i, t in enumerate(["博士，早。", "博士，出发吧。", "走吧，Dr.{@nickname}。"], 1)
    ]
    fact = facts_of(corpus, bg, voice)[DOCTOR_FORM]
    # the placeholder is the Doctor too; 船长 (3 story lines) is stated as well
    assert fact.text.startswith("称博士为「博士」（语音 3 次）；也称「船长」（剧情 3 次）")


def test_a_form_said_twice_is_not_her_form(corpus, bg) -> None:
    voice = [VoiceLine(f"{W.SHE}_CN_001", W.SHE, "交谈1", 1, "掌柜，早。")] * 2
    facts = facts_of([ln for ln in corpus if ln.stage_path != "test/speech/s4"], bg, voice)
    assert DOCTOR_FORM not in facts  # 掌柜 twice: under the floor of 3


def test_a_person_called_in_her_lines_is_no_form_for_the_doctor(corpus, bg) -> None:
    voice = [VoiceLine(f"{W.SHE}_CN_{i:03d}", W.SHE, "交谈1", i, "悠悠，快来。") for i in (1, 2, 3)]
    facts = facts_of([ln for ln in corpus if ln.stage_path != "test/speech/s4"], bg, voice)
    assert DOCTOR_FORM not in facts


def test_her_register_toward_the_doctor(corpus, bg) -> None:
    assert facts_of(corpus, bg)[REGISTER].text == "对博士称「您」（5 句；「你」0 句）"
    you = [
        VoiceLine(f"{W.SHE}_CN_{i:03d}", W.SHE, "交谈1", i, t)
        for i, t in enumerate(["你来啦。", "你看，星星。", "你们都在啊。", "你累了吗？"], 1)
    ]
    story = [ln for ln in corpus if ln.stage_path != "test/speech/s4"]
    assert facts_of(story, bg, you)[REGISTER].text == "对博士称「你」（3 句；「您」0 句）"


def test_a_battle_line_is_said_to_an_enemy(corpus, bg) -> None:
    fight = [
        VoiceLine(f"{W.SHE}_CN_{i:03d}", W.SHE, "作战中1", i, "你逃不掉了！") for i in (1, 2, 3)
    ]
    story = [ln for ln in corpus if ln.stage_path != "test/speech/s4"]
    assert REGISTER not in facts_of(story, bg, fight)


def test_how_she_calls_herself(corpus, bg) -> None:
    fact = facts_of(corpus, bg)[SELF]
    # 本小姐 six times in four stages; 俺 twice (under the floor); 吾乐 is a person, not 吾
    assert fact.text == "自称「本小姐」（6 次）；「我」3 句"
    assert "俺" not in fact.text and "吾" not in fact.text


def test_her_signature_expressions_and_symbols(corpus, bg) -> None:
    fact = facts_of(corpus, bg)[EXPRESSIONS]
    assert fact.text == "常用语：「嘻嘻」（7 次，6 处）、「♪」（6 次，5 处）"
    # 居然: six uses in one stage (under the floor of 3 stages); 果然: once
    assert "居然" not in fact.text and "果然" not in fact.text


def test_a_name_is_never_an_expression(corpus) -> None:
    """悠悠 (she says it six times in four stages) is a person's name; the very same word
    is her expression in a corpus that knows nobody called so."""
    named = facts_of(corpus, W.background(corpus))[EXPRESSIONS].text
    nameless = W.background(corpus, names=("星砂", "吾乐"))
    assert "悠悠" not in named
    assert "「悠悠」" in facts_of(corpus, nameless)[EXPRESSIONS].text


def test_what_others_call_her_and_who(corpus, bg) -> None:
    fact = facts_of(corpus, bg)[CALLED]
    # 小砂: a pet name made from her name, her next line answering it; 星砂队长: her name and a
    # title; 砂丫头 once (under the floor), 星砂 her plain name (not news)
    assert fact.text == "别人叫星砂「小砂」（悠悠 3 次）、「星砂队长」（巡逻队员 3 次）"
    assert "砂丫头" not in fact.text
    assert all(s.startswith("story:test/speech/") for s in fact.sources)


def test_her_line_length_and_ellipses(corpus, bg) -> None:
    fact = facts_of(corpus, bg)[LENGTH]
    assert fact.text.startswith("句长中位 11 字（32 句，全体 11 字）；3% 带省略号（全体 0%）")


def test_too_few_lines_give_no_facts(corpus, bg) -> None:
    few = W.her_story(corpus)[:5]
    assert speech_facts([], few, bg, name="星砂", char_ids=[W.SHE]) == []


def test_vocatives_read_the_placeholder_and_symbols_as_the_script_means_them() -> None:
    assert speech.vocatives("子弹上膛★船长，出发！") == ["子弹上膛", "船长", "出发"]
    assert speech.vocatives("船长......不，义人。") == ["船长", "不", "义人"]
    assert speech.vocatives("早上好，Dr.{@nickname}，今天也一起吧。")[1] == "博士"


def test_the_form_of_a_vocative() -> None:
    assert speech.doctor_form("我的伙伴") == "伙伴"  # a possessive
    assert speech.doctor_form("船长船长") == "船长"  # said twice
    assert speech.doctor_form("博士大人") == "博士大人"  # his name with a title
    for word in ("小心", "大家", "报告", "悠悠"):  # a warning, a group, a noun, a name
        assert speech.doctor_form(word, {"悠悠"}) is None, word


def test_the_log_odds_statistic_rewards_what_she_alone_says() -> None:
    """Ten uses in her thousand tokens: at everybody's rate nothing, at a rate a hundred
    times theirs far over the threshold."""
    common = speech.log_odds_z(10, 1000, 10000, 1_000_000, prior=10.0)
    hers = speech.log_odds_z(10, 1000, 5, 1_000_000, prior=1000 * 15 / 1_001_000)
    assert abs(common) < 1 < speech.EXPR_Z < hers
