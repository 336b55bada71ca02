"""Relation documents built from what the corpus proves (no model), extracted relations whose
notes stay metadata, and the one ranking rule, on a tiny invented corpus."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.evidence_world import (
    ANV,
    ELV,
    HAWK,
    MOX,
    SPR,
    SUP,
    Stages,
    line_id,
    make_graph,
    make_people,
)
from support.evidence_world import make_store as make_world_store
from support.rag_world import build, make_rag

from arklore.extract.gates import GatedEdge
from arklore.extract.store import write_chunk
from arklore.graph.evidence import PairFacts, pair_facts
from arklore.graph.interaction import ScanLine
from arklore.graph.model import DOCTOR_ID, Edge, Node, RelationGraph
from arklore.rag import docs as D
from arklore.rag.docs import RelationDoc, SourceContext, collect_documents, doc_rank, fact_pairs
from arklore.rag.evidence import curated_text, evidence_text, pick_exchange, pick_exchanges


def make_store_with(tmp_path: Path, stages: Stages):
    return make_world_store(tmp_path / "arklore.sqlite3", stages)


@pytest.fixture
def world(tmp_path: Path):
    store = make_world_store(tmp_path / "arklore.sqlite3")
    yield store, make_people(store)
    store.close()


def _docs(store, people, graph, **kw) -> dict[tuple[str, str, str], RelationDoc]:
    ctx = SourceContext(graph=graph, store=store, **kw)
    ctx.facts = pair_facts(store, people, fact_pairs(ctx))
    return {(d.source, d.operator_id, d.target_id): d for d in collect_documents(ctx)}


def test_facts_count_forms_turns_stages_events_and_who_answers(world):
    store, people = world
    f = pair_facts(store, people, [(ELV, MOX), (MOX, ELV), (HAWK, SUP)])
    em = f[(ELV, MOX)]
    assert em.forms == [("墨弦姐姐", 2), ("墨弦", 1)]  # the title kept as written
    assert em.vocatives_back == 1 and em.turns == 7 and em.shared_stages == 2
    assert (em.a_answers, em.b_answers) == (3, 4) and (em.a_lines, em.b_lines) == (4, 5)
    assert em.events == [("灯塔篇", 7)] and em.stage_turns[0] == ("test/e1", 5)
    assert em.representative() == [line_id("test/e1", 1), line_id("test/e1", 2)]
    me = f[(MOX, ELV)]
    assert me.forms == [("艾尔维娜", 1)] and (me.a_answers, me.b_answers) == (4, 3)
    assert not f[(HAWK, SUP)].has_any()  # never on stage together: empty facts


def test_evidence_built_text_leads_with_how_she_addresses_him_and_one_exchange(world):
    store, people = world
    docs = _docs(store, people, make_graph())
    d = docs[("graph_edge", ELV, MOX)]
    assert d.generated_by == "evidence" and d.gate_reason == ""
    # 墨弦 is said once beside twice 墨弦姐姐: an aside, kept in the facts, not in the text
    assert d.text == (
        "艾尔维娜视墨弦为朋友，称墨弦为“墨弦姐姐”。"
        "艾尔维娜：「墨弦姐姐，灯还亮着吗？」墨弦：「亮着，别担心。」"
        "两人多在「灯塔篇」中交谈。"
    )
    # the quoted exchange, verbatim, leads the evidence
    assert d.evidence_line_ids[:2] == [line_id("test/e1", 1), line_id("test/e1", 2)]
    # the counts are metadata, never text
    assert "次" not in d.text and "句" not in d.text and "轮" not in d.text
    assert d.facts == {"forms": [["墨弦姐姐", 2], ["墨弦", 1]], "vocatives_back": 1,
                       "turns": 7, "shared_stages": 2, "lines": [4, 5],
                       "events": [["灯塔篇", 7]]}  # fmt: skip
    meta = d.metadata()
    assert RelationDoc.from_chroma(d.doc_id, d.text, meta).facts == d.facts
    # she never calls him by name: the exchange leads, one she opens with a whole sentence
    back = docs[("graph_edge", SPR, ANV)]
    assert back.text == (
        "小禾视铁砧为至亲。小禾：「我想学打铁。」铁砧：「小禾，等你再长高些。」"
        "两人多在「铁匠铺」中交谈。"
    )
    graph_edges = [x for x in docs.values() if x.source == "graph_edge"]
    assert all(D.MIN_CHARS <= len(x.text) <= D.MAX_CHARS for x in graph_edges)
    assert len({x.text for x in graph_edges}) == len(graph_edges)  # no two alike


def test_calling_him_by_his_name_is_no_clause_another_form_is():
    """``芬称米格鲁为“米格鲁”`` says nothing a model can use; ``“墨弦姐姐”`` does, and with it
    the name she also uses."""
    from arklore.rag.evidence import address_clause, vocative_clause

    only_name = PairFacts(ELV, MOX, forms=[("墨弦", 4)])
    assert vocative_clause("艾尔维娜", "墨弦", only_name) == ""
    assert address_clause(only_name) == "“墨弦”"  # no name given: nothing is left out
    both = PairFacts(ELV, MOX, forms=[("墨弦", 4), ("墨弦姐姐", 2)])
    assert vocative_clause("艾尔维娜", "墨弦", both) == "艾尔维娜称墨弦为“墨弦”“墨弦姐姐”"


def _scan_line(stage: str, no: int, node: str, text: str) -> ScanLine:
    return ScanLine(stage, no, node, text, None, f"{stage}#{no}:0000000{no}", True)


def name_of(names: dict[str, str]) -> Callable[[str | None], str]:
    """``names`` as the name function the pickers take: every node they ask about has one."""

    def name(node: str | None) -> str:
        assert node is not None and node in names, node
        return names[node]

    return name


def test_a_curated_relation_quotes_the_lines_its_curator_cited_before_the_storys() -> None:
    """The edge holds the story's evidence too (their cooking lesson); the quote comes from
    the lines the curator cited for what the description says (the sister she finds)."""
    a, b = ("char_1", "char_2")
    cook = [
        _scan_line("s/a", 1, a, "教我做饭吧，拜你为师！"),
        _scan_line("s/a", 2, b, "难为你了。"),
    ]
    found = [
        _scan_line("s/b", 7, a, "我还能突然多一个妹妹。"),
        _scan_line("s/b", 8, b, "哪里有这样的姐妹。"),
    ]
    f = PairFacts(a, b, turns=2, stage_turns=[("s/a", 1), ("s/b", 1)],
                  exchanges=[(cook[0], cook[1]), (found[0], found[1])])  # fmt: skip
    e = Edge(a, b, "近亲", 0.99, ["matrix", "interaction"], {"matrix": 1},
             sorted([cook[1].line_id, found[0].line_id]), "认下的妹妹。", ["s/a", "s/b"],
             "matrix.toml", "s/b", [found[0].line_id])  # fmt: skip
    got = curated_text("认下的妹妹。", e, f, name_of({a: "甲", b: "乙"}))
    assert got.line_ids == [found[0].line_id, found[1].line_id]
    assert got.text == "认下的妹妹。甲：「我还能突然多一个妹妹。」乙：「哪里有这样的姐妹。」"


def test_the_exchange_is_verbatim_at_most_two_lines_with_the_players_name_rendered():
    a, b = ("char_1", "char_2")
    call = _scan_line("s/x", 1, a, "Dr.{@nickname}说过，{@nickname}会回来的，对吧，老杜？")
    answer = _scan_line("s/x", 2, b, "会的。")
    tiny = _scan_line("s/y", 1, a, "……？")
    f = PairFacts(a, b, forms=[("老杜", 1)], turns=2, stage_turns=[("s/x", 1), ("s/y", 1)],
                  exchanges=[(tiny, answer), (call, answer)], vocative_lines=[call])  # fmt: skip
    e = Edge(a, b, "interaction", 0.7, ["interaction"], {"turns": 2}, [], None, ["s/x"])
    got = evidence_text(e, "甲", "乙", f)
    assert got is not None and got.line_ids == [call.line_id, answer.line_id]
    assert got.text == "甲称乙为“老杜”。甲：「博士说过，博士会回来的，对吧，老杜？」乙：「会的。」"
    assert "{@nickname}" not in got.text
    # no room for the exchange: it is left out, never cut
    assert pick_exchange(f, name_of({a: "甲", b: "乙"}), 20) == []
    # an exchange that says nothing is never chosen; a silent line is left out of one
    name = name_of({a: "甲", b: "乙"})
    f.exchanges, f.vocative_lines = [(tiny, answer)], []
    assert pick_exchange(f, name, 200) == []
    silent = _scan_line("s/y", 2, b, "......")
    f.exchanges = [(call, silent)]
    assert pick_exchange(f, name, 200) == [call]
    # a long speech only when there is nothing shorter
    speech = _scan_line("s/x", 3, a, "我" + "说" * 60 + "。")  # in the stage they talk most
    f.exchanges = [(speech, answer)]
    assert pick_exchange(f, name, 200) == [speech, answer]
    later = _scan_line("s/y", 3, a, "老杜，今天的雨好大啊。")
    f.exchanges = [(speech, answer), (later, answer)]
    assert pick_exchange(f, name, 200) == [later, answer]


def test_a_team_or_group_they_both_belong_to_is_said_first_never_their_nation():
    from arklore.graph.model import Node, RelationGraph

    a, b, c = "char_1", "char_2", "char_3"
    nodes = {
        a: Node(a, "甲", "operator", {"nation": "北国", "group": "灯塔社", "team": "一号小队"}),
        b: Node(b, "乙", "operator", {"nation": "北国", "group": "灯塔社", "team": "一号小队"}),
        c: Node(c, "丙", "operator", {"nation": "北国", "group": "灯塔社"}),
    }
    g = RelationGraph(nodes, [])
    assert g.shared_unit(a, b) == "一号小队" and g.shared_unit(a, c) == "灯塔社"
    assert g.shared_unit(a, "npc:丁") is None
    nation_only = RelationGraph({a: Node(a, "甲", "operator", {"nation": "北国"}),
                                 c: Node(c, "丙", "operator", {"nation": "北国"})}, [])  # fmt: skip
    assert nation_only.shared_unit(a, c) is None
    call = _scan_line("s/x", 1, a, "老杜，灯还亮着吗？")
    answer = _scan_line("s/x", 2, b, "亮着，别担心。")
    f = PairFacts(a, b, forms=[("老杜", 2)], turns=2, stage_turns=[("s/x", 1)],
                  exchanges=[(call, answer)], vocative_lines=[call])  # fmt: skip
    e = Edge(a, b, "interaction", 0.7, ["interaction"], {"turns": 2}, [], None, ["s/x"])
    got = evidence_text(e, "甲", "乙", f, unit="一号小队")
    assert got is not None and got.text == (
        "两人同属一号小队。甲称乙为“老杜”。甲：「老杜，灯还亮着吗？」乙：「亮着，别担心。」"
    )
    plain = evidence_text(e, "甲", "乙", f)
    assert plain is not None and plain.text == got.text.removeprefix("两人同属一号小队。")


def test_counts_and_mentions_when_there_are_no_words_and_template_only_without_facts(world):
    store, people = world
    docs = _docs(store, people, make_graph())
    mention = docs[("graph_edge", MOX, HAWK)]
    assert (
        mention.generated_by == "evidence"
        and mention.text == "墨弦只在语音中提到过灰隼，两人没有直接往来。"
    )
    nothing = docs[("graph_edge", HAWK, SUP)]
    assert nothing.generated_by == "template" and nothing.text.startswith("灰隼与苏珀彼此相识")


def _kept(stage: str, subj: str, obj: str, pred: str, note: str, lines: list[int], basis: str):
    names = {ELV: "艾尔维娜", MOX: "墨弦", ANV: "铁砧", SPR: "小禾"}
    return GatedEdge(
        subject=names[subj], subject_kind="character", predicate=pred, object=names[obj],
        object_kind="character", basis_claimed=basis, note=note, subject_id=subj,
        object_id=obj, basis=basis, stage=stage,
        evidence_line_ids=[line_id(stage, n) for n in lines],
    )  # fmt: skip


def _write(store, stage: str, edges: list[GatedEdge]) -> None:
    write_chunk(store, stage, 0, edges, job_key=f"{stage}#c0", fingerprint="f", model="m",
                prompt_version="v", line_span=None, from_cache=False)  # fmt: skip


NOTE = "叔侄，铁砧称小禾为小侄女"


def test_extracted_relation_text_from_predicate_and_evidence_note_kept_as_metadata(world):
    store, people = world
    _write(store, "test/u1", [_kept("test/u1", ANV, SPR, "近亲", NOTE, [1, 5], "direct")])
    docs = _docs(store, people, make_graph())
    d = docs[("story", ANV, SPR)]
    assert d.text == "铁砧视小禾为至亲。这一关系见于「铁匠铺」。"  # he calls her 小禾: her name
    assert d.facts == {"stages": 1, "evidence_lines": 2}
    assert NOTE not in d.text and "小侄女" not in d.text
    assert d.notes == [NOTE] and d.basis == "direct"
    meta = d.metadata()
    assert meta["basis"] == "direct" and NOTE in meta["notes"]
    assert RelationDoc.from_chroma(d.doc_id, d.text, meta).notes == [NOTE]
    assert d.to_dict()["notes"] == [NOTE]


def test_extracted_relation_outranks_the_evidence_built_one_in_the_relation_context(
    world, tmp_path: Path
):
    store, people = world
    _write(store, "test/u1", [_kept("test/u1", ANV, SPR, "近亲", NOTE, [1, 5], "direct")])
    graph = make_graph()
    ctx = SourceContext(graph=graph, store=store)
    root = tmp_path / "rag"
    rep = build(root, graph, store=store, facts=pair_facts(store, people, fact_pairs(ctx)))
    assert rep.by_source == {"graph_edge": 8, "story": 1}
    rag = make_rag(root, graph)
    anchor = rag.get_anchor_relations(ANV, 1)[0]
    assert anchor.target_id == SPR and anchor.source == "story"
    assert anchor.text.startswith("铁砧视小禾为至亲。这一关系见于「铁匠铺」")
    assert NOTE not in rag.get_relation_context(ANV, "小禾最近在做什么？")
    (contextual,) = rag.get_all_relationships_for(ANV, [SPR])
    assert contextual.source == "story"


def test_one_ranking_rule_curated_extracted_llm_profile_evidence():
    order = [
        doc_rank("matrix", "as_written"),
        doc_rank("story", "extract", "direct"),
        doc_rank("story", "extract", "reported"),
        doc_rank("graph_edge", "llm"),
        doc_rank("char_anchor", "profile"),
        doc_rank("graph_edge", "evidence"),
    ]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert doc_rank("graph_edge", "template") == doc_rank("graph_edge", "evidence")
    assert doc_rank("story", "extract", "inferred") == doc_rank("story", "extract", "reported")


def _doc(source: str, how: str, basis: str = "", text: str = "") -> RelationDoc:
    return RelationDoc(
        doc_id=D.make_doc_id(source, ELV, MOX, how + basis), text=text or f"{source}/{how}的说明文字。",
        operator_id=ELV, target_id=MOX, predicate="朋友", strength=0.9, source=source,
        source_path="x", generated_by=how, basis=basis,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("present", "winner"),
    [
        (["graph_edge/evidence", "story/extract/reported"], "story/extract/reported"),
        (["story/extract/reported", "story/extract/direct"], "story/extract/direct"),
        (
            [
                "graph_edge/evidence",
                "story/extract/direct",
                "char_anchor/profile",
                "graph_edge/llm",
                "matrix/as_written",
            ],
            "matrix/as_written",
        ),  # fmt: skip
        (["graph_edge/evidence", "char_anchor/profile", "graph_edge/llm"], "graph_edge/llm"),
        (["graph_edge/evidence", "char_anchor/profile"], "char_anchor/profile"),
    ],
)
def test_the_chat_gets_the_best_ranked_document_of_a_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, present, winner
):
    graph = make_graph()
    docs = []
    for spec in present:
        source, how, *basis = spec.split("/")
        docs.append(_doc(source, how, basis[0] if basis else "", text=f"{spec}：一段说明文字。"))
    monkeypatch.setitem(D._SOURCES, "given", lambda ctx: ctx.extra)
    build(tmp_path, graph, sources=["given"], extra_documents=docs)
    rag = make_rag(tmp_path, graph)
    anchor = next(r for r in rag.get_anchor_relations(ELV, 5) if r.target_id == MOX)
    assert anchor.text == f"{winner}：一段说明文字。"
    (group,) = rag.get_all_relationships_for(ELV, [MOX])
    assert group.text == anchor.text
    rag.rank_always = True  # similarity picks the person; the rule picks the document
    (mentioned,) = rag.get_contextual_relations(ELV, f"{present[0]}？墨弦在吗？")
    assert mentioned.target_id == MOX and mentioned.text == anchor.text


def test_exchanges_shown_to_a_model_put_vocatives_first_and_fit_the_budget(world):
    store, people = world
    f = pair_facts(store, people, [(ELV, MOX)])[(ELV, MOX)]
    names = {ELV: "艾尔维娜", MOX: "墨弦"}
    wins = pick_exchanges(f, name_of(names))
    assert wins[0][0] == f"[{line_id('test/e1', 1)}] 艾尔维娜：墨弦姐姐，灯还亮着吗？"
    assert len(wins) == 2  # one window per stage
    tiny = pick_exchanges(f, name_of(names), budget=20)
    assert len(tiny) == 1 and len(tiny[0]) < len(wins[0])


def test_a_line_answering_somebody_else_is_not_shown_as_said_to_him(world):
    """墨弦's 谢谢 answers 艾尔维娜; 苏珀 comes in after it: the facts know, and an exchange she
    opens with such a line comes after one she opens to him (地灵's 你很有天赋 to 艾雅法拉 was
    shown as said to 普罗旺斯)."""
    store, people = world
    f = pair_facts(store, people, [(MOX, SUP)])[(MOX, SUP)]
    assert f.answering == {line_id("test/e2", 3)}
    assert pair_facts(store, people, [(ELV, MOX)])[(ELV, MOX)].answering == set()
    a, b, c = "char_1", "char_2", "char_3"
    aside = _scan_line("s/x", 2, a, "你很有天赋，一定会有那天的。")
    hello = _scan_line("s/x", 3, b, "嗨！你们在聊什么呢？")
    mine = _scan_line("s/y", 1, a, "今天的曲子你来挑吧，我都听你的。")
    sure = _scan_line("s/y", 2, b, "那就弹那首老歌。")
    f = PairFacts(a, b, turns=2, stage_turns=[("s/x", 1), ("s/y", 1)],
                  exchanges=[(aside, hello), (mine, sure)], answering={aside.line_id})  # fmt: skip
    assert pick_exchange(f, name_of({a: "甲", b: "乙", c: "丙"}), 200) == [mine, sure]
    f.answering = set()
    assert pick_exchange(f, name_of({a: "甲", b: "乙", c: "丙"}), 200) == [aside, hello]


def test_a_curated_description_shows_an_exchange_of_theirs(world):
    """The matrix says what she feels in our words; one verbatim exchange shows how she says
    it to him, its lines leading the evidence; with no room left the text stays as written."""
    store, people = world
    graph = make_graph(curated="艾尔维娜最信任的朋友。")
    d = _docs(store, people, graph)[("matrix", ELV, MOX)]
    assert d.generated_by == "as_written"
    assert (
        d.text
        == "艾尔维娜最信任的朋友。艾尔维娜：「墨弦姐姐，灯还亮着吗？」墨弦：「亮着，别担心。」"
    )
    assert d.evidence_line_ids == [line_id("test/e1", 1), line_id("test/e1", 2)]
    long = "艾尔维娜最信任的朋友" + "，" * (D.MAX_CHARS - 20) + "。"
    graph.get_relation(ELV, MOX)[0].description = long
    assert _docs(store, people, graph)[("matrix", ELV, MOX)].text == long


def _two_exchanges(
    first: tuple[str, str], second: tuple[str, str], his_name: str = "乙"
) -> tuple[PairFacts, Callable[[str | None], str], list[ScanLine]]:
    """Her exchange with him in the stage they talk in most, then one in another stage; she
    calls him by name in both."""
    a, b = "char_1", "char_2"
    lines = [_scan_line("s/x", 1, a, first[0]), _scan_line("s/x", 2, b, first[1]),
             _scan_line("s/y", 1, a, second[0]), _scan_line("s/y", 2, b, second[1])]  # fmt: skip
    f = PairFacts(a, b, turns=2, stage_turns=[("s/x", 3), ("s/y", 1)],
                  exchanges=[(lines[0], lines[1]), (lines[2], lines[3])],
                  vocative_lines=[lines[0], lines[2]], forms=[(his_name, 2)])  # fmt: skip
    return f, name_of({a: "甲", b: his_name}), lines


def test_an_exchange_with_a_line_the_curator_cites_comes_first():
    f, name, lines = _two_exchanges(
        ("乙，今天的巡逻路线改过了。", "知道了，我马上出发。"),
        ("乙，那年冬天你替我挡下的那一刀。", "都过去这么久了。"),
    )
    assert pick_exchange(f, name, 200) == lines[:2]
    assert pick_exchange(f, name, 200, [lines[2].line_id]) == lines[2:]


def test_her_curated_view_of_the_doctor_quotes_nothing():
    """Her lines to the Doctor are the doctor block's (every turn gets it): the matrix
    document about him stays as written, while one about anyone else quotes them."""
    a, c = "char_1", "char_3"
    g = RelationGraph(
        {a: Node(a, "甲", "operator", {}), c: Node(c, "丙", "operator", {}),
         DOCTOR_ID: Node(DOCTOR_ID, "博士", "npc", {})},
        [Edge(a, t, "战友", 0.9, ["matrix"], {}, [], description="她最信任的人。")
         for t in (DOCTOR_ID, c)],
    )  # fmt: skip
    facts = {
        (a, t): PairFacts(a, t, turns=1, stage_turns=[("s/x", 1)], exchanges=[(
            _scan_line("s/x", 1, a, "我一直相信你，这次也一样。"), _scan_line("s/x", 2, t, "我知道。")
        )])
        for t in (DOCTOR_ID, c)
    }  # fmt: skip
    docs = {d.target_id: d for d in collect_documents(SourceContext(graph=g, facts=facts))}
    assert docs[DOCTOR_ID].text == "她最信任的人。"
    assert docs[c].text == "她最信任的人。甲：「我一直相信你，这次也一样。」丙：「我知道。」"


CALLS: Stages = {
    "test/c1": ("港口", [
        ("灰隼", "收到。"), ("铁砧", "好。"),
        *(("队长", f"第{i}小队出发。") for i in range(20)),  # enough lines to be somebody
    ]),
    "test/c2": ("港口", [
        ("苏珀", "灰隼，风向变了，快把帆收起来。"),
        ("艾尔维娜", "我来帮你一起收帆吧。"),
        ("苏珀", "队长，缆绳已经系好了。"),
        ("艾尔维娜", "辛苦了，我们回港。"),
        ("灰隼", "收到。"),
        ("队长", "出发。"),
    ]),
    "test/c3": ("灯塔", [
        ("艾尔维娜", "苏珀，灯塔那边怎么样？"),
        ("苏珀", "灰隼，你也听听，灯塔一切都好。"),
        ("艾尔维娜", "铁砧，你先回去休息。"),
        ("灰隼", "我在听。"),
    ]),
}  # fmt: skip


def test_her_line_calling_only_somebody_else_by_name_is_not_quoted_as_hers_to_him(tmp_path):
    """苏珀 calls 灰隼, who is there, by name: in 苏珀's view of 艾尔维娜 that line would read
    as said to her (乌尔比安's 别这么着急，歌蕾蒂娅 in his view of 斯卡蒂). Not so a role word
    (德克萨斯's 老板 is 大帝, though a speaker 老板 is somebody else), a name nobody there speaks
    under (someone called from afar), or the answer to a line that calls its speaker by name. In
    艾尔维娜's view the same line stays: it is what she answers."""
    store = make_store_with(tmp_path, CALLS)
    people = make_people(store)
    facts = pair_facts(store, people, [(SUP, ELV), (ELV, SUP)])

    def c(path: str, no: int) -> str:
        return line_id(path, no, CALLS)

    f = facts[(SUP, ELV)]
    assert f.turns == 5 and f.to_others == {c("test/c2", 1)} == facts[(ELV, SUP)].to_others
    name = name_of({ELV: "艾尔维娜", SUP: "苏珀"})
    for cited in ((), [c("test/c2", 1)]):  # not even when a curator cites it
        assert c("test/c2", 1) not in [ln.line_id for ln in pick_exchange(f, name, 200, cited)]
    hers = pick_exchange(facts[(ELV, SUP)], name, 200, [c("test/c2", 1)])
    assert [ln.line_id for ln in hers] == [c("test/c2", 1), c("test/c2", 2)]
    store.close()


def test_a_pair_that_rarely_talks_is_never_said_to_talk_most_somewhere():
    """No line of theirs is worth quoting (……, 嗯): the text says they seldom talk, and the
    event they share is where they are seen together, not where they talk."""
    a, b = "char_1", "char_2"
    e = Edge(a, b, "interaction", 0.7, ["interaction"], {"turns": 1}, [])
    dots, hm = _scan_line("s/x", 1, a, "……"), _scan_line("s/x", 2, b, "嗯。")
    f = PairFacts(a, b, turns=1, stage_turns=[("s/x", 1)], exchanges=[(dots, hm)],
                  events=[("灯塔篇", 1)])  # fmt: skip
    got = evidence_text(e, "甲", "乙", f)
    assert got is not None and got.text == "甲与乙同场过，却少有交谈。两人多在「灯塔篇」中同场。"


def test_a_pair_that_only_shares_scenes_cites_both_first_lines_there(world):
    store, people = world
    f = pair_facts(store, people, [(SUP, ELV)])[(SUP, ELV)]
    assert f.shared_lines == [line_id("test/e2", 4), line_id("test/e2", 2)]  # 苏珀's, then hers
    f = PairFacts("a", "b", shared_stages=2, shared_lines=["s/x#3:0a1b2c3d", "s/x#7:4e5f6a7b"])
    assert f.representative() == ["s/x#3:0a1b2c3d", "s/x#7:4e5f6a7b"]
    voc = PairFacts("a", "b", shared_lines=["s/x#3:0a1b2c3d"])
    assert PairFacts("a", "b").representative() == [] and voc.representative() == voc.shared_lines


def test_an_exchange_where_she_says_how_she_stands_comes_before_small_talk():
    """Both exchanges are hers to him, in stages ranked alike: the one where she says how she
    stands (我 and 相信/担心/谢谢…) is quoted, even from the stage they talk in less; a lone
    line of hers does not win that way over an exchange with his answer."""
    a, b = "char_1", "char_2"
    name = name_of({a: "甲", b: "乙"})
    small = _scan_line("s/x", 1, a, "今天的雨下得真大，路上全是积水。")
    reply = _scan_line("s/x", 2, b, "是啊，鞋都湿透了。")
    stands = _scan_line("s/y", 1, a, "不管别人怎么说，我都相信你会回来。")
    back = _scan_line("s/y", 2, b, "我答应过你的。")
    f = PairFacts(a, b, turns=2, stage_turns=[("s/x", 3), ("s/y", 1)],
                  exchanges=[(small, reply), (stands, back)])  # fmt: skip
    assert pick_exchange(f, name, 200) == [stands, back]
    silent = _scan_line("s/y", 2, b, "......")
    f.exchanges = [(small, reply), (stands, silent)]  # his answer says nothing: left out
    assert pick_exchange(f, name, 200) == [small, reply]


def test_a_line_that_only_calls_him_by_name_is_not_a_sentence_of_hers():
    """凯尔希's ......Mon3tr。 has as many characters as a sentence, all of them his name: an
    exchange where she says something comes first, even from the stage they talk in less."""
    f, name, lines = _two_exchanges(
        ("......阿丝忒希娅。", "我在这里，有什么事吗？"),
        ("阿丝忒希娅，船已经修好了，明早出发。", "那就拜托你了。"),
        his_name="阿丝忒希娅",
    )
    assert pick_exchange(f, name, 200) == lines[2:]


def test_the_doctors_choice_is_never_quoted_as_what_he_said():
    """A choice line holds the options the player may pick (joined by ;): an exchange keeps
    her answer to it, never the options as one thing the Doctor said."""
    a, doctor = "char_1", "npc:博士"
    name = name_of({a: "甲", doctor: "博士"})
    choice = ScanLine("s/x", 1, doctor, "所以你更要做些什么了。;......;那你还好吗？", None,
                      "s/x#1:00000001", False)  # fmt: skip
    answer = _scan_line("s/x", 2, a, "我就是因为想做些什么才来的。")
    f = PairFacts(a, doctor, turns=1, stage_turns=[("s/x", 1)], exchanges=[(choice, answer)])
    assert pick_exchange(f, name, 200) == [answer]
    one = ScanLine("s/x", 1, doctor, "我才刚坐下......", None, "s/x#1:00000001", False)
    f.exchanges = [(one, answer)]  # a choice of one option is what he says
    assert pick_exchange(f, name, 200) == [one, answer]
