"""Cross-check of the raw scripts against ASTR: alignment, per-field judgement, categories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from arklore.core.model import Line, LineKind
from arklore.corpus.crosscheck import compare_stage, crosscheck

FIXTURES = Path(__file__).parent / "fixtures" / "story"
SP = "obt/test/stage"


def lines(*rows: tuple[str, str]) -> list[Line]:
    """(speaker, text) rows as dialogue lines."""
    return [
        Line(SP, i, LineKind.DIALOGUE, text, speaker=speaker, speaker_raw=speaker)
        for i, (speaker, text) in enumerate(rows, 1)
    ]


BASE = [("甲", f"第{i}句。") for i in range(1, 21)]


def test_identical_stages_agree_on_every_field() -> None:
    cmp = compare_stage(lines(*BASE), lines(*BASE))
    assert cmp.agrees and cmp.first_diff is None
    assert all(stats.share == 1.0 for stats in cmp.fields.values())
    assert cmp.fields["text"].compared == 20


def test_whitespace_differences_do_not_count() -> None:
    other = [(s, t.replace("句", "句 ")) for s, t in BASE]
    assert compare_stage(lines(*BASE), lines(*other)).agrees


def test_one_inserted_line_does_not_shift_the_rest_into_disagreement() -> None:
    edited = BASE[:5] + [("乙", "新加的一句。")] + BASE[5:]
    cmp = compare_stage(lines(*BASE), lines(*edited))
    assert cmp.only_astr == 1 and cmp.only_avg == 0
    assert cmp.fields["text"].agreeing == 20
    assert cmp.fields["text"].compared == 21
    assert cmp.category == "edit"
    first = cmp.first_diff
    assert first is not None and first.avg_line_no is None and first.astr_line_no == 6


def test_an_edited_line_is_reported_with_both_texts() -> None:
    edited = list(BASE)
    edited[3] = ("甲", "改过的第4句。")
    cmp = compare_stage(lines(*BASE), lines(*edited))
    assert cmp.category == "edit"
    diff = cmp.first_diff
    assert diff is not None
    assert (diff.avg_line_no, diff.astr_line_no) == (4, 4)
    assert (diff.avg_text, diff.astr_text) == ("第4句。", "改过的第4句。")
    assert diff.fields == ("text",)


def test_fields_are_judged_separately() -> None:
    other = [("乙" if i % 2 else s, t) for i, (s, t) in enumerate(BASE)]
    cmp = compare_stage(lines(*BASE), lines(*other))
    assert cmp.fields["text"].share == 1.0
    assert cmp.fields["speaker"].agreeing == 10
    assert cmp.fields["kind"].share == 1.0


def test_systematic_speaker_mismatch_is_parser_suspect() -> None:
    other = [("乙", t) for _, t in BASE]
    cmp = compare_stage(lines(*BASE), lines(*other))
    assert cmp.category == "parser-suspect"
    assert cmp.first_diff is not None and cmp.first_diff.fields == ("speaker",)
    assert any("speaker" in reason for reason in cmp.reasons)


def test_scattered_text_differences_are_parser_suspect() -> None:
    other = [(s, t + "x" if i % 3 == 0 else t) for i, (s, t) in enumerate(BASE)]
    assert compare_stage(lines(*BASE), lines(*other)).category == "parser-suspect"


def copy_roots(tmp_path: Path) -> tuple[Path, Path]:
    avg_root, astr_root = tmp_path / "avg", tmp_path / "astr"
    shutil.copytree(FIXTURES / "avg", avg_root)
    shutil.copytree(FIXTURES / "astr", astr_root)
    return avg_root, astr_root


def test_crosscheck_fixture_roots_agree_and_report_is_json(tmp_path: Path) -> None:
    avg_root, astr_root = copy_roots(tmp_path)
    (avg_root / "obt/main/level_fx_02_beg.txt").write_text("只有原始脚本有。\n", encoding="utf-8")
    seen: list[tuple[int, int]] = []
    report = crosscheck(avg_root, astr_root, progress=lambda d, t: seen.append((d, t)))
    assert report.stages_compared == 1 and not report.disagreeing
    assert report.only_in_avg == ["obt/main/level_fx_02_beg"]
    assert seen == [(1, 1)]
    assert report.fields["text"].share == 1.0
    data = json.loads(json.dumps(report.to_dict()))
    assert data["fields"]["text"]["agreeing"] == 12
    assert "1 stages in both sources" in report.summary()


def test_crosscheck_reports_an_edited_stage(tmp_path: Path) -> None:
    avg_root, astr_root = copy_roots(tmp_path)
    file = avg_root / "obt/main/level_fx_01_beg.txt"
    file.write_text(file.read_text(encoding="utf-8").replace("再等等。", "再等一下。"), "utf-8")
    report = crosscheck(avg_root, astr_root)
    [stage] = report.disagreeing
    assert stage.stage_path == "obt/main/level_fx_01_beg"
    assert stage.category == "edit"
    assert stage.first_diff is not None and stage.first_diff.avg_text == "再等一下。"
    assert report.to_dict()["categories"] == {"edit": 1}


def test_crosscheck_records_unreadable_files(tmp_path: Path) -> None:
    avg_root, astr_root = copy_roots(tmp_path)
    (astr_root / "obt/main/level_fx_01_beg.json").write_text("{", encoding="utf-8")
    report = crosscheck(avg_root, astr_root)
    assert report.stages_compared == 0
    assert list(report.errors) == ["obt/main/level_fx_01_beg.json"]


@pytest.mark.realdata
def test_real_sources_agree_on_at_least_99_percent_of_text(real_workspace, metrics) -> None:
    """On the shared ingest of both sources (what ``arklore crosscheck`` reads by default;
    the files are parsed once for the whole suite)."""
    report = real_workspace.corpus.crosscheck()
    metrics("crosscheck: " + report.summary().replace("\n", "; "))
    # every disagreeing stage is listed with its first differing line
    assert all(cmp.first_diff is not None for cmp in report.disagreeing)
    assert report.stages_compared >= 1900
    assert report.errors == {}
    assert report.fields["text"].share >= 0.99
    assert report.fields["speaker"].share >= 0.99
    assert report.fields["kind"].share >= 0.99
