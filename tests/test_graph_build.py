"""Relation graph on a tiny invented corpus: sources, strength, queries, files, CLI."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from support.lines import line, stage
from support.store import ingested_store
from typer.testing import CliRunner

import arklore.graph.build as build_mod
import arklore.graph.facade as facade_mod
from arklore.core.errors import InputFileError, UsageError
from arklore.core.model import Branch, LineKind, make_line_id
from arklore.core.operators import Operator
from arklore.corpus.store import Store
from arklore.graph import interaction, story
from arklore.graph.build import build_graph
from arklore.graph.io import dumps_graph, load_graph, loads_graph, save_graph
from arklore.graph.matrix import default_matrix_path
from arklore.graph.model import DOCTOR_ID, INTERACTION, Edge, Node, RelationGraph
from arklore.graph.people import Admission, People
from arklore.graph.strength import strength
from arklore.names.matcher import build_matcher
from arklore.names.registry import Registry

ELV, MOX, SUP, ELV2 = "char_900_elvina", "char_901_moxian", "char_902_super", "char_1900_elvina2"

OPS = [
    Operator(ELV, "艾尔维娜", nation_id="testland", team_id="blue", alternate_ids=[ELV2]),
    Operator(MOX, "墨弦", nation_id="testland"),
    Operator(SUP, "苏珀", nation_id="farland"),
    Operator(ELV2, "假日艾尔维娜", base_id=ELV, nation_id="testland"),
]
TEAMS = {"testland": "测试国", "farland": "远方", "blue": "蓝队"}
REGISTRY = Registry({o.char_id: o for o in OPS}, team_names=dict(TEAMS))
FEW_LINES = Admission(min_lines=4)
"""This small corpus's NPCs speak a few lines each; they are nodes."""


def make_store(path: Path) -> Store:
    """Two invented stages: talk, a vocative, a mention, a decision with two branches."""
    s1 = "test/s1"
    b1, b2 = Branch(4, ("1",)), Branch(4, ("2",))
    lines1 = [
        line(s1, 1, "艾尔维娜", "墨弦，今天走哪条路？"),
        line(s1, 2, "墨弦", "北边。苏珀说那边的桥修好了。"),
        line(s1, 3, "", "风很大。"),
        line(s1, 4, "博士", "走北边", kind=LineKind.CHOICE),
        line(s1, 5, "墨弦", "好。", branch=b1),
        line(s1, 6, "苏珀", "我带路。", branch=b2),
        line(s1, 7, "艾尔维娜", "出发。"),
        line(s1, 8, "？？？", "等等我！"),
        line(s1, 9, "苏珀", "谁？"),
    ]
    s2 = "test/s2"
    lines2 = []
    for i in range(1, 13):
        who = ("艾尔维娜", "墨弦", "老船长")[i % 3]
        lines2.append(line(s2, i, who, f"第{i}句。"))
    return ingested_store(
        path,
        [stage(s1, lines1), stage(s2, lines2)],
        REGISTRY,
        principal={s1: ["艾尔维娜", "墨弦"], s2: ["艾尔维娜", "墨弦", "老船长"]},
    )


def make_excel(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    words = {
        "w1": {"charId": ELV, "voiceText": "苏珀做的饭很好吃。"},
        "w2": {"charId": ELV2, "voiceText": "假期里也想见到苏珀。"},
        "w3": {"charId": SUP, "voiceText": "我自己的事。"},
    }
    (root / "charword_table.json").write_text(json.dumps({"charWords": words}), encoding="utf-8")
    teams = {k: {"powerName": v} for k, v in TEAMS.items()}
    (root / "handbook_team_table.json").write_text(json.dumps(teams), encoding="utf-8")
    return root


MATRIX = """\
[[relation]]
from = "艾尔维娜"
to = "墨弦"
predicate = "朋友"
description = "从小一起长大"
example = true

[[relation]]
from = "墨弦"
to = "npc:老船长"
predicate = "师徒"
"""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = make_store(tmp_path / "arklore.sqlite3")
    excel = make_excel(tmp_path / "excel")
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(MATRIX, encoding="utf-8")
    yield store, excel, matrix
    store.close()


@pytest.fixture
def people(world) -> People:
    store = world[0]
    return People(REGISTRY, build_matcher(operators=OPS), sorted(store.speaker_counts()),
                  admission=FEW_LINES)  # fmt: skip


def _build(world, people, **kw) -> RelationGraph:
    store, excel, matrix = world
    kw.setdefault("matrix_paths", [matrix])
    return build_graph(store, people, excel_root=excel, **kw)


# -- sources ---------------------------------------------------------------------------------
def test_interaction_counts_turns_vocatives_and_co_stages(world, people) -> None:
    g = _build(world, people)
    (e,) = g.get_relation(ELV, MOX)
    assert e.predicate == "朋友" and "matrix" in e.origins and "interaction" in e.origins
    assert e.signals["vocatives"] == 1  # 墨弦，... opens line 1
    assert e.signals["co_stages"] == 2  # principal in both stages
    # s1: line 1-2; s2: 12 lines cycling 墨弦/老船长/艾尔维娜: 艾尔维娜 -> 墨弦 at 3-4, 6-7, 9-10
    assert e.signals["turns"] == 1 + 3
    assert e.description == "从小一起长大"


def test_turns_skip_alternative_branches_and_unnamed_speakers(world, people) -> None:
    store = world[0]
    pairs: interaction.Pairs = {}
    interaction.scan(interaction.load_spoken(store, people), people, pairs)
    # line 5 (墨弦, option 1) and 6 (苏珀, option 2) are alternatives: no turn between them;
    # 苏珀 at line 9 follows ？？？: no turn either; line 6 -> 7 (branch, then common line) is one
    assert (MOX, SUP) not in pairs or pairs[(MOX, SUP)].turns == 0
    assert pairs[(SUP, ELV)].turns == pairs[(ELV, SUP)].turns == 1
    assert not pairs[(SUP, ELV)].worth_an_edge()  # one turn alone makes no edge
    g = _build(world, people)
    assert all(
        e.predicate != INTERACTION or e.signals.get("voice_mentions")
        for e in g.get_relation(ELV, SUP)
    )


def test_a_turn_never_crosses_a_scene_cut(people) -> None:
    """Two lines either side of a cut (a new background, a fade to black) are no turn."""

    def said(no: int, node: str, scene: int) -> interaction.ScanLine:
        return interaction.ScanLine("s", no, node, "嗯。", None, f"s#{no}", True, scene)

    pairs: interaction.Pairs = {}
    lines = [said(1, ELV, 0), said(2, MOX, 0), said(3, ELV, 1), said(4, MOX, 2)]
    interaction.scan(lines, people, pairs)
    assert pairs[(ELV, MOX)].turns == pairs[(MOX, ELV)].turns == 1  # only 1 -> 2


def test_the_people_of_her_own_record_count_for_her_alone(people) -> None:
    """Someone with two lines or more in her own operator record is one of its people
    (own_stories, directed from the record's owner); one line is an extra; the record of
    somebody else counts nothing for her."""
    key = ELV.rsplit("_", 1)[-1]

    def said(path: str, no: int, node: str) -> interaction.ScanLine:
        return interaction.ScanLine(path, no, node, "嗯。", None, f"{path}#{no}", True)

    own, other = f"obt/memory/story_{key}_1_1", "obt/memory/story_nobody_1_1"
    lines = [said(own, 1, ELV), said(own, 2, MOX), said(own, 9, MOX), said(own, 20, SUP)]
    lines += [said(other, 1, ELV), said(other, 2, MOX), said(other, 3, MOX)]
    pairs: interaction.Pairs = {}
    interaction.scan(lines, people, pairs)
    assert pairs[(ELV, MOX)].own_stories == 1 and own in pairs[(ELV, MOX)].stages
    assert (ELV, SUP) not in pairs or not pairs[(ELV, SUP)].own_stories  # one line: an extra
    assert not pairs[(MOX, ELV)].own_stories  # it is her story, not his
    assert strength({"own_stories": 1}) > strength({"turns": 10})


def test_doctor_is_the_fixed_npc_node(world, people) -> None:
    g = _build(world, people)
    assert g.nodes[DOCTOR_ID].kind == "npc" and g.nodes[DOCTOR_ID].name == "博士"
    # lines 2 -> 4 (choice) and 4 -> 5: a turn counts for the unordered pair
    assert g.get_relation(DOCTOR_ID, MOX)[0].signals["turns"] == 2


def test_story_and_voice_mentions_are_directed_and_fold_alternate_forms(world, people) -> None:
    g = _build(world, people)
    (e,) = g.get_relation(MOX, SUP)
    assert e.signals["mentions"] == 1 and "mention" in e.origins
    assert e.evidence_line_ids and e.evidence_line_ids[0].startswith("test/s1#2:")
    (v,) = g.get_relation(ELV, SUP)  # one voice line of the base, one of the alternate form
    assert v.signals["voice_mentions"] == 2
    assert g.get_relation(ELV2, SUP) == [v]  # alternate id resolves to the base node
    assert ELV2 not in g.nodes and g.alternates[ELV2] == ELV


def test_a_stranger_name_is_no_mention_in_story_or_voice(world) -> None:
    """苏珀 as a [[stranger]]: the story's and the voice lines' 苏珀 is somebody else."""
    store = world[0]
    people = People(
        REGISTRY,
        build_matcher(operators=OPS),
        sorted(store.speaker_counts()),
        strangers=["苏珀"],
        admission=FEW_LINES,
    )
    g = _build(world, people)
    assert not any(e.signals.get("mentions") for e in g.get_relation(MOX, SUP))
    assert not any(e.signals.get("voice_mentions") for e in g.get_relation(ELV, SUP))


def test_npc_nodes_and_factions(world, people) -> None:
    g = _build(world, people)
    assert g.nodes["npc:老船长"].kind == "npc"
    assert g.get_relation(MOX, "老船长")[0].predicate == "师徒"
    assert g.nodes[ELV].faction == {"nation": "测试国", "team": "蓝队"}
    assert g.get_faction(ELV) == {"nation": [MOX], "team": []}
    assert g.get_faction("艾尔维娜") == g.get_faction(ELV)


# -- extracted story relations ---------------------------------------------------------------
def _rows() -> list[story.ExtractedRow]:
    ev = [{"line_id": "test/s1#1:aaaaaaaa", "supports": "direct"},
          {"line_id": "test/s1#2:bbbbbbbb", "supports": "reported"}]  # fmt: skip
    return [
        story.ExtractedRow("test/s1", "艾尔维娜", "character", ELV, "战友", "墨弦", "character", MOX,
                           "reported", ev),
        story.ExtractedRow("test/s1", "守卫", "role", None, "敌对", "墨弦", "character", MOX,
                           "direct", ev[:1]),
    ]  # fmt: skip


def test_merging_the_same_extracted_stage_twice_changes_nothing(world, people) -> None:
    acc: dict[story.StoryKey, story.StoryRelation] = {}
    skipped = story.merge(acc, _rows(), people)
    once = {k: (v.predicate, dict(v.evidence), set(v.stages)) for k, v in acc.items()}
    story.merge(acc, _rows(), people)
    twice = {k: (v.predicate, dict(v.evidence), set(v.stages)) for k, v in acc.items()}
    assert once == twice and skipped == 1  # the role party is skipped
    rel = acc[(ELV, MOX, "comradeship")]
    assert rel.counts() == {"direct": 1, "reported": 1, "inferred": 0}


def test_extracted_edges_from_the_store_join_the_graph(world, people, monkeypatch) -> None:
    monkeypatch.setattr(story, "load_rows", lambda store, stage_path=None: _rows() + _rows())
    g = _build(world, people)
    preds = {e.predicate: e for e in g.get_relation(ELV, MOX)}
    assert set(preds) == {"朋友", "战友"}
    e = preds["战友"]
    assert e.origins == ["story", "interaction"] and e.signals["direct"] == 1
    assert e.signals["reported"] == 1 and e.stages == ["test/s1", "test/s2"]
    assert "test/s1#1:aaaaaaaa" in e.evidence_line_ids


# -- strength --------------------------------------------------------------------------------
def test_strength_orders_curated_direct_reported_interaction() -> None:
    big = {"turns": 10_000, "vocatives": 10_000, "co_stages": 10_000, "mentions": 10_000}
    assert strength({"matrix": 1}) >= 0.97
    assert strength({"matrix": 1}) > strength({"direct": 10_000}) > strength({"reported": 10_000})
    assert strength({"reported": 10_000}) > strength(big)
    assert strength({}) == 0.0


@pytest.mark.parametrize(
    "key",
    [
        "direct",
        "reported",
        "inferred",
        "turns",
        "vocatives",
        "co_stages",
        "mentions",
        "voice_mentions",
    ],
)
def test_strength_is_monotone_in_every_signal(key: str) -> None:
    base = {"direct": 1, "turns": 5, "co_stages": 1}
    prev = strength(base)
    for n in (1, 2, 5, 20, 100):
        s = strength({**base, key: base.get(key, 0) + n})
        assert s >= prev and 0.0 <= s <= 1.0
        prev = s


# -- queries ---------------------------------------------------------------------------------
def _edge(a, b, s, pred=INTERACTION, turns=5) -> Edge:
    return Edge(a, b, pred, s, ["interaction"], {"turns": turns}, [])


def test_a_mention_or_a_mere_acquaintance_is_never_an_anchor() -> None:
    """A relation known only from a mention, a shared stage or a line or two (no vocative)
    defines nobody, however strong; nor does a written 相识; a vocative or a real exchange
    does."""
    nodes = {i: Node(i, i.upper(), "operator", {}) for i in "abcdef"}
    mention = Edge("a", "b", INTERACTION, 0.9, ["mention"], {"mentions": 9, "co_stages": 3}, [])
    once = _edge("a", "c", 0.8, turns=2)
    called = Edge("a", "d", INTERACTION, 0.3, ["interaction"], {"turns": 1, "vocatives": 1}, [])
    talked = _edge("a", "e", 0.2, turns=3)
    met = Edge("a", "f", "相识", 0.99, ["matrix"], {"matrix": 1, "turns": 18}, [], "见过一面")
    g = RelationGraph(nodes, [mention, once, called, talked, met])
    assert [e.target for e in g.get_top_anchor_relations("a", k=5)] == ["d", "e"]
    assert [e.target for e in g.anchors("a")][:1] == ["f"]  # still ranked, for who she means
    # a written 相识 the story shows more of (many exchanges, or her own record) is one
    for more in ({"turns": 60}, {"own_stories": 1}):
        close = Edge("a", "f", "相识", 0.99, ["matrix"], {"matrix": 1, **more}, [], "同行")
        g = RelationGraph(nodes, [mention, called, close])
        assert [e.target for e in g.get_top_anchor_relations("a", k=5)] == ["f", "d"]


def test_top_anchors_strongest_first_one_per_target_and_neighbors_filters() -> None:
    nodes = {i: Node(i, i.upper(), "operator", {}) for i in "abcde"}
    g = RelationGraph(
        nodes,
        [_edge("a", "b", 0.5), _edge("a", "b", 0.9, "朋友"), _edge("a", "c", 0.7), _edge("a", "d", 0.2),
         _edge("a", "e", 0.7), _edge("b", "a", 0.99)],
    )  # fmt: skip
    top = g.get_top_anchor_relations("a", k=3)
    assert [(e.target, e.strength) for e in top] == [("b", 0.9), ("c", 0.7), ("e", 0.7)]
    assert [e.predicate for e in g.get_relation("a", "b")] == ["朋友", INTERACTION]
    assert g.get_relation("A", "B") == g.get_relation("a", "b")  # names resolve
    assert [e.target for e in g.neighbors("a", min_strength=0.6)] == ["b", "c", "e"]
    assert [e.target for e in g.neighbors("a", predicate="朋友")] == ["b"]
    assert g.neighbors("a", origin="matrix") == [] and g.get_relation("x", "y") == []
    g.add_edge(_edge("a", "d", 0.95, "近亲"))
    assert g.get_top_anchor_relations("a", 1)[0].target == "d"  # caches are dropped


# -- files -----------------------------------------------------------------------------------
def test_export_import_export_is_byte_identical(world, people, tmp_path: Path) -> None:
    g = _build(world, people)
    p1, p2 = tmp_path / "g1.json", tmp_path / "g2.json"
    save_graph(g, p1)
    save_graph(load_graph(p1), p2)
    assert p1.read_bytes() == p2.read_bytes()
    again = _build(world, people)  # the build itself is deterministic
    assert dumps_graph(again) == p1.read_bytes()


def _expect_error(world, people, tmp_path, text: str, *needles: str, name="m.toml", kind="matrix"):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    kw = {"matrix_paths": [f]} if kind == "matrix" else {"import_paths": [f]}
    with pytest.raises(InputFileError) as exc:
        _build(world, people, **kw)
    msg = exc.value.one_line()
    assert str(f) in msg
    for n in needles:
        assert n in msg, msg
    return msg


def test_matrix_rejects_unknown_name_with_line_and_key(world, people, tmp_path) -> None:
    _expect_error(world, people, tmp_path, MATRIX.replace('to = "墨弦"', 'to = "无名氏"'),
                  "line 3 [[relation]] #1", "'to'", "unknown or ambiguous name '无名氏'")  # fmt: skip


def test_matrix_rejects_duplicate_relation(world, people, tmp_path) -> None:
    dup = MATRIX + '\n[[relation]]\nfrom = "char_900_elvina"\nto = "墨弦"\npredicate = "朋友"\n'
    _expect_error(world, people, tmp_path, dup, "line 13 [[relation]] #3", "duplicate relation")


def test_matrix_rejects_duplicate_toml_key(world, people, tmp_path) -> None:
    _expect_error(world, people, tmp_path, MATRIX.replace('predicate = "朋友"', 'predicate = "朋友"\npredicate = "战友"'),
                  "toml", "line 5")  # fmt: skip


def test_matrix_rejects_wrong_types_and_unknown_predicates(world, people, tmp_path) -> None:
    _expect_error(world, people, tmp_path, MATRIX.replace("example = true", 'example = "yes"'),
                  "#1 key 'example'", "wrong type: expected bool, got string")  # fmt: skip
    _expect_error(
        world, people, tmp_path, MATRIX.replace('"朋友"', '"闺蜜"'), "unknown predicate '闺蜜'"
    )
    _expect_error(
        world, people, tmp_path, MATRIX.replace("example = true", "colour = 1"), "unknown key"
    )


def _import_doc(rels) -> str:
    return json.dumps({"format": "arklore-relation-import/1", "source": "手工测试", "relations": rels},
                      ensure_ascii=False, indent=1)  # fmt: skip


SHIPPED = f"""\
[[relation]]
from = "艾尔维娜"
to = "墨弦"
predicate = "朋友"
description = "从小一起长大"
evidence = ["{make_line_id("test/s1", 1, "艾尔维娜", "墨弦，今天走哪条路？")}"]

[[relation]]
from = "苏珀"
to = "墨弦"
predicate = "相识"
evidence = ["{make_line_id("test/s1", 6, "苏珀", "我带路。")}"]

[[relation]]
from = "远方来客"
to = "墨弦"
predicate = "相识"
"""
USER_MATRIX = """\
[[relation]]
from = "艾尔维娜"
to = "墨弦"
predicate = "战友"
description = "并肩作战多年"
"""


def test_a_users_matrix_layers_over_the_shipped_one_and_wins_on_its_pairs(
    world, people, tmp_path, monkeypatch
) -> None:
    shipped, user = tmp_path / "shipped.toml", tmp_path / "mine.toml"
    shipped.write_text(SHIPPED, encoding="utf-8")
    user.write_text(USER_MATRIX, encoding="utf-8")
    monkeypatch.setattr(build_mod, "default_matrix_path", lambda: shipped)
    g = _build(world, people, matrix_paths=[shipped, user])
    (mine,) = [e for e in g.get_relation(ELV, MOX) if "matrix" in e.origins]
    assert (mine.predicate, mine.description) == ("战友", "并肩作战多年")
    assert mine.curated_from == str(user)  # where a chat's document says it came from
    (kept,) = [e for e in g.get_relation(SUP, MOX) if "matrix" in e.origins]
    assert kept.predicate == "相识" and kept.curated_from == str(shipped)
    # the lines its curator cited, apart from the story's evidence the edge also holds
    assert kept.curated_evidence == [make_line_id("test/s1", 6, "苏珀", "我带路。")]
    assert loads_graph(dumps_graph(g)).get_relation(SUP, MOX)[0].curated_evidence == (
        kept.curated_evidence
    )
    # the shipped file may name people this corpus lacks: left out, counted, not fatal
    assert g.meta["matrix"] == {
        "path": "mine.toml", "paths": ["shipped.toml", "mine.toml"], "relations": 2,
        "examples": 0, "replaced": 1, "unknown_people": 1,
    }  # fmt: skip
    # the user's own file is held to every rule: a stranger in it stops the build
    user.write_text(SHIPPED, encoding="utf-8")
    with pytest.raises(InputFileError, match="远方来客"):
        _build(world, people, matrix_paths=[shipped, user])


def test_graph_build_layers_your_matrix_unless_told_to_replace(cli, tmp_path, monkeypatch) -> None:
    run, home, matrix = cli
    shipped = tmp_path / "shipped.toml"
    shipped.write_text(SHIPPED, encoding="utf-8")
    for mod in (build_mod, facade_mod):
        monkeypatch.setattr(mod, "default_matrix_path", lambda: shipped)
    assert run("graph", "build").exit_code == 0  # the shipped matrix alone
    r = run("graph", "build", "--matrix", str(matrix), "--json")
    assert r.exit_code == 0, r.output
    built = json.loads(r.stdout)
    assert built["matrix"]["paths"] == ["shipped.toml", "matrix.toml"]
    assert any("1 relations of the packaged matrix" in w for w in built["warnings"])
    assert built["matrix"]["replaced"] == 1
    g = load_graph(home / "relation_graph.json")
    assert any("matrix" in e.origins for e in g.get_relation(SUP, MOX))  # shipped, kept
    assert run("graph", "build", "--matrix", str(matrix), "--matrix-replace").exit_code == 0
    g = load_graph(home / "relation_graph.json")
    assert not any("matrix" in e.origins for e in g.get_relation(SUP, MOX))
    assert [e.predicate for e in g.get_relation(ELV, MOX)] == ["朋友"]
    r = run("graph", "build", "--matrix-replace")
    assert isinstance(r.exception, UsageError) and "--matrix PATH" in str(r.exception)


def test_import_adds_relations_with_names_and_ids(world, people, tmp_path) -> None:
    f = tmp_path / "wiki.json"
    f.write_text(_import_doc([{"from": "苏珀", "to": ELV, "predicate": "恩人", "label": "救过她", "mutual": True}]),
                 encoding="utf-8")  # fmt: skip
    g = _build(world, people, import_paths=[f])
    (e,) = [x for x in g.get_relation(SUP, ELV) if x.predicate == "恩人"]
    assert e.origins[0] == "import" and e.description == "救过她" and e.signals["import"] == 1
    assert [x.predicate for x in g.get_relation(ELV, SUP)][0] == "恩人"  # mutual


def test_import_rejects_unknown_name_duplicate_and_wrong_type(world, people, tmp_path) -> None:
    ok = {"from": "苏珀", "to": "墨弦", "predicate": "朋友"}
    msg = _expect_error(world, people, tmp_path, _import_doc([ok, {**ok, "to": "路人甲"}]),
                        "relations[1]", "'to'", "unknown", name="w.json", kind="import")  # fmt: skip
    assert "line 10" in msg
    _expect_error(world, people, tmp_path, _import_doc([ok, dict(ok)]), "relations[1]", "duplicate relation",
                  name="w.json", kind="import")  # fmt: skip
    _expect_error(world, people, tmp_path, _import_doc([{**ok, "mutual": "yes"}]), "relations[0]",
                  "'mutual'", "wrong type", name="w.json", kind="import")  # fmt: skip
    raw = '{"format": "arklore-relation-import/1",\n "relations": [],\n "relations": []}'
    _expect_error(world, people, tmp_path, raw, "line 3", "'relations'", "duplicate key", name="w.json",
                  kind="import")  # fmt: skip


def test_packaged_matrix_is_curated_with_evidence_and_no_examples() -> None:
    import tomllib

    doc = tomllib.loads(default_matrix_path().read_text(encoding="utf-8"))
    rels = doc["relation"]
    assert len(rels) >= 200 and not any(r.get("example") for r in rels)
    assert all(1 <= len(r.get("evidence", [])) <= 3 for r in rels)
    assert all(15 <= len(r["description"]) <= 80 for r in rels)
    assert not any(r["description"].startswith("示例") for r in rels)


# -- CLI -------------------------------------------------------------------------------------
@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from arklore.cli.app import app

    home = tmp_path / "home"
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.delenv("ARKLORE_GAMEDATA", raising=False)
    monkeypatch.setenv("ARKLORE_NPC_MIN_LINES", "4")  # this small corpus's NPCs are nodes
    make_store(home / "arklore.sqlite3").close()
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(MATRIX, encoding="utf-8")
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=True)

    return run, home, matrix


def test_cli_build_show_export_import(cli, tmp_path: Path) -> None:
    run, home, matrix = cli
    r = run("graph", "build", "--matrix", str(matrix), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["counts"]["edges"] > 0
    r = run("graph", "show", "艾尔维娜", "--json")
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    assert shown["anchors"][0]["target"] == MOX and shown["anchors"][0]["signals"]["matrix"] == 1
    assert shown["anchors"][0]["contributions"]["matrix"] == 0.97
    out = tmp_path / "exported.json"
    assert run("graph", "export", str(out)).exit_code == 0
    assert out.read_bytes() == (home / "relation_graph.json").read_bytes()
    assert run("graph", "import", str(out)).exit_code == 0
    again = tmp_path / "again.json"
    assert run("graph", "export", str(again)).exit_code == 0
    assert again.read_bytes() == out.read_bytes()


def test_failed_rebuild_keeps_the_previous_graph(cli, tmp_path: Path) -> None:
    run, home, matrix = cli
    assert run("graph", "build", "--matrix", str(matrix)).exit_code == 0
    before = (home / "relation_graph.json").read_bytes()
    bad = tmp_path / "bad.toml"
    bad.write_text(MATRIX.replace('"墨弦"', '"无名氏"', 1), encoding="utf-8")
    r = run("graph", "build", "--matrix", str(bad))
    assert r.exit_code != 0 and isinstance(r.exception, InputFileError)
    wiki = tmp_path / "wiki.json"
    wiki.write_text(
        _import_doc([{"from": "苏珀", "to": "没这人", "predicate": "朋友"}]), encoding="utf-8"
    )
    r = run("graph", "import", str(wiki))
    assert r.exit_code != 0 and isinstance(r.exception, InputFileError)
    assert (home / "relation_graph.json").read_bytes() == before
    assert not (home / "graph_imports").exists()  # a rejected import is not registered
    assert sorted(p.name for p in home.iterdir() if p.name.startswith("relation_graph")) == [
        "relation_graph.json"
    ]


def test_cli_import_registers_a_wiki_export_for_every_build(cli, tmp_path: Path) -> None:
    run, home, matrix = cli
    wiki = tmp_path / "wiki.json"
    wiki.write_text(
        _import_doc([{"from": "苏珀", "to": "墨弦", "predicate": "竞争"}]), encoding="utf-8"
    )
    r = run("graph", "import", str(wiki), "--no-build")
    assert r.exit_code == 0, r.output
    assert (home / "graph_imports" / "wiki.json").is_file()
    assert run("graph", "build", "--matrix", str(matrix)).exit_code == 0
    r = run("graph", "relation", "苏珀", "墨弦", "--json")
    assert "竞争" in [e["predicate"] for e in json.loads(r.stdout)]


def test_pair_facts_are_kept_on_disk_per_corpus_names_and_pairs(tmp_path, monkeypatch) -> None:
    from support.service_world import kb_workspace, make_kb

    import arklore.graph.facade as facade
    from arklore.graph.evidence import pair_facts
    from arklore.rag.docs import SourceContext, fact_pairs

    home = make_kb(tmp_path / "home")

    def pairs(g: RelationGraph, st: Store) -> set[tuple[str, str]]:
        return fact_pairs(SourceContext(graph=g, store=st))

    with kb_workspace(home) as ws:
        first = ws.graph.facts(ws.graph.current(), pairs)
    assert first and (home / "cache" / "pair_facts.pickle").is_file()
    calls: list[int] = []
    real = pair_facts

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(facade, "pair_facts", counted)
    with kb_workspace(home) as ws:  # a new process: read, not computed
        assert ws.graph.facts(ws.graph.current(), pairs) == first and calls == []
    with kb_workspace(home) as ws:  # other pairs: computed
        one = ws.graph.facts(ws.graph.current(), lambda g, st: set(sorted(pairs(g, st))[:1]))
    assert len(one) == 1 and calls == [1]
    (home / "cache" / "pair_facts.pickle").write_bytes(b"not a pickle")
    with kb_workspace(home) as ws:  # an unreadable file: computed again, no error
        assert ws.graph.facts(ws.graph.current(), pairs) == first and calls == [1, 1]


@pytest.mark.parametrize(
    ("label", "generic"),
    [("医疗干员", True), ("士兵A", True), ("守卫甲", True), ("电话那头的声音", True),
     ("日记", True), ("广播", True), ("凯尔希", False), ("日记本的主人", False), ("声", False)],
)  # fmt: skip
def test_a_role_or_a_medium_never_becomes_a_person(label: str, generic: bool) -> None:
    from arklore.graph.interaction import is_generic_role

    assert is_generic_role(label) is generic


def test_a_stranger_label_is_nobody_as_speaker_or_name_but_a_file_still_means_her() -> None:
    """[[stranger]] 墨弦: the story's 墨弦 is somebody else (林 is her father there). The label
    and a line calling 墨弦 are nobody's; a hand-edited file naming 墨弦 still means her."""
    from arklore.graph.interaction import VocativeFinder

    plain = People(REGISTRY, build_matcher(operators=OPS))
    assert plain.node("墨弦") == MOX
    people = People(REGISTRY, build_matcher(operators=OPS), strangers=["墨弦"])
    assert people.node("墨弦") is None and people.node("艾尔维娜") == ELV
    assert people.operator("墨弦") == MOX and people.user_node("墨弦") == MOX
    voc = VocativeFinder(people, {MOX, ELV})
    assert voc("墨弦，你过来。") == [] and voc("艾尔维娜，你过来。") == [ELV]


def test_which_npcs_become_nodes_is_by_lines_or_by_a_share_of_one_story(world) -> None:
    store = world[0]
    lines = {name: n for name, (n, _) in store.speaker_counts().items()}["老船长"]
    assert "老船长" in Admission(min_lines=lines).admitted(store)
    assert "老船长" not in Admission(min_lines=lines + 1).admitted(store)
    # a few lines can still be a large share of the one story they are in
    assert "老船长" in Admission(min_lines=lines + 1, min_share=0.05).admitted(store)
    assert "老船长" not in Admission(min_lines=lines + 1, min_share=0.99).admitted(store)


def test_the_npc_threshold_setting_reaches_the_graph_build(
    cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, home, matrix = cli

    def talked_with() -> set[str]:
        """The NPCs the corpus shows in interaction (the matrix names 老船长 either way)."""
        assert run("graph", "build", "--matrix", str(matrix)).exit_code == 0
        doc = json.loads((home / "relation_graph.json").read_text(encoding="utf-8"))
        return {x for e in doc["edges"] if "interaction" in e["origins"]
                for x in (e["source"], e["target"]) if x.startswith("npc:") and x != "npc:博士"}  # fmt: skip

    assert "npc:老船长" in talked_with()
    monkeypatch.setenv("ARKLORE_NPC_MIN_LINES", "1000")
    assert "npc:老船长" not in talked_with()


def test_an_edge_kept_for_the_next_build_comes_back_whole() -> None:
    """The graph build keeps its edges pickled (Edge.__reduce__): every field returns."""
    e = Edge("char_002_amiya", "char_010_chen", "战友", 0.91, ["matrix", "story"],
             {"turns": 3, "mentions": 2}, ["obt/main/a#1:00000000"], "一起巡逻的同伴。",
             ["obt/main/a"], "/home/me/matrix.toml", "obt/main/a", ["obt/main/a#1:00000000"])  # fmt: skip
    assert all(v for v in vars_of(e))  # no field left at its default
    again = pickle.loads(pickle.dumps({"kept": [e, e]}, protocol=5))["kept"]
    assert again[0] == e and again[1] is again[0]


def vars_of(e: Edge) -> list[Any]:
    return [getattr(e, f) for f in e.__slots__]
