"""Ingest: both sources into one store, idempotent, atomic per stage, malformed files skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.tree_world import astr_file, avg_file, write_tree

from arklore.core.errors import MalformedSourceError
from arklore.corpus import ingest as ingest_mod
from arklore.corpus.ingest import ingest
from arklore.corpus.order import principal_speakers
from arklore.corpus.store import Store
from arklore.sources import astr, avg
from arklore.sources.roots import DataRoots
from arklore.workspace import open_store


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[DataRoots, Store]]:
    gamedata, astr = write_tree(tmp_path / "data")
    store = open_store(tmp_path / "home" / "arklore.sqlite3")
    yield DataRoots(gamedata, astr), store
    store.close()


def _dump(store: Store) -> list[tuple[Any, ...]]:
    return store.conn.execute("SELECT * FROM lines ORDER BY source, stage_path, line_no").fetchall()


def test_ingest_stores_both_sources_with_speakers(env):
    roots, store = env
    report = ingest(roots, store)
    assert report.sources["avg"].added == 2
    assert report.sources["astr"].added == 1
    assert report.errors == []
    counts = store.counts()
    assert counts["avg_stages"] == 2 and counts["astr_stages"] == 1
    assert counts["avg_lines"] == 10 and counts["astr_lines"] == 7
    speakers = dict(store.conn.execute("SELECT name, line_count FROM speakers").fetchall())
    # primary corpus = raw scripts here; quotes and the trailing ？ are normalized away
    assert speakers == {"测试员": 2, "向导": 3, "博士": 1, "旅人": 2, "守卫": 1}


def test_primary_corpus_prefers_raw_scripts(env):
    roots, store = env
    ingest(roots, store)
    assert store.primary_source("obt/main/level_test_01_beg") == "avg"
    assert [ln.line_id for ln in store.lines("obt/main/level_test_01_beg", "avg")] == [
        ln.line_id for ln in store.lines("obt/main/level_test_01_beg", "astr")
    ]


def test_second_ingest_with_nothing_changed_writes_nothing(env):
    roots, store = env
    ingest(roots, store)
    before = _dump(store)
    again = ingest(roots, store)
    assert again.sources["avg"].unchanged == 2 and again.sources["avg"].lines_written == 0
    assert again.sources["astr"].unchanged == 1
    assert not again.changed and not again.post_processed
    assert _dump(store) == before


def test_changed_stage_is_replaced(env):
    roots, store = env
    ingest(roots, store)
    f = avg_file(roots.gamedata, "level_test_01_end")
    f.write_text(
        f.read_text(encoding="utf-8").replace("我只是路过。", "我来送信。"), encoding="utf-8"
    )
    report = ingest(roots, store)
    assert report.sources["avg"].updated == 1 and report.sources["avg"].unchanged == 1
    texts = [ln.text for ln in store.lines("obt/main/level_test_01_end", "avg")]
    assert texts == ["有人在吗？", "站住。", "我来送信。"]


def test_malformed_file_is_reported_and_stored_version_kept(env):
    roots, store = env
    ingest(roots, store)
    before = store.lines("obt/main/level_test_01_beg", "astr")
    astr_file(roots.astr).write_text("{ not json", encoding="utf-8")
    avg_file(roots.gamedata, "level_test_01_end").write_bytes(b'[name="\xff\xfe"]  \xc3')
    report = ingest(roots, store)
    failed = {(e["source"], e["path"]) for e in report.errors}
    assert failed == {
        ("astr", "obt/main/level_test_01_beg.json"),
        ("avg", "obt/main/level_test_01_end.txt"),
    }
    assert all(e["reason"] for e in report.errors)
    assert store.lines("obt/main/level_test_01_beg", "astr") == before
    assert store.counts()["ingest_errors"] == 2
    # fixing the file clears the error on the next run
    astr_file(roots.astr).unlink()
    report = ingest(roots, store)
    assert report.sources["astr"].removed == 1
    assert {e["path"] for e in report.errors} == {"obt/main/level_test_01_end.txt"}
    assert store.counts()["ingest_errors"] == 1


def test_parse_warnings_are_counted_per_source_and_listed(env):
    settings, store = env
    f = avg_file(settings.gamedata, "level_test_01_end")
    f.write_text(
        f.read_text(encoding="utf-8") + '[Predicate(references="3")]\n[Delay=2]\n',
        encoding="utf-8",
    )
    report = ingest(settings, store)
    assert report.sources["avg"].warnings == 2 and report.sources["astr"].warnings == 0
    listed = report.to_dict()["parse_warnings"]
    assert [(w["source"], w["path"]) for w in listed] == [("avg", "obt/main/level_test_01_end.txt")]
    assert [w.split(":")[0] for w in listed[0]["warnings"]] == ["line 4", "line 5"]
    assert report.errors == [] and store.counts()["avg_lines"] == 10  # the lines are all kept


def test_removed_file_removes_its_stage(env):
    roots, store = env
    ingest(roots, store)
    avg_file(roots.gamedata, "level_test_01_end").unlink()
    report = ingest(roots, store)
    assert report.sources["avg"].removed == 1
    assert store.lines("obt/main/level_test_01_end") == []


def test_crash_mid_ingest_loses_nothing_and_resume_matches(env, tmp_path, monkeypatch):
    roots, store = env
    clean = open_store(tmp_path / "clean.sqlite3")
    ingest(roots, clean)
    expected = _dump(clean)

    real_write = Store.write_stages

    def dying_write(self, stages):
        real_write(self, stages)
        assert len(stages) == 2  # both stages of the source, in one batch
        raise KeyboardInterrupt  # killed after writing the batch, inside the transaction

    monkeypatch.setattr(Store, "write_stages", dying_write)
    monkeypatch.setattr(ingest_mod, "COMMIT_EVERY_SECONDS", 3600.0)
    with pytest.raises(KeyboardInterrupt):
        ingest(roots, store)
    # the batch was rolled back whole: no half-written stage
    assert _dump(store) == []
    monkeypatch.setattr(Store, "write_stages", real_write)
    ingest(roots, store)
    assert _dump(store) == expected


@pytest.mark.realdata
def test_real_corpus_ingest_volume(real_store_path: Path, astr_root: Path, metrics) -> None:
    """Issue #2 acceptance on the real data. The ASTR checkout here holds 1,917 stage files
    (its README's 2,118 is not what is on disk), so the ASTR bound is "every file stored"."""
    astr_files = sum(1 for _ in (astr_root / "zh_CN/gamedata/story").rglob("*.json"))
    with open_store(real_store_path) as store:
        c = store.counts()
        speakers = store.conn.execute(
            "SELECT count(DISTINCT speaker) FROM lines WHERE source = 'avg' AND speaker != ''"
        ).fetchone()[0]
    metrics(
        f"ingest: {c['avg_stages']} raw scripts / {c['avg_lines']:,} lines / {speakers:,} speakers; "
        f"{c['astr_stages']} ASTR stages / {c['astr_lines']:,} lines; {c['ingest_errors']} files skipped"
    )
    assert c["avg_stages"] >= 3600 and c["avg_lines"] >= 400_000 and speakers >= 6000
    assert c["astr_stages"] == astr_files
    assert c["ingest_errors"] == 0
    from arklore.names.build import operator_count

    with open_store(real_store_path) as store:
        assert operator_count(store) >= 300


def _many_stages(roots: DataRoots, n: int) -> None:
    """``n`` more invented raw scripts, and one that does not decode."""
    assert roots.gamedata is not None
    text = avg_file(roots.gamedata).read_text(encoding="utf-8")
    for i in range(n):
        avg_file(roots.gamedata, f"level_more_{i:03d}").write_text(
            text.replace("北边", f"第{i}条路"), encoding="utf-8"
        )
    avg_file(roots.gamedata, "level_more_bad").write_bytes(b'[name="\xff\xfe"]  \xc3')


def _tables(store: Store) -> list[list[tuple[Any, ...]]]:
    q = store.conn.execute
    return [
        _dump(store),
        q("SELECT source, stage_path, content_hash, line_count, order_rank FROM stages"
          " ORDER BY source, stage_path").fetchall(),
        q("SELECT source, path, reason FROM ingest_errors ORDER BY source, path").fetchall(),
        q("SELECT * FROM speakers ORDER BY name").fetchall(),
    ]  # fmt: skip


def test_parsing_in_worker_processes_stores_exactly_what_one_process_does(
    env, tmp_path, monkeypatch
):
    roots, store = env
    _many_stages(roots, 12)
    monkeypatch.setattr(ingest_mod, "PARALLEL_FROM", 4)
    monkeypatch.setattr(ingest_mod, "BATCH", 3)
    monkeypatch.setattr(ingest_mod, "BULK_FROM", 4)  # the bulk path too: indexes rebuilt
    one = ingest(roots, store, workers=1)
    other = open_store(tmp_path / "other" / "arklore.sqlite3")
    two = ingest(roots, other, workers=2)
    assert _tables(store) == _tables(other) and len(_dump(other)) > 100
    assert [e["path"] for e in one.errors] == [e["path"] for e in two.errors]
    assert one.sources["avg"].added == two.sources["avg"].added == 14
    indexes = {
        r[0] for r in other.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
    }
    assert {"lines_by_speaker", "lines_by_id"} <= indexes
    other.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_every_stage_is_stored_line_for_line_as_its_reader_parses_it(env, monkeypatch, workers):
    """The batched write (rows made where the file is parsed, one statement per table) stores
    what the readers parse, whether the files were parsed here or in worker processes."""
    roots, store = env
    _many_stages(roots, 12)
    assert roots.gamedata is not None
    long = "".join(f'[name="向导"]  第{i}步。\n' for i in range(40))  # 向导 carries it
    avg_file(roots.gamedata, "level_long").write_text(long, encoding="utf-8")
    monkeypatch.setattr(ingest_mod, "PARALLEL_FROM", 4)
    monkeypatch.setattr(ingest_mod, "BATCH", 3)
    monkeypatch.setattr(ingest_mod, "BULK_FROM", 4)
    ingest(roots, store, workers=workers)
    checked, principal = 0, 0
    for source, root, files, read in (
        ("avg", roots.avg_story_root(), avg.iter_avg_files, avg.read_avg_stage),
        ("astr", roots.astr_story_root(), astr.iter_astr_files, astr.read_astr_stage),
    ):
        for f in files(root):
            try:
                stage = read(root, f, f.read_bytes())
            except MalformedSourceError:
                continue
            assert store.lines(stage.stage_path, source) == stage.lines, stage.stage_path
            row = store.conn.execute(
                "SELECT line_count, principal_speakers, content_hash FROM stages"
                " WHERE source = ? AND stage_path = ?",
                (source, stage.stage_path),
            ).fetchone()
            assert row == (len(stage.lines), orjson.dumps(principal_speakers(stage.lines)).decode(),
                           stage.content_hash)  # fmt: skip
            checked += 1
            principal += bool(principal_speakers(stage.lines))
    assert checked == 16 and principal == 1


def test_an_ingest_killed_during_a_bulk_load_gets_its_indexes_back(env):
    roots, store = env
    store.drop_line_indexes()  # as a run killed between dropping and rebuilding leaves it
    ingest(roots, store)
    plan = store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM lines WHERE line_id = 'x'"
    ).fetchall()
    assert "lines_by_id" in str(plan)
