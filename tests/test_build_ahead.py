"""`arklore build` embeds the relation documents ahead: from the end of the graph step, worker
processes embed their texts into the index's cache while appearances and profiles run, and
the index step finds them there. The home it leaves is the one a sequential build leaves
(the same index ids, texts and vectors, profiles and scenes), a stop on the way resumes, and a
worker that fails only leaves its texts to the index step."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from support.tree_world import (
    make_workspace,
    write_tree_with_patrol,
)
from typer.testing import CliRunner

from arklore.build import BuildReport, run_build
from arklore.cli.app import app
from arklore.rag import ahead as rag_ahead
from arklore.rag import facade as rag_facade
from arklore.rag.ahead import EmbedAhead
from arklore.rag.embedders import E5SmallEmbedder, EmbeddingCache, HashEmbedder, text_hash
from arklore.rag.index import EMBED_CACHE_FILE, pointer_path, read_pointer


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    """The invented tree, and a stage where three operators talk (their views get index
    documents)."""
    return write_tree_with_patrol(tmp_path / "data")


@pytest.fixture
def ahead_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers start for any number of texts (the invented world has a few)."""
    monkeypatch.setattr(rag_facade, "AHEAD_MIN_TEXTS", 1)


def build(home: Path, data: tuple[Path, Path], *, workers: int, **kw: Any) -> BuildReport:
    ws = make_workspace(home, *data, embedder="hash", workers=workers)
    try:
        return run_build(ws, **kw)
    finally:
        ws.close()


def home_state(home: Path, data: tuple[Path, Path]) -> dict[str, Any]:
    """What a build leaves that a chat reads: the live index's ids, texts, metadata and
    vectors, the profiles (their generation time left out) and her scenes."""
    ws = make_workspace(home, *data, embedder="hash", workers=1)
    try:
        ptr = read_pointer(home / "rag")
        assert ptr is not None
        col = ws.rag.chroma().get_collection(ptr["collection"], embedding_function=None)
        got = col.get(include=["documents", "metadatas", "embeddings"])
        index = sorted(
            (did, text, orjson.dumps(meta, option=orjson.OPT_SORT_KEYS).decode(),
             np.asarray(vec, dtype=np.float32).tobytes())
            for did, text, meta, vec in zip(
                got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
            )
        )  # fmt: skip
        db = ws.corpus.open().db
        scenes = [db.query(f"SELECT * FROM {t} ORDER BY 1, 2") for t in ("scene_windows",
                  "stage_terms")]  # fmt: skip
    finally:
        ws.close()
    chars = {
        p.name: re.sub(r"(?m)^- generated: .*$", "", p.read_text(encoding="utf-8"))
        for p in sorted((home / "chars").glob("*"))
    }
    index = [(i, t, m.replace(str(home), "<home>"), v) for i, t, m, v in index]
    return {"index": index, "chars": chars, "scenes": scenes}


@pytest.mark.usefixtures("ahead_always")
def test_a_build_that_embeds_ahead_leaves_the_home_a_sequential_build_leaves(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    sequential = build(tmp_path / "one", data, workers=1)
    ahead = build(tmp_path / "two", data, workers=2)

    assert sequential.ahead is None  # one worker: nothing runs beside the steps
    assert ahead.ahead is not None and ahead.ahead["error"] == ""
    assert ahead.ahead["overlapped"] == ["appearances", "profiles"]
    index = ahead.step("index").summary
    assert index["embedded_ahead"] == ahead.ahead["embedded"] > 0
    assert index["embedded"] == 0  # the index step found every text in its cache
    assert home_state(tmp_path / "two", data) == home_state(tmp_path / "one", data)


def test_a_cold_index_built_in_worker_processes_is_the_one_a_single_process_builds(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`arklore rag build` on an index with nothing cached embeds in one-thread worker
    processes (rag.ahead.embed_in_workers) and fills the same collection."""
    for home in (tmp_path / "one", tmp_path / "two"):
        build(home, data, workers=1)
        (home / "rag" / EMBED_CACHE_FILE).unlink()  # nothing cached: every text embedded
    monkeypatch.setattr(rag_ahead, "AHEAD_MIN_TEXTS", 1)
    reports = {}
    for home, workers in ((tmp_path / "one", 1), (tmp_path / "two", 2)):
        ws = make_workspace(home, *data, embedder="hash", workers=workers)
        try:
            reports[workers] = ws.build_index(no_llm=True, force=True)
        finally:
            ws.close()

    assert "embed_workers" not in reports[1].timings
    assert "embed_workers" in reports[2].timings
    assert reports[2].embedded == reports[1].embedded > 0
    assert (
        home_state(tmp_path / "two", data)["index"] == home_state(tmp_path / "one", data)["index"]
    )


@pytest.mark.usefixtures("ahead_always")
def test_a_build_stopped_while_embedding_ahead_switches_nothing_and_resumes(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    ws = make_workspace(home, *data, embedder="hash", workers=2)

    def stopped(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ws.profiles, "distill", stopped)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_build(ws)
    finally:
        ws.close()
    assert not pointer_path(home / "rag").exists()  # no index switched in half-made

    resumed = build(home, data, workers=2)
    assert [s.name for s in resumed.steps if s.skipped] == ["graph", "appearances"]
    build(tmp_path / "ref", data, workers=1)
    assert home_state(home, data) == home_state(tmp_path / "ref", data)


class _NoWorkerEmbedder(HashEmbedder):
    """An embedder no worker can make (its name is unknown there): every worker fails."""

    name = "no-such-embedder"


def test_a_failed_worker_is_reported_and_leaves_its_texts_uncached(tmp_path: Path) -> None:
    emb = _NoWorkerEmbedder()
    texts = ["阿米娅和陈一起巡逻。", "推进之王听到了。"]
    ahead = EmbedAhead(emb, texts, tmp_path / "cache.sqlite3", workers=2)
    assert ahead.started
    report = ahead.wait()
    assert report.error and report.embedded == 0
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    try:
        assert cache.get_many(emb, [text_hash(t) for t in texts]) == {}
    finally:
        cache.close()


def test_texts_already_cached_or_too_few_start_no_worker(tmp_path: Path) -> None:
    emb = HashEmbedder()
    cache_path = tmp_path / "cache.sqlite3"
    cache = EmbeddingCache(cache_path)
    try:
        cache.put_many(emb, [(text_hash("一"), emb.embed_query("一"))])
    finally:
        cache.close()
    assert not EmbedAhead(emb, ["一"], cache_path, workers=2).started
    assert not EmbedAhead(emb, ["一", "二", "三"], cache_path, workers=2, min_texts=3).started
    ahead = EmbedAhead(emb, ["一", "二", "三"], cache_path, workers=2, min_texts=2)
    assert ahead.started and ahead.wait().embedded == 2


@pytest.mark.usefixtures("ahead_always")
def test_the_command_says_what_was_embedded_beside_the_steps(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var, value in {"ARKLORE_HOME": str(tmp_path / "home"), "ARKLORE_EMBEDDER": "hash",
                       "ARKLORE_GAMEDATA": str(data[0]), "ARKLORE_ASTR": str(data[1]),
                       "ARKLORE_WORKERS": "2"}.items():  # fmt: skip
        monkeypatch.setenv(var, value)
    r = CliRunner().invoke(app, ["build"])
    assert r.exit_code == 0, r.output
    assert "beside appearances, profiles:" in r.stdout and "embedded in 1 worker" in r.stdout
    step_line = re.search(r"relation documents, (\d+) embedded", r.stdout)
    ahead_line = re.search(r"(\d+) relation texts embedded in", r.stdout)
    assert step_line and ahead_line  # the index step counts what the workers embedded for it
    assert int(step_line.group(1)) == int(ahead_line.group(1)) > 0
    (tmp_path / "home" / "build.json").unlink()  # every step again; the texts are cached now
    out = orjson.loads(CliRunner().invoke(app, ["build", "--json"]).stdout)
    assert out["ahead"] is None  # nothing left to embed: no worker started
    assert out["steps"][-2]["summary"]["embedded"] == 0


def test_an_e5_vector_does_not_depend_on_its_batch_nor_on_the_engine_threads() -> None:
    """What embedding ahead rests on: a text's vector is the same whichever batch a worker
    embedded it in, on one thread, as in the index step's batches on several."""
    texts = [f"阿米娅和陈在第{i}次巡逻时{'并肩作战' * (i % 5)}，互相掩护。" for i in range(20)]
    several = E5SmallEmbedder(threads=2).embed_documents(texts)
    one = E5SmallEmbedder(threads=1)
    alone = np.stack([one.embed_documents([t])[0] for t in texts])
    shifted = one.embed_documents(texts[7:] + texts[:7])
    assert several.tobytes() == alone.tobytes()
    assert np.concatenate([shifted[13:], shifted[:13]]).tobytes() == several.tobytes()
