"""Ingest's unchanged check by the files' stat (DigestMemo): an ingest with nothing changed
reads no story file, yet every change to the files is seen -- a changed file, one rewritten to
the same size and modification time, a touched one, a new one and a deleted one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.tree_world import astr_file, avg_file, write_tree

from arklore.corpus import ingest as ingest_mod
from arklore.corpus.ingest import IngestReport, ingest
from arklore.corpus.store import Store
from arklore.sources.roots import DataRoots
from arklore.sources.speakers import stage_digest
from arklore.workspace import open_store

STAGES = 3  # two raw scripts and one ASTR stage in the tree


class World:
    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gamedata, self.astr = write_tree(tmp / "data")
        self.roots = DataRoots(self.gamedata, self.astr)
        self.store: Store = open_store(tmp / "home" / "arklore.sqlite3")
        self.memo = tmp / "home" / "cache" / "ingest_digests.pickle"
        self.hashed: list[str] = []  # the stage of every file read to hash it in the check
        digest = stage_digest

        def counted(data: bytes, stage_path: str) -> str:
            self.hashed.append(stage_path)
            return digest(data, stage_path)

        monkeypatch.setattr(ingest_mod, "stage_digest", counted)

    def ingest(self, sources: tuple[str, ...] = ("avg", "astr")) -> IngestReport:
        self.hashed.clear()
        return ingest(self.roots, self.store, memo=self.memo, sources=sources)

    def end(self) -> Path:
        return avg_file(self.gamedata, "level_test_01_end")

    def texts(self) -> list[str]:
        return [ln.text for ln in self.store.lines("obt/main/level_test_01_end", "avg")]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    # the files were all written just now: no wait for them to age past FRESH_NS
    monkeypatch.setattr(ingest_mod, "FRESH_NS", 0)
    w = World(tmp_path, monkeypatch)
    yield w
    w.store.close()


def rewrite(f: Path, change: Callable[[str], str]) -> None:
    f.write_text(change(f.read_text(encoding="utf-8")), encoding="utf-8")


def unchanged(report: IngestReport) -> int:
    return sum(s.unchanged for s in report.sources.values())


def test_an_ingest_with_nothing_changed_reads_no_story_file(world: World) -> None:
    world.ingest()  # parsed: their digests are kept from the parse
    again = world.ingest()
    assert world.hashed == [] and unchanged(again) == STAGES and not again.changed
    assert world.memo.is_file()


def test_a_changed_file_is_parsed_again(world: World) -> None:
    world.ingest()
    world.ingest()
    rewrite(world.end(), lambda t: t.replace("我只是路过。", "我是来送一封很长的信的。"))
    report = world.ingest()
    assert report.sources["avg"].updated == 1 and unchanged(report) == STAGES - 1
    assert world.texts() == ["有人在吗？", "站住。", "我是来送一封很长的信的。"]


def test_a_file_rewritten_to_the_same_size_and_time_is_still_seen(world: World) -> None:
    world.ingest()
    before = os.stat(world.end())
    rewrite(world.end(), lambda t: t.replace("我只是路过。", "我来送信了。"))
    os.utime(world.end(), ns=(before.st_atime_ns, before.st_mtime_ns))  # as a copy tool may
    after = os.stat(world.end())
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns  # what still tells it changed
    report = world.ingest()
    assert report.sources["avg"].updated == 1
    assert world.texts()[-1] == "我来送信了。"


def test_a_touched_file_with_the_same_bytes_is_hashed_not_parsed(world: World) -> None:
    world.ingest()
    st = os.stat(world.end())
    os.utime(world.end(), ns=(st.st_atime_ns, st.st_mtime_ns - 5_000_000_000))
    report = world.ingest()
    assert world.hashed == ["obt/main/level_test_01_end"]
    assert unchanged(report) == STAGES and report.sources["avg"].lines_written == 0
    assert world.ingest() and world.hashed == []  # and its new stat is kept


def test_a_new_file_is_added_and_a_deleted_one_removed(world: World) -> None:
    world.ingest()
    new = avg_file(world.gamedata, "level_test_02_beg")
    shutil.copy(world.end(), new)
    report = world.ingest()
    assert report.sources["avg"].added == 1 and unchanged(report) == STAGES
    assert world.store.lines("obt/main/level_test_02_beg", "avg") != []
    new.unlink()
    astr_file(world.astr).unlink()
    report = world.ingest()
    assert report.sources["avg"].removed == 1 and report.sources["astr"].removed == 1
    assert world.store.lines("obt/main/level_test_02_beg") == []
    assert world.hashed == []


def test_a_file_changed_just_now_is_hashed_again_next_time(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within FRESH_NS of a file's change, another write of the same size could leave the
    same stat (timestamps tick coarsely): such a file is not trusted by its stat yet."""
    monkeypatch.setattr(ingest_mod, "FRESH_NS", 3600 * 10**9)
    world.ingest()
    report = world.ingest()
    assert sorted(world.hashed) == [
        "obt/main/level_test_01_beg", "obt/main/level_test_01_beg", "obt/main/level_test_01_end",
    ]  # fmt: skip
    assert unchanged(report) == STAGES


def test_digests_kept_under_other_digest_rules_are_not_used(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.ingest()
    monkeypatch.setattr(ingest_mod, "digest_rules", lambda: "a new speakers table")
    world.ingest()
    assert len(world.hashed) == STAGES


def test_an_ingest_of_one_source_keeps_the_other_sources_digests(world: World) -> None:
    world.ingest()
    world.ingest(("avg",))
    assert world.hashed == []
    report = world.ingest()
    assert world.hashed == [] and unchanged(report) == STAGES
