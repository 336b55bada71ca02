"""Retrieval: anchors, contextual relations, the budgeted context block, group chat."""

from __future__ import annotations

import random
from typing import Any

import pytest
from support.rag_world import (
    AMIYA,
    AUDREY,
    CHEN,
    HOSHI,
    KALTS,
    LONELY,
    NAMES,
    SWIRE,
    THERESA,
    VERONICA,
    build,
    make_rag,
    small_graph,
)  # fmt: skip

from arklore.core import tokens
from arklore.graph.named import spans_from_mentions
from arklore.rag.context import Relation, RelationRAG, fit_budget, render
from arklore.rag.embedders import HashEmbedder

ANCHOR_HEAD, CTX_HEAD = "【阿米娅身边的人】", "【本轮提到的人】"


@pytest.fixture
def rag(home):
    g = small_graph()
    build(home, g)
    return make_rag(home, g)


class _Spy:
    """Wraps the live collection and counts vector queries."""

    def __init__(self, col: Any) -> None:
        self.col, self.queries = col, 0

    def query(self, **kw: Any) -> Any:
        self.queries += 1
        return self.col.query(**kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.col, name)


def test_anchors_come_from_the_graph_with_document_text(rag):
    a = rag.get_anchor_relations(AMIYA)
    assert [r.target_id for r in a] == [KALTS, THERESA, CHEN, AUDREY, VERONICA]
    assert [r.target_id for r in rag.get_anchor_relations(AMIYA, 3)] == [KALTS, THERESA, CHEN]
    assert a[0].source == "matrix" and a[0].text.startswith("阿米娅把凯尔希当作")
    assert a[1].target_name == "特蕾西娅"
    assert rag.get_anchor_relations(LONELY) == []


def test_anchors_work_without_an_index(home):
    rag = make_rag(home, small_graph())
    a = rag.get_anchor_relations(AMIYA, 2)
    assert [r.source for r in a] == ["graph", "graph"]
    assert rag.get_contextual_relations(AMIYA, "今天天气不错") == []


def test_no_names_means_no_index_access(rag):
    rag._refresh()
    spy = rag._col = _Spy(rag._col)
    assert rag.get_contextual_relations(AMIYA, "今天天气不错，我们去散步吧") == []
    assert rag.get_contextual_relations(AMIYA, "凯尔希医生呢", exclude=[KALTS]) == []
    assert spy.queries == 0


def test_contextual_filters_by_operator_and_named_targets(rag):
    rag._refresh()
    spy = rag._col = _Spy(rag._col)
    got = rag.get_contextual_relations(AMIYA, "星熊和诗怀雅最近怎么样？")
    assert {r.target_id for r in got} == {HOSHI, SWIRE}
    assert spy.queries == 0  # two documents for two slots: nothing to rank
    one = rag.get_contextual_relations(AMIYA, "星熊和诗怀雅最近怎么样？星熊呢？", top_k=1)
    assert spy.queries == 1 and len(one) == 1 and one[0].score is not None
    # Chen's view of Swire exists, but this is Amiya's turn
    assert all(r.doc_id.split(".")[1] == AMIYA for r in got + one)
    assert rag.get_contextual_relations(LONELY, "诗怀雅") == []


def test_ranking_follows_similarity(rag):
    first = rag.get_contextual_relations(AMIYA, "星熊是同事吗？也想问问诗怀雅", top_k=1)
    assert first[0].target_id == HOSHI
    first = rag.get_contextual_relations(AMIYA, "诗怀雅和你彼此相识？星熊呢", top_k=1)
    assert first[0].target_id == SWIRE


def test_context_block_dedupes_and_removes_l3(rag):
    text = rag.get_relation_context(AMIYA, "陈和星熊还有凯尔希")
    assert text.startswith(ANCHOR_HEAD) and CTX_HEAD in text
    assert text.count("- 陈：") == 1 and text.count("- 凯尔希：") == 1  # never repeated
    assert "- 星熊：" in text.split(CTX_HEAD)[1]
    text = rag.get_relation_context(AMIYA, "陈和星熊还有凯尔希", l3_recalled_targets=[CHEN, HOSHI])
    assert "- 陈：" not in text and "- 星熊：" not in text and CTX_HEAD not in text
    assert "- 凯尔希：" in text


def test_no_contextual_means_no_contextual_header(rag):
    text = rag.get_relation_context(AMIYA, "今天天气不错")
    assert text.startswith(ANCHOR_HEAD) and CTX_HEAD not in text and text.count("\n- ") == 5


def test_operator_without_edges_gets_nothing(rag):
    assert rag.get_relation_context(LONELY, "陈和阿米娅") == ""
    assert rag.get_relation_context("npc:nobody", "陈") == ""


def test_budget_drops_weakest_contextual_then_last_anchor(rag):
    ctx = rag.build_context(AMIYA, "星熊和诗怀雅", anchor_k=3)
    assert [r.target_id for r in ctx.contextual] == [HOSHI, SWIRE]
    count = tokens.count_tokens
    full = count(ctx.text)
    without_weakest = count(render("阿米娅", ctx.anchors, ctx.contextual[:1]))
    c2 = rag.build_context(AMIYA, "星熊和诗怀雅", budget=without_weakest, anchor_k=3)
    assert [r.target_id for r in c2.contextual] == [HOSHI] and len(c2.anchors) == 3
    anchors_only = count(render("阿米娅", ctx.anchors, []))
    c3 = rag.build_context(AMIYA, "星熊和诗怀雅", budget=anchors_only, anchor_k=3)
    assert c3.contextual == [] and len(c3.anchors) == 3
    c4 = rag.build_context(AMIYA, "星熊和诗怀雅", budget=anchors_only - 1, anchor_k=3)
    assert [r.target_id for r in c4.anchors] == [KALTS, THERESA] and c4.contextual == []
    assert rag.build_context(AMIYA, "星熊", budget=3).text == ""
    assert full > without_weakest > anchors_only


def test_up_to_five_anchors_when_the_budget_allows_the_last_two_go_first(rag):
    full = rag.build_context(AMIYA, "星熊最近好吗？")
    five = [KALTS, THERESA, CHEN, AUDREY, VERONICA]
    assert [r.target_id for r in full.anchors] == five
    assert [r.target_id for r in full.contextual] == [HOSHI]
    count = tokens.count_tokens

    def cost(anchors: list[Relation], contextual: list[Relation]) -> int:
        return count(render("阿米娅", anchors, contextual))

    # one token short: the fifth anchor goes, the person the message names stays
    c1 = rag.build_context(AMIYA, "星熊最近好吗？", budget=count(full.text) - 1)
    assert [r.target_id for r in c1.anchors] == five[:4] and len(c1.contextual) == 1
    # without the room of both extra anchors: the core three and the named person
    core = cost(full.anchors[:3], full.contextual)
    c2 = rag.build_context(AMIYA, "星熊最近好吗？", budget=core)
    assert [r.target_id for r in c2.anchors] == five[:3] and len(c2.contextual) == 1
    # below that: the named person, then the core anchors from the last
    c3 = rag.build_context(AMIYA, "星熊最近好吗？", budget=core - 1)
    assert [r.target_id for r in c3.anchors] == five[:3] and c3.contextual == []
    # an extra anchor the message names is kept like a named person
    room = cost([*full.anchors[:3], full.anchors[4]], [])
    named = rag.build_context(AMIYA, "维罗妮卡最近好吗？", budget=room)
    assert [r.target_id for r in named.anchors] == [*five[:3], VERONICA]


def test_the_doctor_never_takes_an_anchor_slot(home):
    from support.rag_world import edge

    from arklore.graph.model import Node

    g = small_graph()
    g.nodes["npc:博士"] = Node("npc:博士", "博士", "npc", {})
    g.add_edge(edge(AMIYA, "npc:博士", "战友", 0.99, sources=("matrix",), desc="她最信赖的人。"))
    build(home, g)
    rag = make_rag(home, g)
    assert "npc:博士" not in [r.target_id for r in rag.get_anchor_relations(AMIYA)]
    assert "npc:博士" in [e.target for e in g.get_top_anchor_relations(AMIYA, 5)]  # still an edge
    # a message calling him names nobody: her view of him has its own block
    ctx = rag.build_context(AMIYA, "博士，好久不见。你还记得那天吗？")
    assert "npc:博士" not in [r.target_id for r in ctx.anchors + ctx.contextual]


def test_fuzz_budget_and_order(rag):
    rnd = random.Random(6)
    names = list(NAMES.values()) + ["博士", "罗德岛", "龙门"]
    filler = [
        "今天",
        "天气",
        "怎么样",
        "你还记得",
        "吗？",
        "我们去",
        "Hello ",
        "doctor ",
        "😀",
        "，",
        "。",
    ]
    anchors_full = rag.get_anchor_relations(AMIYA)
    for i in range(1000):
        n = rnd.choice([0, 1, 3, 8, 40, 600 if i % 50 == 0 else 5])
        msg = "".join(rnd.choice(names if rnd.random() < 0.3 else filler) for _ in range(n))
        budget = rnd.choice([800, 800, 200, 120, 90, 60, 30, rnd.randint(1, 800)])
        op = rnd.choice([AMIYA, AMIYA, CHEN, KALTS, LONELY])
        l3 = rnd.sample([CHEN, HOSHI, SWIRE, KALTS], rnd.randint(0, 2)) if i % 3 == 0 else None
        ctx = rag.build_context(op, msg, l3, budget=budget)
        assert tokens.count_tokens(ctx.text) <= budget
        if op == LONELY:
            assert ctx.text == ""
        expect = [
            a.target_id for a in rag.get_anchor_relations(op) if a.target_id not in (l3 or [])
        ]
        kept = [a.target_id for a in ctx.anchors]
        assert kept == [t for t in expect if t in kept]  # anchors keep their order
        if ctx.contextual:  # contextual only once every (non-recalled) core anchor is kept
            assert kept[:3] == expect[:3]
            assert ctx.text.index("【本轮提到的人】") > 0
        anchor_ids = {a.target_id for a in ctx.anchors}
        assert not anchor_ids & {c.target_id for c in ctx.contextual}
        if op == AMIYA and budget == 800 and not l3:
            assert [a.target_id for a in ctx.anchors] == [a.target_id for a in anchors_full]


def test_token_counter_is_conservative_and_pluggable(rag):
    assert tokens.count_tokens("阿米娅") == 2  # 3 * 0.6
    assert tokens.count_tokens("abcdefghij") == 3
    assert tokens.count_tokens("【】，") == 3
    assert tokens.count_tokens("😀") == 4
    text = rag.get_relation_context(AMIYA, "星熊")
    assert rag.build_context(AMIYA, "星熊").tokens == tokens.count_tokens(text)
    tenfold = make_rag(rag.root, rag.graph, token_counter=lambda s: len(s) * 10)
    small = tenfold.get_relation_context(AMIYA, "星熊", budget=600)
    assert len(small) * 10 <= 600 and small
    strict = make_rag(rag.root, rag.graph, token_counter=lambda s: 10**6)
    assert strict.get_relation_context(AMIYA, "星熊") == ""


def test_group_chat_relations_and_background(rag):
    rels = rag.get_all_relationships_for(CHEN, [AMIYA, "诗怀雅", HOSHI, CHEN, "npc:nobody"])
    assert [r.target_id for r in rels] == [SWIRE, HOSHI, AMIYA]
    assert rels[2].source == "graph_edge"  # a weak edge, but one of her anchors: described
    bg = rag.get_relation_background(AMIYA)
    # her 相识 诗怀雅 is no anchor: they know each other, no more
    assert bg.startswith("【阿米娅的人际关系】") and bg.count("\n- ") == 6 and "诗怀雅" not in bg
    assert rag.get_relation_background(AMIYA, budget=60).count("\n- ") < 6
    assert rag.get_relation_background(LONELY) == ""


def test_index_switch_is_picked_up_by_a_running_reader(rag, home):
    assert "第2版" not in rag.get_relation_context(AMIYA, "凯尔希")
    g2 = small_graph(variant=2)
    build(home, g2)
    rag._graph = g2
    assert "第2版" in rag.get_relation_context(AMIYA, "凯尔希")


def test_mention_spans_wrap_the_matcher_and_keep_every_ambiguous_candidate(home):
    from arklore.core.operators import Alias
    from arklore.names.matcher import build_matcher

    matcher = build_matcher(
        [Alias("凯尔希", KALTS, "user"), Alias("星熊", HOSHI, "user"), Alias("阿", AMIYA, "user"),
         Alias("阿", HOSHI, "user")]
    )  # fmt: skip
    find = spans_from_mentions(matcher.find)
    spans = find("凯尔希和星熊在哪里？")
    assert [s[0] for s in spans] == [KALTS, HOSHI] and spans[0][1:] == (0, 3)
    assert {s[0] for s in find("阿，你在吗")} == {AMIYA, HOSHI}  # ambiguous: both candidates
    g = small_graph()
    build(home, g)
    rag = RelationRAG(home, graph=g, embedder=HashEmbedder(), mention_finder=find)
    assert [r.target_id for r in rag.get_contextual_relations(AMIYA, "星熊在哪里？")] == [HOSHI]


def test_fit_budget_keeps_everything_when_it_fits(rag):
    a = rag.get_anchor_relations(AMIYA)
    kept_a, kept_c, text = fit_budget("阿米娅", a, [], 10_000, tokens.count_tokens)
    assert kept_a == a and kept_c == [] and text == render("阿米娅", a, [])
