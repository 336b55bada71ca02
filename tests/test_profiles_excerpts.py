"""The 档案资料 excerpts of the anchor: a passage to its end within the budget, cut at a
sentence end (its opening, ……, its close) when over; never a signed note nor an analysis a
【权限记录】 quotes; and what a chat receives of the anchor (no lab figures, 战斗经验 or 身高,
the infection status in one word, no 物理标签 repeating the anchor). All archive text here is
invented for these tests, in the handbook table's shape."""

from __future__ import annotations

from typing import Any

from arklore.chat.blocks.persona import persona_block
from arklore.profiles.archive import (
    DOSSIER_MAX,
    ELISION,
    Anchor,
    Fact,
    Tables,
    chat_anchor,
    dossier_excerpt,
    infection_word,
    lore_only,
    structured_anchor,
)
from arklore.profiles.charfile import ANCHOR, PHYSICAL, TIER_A, TIER_B, TIER_S, UsableSection
from arklore.profiles.persona import Persona

HER = ["测绘员"]


def _section(title: str, text: str) -> dict[str, Any]:
    return {"storyTitle": title, "stories": [{"storyText": text}]}


def _book(*sections: dict[str, Any], char_id: str = "char_950_mapper") -> Tables:
    return Tables(handbook_info={"handbookDict": {char_id: {"storyTextAudio": list(sections)}}})


BASIC = _section(
    "基础档案",
    "【代号】测绘员\n【性别】女\n【战斗经验】六年\n【出身地】雾港\n【生日】3月3日\n"
    "【种族】菲林\n【身高】166cm\n【矿石病感染情况】\n参照医学检测报告，确认为非感染者。",
)
CLINICAL = _section(
    "临床诊断分析",
    "造影检测结果显示，该干员体内脏器轮廓清晰。\n\n【体细胞与源石融合率】0%\n无异常。\n\n"
    "【血液源石结晶密度】0.11u/L\n数值正常。",
)


# -- a passage to its end ----------------------------------------------------------------


def test_an_excerpt_runs_to_the_end_of_its_paragraph() -> None:
    """The paragraphs after the one that names her go on with her story (the experiment, its
    failure, why she left): the excerpt runs through them, not only the first line."""
    text = (
        "测绘员与雾港测绘局之间的关系一直都十分复杂。\n"
        "测绘局的老局长对她始终抱有敌意。\n"
        "据资料显示，两人的冲突源于一次由老局长主导的远航测绘。\n"
        "那次远航失败了。测绘员独自带回了船队，也因此离开了测绘局。\n"
        "\n"
        "测绘员至今不愿提起那次远航。"
    )
    got = dossier_excerpt(text, HER)
    assert got == (
        "测绘员与雾港测绘局之间的关系一直都十分复杂。测绘局的老局长对她始终抱有敌意。"
        "据资料显示，两人的冲突源于一次由老局长主导的远航测绘。"
        "那次远航失败了。测绘员独自带回了船队，也因此离开了测绘局。"
    )  # the blank line ends the paragraph: the next one is another passage
    # it stops before a paragraph in the first person, a quotation, a heading or a form line
    for stop in ("我们至今不知道她为何回来。", "“测绘员是最好的领航员。”", "【附注】", "备注：无"):
        assert dossier_excerpt(f"{text.split(chr(10))[0]}\n{stop}\n那次远航失败了。", HER) == (
            "测绘员与雾港测绘局之间的关系一直都十分复杂。"
        ), stop


def test_an_excerpt_over_the_budget_keeps_its_opening_and_its_close() -> None:
    """Over the budget the cut falls on sentence ends: the opening sentences, ……, and the
    closing ones (a passage's point is often its end), never inside a quotation."""
    opening = "测绘员在雾港长大，从小跟着父亲出海。"
    middle = [
        f"第{i}次出海时，她记下了一片新的暗礁，把它画进了父亲的旧海图。" for i in range(1, 13)
    ]
    close = "如今，她画的海图挂在罗德岛的舰桥上。"
    got = dossier_excerpt("\n".join([opening, *middle, close]), HER)
    assert got is not None and len(got) <= DOSSIER_MAX
    head, _, tail = got.partition(ELISION)
    whole = "".join([opening, *middle, close])
    assert head.startswith(opening) and head.endswith("。") and whole.startswith(head)
    assert tail.endswith(close) and whole.endswith(tail) and len(tail) <= DOSSIER_MAX // 3
    assert tail.startswith("第") and len(head) + len(tail) < len(whole)  # whole sentences
    # within the budget nothing is left out
    short = "\n".join([opening, *middle[:2], close])
    assert dossier_excerpt(short, HER) == short.replace("\n", "")
    # a sentence inside a quotation is not a place to cut
    quoted = "测绘员却表示，“雾港的每一片暗礁都不一样。它们会移动。”"
    for budget in range(40, 80):  # wherever the budget falls, the cut is outside it
        got = dossier_excerpt("\n".join([opening, quoted, *middle]), HER, budget=budget)
        head = (got or "").partition(ELISION)[0]
        assert head.count("“") == head.count("”"), budget


# -- signed notes and analyses -------------------------------------------------------------


def test_a_note_signed_at_the_end_of_its_line_is_left_out() -> None:
    record = "在战斗中，测绘员会先登上高处观察地形。她总是最后一个撤离。"
    assert dossier_excerpt(f"{record} 听人说话到一半就开始画图的急性子。————领航员", HER) == record
    # a line that is nothing but a signed note is no excerpt
    assert dossier_excerpt("测绘员画的图比谁都准，我服气。——后勤部某干员", HER) is None
    # a paragraph a signature line follows is the note it signs
    signed = f"{record}\n\n测绘员画图的时候谁也别去打扰她，真的。\n——后勤部干员"
    assert dossier_excerpt(signed, HER) == record


def test_an_analysis_a_classified_record_quotes_is_not_the_record() -> None:
    """The sentences of an analysis quoted inside a 【权限记录】 are the analyst's reading
    (赫拉格知道他的好友策划了乌萨斯的失败: the 好友 is the enemy commander), never an excerpt;
    nor is a classified part that opens as an analysis."""
    analysis = (
        "【权限记录】\n在分析了大量情报后，现将一些心理分析放在此列。\n\n"
        "“她一生失去过两位同伴。\n"
        "测绘员知道她的同伴背叛了测绘局，但测绘员不会责怪同伴。\n"
        "些许微小的希望，可能是她出海的最后动力。”"
    )
    assert dossier_excerpt(analysis, HER) is None
    quoted_only = analysis.replace("在分析了大量情报后，现将一些心理分析放在此列。", "以下摘录。")
    assert dossier_excerpt(quoted_only, HER) is None  # the quotation alone keeps it out
    record = "测绘员，原雾港测绘局成员，以领航员身份作为掩护。"
    assert dossier_excerpt(f"{analysis}\n【权限记录】\n{record}", HER) == record
    # a quotation of several paragraphs, each opening with “, closes with its last one
    after = "测绘员讲这些的时候一直低着头，在画一张谁也没见过的海图。"
    speech = f"“第一次出海那年，\n“雾比现在还浓，测绘员说船会沉。”\n{after}"
    assert dossier_excerpt(speech, HER) == after


def test_the_anchor_of_an_invented_archive_follows_the_rules() -> None:
    tables = _book(
        BASIC,
        CLINICAL,
        _section("客观履历", "测绘员，雾港人，罗德岛领航员。"),
        _section(
            "档案资料一",
            "在出海时，测绘员总是第一个醒来。她会把风向记在袖口上。 画图画到一半就会跑去看海的急性子。"
            "————领航员",
        ),
        _section("档案资料三", "【权限记录】\n“测绘员知道她的同伴背叛了测绘局。”\n——■■■"),
    )
    a = structured_anchor("char_950_mapper", tables)
    assert a.value("档案资料一") == "在出海时，测绘员总是第一个醒来。她会把风向记在袖口上。"
    assert a.value("档案资料三") is None
    assert "领航员" not in (a.value("档案资料一") or "")


# -- what a chat receives ----------------------------------------------------------------


def test_lab_figures_experience_and_height_stay_out_of_a_chat() -> None:
    anchor = structured_anchor("char_950_mapper", _book(BASIC, CLINICAL))
    body = anchor.render()
    assert "体细胞与源石融合率：0%" in body and "身高：166cm" in body  # the profile holds them
    chat = chat_anchor(body)
    for gone in ("体细胞与源石融合率", "血液源石结晶密度", "战斗经验", "身高", "参照医学检测报告"):
        assert gone not in chat, gone
    assert "- 矿石病感染情况：非感染者" in chat.split("\n")
    assert "- 种族：菲林" in chat.split("\n") and "- 生日：3月3日" in chat.split("\n")
    assert anchor.physical_tags() == []  # 菲林, 身高, 非感染者 are the anchor's own lines
    assert all(lore_only(x) for x in ("战斗经验", "斗殴经验", "身高", "高度", "维护检测报告"))
    assert lore_only("润滑油源石结晶密度") and not lore_only("源石并发症")
    assert infection_word("体表有源石结晶分布，参照医学检测报告，确认为感染者。") == "感染者"
    assert infection_word("未公开") == "未公开"


def _persona(tier: str, anchor: str, tags: str = "") -> Persona:
    sections = [UsableSection(ANCHOR, anchor, 10)]
    if tags:
        sections.append(UsableSection(PHYSICAL, tags, 3))
    return Persona("char_950_mapper", "测绘员", tier, "x.char", False, sections)


def test_the_persona_block_renders_a_generated_anchor_for_a_conversation() -> None:
    anchor = Anchor(
        "char_950_mapper",
        [
            Fact("代号", "测绘员", "", ""),
            Fact("战斗经验", "六年", "", ""),
            Fact("种族", "菲林", "", ""),
            Fact("身高", "166cm", "", ""),
            Fact("矿石病感染情况", "体表有源石结晶分布，参照医学检测报告，确认为感染者。", "", ""),
            Fact("体细胞与源石融合率", "9%", "", ""),
            Fact("血液源石结晶密度", "0.2u/L", "", ""),
        ],
    )
    tags = "\n".join(f"- {t}" for t in anchor.physical_tags())
    for tier in (TIER_A, TIER_B):
        text = persona_block(_persona(tier, anchor.render(), tags), budget=500).text
        assert text == (
            "【测绘员的人设】\n## 锚\n- 种族：菲林\n- 矿石病感染情况：感染者\n"
            "## 物理标签\n- 体表可见源石结晶"
        )
    # a person's file (tier S) is injected as written
    hand = persona_block(_persona(TIER_S, "- 身高：166cm"), budget=500).text
    assert hand.endswith("- 身高：166cm")
