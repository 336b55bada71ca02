"""Rules the service shares with the CLI and the Python API, checked where a client sees
them: the one tier-C rule on every way to ask for relation context, review quotes verified
from the store (voice quotes marked unverified without the voice table), and no server path
in any answer an anonymous client gets."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from support.service_world import (
    CHEN,
    HOSHI,
    S2,
    SWIRE,
    kb_workspace,
    lid,
    make_kb,
    write_swire_profile,
)
from typer.testing import CliRunner

import arklore
from arklore.cli.app import app as cli_app
from arklore.service.app import create_app


@pytest.fixture(scope="module")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = make_kb(tmp_path_factory.mktemp("rules") / "home")
    write_swire_profile(home)
    return home


def client_for(home: Path, **kw) -> TestClient:
    return TestClient(create_app(kb_workspace(home, **kw), warm_up=False))


def test_tier_c_gets_no_relation_context_on_any_path(
    kb_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """星熊 has no profile (tier C): HTTP, CLI and Python give her no relation context, and
    all three give it once the user opts in."""
    monkeypatch.setenv("ARKLORE_HOME", str(kb_home))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    monkeypatch.delenv("ARKLORE_TIER_C_RELATIONS", raising=False)
    for opted in (False, True):
        if opted:
            monkeypatch.setenv("ARKLORE_TIER_C_RELATIONS", "1")
        with client_for(kb_home, tier_c_relations=opted) as c:
            http = c.post("/v1/relation-context", json={"operator": "星熊", "message": "陈呢"})
        assert http.status_code == 200
        cli = CliRunner().invoke(cli_app, ["context", "星熊", "陈呢", "--json"])
        assert cli.exit_code == 0, cli.output
        arklore.set_default_workspace(None)  # the Python API reads the environment afresh
        try:
            py = arklore.get_relation_context(HOSHI, "陈呢")
        finally:
            arklore.set_default_workspace(None)
        texts = [http.json()["text"], orjson.loads(cli.stdout)["text"], py]
        if opted:
            assert all("陈" in t for t in texts), texts
            assert http.json()["anchors"][0]["target_id"] == CHEN
        else:
            assert texts == ["", "", ""]
            assert "tier C" in http.json()["warnings"][0]


def test_review_quotes_are_verified_from_the_store_without_the_data(kb_home: Path) -> None:
    """No ARKLORE_GAMEDATA (as a plain `arklore serve`): the story quote is checked against
    the stored line, the voice quote is unverified with the reason, never "not found"."""
    with client_for(kb_home) as c:
        d = c.get(f"/v1/review/{SWIRE}").json()
    story, voice = d["profile"]["quotes"]
    assert story["source_id"] == f"story:{lid(S2, 3)}"
    assert story["verbatim"] is True and story["source_text"].startswith("陈，你又抢在我前面了")
    assert voice["verbatim"] is None and "ARKLORE_GAMEDATA" in voice["unverified"]


def test_no_answer_to_an_anonymous_client_holds_a_server_path(
    kb_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(kb_home, home)
    user = tmp_path / "user-chars"  # a user folder of profiles (ARKLORE_CHARS_DIR)
    user.mkdir()
    (user / f"{HOSHI}.char").write_text("# 星熊\n\n## 锚\n\n- 代号：星熊\n", encoding="utf-8")
    chen = home / "chars" / f"{CHEN}.char"
    (home / "chars" / f"{CHEN}.char.draft").write_bytes(chen.read_bytes())  # a draft beside
    names = ["阿米娅", "凯尔希", "陈", "星熊", "诗怀雅", "独行者"]
    answers: dict[str, str] = {}
    with client_for(home, chars_dir=user) as c:
        queue = c.get("/v1/review")
        answers["/v1/review"] = queue.text
        ids = [e["char_id"] for e in queue.json()["entries"]]
        assert {CHEN, HOSHI, SWIRE} <= set(ids)
        for cid in ids:
            answers[f"/v1/review/{cid}"] = c.get(f"/v1/review/{cid}").text
        for n in names:
            answers[f"persona {n}"] = c.get(f"/v1/operators/{n}/persona").text
            answers[f"operator {n}"] = c.get(f"/v1/operators/{n}").text
            answers[f"turn {n}"] = c.post("/v1/turn", json={"operator": n, "message": "你好",
                                                           "participants": ["陈"]}).text  # fmt: skip
            answers[f"context {n}"] = c.post("/v1/relation-context",
                                             json={"operator": n, "message": "陈呢"}).text  # fmt: skip
    shown = [p for p in queue.json()["entries"] if p.get("path")]
    assert {e["path"] for e in shown} >= {f"chars/{CHEN}.char", f"user:{HOSHI}.char"}
    for where, text in answers.items():
        for secret in (str(tmp_path), str(home), str(user), "/tmp/"):
            assert secret not in text, f"{where} shows {secret}"
