"""What the pages read from the API about names and where to start: every operator named
apart (``NamesFacade.unique_name``, the one rule cards and model ids use), the most connected
operators from the graph facade, whether a chat model is configured. Over the pages' world
(:mod:`support.pages_world`: two 阿米娅, two 暮落, 独行者 with twenty relations)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from support.pages_world import AMIYA_GUARD, DUSK, DUSK2, make_pages_kb
from support.service_world import AMIYA, CHEN, LONELY, kb_workspace

from arklore.service.app import create_app
from arklore.settings import Settings
from arklore.workspace import Workspace


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_pages_kb(tmp_path_factory.mktemp("names") / "home")


@pytest.fixture
def client(home: Path) -> Iterator[TestClient]:
    app = create_app(kb_workspace(home), warm_up=False)
    with TestClient(app, raise_server_exceptions=False, client=("127.0.0.1", 50000)) as c:
        yield c


def test_operators_sorted_by_connections_are_the_graphs_most_connected_first(
    client: TestClient,
) -> None:
    r = client.get("/v1/operators", params={"sort": "connected", "limit": 3})
    assert r.status_code == 200
    got = [(o["id"], o["name"], o["relations"]) for o in r.json()["operators"]]
    assert got == [(LONELY, "独行者", 20), (AMIYA, "阿米娅", 7), (CHEN, "陈", 3)]


def test_every_operator_has_a_name_that_names_her_alone_as_the_model_ids(
    client: TestClient,
) -> None:
    ops = client.get("/v1/operators").json()["operators"]
    names = {o["id"]: o["name"] for o in ops}
    assert len(set(names.values())) == len(names) == 10
    assert (names[AMIYA], names[AMIYA_GUARD]) == ("阿米娅", "阿米娅（近卫）")
    assert (names[DUSK], names[DUSK2]) == ("暮落", "暮落（异格）")
    models = {m["char_id"]: m["id"] for m in client.get("/v1/models").json()["data"]}
    assert models == names  # one rule: the pages show the names a chat app shows
    assert {o["display_name"] for o in ops if o["id"] in (AMIYA, AMIYA_GUARD)} == {"阿米娅"}


def test_search_review_and_operator_name_two_forms_apart(client: TestClient) -> None:
    found = client.get("/v1/search", params={"q": "阿米娅"}).json()["results"]
    assert [(r["id"], r["name"]) for r in found] == [
        (AMIYA, "阿米娅"), (AMIYA_GUARD, "阿米娅（近卫）"),
    ]  # fmt: skip
    entries = client.get("/v1/review").json()["entries"]
    queue = {e["char_id"]: e["name"] for e in entries}
    assert (queue[AMIYA], queue[AMIYA_GUARD]) == ("阿米娅", "阿米娅（近卫）")
    assert len(set(queue.values())) == len(queue)
    assert client.get(f"/v1/review/{AMIYA_GUARD}").json()["name"] == "阿米娅（近卫）"
    info = client.get(f"/v1/operators/{quote(AMIYA_GUARD)}").json()
    assert info["unique_name"] == "阿米娅（近卫）"
    assert info["form_names"] == ["阿米娅", "阿米娅（近卫）"]


def test_chat_model_says_whether_replies_can_be_written(home: Path) -> None:
    base = {"ARKLORE_HOME": str(home), "ARKLORE_EMBEDDER": "hash"}
    local = {"LLM_CHAT_BASE_URL": "http://127.0.0.1:9/v1"}  # a local server: no key needed
    for env, configured in ((base, False), (base | local, True)):
        app = create_app(Workspace(Settings.from_env(env)), warm_up=False)
        with TestClient(app, client=("127.0.0.1", 50000)) as c:
            assert c.get("/v1/llm").json() == {"task": "chat", "configured": configured}
