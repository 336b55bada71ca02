"""The bonds that define her: anchors ranked by the kind of bond (never by id text), kinship
and role words resolved for the speaker, people of her graph matched by name safely, and a
weak-contact view for a person the message names whom the index does not describe.

Every name, line and relation here is invented for the tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.service_world import (
    AMIYA,
    AUDREY,
    CHEN,
    HOSHI,
    S3,
    SWIRE,
    THERESA,
    VERONICA,
    build_rag,
    graph,
    kb_workspace,
    lid,
    make_kb,
)

from arklore.core import kinship as K
from arklore.graph.io import save_graph
from arklore.graph.model import Edge, Node, RelationGraph, bond
from arklore.graph.named import kin_people, people_named

ME, YOU = "char_100_me", "char_101_you"


def _g(edges: list[Edge], extra: dict[str, str] | None = None) -> RelationGraph:
    names = {ME: "甲", YOU: "乙", "char_200_op": "丙", "npc:丁": "丁", "npc:戊": "戊",
             "char_300_op": "己", "npc:庚": "庚"} | (extra or {})  # fmt: skip
    nodes = {
        i: Node(i, n, "npc" if i.startswith("npc:") else "operator", {}) for i, n in names.items()
    }
    return RelationGraph(nodes, edges)


def _e(a, b, pred, s=0.991, origins=("matrix",), desc=None, **signals) -> Edge:
    sig = {"matrix": 1} if "matrix" in origins else {}
    return Edge(a, b, pred, s, list(origins), sig | signals, [], desc, [])


# -- the vocabulary --------------------------------------------------------------------------
def test_every_form_belongs_to_one_term_and_every_named_term_exists():
    forms = [f for t in K.TERMS for f in t.forms]
    assert len(forms) == len(set(forms))
    for t in K.TERMS:
        assert set(t.inverse) | set(t.includes) <= set(K.BY_NAME), t.name
    assert not set(K.BLOCKERS) & set(forms)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("舅舅最近身体还好吗？", ["舅舅"]),
        ("你的两个妹妹们还好吗？", ["妹妹"]),
        ("你老哥又在忙家族的事吗？", ["哥哥"]),
        ("你爸还在照顾花店吗？", ["父亲"]),
        ("你们二队长有消息吗？", []),  # a title of one captain, not her 队长
        ("爸还好吗？", []),  # one character: only right after 你/您
        ("我姐姐也来了", []),  # the Doctor's own relative
        ("她妹妹呢？", []),  # someone else's
        ("哥伦比亚的小姐们", []),  # words that hold the characters
        ("去年想和家人去看山", []),  # alone, 家人 is the speaker's own
        ("我家老爷子今天生日", []),  # somebody's old man, not a lord
        ("你发朋友圈了吗", []),  # a feed, not her friends
        ("我家老爷也爱叨叨", []),  # the speaker's household's
        ("你家老爷最近心情怎么样", ["主君"]),
        ("你哥们儿又来蹭饭了", []),  # a buddy, not her brother
        ("你觉得这部剧的主人公怎么样", []),
        ("你的助手今天加班了", ["部下"]),
        ("你的家人还好吗？", ["家人"]),
        ("你那位老搭档呢？", ["搭档"]),
        ("你们以前是同事吗", []),  # says what they are, names nobody
        ("你是她的老朋友吧", []),  # 她的老…: someone else's
        ("我妹妹最近也总顶嘴，妹妹长大了都这样", []),  # the second is no more hers
        ("我妹妹也来了，你妹妹呢", ["妹妹"]),  # 你 before it: hers again
        ("你跟你那两个姐妹谁最能喝", ["兄弟姐妹"]),  # with 你 in its clause
        ("年和夕是姐妹吗", []),
        ("队长说明天集合，今晚不能陪你了", []),  # a role above, bare: the speaker's own
        ("我也在事务所打工，老板天天画饼", []),
        ("你们队长又开会了", ["队长"]),
        ("你那个总板着脸的老板呢", ["老板"]),  # a clause closed by 的 still says whose
        ("妹妹最近好吗", ["妹妹"]),  # a family word, bare, in a chat with her: her family
        ("我家那个弟弟也让我头疼", []),  # 我家那个: the speaker's
        ("妳們隊長今天來找過妳", ["队长"]),  # traditional script, and 妳
        ("妳姊姊最近好嗎", ["姐姐"]),  # 姊姊 is 姐姐
        ("我們隊長說明天集合", []),  # 我們: the speaker's, in traditional script too
    ],
)
def test_message_words(text: str, terms: list[str]):
    assert [t.name for t, _, _ in K.find_terms(text)] == terms


def test_her_subordinates_include_her_retainers():
    # 你那两个手下, said to a lord: the retainers who serve her, not only those she commands
    assert K.wanted(K.BY_NAME["部下"]) == {"部下", "侍从"}
    assert K.wanted(K.BY_NAME["侍从"]) == {"侍从"}


def test_a_description_is_read_in_its_head_only():
    assert [t.name for t in K.description_terms("她的舅舅，也是教她剑术的人。")] == ["舅舅"]
    # the sister named after the comma is someone else's
    assert K.description_terms("忠心耿耿的家臣，他把保护妹妹的任务交给他。")[0].name == "侍从"
    assert K.description_terms("格拉斯哥帮的老伙伴") == [K.BY_NAME["搭档"]]  # no 哥 in 格拉斯哥


# -- anchors -----------------------------------------------------------------------------
def test_anchor_ties_are_broken_by_the_kind_of_bond_then_evidence_never_by_id():
    g = _g([
        _e(ME, "char_200_op", "战友", turns=10),
        _e(ME, "npc:丁", "近亲", turns=10),  # same strength: kin beats a comrade, npc: or not
        _e(ME, "char_300_op", "朋友", turns=3),
        _e(ME, "npc:戊", "朋友", turns=30),  # same kind and strength: more evidence first
        _e(ME, "npc:庚", "other", desc="她敬称为殿下的旧主，她至今想念。", turns=1),
    ])  # fmt: skip
    order = [e.target for e in g.get_top_anchor_relations(ME, 5)]
    # 丁 (kin) first; 丙 (comrade) and 庚 (superior, by the label) are alike: evidence decides
    assert order == ["npc:丁", "char_200_op", "npc:庚", "npc:戊", "char_300_op"]
    assert bond(g.get_relation(ME, "npc:庚")[0]) == K.SUPERIOR  # an `other` takes its label's kind
    # equal in everything: the person's name decides, not the id text
    tie = _g([_e(ME, "char_200_op", "朋友"), _e(ME, "npc:丁", "朋友")], {"char_200_op": "辛"})
    assert [e.target for e in tie.anchors(ME)] == ["npc:丁", "char_200_op"]  # 丁 < 辛


def test_the_stages_of_her_form_claim_the_last_anchor_slots_never_her_kin():
    """In one of her forms (a holiday, a later self) the people of that form's stories take
    the last anchors; her kin keep theirs."""
    holiday = ["obt/hol_01", "obt/hol_02", "obt/hol_03"]

    def met(b: str, stages: list[str], pred: str = "interaction", s: float = 0.6) -> Edge:
        return Edge(ME, b, pred, s, ["interaction"], {"turns": 5}, [], None, stages)

    g = _g([
        _e(ME, "npc:丁", "近亲"),
        _e(ME, "char_200_op", "战友"),
        met("npc:戊", ["obt/main_01"], s=0.7),
        met("char_300_op", holiday, s=0.5),  # the holiday's partner
        met("npc:庚", holiday[:1], s=0.55),  # one stage of it: not enough
    ])  # fmt: skip
    assert [e.target for e in g.get_top_anchor_relations(ME, 3)] == [
        "npc:丁", "char_200_op", "npc:戊"
    ]  # fmt: skip
    form = [e.target for e in g.get_top_anchor_relations(ME, 3, prefer=holiday)]
    assert form == ["npc:丁", "char_200_op", "char_300_op"]
    assert [e.target for e in g.get_top_anchor_relations(ME, 2, prefer=holiday)] == [
        "npc:丁", "char_300_op"
    ]  # fmt: skip
    two = _g([*g.edges(), met("npc:戊2", holiday, s=0.4)], {"npc:戊2": "壬"})
    assert [e.target for e in two.get_top_anchor_relations(ME, 1, prefer=holiday)] == ["npc:丁"]


def test_how_a_relation_is_known_comes_before_the_kind_of_bond():
    g = _g([
        _e(ME, "npc:丁", "近亲", 0.9, origins=("story",), direct=3),
        _e(ME, "char_200_op", "相识"),  # curated: a person wrote it down
        _e(ME, "npc:戊", "近亲", 0.95, origins=("interaction",), turns=300),  # never named
    ])  # fmt: skip
    assert [e.target for e in g.anchors(ME)] == ["char_200_op", "npc:丁", "npc:戊"]


def test_every_relation_a_person_wrote_is_an_anchor_up_to_the_written_limit():
    """陈's rival 诗怀雅 is her sixth written relation by the kind of bond: it stays an anchor;
    a written 相识 (they know each other, no more) never is one; a relation known from contact
    alone still waits for ``k``."""
    from arklore.rag.docs import ANCHOR_K, ANCHOR_WRITTEN_MAX, anchor_edges

    kinds = ["近亲", "近亲", "上下级", "朋友", "合作", "竞争", "相识", "同事", "同事", "同事"]
    people = {f"npc:w{i}": f"写{i}" for i in range(len(kinds))}
    met = _e(ME, "npc:m", "interaction", 0.99, origins=("interaction",), turns=900)
    written = [_e(ME, p, kind) for p, kind in zip(people, kinds, strict=True)]
    few = _g([*written[:7], met], {**people, "npc:m": "遇"})
    got = [e.target for e in anchor_edges(few, ME)]
    assert got == list(people)[:6]  # the rival (竞争, sixth) stays, the acquaintance not
    assert "npc:m" not in got  # contact only: past k, no slot
    many = _g([*written, met], {**people, "npc:m": "遇"})
    ranked = [e.target for e in many.anchors(ME) if e.target not in ("npc:m", "npc:w6")]
    assert [e.target for e in anchor_edges(many, ME)] == ranked[:ANCHOR_WRITTEN_MAX]
    # fewer written than k: k is filled from the story as before
    two = _g([*written[:2], met], {**people, "npc:m": "遇"})
    assert [e.target for e in anchor_edges(two, ME)] == [*list(people)[:2], "npc:m"]
    assert len(anchor_edges(many, ME, 1)) == ANCHOR_WRITTEN_MAX > ANCHOR_K
    assert anchor_edges(many, ME, 0) == []


# -- kinship and role words ------------------------------------------------------------------
def _family() -> RelationGraph:
    return _g([
        _e(ME, "npc:丁", "近亲", desc="她的舅舅，两人后来决裂。"),
        _e(ME, "npc:戊", "近亲", desc="她最小的妹妹。"),
        _e(ME, "char_200_op", "朋友", desc="她喊作丙姐姐的朋友。"),  # a friend, not a sister
        _e("char_300_op", ME, "近亲", desc="她的妹妹甲。"),  # 己 is 甲's elder sister
        _e(ME, "npc:庚", "interaction", 0.7, origins=("interaction",), turns=40),
        _e("npc:庚", ME, "师徒"),  # 庚 teaches 甲: her 老师, with no word for it
        _e(YOU, "npc:戊", "朋友", desc="她的朋友。"),
    ])  # fmt: skip


def test_a_kinship_word_resolves_for_this_speaker_only():
    g = _family()
    assert [s[0] for s in people_named(g, ME, "舅舅最近身体还好吗？", [])] == ["npc:丁"]
    assert people_named(g, YOU, "舅舅最近身体还好吗？", []) == []  # 乙 has no uncle
    assert kin_people(g, ME, K.BY_NAME["妹妹"]) == ["npc:戊"]
    # the elder sister is read from 己's side of the relation; the friend she calls 姐姐 is not
    assert kin_people(g, ME, K.BY_NAME["姐姐"]) == ["char_300_op"]
    assert kin_people(g, ME, K.BY_NAME["老师"]) == ["npc:庚"]  # by the directed predicate
    assert kin_people(g, ME, K.BY_NAME["兄弟姐妹"]) == ["npc:戊", "char_300_op"]
    assert kin_people(g, YOU, K.BY_NAME["朋友"]) == ["npc:戊"]


def test_her_little_sister_is_the_youngest_of_her_sisters():
    """甲 has two younger sisters, 戊 and 己; 己 calls 戊 姐姐, so 小妹 is 己 alone, while 妹妹
    is both. With nothing saying who is elder, 小妹 keeps both."""
    g = _g([
        _e(ME, "npc:戊", "近亲", desc="妹妹，家里的老二"),
        _e(ME, "char_300_op", "近亲", desc="妹妹，最小的"),
        _e("char_300_op", "npc:戊", "近亲", desc="姐姐"),
    ])  # fmt: skip
    sisters = K.BY_NAME["妹妹"]
    assert set(kin_people(g, ME, sisters)) == {"npc:戊", "char_300_op"}
    assert kin_people(g, ME, sisters, "小妹") == ["char_300_op"]
    assert kin_people(g, ME, sisters, "大妹妹") == ["npc:戊"]  # the elder of the two
    assert [s[0] for s in people_named(g, ME, "你小妹最近好吗？", [])] == ["char_300_op"]
    assert {s[0] for s in people_named(g, ME, "你妹妹最近好吗？", [])} == {"npc:戊", "char_300_op"}
    unordered = _g([
        _e(ME, "npc:戊", "近亲", desc="妹妹"), _e(ME, "char_300_op", "近亲", desc="妹妹"),
    ])  # fmt: skip
    assert set(kin_people(unordered, ME, sisters, "小妹")) == {"npc:戊", "char_300_op"}


def test_her_sisters_are_not_her_brothers():
    """姐妹 are her sisters and 兄弟 her brothers, where 兄弟姐妹 is all of them."""
    g = _g([
        _e(ME, "npc:戊", "近亲", desc="她的妹妹"),
        _e(ME, "npc:丁", "近亲", desc="她的弟弟"),
        _e(ME, "char_300_op", "近亲", desc="她的哥哥"),
    ])  # fmt: skip
    siblings = K.BY_NAME["兄弟姐妹"]
    assert set(kin_people(g, ME, siblings)) == {"npc:戊", "npc:丁", "char_300_op"}
    assert kin_people(g, ME, siblings, "姐妹") == ["npc:戊"]
    assert set(kin_people(g, ME, siblings, "兄弟")) == {"npc:丁", "char_300_op"}
    assert [s[0] for s in people_named(g, ME, "你那两个姐妹呢？", [])] == ["npc:戊"]


def test_a_particular_form_means_whom_her_description_calls_so():
    """家臣 is those her relations call her 家臣, not her 护卫, though both serve her; a form of
    rank (二哥) is the one called so, and nobody where no description says who is second."""
    g = _g([
        _e(ME, "npc:丁", "主仆", desc="忠心的家臣"),
        _e(ME, "npc:戊", "主仆", desc="随行的护卫"),
        _e(ME, "char_300_op", "近亲", desc="她的二哥"),
        _e(ME, "char_200_op", "近亲", desc="她的大哥"),
        _e(ME, "npc:庚", "近亲", desc="她的姐姐"),
    ])  # fmt: skip
    retainers = K.BY_NAME["侍从"]
    assert set(kin_people(g, ME, retainers)) == {"npc:丁", "npc:戊"}
    assert kin_people(g, ME, retainers, "家臣") == ["npc:丁"]
    assert set(kin_people(g, ME, retainers, "管家")) == {"npc:丁", "npc:戊"}  # nobody says so
    brothers = K.BY_NAME["哥哥"]
    assert kin_people(g, ME, brothers, "二哥") == ["char_300_op"]
    assert set(kin_people(g, ME, brothers, "哥哥")) == {"char_300_op", "char_200_op"}
    assert kin_people(g, ME, K.BY_NAME["姐姐"], "二姐") == []  # who is second is not told


def test_a_word_in_or_after_a_name_or_about_others_is_not_hers():
    g = _family()
    spans = [("char_200_op", 0, 1)]  # 丙姐姐: 丙 with a title, not her sister
    assert [s[0] for s in people_named(g, ME, "丙姐姐最近好吗？", spans)] == ["char_200_op"]
    assert [s[0] for s in people_named(g, ME, "丙的舅舅是谁？", spans)] == ["char_200_op"]
    # 年和夕是姐妹吗: how the people named are related, not her sisters
    both = [("char_200_op", 0, 1), ("char_300_op", 2, 3)]
    assert [s[0] for s in people_named(g, ME, "丙和己是姐妹吗？", both)] == [
        "char_200_op", "char_300_op"
    ]  # fmt: skip
    # ... but in a clause of its own the word is hers again
    got = people_named(g, ME, "丙和己是朋友，你妹妹呢？", both)
    assert [s[0] for s in got] == ["char_200_op", "char_300_op", "npc:戊"]
    # a word inside a name (an alias such as 银老板) is part of the name
    boss = [("char_200_op", 0, 3)]
    assert [s[0] for s in people_named(g, ME, "丙舅舅请客吃饭", boss)] == ["char_200_op"]


def test_people_of_her_graph_match_by_name_only_when_safe():
    g = _g(
        [_e(ME, "npc:丁", "朋友"), _e(ME, "npc:大帝", "other", desc="她称作老板的首领。"),
         _e(ME, "npc:老师", "interaction", 0.5, origins=("interaction",), turns=9),
         _e(ME, "npc:维克托", "朋友"), _e(YOU, "npc:奥斯卡", "朋友")],
        {"npc:大帝": "大帝", "npc:老师": "老师", "npc:维克托": "维克托", "npc:奥斯卡": "奥斯卡"},
    )  # fmt: skip

    def named(text: str) -> list[str]:
        return [s[0] for s in people_named(g, ME, text, [])]

    assert named("维克托最近好吗？") == ["npc:维克托"]
    assert named("奥斯卡最近好吗？") == []  # not anyone she knows
    assert named("丁最近还好吗？") == ["npc:丁"]  # one character: a person here
    assert named("丁字路口见") == []  # ... a word there
    assert named("大帝最近怎么样？") == ["npc:大帝"]  # a word that is a name: person context
    assert named("罗马大帝的故事") == []
    assert named("你们老板最近怎么样？") == ["npc:大帝"]  # the role word, resolved
    assert named("老师最近忙吗？") == []  # a role word is never a name


def test_an_ambiguous_operator_name_keeps_the_candidates_she_knows():
    g = _g([_e(ME, "char_200_op", "朋友")])
    spans = [("char_200_op", 0, 1), ("char_300_op", 0, 1)]
    assert [s[0] for s in people_named(g, ME, "丙在吗", spans)] == ["char_200_op"]
    assert people_named(g, YOU, "丙在吗", spans) == []


# -- the chat: named, kinship words, weak contact --------------------------------------------
@pytest.fixture(scope="module")
def chen_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The invented knowledge base, with 陈 given an uncle and enough relations that 阿米娅
    (strength 0.5, no description over the threshold) is not one of her anchors."""
    home = make_kb(tmp_path_factory.mktemp("bonds") / "home", index=False)
    g = graph()
    imp = {"import": 1}
    g.add_edge(Edge(CHEN, AUDREY, "近亲", 0.8, ["import"], imp, [], "她的舅舅，教过她剑术。"))
    g.add_edge(Edge(CHEN, THERESA, "合作", 0.8, ["import"], imp, [], "共事过几回的人。"))
    g.add_edge(Edge(CHEN, VERONICA, "同事", 0.8, ["import"], imp, [], "偶尔来往的同僚。"))
    save_graph(g, home / "relation_graph.json")
    build_rag(home, g)
    return home


def test_the_chat_resolves_her_own_uncle_and_nobody_elses(chen_home: Path):
    with kb_workspace(chen_home, tier_c_relations=True) as ws:
        chen, amiya = ws.chat.speaker("陈"), ws.chat.speaker("阿米娅")
        assert ws.chat.named(chen, "舅舅最近身体还好吗？") == [AUDREY]
        assert ws.chat.named(amiya, "舅舅最近身体还好吗？") == []
        assert ws.chat.named(chen, "星熊和你舅舅吵架了？") == [HOSHI, AUDREY]
        rel = ws.chat.turn("陈", "舅舅最近身体还好吗？").block("relations")
        assert rel.items[0]["target_id"] == AUDREY and rel.items[0]["kind"] == "anchor"


def test_a_named_person_below_the_threshold_gets_a_weak_contact_view(chen_home: Path):
    with kb_workspace(chen_home) as ws:
        rel = ws.chat.turn("陈", "阿米娅最近怎么样？").block("relations")
        anchors = [i["target_id"] for i in rel.items if i["kind"] == "anchor"]
        assert AMIYA not in anchors and len(anchors) == 5
        (weak,) = [i for i in rel.items if i["kind"] == "contextual"]
        assert weak["target_id"] == AMIYA and weak["source"] == "weak_contact"
        assert weak["text"].startswith("陈视阿米娅为合作伙伴，但两人交集不多。")
        # her words and the other's, verbatim, from the stage their edge cites (hers first)
        assert "陈：「记得，那天的雨下得很大，你撑着伞在门口等我。」阿米娅：「" in weak["text"]
        assert lid(S3, 2) in weak["evidence_line_ids"] and lid(S3, 2) in rel.line_ids
        assert "【本轮提到的人】" in rel.text and "交集不多" in rel.text
        # not named: no weak view
        other = ws.chat.turn("陈", "今天天气不错").block("relations")
        assert [i["kind"] for i in other.items] == ["anchor"] * 5
        assert SWIRE in [i["target_id"] for i in other.items]


def test_a_group_chat_gives_a_person_below_the_threshold_the_same_weak_contact_view(
    chen_home: Path,
):
    with kb_workspace(chen_home) as ws:
        named = ws.chat.turn("陈", "阿米娅最近怎么样？").block("relations")
        (weak,) = [i for i in named.items if i["kind"] == "contextual"]
        group = ws.chat.turn("陈", "大家好", participants=["阿米娅"]).block("group")
        (seen,) = [i for i in group.items if i["from_name"] == "陈"]
        assert seen["target_id"] == AMIYA and seen["source"] == "weak_contact"
        assert seen["text"] == weak["text"] and f"陈→阿米娅：{weak['text']}" in group.text
        assert lid(S3, 2) in group.line_ids  # the exchange it quotes is cited
