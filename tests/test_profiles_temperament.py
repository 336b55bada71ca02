"""``## 我·性格`` without a model: verbatim sentences about her temperament, chosen by the
lexicon from her archive and from what others say of her in the story, each with its source id
(``archive:<entry>/<section>``, ``story:<line_id>``), through the verbatim gate; at tier B a
chat gets them as verified lines only. All text here is invented for these tests (the archive
in the handbook table's shape, the story as a tiny ingested store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.lines import line, stage
from support.store import ingested_store

from arklore.chat.blocks.persona import persona_block
from arklore.core.operators import Operator
from arklore.names.matcher import build_matcher
from arklore.names.registry import Registry
from arklore.profiles import temperament as T
from arklore.profiles.archive import Tables, archive_sections, archive_sources, her_names
from arklore.profiles.assemble import assemble
from arklore.profiles.charfile import (
    ANCHOR,
    PERSONALITY,
    TIER_A,
    TIER_B,
    CharProfile,
    UsableSection,
    allowed_sections,
    render_profile,
)
from arklore.profiles.draft import draft_profile
from arklore.profiles.inputs import gather
from arklore.profiles.persona import Persona
from arklore.profiles.quotes import (
    Quote,
    VoiceLine,
    normalize_ws,
    parse_quote_line,
    verify_quotes,
)
from arklore.profiles.results import OK, TaskResult
from arklore.profiles.sources import remarks, remarks_for
from arklore.profiles.task_b import PERSONALITY_LINES, personality_lines

ME, FEN, BUOY = "char_950_mapper", "char_951_fen", "char_952_buoy"
OPS = [Operator(ME, "测绘员"), Operator(FEN, "芬"), Operator(BUOY, "浮标")]
AT = "2026-03-04T05:06:07Z"


def _section(title: str, text: str) -> dict[str, Any]:
    return {"storyTitle": title, "stories": [{"storyText": text}]}


ARCHIVE = {
    "handbookDict": {
        ME: {
            "storyTextAudio": [
                _section("基础档案", "【代号】测绘员\n【性别】女\n【种族】菲林"),
                _section("客观履历", "测绘员，雾港人，罗德岛领航员。"),
                _section(
                    "档案资料一",
                    "沉默寡言的领航员。\n按照本人的说法，海图比人好懂。\n为人慷慨，却总是忘记吃饭。",
                ),
                _section(
                    "档案资料二",
                    "测绘员在船上一向冷静，风浪再大也不会乱了手脚。\n"
                    "站在码头最前面的，是一位坚毅的老船长。\n"  # the 坚毅 is his
                    "我们很难说她是个温柔的人。\n"  # the record's 我们: left out
                    "测绘员认真地核对了每一处水深。",  # an adverb: one act, not a trait
                ),
                _section("晋升记录", "她总是最后一个离开甲板。"),  # a habit, no lexicon word
            ]
        }
    }
}
TABLES = Tables(handbook_info=ARCHIVE)


def _archive_lines() -> list[Quote]:
    names = her_names(ME, TABLES)
    return T.choose(T.archive_candidates(archive_sections(TABLES.handbook_info, ME), names), [])


def test_archive_lines_are_verbatim_sentences_chosen_by_the_lexicon() -> None:
    lines = _archive_lines()
    assert [(q.text, q.source_id) for q in lines] == [
        ("测绘员在船上一向冷静，风浪再大也不会乱了手脚。", f"archive:{ME}/档案资料二"),
        ("沉默寡言的领航员。", f"archive:{ME}/档案资料一"),  # the portrait she opens with
        ("为人慷慨，却总是忘记吃饭。", f"archive:{ME}/档案资料一"),
        ("她总是最后一个离开甲板。", f"archive:{ME}/晋升记录"),  # a habit, ranked last
    ]
    assert [q.note for q in lines] == ["档案资料二", "档案资料一", "档案资料一", "晋升记录"]
    # every line is a part of the section it cites, and the gate says so
    sources = archive_sources(TABLES, ME)
    for q in lines:
        assert normalize_ws(q.text) in normalize_ws(sources[q.source_id].text)
    assert verify_quotes(lines, sources).kept == lines
    # each is a quote line of the file, read back the same
    assert [parse_quote_line(q.line()) for q in lines] == lines
    assert lines[0].said_by() == "「测绘员在船上一向冷静，风浪再大也不会乱了手脚。」——档案资料二"


def test_the_gate_rejects_an_altered_archive_sentence() -> None:
    sources = archive_sources(TABLES, ME)
    sid = f"archive:{ME}/档案资料二"
    altered = Quote("测绘员在船上一向冷静，风浪再大也不会慌张。", sid)
    wrong_section = Quote(
        "测绘员在船上一向冷静，风浪再大也不会乱了手脚。", f"archive:{ME}/档案资料三"
    )
    somebody_else = Quote(
        "测绘员在船上一向冷静，风浪再大也不会乱了手脚。", f"archive:{FEN}/档案资料二"
    )
    gate = verify_quotes([altered, wrong_section, somebody_else], sources)
    assert gate.kept == []
    assert [r.reason for r in gate.removed] == [
        f"not verbatim in {sid}",
        f"cited source archive:{ME}/档案资料三 not found",
        f"cited source archive:{FEN}/档案资料二 not found",
    ]


def test_the_subject_rules() -> None:
    rank = T.subject_rank
    assert rank("芬的反应很果断，但要确保支援。", ["芬"], pronoun=False) == 2
    assert rank("以芬的性格，她一定会来。", ["芬"], pronoun=False) == 1
    assert rank("拉普兰德，你还是这么倔。", ["拉普兰德"], pronoun=False, you=True) == 1
    # her name called out while the clause of the word is about something else
    assert rank("芬，我们的处境并不乐观。", ["芬"], pronoun=False) == 0
    assert rank("你们很谨慎，设计了航道。", [], pronoun=False, you=True) == 0  # a group
    assert rank("阿米娅对你太温柔了。", [], pronoun=False, you=True) == 0  # 你, an object
    assert rank("她说雾里的脚步声比地图更可靠。", [], pronoun=True) == 0  # what she says
    assert rank("芬今天怎么这样沉默。", ["芬"], pronoun=False) == 0  # one moment
    assert T.words("你不仅招来了高傲的维多利亚贵族。") == []  # the 高傲 is theirs
    assert T.words("测绘员是个骄傲的人。") == ["傲"]
    assert T.words("这样的合理性无需多说。") == []  # 理性 sits inside 合理性
    assert T._ordered("芬，冷静点！") and T._ordered("别那么固执。")
    assert not T._ordered("芬总是那么固执。")


@pytest.fixture
def story(tmp_path: Path) -> dict[str, list[T.Remark]]:
    """Invented lines others say of 芬 and to her, and the ones the rule leaves alone."""
    sp = "test/sea"
    lines = [
        line(sp, 1, "芬", "教官，今天的训练我想再加一组。"),
        line(sp, 2, "浮标", "你还是这么倔，一点都没变。"),  # answers 芬: said to her
        line(sp, 3, "测绘员", "芬的性格就是这样，认准了就不回头。"),  # names her
        line(sp, 4, "浮标", "芬，冷静点！敌人还没动。"),  # an order
        line(sp, 5, "测绘员", "芬恩导师说过，谦逊是骑士的美德。"),  # 芬恩 is not 芬
        line(sp, 6, "芬", "我才不倔。"),  # her own line: never a remark of her
        line(sp, 7, "浮标", "芬真的很果断吗？"),  # a question, not a judgment
    ]
    registry = Registry({o.char_id: o for o in OPS})
    store = ingested_store(tmp_path / "s.sqlite3", [stage(sp, lines)], registry)
    try:
        return remarks(store, build_matcher(operators=OPS))
    finally:
        store.close()


def test_what_others_say_of_her_is_chosen_from_the_story(story: dict[str, list[T.Remark]]) -> None:
    fen = remarks_for(OPS[1], story)
    assert {r.line.line_no for r in fen} == {2, 3, 4, 7}  # 芬恩 and her own line are not hers
    said_to = next(r for r in fen if r.line.line_no == 2)
    assert said_to.to_her and said_to.names == ()
    chosen = T.choose([], T.story_candidates(fen))
    assert [(q.text, q.note) for q in chosen] == [  # both open on her: in story order
        ("你还是这么倔，一点都没变。", "浮标"),
        ("芬的性格就是这样，认准了就不回头。", "测绘员"),
    ]
    assert all(q.source_id.startswith("story:test/sea#") for q in chosen)
    # the gate checks them against the lines, whoever says them
    inp = gather(OPS[1], Tables(), voice=[], story=[])
    inp.remarks = fen
    assert personality_lines(inp) == chosen


def test_a_draft_writes_them_as_quote_lines_and_a_tier_b_chat_gets_only_verified_ones(
    story: dict[str, list[T.Remark]],
) -> None:
    d = draft_profile(OPS[0], TABLES, generated_at=AT)
    assert d.text is not None
    prof = CharProfile.parse(d.text)
    assert [q.source_id for q in prof.quotes(PERSONALITY)] == [
        f"archive:{ME}/档案资料二", f"archive:{ME}/档案资料一", f"archive:{ME}/档案资料一",
        f"archive:{ME}/晋升记录",
    ]  # fmt: skip
    assert prof.header_list("sources")[0] == (
        "handbook_info_table: char_950_mapper (基础档案, 客观履历, 档案资料一, 档案资料二, 晋升记录)"
    )  # 晋升记录, which only a line of hers cites, is named with the anchor's sections
    assert d.results["B"].status == OK and len(d.results["B"].output[PERSONALITY_LINES]) == 4
    b = allowed_sections(prof)
    assert PERSONALITY in b.titles()
    # a hand edit that changes an archive line: the line is dropped once checked again
    edited = d.text.replace("风浪再大也不会乱了手脚", "风浪再大也不会慌张")
    hand = CharProfile.parse(edited)
    assert hand.hand_edited
    checked = allowed_sections(hand, quote_sources=archive_sources(TABLES, ME), owners={ME})
    kept = next(s for s in checked.sections if s.title == PERSONALITY).text
    assert "慌张" not in kept and kept.count("\n") == 2  # three lines of four left
    # a paragraph a model wrote is no verbatim line: a tier-B chat leaves it out
    para = render_profile(
        name="测绘员", char_id=ME, generated_at=AT, sections=[(PERSONALITY, "我很冷静。")]
    )
    assert allowed_sections(CharProfile.parse(para)).titles() == []


def test_the_models_personality_comes_before_the_rule() -> None:
    inp = gather(OPS[0], TABLES, voice=[], story=[])
    rule = [{"text": q.text, "source_id": q.source_id, "note": q.note} for q in _archive_lines()]
    out: dict[str, Any] = {"quotes": [], "personality": None, PERSONALITY_LINES: rule}
    b = TaskResult("B", ME, OK, "rule", output=out)
    by_rule = dict(assemble(inp, {"B": b}, generated_at=AT).sections)[PERSONALITY]
    assert by_rule.startswith("- 「测绘员在船上一向冷静")
    llm = TaskResult("B", ME, OK, "model", output={**out, "personality": "我话不多，但从不慌。"})
    assert dict(assemble(inp, {"B": llm}, generated_at=AT).sections)[PERSONALITY] == (
        "我话不多，但从不慌。"
    )
    # a stored rule line that no longer equals its source is left out at assembly
    bad = [{**rule[0], "text": "测绘员从不冷静。"}, *rule[1:]]
    built = assemble(
        inp, {"B": TaskResult("B", ME, OK, "rule", output={**out, PERSONALITY_LINES: bad})},
        generated_at=AT,
    )  # fmt: skip
    assert "测绘员从不冷静" not in dict(built.sections)[PERSONALITY]
    assert any("personality line 「测绘员从不冷静。」" in f for f in built.findings)


def test_the_persona_block_states_the_trait_says_who_says_each_line_never_a_line_twice() -> None:
    lines = _archive_lines()
    personality = "\n".join(q.line() for q in lines)
    anchor = "- 代号：测绘员\n- 档案资料一：沉默寡言的领航员。按照本人的说法，海图比人好懂。"
    for tier in (TIER_A, TIER_B):
        p = Persona(
            ME, "测绘员", tier, "x.char", False,
            [UsableSection(ANCHOR, anchor, 20), UsableSection(PERSONALITY, personality, 40)],
        )  # fmt: skip
        block = persona_block(p, budget=500)
        assert block.text.split("## 我·性格\n")[1].split("\n") == [
            "- 冷静：「测绘员在船上一向冷静，风浪再大也不会乱了手脚。」——档案资料二",
            "- 慷慨：「为人慷慨，却总是忘记吃饭。」——档案资料一",
            "- 「她总是最后一个离开甲板。」——晋升记录",
        ]  # each trait stated first (为人 names none); 沉默寡言的领航员。 is in the anchor
        assert "archive:" not in block.text
        assert block.meta["archive_ids"] == [
            f"{ME}/档案资料二",
            f"{ME}/档案资料一",
            f"{ME}/晋升记录",
        ]


def test_a_line_of_the_story_is_shown_without_a_trait_stated() -> None:
    """Only her archive's narrator states a trait: a line of the story may deny it (你有那么一点点
    严肃我都会觉得你生病了) or say it of somebody else, so it is shown as said, by whom."""
    said = Quote("你要是有一点点严肃，我都会以为你生病了。", "story:s/x#3:abcdef12", "旧友")
    p = Persona(
        ME, "测绘员", TIER_B, "x.char", False,
        [UsableSection(PERSONALITY, said.line(), 20)],
    )  # fmt: skip
    text = persona_block(p, budget=500).text
    assert text.endswith("## 我·性格\n- 「你要是有一点点严肃，我都会以为你生病了。」——旧友")


def test_a_liking_or_a_portrait_of_her_counts_and_one_of_somebody_else_does_not() -> None:
    """Without a word of the lexicon, a sentence of her archive says what she is like when it
    tells a habit or a liking of hers (her before it: opening the clause, or 对于她来说) or
    what kind of person she is (她是个…的人); never another's liking of her."""
    names = ["测绘员"]
    assert T._habit("测绘员最喜欢的地方是船头，她常在那里看海。", names)
    assert T._habit("看海对于测绘员来说是一种乐趣。", names)
    assert not T._habit("有些人依旧喜欢同她打牌。", names)
    assert not T._habit("大家对于测绘员都习惯特别地照顾。", names)
    assert T._portrayed("大家这才发现，原来她是一个外冷内热的人。", names)
    assert T._portrayed("测绘员是天生的探险家。", names)
    assert not T._portrayed("她说他是个好人。", names)


def test_a_habit_framed_or_in_a_later_clause_is_hers_only_when_the_clause_opens_on_her() -> None:
    """A 除(去)……之外 frame is hers when the sentence goes on about her; a later clause that
    opens on her name carries her habit, unless 的 makes it her thing's or somebody says it; a
    habit with no object and no 对 is a moment the sentence points back to."""
    names = ["测绘员"]
    assert T._habit("除了经常迷路之外，测绘员的航线从未出错。", names)
    assert not T._habit("除此之外，测绘员的航线从未出错。", names)  # points back
    assert not T._habit("除了经常迷路之外，浮标的航线从未出错。", names)  # goes on about him
    assert T._habit("为了船上的孩子们，测绘员总是多带一份干粮。", names)
    assert not T._habit("到了冬天，测绘员的船舱总是很冷。", names)  # her cabin's
    assert not T._habit("浮标说，测绘员总是迟到。", names)  # what he says
    assert not T._habit("在这一点上，测绘员是十分满意的。", names)  # no object
    assert T._habit("测绘员对修补渔网很感兴趣。", names)  # its object before, after 对
    assert not T._habit("测绘员从不同的港口收集海图。", names)  # 从不同: not 从不
    assert T._quoted("4，测绘员擅长夜航。") == "测绘员擅长夜航。"  # a list number left out


def _voice(n: int, text: str) -> VoiceLine:
    return VoiceLine(f"{ME}_CN_{n:03d}", ME, f"交谈{n}", n, text)


def test_what_she_says_of_herself_is_a_statement_opening_on_her() -> None:
    """Her own sentence counts when it opens on 我 and states a trait or a habit of hers, in
    its first clause or a second with no subject of its own; never a question, a guess, a
    reply, a word about somebody or something here, or a thought of somebody else."""
    word = T._self_word
    assert word("我从来不做没把握的事。") == "从来不"
    assert word("我记性差，从来不记账。") == "从来不"
    assert word("我这个人很固执。") == "固执"
    assert word("我最讨厌的就是不停问为什么的人。") == "讨厌"
    assert word("我就知道你能行，真可靠。") is None  # the 可靠 is 你's
    assert word("我陪着你，很可靠吧。") is None  # somebody else in the clause it goes on from
    assert word("我最喜欢她了。") is None  # about somebody
    assert word("我很讨厌这种感觉。") is None  # about this moment
    assert word("我觉得，你是船上最擅长聆听的人。") is None  # what she thinks of 你
    assert word("我不客气啦。") is None  # a reply
    assert word("我很感兴趣嘛。") is None  # a habit with no object
    assert word("我总是这么固执吗？") is None  # a question
    assert word("也许我从来不做没把握的事。") is None  # not opening on 我
    assert word("我可能从来不做没把握的事。") is None  # a guess
    assert word("我们从来不做没把握的事。") is None  # 我们, not her
    assert word("我正在学着变得耐心。") is None  # one moment


def test_her_own_words_only_top_the_section_up_last() -> None:
    """Her own lines come after what her archive and others say of her, one at most, and only
    while the section has fewer than MIN_LINES."""
    own = T.self_candidates(
        [_voice(1, "你好呀。我记性差，从来不记账。"), _voice(2, "我这个人很固执。")]
    )
    assert [(c.quote.text, c.quote.note) for c in own] == [
        ("我记性差，从来不记账。", "交谈1"),
        ("我这个人很固执。", "交谈2"),
    ]
    assert T._spread(own)[0].quote.text == "我这个人很固执。"  # a lexicon word before a habit
    names = her_names(ME, TABLES)
    archive = T.archive_candidates(archive_sections(TABLES.handbook_info, ME), names)
    assert len(T.choose(archive, [])) >= T.MIN_LINES
    assert T.choose(archive, [], own) == T.choose(archive, [])  # enough without her
    few = [c for c in archive if c.quote.note == "晋升记录"]
    assert [q.text for q in T.choose(few, [], own)] == [
        "她总是最后一个离开甲板。",
        "我这个人很固执。",
    ]
    # the gate checks them against her lines
    inp = gather(OPS[0], Tables(), voice=[_voice(2, "我这个人很固执。")], story=[])
    assert [q.text for q in personality_lines(inp)] == ["我这个人很固执。"]


def test_a_long_habit_of_the_archive_does_not_crowd_out_a_trait_others_name() -> None:
    """The quotas take lines with a temperament word first; a habit line comes after them,
    within what is left of SECTION_CHARS."""

    def cand(text: str, words: int, group: str) -> T.Candidate:
        return T.Candidate(Quote(text, f"x:{group}"), 2, words, (0, len(group)), group)

    portraits = [cand(f"她{i}" + "很冷静" * 35 + "。", 1, f"档案{i}") for i in range(2)]  # 108 each
    habit = cand("测绘员总是" + "把缆绳检查三遍" * 13 + "。", 0, "晋升记录")  # 97
    traits = [cand(f"测绘员的性子很急，第{i}回了。", 1, f"说话人{i}") for i in range(2)]
    assert 2 * 108 + 97 + len(traits[0].quote.text) > T.SECTION_CHARS
    chosen = [q.text for q in T.choose([habit, *portraits], traits)]
    assert chosen == [c.quote.text for c in [*portraits, *traits]]
