"""The deterministic checks on proposed story events, on an invented stage: each check blocks
what it should and leaves alone what it should. ``bench/check_gate_mutants.py`` breaks each
check on purpose and verifies that this file then fails."""

from __future__ import annotations

from typing import Any

import pytest

from arklore.core.errors import ResponseShapeError
from arklore.core.model import DOCTOR, NICKNAME_TOKEN, Branch, Line, LineKind
from arklore.events.checks import (
    CheckedEvent,
    branch_info,
    check_range,
    check_stage,
    check_time_hint,
    first_person,
    summarize,
)
from arklore.extract.events import EventProposal, parse_data, parse_response

STAGE = "test/act/ev_01"
N = None

# (speaker, text, branch) — an invented stage; comments give each line's number.
_SCRIPT: list[tuple[str | None, str, str | None]] = [
    (N, "夜色笼罩着港口。", None),  # 1
    ("「洛文」", "米拉，货船几点靠岸？", None),  # 2: speaker written with quotes
    ("米拉", f"三点。{NICKNAME_TOKEN}也在等。", None),  # 3: the Doctor, only by nickname
    (N, "两个小时过去了。", None),  # 4
    ("洛文", "船来了。", None),  # 5
    ("赛恩", "我去叫人卸货。", None),  # 6
    (N, "第三天清晨，仓库的门开了。", None),  # 7
    ("维嘉", "这批货我收下了。", None),  # 8
    (DOCTOR, "帮忙搬货 / 先休息", None),  # 9: a choice (Decision)
    ("维嘉", "那就一起搬吧。", "9:1"),  # 10: option 1
    ("维嘉", "那你先歇着。", "9:2"),  # 11: option 2
    ("维嘉", "走吧。", "9:1;2"),  # 12: after either option
    ("赛恩", "维嘉，等等我。", None),  # 13
    (N, "雨停了。", None),  # 14
]

IDS = {"洛文": "char_901_lowen", "米拉": "char_902_mira", "维嘉": "char_903_vega"}


def _lines() -> list[Line]:
    out = []
    for no, (speaker, text, branch) in enumerate(_SCRIPT, 1):
        kind = LineKind.NARRATION if speaker is None else LineKind.DIALOGUE
        options: tuple[str, ...] = ()
        if speaker == DOCTOR:
            kind, options = LineKind.CHOICE, tuple(text.split(" / "))
        name = (speaker or "").strip("「」")
        out.append(
            Line(
                STAGE,
                no,
                kind,
                text,
                speaker=name,
                speaker_raw=speaker,
                branch=Branch.from_key(branch),
                addresses_doctor=NICKNAME_TOKEN in text,
                options=options,
                option_values=("1", "2") if options else (),
            )
        )
    return out


LINES = _lines()
SPEAKERS = {"洛文", "米拉", "赛恩", "维嘉", DOCTOR}


def ev(**kw: Any) -> EventProposal:
    base: dict[str, Any] = {
        "phase": "经过",
        "summary": "洛文和米拉在港口等船。",
        "actors": [],
        "memories": {},
        "time_hint": None,
        "line_start": 1,
        "line_end": 5,
    }
    return EventProposal.model_validate(base | kw)


def check(*proposals: EventProposal, first: int = 1, last: int = len(LINES)) -> CheckedEvent:
    (out,) = check_stage(
        STAGE, [(0, first, last, list(proposals))], LINES, speakers=SPEAKERS, resolve=IDS.get
    )
    return out


def memory(event: CheckedEvent, actor: str):
    (m,) = [m for m in event.memories if m.actor == actor]
    return m


# --- the mixed answer ----------------------------------------------------------------


def test_mixed_event_present_absent_quoted_doctor_third_person_and_hint() -> None:
    e = check(
        ev(
            actors=["「洛文」", "米拉", "博士", "维嘉"],
            memories={
                "“洛文”": "我在港口问米拉货船几点靠岸。",  # quoted key: normalized
                "米拉": "洛文问米拉船几点到。",  # third person: flagged, not rewritten
                "Dr.{@nickname}": "我和米拉一起在港口等船。",  # the Doctor, by nickname only
                "维嘉": "我在港口看着船靠岸。",  # not in lines 1-5: dropped
            },
            time_hint="两个小时",
        )
    )
    assert e.kept and (e.line_start, e.line_end) == (1, 5)
    assert e.line_ids == [ln.line_id for ln in LINES[:5]]
    actors = {a.name: a for a in e.actors}
    assert set(actors) == {"洛文", "米拉", DOCTOR, "维嘉"}
    assert actors["洛文"].actor_id == "char_901_lowen" and actors["洛文"].presence == "speaks"
    assert actors[DOCTOR].present and actors[DOCTOR].presence == "nickname"
    assert actors[DOCTOR].evidence_line_ids == [LINES[2].line_id]
    assert not actors["维嘉"].present and actors["维嘉"].presence is None

    lowen = memory(e, "洛文")
    assert lowen.usable and lowen.written_as == "“洛文”" and lowen.actor_id == "char_901_lowen"
    assert lowen.evidence_line_ids == [LINES[1].line_id, LINES[4].line_id]
    mira = memory(e, "米拉")
    assert mira.kept and mira.person == "third" and "third_person" in mira.flags
    assert mira.text == "洛文问米拉船几点到。" and not mira.usable  # never rewritten
    doctor = memory(e, DOCTOR)
    assert doctor.usable and doctor.presence == "nickname" and doctor.doctor
    vega = memory(e, "维嘉")
    assert not vega.kept and vega.drop_reason == "not_present" and vega.evidence_line_ids == []
    assert e.time_hint == "两个小时" and e.time_hint_verdict == "ok"

    s = summarize([e])
    assert (s["memories"], s["dropped_memories"], s["third_person"]) == (3, 1, 1)
    assert s["memory_drop_reasons"] == {"not_present": 1}


def test_addressed_by_a_whitelisted_vocative_is_presence() -> None:
    # line 2: 洛文 says "米拉，..." -> 米拉 is present in line 2 alone by being addressed
    e = check(ev(actors=["米拉"], memories={"米拉": "洛文叫住了我。"}, line_start=2, line_end=2))
    assert memory(e, "米拉").usable and memory(e, "米拉").presence == "addressed"
    # narration never makes anyone present, even naming her
    e = check(ev(actors=["洛文"], memories={"洛文": "我看着夜色。"}, line_start=1, line_end=1))
    assert memory(e, "洛文").drop_reason == "not_present"


def test_a_memory_of_someone_not_listed_as_actor_is_still_judged() -> None:
    e = check(ev(actors=["洛文"], memories={"赛恩": "我去叫人卸货。"}, line_start=5, line_end=6))
    m = memory(e, "赛恩")
    assert m.usable and "not_in_actors" in m.flags
    e = check(ev(actors=["洛文"], memories={"维嘉": "我也在。"}, line_start=5, line_end=6))
    assert memory(e, "维嘉").drop_reason == "not_present"


def test_doctor_present_by_a_choice_and_absent_otherwise() -> None:
    e = check(ev(memories={"博士": "我决定去帮忙。"}, line_start=8, line_end=9))
    assert memory(e, DOCTOR).usable and memory(e, DOCTOR).presence == "choice"
    e = check(ev(memories={"博士": "我在仓库里。"}, line_start=12, line_end=14))
    assert memory(e, DOCTOR).drop_reason == "not_present"


def test_empty_name_or_text_is_dropped() -> None:
    e = check(ev(memories={"": "我在。", "洛文": "  "}))
    reasons = sorted(m.drop_reason or "" for m in e.memories)
    assert reasons == ["empty_name", "empty_text"]


def test_pure_narration_event_has_no_actors() -> None:
    e = check(ev(summary="雨停了。", line_start=14, line_end=14))
    assert e.kept and e.actors == [] and e.memories == []
    assert summarize([e])["pure_narration"] == 1


# --- first person --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("我在港口等船。", True),
        ("我们一起把货搬进了仓库。", True),  # a group memory
        ("洛文在港口等船。", False),
        ("他在港口等船。", False),
        ("", False),
    ],
)
def test_first_person_guard(text: str, ok: bool) -> None:
    assert first_person(text) is ok


# --- time hints ----------------------------------------------------------------------


def test_time_hint_must_be_verbatim_in_the_event_lines() -> None:
    assert check_time_hint("第三天清晨", LINES[6:8]) == ("第三天清晨", "ok")
    assert check_time_hint("第三天早上", LINES[6:8]) == (None, "not_in_text")
    assert check_time_hint("两个小时", LINES[6:8]) == (None, "not_in_text")  # another event's
    assert check_time_hint(None, LINES) == (None, "none")
    assert check_time_hint("  ", LINES) == (None, "none")
    e = check(ev(time_hint="第二天", line_start=7, line_end=8))
    assert e.time_hint is None and e.time_hint_claimed == "第二天"
    assert e.time_hint_verdict == "not_in_text" and e.kept
    assert summarize([e])["dropped_time_hints"] == 1


# --- ranges --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["3", 3.0, True, None, [3]])
def test_range_must_be_real_ints(bad: object) -> None:
    e = check(ev(line_start=bad, memories={"洛文": "我在港口。"}))
    assert not e.kept and e.drop_reason == "range_not_int" and e.memories == []


def test_range_clamped_to_the_chunk_reversed_swapped_outside_dropped() -> None:
    assert check_range(3, 99, 1, 14) == (3, 14, ["clamped"], None)
    assert check_range(0, 4, 2, 14) == (2, 4, ["clamped"], None)
    assert check_range(6, 2, 1, 14) == (2, 6, ["reversed_range"], None)
    s, e, _, drop = check_range(20, 30, 1, 14)
    assert (s, e) == (None, None) and drop is not None and drop[0] == "range_outside"
    clamped = check(ev(line_start=12, line_end=400))
    assert clamped.kept and (clamped.line_start, clamped.line_end) == (12, 14)
    assert "clamped" in clamped.flags and clamped.range_claimed == [12, 400]
    # the model saw lines 1-8 only: a range into lines it never saw is clamped to them
    seen = check(ev(line_start=6, line_end=12), first=1, last=8)
    assert (seen.line_start, seen.line_end) == (6, 8)


# --- choice branches -----------------------------------------------------------------


def test_alternative_branches_are_flagged_not_a_sequence() -> None:
    keys, alts = branch_info(LINES[9:12])
    assert keys == ["9:1", "9:2", "9:1;2"] and alts == [9]
    assert branch_info([LINES[9], LINES[11]]) == (["9:1", "9:1;2"], [])  # one path: fine
    e = check(ev(line_start=9, line_end=12))
    assert e.alternatives == [9] and "alternative_branches" in e.flags
    one = check(ev(line_start=9, line_end=10))
    assert one.alternatives == [] and one.branches == ["9:1"]


# --- chunks --------------------------------------------------------------------------


def test_events_from_overlapping_chunks_merge_into_one_happening() -> None:
    # chunk 0 saw lines 1-8, chunk 1 saw lines 6-14: the unloading (5-9) crosses the border
    chunk0 = [
        ev(summary="洛文和米拉在港口等船。", line_start=1, line_end=4,
           memories={"洛文": "我在港口等船。"}),
        ev(summary="船靠岸后赛恩去叫人卸货。", line_start=5, line_end=8, phase="转折",
           actors=["洛文", "赛恩", "维嘉"],
           memories={"赛恩": "船靠岸后我去叫人卸货。", "维嘉": "我收下了这批货。"}),
    ]  # fmt: skip
    chunk1 = [
        ev(summary="维嘉收下货物，博士选择帮忙。", line_start=6, line_end=10, phase="结果",
           actors=["维嘉", "博士"],
           memories={"维嘉": "我收下货，还请博士帮忙搬。", "博士": "我选择了帮忙搬货。"}),
        ev(summary="赛恩叫住维嘉。", line_start=13, line_end=14, memories={"赛恩": "我叫住了维嘉。"}),
    ]  # fmt: skip
    out = check_stage(
        STAGE, [(0, 1, 8, chunk0), (1, 6, 14, chunk1)], LINES, speakers=SPEAKERS, resolve=IDS.get
    )
    kept = [e for e in out if e.kept]
    assert [(e.line_start, e.line_end) for e in kept] == [(1, 4), (5, 10), (13, 14)]
    merged = kept[1]
    assert merged.merged_from == 2 and merged.chunks == [0, 1] and "merged" in merged.flags
    # one memory per actor: the two tellings of 维嘉's happening are one memory
    assert sorted(m.actor for m in merged.memories) == [DOCTOR, "维嘉", "赛恩"]
    vega = memory(merged, "维嘉")
    assert vega.text == "我收下了这批货。我收下货，还请博士帮忙搬。" and vega.usable
    assert merged.summary.startswith("船靠岸后赛恩去叫人卸货。")
    assert merged.phase == "结果"  # the longest part (6-10) decides
    assert {a.name for a in merged.actors} == {"洛文", "赛恩", "维嘉", DOCTOR}
    assert [e.idx for e in out] == [0, 1, 2]


def test_a_range_covered_by_the_other_chunk_is_not_told_twice() -> None:
    a = [ev(summary="赛恩去叫人卸货。", line_start=6, line_end=7, memories={"赛恩": "我去叫人。"})]
    b = [ev(summary="卸货。", line_start=5, line_end=8, memories={"赛恩": "我去叫人卸货。"})]
    out = check_stage(STAGE, [(0, 1, 7, a), (1, 5, 14, b)], LINES, speakers=SPEAKERS)
    (e,) = out
    assert (e.line_start, e.line_end) == (5, 8) and e.summary == "卸货。"
    assert [m.text for m in e.memories] == ["我去叫人卸货。"]


def test_events_of_one_chunk_are_never_merged() -> None:
    answer = [ev(line_start=1, line_end=5), ev(line_start=4, line_end=8)]
    out = check_stage(STAGE, [(0, 1, 14, answer)], LINES, speakers=SPEAKERS)
    assert [(e.line_start, e.line_end, e.merged_from) for e in out] == [(1, 5, 1), (4, 8, 1)]


# --- the response shape --------------------------------------------------------------


def test_memories_must_be_keyed_by_actor_never_a_list() -> None:
    good = {"events": [{"phase": "经过", "summary": "s", "actors": ["甲"],
                        "memories": {"甲": "我在。"}, "time_hint": None,
                        "line_start": 1, "line_end": 2}]}  # fmt: skip
    assert parse_data(good).events[0].memories == {"甲": "我在。"}
    bad = {"events": [{**good["events"][0], "memories": ["我在。"]}]}
    with pytest.raises(ResponseShapeError, match="wrong shape"):  # the relations task's error
        parse_data(bad)
    with pytest.raises(ResponseShapeError, match="not JSON"):
        parse_response('{"events": [')
    # line numbers are never coerced by the shape: the range check sees them as given
    loose = {"events": [{**good["events"][0], "line_start": "1"}]}
    assert parse_data(loose).events[0].line_start == "1"
