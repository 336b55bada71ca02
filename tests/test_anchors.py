"""verify-anchors finds the three kinds of drift (insertion, in-place edit, truncation)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.tree_world import avg_file, write_tree

from arklore.corpus.anchors import DriftKind, verify_anchors
from arklore.corpus.ingest import ingest
from arklore.sources.roots import STORY_SUBDIR, DataRoots
from arklore.workspace import open_store

STAGE = "obt/main/level_test_01_end"


@pytest.fixture
def env(tmp_path: Path):
    gamedata, astr = write_tree(tmp_path / "data")
    roots = DataRoots(gamedata, astr)
    store = open_store(tmp_path / "home" / "arklore.sqlite3")
    ingest(roots, store)
    yield roots, store
    store.close()


def _edit(settings: DataRoots, old: str, new: str) -> None:
    assert settings.gamedata is not None
    f = avg_file(settings.gamedata, "level_test_01_end")
    text = f.read_text(encoding="utf-8")
    assert old in text
    f.write_text(text.replace(old, new), encoding="utf-8")


def test_unchanged_sources_have_no_drift(env):
    settings, store = env
    report = verify_anchors(settings, store)
    assert report.ok and report.anchors == 17 and report.stages_reparsed == 0
    assert verify_anchors(settings, store, full=True).ok


def test_insertion_in_the_middle_reports_moved_lines(env):
    settings, store = env
    _edit(
        settings,
        '[name="守卫？"]  站住。\n',
        '[name="守卫？"]  站住。\n[name="守卫"]  报上名来。\n',
    )
    report = verify_anchors(settings, store)
    assert [(d.line_no, d.kind, d.now_line_nos) for d in report.drifts] == [
        (3, DriftKind.MOVED, [4])
    ]


def test_in_place_edit_reports_changed_line(env):
    settings, store = env
    _edit(settings, "站住。", "停下。")
    report = verify_anchors(settings, store)
    assert [(d.stage_path, d.line_no, d.kind, d.now_text) for d in report.drifts] == [
        (STAGE, 2, DriftKind.CHANGED, "停下。")
    ]


def test_truncation_reports_out_of_range(env):
    settings, store = env
    _edit(settings, '[name="旅人"]  我只是路过。\n', "")
    report = verify_anchors(settings, store)
    assert [(d.line_no, d.kind) for d in report.drifts] == [(3, DriftKind.OUT_OF_RANGE)]


def test_deleted_stage_and_unparseable_stage_are_reported(env):
    settings, store = env
    avg_file(settings.gamedata, "level_test_01_end").unlink()
    kinds = {d.kind for d in verify_anchors(settings, store).drifts}
    assert kinds == {DriftKind.STAGE_MISSING}


def test_cited_line_ids_are_checked_and_name_what_cites_them(env):
    settings, store = env
    line_id = store.lines(STAGE)[1].line_id
    _edit(settings, "站住。", "停下。")
    drifts = verify_anchors(
        settings, store, citations=[(line_id, "relation 旅人 -> 守卫 (敌对)")]
    ).drifts
    assert any(
        d.line_id == line_id and "relation 旅人 -> 守卫 (敌对)" in d.referenced_by for d in drifts
    )


@pytest.mark.realdata
def test_drift_kinds_detected_on_real_stage_files(tmp_path: Path, gamedata_root, astr_root):
    """Real stage files copied to a temp dir and edited (the copies never leave tmp)."""
    from arklore.sources.avg import parse_avg

    src_story = gamedata_root / STORY_SUBDIR
    names = [
        "obt/main/level_main_01-01_beg.txt",
        "obt/main/level_main_01-01_end.txt",
        "obt/main/level_main_02-01_beg.txt",
    ]
    dst = tmp_path / "gd"
    for n in names:
        (dst / STORY_SUBDIR / n).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src_story / n, dst / STORY_SUBDIR / n)
    (tmp_path / "astr" / STORY_SUBDIR).mkdir(parents=True)
    settings = DataRoots(dst, tmp_path / "astr")
    with open_store(tmp_path / "home" / "arklore.sqlite3") as store:
        ingest(settings, store)

        def lines_of(n: str) -> list[str]:
            return (dst / STORY_SUBDIR / n).read_text(encoding="utf-8").splitlines(keepends=True)

        # 1. insert a dialogue line right after the 10th text line of stage 1
        f1 = lines_of(names[0])
        text_rows = [i for i, raw in enumerate(f1) if raw.startswith('[name="')]
        f1.insert(text_rows[10] + 1, '[name="测试员"]  插入的一句。\n')
        (dst / STORY_SUBDIR / names[0]).write_text("".join(f1), encoding="utf-8")
        # 2. edit a line in place in stage 2
        f2 = lines_of(names[1])
        j = [i for i, raw in enumerate(f2) if raw.startswith('[name="')][5]
        f2[j] = f2[j].rstrip("\n") + "（改）\n"
        (dst / STORY_SUBDIR / names[1]).write_text("".join(f2), encoding="utf-8")
        # 3. cut the last 3 text lines of stage 3
        f3 = lines_of(names[2])
        n3 = len(parse_avg("".join(f3), "x"))
        keep = [i for i, raw in enumerate(f3) if raw.startswith('[name="')][-3]
        (dst / STORY_SUBDIR / names[2]).write_text("".join(f3[:keep]), encoding="utf-8")

        report = verify_anchors(settings, store)
    by_stage: dict[str, set[str]] = {}
    for d in report.drifts:
        by_stage.setdefault(d.stage_path, set()).add(d.kind)
    assert DriftKind.MOVED in by_stage["obt/main/level_main_01-01_beg"]
    assert by_stage["obt/main/level_main_01-01_end"] == {DriftKind.CHANGED}
    assert DriftKind.OUT_OF_RANGE in by_stage["obt/main/level_main_02-01_beg"]
    assert n3 > 3
