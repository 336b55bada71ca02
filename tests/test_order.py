"""Principal speakers and the release-order key."""

from __future__ import annotations

from pathlib import Path

import pytest

from arklore.core.model import Line, LineKind, Source, Stage
from arklore.corpus.order import (
    PRINCIPAL_MIN_LINES,
    PRINCIPAL_MIN_SHARE,
    main_chapter,
    order_key,
    order_rank,
    principal_speakers,
    record_owner,
)
from arklore.sources.gamedata import StageMeta, load_stage_meta

EXCEL = Path(__file__).parent / "fixtures" / "excel"


def _lines(counts: dict[str, int], narration: int = 0) -> list[Line]:
    out = []
    for speaker, n in counts.items():
        out += [Line("s", 0, LineKind.DIALOGUE, "…", speaker=speaker) for _ in range(n)]
    out += [Line("s", 0, LineKind.NARRATION, "…") for _ in range(narration)]
    out += [Line("s", 0, LineKind.CHOICE, "…", speaker="博士") for _ in range(200)]
    return out


def test_thresholds_are_the_upstream_ones() -> None:
    assert (PRINCIPAL_MIN_SHARE, PRINCIPAL_MIN_LINES) == (0.04, 30)


def test_principal_speakers_need_both_share_and_line_count() -> None:
    # 1000 attributed lines: B has 35 (3.5%), C 40 (exactly 4%), D 25 (too few)
    lines = _lines({"A": 900, "B": 35, "C": 40, "D": 25}, narration=500)
    assert principal_speakers(lines) == ["A", "C"]
    small = _lines({"A": 20, "B": 10})  # big shares, too few lines
    assert principal_speakers(small) == []
    assert principal_speakers([]) == []


def test_principal_speakers_ignore_choices_and_narration() -> None:
    lines = _lines({"A": 30}, narration=10_000)
    assert principal_speakers(lines) == ["A"]


def test_main_chapter_from_event_or_path() -> None:
    assert main_chapter("obt/main/level_st_07-01") == 7
    assert main_chapter("obt/main/level_spst_16-02") == 16
    assert main_chapter("obt/main/level_main_9_chapter_recap") == 9
    assert main_chapter("obt/main/main_10_zone_enter") == 10
    assert main_chapter("obt/record/main_12/text_note_1") == 12
    assert main_chapter("obt/main/x", StageMeta(event_id="main_2")) == 2
    assert main_chapter("activities/act9x/level_main_01-01") is None


def test_record_owner_is_the_char_key() -> None:
    assert record_owner("obt/memory/story_amiya_1_1") == "amiya"
    assert record_owner("obt/memory/story_12fce_2_3") == "12fce"
    assert record_owner("obt/main/level_main_01-01_beg") is None


def test_order_main_chapters_then_events_by_start_then_records_then_rest() -> None:
    metas = load_stage_meta(EXCEL)
    paths = [
        "obt/tutorial/tut_01",
        "obt/memory/story_testop_1_1",
        "activities/act9x/level_act9x_01_end",
        "activities/act9x/level_act9x_01_beg",
        "activities/zz001/level_zz001_01_beg",
        "obt/main/level_main_02-01_beg",
        "obt/main/level_main_01-01_end",
        "obt/main/level_main_01-01_beg",
    ]
    rank = order_rank(paths, metas)
    assert sorted(paths, key=rank.__getitem__) == list(reversed(paths))


def test_records_group_per_operator_in_set_order() -> None:
    paths = ["obt/memory/story_b_1_1", "obt/memory/story_a_2_1", "obt/memory/story_a_1_2"]
    keys = sorted(paths, key=lambda p: order_key(p, None))
    assert keys == ["obt/memory/story_a_1_2", "obt/memory/story_a_2_1", "obt/memory/story_b_1_1"]


def test_order_rank_reads_stage_fields_and_is_deterministic() -> None:
    early = Stage(
        "activities/e1/a", Source.AVG, "a.txt", event_id="e1", entry_type="ACTIVITY", start_time=1
    )
    late = Stage(
        "activities/e2/a", Source.AVG, "a.txt", event_id="e2", entry_type="ACTIVITY", start_time=2
    )
    undated = Stage("activities/e3/a", Source.AVG, "a.txt", event_id="e3", entry_type="ACTIVITY")
    rank = order_rank([undated, late, early])
    assert rank == {"activities/e1/a": 0, "activities/e2/a": 1, "activities/e3/a": 2}
    assert order_rank([late, early, undated]) == rank


@pytest.mark.realdata
def test_real_order_puts_chapter_1_before_2_and_events_by_start(gamedata_root: Path) -> None:
    root = gamedata_root / "zh_CN/gamedata"
    metas = load_stage_meta(root / "excel")
    rank = order_rank(list(metas), metas)
    assert rank["obt/main/level_main_01-01_beg"] < rank["obt/main/level_main_02-01_beg"]
    assert rank["obt/main/level_main_01-01_beg"] < rank["obt/main/level_main_01-01_end"]
    firsts: dict[str, tuple[int, int]] = {}
    for path, m in metas.items():
        if m.entry_type in ("ACTIVITY", "MINI_ACTIVITY") and m.start_time:
            first = firsts.get(m.event_id or "")
            if first is None or rank[path] < first[1]:
                firsts[m.event_id or ""] = (m.start_time, rank[path])
    by_rank = sorted(firsts.values(), key=lambda t: t[1])
    assert [t for t, _ in by_rank] == sorted(t for t, _ in by_rank)
    assert len(by_rank) >= 50
