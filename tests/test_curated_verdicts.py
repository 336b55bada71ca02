"""A person's verdict on each curated relation (issue 40, item 1): kept on the relation's
text (an edit voids it), a rejected relation left out of every build, confirmed-only builds,
the admin token on the HTTP writes, and the CLI and HTTP giving the same verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from support.cli import run_main
from support.curated_world import curated_env, write_matrix
from support.service_world import AMIYA, CHEN, HOSHI, KALTS, SWIRE, kb_workspace, make_kb

from arklore.core.errors import CuratedChangedError
from arklore.graph.model import RelationGraph
from arklore.service.app import create_app
from arklore.workspace import Workspace

TOKEN = "curated-admin-token-0123456789"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_kb(tmp_path / "home", profiles=False, index=False)


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    return write_matrix(tmp_path / "matrix.toml")


def ws_for(home: Path, matrix: Path, **kw: Any) -> Workspace:
    return kb_workspace(home, matrix=matrix, matrix_replace=True, **kw)


def statuses(ws: Workspace) -> dict[tuple[str, str], str]:
    return {(r["from"], r["to"]): r["status"] for r in ws.graph.curated_status()["relations"]}


def curated_pairs(g: RelationGraph) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in g.edges() if "matrix" in e.origins}


def test_every_curated_relation_starts_unconfirmed_and_a_verdict_records_who_and_when(
    home: Path, matrix: Path
) -> None:
    ws = ws_for(home, matrix)
    out = ws.graph.curated_status()
    assert out["counts"] == {"unconfirmed": 3, "confirmed": 0, "rejected": 0,
                             "edited-since-confirmed": 0}  # fmt: skip
    row = ws.graph.curate_verdict("阿米娅", "凯尔希", "confirmed", by="小林", note="看过原文")
    assert (row["status"], row["by"], row["note"]) == ("confirmed", "小林", "看过原文")
    assert row["at"].endswith("+00:00") and len(row["sha"]) == 64
    assert row["evidence"] and row["matrix"] == "matrix.toml"
    ws.close()


def test_an_edit_after_a_confirmation_makes_the_relation_unconfirmed_again(
    home: Path, matrix: Path
) -> None:
    ws = ws_for(home, matrix)
    ws.graph.curate_verdict("阿米娅", "凯尔希", "confirmed", by="小林")
    ws.graph.curate_verdict("陈", "星熊", "confirmed", by="小林")
    assert statuses(ws)[(AMIYA, KALTS)] == "confirmed"
    write_matrix(matrix, r0="改过的描述。")  # a person edits the confirmed text
    now = statuses(ws)
    assert now[(AMIYA, KALTS)] == "edited-since-confirmed"
    assert now[(CHEN, HOSHI)] == "confirmed"  # the untouched one keeps its verdict
    g = ws_for(home, matrix, confirmed_only=True).graph.build().graph
    assert (AMIYA, KALTS) not in curated_pairs(g) and (CHEN, HOSHI) in curated_pairs(g)
    ws.close()


def test_a_rejected_relation_is_left_out_of_every_build_and_reported(
    home: Path, matrix: Path
) -> None:
    ws = ws_for(home, matrix)
    assert (CHEN, HOSHI) in curated_pairs(ws.graph.build().graph)
    ws.graph.curate_verdict("陈", "星熊", "rejected", by="小林", note="不是上下级")
    for only in (False, True):
        ws.graph.curate_verdict("阿米娅", "凯尔希", "confirmed")
        built = ws_for(home, matrix, confirmed_only=only).graph.build()
        assert (CHEN, HOSHI) not in curated_pairs(built.graph), only
        rejected = built.report["verdicts"]["rejected"]
        assert [(r["from"], r["to"]) for r in rejected] == [(CHEN, HOSHI)]
    ws.close()


def test_confirmed_only_builds_leave_every_unconfirmed_relation_out(
    home: Path, matrix: Path
) -> None:
    ws = ws_for(home, matrix)
    ws.graph.curate_verdict("阿米娅", "凯尔希", "confirmed")
    everything = ws.graph.build()
    assert len(curated_pairs(everything.graph)) == 3  # default: every relation not rejected
    only = ws_for(home, matrix, confirmed_only=True).graph.build()
    assert curated_pairs(only.graph) == {(AMIYA, KALTS)}
    assert only.report["verdicts"]["unconfirmed_left_out"] == 2
    ws.close()


def test_the_build_inputs_change_with_a_verdict(home: Path, matrix: Path) -> None:
    ws = ws_for(home, matrix)
    before = ws.graph.inputs()
    ws.graph.curate_verdict("陈", "星熊", "rejected")
    assert ws.graph.inputs() != before  # `arklore build` rebuilds the graph and the index
    ws.close()


# -- HTTP ------------------------------------------------------------------------------------
def client_for(ws: Workspace) -> TestClient:
    return TestClient(create_app(ws, warm_up=False), raise_server_exceptions=False)


def body(ws: Workspace, frm: str = AMIYA, to: str = KALTS, **kw: str) -> dict[str, str]:
    sha = next(r["sha"] for r in ws.graph.curated_status()["relations"]
               if (r["from"], r["to"]) == (frm, to))  # fmt: skip
    return {"from": frm, "to": to, "by": "审阅者", "sha": sha, **kw}


@pytest.mark.parametrize("route", ["/v1/curated/confirm", "/v1/curated/reject"])
def test_curated_writes_need_the_admin_token_as_the_other_writes(
    home: Path, matrix: Path, route: str
) -> None:
    approve = f"/v1/review/{AMIYA}/approve"
    with client_for(ws_for(home, matrix)) as c:  # no token set: writes disabled
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = c.post(route, json=body(ws_for(home, matrix)), headers=auth)
        assert r.status_code == 403 == c.post(approve, headers=auth).status_code
        assert r.json()["error"] == "writes_disabled"
    ws = ws_for(home, matrix, admin_token=TOKEN)
    with client_for(ws) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            r = c.post(route, json=body(ws), headers=headers)
            assert r.status_code == 401 == c.post(approve, headers=headers).status_code
        assert c.get("/v1/curated").json()["counts"]["unconfirmed"] == 3  # nothing written
        r = c.post(route, json=body(ws), headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200, r.text


def test_a_verdict_on_a_text_that_changed_since_it_was_shown_is_refused(
    home: Path, matrix: Path
) -> None:
    ws = ws_for(home, matrix, admin_token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with client_for(ws) as c:
        seen = body(ws)
        write_matrix(matrix, r0="另一个人改了它。")
        r = c.post("/v1/curated/confirm", json=seen, headers=auth)
        assert r.status_code == 409 and r.json()["error"] == "curated_changed"
        assert c.get("/v1/curated").json()["counts"]["confirmed"] == 0
    with pytest.raises(CuratedChangedError):
        ws.graph.curate_verdict(AMIYA, KALTS, "confirmed", seen_sha=seen["sha"])
    ws.close()


def test_the_cli_and_http_give_the_same_verdict_and_listing(
    home: Path, matrix: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    for k, v in curated_env(matrix).items():
        monkeypatch.setenv(k, v)
    code, out, err = run_main(monkeypatch, capsys, "curate", "confirm", "陈", "星熊",
                              "--by", "小林", "--note", "对", "--json")  # fmt: skip
    assert code == 0, err
    by_cli = json.loads(out)
    ws = ws_for(home, matrix, admin_token=TOKEN)
    with client_for(ws) as c:
        r = c.post("/v1/curated/confirm", headers={"Authorization": f"Bearer {TOKEN}"},
                   json=body(ws, SWIRE, CHEN, by="小林", note="对"))  # fmt: skip
        by_http = r.json()
        listed = c.get("/v1/curated").json()
    same = ("status", "verdict", "by", "note", "matrix")
    assert [by_cli[k] for k in same] == [by_http[k] for k in same]
    assert by_cli["status"] == "confirmed" and by_cli["by"] == "小林"
    code, out, _ = run_main(monkeypatch, capsys, "curate", "status", "--json")
    assert code == 0
    from_cli = json.loads(out)
    assert from_cli["relations"] == listed["relations"] and from_cli["counts"]["confirmed"] == 2
    code, out, _ = run_main(monkeypatch, capsys, "curate", "status", "--unconfirmed", "--json")
    assert [(r["from"], r["to"]) for r in json.loads(out)["relations"]] == [(AMIYA, KALTS)]
    ws.close()


def test_a_verdict_on_an_unknown_relation_is_one_line_and_exits_non_zero(
    home: Path, matrix: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    for k, v in curated_env(matrix).items():
        monkeypatch.setenv(k, v)
    code, out, err = run_main(monkeypatch, capsys, "curate", "reject", "星熊", "陈")
    assert code != 0 and len(err.strip().splitlines()) == 1 and "星熊 -> 陈" in err, err
    assert "Traceback" not in err
    code, _, err = run_main(monkeypatch, capsys, "curate", "confirm", "陈", "星熊",
                            "--predicate", "恋爱")  # fmt: skip
    assert code != 0 and "unknown predicate" in err and len(err.strip().splitlines()) == 1
