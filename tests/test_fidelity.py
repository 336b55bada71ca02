"""The fidelity eval (``chat/fidelity.py``): the shipped set's shape, the loader's one-line
errors, the scorer on the invented knowledge base (each kind passes and fails), the answer
mode against the local stub model, and `eval fidelity`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer
from support.llm_stub import Reply, StubServer, make_llm, stub_env
from support.service_world import S1, S2, S3, lid, make_kb
from typer.testing import CliRunner

from arklore.chat.fidelity import (
    ARCHIVE_CITE,
    KINDS,
    VOICE_CITE,
    Item,
    answer,
    chat_completer,
    is_right,
    load_items,
    missing_cites,
    score,
    store_line_speaker,
)
from arklore.cli import evaluate
from arklore.cli._common import close_workspace
from arklore.core.errors import (
    ArkloreError,
    InputFileError,
    NotIngestedError,
    PermanentLLMError,
)
from arklore.core.model import parse_line_id
from arklore.workspace import Workspace

SHIPPED = load_items()


# -- the shipped set ------------------------------------------------------------------------
def test_shipped_set_covers_every_kind_and_thirty_operators() -> None:
    kinds = Counter(it.kind for it in SHIPPED)
    assert len(SHIPPED) >= 90 and set(kinds) == set(KINDS)
    # the form for the Doctor: only 11 operators' voice lines use one other than 博士
    assert all(n >= (11 if kind == "address" else 12) for kind, n in kinds.items()), kinds
    assert len({it.operator for it in SHIPPED}) >= 30
    assert sum(it.qa is not None for it in SHIPPED) >= 10
    recent = ("act46side", "act49side", "act50side", "act51side")  # events of 2025-2026
    assert sum(any(r in c for c in it.cites for r in recent) for it in SHIPPED) >= 4
    for it in SHIPPED:
        assert it.cites and it.note.strip()
        for c in it.cites:
            if not c.startswith((VOICE_CITE, ARCHIVE_CITE)):  # her voice line, her archive
                parse_line_id(c)


def test_anchor_messages_name_nobody_and_kinship_messages_use_no_expected_name() -> None:
    for it in SHIPPED:
        if it.kind in ("anchor", "kinship_word"):
            names = it.expect.get("anchor") or it.expect["relation"]
            assert not any(n in it.message for n in names), it.id


# -- the loader -----------------------------------------------------------------------------
GOOD = {
    "id": "x1",
    "operator": "阿米娅",
    "message": "你好",
    "kind": "doctor",
    "expect": {"doctor": True},
    "note": "n",
    "cites": [lid(S1, 2)],
}


def _write(tmp_path: Path, *records: Any) -> Path:
    p = tmp_path / "set.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "note"}, "missing note"),
        (GOOD | {"colour": "red"}, "unknown field colour"),
        (GOOD | {"kind": "vibes"}, "unknown kind 'vibes'"),
        (GOOD | {"message": "  "}, "message must be a non-empty string"),
        (GOOD | {"expect": {"doctor": False}}, "expect.doctor must be true"),
        (GOOD | {"expect": {"relation": ["陈"]}}, "needs doctor"),
        (GOOD | {"kind": "anchor", "expect": {"anchor": []}}, "expect.anchor must not be empty"),
        (GOOD | {"kind": "memory", "expect": {"stages": [S1], "k": 3}}, "unknown key k"),
        (
            GOOD | {"kind": "voice", "expect": {"exemplars_min": 0, "stages": [S1]}},
            "exemplars_min must be an integer >= 1",
        ),
        (GOOD | {"cites": ["obt/main/x#3"]}, "is not a line id"),
        (GOOD | {"cites": []}, "cites must not be empty"),
        (GOOD | {"qa": {"question": "谁？"}}, "qa must be"),
        (GOOD | {"qa": {"question": "谁？", "accept": []}}, "qa.accept must not be empty"),
    ],
)
def test_a_malformed_line_is_one_line_error_naming_it(tmp_path: Path, bad: Any, says: str) -> None:
    p = _write(tmp_path, GOOD | {"id": "ok"}, "", bad)
    with pytest.raises(InputFileError) as exc:
        load_items(p)
    msg = exc.value.one_line()
    assert "line 3" in msg and says in msg and "\n" not in msg, msg


def test_a_repeated_id_names_both_lines(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="line 2: id 'x1' already used on line 1"):
        load_items(_write(tmp_path, GOOD, GOOD))


def test_missing_or_empty_set_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ArkloreError, match="no fidelity eval set"):
        load_items(tmp_path / "nope.jsonl")
    with pytest.raises(InputFileError, match="holds no item"):
        load_items(_write(tmp_path, ""))


def test_a_good_line_loads_with_its_qa(tmp_path: Path) -> None:
    rec = GOOD | {"qa": {"question": "你是谁？", "accept": ["阿米娅"]}}
    (item,) = load_items(_write(tmp_path, rec))
    assert item.to_dict() == rec and item.line == 1


# -- the scorer on the invented knowledge base ---------------------------------------------
@pytest.fixture(scope="module")
def kb_ws(tmp_path_factory: pytest.TempPathFactory):
    from support.service_world import kb_workspace

    home = make_kb(tmp_path_factory.mktemp("fid") / "home")
    ws = kb_workspace(home, tier_c_relations=True)
    yield ws
    ws.close()


def _item(kind: str, op: str, message: str, expect: dict[str, Any], id: str = "t") -> Item:
    return Item(id, op, message, kind, expect, "n", (lid(S1, 2),))


def _turn(
    ws: Workspace, extra: dict[str, dict[str, Any]] | None = None
) -> Callable[[str, str], dict[str, Any]]:
    """The workspace's turn as a dict, with invented blocks added (blocks not built yet)."""

    def turn(op: str, message: str) -> dict[str, Any]:
        d = ws.chat.turn(op, message).to_dict()
        for name, block in (extra or {}).items():
            d["blocks"] = [b for b in d["blocks"] if b["name"] != name]
            d["blocks"].append({"name": name, "empty": not block.get("text"), **block})
        return d

    return turn


def _one(ws, item: Item, extra=None) -> tuple[bool, str]:
    r = score([item], _turn(ws, extra), store_line_speaker(ws.corpus.store(), ws.names)).results[0]
    return r.passed, r.reason


def test_relation_named_passes_for_a_named_relation_and_fails_for_a_stranger(kb_ws) -> None:
    ok = _one(kb_ws, _item("relation_named", "阿米娅", "星熊最近好吗？", {"relation": ["星熊"]}))
    assert ok == (True, "星熊 among relations")
    no = _one(
        kb_ws, _item("relation_named", "阿米娅", "独行者最近好吗？", {"relation": ["独行者"]})
    )
    assert not no[0] and "none of 独行者 among relations: 凯尔希, 特蕾西娅, 陈" in no[1]


def test_kinship_word_fails_when_the_person_meant_is_not_injected(kb_ws) -> None:
    ok = _one(kb_ws, _item("kinship_word", "阿米娅", "老师最近忙吗？", {"relation": ["凯尔希"]}))
    assert ok[0]
    no = _one(kb_ws, _item("kinship_word", "阿米娅", "你舅舅最近忙吗？", {"relation": ["星熊"]}))
    assert not no[0] and "none of 星熊" in no[1]


def test_anchor_counts_anchors_only(kb_ws) -> None:
    assert _one(kb_ws, _item("anchor", "阿米娅", "最近怎么样？", {"anchor": ["特蕾西娅"]}))[0]
    # 星熊 is injected as a contextual relation when named, never as an anchor
    no = _one(kb_ws, _item("anchor", "阿米娅", "星熊最近怎么样？", {"anchor": ["星熊"]}))
    assert not no[0] and "among anchors: 凯尔希, 特蕾西娅, 陈, 奥黛丽, 维罗妮卡" in no[1]


def test_an_empty_relations_block_fails_with_its_reason(tmp_path: Path) -> None:
    from support.service_world import kb_workspace

    with kb_workspace(make_kb(tmp_path / "home")) as ws:  # 星熊 has no profile: tier C
        ok, why = _one(ws, _item("anchor", "星熊", "最近好吗？", {"anchor": ["陈"]}))
    assert not ok and why.startswith("relations block empty: no profile for 星熊 (tier C)")


def test_doctor_needs_a_block_citing_a_line(kb_ws) -> None:
    item = _item("doctor", "阿米娅", "你怎么看我？", {"doctor": True})
    ok, why = _one(kb_ws, item)
    assert not ok and why.startswith("doctor block empty")
    empty = {"doctor": {"text": "", "reason": "not built", "sources": {"line_ids": []}}}
    assert _one(kb_ws, item, empty) == (False, "doctor block empty: not built")
    uncited = {"doctor": {"text": "博士是我最信任的人。", "sources": {"line_ids": []}}}
    assert _one(kb_ws, item, uncited) == (False, "doctor block cites no line")
    cited = {"doctor": {"text": "博士是我最信任的人。", "sources": {"line_ids": [lid(S1, 2)]}}}
    assert _one(kb_ws, item, cited) == (True, "doctor block cites 1 line(s)")


def _exemplars(
    *ids: str, text: str = "【她的说话方式】", shown_hers: tuple[str, ...] = ()
) -> dict[str, Any]:
    lines = [{"line_id": x, "hers": x in shown_hers} for x in ids]
    return {
        "exemplars": {"text": text, "sources": {"line_ids": list(ids)}, "items": [{"lines": lines}]}
    }


def test_voice_wants_enough_of_her_own_lines_on_topic(kb_ws) -> None:
    item = _item(
        "voice",
        "阿米娅",
        "巡逻路线定了吗？",
        {"exemplars_min": 2, "stages": [S1], "keywords": ["巡逻"]},
    )
    ok, why = _one(kb_ws, item)
    assert not ok and why.startswith("exemplars block empty")
    hers = _exemplars(lid(S1, 2), lid(S3, 1))
    assert _one(kb_ws, item, hers) == (True, "2 lines of hers, 1 from the expected stages")
    assert _one(kb_ws, item, _exemplars(lid(S1, 2))) == (
        False,
        "exemplars cite 1 line(s) of hers, want at least 2",
    )
    # a scene: another speaker's line is context and does not count as hers
    kaltsit = _exemplars(lid(S1, 2), lid(S1, 3))
    assert _one(kb_ws, item, kaltsit) == (
        False,
        "exemplars cite 1 line(s) of hers, want at least 2",
    )
    # but a line the block shows as hers must be hers
    passed_off = _exemplars(lid(S1, 2), lid(S1, 4), lid(S1, 3), shown_hers=(lid(S1, 3),))
    assert _one(kb_ws, item, passed_off) == (
        False,
        f"exemplar {lid(S1, 3)} is shown as hers but is not (speaker: 凯尔希)",
    )
    off_topic = _exemplars(lid(S2, 5), lid(S3, 3))
    assert not _one(kb_ws, item, off_topic)[0]
    by_keyword = _exemplars(lid(S2, 5), lid(S3, 3), text="……巡逻路线我已经画好了……")
    assert _one(kb_ws, item, by_keyword) == (True, "2 lines of hers, keyword 巡逻")


def test_voice_counts_her_other_forms_as_hers(kb_ws) -> None:
    item = _item("voice", "陈", "还记得那天吗？", {"exemplars_min": 2, "stages": [S3]})
    both = _exemplars(lid(S2, 1), lid(S3, 2))  # 陈 and 假日威龙陈
    assert _one(kb_ws, item, both)[0]


def test_memory_passes_on_a_stage_she_lived_and_fails_elsewhere(kb_ws) -> None:
    assert _one(kb_ws, _item("memory", "陈", "那晚下雨了吗？", {"stages": [S3]}))[0]
    no = _one(kb_ws, _item("memory", "陈", "甲板上的风大吗？", {"stages": [S1]}))
    assert not no[0] and "none of 1 expected stages among memories" in no[1]


def test_character_reads_who_she_is_in_the_persona(kb_ws) -> None:
    ok = _one(kb_ws, _item("character", "阿米娅", "你是谁？", {"persona": ["豹", "卡特斯"]}))
    assert ok == (True, "persona says 卡特斯")
    no = _one(kb_ws, _item("character", "阿米娅", "你是谁？", {"persona": ["萨卡兹"]}))
    assert no == (False, "persona says none of 萨卡兹")


def test_report_sums_per_kind_and_is_json(kb_ws) -> None:
    items = [
        _item("anchor", "阿米娅", "最近怎么样？", {"anchor": ["凯尔希"]}, "a"),
        _item("anchor", "阿米娅", "最近怎么样？", {"anchor": ["独行者"]}, "b"),
        _item("doctor", "阿米娅", "你好", {"doctor": True}, "c"),
        _item("anchor", "谁也不是", "你好", {"anchor": ["凯尔希"]}, "d"),
    ]
    rep = score(items, _turn(kb_ws))
    assert not rep.speakers_checked
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["by_kind"] == {
        "anchor": {"n": 3, "passed": 1, "share": 0.3333},
        "doctor": {"n": 1, "passed": 0, "share": 0.0},
    }
    assert d["n"] == 4 and d["passed"] == 1 and d["share"] == 0.25
    failed = {r["id"]: r["reason"] for r in d["items"] if not r["passed"]}
    assert failed["d"].startswith("turn failed: no operator is called '谁也不是'")
    assert rep.lines()[-1].split() == ["overall", "1/4", "25.0%"]


def test_a_run_without_a_knowledge_base_stops_instead_of_failing_every_item() -> None:
    def turn(op: str, message: str) -> dict[str, Any]:
        raise NotIngestedError("nothing ingested")

    with pytest.raises(NotIngestedError):
        score([_item("doctor", "阿米娅", "你好", {"doctor": True})], turn)


def test_line_speaker_resolves_forms_and_ignores_narration(kb_ws) -> None:
    who = store_line_speaker(kb_ws.corpus.store(), kb_ws.names)
    assert who(lid(S3, 2)) == "陈"  # spoken as 假日威龙陈
    assert who(lid(S1, 3)) == "凯尔希"
    assert who(lid(S1, 1)) is None  # narration
    assert who("obt/main/nowhere#1:00000000") is None


def test_missing_cites_reports_moved_and_edited_lines(kb_ws) -> None:
    good = _item("doctor", "阿米娅", "你好", {"doctor": True}, "g")
    edited = lid(S1, 2)[:-8] + "deadbeef"
    bad = Item("b", "阿米娅", "你好", "doctor", {"doctor": True}, "n", (lid(S1, 4), edited))
    assert missing_cites([good, bad], kb_ws.corpus.store().lines_by_id) == [("b", edited)]


# -- the answer mode ------------------------------------------------------------------------
def _qa_items() -> list[Item]:
    from arklore.chat.fidelity import QA

    base = _item("anchor", "阿米娅", "最近怎么样？", {"anchor": ["凯尔希"]})
    with_qa = Item("q1", "阿米娅", "x", "anchor", {"anchor": ["凯尔希"]}, "n", base.cites,
                   QA("你最信任的长辈是谁？", ("凯尔希",)))  # fmt: skip
    return [base, with_qa]


def test_answer_compares_arklores_prompt_with_a_bare_one(kb_ws) -> None:
    seen: list[list[dict[str, str]]] = []

    def complete(messages: list[dict[str, str]]) -> str:
        seen.append(messages)
        return "当然是凯尔希医生。" if "凯尔希" in messages[0]["content"] else "我不太清楚。"

    rep = answer(_qa_items(), _turn(kb_ws), complete)
    assert rep.n == 1 and len(seen) == 2  # the item without qa is skipped
    assert rep.accuracy("arklore") == 1.0 and rep.accuracy("bare") == 0.0
    assert seen[1][0]["content"] == "你是《明日方舟》的干员阿米娅，请以阿米娅的身份和口吻回答博士。"
    assert seen[0][1] == {"role": "user", "content": "你最信任的长辈是谁？"}
    assert json.loads(json.dumps(rep.to_dict()))["items"][0]["bare_reply"] == "我不太清楚。"


def test_answer_counts_a_failed_request_as_wrong_and_records_it(kb_ws) -> None:
    def complete(messages: list[dict[str, str]]) -> str:
        raise PermanentLLMError("HTTP 400")

    rep = answer(_qa_items(), _turn(kb_ws), complete)
    assert rep.accuracy("arklore") == 0.0 and rep.to_dict()["errors"] == 1
    assert "HTTP 400" in rep.results[0].error


def test_is_right_ignores_case_and_blank_accepts() -> None:
    assert is_right("It was W.", ["w"]) and not is_right("没有", ["  ", "魏彦吾"])


def test_answer_through_the_llm_layer_and_the_stub(kb_ws, llm_stub: StubServer) -> None:
    llm = make_llm(kb_ws.paths.home, stub_env(llm_stub))
    llm_stub.queue(Reply.text("是凯尔希医生。"), Reply.text("嗯……我想想。"))
    try:
        rep = answer(_qa_items(), _turn(kb_ws), chat_completer(llm))
    finally:
        llm.close()
    assert (rep.accuracy("arklore"), rep.accuracy("bare")) == (1.0, 0.0)
    bodies = [c.body for c in llm_stub.requests]
    assert [b["temperature"] for b in bodies] == [0.0, 0.0]
    assert "【阿米娅身边的人】" in bodies[0]["messages"][0]["content"]


# -- the command ----------------------------------------------------------------------------
@pytest.fixture
def cli(kb_ws, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARKLORE_HOME", str(kb_ws.paths.home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    monkeypatch.setenv("ARKLORE_TIER_C_RELATIONS", "1")
    for var in ("LLM_API_KEY", "LLM_BASE_URL", "LLM_CHAT_API_KEY", "LLM_CHAT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    root = typer.Typer()
    root.add_typer(evaluate.app)
    close_workspace()
    yield lambda *args: CliRunner().invoke(root, ["eval", "fidelity", *args])
    close_workspace()


def _set(tmp_path: Path) -> Path:
    recs = [
        GOOD | {"id": "a", "kind": "anchor", "expect": {"anchor": ["凯尔希"]}},
        GOOD | {"id": "b", "kind": "anchor", "expect": {"anchor": ["独行者"]}},
        GOOD | {"id": "c", "cites": [lid(S1, 2)[:-8] + "deadbeef"]},
    ]
    return _write(tmp_path, *recs)


def test_cli_json_scores_the_set_and_lists_drifted_cites(cli, tmp_path: Path) -> None:
    r = cli("--data", str(_set(tmp_path)), "--json")
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert out["by_kind"]["anchor"] == {"n": 2, "passed": 1, "share": 0.5}
    assert out["speakers_checked"] and out["drifted_cites"] == [["c", lid(S1, 2)[:-8] + "deadbeef"]]


def test_cli_text_and_kind_filter(cli, tmp_path: Path) -> None:
    r = cli("--data", str(_set(tmp_path)), "--kind", "doctor")
    assert r.exit_code == 0, r.output
    assert "fidelity: 1 items, 1 operators" in r.stdout and "doctor" in r.stdout
    assert "c [doctor] 阿米娅: doctor block empty" in r.stdout


def test_cli_errors_are_one_line(cli, tmp_path: Path) -> None:
    r = cli("--data", str(tmp_path / "none.jsonl"))
    assert isinstance(r.exception, ArkloreError) and r.exception.exit_code == 1
    assert "no fidelity eval set" in r.exception.one_line()
    r = cli("--data", str(_set(tmp_path)), "--kind", "vibes")
    assert isinstance(r.exception, ArkloreError) and r.exception.exit_code == 2
    r = cli("--data", str(_set(tmp_path)), "--answer")
    assert isinstance(r.exception, ArkloreError) and "no LLM configured" in str(r.exception)


def test_cli_without_a_store_is_one_line_error(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "empty-home"))
    close_workspace()
    r = cli("--data", str(_set(tmp_path)))
    assert isinstance(r.exception, ArkloreError) and r.exception.exit_code == 1
    assert "arklore build" in r.exception.one_line()


def test_cli_answer_mode_asks_the_chat_model(
    cli, tmp_path: Path, llm_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in stub_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    close_workspace()
    # a question of its own: the LLM cache of this home already answers the others
    rec = GOOD | {"qa": {"question": "罗德岛上你最敬重谁？", "accept": ["凯尔希"]}}
    llm_stub.queue(Reply.text("凯尔希医生。"), Reply.text("这个嘛……"))
    r = cli("--data", str(_write(tmp_path, rec)), "--answer", "--json")
    assert r.exit_code == 0, r.output
    ans = orjson.loads(r.stdout)["answers"]
    assert (ans["n"], ans["arklore_accuracy"], ans["bare_accuracy"]) == (1, 1.0, 0.0)
    assert len(llm_stub.requests) == 2


# -- the stated kinds -----------------------------------------------------------------------
def _turn_of(**texts: str) -> dict[str, Any]:
    return {"blocks": [{"name": n, "text": t, "empty": not t} for n, t in texts.items()]}


def _stated_item(kind: str, expect: dict[str, Any]) -> Item:
    return Item("x", "阿米娅", "你好", kind, expect, "n", ("a/b#1:00000000",))


def test_a_word_counts_only_when_the_turn_states_it_outside_quotes_and_exemplars() -> None:
    item = _stated_item("address", {"words": ["老板"]})

    def verdict(**texts: str) -> bool:
        return score([item], lambda op, msg: _turn_of(**texts)).results[0].passed

    assert verdict(speech="- 称博士为「老板」（语音 8 次）")  # a form the statement names
    assert not verdict(persona="- 「老板，安排点差事给我们吧，今天也要加油~」")  # a quoted line
    assert not verdict(exemplars="能天使：老板，今天送点什么？")  # her lines state nothing
    assert verdict(doctor="- 她把博士当作老板。", exemplars="")


def test_a_noise_item_fails_on_any_filler_outside_the_exemplars() -> None:
    item = _stated_item("noise", {"absent": ["体细胞与源石融合率", "身高："]})

    def verdict(**texts: str) -> bool:
        return score([item], lambda op, msg: _turn_of(**texts)).results[0].passed

    assert verdict(persona="- 种族：菲林", exemplars="身高：不重要")
    assert not verdict(persona="- 身高：160cm")
    assert not verdict(memories="- 体细胞与源石融合率：3%")


def test_voice_and_archive_lines_may_be_cited(tmp_path: Path) -> None:
    base = {"id": "a", "operator": "阿米娅", "message": "你好", "kind": "address",
            "expect": {"words": ["博士"]}, "note": "n"}  # fmt: skip
    ok = tmp_path / "ok.jsonl"
    cites = [f"{VOICE_CITE}char_002_amiya_CN_001", f"{ARCHIVE_CITE}char_002_amiya/档案资料一"]
    ok.write_text(json.dumps(base | {"cites": cites}, ensure_ascii=False), "utf-8")
    assert load_items(ok)[0].cites == tuple(cites)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(base | {"cites": [VOICE_CITE]}, ensure_ascii=False), "utf-8")
    with pytest.raises(InputFileError, match="names no voice line"):
        load_items(bad)
