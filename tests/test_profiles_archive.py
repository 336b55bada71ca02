"""Task A without a model: the structured anchor copied from invented archive tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arklore.profiles.archive import (
    CHARACTER,
    DOSSIER_MAX,
    HANDBOOK,
    Anchor,
    Fact,
    Tables,
    anchor_from_section,
    archive_sections,
    dossier_excerpt,
    gaps_line,
    parse_fields,
    record_lines,
    structured_anchor,
    structured_fields_equal_source,
)
from arklore.profiles.sources import load_tables

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"


@pytest.fixture(scope="module")
def tables() -> Tables:
    return load_tables(FIXTURES)


def _raw_basic(entry: str, index: int = 0) -> str:
    book = json.loads((FIXTURES / "handbook_info_table.json").read_text(encoding="utf-8"))
    text: str = book["handbookDict"][entry]["storyTextAudio"][index]["stories"][0]["storyText"]
    return text


def test_anchor_fields_equal_the_archive_fields(tables: Tables) -> None:
    a = structured_anchor("char_900_tester", tables)
    got = {f.label: f.value for f in a.facts}
    assert got == {
        "代号": "测试员",
        "性别": "女",
        "战斗经验": "三年",
        "出身地": "测试国",  # trailing space of the source value trimmed
        "生日": "4月1日",
        "种族": "菲林",
        "身高": "163cm",
        "矿石病感染情况": "体表有源石结晶分布，参照医学检测报告，确认为感染者。",
        "体细胞与源石融合率": "6%",
        "血液源石结晶密度": "0.25u/L",
        "势力": "测试国",
        "组织": "测试社",
        "客观履历": "测试员，测试国人，负责巡逻路线的勘察。",
        # the first paragraph that names her, whole sentences up to DOSSIER_MAX
        "档案资料一": "测试员喜欢在清晨巡逻，她说雾里的脚步声比地图更可靠。"
        "她从不抱怨路远，只是把每条岔路都记在一本旧笔记里。"
        "那本笔记据说已经写满了三本，每一本的封面上都画着一只歪歪扭扭的猫，谁问起来她都说那是她在"
        "北境雾里走了这么多年、从来没有走丢过一次的最好的向导。",
        # not a signed note (我), a signature, nor a line without her name; a 【权限记录】 in
        # the record's own voice runs on into the paragraph after it
        "档案资料二": "测试员的笔记不对外公开。嘴硬，心软。测试员每次被人夸奖都会转过身去，假装在看天气。",
        # 档案资料三 is only "测试员？": too short to say anything
    }
    # order: 基础档案 as written, then 临床诊断分析, then the character table, then 客观履历,
    # then the 档案资料 excerpts
    assert [f.label for f in a.facts][:3] == ["代号", "性别", "战斗经验"]
    # every archive value is a line of the raw source text
    raw = _raw_basic("char_900_tester")
    for f in a.facts:
        in_basic = f.field.startswith("handbookDict.char_900_tester.storyTextAudio[0].")
        if f.table == HANDBOOK and in_basic:
            assert f"【{f.label}】" in raw and f.value in raw
    height = a.get("身高")
    assert height is not None
    assert height.table == HANDBOOK
    assert height.field == (
        "handbookDict.char_900_tester.storyTextAudio[0].stories[0].storyText【身高】"
    )
    group = a.get("组织")
    assert group is not None
    assert group.table == CHARACTER and "groupId=testgroup" in group.field
    assert a.sources == [
        "handbook_info_table: char_900_tester (基础档案, 临床诊断分析, 客观履历, 档案资料一, 档案资料二)",
        "character_table: char_900_tester (nationId, groupId)",
        "handbook_team_table: testland, testgroup",
    ]
    assert a.gaps == [] and a.core is None


def test_the_objective_record_stops_before_a_note_appended_to_it() -> None:
    """客观履历 sometimes ends with somebody's note; the anchor keeps the record only."""
    record = "测试员，测试国人，负责巡逻路线的勘察。\n现于罗德岛任巡逻干员，与我们的外勤小队合作。"
    for note in ("\n\n我收到一些反馈，说她巡逻时总在哼歌。\n——■■■",
                 "\n【权限记录】\n具体条目您可以自行核对。",
                 "\n让人把这些输进终端？不如直接找别人吧，我不干。",
                 "\n——人事部干员"):  # fmt: skip
        assert record_lines(record + note) == record, note
    assert record_lines("测试员，因故自我流放的旅人。") == "测试员，因故自我流放的旅人。"
    # a dash that goes on with a sentence is still the record, not a signature
    more = record + "\n——在公示了以上信息后，测试员以个人身份加入罗德岛。"
    assert record_lines(more) == more
    # a record that opens without words keeps its first line with words, whoever it speaks to
    assert record_lines("......\n已为您找到答案。干员测试员，前测试社成员。\n我来补充一句。") == (
        "......\n已为您找到答案。干员测试员，前测试社成员。"
    )


def test_a_dossier_excerpt_is_the_narrators_words_about_her() -> None:
    her = ["测试员"]
    for not_narration in (
        "我第一次见到测试员，是在北境的雾里，她正蹲着画地图。",  # a signed note
        "博士，您大概也注意到了，测试员最近总是一个人出门。",  # a word to the Doctor
        "【权限记录】测试员的笔记不对外公开，任何人不得翻阅。",
        "“测试员是整个巡逻队里最可靠的人。”大家都这么说。",
        "——测试员的队长，在一次例行会议之后的发言",
    ):
        assert dossier_excerpt(not_narration, her) is None, not_narration
    assert dossier_excerpt("北境的雾一年比一年浓，巡逻队的路线也一年比一年长。", her) is None
    assert dossier_excerpt("测试员？", her) is None  # too short to say anything
    long_first = "测试员" + "走" * DOSSIER_MAX + "。"
    then = "测试员说过，在北境的雾里，脚步声比地图更可靠。"
    assert dossier_excerpt(f"{long_first}\n{then}", her) == then  # the next paragraph


def test_a_dossier_excerpt_reads_without_the_paragraph_it_leaves_out() -> None:
    her = ["测试员"]
    # an opening word that points back at the paragraph before is left out
    for opening in ("当然，", "正如上面提到的，", "不过，当然，", "而", "但", "其二，", "首先，"):
        text = f"{opening}测试员在北境的雾里走路的时候从来不看地图。"
        assert dossier_excerpt(text, her) == "测试员在北境的雾里走路的时候从来不看地图。", opening
    kept = "正如测试员自己说的那样，她只是一个路过北境的旅人。"  # her words, not a back reference
    assert dossier_excerpt(kept, her) == kept
    # a question it does not answer closes no excerpt; one that is nothing but a question is none
    asked = "测试员在雾里走了整整三年，没有一次迷路。可她究竟在找什么？"
    assert dossier_excerpt(asked, her) == "测试员在雾里走了整整三年，没有一次迷路。"
    only = "身为巡逻队员的测试员为何会来到北境的雾里？"
    answer = "测试员是被两位同伴从雾里拖出来的，一路上都在抱怨。"
    assert dossier_excerpt(f"{only}\n{answer}", her) == answer
    # nor a sentence that hands over to lines it leaves out
    lead = "测试员在雾里走路从来不看地图，这让人总想问她一个问题。"
    rules = "经调查得知，测试员为自己定下的规则如下："
    assert dossier_excerpt(f"{lead}\n{rules}\n{answer}", her) == answer
    quoted = (
        "测试员沉稳得让敌人误以为“这家伙是不是走错了战场？”"  # a quoted question is a statement
    )
    assert dossier_excerpt(quoted, her) == quoted
    # an opening sentence about what the paragraph before said, or one announcing what follows
    for back in (
        "罗德岛的每一个人都知道，测试员并不是这样的人。",
        "干员测试员就是其中一员。",
        "对于这样的结果，测试员没有抱怨。",
        "上述话语，是测试员选择这把伞的理由。",
        "这些约束让测试员的日子过得很拮据。",
        "虽然测试员和其他干员处得不好，不过其中有三个例外。",
        "和测试员一起巡逻过的人，一定都对这几句话很熟悉。",
        "其二是测试员的伞。",
        "根据测试员的强烈意愿，在资料中为她加入上述话语。",  # 上述 anywhere in it
        "这样的测试员，是北境巡逻队里每一个新人都值得尊敬和学习的榜样。",  # a conclusion
        "这就是测试员，一个总在雾里画地图、却从来不看地图的巡逻队员。",
        "那并没有持续多久，测试员很快又回到了雾里去画她的地图。",
    ):
        assert dossier_excerpt(f"{back}\n{answer}", her) == answer, back
    # the sentence that is left opens on a word pointing back: the word goes too
    then = "这也意味着北境需要更多人手。而说服测试员留下的，是两位一起在雾里走了三年的同伴。"
    assert dossier_excerpt(then, her) == "说服测试员留下的，是两位一起在雾里走了三年的同伴。"
    years = "这些年，测试员一直在北境的雾里巡逻，从没回过家。"  # a time, not a back reference
    assert dossier_excerpt(years, her) == years
    inner = "测试员总说北境的人们有多苦，她见过这些人的眼睛。"  # 这些 inside: nothing left out
    assert dossier_excerpt(inner, her) == inner


def test_the_records_own_we_stands_in_only_where_nothing_else_names_her() -> None:
    her = ["测试员"]
    inquiry = "我们在北境的雾里找到了测试员，她正蹲在地上画一张没人看得懂的地图。"
    plain = "测试员的母亲来自北境，父亲是一位南方的钟表匠。"
    family = f"{plain}我们很难想象两人是如何相遇的。"
    assert dossier_excerpt(f"{inquiry}\n{family}", her) == plain  # no 我们 in an excerpt
    assert dossier_excerpt(inquiry, her) is None
    assert dossier_excerpt("我第一次见到测试员，是在北境的雾里，她正蹲着画地图。", her) is None


def test_a_classified_note_is_somebodys_words_and_a_classified_record_is_the_archives() -> None:
    her = ["测试员"]
    note = "测试员太年轻了，她还没有学会隐藏自己，走路的样子一眼就能认出来。"
    signed = f"【权限记录】\n{note}\n她没意识到我早就注意到她了。\n——队长"
    assert dossier_excerpt(signed, her) is None  # a note in the first person, signed
    letter = f"【权限记录】\n博士，拜托您一件事。\n{note}"
    assert dossier_excerpt(letter, her) is None  # a letter to the Doctor
    record = "测试员，原北境巡逻队员，以地图绘制员的身份作为掩护。"
    assert dossier_excerpt(f"【权限记录】\n{record}", her) == record  # the archive's own voice
    assert dossier_excerpt(f"{signed}\n【权限记录】\n{record}", her) == record


def test_the_first_archive_opens_with_her_character_without_naming_her() -> None:
    """档案资料一 introduces her, often with no name (沉默寡言的信使。……): when no paragraph
    names her, its opening stands, a one-line lead going on into the next paragraph; never a
    speech, a note or an opening that points back. The other sections need her name."""
    her = ["测试员"]
    lead, then = "寡言的巡逻队员。", "按照本人的说法，雾里的路比地图上的更好认，走多了自然就会。"
    assert dossier_excerpt(f"{lead}\n{then}", her, opening=True) == lead + then
    assert dossier_excerpt(f"{lead}\n{then}", her) is None
    portrait = "总是独来独往的巡逻队员，话不多，做事却从来不出差错。"
    assert dossier_excerpt(portrait, her, opening=True) == portrait
    for not_hers in (
        "欸？队长人不见了，所以请这位大个子来临时救个场？行吧。",  # somebody's speech
        "当然啦，工程部对她的武器非常感兴趣，谁也说不准她会不会答应。",  # points back
        "我第一次见到她，是在北境的雾里，她正蹲着画地图。",  # a note in the first person
    ):
        assert dossier_excerpt(not_hers, her, opening=True) is None, not_hers


def test_a_signed_run_in_the_first_person_is_somebodys_note_from_its_first_voice() -> None:
    her = ["测试员"]
    record = "测试员是北境巡逻队里资历最老的队员，熟悉每一条被雾吞没的小路。"
    aside = "太好了，巡逻队里终于有人会帮我泡咖啡了！"
    assert dossier_excerpt(f"{record}\n{aside}\n——队长", her) == record  # the record stays
    note = "测试员总是一个人走在最前面。我大概理解了她的想法，不再多问。"
    assert (
        dossier_excerpt(f"{note}\n测试员从不回头看，哪怕身后的雾浓得看不见自己的脚。\n——同伴", her)
        is None
    )
    quoted = "“我走前面，你们跟上。”"  # her quoted words are not the note's voice
    assert dossier_excerpt(f"{quoted}\n{record}\n{aside}\n——队长", her) == record
    secret = f"【机密档案】\n{record}\n如果是过去，我绝不会同意这次合作。"
    assert dossier_excerpt(secret, her) is None


def test_a_dossier_excerpt_knows_the_name_her_archive_gives() -> None:
    """An archive that calls her by her real name (本名小测, then 小测 throughout) has
    excerpts about her under that name; a role it opens with once does not count."""

    def section(title: str, text: str) -> dict[str, Any]:
        return {"storyTitle": title, "stories": [{"storyText": text}]}

    about = "小测在北境长大，从小就跟着巡逻队在雾里认路，从不迷路。"
    book = {"handbookDict": {"char_902_real": {"storyTextAudio": [
        section("基础档案", "【代号】测绘员\n【性别】女"),
        section("客观履历", "北境巡逻队员，本名小测。小测擅长认路。"),
        section("档案资料一", about),
        section("档案资料二", "北境巡逻队员总在雾里走路，这是北境人都知道的事。"),
    ]}}}  # fmt: skip
    anchor = structured_anchor("char_902_real", Tables(handbook_info=book))
    assert anchor.value("档案资料一") == about
    assert anchor.value("档案资料二") is None  # 北境巡逻队员 opens her record, once: a role


def test_an_edited_dossier_excerpt_is_put_back_to_the_source(tables: Tables) -> None:
    truth = structured_anchor("char_900_tester", tables)
    written = Anchor(
        "char_900_tester",
        facts=[
            *truth.facts[:-1],
            Fact("档案资料二", "测试员其实是一名王女。", "", ""),
            Fact("档案资料三", "测试员的过去无人知晓，连她自己也说不清楚。", "", ""),
        ],
    )
    fixed, corrections = structured_fields_equal_source(written, tables)
    assert fixed.value("档案资料二") == truth.value("档案资料二")
    assert fixed.value("档案资料三") is None  # her 档案资料三 has no excerpt: nobody may write one
    assert [(c.label, c.action) for c in corrections] == [
        ("档案资料二", "replaced"), ("档案资料三", "removed"),
    ]  # fmt: skip


def test_first_occurrence_wins_over_a_garbled_copy() -> None:
    fields = parse_fields(
        "【身高】160cm\n【代号】甲\n乱码\n【身高】999cm\n【种族】\n\n佩洛\n【性别】女"
    )
    assert fields == [
        ("身高", "160cm", 0),
        ("代号", "甲", 1),
        ("种族", "佩洛", 4),
        ("性别", "女", 7),
    ]
    assert parse_fields("【矿石病感染情况】\n【性别】女") == [
        ("性别", "女", 1)
    ]  # no value: no fact


def test_alternate_form_found_through_patch_ids(tables: Tables) -> None:
    base = structured_anchor("char_902_twin", tables)
    form = structured_anchor("char_1902_twin2", tables)
    later = structured_anchor("char_1903_twin3", tables)
    assert base.value("身高") == "150cm" and form.value("身高") == "150cm"
    assert later.value("身高") == "158cm" and later.value("血液源石结晶密度") == "0.13u/L"
    assert [t["storyTitle"] for _, _, t in archive_sections(tables.handbook_info, "char_1903_twin3")] == [
        "基础档案", "临床诊断分析", "？？？"
    ]  # fmt: skip
    later_height = later.get("身高")
    assert later_height is not None
    assert later_height.field.startswith("handbookDict.char_902_twin.storyTextAudio[3]")
    # the team id the team table does not know gives no fact
    assert base.value("势力") == "远方" and base.value("小队") is None
    assert str(form.gaps[0]) == "character_table (faction)"


def test_missing_sources_are_reported_not_skipped(tables: Tables) -> None:
    a = structured_anchor("char_999_newcomer", tables)
    assert a.facts == []
    assert (
        gaps_line(a.gaps) == "no source: handbook_info_table (archive), character_table (faction)"
    )
    none = structured_anchor("char_900_tester", Tables())
    assert none.facts == [] and {g.detail for g in none.gaps} == {"table absent"}


def test_physical_tags(tables: Tables) -> None:
    """物理标签 says what no field of the anchor says: race, height, body measures and the
    infection status are the anchor's own lines (a tag would repeat them in the prompt)."""
    tester = structured_anchor("char_900_tester", tables)
    assert tester.physical_tags() == ["体表可见源石结晶"]
    assert {"种族", "身高", "矿石病感染情况"} <= {f.label for f in tester.facts}
    assert structured_anchor("char_901_guide", tables).physical_tags() == []


def test_render_and_read_back(tables: Tables) -> None:
    a = structured_anchor("char_901_guide", tables)
    a.core = "在测试国的北边长大，熟悉每一座桥。"
    body = a.render()
    assert body.splitlines()[0] == "- 代号：向导"
    assert body.splitlines()[-1] == "- 核心经历：在测试国的北边长大，熟悉每一座桥。"
    back = anchor_from_section("char_901_guide", body)
    assert [(f.label, f.value) for f in back.facts] == [(f.label, f.value) for f in a.facts]
    assert back.core == a.core
    fixed, corrections = structured_fields_equal_source(back, tables)
    assert corrections == [] and fixed.core == a.core


def test_wrong_height_replaced_by_source_and_reported(tables: Tables) -> None:
    written = anchor_from_section(
        "char_900_tester",
        "- 代号：测试员\n- 身高：170cm\n- 种族： 菲林 \n- 体重：45kg\n- 口头禅：再检查一遍\n"
        "- 核心经历：从小在测试国巡逻。",
    )
    fixed, corrections = structured_fields_equal_source(written, tables)
    by = {c.label: c for c in corrections}
    assert by["身高"].action == "replaced"
    assert (by["身高"].written, by["身高"].source) == ("170cm", "163cm")
    assert by["身高"].table == HANDBOOK and by["身高"].field.endswith("【身高】")
    assert "170cm" in str(by["身高"]) and "163cm" in str(by["身高"])
    assert by["体重"].action == "removed"  # her archive has no weight: a model made it up
    assert by["性别"].action == "added" and by["性别"].source == "女"
    assert "种族" not in by  # only whitespace differed
    assert fixed.value("身高") == "163cm" and fixed.value("体重") is None
    assert fixed.value("口头禅") == "再检查一遍"  # not a structured field: kept as written
    assert fixed.core == "从小在测试国巡逻。"
    truth = {f.label: f.value for f in structured_anchor("char_900_tester", tables).facts}
    assert {f.label: f.value for f in fixed.facts if f.label in truth} == truth


def test_duplicate_structured_field_is_removed(tables: Tables) -> None:
    a = Anchor(
        "char_900_tester",
        [Fact("身高", "163cm", "", ""), Fact("身高", "200cm", "", "")],
    )
    fixed, corrections = structured_fields_equal_source(a, tables)
    assert [f.value for f in fixed.facts if f.label == "身高"] == ["163cm"]
    assert any(c.label == "身高" and c.action == "removed" for c in corrections)
