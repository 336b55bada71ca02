"""What the real corpus holds after ingest: popup speech, the scripts left without a line and
why, and the parse warnings per kind. Real data only (skipped without it)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from arklore.corpus.store import Store
from arklore.sources import avg
from arklore.sources._commands import warning_kind

pytestmark = pytest.mark.realdata


def test_popup_speech_is_ingested_with_avatar_speakers(real_store_path: Path, metrics) -> None:
    with Store(real_store_path) as store:
        rows = store.conn.execute(
            "SELECT l.stage_path, l.kind, l.uncertain, l.figure_art, i.char_id FROM lines l"
            " JOIN speakers s ON s.name = l.speaker"
            " LEFT JOIN speaker_ids i ON i.speaker = s.name"
            " WHERE l.source = 'avg' AND l.speaker LIKE '$avatar%'"
        ).fetchall()
        astr_paths = set(store.stage_paths("astr"))
    stages = {r[0] for r in rows}
    resolved = sum(1 for r in rows if r[4] is not None)
    metrics(
        f"popup speech: {len(rows):,} lines in {len(stages)} raw scripts, "
        f"{resolved:,} spoken by an operator the avatar id resolves to"
    )
    assert len(rows) >= 1700 and len(stages) >= 500
    assert {(r[1], r[2], r[3]) for r in rows} == {("dialogue", 1, None)}
    assert resolved >= 1200
    # ASTR holds none of these stages, so the two sources still number the same lines
    assert not stages & astr_paths


def _why_empty(text: str) -> str:
    """Why a raw script gives no line: the text it shows belongs to no line kind."""
    trailing: set[str] = set()
    for _no, line in avg._physical_lines(text):
        tag = avg._TAG.match(line)
        if tag and line[tag.end() :].strip():
            call = avg._CALL.fullmatch(tag.group(1))
            trailing.add(call.group(1).lower() if call else "?")
        elif line and not line.startswith(("[", "//")):
            trailing.add("bare text")
    if "tutorial" in trailing:
        return "tutorial hints only"
    if trailing <= {"header"}:
        return "header title only" if trailing else "commands only"
    return "other: " + "/".join(sorted(trailing))


def test_scripts_left_without_lines_hold_no_story_text(
    real_store_path: Path, gamedata_root: Path, metrics
) -> None:
    story = gamedata_root / "zh_CN/gamedata/story"
    with Store(real_store_path) as store:
        empty = store.conn.execute(
            "SELECT source_path FROM stages WHERE source = 'avg' AND line_count = 0"
        ).fetchall()
        total = store.conn.execute("SELECT count(*) FROM stages WHERE source = 'avg'").fetchone()
    reasons = Counter(
        _why_empty((story / rel).read_bytes().decode("utf-8-sig")) for (rel,) in empty
    )
    metrics(f"raw scripts with no line: {len(empty)} of {total[0]}: {dict(reasons)}")
    assert set(reasons) <= {"tutorial hints only", "header title only", "commands only"}
    assert len(empty) <= 300


def test_parse_warnings_per_kind(real_store_path: Path, metrics) -> None:
    """Counted on the shared ingest, which keeps every stage's parse warnings."""
    counts: dict[str, Counter[str]] = {"avg": Counter(), "astr": Counter()}
    warned: dict[str, set[str]] = {"avg": set(), "astr": set()}
    with Store(real_store_path) as store:
        rows = store.conn.execute("SELECT source, stage_path, warning FROM parse_warnings")
        for src, stage_path, warning in rows:
            counts[src][warning_kind(warning)] += 1
            warned[src].add(stage_path)
    for src, c in counts.items():
        metrics(f"parse warnings {src}: {sum(c.values())} in {len(warned[src])} stages: {dict(c)}")
    assert "other" not in counts["avg"] and "other" not in counts["astr"]
    # no Predicate of the real scripts names an option no Decision offers
    assert counts["avg"]["predicate_unknown_option"] == 0
    assert sum(counts["avg"].values()) <= 100
    # the shared checks warn alike: every ASTR warning is a Decision the raw script has too
    assert set(counts["astr"]) <= {"decision_options_values_mismatch"}
    assert warned["astr"] <= warned["avg"]
