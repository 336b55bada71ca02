"""Task C's rule (no model): her own lines to and about the Doctor, chosen, ordered and
gated as documented in :mod:`arklore.profiles.doctor`. Every line here is invented."""

from __future__ import annotations

from support.profiles_world import section

from arklore.core.operators import Operator
from arklore.profiles.archive import Tables
from arklore.profiles.assemble import assemble
from arklore.profiles.charfile import ABOUT_DOCTOR, CharProfile
from arklore.profiles.doctor import (
    SECTION_TOKENS,
    addresses_doctor,
    calls_another,
    choose_doctor_lines,
    names_doctor,
    quote_tokens,
    speaks_of_doctor,
    trust_of,
)
from arklore.profiles.inputs import OperatorInputs, gather
from arklore.profiles.quotes import StoryLine, VoiceLine
from arklore.profiles.results import OK, SKIPPED, TaskResult
from arklore.profiles.task_c import rule_result

ME = "char_950_walker"
OTHER = "char_951_other"


def _v(n: int, title: str, text: str, owner: str = ME) -> VoiceLine:
    return VoiceLine(f"{owner}_CN_{n:03d}", owner, title, n, text)


VOICE = [
    _v(1, "任命助理", "博士，今天的路线我已经替你标在地图上了。"),
    _v(2, "交谈1", "北边的桥每到雨季就会松动，我每周都去检查一次。"),  # not about the Doctor
    _v(3, "交谈2", "如果你累了，博士，就在这里歇一会儿，我来守着门口。"),
    _v(4, "信赖提升后交谈1", "我以前总是一个人走夜路，现在不一样了。"),
    _v(5, "信赖提升后交谈2", "有些路我只想和你一起走，不知道这样说会不会太任性。"),
    _v(6, "信赖提升后交谈3", "哪怕地图上的每一条路都断了，我也会找到回到你身边的那一条。"),
    _v(7, "标题", "测试方舟，博士专用版。"),  # never
    _v(8, "作战中1", "博士，看着，这一下交给我！"),  # battle, names the Doctor
    _v(9, "问候", "早上好，博士。"),  # too short without the Doctor's name
]
UNLOCKS = {
    v.word_id: (f"〔信赖≥{t}〕", t) for v, t in ((VOICE[3], 40), (VOICE[4], 100), (VOICE[5], 200))
}

S_A, S_B, S_C = "test/walk_01", "test/walk_02", "test/walk_03"


def _s(path: str, order: int, no: int, text: str, speaker: str = "行路者") -> StoryLine:
    return StoryLine(f"{path}#{no}:{no:08x}", path, no, order, speaker, ME, text, f"W-{order}")


STORY = [
    _s(S_A, 1, 3, "Dr.{@nickname}，跟紧我，前面的雾很浓。"),  # placeholder: addresses
    _s(S_A, 1, 7, "我不知道你为什么愿意相信我，博士。"),  # vocative 博士 at the end
    _s(S_A, 1, 9, "雾散了以后，我们就能看见灯塔了。"),  # not about the Doctor
    _s(S_B, 2, 4, "我留下来保护博士的安全，谁也别想靠近。"),  # of the Doctor (Doctor stage)
    _s(S_C, 3, 2, "赫默博士的报告，我已经送过去了。"),  # somebody's title, no Doctor in stage
    _s(S_C, 3, 5, "你放心，博士那边我会去解释的。"),  # about, but the stage has no Doctor
    _s(
        S_B, 2, 9, "你留下来，保护博士的安全，我去前面探路。"
    ),  # to somebody else: 你 isn't the Doctor
]
DOCTOR_STAGES = frozenset({S_A, S_B})


def test_which_lines_speak_to_or_of_the_doctor() -> None:
    assert addresses_doctor("Dr.{@nickname}，跟紧我。") and addresses_doctor("快走，博士！")
    assert addresses_doctor("{@nickname}，你来了。")
    assert not addresses_doctor("我留下来保护博士的安全。")  # of, not to
    assert names_doctor("我留下来保护博士的安全。") and not names_doctor("雾散了以后。")
    assert speaks_of_doctor("我留下来保护博士的安全。")
    assert not speaks_of_doctor("你留下来，保护博士的安全。")  # says it to whoever 你 is
    assert not speaks_of_doctor("博士，你来了。") and not speaks_of_doctor("雾散了以后。")


def test_the_doctor_called_between_pauses_is_addressed_named_in_a_sentence_is_not() -> None:
    # called on his own mid-line, after an aside, or with {@Nickname} as one writer spells it
    assert addresses_doctor("是的，博士，我们到了。") and addresses_doctor(
        "走吧，Dr.{@nickname}，别停下。"
    )
    assert addresses_doctor("（小声）博士，这边。") and addresses_doctor(
        "交给你了，{@nickname}博士。"
    )
    assert addresses_doctor("下次再说吧，{@Nickname}。") and addresses_doctor(
        "Dr.{@nickname}......"
    )
    # the placeholder inside a sentence speaks of him: 你 there is somebody else
    said_to_another = "除了你和Dr.{@nickname}，其他人都留下。"
    assert not addresses_doctor(said_to_another) and not speaks_of_doctor(said_to_another)
    assert not addresses_doctor("我也相信阿米娅和Dr.{@nickname}。")
    assert speaks_of_doctor("我也相信阿米娅和Dr.{@nickname}。")
    assert not addresses_doctor("他们说的“博士”就是他？")  # a word in quotes is a mention
    # telling him who he is
    assert addresses_doctor("你就是那位Dr.{@nickname}？") and addresses_doctor("您就是博士吧？")
    assert not addresses_doctor("他就是那位Dr.{@nickname}。")


def test_rule_picks_her_doctor_lines_in_unlock_order_with_trust_last() -> None:
    got = choose_doctor_lines(VOICE, UNLOCKS, STORY, doctor_stages=DOCTOR_STAGES)
    ids = [q.source_id for q in got.quotes]
    assert ids == [
        # voice lines naming the Doctor, available from the start (talk before daily)
        f"voice:{ME}_CN_001",
        f"voice:{ME}_CN_003",
        # story lines in story order: addressed ones, and one of her in a Doctor stage
        f"story:{STORY[1].line_id}",
        f"story:{STORY[3].line_id}",
        # the trust-unlocked lines last, by the trust they need
        f"voice:{ME}_CN_004",
        f"voice:{ME}_CN_005",
        f"voice:{ME}_CN_006",
    ]
    # never: a line not about the Doctor, 标题, another person's 博士, a stage without the Doctor
    for bad in (
        f"{ME}_CN_002",
        f"{ME}_CN_007",
        STORY[2].line_id,
        STORY[4].line_id,
        STORY[5].line_id,
        STORY[6].line_id,
    ):
        assert all(bad not in i for i in ids)
    # the trust lines say so in their note, what the chat's drop order reads
    assert [trust_of(q) for q in got.quotes] == [None, None, None, None, 40, 100, 200]
    assert got.quotes[0].line().startswith("- 「博士，今天的路线") and got.origin == "voice+story"
    # one line per stage: the addressed one beats the other candidate of its stage
    assert f"story:{STORY[0].line_id}" not in ids and f"story:{STORY[1].line_id}" in ids
    assert sum(quote_tokens(q.text) for q in got.quotes) <= SECTION_TOKENS
    # deterministic
    assert choose_doctor_lines(VOICE, UNLOCKS, STORY, doctor_stages=DOCTOR_STAGES) == got


def test_a_bare_greeting_or_a_cut_off_line_to_the_doctor_is_not_her_view_of_him() -> None:
    S_D, S_E = "test/walk_04", "test/walk_05"
    bare = _s(S_D, 4, 1, "......博士，阿米娅。")  # 阿米娅: 3 characters of substance
    cut = _s(S_D, 4, 2, "博士，你那边......")
    says = _s(S_E, 5, 1, "呜呜呜，头好痛，Dr.{@nickname}。")  # 呜头好痛: 4
    stages = DOCTOR_STAGES | {S_D, S_E}
    got = choose_doctor_lines([], {}, [bare, cut, says], doctor_stages=stages)
    assert [q.source_id for q in got.quotes] == [says.source_id]
    assert all(addresses_doctor(x.text) for x in (bare, cut, says))  # all three call him


def test_a_line_of_how_she_stands_with_him_outranks_a_longer_errand() -> None:
    """Four stages, three story lines kept: the short line of trust is one of them, before
    the longer errands that only pass him orders (凯尔希's 帕拉斯…和你慢慢详说)."""
    paths = [f"test/errand_{i}" for i in range(4)]
    errands = [
        _s(paths[0], 10, 1, "博士，我把补给清单放在你桌上了，核对完以后记得签字交回后勤部。"),
        _s(paths[1], 11, 1, "博士，我去把车开过来，你在门口等着，十分钟后在东门集合出发。"),
        _s(paths[2], 12, 1, "这些是你要的报告，博士，剩下的部分我明天上午之前会送到办公室。"),
    ]
    trust = _s(paths[3], 13, 1, "博士，不管别人怎么说，我都相信你。")
    got = choose_doctor_lines([], {}, [*errands, trust], doctor_stages=frozenset(paths))
    assert trust.source_id in [q.source_id for q in got.quotes]
    assert len(got.quotes) == 3


def test_a_line_that_also_calls_somebody_else_with_a_you_is_not_to_the_doctor() -> None:
    """Her 你 may be the other one she calls by a title (煌's 说得好，博士！长官，你…)."""
    S_F, S_G, S_H = "test/walk_06", "test/walk_07", "test/walk_08"  # one line a stage
    both = _s(S_F, 6, 1, "说得好，博士！队长，你当然知道该怎么做，对吗？")
    greets = _s(S_G, 7, 1, "......您好，白鸽小姐，博士。")
    clause = _s(S_H, 8, 1, "博士，你别忘了，我是医生。")  # 我是医生 is a clause, not a call
    stages = DOCTOR_STAGES | {S_F, S_G, S_H}
    got = choose_doctor_lines([], {}, [both, greets, clause], doctor_stages=stages)
    assert [q.source_id for q in got.quotes] == [clause.source_id]
    assert calls_another("凯尔希医生，博士，你们先走。") and not calls_another(
        "总之，博士，你要小心。"
    )


def test_a_small_budget_keeps_the_deepest_trust_line_and_a_story_line_first() -> None:
    deepest, story = VOICE[5], STORY[1]
    budget = quote_tokens(deepest.text) + quote_tokens(story.text)
    got = choose_doctor_lines(VOICE, UNLOCKS, STORY, doctor_stages=DOCTOR_STAGES, budget=budget)
    assert [q.source_id for q in got.quotes] == [story.source_id, deepest.source_id]


def test_no_doctor_line_and_an_empty_voice_table() -> None:
    plain = [_v(2, "交谈1", "北边的桥每到雨季就会松动，我每周都去检查一次。")]
    assert choose_doctor_lines(plain, {}, [STORY[2]], doctor_stages=DOCTOR_STAGES).quotes == []
    # no voice table: her story lines alone
    only_story = choose_doctor_lines([], {}, STORY, doctor_stages=DOCTOR_STAGES)
    assert {q.kind for q in only_story.quotes} == {"story"} and len(only_story.quotes) == 2


def _inputs(voice: list[VoiceLine] = VOICE, story: list[StoryLine] = STORY) -> OperatorInputs:
    return gather(
        Operator(ME, "行路者"), Tables(), voice=voice, story=story, unlocks=UNLOCKS,
        doctor_stages=DOCTOR_STAGES,
    )  # fmt: skip


def test_task_c_rule_result_and_the_profile_section() -> None:
    inp = _inputs()
    r = rule_result(inp)
    assert r.status == OK and r.model == "" and r.output["about_doctor"] is None
    assert len(r.output["quotes"]) == 7 and "needs a model" in r.reason
    built = assemble(inp, {"C": r}, generated_at="2026-01-01T00:00:00Z")
    prof = CharProfile.parse(built.text or "")
    lines = prof.quotes(ABOUT_DOCTOR)
    assert [q.source_id for q in lines] == [q["source_id"] for q in r.output["quotes"]]
    assert "Dr.{@nickname}" not in section(prof, ABOUT_DOCTOR).content  # none was picked here
    sources = prof.header_list("sources")
    assert any(s.startswith("charword_table: ") and f"{ME}_CN_006" in s for s in sources)
    assert any(s.startswith("story: ") and STORY[3].line_id in s for s in sources)
    nothing = rule_result(_inputs(voice=[], story=[STORY[2]]))
    assert nothing.status == SKIPPED and nothing.output["quotes"] == []


def test_assembly_gates_the_stored_lines_again() -> None:
    inp = _inputs()
    good = rule_result(inp)
    forged = dict(good.output)
    forged["quotes"] = [
        {"text": "博士，我从来没有怀疑过你。", "source_id": f"voice:{ME}_CN_003", "note": ""},
        {"text": "有些路我只想和你一起走", "source_id": f"voice:{OTHER}_CN_005", "note": ""},
        *good.output["quotes"][:1],
    ]
    r = TaskResult("C", ME, OK, "", output=forged)
    built = assemble(inp, {"C": r}, generated_at="2026-01-01T00:00:00Z")
    kept = CharProfile.parse(built.text or "").quotes(ABOUT_DOCTOR)
    assert [q.source_id for q in kept] == [good.output["quotes"][0]["source_id"]]
    assert any("not verbatim" in f for f in built.findings)
    assert any("not found" in f or "nobody" in f for f in built.findings)
    # a result stored before the rule existed (no quotes): the rule runs at assembly
    old = TaskResult("C", ME, SKIPPED, "needs a model")
    again = assemble(inp, {"C": old}, generated_at="2026-01-01T00:00:00Z")
    assert len(CharProfile.parse(again.text or "").quotes(ABOUT_DOCTOR)) == 7
