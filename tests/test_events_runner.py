"""Story-event extraction against the local stub server: one scripted answer mixing every
case the checks judge, on an invented two-chunk stage; storing, resume, cache, export,
exit codes, memories for chat, the timeline, review and run diffs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.events_world import BEACH, HARBOUR, chunk_range, mixed_answer, write_events_tree
from support.llm_stub import Reply, StubServer, make_llm, stub_env
from support.tree_world import make_workspace
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.errors import ArkloreError, UnknownNameError
from arklore.core.model import DOCTOR, Line
from arklore.events import runner
from arklore.events import store as events_db
from arklore.events.memories import Memories
from arklore.workspace import Workspace

CHEN = "char_010_chen"


def answer(body: dict[str, Any]) -> Reply:
    return Reply.json(mixed_answer(body["messages"][-1]["content"]))


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    gamedata, astr = write_events_tree(tmp_path / "data")
    w = make_workspace(tmp_path / "home", gamedata, astr, embedder="hash")
    w.ingest()
    yield w
    w.close()


def run(ws: Workspace, stub: StubServer, paths: list[str], **kw: Any) -> runner.RunReport:
    llm = make_llm(ws.paths.home, stub_env(stub), no_cache=kw.pop("no_cache", False))
    try:
        return runner.extract_events(
            ws.corpus.store(), llm, paths, resolve=ws.names.resolve_person, **kw
        )
    finally:
        llm.close()


def dump(ws: Workspace) -> list[tuple[Any, ...]]:
    c = ws.corpus.store().conn
    return (
        c.execute("SELECT * FROM story_events ORDER BY 1, 2").fetchall()
        + c.execute("SELECT * FROM event_memories ORDER BY 1, 2, 3").fetchall()
    )


def test_the_mixed_answer_is_checked_stored_and_reported(ws: Workspace, llm_stub) -> None:
    llm_stub.default = answer
    report = run(ws, llm_stub, [HARBOUR])
    assert (report.jobs, report.done, report.failed) == (2, 2, 0)  # the stage is two chunks
    events = events_db.load_events(ws.corpus.store(), HARBOUR)
    assert [(e.line_start, e.line_end) for e in events][:3] == [(1, 5), (6, 20), (21, 156)]
    assert len(events) == 3  # the unloading across the chunk border is ONE event

    first = events[0]
    assert (first.stage_code, first.event_name, first.event_id) == ("EV-1", "港口篇", "evtest")
    mems = {m.actor: m for m in first.memories}
    assert set(mems) == {"陈晖洁", "阿米娅", DOCTOR, "推进之王"}
    assert mems["陈晖洁"].usable and mems["陈晖洁"].actor_id == CHEN  # quoted real name
    assert mems["阿米娅"].person == "third" and mems["阿米娅"].actor_id == "char_002_amiya"
    assert mems[DOCTOR].usable and mems[DOCTOR].presence == "nickname"
    assert mems["推进之王"].drop_reason == "not_present"
    assert first.time_hint == "两个小时"
    assert events[1].time_hint is None and events[1].time_hint_claimed == "第二天"

    merged = events[2]
    assert merged.merged_from == 2 and merged.chunks == [0, 1]
    (siege,) = merged.memories
    assert siege.actor_id == "char_112_siege" and siege.usable
    assert siege.text == "我们一箱一箱地把货搬完了大半。最后几箱货也被我们搬进了仓库。"

    assert report.summary["dropped_memories"] == 1 and report.summary["third_person"] == 1
    assert report.summary["dropped_time_hints"] == 1 and report.summary["merged"] == 1
    assert report.dropped_memories == [
        {"stage": HARBOUR, "event": 0, "lines": [1, 5], "actor": "推进之王",
         "actor_id": "char_112_siege", "text": "我在港口看着船靠岸。", "reason": "not_present"}
    ]  # fmt: skip
    assert report.exit_code == 5 and "cost $" in report.cost_line


def test_rerun_is_identical_and_free_resume_skips(ws: Workspace, llm_stub) -> None:
    llm_stub.default = answer
    run(ws, llm_stub, [HARBOUR, BEACH])
    before, n = dump(ws), len(llm_stub.requests)
    again = run(ws, llm_stub, [HARBOUR, BEACH])
    assert again.skipped == again.jobs == 3 and again.done == 0
    forced = run(ws, llm_stub, [HARBOUR, BEACH], resume=False)
    assert forced.cached == forced.jobs == 3 and "cost $0.0000" in forced.cost_line
    assert len(llm_stub.requests) == n and dump(ws) == before


def test_a_failed_chunk_leaves_the_stage_unchecked_until_a_rerun(ws: Workspace, llm_stub) -> None:
    def flaky(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "level_ev_01_beg" in prompt and chunk_range(prompt)[0] > 1:
            return Reply.server_error()
        return answer(body)

    llm_stub.default = flaky
    report = run(ws, llm_stub, [HARBOUR])
    assert report.failed == 1 and report.exit_code == 3
    assert not events_db.has_events(ws.corpus.store(), HARBOUR)  # half a stage is never served
    assert report.stages[0].failed_chunks == [f"{HARBOUR}#c1"]
    llm_stub.default = answer
    report = run(ws, llm_stub, [HARBOUR])
    assert (
        report.skipped == 1
        and report.done == 1
        and events_db.has_events(ws.corpus.store(), HARBOUR)
    )


def test_a_stage_is_checked_again_when_its_answers_or_lines_change(ws: Workspace, llm_stub) -> None:
    llm_stub.default = answer
    run(ws, llm_stub, [BEACH])
    store = ws.corpus.store()
    answers, lines = events_db.chunk_answers(store, BEACH), store.lines(BEACH)
    fp = runner.stage_fingerprint(answers, lines)
    assert events_db.stage_fingerprint(store, BEACH) == fp

    def check(lines: list[Line]) -> object:
        return runner.check_and_store(
            store, BEACH, lines, 1, speakers=set(), resolve=lambda n: None
        )

    assert check(lines) is None  # nothing the checks read changed
    edited = [replace(lines[0], text=lines[0].text + "！"), *lines[1:]]
    assert check(edited) is not None and events_db.stage_fingerprint(store, BEACH) != fp
    fewer = [replace(answers[0], proposals=[])]
    assert runner.stage_fingerprint(fewer, lines) != fp  # same request, another answer


def test_a_list_of_memories_is_a_shape_error_never_guessed(ws: Workspace, llm_stub) -> None:
    bad = {"events": [{"phase": "经过", "summary": "s", "actors": ["阿米娅"],
                       "memories": ["我在。"], "line_start": 1, "line_end": 2}]}  # fmt: skip
    llm_stub.default = lambda body: Reply.json(bad)
    report = run(ws, llm_stub, [BEACH])
    assert report.failed == 1 and not events_db.has_events(ws.corpus.store(), BEACH)


def test_memories_are_hers_only_shared_by_her_forms(ws: Workspace, llm_stub) -> None:
    no_events = ws.events.memories("陈")
    assert no_events.kind == "appearances" and "no story events extracted" in no_events.reason
    assert not ws.events.memory_service().has_memories([CHEN, "char_1013_chen2"])
    assert [i.kind for i in no_events.items] == ["appearance", "appearance"]
    assert no_events.items[0].text.endswith("一段关于港口卸货的测试简介。")
    llm_stub.default = answer
    run(ws, llm_stub, [HARBOUR, BEACH])
    ws.reload()
    got = ws.events.memories("陈", "港口的货船", k=5)
    assert isinstance(got, Memories) and got.kind == "memories"
    assert ws.events.memory_service().has_memories([CHEN, "char_1013_chen2"])
    assert got.operator == CHEN and set(got.operator_ids) == {CHEN, "char_1013_chen2"}
    texts = {i.text for i in got.items}
    assert texts == {"我在港口问阿米娅货船几点靠岸。", "我在沙滩上问阿米娅带没带防晒霜。"}
    assert all(i.kind == "memory" and i.score is not None for i in got.items)
    top = got.items[0]
    assert top.text == "我在港口问阿米娅货船几点靠岸。"  # the query is about the harbour
    assert (top.stage_code, top.event_name, top.stage_path) == ("EV-1", "港口篇", HARBOUR)
    assert top.line_ids and all(i.startswith(HARBOUR + "#") for i in top.line_ids)
    # the alternate form's name gives the same memories; no query: story order
    alt = ws.events.memories("假日威龙陈", k=5)
    assert [i.text for i in alt.items] == [
        "我在港口问阿米娅货船几点靠岸。",
        "我在沙滩上问阿米娅带没带防晒霜。",
    ]
    assert [i.order for i in alt.items] == sorted(i.order for i in alt.items)
    assert all(i.score is None for i in alt.items)
    # 阿米娅's only harbour memory is in the third person: never served; the beach one is
    amiya = ws.events.memories("阿米娅", k=5)
    assert [i.text for i in amiya.items] == ["我告诉陈我带了防晒霜。"]
    # the summaries (third person) are never a memory
    assert not {i.text for i in got.items} & {"陈问阿米娅货船几点靠岸。"}
    # 推进之王's dropped harbour memory is not served; the merged one is
    siege = ws.events.memories("推进之王", k=5)
    assert [i.text for i in siege.items] == [
        "我和搬运工开始把货搬进仓库。",
        "我们一箱一箱地把货搬完了大半。最后几箱货也被我们搬进了仓库。",
    ]


def test_appearances_resolve_real_names_alternate_forms_and_avatars(ws: Workspace) -> None:
    apps = {a.stage_path: a for a in ws.events.appearances("陈")}
    assert set(apps) == {HARBOUR, BEACH}
    # speaks as 陈晖洁 (real name, quoted in the script)
    assert apps[HARBOUR].spoken == 1 and apps[HARBOUR].summary == "一段关于港口卸货的测试简介。"
    # 假日威龙陈 (alternate form) and the $avatar_chen2 popup line are her too
    assert apps[BEACH].spoken == 2 and apps[BEACH].stage_code == "EV-2"
    amiya = {a.stage_path: a for a in ws.events.appearances("阿米娅")}
    # addressed by name (陈晖洁: "阿米娅，..."; 假日威龙陈: "阿米娅，...") and speaks
    assert amiya[HARBOUR].addressed == 1 and amiya[HARBOUR].spoken == 2
    assert amiya[BEACH].addressed == 1 and amiya[BEACH].spoken == 1
    assert amiya[HARBOUR].line_ids[0].startswith(HARBOUR + "#2:")


def test_timeline_orders_stages_and_events(ws: Workspace, llm_stub) -> None:
    before = ws.events.timeline(event="evtest")
    assert [s.stage_path for s in before.stages] == [HARBOUR, BEACH]
    assert "release order" in before.note and not before.stages[0].events_extracted
    llm_stub.default = answer
    run(ws, llm_stub, [HARBOUR])
    tl = ws.events.timeline(event="evtest")
    harbour = tl.stages[0]
    assert harbour.events_extracted and [e.line_start for e in harbour.events] == [1, 6, 21]
    assert harbour.events[0].time_hint == "两个小时" and harbour.events[1].time_hint is None
    mine = ws.events.timeline(operator="推进之王")
    assert [s.stage_path for s in mine.stages] == [HARBOUR]
    # only the events she is present in: the first (she is not there) is left out
    assert [e.line_start for e in mine.stages[0].events] == [6, 21]


def test_export_is_flat_atomic_and_complete(ws: Workspace, llm_stub, tmp_path: Path) -> None:
    llm_stub.default = answer
    run(ws, llm_stub, [HARBOUR])
    path = runner.export_stage(ws.corpus.store(), HARBOUR, tmp_path / "out")
    assert path.name == "story_events_activities__evtest__level_ev_01_beg.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["stage"] == HARBOUR and doc["stage_code"] == "EV-1" and doc["event_name"] == "港口篇"
    assert doc["models"] == ["stub-model"] and doc["prompt_version"] == "events-v1"
    e = doc["events"][0]
    for key in ("phase", "summary", "actors", "memories", "time_hint", "line_ids", "model",
                "prompt_version", "stage_code", "event_name", "line_start", "line_end"):  # fmt: skip
        assert key in e
    assert {a["name"]: a["presence"] for a in e["actors"]}["陈晖洁"] == "speaks"
    verdicts = {m["actor"]: (m["verdict"], m["person"]) for m in e["memories"]}
    assert verdicts["推进之王"] == ("dropped", "first") and verdicts["阿米娅"] == ("kept", "third")
    assert [p.name for p in (tmp_path / "out").iterdir()] == [path.name]


def test_dry_run_calls_nothing(ws: Workspace, llm_stub) -> None:
    est = ws.events.extract_dry_run(ws.extract.select_stages(all_=True))
    assert est.requests == 5 and est.input_tokens > 0 and est.cost_with_cache_usd < est.cost_usd
    assert llm_stub.requests == []


# --- CLI -----------------------------------------------------------------------------


@pytest.fixture
def cli(ws: Workspace, llm_stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("ARKLORE_HOME", str(ws.paths.home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    for k, v in stub_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    llm_stub.default = answer
    return ws


def test_a_forced_rerun_with_another_answer_checks_the_stage_again(
    cli: Workspace, llm_stub: StubServer
) -> None:
    """`--no-cache --no-resume` sends the same request again; when the model answers
    otherwise, the stage's events and its export follow the new answer (the checks'
    fingerprint covers the answers, not the requests)."""
    first = mixed_answer(f"{BEACH} 本段为第 1–4 行")
    second = json.loads(json.dumps(first))
    second["events"][0]["summary"] = "阿米娅把防晒霜递给了陈。"
    second["events"][0]["memories"]["阿米娅"] = "我把防晒霜递给了陈。"
    llm_stub.script("level_ev_02_beg", Reply.json(first), Reply.json(second))
    args = ["extract", "events", BEACH, "--no-cache", "--no-resume", "--json"]
    summaries = []
    for _ in range(2):
        res = CliRunner().invoke(app, args)
        assert res.exit_code in (0, 5), res.output
        (export,) = json.loads(res.stdout)["exports"]
        doc = json.loads(Path(export).read_text(encoding="utf-8"))
        stored = events_db.load_events(cli.corpus.store(), BEACH)
        assert [e.summary for e in stored] == [e["summary"] for e in doc["events"]]
        summaries.append(doc["events"][0]["summary"])
    assert len(llm_stub.calls("level_ev_02_beg")) == 2  # both runs asked the model
    assert summaries == [first["events"][0]["summary"], "阿米娅把防晒霜递给了陈。"]
    mems = {m.actor: m.text for m in events_db.load_events(cli.corpus.store(), BEACH)[0].memories}
    assert mems["阿米娅"] == "我把防晒霜递给了陈。"


def test_cli_extract_review_memories_timeline(cli: Workspace, llm_stub, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["extract", "events", "--event", "evtest", "--json"])
    assert res.exit_code == 5, res.output
    data = json.loads(res.stdout)
    assert data["summary"]["dropped_memories"] == 1 and len(data["exports"]) == 2
    assert data["embedded_memories"] == 5  # the first-person ones, ready for chat
    assert "DROPPED 1 memories" in res.stderr and "推进之王 (not_present)" in res.stderr
    res = CliRunner().invoke(app, ["extract", "events", HARBOUR])
    assert res.exit_code == 5 and "DROPPED 1 memories" in res.stdout
    assert "not in the first person" in res.stdout and "第二天" in res.stdout
    assert "cost $0.0000" in res.stdout and "0 memories embedded" in res.stdout  # cached

    res = CliRunner().invoke(app, ["review", "events", HARBOUR])
    assert res.exit_code == 0
    assert "推进之王 -> DROPPED (not_present)" in res.stdout
    assert "FLAGGED third person" in res.stdout and "time hint DROPPED" in res.stdout
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["review", "events", HARBOUR, "--html", "--out", str(out)])
    assert res.exit_code == 0 and "<script" not in out.read_text(encoding="utf-8")

    res = CliRunner().invoke(app, ["memories", "陈", "港口的货船", "--json"])
    assert res.exit_code == 0, res.output
    mem = json.loads(res.stdout)
    assert mem["kind"] == "memories" and mem["items"][0]["stage_code"] == "EV-1"
    res = CliRunner().invoke(app, ["timeline", "--event", "evtest"])
    assert res.exit_code == 0 and "release order" in res.stdout and "〈两个小时〉" in res.stdout
    res = CliRunner().invoke(app, ["timeline", "--operator", "没有这个人"])
    assert isinstance(res.exception, UnknownNameError) and "没有这个人" in str(res.exception)


def test_cli_dry_run_all(cli: Workspace, llm_stub) -> None:
    res = CliRunner().invoke(app, ["extract", "events", "--all", "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["stages"] == 4 and data["requests"] == 5 and data["cost_usd"] > 0
    assert llm_stub.requests == []


def test_events_diff_by_line_range_overlap(
    cli: Workspace, llm_stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    res = CliRunner().invoke(app, ["extract", "events", HARBOUR, "--out", str(a)])
    assert res.exit_code == 5

    def other_model(body: dict[str, Any]) -> Reply:  # splits 6-20, merges 1-5 with 21-..
        prompt = body["messages"][-1]["content"]
        first, last = chunk_range(prompt)
        evs = [{"phase": "经过", "summary": "x", "actors": [], "memories": {},
                "line_start": s, "line_end": e}
               for s, e in ([(6, 12), (13, 20), (21, last)] if first == 1 else [(first, last)])]  # fmt: skip
        return Reply.json({"events": evs})

    llm_stub.default = other_model
    monkeypatch.setenv("LLM_EVENTS_MODEL", "other-model")  # another model: another cache key
    res = CliRunner().invoke(app, ["extract", "events", HARBOUR, "--out", str(b)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["events", "diff", str(a), str(b), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["counts"] == {"matched": 1, "split": 1, "merged": 0, "reshaped": 0,
                           "missing": 1, "new": 0}  # fmt: skip
    res = CliRunner().invoke(app, ["events", "diff", str(b), "@store"])
    assert res.exit_code == 0 and "matched 3" in res.stdout
    res = CliRunner().invoke(app, ["events", "diff", str(a), str(tmp_path / "nope")])
    assert isinstance(res.exception, ArkloreError)
    assert res.exception.exit_code == 2 and "no run at" in str(res.exception)


def test_sigkill_free_resume_after_interrupt(ws: Workspace, llm_stub, monkeypatch) -> None:
    """Interrupted while storing the 2nd chunk: the stage stays unchecked; a resume finishes
    it to the uninterrupted result."""
    llm_stub.default = answer
    ref_home = ws.paths.home.parent / "ref"
    shutil.copytree(ws.paths.home, ref_home)
    real = events_db.write_chunk
    calls = {"n": 0}

    def dying(*a: Any, **kw: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        real(*a, **kw)

    monkeypatch.setattr(events_db, "write_chunk", dying)
    with pytest.raises(KeyboardInterrupt):
        run(ws, llm_stub, [HARBOUR], concurrency=1)
    assert not events_db.has_events(ws.corpus.store(), HARBOUR)
    monkeypatch.setattr(events_db, "write_chunk", real)
    resumed = run(ws, llm_stub, [HARBOUR])
    assert resumed.skipped == 1 and resumed.done == 1
    with make_workspace(ref_home, ws.roots.gamedata, ws.roots.astr, embedder="hash") as ref:
        run(ref, llm_stub, [HARBOUR])
        assert dump(ref) == dump(ws)


def test_module_api_get_memories_uses_the_default_workspace(ws: Workspace) -> None:
    from arklore import api

    api.set_default_workspace(ws)
    try:
        got = api.get_memories("陈")
        assert got.kind == "appearances" and got.operator == CHEN and len(got.items) == 2
    finally:
        api.set_default_workspace(None)
