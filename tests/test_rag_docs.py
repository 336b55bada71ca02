"""Relation documents: sources, templates, stable ids, validation and the error log."""

from __future__ import annotations

from typing import Any

import orjson
from support.rag_world import (
    AMIYA,
    AUDREY,
    CHEN,
    KALTS,
    SWIRE,
    THERESA,
    VERONICA,
    edge,
    small_graph,
)

from arklore.rag import docs as D
from arklore.rag.docs import RelationDoc, SourceContext, collect_documents, document_source
from arklore.rag.evidence import FEW_STAGES, FEW_TURNS
from arklore.rag.validate import check, validate, write_rejects


def test_sources_matrix_as_written_template_without_corpus_facts_and_threshold():
    g = small_graph()
    docs = collect_documents(SourceContext(graph=g, graph_path="g.json"))
    by = {(d.operator_id, d.target_id): d for d in docs}
    m = by[(AMIYA, KALTS)]
    assert m.source == "matrix" and m.generated_by == "as_written"
    assert m.text == "阿米娅把凯尔希当作严厉又可靠的老师，也是最信任的长辈。"
    t = by[(AMIYA, CHEN)]
    assert t.source == "graph_edge" and t.generated_by == "template"
    assert t.text == "阿米娅视陈为并肩作战的战友，两人在故事中多次直接交谈。"
    assert t.metadata()["generated_by"] == "template"
    # strength 0.5 <= 0.6, but one of 陈's anchors: described all the same
    assert by[(CHEN, AMIYA)].source == "graph_edge"
    assert all(D.MIN_CHARS <= len(d.text) <= D.MAX_CHARS for d in docs)


def test_a_matrix_document_names_the_file_its_relation_was_read_from():
    g = small_graph()
    g.add_edge(edge(AMIYA, THERESA, "近亲", 0.99, sources=("matrix",), desc="她是我的亲人。"))
    g.get_relation(AMIYA, THERESA)[0].curated_from = "/users/mine.toml"
    docs = collect_documents(SourceContext(graph=g, graph_path="g.json"), ["matrix"])
    paths = {d.target_id: d.source_path for d in docs if d.operator_id == AMIYA}
    # the shipped relation built before files were recorded falls back to the graph file
    assert paths == {THERESA: "/users/mine.toml", KALTS: "g.json"}


def test_a_weak_edge_is_described_only_as_one_of_her_anchors():
    g = small_graph()
    for target, strength in ((THERESA, 0.4), (AUDREY, 0.35), (VERONICA, 0.32)):
        g.add_edge(edge(CHEN, target, "同事", strength))
    g.add_edge(edge(CHEN, KALTS, "同事", 0.3))
    docs = {(d.operator_id, d.target_id) for d in collect_documents(SourceContext(graph=g))}
    # her five anchors (星熊, 诗怀雅, 阿米娅, 特蕾西娅, 奥黛丽) are described however weak;
    # her sixth and seventh relations, below the threshold, are not
    assert {(CHEN, AMIYA), (CHEN, THERESA), (CHEN, AUDREY)} <= docs
    assert (CHEN, VERONICA) not in docs and (CHEN, KALTS) not in docs


def test_only_an_operators_view_is_built_or_indexed():
    g = small_graph()
    g.add_edge(edge(THERESA, AMIYA, "监护", 0.99, sources=("matrix",), desc="她照看过的孩子。"))
    g.add_edge(edge(THERESA, KALTS, "战友", 0.9))  # strong, but 特蕾西娅 never speaks in a chat
    docs = collect_documents(SourceContext(graph=g))
    assert docs and all(g.nodes[d.operator_id].kind == "operator" for d in docs)
    assert (AMIYA, THERESA) in {(d.operator_id, d.target_id) for d in docs}  # her view of 特蕾西娅
    npc_view = RelationDoc("graph_edge.npc.x.y", "特蕾西娅眼中的阿米娅。", THERESA, AMIYA, "监护",
                           0.99, "graph_edge", "g")  # fmt: skip
    assert "no chat speaks as them" in (check(npc_view, g) or "")


def test_doc_ids_valid_and_stable():
    a = collect_documents(SourceContext(graph=small_graph()))
    b = collect_documents(SourceContext(graph=small_graph()))
    assert [d.doc_id for d in a] == [d.doc_id for d in b]
    assert all(D.DOC_ID_RE.match(d.doc_id) for d in a)
    npc = next(d for d in a if d.target_id == THERESA)
    assert "特" not in npc.doc_id and npc.doc_id.startswith("graph_edge.char_002_amiya.npc-")
    assert len({d.doc_id for d in a}) == len(a)


def test_directed_template_reads_from_the_subject_side():
    e = edge(KALTS, AMIYA, "监护", 0.97)
    assert D.template_description(e, "凯尔希", "阿米娅").startswith(
        "凯尔希视阿米娅为自己抚养照看的人"
    )
    e = edge(AMIYA, SWIRE, "interaction", 0.65, signals={"voice_mentions": 1})
    e.stages = []
    assert (
        D.template_description(e, "阿米娅", "诗怀雅")
        == "阿米娅与诗怀雅在故事中有过交集，阿米娅只在语音中提到过诗怀雅。"
    )


def test_the_template_says_often_only_where_the_pair_shares_many_stages_or_turns():
    one = edge(AMIYA, SWIRE, "interaction", 0.6, signals={"turns": 6})
    one.stages = ["obt/main/a"]
    # one stage and six turns: they talked, not often
    assert (
        D.template_description(one, "甲", "乙")
        == "甲与乙在故事中有过交集，两人在故事中多次直接交谈。"
    )
    many = edge(AMIYA, SWIRE, "interaction", 0.6, signals={"turns": 2})
    many.stages = [f"obt/main/s{i}" for i in range(FEW_STAGES)]
    assert D.template_description(many, "甲", "乙").startswith("甲与乙在故事中常有交集")
    talk = edge(AMIYA, SWIRE, "interaction", 0.6, signals={"turns": FEW_TURNS})
    talk.stages = ["obt/main/a"]
    assert D.template_description(talk, "甲", "乙").startswith("甲与乙在故事中常有交集")


def _edge(stage: str, obj: str, pred: str, note: str, line_id: str | None, verdict="kept"):
    from arklore.extract.gates import GatedEdge

    return GatedEdge(
        subject="阿米娅", subject_kind="character", predicate=pred, object="x",
        object_kind="character", basis_claimed="direct", note=note, verdict=verdict,
        subject_id=AMIYA, object_id=obj, stage=stage, basis="direct",
        evidence_line_ids=[line_id] if line_id else [],
    )  # fmt: skip


def _store_with(tmp_path, chunks: dict[str, list[Any]]):
    from arklore.extract.store import write_chunk
    from arklore.workspace import open_store

    store = open_store(tmp_path / "arklore.sqlite3")
    for stage, edges in chunks.items():
        write_chunk(store, stage, 0, edges, job_key=f"{stage}#c0", fingerprint="f", model="m",
                    prompt_version="v", line_span=None, from_cache=False)  # fmt: skip
    return store


def test_story_documents_group_evidence_and_keep_notes_out_of_the_text(tmp_path):
    st = _store_with(tmp_path, {
        "s/a": [_edge("s/a", CHEN, "战友", "两人曾在龙门并肩作战", "s/a#3:aaaa0001")],
        "s/b": [_edge("s/b", CHEN, "战友", "再次合作击退敌人", "s/b#9:aaaa0002"),
                _edge("s/b", SWIRE, "敌对", "x", None, verdict="dropped")],
        "s/c": [_edge("s/c", CHEN, "战友", "很长的说明" * 60, "s/c#1:aaaa0003")],
    })  # fmt: skip
    docs = list(D.story_documents(SourceContext(graph=small_graph(), store=st)))
    assert len(docs) == 1
    d = docs[0]
    assert d.source == "story" and d.source_path == "s/a" and d.generated_by == "extract"
    assert d.text == "阿米娅视陈为并肩作战的战友。"  # no event named in this store
    assert d.facts == {"stages": 3, "evidence_lines": 3}  # the counts are metadata
    assert d.notes == ["两人曾在龙门并肩作战", "再次合作击退敌人", "很长的说明" * 60]
    assert d.basis == "direct"
    assert d.evidence_line_ids == ["s/a#3:aaaa0001", "s/b#9:aaaa0002", "s/c#1:aaaa0003"]
    assert d.strength == 0.82  # the graph edge's strength


def test_story_source_with_nothing_extracted_yields_nothing(tmp_path):
    st = _store_with(tmp_path, {})
    assert list(D.story_documents(SourceContext(graph=small_graph(), store=st))) == []


def test_new_source_is_one_function():
    name = "char_anchor"
    saved = D.registered_sources()

    @document_source(name)
    def char_anchor(ctx):
        yield RelationDoc(D.make_doc_id(name, AMIYA, KALTS, "core"), "阿米娅在核心经历中提到了凯尔希。",
                          AMIYA, KALTS, "anchor", 0.9, name, "char/amiya.char")  # fmt: skip

    try:
        docs = collect_documents(SourceContext(graph=small_graph()))
        ok, bad = validate(docs, small_graph())
        assert any(d.source == name for d in ok) and not bad
    finally:
        D._SOURCES.clear()
        D._SOURCES.update(saved)


def _doc(**kw: Any) -> RelationDoc:
    base: dict[str, Any] = dict(doc_id="matrix.a.b.x", text="阿米娅视凯尔希为老师与长辈。", operator_id=AMIYA,
                target_id=KALTS, predicate="师徒", strength=0.9, source="matrix", source_path="m.toml")  # fmt: skip
    return RelationDoc(**(base | kw))


def test_validation_rules(home):
    g = small_graph()
    assert check(_doc(), g) is None
    cases = {
        "empty document": _doc(text="   "),
        "length 3": _doc(text="太短了"),
        "length 201": _doc(text="长" * 201),
        "invalid doc_id": _doc(doc_id="matrix.阿米娅"),
        "target_id 'npc:nobody' is not in the graph": _doc(target_id="npc:nobody"),
        "missing metadata source_path": _doc(source_path=""),
        "missing metadata predicate": _doc(predicate=None),
        "unknown source": _doc(source="wiki"),
        "strength": _doc(strength=1.5),
        "evidence_line_ids": _doc(evidence_line_ids="s#1"),
        "facts is not a mapping": _doc(facts=[1, 2]),
        "operator_id 'npc:特蕾西娅' is no operator": _doc(operator_id=THERESA),
    }
    for expect, doc in cases.items():
        reason = check(doc, g)
        assert reason is not None and reason.startswith(expect), (expect, reason)
    ok, bad = validate([_doc(), _doc(), *cases.values()], g)
    assert len(ok) == 1 and len(bad) == len(cases) + 1
    assert bad[0].reason.startswith("duplicate doc_id")
    path = write_rejects(home / "rejects.jsonl", bad, run_id="r1")
    assert path == home / "rejects.jsonl"
    recs = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    assert len(recs) == len(bad) and all(r["reason"] and r["run_id"] == "r1" for r in recs)


def test_a_weak_view_says_little_contact_only_when_the_edge_agrees():
    """The facts of a weak view read only the stages where the two talk; 送葬人 and 能天使
    talk in 2 stages but share 10, so they are not strangers."""
    from arklore.graph.evidence import PairFacts

    facts = PairFacts(CHEN, AMIYA, forms=[("阿米娅小姐", 1)], turns=2, shared_stages=2)

    def view(co_stages: int) -> str:
        e = edge(CHEN, AMIYA, "interaction", 0.4, signals={"co_stages": co_stages, "turns": 2})
        return D.weak_contact_doc(e, "陈", "阿米娅", facts, lambda n: "陈").text

    assert view(2).startswith("陈与阿米娅交集不多")
    assert "交集不多" not in view(FEW_STAGES) and view(FEW_STAGES).startswith("陈称阿米娅为")


def test_the_views_asked_for_are_built_as_they_are_among_everyones(tmp_path):
    st = _store_with(tmp_path, {"s/a": [_edge("s/a", CHEN, "战友", "并肩作战", "s/a#3:aaaa0001")]})
    g = small_graph()
    every = collect_documents(SourceContext(graph=g, store=st))
    assert {d.source for d in every if d.operator_id == AMIYA} == {"matrix", "graph_edge", "story"}
    assert {d.operator_id for d in every} > {AMIYA}  # other views, to be left out

    def shown(docs: list[RelationDoc]) -> list[tuple[Any, ...]]:
        return [(d.doc_id, d.text, d.evidence_line_ids, d.facts) for d in docs]

    for views in ({AMIYA}, {AMIYA, CHEN}, set()):
        some = collect_documents(SourceContext(graph=g, store=st, views=frozenset(views)))
        assert shown(some) == shown([d for d in every if d.operator_id in views]), views
