"""The HTTP service on the invented knowledge base: every route, the error statuses, the
admin token, replies from the stub model (plain and streamed), rebuilds switching underneath,
and the metrics."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from fastapi.testclient import TestClient
from support.llm_stub import Reply, StubServer, stub_env
from support.service_world import (
    AMIYA,
    CHEN,
    HOSHI,
    KALTS,
    LONELY,
    S1,
    build_rag,
    kb_settings,
    kb_workspace,
    lid,
    make_kb,
    write_graph,
)

from arklore.chat.blocks import BLOCK_NAMES
from arklore.service import state as state_mod
from arklore.service.app import create_app
from arklore.settings import Settings
from arklore.workspace import Workspace

TOKEN = "admin-token-4f9e2b7c"


@pytest.fixture(scope="module")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_kb(tmp_path_factory.mktemp("svc") / "home")


def client_for(ws: Workspace) -> TestClient:
    """A client on this machine (a reply spends the LLM key: without ARKLORE_API_KEYS only
    local clients may ask for one)."""
    return TestClient(
        create_app(ws, warm_up=False), raise_server_exceptions=False, client=("127.0.0.1", 50000)
    )


@pytest.fixture
def client(kb_home: Path) -> Iterator[TestClient]:
    with client_for(kb_workspace(kb_home)) as c:
        yield c


def test_turn_gives_the_blocks(client: TestClient) -> None:
    r = client.post("/v1/turn", json={"operator": "Amiya", "message": "星熊最近好吗？",
                                      "participants": ["凯尔希"]})  # fmt: skip
    assert r.status_code == 200, r.text
    t = r.json()
    assert t["operator"] == {"id": AMIYA, "name": "阿米娅"}
    assert [b["name"] for b in t["blocks"]] == [
        "persona",
        "speech",
        "now",
        "doctor",
        "relations",
        "memories",
        "group",
        "exemplars",
    ]
    by_name = {b["name"]: b for b in t["blocks"]}
    persona, rel, mem, group = (by_name[n] for n in ("persona", "relations", "memories", "group"))
    assert persona["meta"]["tier"] == "B" and lid(S1, 2) in persona["sources"]["line_ids"]
    assert any(i["kind"] == "contextual" for i in rel["items"])
    assert mem["meta"]["kind"] == "appearances" and mem["sources"]["stages"][0]["code"] == "T-1"
    assert not group["empty"] and t["total_tokens"] >= t["blocks_tokens"]
    assert t["reply"] is None and t["reply_error"] is None


def test_reply_without_a_model_says_why(client: TestClient) -> None:
    r = client.post("/v1/turn", json={"operator": "阿米娅", "message": "你好", "reply": True})
    assert r.status_code == 200 and r.json()["reply"] is None
    assert "no LLM configured" in r.json()["reply_error"]


def test_relation_context_alone(client: TestClient) -> None:
    r = client.post("/v1/relation-context", json={"operator": "阿米娅", "message": "星熊呢",
                                                  "l3_targets": [KALTS]})  # fmt: skip
    assert r.status_code == 200
    ctx = r.json()
    assert ctx["operator_id"] == AMIYA and ctx["tokens"] <= ctx["budget"] == 800
    assert KALTS not in [a["target_id"] for a in ctx["anchors"]]
    assert [c["target_name"] for c in ctx["contextual"]] == ["星熊"]


@pytest.mark.parametrize(
    "method,path,body,status,code",
    [
        ("get", "/v1/operators/阿米亚", None, 404, "unknown_operator"),
        ("post", "/v1/turn", {"operator": "阿米亚", "message": "你好"}, 404, "unknown_operator"),
        (
            "post",
            "/v1/turn",
            {"operator": "阿米娅", "message": "长" * 8001},
            413,
            "message_too_long",
        ),
        (
            "post",
            "/v1/relation-context",
            {"operator": "阿米娅", "message": "长" * 8001},
            413,
            "message_too_long",
        ),
        (
            "post",
            "/v1/turn",
            {
                "operator": "阿米娅",
                "message": "你",
                "history": [{"role": "user", "content": "长" * 8001}],
            },
            413,
            "message_too_long",
        ),
        ("post", "/v1/turn", {"operator": "阿米娅"}, 422, "invalid_request"),
        ("post", "/v1/turn", {"operator": "", "message": "x"}, 422, "invalid_request"),
        ("get", "/v1/operators/阿米娅/memories?q=" + "x" * 8001, None, 413, "message_too_long"),
        ("get", "/v1/operators/阿米娅/memories?k=0", None, 422, "invalid_request"),
        ("get", "/v1/stages/obt%2F..%2F..%2Fetc%2Fpasswd/lines", None, 400, "bad_stage_path"),
        ("get", "/v1/stages/obt/main/..%5Cx/lines", None, 400, "bad_stage_path"),
        ("get", "/v1/stages/obt/main/nope/lines", None, 404, "unknown_stage"),
        ("get", "/v1/timeline?event=no_such_event", None, 404, "unknown_event"),
        ("get", "/v1/relations/阿米娅/没这个人", None, 404, "unknown_operator"),
        ("get", "/v1/review/char_136_hsguma", None, 404, "no_profile"),
        ("get", "/v1/nope", None, 404, "not_found"),
        ("get", "/v1/search?q=", None, 422, "invalid_request"),
    ],
)
def test_bad_input_gets_a_clear_status_never_a_500(
    client: TestClient, method: str, path: str, body: dict[str, Any] | None, status: int, code: str
) -> None:
    r = client.request(method.upper(), path, json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and r.json()["message"]
    if code == "unknown_operator":
        assert isinstance(r.json()["closest"], list)


def test_unknown_operator_lists_the_closest_names(client: TestClient) -> None:
    r = client.get("/v1/operators/" + quote("阿米亚"))
    assert "阿米娅" in r.json()["closest"]


def test_operator_relations_and_evidence(client: TestClient) -> None:
    op = client.get("/v1/operators/陈晖洁").json()  # a real name the registry knows
    assert op["id"] == CHEN and op["tier"] == "A" and op["appearances"] == 2
    assert "ch'en" in op["aliases"] and op["forms"] == [CHEN, "char_1013_chen2"]
    rel = client.get("/v1/operators/阿米娅/relations?limit=3").json()
    assert [e["target_name"] for e in rel["out"]] == ["凯尔希", "特蕾西娅", "陈"]
    assert [e["category"] for e in rel["out"]] == ["curated", "curated", "story-direct"]
    assert {e["source"] for e in rel["in"]} == {KALTS, CHEN}
    ev = client.get("/v1/relations/阿米娅/凯尔希").json()
    assert ev["edges"][0]["predicate"] == "师徒" and ev["reverse"][0]["predicate"] == "监护"
    assert [e["line_id"] for e in ev["evidence"]] == [lid(S1, 2), lid(S1, 3)]
    first = ev["evidence"][0]
    assert first["stage"]["code"] == "T-1" and not first["stale"]
    assert [ln["line_no"] for ln in first["context"]] == [1, 2, 3, 4]
    assert [ln["line_no"] for ln in first["context"] if ln["cited"]] == [2]
    npc = client.get("/v1/relations/阿米娅/npc:特蕾西娅").json()
    assert npc["b"]["kind"] == "npc" and npc["evidence"] == []


def test_stage_lines_with_branches_and_citations(client: TestClient) -> None:
    empty = client.get(f"/v1/stages/{S1}/lines?from=5&to=2")  # an empty range, as a slice
    assert empty.status_code == 200 and empty.json()["lines"] == []
    r = client.get(f"/v1/stages/{S1}/lines?from=2&to=6").json()
    assert r["stage"]["code"] == "T-1" and [ln["line_no"] for ln in r["lines"]] == [2, 3, 4, 5, 6]
    by_no = {ln["line_no"]: ln for ln in r["lines"]}
    assert by_no[5]["kind"] == "choice" and by_no[5]["options"] == ["走南边", "再等等"]
    assert by_no[6]["branch"] == "5:1"
    assert {(c["source"], c["target"]) for c in by_no[3]["cited_by"]} == {
        (AMIYA, KALTS), (KALTS, AMIYA)}  # fmt: skip
    assert by_no[4]["cited_by"] == []


def test_memories_persona_timeline_search(client: TestClient) -> None:
    m = client.get("/v1/operators/阿米娅/memories?q=星熊&k=1").json()
    assert [i["stage_code"] for i in m["items"]] == ["T-2"] and m["kind"] == "appearances"
    assert [s["code"] for s in m["block"]["sources"]["stages"]] == ["T-2"]
    p = client.get("/v1/operators/凯尔希/persona").json()
    assert p["tier"] == "S" and "私人笔记" in p["block"]["text"]
    assert [s["title"] for s in p["sections"]] == ["锚", "我·性格", "私人笔记"]
    t = client.get("/v1/timeline?operator=阿米娅").json()
    assert [s["stage_code"] for s in t["stages"]] == ["T-1", "T-2", "AT-1"]
    assert t["kind"] == "appearances"
    assert [s["stage_code"] for s in client.get("/v1/timeline?event=test_1").json()["stages"]] == [
        "T-1", "T-2"]  # fmt: skip
    s = client.get("/v1/search?q=陈").json()["results"]
    assert s[0]["id"] == CHEN and s[0]["matched"] == "exact"
    assert "char_1013_chen2" in [x["id"] for x in s]
    npc = client.get("/v1/search?q=特蕾").json()["results"]
    assert npc == [{"id": "npc:特蕾西娅", "name": "特蕾西娅", "kind": "npc",
                    "node": "npc:特蕾西娅", "matched": "contains", "available": False}]  # fmt: skip


def test_manifest_makes_an_operator_not_available(kb_home: Path, tmp_path: Path) -> None:
    m = tmp_path / "m.toml"
    m.write_text('operators = ["阿米娅"]\n', encoding="utf-8")
    with client_for(Workspace(kb_settings(kb_home, manifest=m))) as c:
        assert c.post("/v1/turn", json={"operator": "阿米娅", "message": "hi"}).status_code == 200
        r = c.post("/v1/turn", json={"operator": "凯尔希", "message": "hi"})
        assert r.status_code == 403 and r.json()["error"] == "not_available"
        assert c.get("/v1/operators/凯尔希").json()["available"] is False  # still readable


def test_readiness_and_health(kb_home: Path, tmp_path: Path) -> None:
    with client_for(kb_workspace(kb_home)) as c:
        assert c.get("/healthz").json()["ok"] is True
        r = c.get("/readyz")
        assert r.status_code == 200 and r.json()["checks"]["index"]["documents"] > 0
    with client_for(kb_workspace(tmp_path / "empty")) as c:
        r = c.get("/readyz")
        assert r.status_code == 503
        assert not r.json()["checks"]["store"]["ok"] and "no store" in r.json()["checks"][
            "store"]["error"] and "arklore build" in r.json()["hint"]  # fmt: skip
        r = c.post("/v1/turn", json={"operator": "阿米娅", "message": "hi"})
        assert r.status_code == 503 and r.json()["error"] == "not_built"


def test_writes_need_the_admin_token(kb_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(kb_home, home)
    with client_for(kb_workspace(home)) as c:  # no token set: writes disabled
        r = c.post(f"/v1/review/{AMIYA}/approve", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 403 and r.json()["error"] == "writes_disabled"
    user = tmp_path / "user-chars"
    user.mkdir()
    (user / f"{KALTS}.char").write_text("# 凯尔希\n\n## 锚\n\n- 代号：凯尔希\n", encoding="utf-8")
    ws = Workspace(kb_settings(home, admin_token=TOKEN, chars_dir=user))
    with client_for(ws) as c:
        url = f"/v1/review/{AMIYA}/approve"
        assert c.post(url).status_code == 401
        assert c.post(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        q = c.get("/v1/review").json()
        assert q["writes_enabled"] and q["entries"][0]["char_id"] == AMIYA  # drafts first
        d = c.get(f"/v1/review/{AMIYA}").json()
        assert d["profile"]["tier"] == "B" and all(x["verbatim"] for x in d["profile"]["quotes"])
        assert d["profile"]["quotes"][0]["source_text"].startswith("凯尔希医生")
        r = c.post(url, headers=auth)
        assert r.status_code == 200 and r.json()["tier"] == "A"
        assert c.post(url, headers=auth).json()["error"] == "not_a_draft"
        assert c.get("/v1/operators/阿米娅/persona").json()["tier"] == "A"
        text = "# 阿米娅\n\n## 锚\n\n- 代号：阿米娅\n\n## 我·性格\n\n一个人写的性格。\n"
        r = c.put("/v1/operators/Amiya/persona", json={"text": text}, headers=auth)
        assert r.status_code == 200 and r.json()["tier"] == "S"
        assert (home / "chars" / f"{AMIYA}.char").read_text(encoding="utf-8") == text
        assert "一个人写的性格" in c.get("/v1/operators/阿米娅/persona").json()["block"]["text"]
        r = c.put("/v1/operators/Amiya/persona", json={"text": "no title"}, headers=auth)
        assert r.status_code == 400 and r.json()["error"] == "bad_profile"
        r = c.put("/v1/operators/凯尔希/persona", json={"text": text}, headers=auth)
        assert r.status_code == 409 and r.json()["error"] == "read_only"
        assert "一个人写的性格" not in (user / f"{KALTS}.char").read_text(encoding="utf-8")


def test_the_admin_token_is_never_logged_or_shown(kb_home: Path, caplog) -> None:
    ws = Workspace(kb_settings(kb_home, admin_token=TOKEN))
    assert TOKEN not in repr(ws.settings)
    with client_for(ws) as c:
        c.post(f"/v1/review/{AMIYA}/approve", headers={"Authorization": "Bearer nope"})
        body = c.get("/openapi.json").text + c.get("/metrics").text + c.get("/readyz").text
    assert TOKEN not in body and TOKEN not in caplog.text


def test_reply_from_the_stub_model_plain_and_streamed(
    kb_home: Path, llm_stub: StubServer, tmp_path: Path
) -> None:
    env = stub_env(llm_stub)
    settings = Settings.from_env({**env, "ARKLORE_HOME": str(tmp_path / "h"),
                                  "ARKLORE_EMBEDDER": "hash"})  # fmt: skip
    settings = settings.model_copy(update={"home": kb_home})
    llm_stub.script("你好", Reply.text("博士，欢迎回来。"))
    llm_stub.script("讲个故事", Reply.text("从前，罗德岛在荒野上行驶。"))
    with client_for(Workspace(settings)) as c:
        body = {"operator": "阿米娅", "message": "你好", "reply": True,
                "history": [{"role": "user", "content": "在吗"},
                            {"role": "assistant", "content": "在的"}]}  # fmt: skip
        r = c.post("/v1/turn", json=body)
        assert r.status_code == 200 and r.json()["reply"] == "博士，欢迎回来。"
        sent = llm_stub.calls("你好")[0].body["messages"]
        assert sent[0]["role"] == "system" and "【阿米娅的人设】" in sent[0]["content"]
        assert [m["content"] for m in sent[1:]] == ["在吗", "在的", "你好"]
        body = {"operator": "阿米娅", "message": "讲个故事", "reply": True, "stream": True}
        with c.stream("POST", "/v1/turn", json=body) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            raw = b"".join(r.iter_bytes()).decode()
    events = [(blk.split("\n")[0].removeprefix("event: "),
               orjson.loads(blk.split("\n")[1].removeprefix("data: ")))
              for blk in raw.strip().split("\n\n")]  # fmt: skip
    names = [e for e, _ in events]
    assert names[0] == "turn" and names[-1] == "done" and names.count("delta") > 3
    assert events[0][1]["blocks"][0]["name"] == "persona"
    assert "".join(d["text"] for e, d in events if e == "delta") == "从前，罗德岛在荒野上行驶。"
    assert events[-1][1]["reply"] == "从前，罗德岛在荒野上行驶。"
    assert llm_stub.calls("讲个故事")[0].body["stream"] is True


def test_a_model_failure_keeps_the_blocks_and_says_why(kb_home: Path, llm_stub: StubServer) -> None:
    settings = Settings.from_env({**stub_env(llm_stub, LLM_MAX_RETRIES="0"),
                                  "ARKLORE_EMBEDDER": "hash"}).model_copy(update={"home": kb_home})  # fmt: skip
    llm_stub.script("坏掉", Reply.unauthorized())
    with client_for(Workspace(settings)) as c:
        r = c.post("/v1/turn", json={"operator": "阿米娅", "message": "坏掉", "reply": True})
        assert r.status_code == 200 and r.json()["reply"] is None
        assert "HTTP 401" in r.json()["reply_error"] and len(r.json()["blocks"]) == len(BLOCK_NAMES)


def test_a_rebuild_switches_underneath_without_a_restart(
    kb_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_mod, "WATCH_INTERVAL", 0.0)
    home = tmp_path / "home"
    shutil.copytree(kb_home, home)
    with client_for(kb_workspace(home, tier_c_relations=True)) as c:  # 独行者 has no profile
        before = c.get("/v1/operators/独行者/relations").json()
        assert before["out"] == [] and c.get("/v1/search?q=独行者").status_code == 200
        g = write_graph(home, variant=2)  # a new graph with 独行者 -> 阿米娅
        build_rag(home, g)
        after = c.get("/v1/operators/独行者/relations").json()
        assert [e["target"] for e in after["out"]] == [AMIYA]
        assert after["out"][0]["text"].startswith("第2版")
        ctx = c.post("/v1/relation-context", json={"operator": LONELY, "message": "阿米娅呢"})
        assert ctx.json()["anchors"][0]["text"].startswith("第2版")


def test_metrics_count_routes_blocks_and_context_rates(client: TestClient) -> None:
    named = client.post("/v1/turn", json={"operator": "阿米娅", "message": "星熊呢"})
    client.post("/v1/turn", json={"operator": "星熊", "message": "你好"})  # tier C: empty
    rel = next(b for b in named.json()["blocks"] if b["name"] == "relations")
    assert rel["meta"]["named"] == rel["meta"]["named_related"] == [HOSHI]
    client.post("/v1/relation-context", json={"operator": "陈", "message": "诗怀雅"})
    client.get("/v1/operators/没这个人")
    text = client.get("/metrics").text
    assert 'arklore_http_requests_total{method="POST",route="/v1/turn",status="200"} 2.0' in text
    assert 'route="/v1/operators/{name}",status="404"} 1.0' in text
    assert 'arklore_http_request_duration_seconds_count{method="POST",route="/v1/turn"} 2.0' in text
    assert 'arklore_turn_block_tokens_count{block="persona"} 2.0' in text
    assert "arklore_turns_total 2.0" in text
    assert 'arklore_relation_context_total{endpoint="turn"} 2.0' in text
    assert 'arklore_relation_context_empty_total{endpoint="turn"} 1.0' in text
    assert 'arklore_relation_context_contextual_total{endpoint="turn"} 1.0' in text
    assert 'arklore_relation_context_total{endpoint="relation_context"} 1.0' in text
    # recall on named people: 星熊 named and told; then one she has no relation to
    assert "arklore_named_people_total 1.0" in text
    assert "arklore_named_people_related_total 1.0" in text
    client.post("/v1/turn", json={"operator": "阿米娅", "message": "Loner呢"})  # no relation
    text = client.get("/metrics").text
    assert "arklore_named_people_total 2.0" in text
    assert "arklore_named_people_related_total 1.0" in text


def test_a_story_point_gives_the_same_turn_over_http_as_in_python(kb_home: Path) -> None:
    # the three stages are placed by release order only (T-1, T-2, then AT-1): a chat set
    # at T-1 knows the first stage alone
    body = {"operator": "阿米娅", "message": "陈呢？星熊呢？", "until": "T-1"}
    with kb_workspace(kb_home) as ws:
        local = ws.chat.turn("阿米娅", body["message"], until="T-1").to_dict()
        rc = ws.chat.relation_context(ws.chat.speaker("陈"), "阿米娅呢", until="T-1")
        whole = ws.chat.turn("阿米娅", body["message"]).to_dict()
    with client_for(kb_workspace(kb_home)) as c:
        got = c.post("/v1/turn", json=body).json()
        ctx = c.post("/v1/relation-context",
                     json={"operator": "陈", "message": "阿米娅呢", "until": "T-1"}).json()  # fmt: skip
        bad = c.post("/v1/turn", json=body | {"until": "T-9"})
    assert got["system_prompt"] == local["system_prompt"] and got["until"] == local["until"]
    assert got["until"]["group"] == "test_1" and got["until"]["query"] == "T-1"

    def cited(turn: dict[str, Any]) -> set[str]:
        return {x.split("#")[0] for b in turn["blocks"] for x in b["sources"]["line_ids"]}

    assert cited(got) <= {S1} and cited(got) != cited(whole)
    assert ctx["held_back"] == rc.held_back and ctx["text"] == rc.text
    assert bad.status_code == 400 and bad.json()["error"] == "unknown_story_point"
    assert "T-1" in bad.json()["hint"]  # the closest codes


def test_openapi_lists_every_route_and_the_pages_are_served(client: TestClient) -> None:
    paths = set(client.get("/openapi.json").json()["paths"])
    assert {
        "/v1/turn", "/v1/relation-context", "/v1/operators/{name}",
        "/v1/operators/{name}/relations", "/v1/relations/{a}/{b}",
        "/v1/operators/{name}/memories", "/v1/operators/{name}/persona", "/v1/timeline",
        "/v1/stages/{stage_path}/lines", "/v1/search", "/healthz", "/readyz", "/metrics",
        "/v1/review", "/v1/review/{char_id}", "/v1/review/{char_id}/approve",
    } <= paths  # fmt: skip
    for page in ("/", "/stage", "/operator", "/review", "/chat"):
        r = client.get(page)
        assert r.status_code == 200 and "<html" in r.text and "https://" not in r.text
    assert client.get("/static/common.js").status_code == 200
