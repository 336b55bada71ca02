"""Behaviour of the evidence gates on an invented stage: each gate blocks what it should and
leaves alone what it should. ``bench/check_gate_mutants.py`` breaks each gate on purpose
and checks that this file then fails."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from support.lines import line

from arklore.core.model import DOCTOR, NICKNAME_TOKEN, Line, LineKind
from arklore.core.predicates import OTHER, PREDICATE_FAMILY, PREDICATE_NAMES
from arklore.extract.gates import (
    GatedEdge,
    check_evidence,
    evidence_basis,
    gate_edges,
    summarize,
)
from arklore.extract.presence import (
    find_letter,
    letter_addressee,
    salutation,
    signature,
    vocatives,
)
from arklore.extract.relations import EdgeProposal

STAGE = "test/act/rel_01"
N = None  # narration: nobody speaks

# An invented stage. Comments give the line_no each entry gets.
_SCRIPT: list[tuple[str | None, str]] = [
    (N, "雨后的集市还很安静。"),  # 1
    ("洛文", "米拉，过来，帮我把箱子搬进去。"),  # 2
    ("米拉", "来了来了，叔叔你又买了什么？"),  # 3
    ("洛文", "给你的生日礼物，不许偷看。"),  # 4
    (N, "两人把箱子抬进了仓库。"),  # 5
    ("赛恩", "听说洛文是那个丫头的叔叔。"),  # 6
    ("赛恩", "好了，我该走了。"),  # 7
    (N, "钟声响了三下。"),  # 8
    (N, "街上的人渐渐多了起来。"),  # 9
    (N, "一辆马车停在路边。"),  # 10
    ("赛恩", "米拉那孩子最近怎么样？"),  # 11
    (N, "没有人回答他。"),  # 12
    (N, "风把门吹得吱呀作响。"),  # 13
    ("洛文", f"{NICKNAME_TOKEN}，你来得正好。"),  # 14
    (N, "洛文招了招手。"),  # 15
    (N, "远处传来脚步声。"),  # 16
    (N, "夜色渐深。"),  # 17
    ("维嘉", "这批货我收下了。"),  # 18
    (DOCTOR, "我也来帮忙 / 先休息一下"),  # 19: a choice line
    ("维嘉", "那就麻烦你了。"),  # 20
    (N, "仓库里只剩下一盏灯。"),  # 21
    (N, "灯芯噼啪作响。"),  # 22
    (N, "亲爱的维嘉："),  # 23
    (N, "见字如面。你寄来的药草我都收到了，谢谢你。"),  # 24
    (N, "米拉"),  # 25
    ("赛恩", "老板，再来一杯。"),  # 26
    (N, "酒馆里很吵。"),  # 27
    (N, "有人在角落里唱歌。"),  # 28
    ("洛文", "赛恩，你又喝多了。"),  # 29
    (N, "窗外下起了雨。"),  # 30
    (N, "炉火快要熄了。"),  # 31
    (N, "致赛恩："),  # 32: a letter 维嘉 signs, lines 32-34
    (N, "你托我找的人，我找到了。洛文也在找他。"),  # 33
    (N, "——维嘉  1092.03"),  # 34
    (N, "赛恩读完，把信折了起来。"),  # 35: after the signature
    (N, "亲爱的洛文："),  # 36: a letter nobody signs
    (N, "我很好，勿念。"),  # 37
    (N, "窗外又下雨了。"),  # 38
    ("米拉", "叔叔，信到了吗？"),  # 39
    (N, "博士："),  # 40: a letter to the Doctor, lines 40-42
    (N, "货已经送到了，请你清点。"),  # 41
    (N, "你的维嘉"),  # 42
    (N, "亲爱的米拉："),  # 43: a letter nobody signs, then one to 阁下 维嘉 signs
    (N, "今天没什么事。"),  # 44
    (N, "阁下："),  # 45
    (N, "东西已经备好，请你放心。"),  # 46
    (N, "——维嘉"),  # 47
]
CHOICE_AT = 19
SPEAKERS = {"洛文", "米拉", "赛恩", "维嘉", DOCTOR}


LINES = [
    line(STAGE, no, DOCTOR, text, kind=LineKind.CHOICE, speaker_raw=None,
         options=tuple(text.split(" / ")), option_values=("1", "2"))
    if no == CHOICE_AT
    else line(STAGE, no, speaker, text)
    for no, (speaker, text) in enumerate(_SCRIPT, start=1)
]  # fmt: skip
BY_NO = {line.line_no: line for line in LINES}


def edge(
    subject: str,
    obj: str,
    evidence: list[tuple[Any, str]],
    *,
    claimed: str = "direct",
    predicate: str = "近亲",
    subject_kind: str = "character",
    object_kind: str = "character",
) -> EdgeProposal:
    return EdgeProposal.model_validate(
        {
            "subject": subject,
            "subject_kind": subject_kind,
            "predicate": predicate,
            "object": obj,
            "object_kind": object_kind,
            "basis_claimed": claimed,
            "evidence": [{"line_no": no, "supports": s, "note": "n"} for no, s in evidence],
            "note": "",
        }
    )


def gate(proposal: EdgeProposal, **kwargs: Any) -> GatedEdge:
    kwargs.setdefault("speakers", SPEAKERS)
    [result] = gate_edges([proposal], LINES, **kwargs)
    return result


# --- gate 1: evidence by line number -------------------------------------------------


@pytest.mark.parametrize(
    ("line_no", "reason"),
    [
        (True, "evidence_line_no_not_int"),
        (False, "evidence_line_no_not_int"),
        (3.0, "evidence_line_no_not_int"),
        (2.5, "evidence_line_no_not_int"),
        ("12", "evidence_line_no_not_int"),
        (None, "evidence_line_no_not_int"),
        ([3], "evidence_line_no_not_int"),
        (0, "evidence_out_of_range"),
        (-1, "evidence_out_of_range"),
        (len(_SCRIPT) + 1, "evidence_out_of_range"),
    ],
)
def test_gate1_drops_edge_whose_line_no_is_not_a_real_line(line_no: Any, reason: str) -> None:
    result = gate(edge("洛文", "米拉", [(line_no, "direct")]))
    assert result.verdict == "dropped"
    assert result.drop_reason == reason
    assert result.evidence_line_ids == []
    assert result.evidence[0].line_no == line_no  # kept as given, not repaired


def test_gate1_drops_edge_without_evidence() -> None:
    result = gate(edge("洛文", "米拉", []))
    assert (result.verdict, result.drop_reason) == ("dropped", "evidence_empty")


def test_gate1_one_bad_item_drops_the_whole_edge() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct"), (True, "direct")]))
    assert (result.verdict, result.drop_reason) == ("dropped", "evidence_line_no_not_int")


def test_gate1_drops_unknown_supports() -> None:
    result = gate(edge("洛文", "米拉", [(3, "strong")]))
    assert (result.verdict, result.drop_reason) == ("dropped", "unknown_supports")


def test_gate1_maps_valid_line_no_to_its_line_id() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct"), (len(_SCRIPT), "reported")]))
    assert result.verdict == "kept"
    assert result.evidence_line_ids == [BY_NO[3].line_id, BY_NO[len(_SCRIPT)].line_id]
    assert [e.line_id for e in result.evidence] == result.evidence_line_ids
    assert result.evidence_line_ids[0].startswith(f"{STAGE}#3:")


def test_gate1_direct_call_reports_first_bad_item() -> None:
    items, drop = check_evidence(edge("a", "b", [(1, "direct"), (2.0, "direct")]).evidence, BY_NO)
    assert drop is not None and drop.reason == "evidence_line_no_not_int"
    assert "2.0" in drop.detail


# --- vocabulary ---------------------------------------------------------------------


def test_unknown_predicate_is_dropped_not_mapped_to_other() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct")], predicate="叔侄"))
    assert (result.verdict, result.drop_reason) == ("dropped", "unknown_predicate")
    assert result.predicate == "叔侄"


def test_unknown_kind_is_dropped() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct")], object_kind="person"))
    assert (result.verdict, result.drop_reason) == ("dropped", "unknown_kind")


def test_unknown_basis_claimed_is_dropped() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct")], claimed="certain"))
    assert (result.verdict, result.drop_reason) == ("dropped", "unknown_basis_claimed")


def test_self_relation_is_dropped_also_through_an_alias() -> None:
    assert gate(edge("洛文", "洛文", [(3, "direct")])).drop_reason == "self_relation"
    ids = {"洛文": "char_900_lowen", "洛文叔叔": "char_900_lowen"}
    result = gate(edge("洛文", "洛文叔叔", [(3, "direct")]), resolve=ids.get)
    assert result.drop_reason == "self_relation"


def test_empty_name_is_dropped() -> None:
    assert gate(edge("  ", "米拉", [(3, "direct")])).drop_reason == "empty_name"


def test_predicate_whitelist_has_families_and_other_last() -> None:
    assert tuple(PREDICATE_FAMILY) == PREDICATE_NAMES
    assert PREDICATE_NAMES[-1] == OTHER
    assert {
        "近亲",
        "远亲",
        "同事",
        "上下级",
        "委托",
        "合作",
        "朋友",
        "敌对",
        "恋人",
        "师徒",
    } <= set(PREDICATE_NAMES)


# --- gate 2: basis from evidence -----------------------------------------------------


def test_gate2_one_reported_line_makes_a_direct_claim_reported_and_overclaimed() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct"), (4, "reported")], claimed="direct"))
    assert result.verdict == "kept"
    assert result.basis == "reported"
    assert result.basis_claimed == "direct"
    assert result.basis_overclaimed is True
    assert result.presence_downgraded is False  # gate 2 did it, not gate 3


def test_gate2_inferred_and_direct_gives_inferred() -> None:
    result = gate(edge("洛文", "米拉", [(2, "direct"), (3, "inferred")], claimed="direct"))
    assert (result.basis, result.basis_overclaimed) == ("inferred", True)


def test_gate2_honest_claim_is_not_overclaimed() -> None:
    result = gate(edge("洛文", "米拉", [(3, "direct"), (4, "reported")], claimed="reported"))
    assert (result.basis, result.basis_overclaimed) == ("reported", False)
    all_direct = gate(edge("洛文", "米拉", [(3, "direct"), (4, "direct")], claimed="direct"))
    assert (all_direct.basis, all_direct.basis_overclaimed) == ("direct", False)


def test_gate2_weakest_of_mixed_supports() -> None:
    assert evidence_basis(["direct", "reported"]) == "reported"
    assert evidence_basis(["reported", "direct", "inferred"]) == "inferred"


# --- gate 3: presence ----------------------------------------------------------------


def test_gate3_both_speaking_within_two_lines_stays_direct() -> None:
    result = gate(edge("洛文", "米拉", [(4, "direct")]))
    assert (result.basis, result.presence_ok, result.presence_downgraded) == ("direct", True, False)
    assert result.presence_reason == "both_speak"


def test_gate3_pair_too_far_apart_is_downgraded_to_reported() -> None:
    result = gate(edge("赛恩", "米拉", [(11, "direct")]))
    assert result.verdict == "kept"
    assert (result.basis, result.presence_ok, result.presence_downgraded) == (
        "reported",
        False,
        True,
    )
    assert result.basis_overclaimed is False  # the evidence said direct; presence said no


def test_gate3_pair_together_on_another_evidence_line_is_not_downgraded() -> None:
    alone = gate(edge("赛恩", "洛文", [(11, "direct")]))
    assert alone.presence_downgraded is True  # line 11 alone fails
    result = gate(edge("赛恩", "洛文", [(11, "direct"), (6, "direct")]))
    assert (result.basis, result.presence_ok, result.presence_downgraded) == ("direct", True, False)


def test_gate3_vocative_to_a_known_speaker_counts_as_presence() -> None:
    result = gate(edge("洛文", "赛恩", [(29, "direct")]))
    assert (result.basis, result.presence_reason) == ("direct", "vocative")


def test_gate3_vocative_candidate_that_is_not_a_known_speaker_is_rejected() -> None:
    proposal = edge("赛恩", "老板", [(26, "direct")], predicate="相识", object_kind="role")
    assert gate(proposal).presence_downgraded is True
    known = gate(proposal, speakers=SPEAKERS | {"老板"})
    assert (known.basis, known.presence_reason) == ("direct", "vocative")


def test_vocatives_keep_whitelisted_names_and_reject_fragments() -> None:
    assert vocatives("好了，我该走了。", SPEAKERS) == []
    assert vocatives("好了，我该走了。", SPEAKERS | {"好了"}) == ["好了"]  # only the list decides
    assert vocatives("米拉，过来，帮我。", SPEAKERS) == ["米拉"]
    assert vocatives("……米拉！", SPEAKERS) == ["米拉"]
    assert vocatives("米拉小姐，请进。", SPEAKERS) == ["米拉"]
    assert vocatives("我说过米拉会来的。", SPEAKERS) == []  # not in address position


def test_gate3_doctor_addressed_as_nickname_is_present() -> None:
    result = gate(edge("洛文", DOCTOR, [(14, "direct")], predicate="相识"))
    assert (result.basis, result.presence_reason) == ("direct", "doctor_present")


def test_gate3_doctor_present_through_a_choice_line() -> None:
    result = gate(edge(DOCTOR, "维嘉", [(20, "direct")], predicate="合作"))
    assert (result.basis, result.presence_reason) == ("direct", "doctor_present")


def test_gate3_doctor_absent_is_downgraded() -> None:
    result = gate(edge(DOCTOR, "赛恩", [(11, "direct")], predicate="相识"))
    assert (result.basis, result.presence_downgraded) == ("reported", True)


def test_gate3_narration_only_evidence_is_kept_but_never_direct() -> None:
    result = gate(edge("洛文", "米拉", [(5, "direct")]))  # both speak nearby, yet narration
    assert result.verdict == "kept"
    assert (result.basis, result.presence_downgraded) == ("reported", True)
    assert result.presence_reason == "narration_only"


def test_gate3_reported_edge_is_left_alone() -> None:
    result = gate(edge("赛恩", "米拉", [(11, "reported")], claimed="reported"))
    assert (result.basis, result.presence_downgraded) == ("reported", False)


def test_gate3_a_signed_letter_makes_its_writer_and_addressee_present() -> None:
    result = gate(edge("米拉", "维嘉", [(24, "direct")], predicate="朋友"))
    assert result.verdict == "kept"
    assert result.narration_addressee == "维嘉"
    assert (result.evidence[0].addressee, result.evidence[0].writer) == ("维嘉", "米拉")
    assert (result.basis, result.presence_reason, result.presence_downgraded) == (
        "direct",
        "letter",
        False,
    )
    # either way round, and on the salutation and the signature line too
    for no in (32, 33, 34):
        back = gate(edge("赛恩", "维嘉", [(no, "direct")], predicate="委托"))
        assert (back.basis, back.presence_reason) == ("direct", "letter"), no
    assert gate(edge("维嘉", "赛恩", [(33, "direct")], predicate="委托")).basis == "direct"


def test_gate3_a_letter_makes_nobody_else_present() -> None:
    named = gate(edge("维嘉", "洛文", [(33, "direct")], predicate="相识"))  # named in it only
    assert (named.basis, named.presence_downgraded) == ("reported", True)
    assert named.presence_reason == "narration_only"
    assert named.evidence[0].writer == "维嘉"


def test_gate3_the_line_after_a_signature_is_not_the_letter() -> None:
    result = gate(edge("维嘉", "赛恩", [(35, "direct")], predicate="委托"))
    assert (result.basis, result.presence_reason) == ("reported", "narration_only")
    assert result.evidence[0].writer is None


def test_gate3_an_unsigned_letter_stays_narration_only() -> None:
    result = gate(edge("米拉", "洛文", [(37, "direct")], predicate="近亲"))
    assert (result.basis, result.presence_reason) == ("reported", "narration_only")
    assert (result.narration_addressee, result.evidence[0].writer) == ("洛文", None)


def test_gate3_a_letter_to_the_doctor_signed_yours() -> None:
    result = gate(edge("维嘉", DOCTOR, [(41, "direct")], predicate="合作"))
    assert (result.basis, result.presence_reason) == ("direct", "letter")
    assert find_letter(BY_NO[41], BY_NO, SPEAKERS, lambda n: None) is not None


def test_a_letter_ends_where_another_salutation_begins() -> None:
    assert find_letter(BY_NO[44], BY_NO, SPEAKERS, lambda n: None) is None  # unsigned
    assert find_letter(BY_NO[46], BY_NO, SPEAKERS, lambda n: None) is None  # to 阁下
    result = gate(edge("维嘉", "米拉", [(44, "direct")], predicate="朋友"))
    assert (result.basis, result.presence_reason) == ("reported", "narration_only")


def test_a_letter_runs_from_its_salutation_to_its_first_signature() -> None:
    letter = find_letter(BY_NO[33], BY_NO, SPEAKERS, lambda n: None)
    assert letter is not None
    assert (letter.start, letter.end, letter.addressee, letter.writer) == (32, 34, "赛恩", "维嘉")
    assert find_letter(BY_NO[37], BY_NO, SPEAKERS, lambda n: None) is None  # no signature
    assert find_letter(BY_NO[12], BY_NO, SPEAKERS, lambda n: None) is None  # no salutation


@pytest.mark.parametrize(
    ("text", "writer"),
    [
        ("——维嘉", "维嘉"),
        ("————维嘉。", "维嘉"),
        ("——维嘉  1092.03", "维嘉"),
        ("你的维嘉", "维嘉"),
        ("故友维嘉敬上", "维嘉"),
        ("维嘉", "维嘉"),
        ("——塔洛斯", "塔洛斯"),  # an operator the alias table knows, not a speaker
        ("维嘉来了。", None),  # a sentence
        ("——我早已做出了选择。", None),
        ("——", None),
        ("你的名字，意味着草原。", None),
        ("——一位朋友", None),  # not a known name
    ],
)
def test_a_signature_names_a_known_person_and_no_sentence(text: str, writer: str | None) -> None:
    assert signature(text, SPEAKERS, {"塔洛斯": "c1"}.get) == writer


def test_a_salutation_by_full_name_addresses_her_given_name() -> None:
    assert salutation("致维嘉·卡斯特：", SPEAKERS, lambda n: None) == "维嘉"
    assert salutation("注意：", SPEAKERS, lambda n: None) is None


def test_letter_addressee_needs_a_known_name() -> None:
    unknown = Line(STAGE, 40, LineKind.NARRATION, "亲爱的朋友：")
    assert letter_addressee(unknown, {40: unknown}, SPEAKERS, lambda n: None) is None
    by_resolve = Line(STAGE, 41, LineKind.NARRATION, "致塔洛斯：")
    found = letter_addressee(by_resolve, {41: by_resolve}, SPEAKERS, {"塔洛斯": "c1"}.get)
    assert found == "塔洛斯"


def test_same_person_callback_matches_an_alias_to_the_speaker() -> None:
    proposal = edge("洛文", "小米", [(4, "direct")])
    assert gate(proposal).presence_downgraded is True
    aliases = {"小米": "米拉"}
    same = gate(proposal, same_person=lambda a, b: aliases.get(a, a) == aliases.get(b, b))
    assert (same.basis, same.presence_ok) == ("direct", True)
    ids = {"小米": "char_901_mira", "米拉": "char_901_mira"}
    by_id = gate(proposal, resolve=ids.get)  # default same_person compares resolved ids
    assert (by_id.basis, by_id.object_id) == ("direct", "char_901_mira")


# --- the record ----------------------------------------------------------------------


def test_names_resolve_to_ids_and_npcs_stay_null() -> None:
    result = gate(edge("洛文", "米拉", [(4, "direct")]), resolve={"洛文": "char_900_lowen"}.get)
    assert (result.subject_id, result.object_id) == ("char_900_lowen", None)


def test_every_proposal_comes_back_in_order_with_stage_model_and_prompt_version() -> None:
    proposals = [edge("洛文", "米拉", [(4, "direct")]), edge("洛文", "米拉", [])]
    results = gate_edges(proposals, LINES, speakers=SPEAKERS, model="m-1")
    assert [r.verdict for r in results] == ["kept", "dropped"]
    record = results[0].to_dict()
    orjson.dumps(record)
    for key in (
        "subject", "subject_kind", "subject_id", "predicate", "object", "object_kind",
        "object_id", "basis", "basis_claimed", "basis_overclaimed", "presence_ok",
        "presence_downgraded", "evidence", "evidence_line_ids", "stage", "model",
        "prompt_version", "note",
    ):  # fmt: skip
        assert key in record
    assert (record["stage"], record["model"], record["prompt_version"]) == (
        STAGE,
        "m-1",
        "relations-v1",
    )
    assert set(record["evidence"][0]) >= {"line_id", "line_no", "supports", "note"}


def test_summarize_counts_verdicts_bases_and_other_share() -> None:
    results = gate_edges(
        [
            edge("洛文", "米拉", [(4, "direct")]),
            edge("赛恩", "米拉", [(11, "direct")], predicate=OTHER),
            edge("洛文", "米拉", [(3, "direct"), (4, "reported")]),
            edge("洛文", "米拉", [("3", "direct")]),
            edge("洛文", "米拉", [(3, "direct")], predicate="叔侄"),
        ],
        LINES,
        speakers=SPEAKERS,
    )
    summary = summarize(results)
    assert (summary["total"], summary["kept"], summary["dropped"]) == (5, 3, 2)
    assert summary["drop_reasons"] == {"evidence_line_no_not_int": 1, "unknown_predicate": 1}
    assert summary["basis"] == {"direct": 1, "reported": 2}
    assert (summary["basis_overclaimed"], summary["presence_downgraded"]) == (1, 1)
    assert (summary["other"], summary["other_share"]) == (1, pytest.approx(1 / 3))
