"""The CLI and the HTTP service call the same facade step, so the same input gives the same
answer: one test per CLI/HTTP pair (persona, approve, memories with and without a query,
timeline, relation, operator) on the invented knowledge base of ``support.service_world``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from support.service_world import AMIYA, CHEN, KALTS, kb_workspace, make_kb
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.errors import ArkloreError
from arklore.profiles.charfile import CharProfile
from arklore.service.app import create_app

TOKEN = "parity-token-8c1d"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = make_kb(tmp_path / "home")
    for var, value in {"ARKLORE_HOME": str(h), "ARKLORE_EMBEDDER": "hash",
                       "ARKLORE_ADMIN_TOKEN": TOKEN}.items():  # fmt: skip
        monkeypatch.setenv(var, value)
    for var in ("ARKLORE_CHARS_DIR", "ARKLORE_MANIFEST", "ARKLORE_TIER_C_RELATIONS"):
        monkeypatch.delenv(var, raising=False)
    return h


@pytest.fixture
def http(home: Path) -> Iterator[TestClient]:
    ws = kb_workspace(home, admin_token=TOKEN)
    with TestClient(create_app(ws, warm_up=False), raise_server_exceptions=False) as c:
        yield c


def cli(*args: str) -> tuple[int, Any]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, (orjson.loads(r.stdout) if r.stdout.strip() else None)


def without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


@pytest.mark.parametrize("name", ["阿米娅", "凯尔希", "陈晖洁", "假日威龙陈", "星熊"])
def test_persona_is_the_same_sections_from_both(home: Path, http: TestClient, name: str) -> None:
    code, from_cli = cli("persona", name, "--json")
    assert code == 0
    from_http = http.get(f"/v1/operators/{name}/persona").json()
    assert without(from_http, "block") == from_cli
    # the chat block renders exactly those sections
    titles = [i["title"] for i in from_http["block"]["items"]]
    assert titles == [s["title"] for s in from_cli["sections"]]


def test_an_alternate_form_gets_her_base_forms_persona_everywhere(http: TestClient) -> None:
    _, p = cli("persona", "假日威龙陈", "--json")
    assert p["tier"] == "A" and p["profile_of"] == CHEN
    turn = http.post("/v1/turn", json={"operator": "假日威龙陈", "message": "你好"}).json()
    persona = next(b for b in turn["blocks"] if b["name"] == "persona")
    assert persona["meta"]["tier"] == "A" and persona["meta"]["profile_of"] == CHEN


def test_a_hand_edited_b_files_quotes_are_rechecked_for_the_cli_and_the_chat(
    home: Path, http: TestClient
) -> None:
    path = home / "chars" / f"{AMIYA}.char"
    path.write_text(path.read_text(encoding="utf-8").replace("认真、温柔", "认真"), "utf-8")
    _, p = cli("persona", "阿米娅", "--json")
    assert p["hand_edited"] and "语录" in [s["title"] for s in p["sections"]]
    turn = http.post("/v1/turn", json={"operator": "阿米娅", "message": "你好"}).json()
    persona = next(b for b in turn["blocks"] if b["name"] == "persona")
    assert [i["title"] for i in persona["items"]] == [s["title"] for s in p["sections"]]


@pytest.mark.parametrize("accept", [False, True])
def test_approving_a_hand_edited_draft_needs_the_same_consent(
    home: Path, tmp_path: Path, accept: bool
) -> None:
    path = home / "chars" / f"{AMIYA}.char"
    path.write_text(path.read_text(encoding="utf-8").replace("认真、温柔", "认真"), "utf-8")
    before = path.read_bytes()
    other = tmp_path / "other"
    shutil.copytree(home, other)
    args = ["review", "approve", "阿米娅"] + (["--accept-edits"] if accept else [])
    r = CliRunner().invoke(app, args)  # an error is raised to main(), which prints one_line()
    cli_ok = r.exit_code == 0 and r.exception is None
    ws = kb_workspace(other, admin_token=TOKEN)
    with TestClient(create_app(ws, warm_up=False), raise_server_exceptions=False) as c:
        url = f"/v1/review/{AMIYA}/approve" + ("?accept_edits=true" if accept else "")
        resp = c.post(url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert cli_ok is accept and (resp.status_code == 200) is accept
    other_path = other / "chars" / f"{AMIYA}.char"
    if accept:
        assert CharProfile.read(path).tier == CharProfile.read(other_path).tier == "A"
        assert path.read_bytes() == other_path.read_bytes()
    else:
        assert resp.status_code == 409 and resp.json()["error"] == "hand_edited"
        assert isinstance(r.exception, ArkloreError)
        assert "--accept-edits" in r.exception.one_line()
        assert path.read_bytes() == before == other_path.read_bytes()  # unchanged by both


@pytest.mark.parametrize("query", ["", "星熊", "北边的桥"])
def test_memories_are_the_same_with_and_without_a_query(http: TestClient, query: str) -> None:
    args = ["memories", "阿米娅"] + ([query] if query else []) + ["--k", "2", "--json"]
    code, from_cli = cli(*args)
    assert code == 0
    from_http = http.get("/v1/operators/阿米娅/memories", params={"q": query, "k": 2}).json()
    assert without(from_http, "block") == from_cli
    assert from_http["block"]["items"] == from_cli["items"]


def test_memories_as_text_say_each_heading_once_and_quote_her_lines(home: Path) -> None:
    """The text form of the same answer: a stage's heading once per entry, then the game's
    summary and her own lines there, as the JSON gives them."""
    with kb_workspace(home) as ws:
        ws.rag.index_exemplars()  # her lines are quoted once her scenes are built
    code, data = cli("memories", "阿米娅", "星熊", "--k", "2", "--json")
    assert code == 0 and data["kind"] == "appearances"
    r = CliRunner().invoke(app, ["memories", "阿米娅", "星熊", "--k", "2"])
    assert r.exit_code == 0, r.output
    quotes = [q for item in data["items"] for q in item["quotes"]]
    assert quotes, "the knowledge base gives her lines to quote"
    for item in data["items"]:
        heading = item["text"].split("：")[0]
        assert r.stdout.count(heading) == 1, heading
    for q in quotes:
        assert f"{q['speaker']}：「{q['text']}」" in r.stdout


@pytest.mark.parametrize("args", [{"operator": "阿米娅"}, {"operator": "陈"}, {"event": "test_1"}])
def test_timeline_is_one_json_shape(http: TestClient, args: dict[str, str]) -> None:
    flags = [x for k, v in args.items() for x in (f"--{k}", v)]
    code, from_cli = cli("timeline", *flags, "--json")
    assert code == 0
    assert http.get("/v1/timeline", params=args).json() == from_cli
    assert from_cli["stages"]


def test_relation_edges_are_the_same(http: TestClient) -> None:
    code, from_cli = cli("graph", "relation", "阿米娅", "凯尔希", "--json")
    assert code == 0 and from_cli
    from_http = http.get("/v1/relations/阿米娅/凯尔希").json()

    def key(e: dict[str, Any]) -> tuple[Any, ...]:
        return (e["source"], e["target"], e["predicate"], round(e["strength"], 6))

    assert [key(e) for e in from_http["edges"]] == [key(e) for e in from_cli]
    assert from_http["a"]["id"] == AMIYA and from_http["b"]["id"] == KALTS


@pytest.mark.parametrize("name", ["陈晖洁", "假日威龙陈", "Amiya"])
def test_operator_record_is_the_same(http: TestClient, name: str) -> None:
    code, from_cli = cli("operators", "show", name, "--json")
    assert code == 0
    from_http = http.get(f"/v1/operators/{name}").json()
    assert {k: from_http[k] for k in from_cli} == from_cli
    assert {"tier", "graph_node", "available", "appearances", "relations"} <= set(from_http)


def test_an_unknown_name_gets_the_same_suggestions(http: TestClient) -> None:
    r = CliRunner().invoke(app, ["persona", "阿米亚"])  # main() prints exception.one_line()
    body = http.get("/v1/operators/阿米亚/persona").json()
    assert body["error"] == "unknown_operator" and "阿米娅" in body["closest"]
    assert isinstance(r.exception, ArkloreError)
    assert "did you mean " + ", ".join(body["closest"]) in r.exception.one_line()
