"""The composition root: settings in one module, migrations per layer, one home per rule, the
public API. Invented data only."""

from __future__ import annotations

import re
import shutil
import sqlite3
from dataclasses import fields
from pathlib import Path

import pytest
from support.tree_world import make_workspace, write_tree

import arklore
from arklore.base.db import Migration, split_sql, table_columns
from arklore.core.errors import ConfigError, IncompleteIngestError, NotIngestedError
from arklore.core.model import DOCTOR_NAMES, Line, LineKind, is_doctor
from arklore.core.text import strip_json_fence
from arklore.core.tokens import count_tokens
from arklore.settings import Settings
from arklore.workspace import STORE_MIGRATIONS, open_store

SRC = Path(arklore.__file__).parent
V01_STORE = Path(__file__).parent / "fixtures" / "store_v0_1.sqlite3"


# -- settings --------------------------------------------------------------------------------
def test_only_the_settings_module_and_the_entry_points_read_the_environment() -> None:
    allowed = {"settings.py", "api.py", "cli/_common.py", "service/app.py", "service/run.py",
               "docfigs.py"}  # fmt: skip  # `python -m arklore.docfigs measure` (make docs-measure)
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel not in allowed and re.search(r"os\.environ|os\.getenv|from_env\(", text):
            offenders.append(rel)
    assert offenders == []
    assert "os.environ" in (SRC / "settings.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "env,needle",
    [
        ({"ARKLORE_RAG_TOKEN_BUDGET": "abc"}, "ARKLORE_RAG_TOKEN_BUDGET='abc'"),
        ({"ARKLORE_RAG_TOKEN_BUDGET": "-5"}, "ARKLORE_RAG_TOKEN_BUDGET='-5'"),
        ({"ARKLORE_E5_THREADS": "-1"}, "ARKLORE_E5_THREADS='-1'"),
        ({"ARKLORE_MAX_MESSAGE_CHARS": "lots"}, "ARKLORE_MAX_MESSAGE_CHARS='lots'"),
        ({"ARKLORE_EMBEDDER": "bert"}, "ARKLORE_EMBEDDER='bert': must be one of"),
        ({"CHROMA_PORT": "70000"}, "CHROMA_PORT='70000'"),
        ({"LLM_TIMEOUT": "soon"}, "LLM_TIMEOUT='soon'"),
        ({"LLM_MAX_RETRIES": "-1"}, "LLM_MAX_RETRIES='-1'"),
        ({"LLM_BASE_URL": "api.deepseek.com"}, "LLM_BASE_URL='api.deepseek.com'"),
        ({"LLM_JSON_MODE": "maybe"}, "LLM_JSON_MODE='maybe': must be 1 or 0"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        Settings.from_env(env)
    line = exc.value.one_line()
    assert needle in line and "\n" not in line and exc.value.exit_code == 2


def test_settings_defaults_and_per_task_llm_overrides() -> None:
    s = Settings.from_env({"LLM_API_KEY": "sk-abcd", "LLM_EVENTS_MODEL": "big"})
    assert (s.rag_token_budget, s.max_message_chars, s.embedder) == (800, 8000, "e5-small")
    assert s.home.is_absolute() and s.origins["home"] == "default"  # see tests/test_setup.py
    assert s.llm_config("events").model == "big" and s.llm_config("relations").model != "big"
    assert s.llm.secrets() == ["sk-abcd"] and "sk-abcd" not in repr(s)


def test_an_api_key_value_is_never_shown_in_an_error() -> None:
    with pytest.raises(ConfigError) as exc:
        Settings.from_env({"LLM_API_KEY": "sk-secret", "LLM_TIMEOUT": "x"})
    assert "sk-secret" not in exc.value.one_line()


def test_printed_settings_mask_every_secret() -> None:
    s = Settings.from_env(
        {"LLM_API_KEY": "sk-a", "LLM_EVENTS_API_KEY": "sk-b", "ARKLORE_ADMIN_TOKEN": "tok-c"}
    )
    shown = str(s.redacted())
    assert not any(secret in shown for secret in ("sk-a", "sk-b", "tok-c"))
    assert (
        s.redacted()["admin_token"] == "***"
        and Settings.from_env({}).redacted()["admin_token"] == ""
    )


# -- migrations ------------------------------------------------------------------------------
def test_store_made_by_release_0_1_is_migrated_in_place_and_a_second_open_applies_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "arklore.sqlite3"
    shutil.copy(V01_STORE, db)
    old = sqlite3.connect(db)
    assert "char_id" in table_columns(old, "speakers")
    old_ids = dict(old.execute("SELECT name, char_id FROM speakers WHERE char_id IS NOT NULL"))
    old_lines = old.execute("SELECT * FROM lines ORDER BY 1, 2, 3").fetchall()
    old.close()
    assert old_ids, "the fixture must have resolved speakers to migrate"

    store = open_store(db)
    assert store.db.applied == [m.key for m in STORE_MIGRATIONS]
    from arklore.extract.store import load_edges
    from arklore.names.build import speaker_ids

    assert "char_id" not in table_columns(store.conn, "speakers")
    assert speaker_ids(store) == old_ids
    # the lines are kept, each in scene 0 until the next ingest reads its stage again
    new_lines = store.conn.execute("SELECT * FROM lines ORDER BY 1, 2, 3").fetchall()
    assert [row[:-1] for row in new_lines] == old_lines and {row[-1] for row in new_lines} == {0}
    (edge,) = load_edges(store, "obt/main/level_test_01_beg")
    assert edge.predicate == "同事" and edge.evidence[0].line_id == edge.evidence_line_ids[0]
    run = store.last_ingest_run()
    assert run is not None and run.finished
    store.close()

    again = open_store(db)
    assert again.db.applied == []
    assert again.db.applied_migrations() == [m.key for m in STORE_MIGRATIONS]
    again.close()


def test_a_migration_and_its_record_commit_together(tmp_path: Path) -> None:
    from arklore.base.db import Database

    def boom(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half (x)")
        raise RuntimeError("killed mid-migration")

    migrations = [Migration("t", "001", "CREATE TABLE a (x)"), Migration("t", "002", run=boom)]
    with pytest.raises(RuntimeError):
        Database(tmp_path / "x.sqlite3", migrations)
    db = Database(tmp_path / "x.sqlite3")
    assert db.applied_migrations() == ["t/001"]
    assert table_columns(db.conn, "half") == []  # rolled back with its record


def test_sql_is_split_on_statements_not_on_every_semicolon() -> None:
    script = "CREATE TABLE a (x TEXT DEFAULT ';'); -- a comment; here\nCREATE INDEX i ON a (x);"
    assert split_sql(script) == [
        "CREATE TABLE a (x TEXT DEFAULT ';');",
        "-- a comment; here\nCREATE INDEX i ON a (x);",
    ]


def test_tables_exist_whatever_modules_were_imported(tmp_path: Path) -> None:
    """A fresh store has every layer's tables: nothing depends on import side effects."""
    store = open_store(tmp_path / "arklore.sqlite3")
    names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
    assert {"stages", "lines", "speakers", "operators", "aliases", "speaker_ids",
            "relation_edges", "relation_chunks", "ingest_runs"} <= names  # fmt: skip


# -- the workspace's store checks -----------------------------------------------------------
def test_commands_refuse_a_store_whose_last_ingest_did_not_finish(tmp_path: Path) -> None:
    gamedata, astr = write_tree(tmp_path / "data")
    ws = make_workspace(tmp_path / "home", gamedata, astr)
    with pytest.raises(NotIngestedError):
        ws.corpus.store()
    ws.ingest()
    assert ws.corpus.store().counts()["avg_stages"] == 2
    ws.corpus.store().begin_ingest_run(
        str(gamedata), str(astr), ["avg"]
    )  # a run that never finished
    ws.close()
    ws = make_workspace(tmp_path / "home", gamedata, astr)
    with pytest.raises(IncompleteIngestError) as exc:
        ws.corpus.store()
    assert "did not finish" in exc.value.one_line() and "arklore ingest" in exc.value.hint
    ws.ingest()  # the next ingest completes the store (and rebuilds the names)
    assert ws.corpus.store().counts()["avg_stages"] == 2


# -- one home for each rule ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,addressee",
    [
        ("凯尔希，你来看看。", "凯尔希"),
        ("好了。凯尔希，你来看看。", "凯尔希"),
        ("……是你吗，凯尔希？", "凯尔希"),
        ("凯尔希医生，请坐。", "凯尔希"),
        ("我说过凯尔希会来的。", None),
        ("好了，我们走吧。", None),
    ],
)
def test_the_gate_the_interaction_scan_and_the_chat_rules_agree_on_vocatives(
    text: str, addressee: str | None
) -> None:
    from arklore.core.operators import Operator
    from arklore.extract.presence import vocatives
    from arklore.graph.interaction import VocativeFinder
    from arklore.graph.people import People
    from arklore.names import rules
    from arklore.names.aliases import fold
    from arklore.names.matcher import build_matcher
    from arklore.names.registry import Registry

    speakers = {"凯尔希", "阿米娅"}
    by_gate = vocatives(text, speakers)
    ops = [Operator("char_003_kalts", "凯尔希"), Operator("char_002_amiya", "阿米娅")]
    people = People(Registry({o.char_id: o for o in ops}), build_matcher(operators=ops))
    by_scan = VocativeFinder(people, {"char_003_kalts", "char_002_amiya"})(text)
    assert by_gate == ([addressee] if addressee else [])
    assert by_scan == (["char_003_kalts"] if addressee else [])
    start = text.find("凯尔希")
    if start >= 0 and not text[start + 3 :].startswith("医生"):
        t = fold(text)
        how = rules.decide(t, start, start + 3, "凯尔希", ("char_003_kalts",), -1, -1,
                           frozenset(), rules.RuleConfig(subject=False))  # fmt: skip
        assert (how == "vocative") == (addressee is not None)


def test_one_set_of_doctor_names_for_the_graph_the_gates_and_presence() -> None:
    from arklore.extract.presence import speaks_in
    from arklore.graph.model import DOCTOR_ID
    from arklore.graph.people import npc_id

    for name in DOCTOR_NAMES:
        assert npc_id(name) == DOCTOR_ID and is_doctor(name) and is_doctor(f"「{name}」")
    choice = Line("t/s", 1, LineKind.CHOICE, "走吧", speaker="博士")
    assert all(speaks_in(name, [choice], lambda a, b: a == b) for name in DOCTOR_NAMES)


def test_the_cost_estimate_and_the_context_budget_count_tokens_the_same_way() -> None:
    from arklore.llm import ChatRequest, estimate
    from arklore.llm.estimate import MESSAGE_OVERHEAD_TOKENS
    from arklore.rag.context import fit_budget

    block = "【阿米娅身边的人】\n- 凯尔希：严厉又可靠的老师，Dr.{@nickname} 也这么看。😀"
    req = ChatRequest(task="t", messages=[{"role": "user", "content": block}])
    assert estimate([req], expected_output_tokens=0).input_tokens == (
        count_tokens(block) + MESSAGE_OVERHEAD_TOKENS
    )
    # the budget check uses the same counter by default
    import inspect

    from arklore.rag.context import RelationRAG

    default = inspect.signature(RelationRAG.__init__).parameters["token_counter"].default
    assert default is count_tokens and callable(fit_budget)


def test_model_replies_in_json_fences_are_read_the_same_by_the_llm_layer_and_the_task() -> None:
    from arklore.extract.relations import parse_response
    from arklore.llm import ChatRequest
    from arklore.llm.service import decode

    fenced = '```json\n{"edges": []}\n```'
    assert strip_json_fence(fenced) == '{"edges": []}'
    data, _ = decode(ChatRequest(task="t", messages=[]), fenced)
    assert data == {"edges": []} and parse_response(fenced).edges == []


def test_every_file_arklore_writes_goes_through_the_atomic_writer(tmp_path: Path) -> None:
    """The atomic writer gives files the usual permissions (mkstemp alone gives 0600): the
    graph, an export and the index pointer all have them."""
    import os

    from support.rag_world import build, small_graph

    from arklore.graph.io import save_graph

    umask = os.umask(0o022)
    os.umask(umask)
    expected = 0o666 & ~umask
    save_graph(small_graph(), tmp_path / "g.json")
    build(tmp_path / "rag", small_graph())
    for path in (tmp_path / "g.json", tmp_path / "rag" / "active.json"):
        assert path.stat().st_mode & 0o777 == expected, path


def test_the_store_columns_and_the_export_derive_from_the_one_edge_declaration(tmp_path) -> None:
    from arklore.extract.gates import PROPOSAL_FIELDS, GatedEdge
    from arklore.extract.relations import EdgeProposal
    from arklore.extract.store import COLUMNS, edge_record

    store = open_store(tmp_path / "arklore.sqlite3")
    assert set(table_columns(store.conn, "relation_edges")) == set(COLUMNS)
    record_fields = {f.name for f in fields(GatedEdge)}
    assert set(COLUMNS) == (record_fields - {"stage"}) | {"stage_path", "chunk", "idx"}
    edge = GatedEdge("a", "character", "朋友", "b", "character", "direct")
    assert set(edge_record(edge)) == record_fields
    assert set(PROPOSAL_FIELDS) == set(EdgeProposal.model_fields) - {"evidence"}


# -- the public API --------------------------------------------------------------------------
def test_public_api_is_pinned() -> None:
    assert arklore.__all__ == [
        "__version__",
        "ArkloreError",
        "Paths",
        "Settings",
        "Workspace",
        "assemble_turn",
        "default_workspace",
        "find_mentions",
        "get_all_relationships_for",
        "get_anchor_relations",
        "get_contextual_relations",
        "get_memories",
        "get_relation_background",
        "get_relation_context",
        "set_default_workspace",
    ]
    for name in arklore.__all__:
        assert getattr(arklore, name) is not None


def test_find_mentions_without_a_store_is_a_clear_error_not_an_empty_answer(
    tmp_path: Path,
) -> None:
    arklore.set_default_workspace(make_workspace(tmp_path / "empty-home"))
    try:
        with pytest.raises(NotIngestedError) as exc:
            arklore.find_mentions("阿米娅是不是从凛冬她们身上看到了什么？")
        assert "arklore build" in exc.value.one_line()
    finally:
        arklore.set_default_workspace(None)


def test_find_mentions_uses_the_default_workspace_store(tmp_path: Path) -> None:
    gamedata, astr = write_tree(tmp_path / "data")
    ws = make_workspace(tmp_path / "home", gamedata, astr)
    ws.ingest()
    arklore.set_default_workspace(ws)
    try:
        found = arklore.find_mentions("我和假日威龙陈聊天")
        assert [(m.surface, m.char_id) for m in found] == [("假日威龙陈", "char_1013_chen2")]
    finally:
        arklore.set_default_workspace(None)


def test_the_players_placeholder_never_survives_rendering() -> None:
    from arklore.core.text import render_nickname

    assert render_nickname("过来，Dr.{@nickname}。") == "过来，博士。"
    assert render_nickname("{@nickname}，Dr. {@nickname}") == "博士，博士"
    assert render_nickname("Dr.{@nickname}", "刀客塔") == "刀客塔"
    assert "{@nickname}" not in render_nickname("DR.{@NICKNAME}{@nickname}")
    assert render_nickname("您就是{@nickname}博士吧？") == "您就是博士吧？"  # no 博士博士
    assert render_nickname("您就是{@nickname}博士吧？", "阿斯特") == "您就是阿斯特博士吧？"
