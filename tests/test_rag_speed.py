"""Speed work on the relation index: the query window, per-stage build timings, and the
distances-only query path (same ranking as the documents-returning one)."""

from __future__ import annotations

import pytest
from support.rag_world import AMIYA, CHEN, HOSHI, SWIRE, build, make_rag, small_graph

from arklore.rag.context import QUERY_MAX_CHARS, QUERY_SIDE, RelationRAG, query_window
from arklore.rag.docs import RelationDoc
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import make_client


def _spans(text: str, *names: str) -> list[tuple[str, int, int]]:
    out = []
    for n in names:
        i = text.find(n)
        assert i >= 0, n
        out.append((n, i, i + len(n)))
    return out


# -- the query window ---------------------------------------------------------------------------
def test_window_keeps_the_sentence_of_the_name():
    text = "今天天气真好，我们去甲板上走走吧。你觉得陈最近怎么样？晚饭吃什么呢。"
    assert query_window(text, _spans(text, "陈")) == "你觉得陈最近怎么样？"


def test_window_stops_at_side_characters_inside_a_long_sentence():
    left, right = "甲" * 40, "乙" * 40
    text = f"{left}星熊{right}"
    got = query_window(text, _spans(text, "星熊"))
    assert got == "甲" * QUERY_SIDE + "星熊" + "乙" * QUERY_SIDE


def test_window_line_breaks_and_ascii_marks_end_sentences():
    text = "hello!\n陈在吗?我有事找她\n再见"
    assert query_window(text, _spans(text, "陈")) == "陈在吗?"


def test_window_several_names_merge_or_join_in_text_order():
    text = "我昨天见到了诗怀雅。天气不错。后来去了训练室，星熊和陈在那里对练。"
    spans = _spans(text, "陈", "诗怀雅", "星熊")  # given out of order
    got = query_window(text, spans)
    assert got == "我昨天见到了诗怀雅。 后来去了训练室，星熊和陈在那里对练。"
    # touching sentences merge; one name twice: one window
    text2 = "陈，陈！星熊。好的。"
    assert query_window(text2, [("c", 0, 1), ("c", 2, 3), ("h", 4, 6)]) == "陈，陈！星熊。"


def test_window_is_capped_and_keeps_every_name():
    sentences = [f"{'一二三四五六七八九十' * 3}{n}{'十九八七六五四三二一' * 3}。" for n in "ABCDE"]
    text = "".join(sentences)
    got = query_window(text, [(n, text.find(n), text.find(n) + 1) for n in "ABCDE"])
    assert len(got) <= QUERY_MAX_CHARS
    assert all(n in got for n in "ABCDE")


def test_window_without_names_is_the_text_capped():
    assert query_window("  你好呀，博士。 ", []) == "你好呀，博士。"
    long = "博士" * 200
    assert query_window(long, []) == long[:QUERY_MAX_CHARS]
    assert query_window(long, [], max_chars=10) == long[:10]
    # spans outside the text are ignored
    assert query_window("你好", [("x", 5, 7)]) == "你好"


# -- build timings ------------------------------------------------------------------------------
BUILD_STAGES = ["lock", "collect", "validate", "hash", "cache_read", "embed", "cache_write",
                "client_thread", "client", "upsert", "verify", "switch", "prune"]  # fmt: skip


def test_build_report_times_every_stage(home):
    r1 = build(home, small_graph())
    assert not r1.unchanged and r1.embedded > 0
    assert list(r1.timings) == BUILD_STAGES
    assert all(v >= 0 for v in r1.timings.values())
    assert r1.to_dict()["timings"] == r1.timings
    r2 = build(home, small_graph())  # unchanged: stops after the client
    assert r2.unchanged
    assert list(r2.timings) == ["lock", "collect", "validate", "hash", "client_thread",
                                "client", "prune"]  # fmt: skip


def test_build_with_a_given_client_makes_no_side_thread(home):
    client = make_client(home)
    r = build(home, small_graph(), client=client)
    assert "client_thread" not in r.timings and "client" in r.timings
    r2 = build(home, small_graph(1), client_factory=lambda: make_client(home))
    assert "client_thread" in r2.timings and not r2.unchanged


def test_a_failing_client_factory_fails_the_build(home):
    def broken():
        raise RuntimeError("no chroma here")

    with pytest.raises(RuntimeError, match="no chroma here"):
        build(home, small_graph(), client_factory=broken)


# -- the query path -----------------------------------------------------------------------------
class _Recorder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str):
        self.queries.append(text)
        return super().embed_query(text)


def _reference(rag: RelationRAG, op: str, window: str, ids: list[str], top_k: int):
    """The query path as it was: documents and metadata returned by Chroma."""
    n = sum(len(rag._docs[(op, i)]) for i in ids)
    res = rag._col.query(
        query_embeddings=[HashEmbedder().embed_query(window)], n_results=n,
        where={"$and": [{"operator_id": op}, {"target_id": {"$in": ids}}]},
        include=["documents", "metadatas", "distances"],
    )  # fmt: skip
    out, seen = [], set()
    for did, text, meta, dist in zip(
        res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
    ):
        d = RelationDoc.from_chroma(did, text, meta)
        if d.target_id in seen:
            continue
        seen.add(d.target_id)
        out.append((d.doc_id, d.target_id, d.text, d.predicate, round(1.0 - float(dist), 4)))
        if len(out) >= top_k:
            break
    return out


@pytest.mark.parametrize(
    "msg",
    [
        "陈、星熊和诗怀雅最近怎么样？",
        "今天训练好累。诗怀雅又在和陈吵架，星熊在旁边看热闹！晚饭吃什么？",
        "星熊" + "，" * 50 + "陈" + "。" * 10 + "诗怀雅说了什么",
    ],
)
@pytest.mark.parametrize("top_k", [1, 2])
def test_distances_only_query_ranks_as_before(home, msg, top_k):
    g = small_graph()
    build(home, g)
    emb = _Recorder()
    rag = make_rag(home, g, rank_always=True)
    rag._embedder = emb
    got = rag.get_contextual_relations(AMIYA, msg, top_k)
    window = emb.queries[-1]
    spans = [s for s in rag.detect_targets(AMIYA, msg) if s[0] in (CHEN, HOSHI, SWIRE)]
    assert window == query_window(msg, spans)
    want = _reference(rag, AMIYA, window, [CHEN, SWIRE, HOSHI], top_k)
    assert [(r.doc_id, r.target_id, r.text, r.predicate, r.score) for r in got] == want
    assert len(got) == top_k


def test_the_query_window_is_what_gets_embedded(home):
    g = small_graph()
    build(home, g)
    emb = _Recorder()
    rag = make_rag(home, g, rank_always=True)
    rag._embedder = emb
    msg = "博士今天又熬夜了，你能不能劝劝他？对了，星熊最近好像一直在训练室。晚饭吃什么？"
    rag.get_contextual_relations(AMIYA, msg, 2)
    assert emb.queries == ["对了，星熊最近好像一直在训练室。"]
