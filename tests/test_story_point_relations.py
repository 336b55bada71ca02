"""A curated relation at a story point: known from the stage it begins at (its ``since``),
shown there by its description alone when some of its evidence lies later; without a
``since``, known only when every line it rests on is known."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.service_world import (
    AMIYA,
    KALTS,
    S1,
    S3,
    build_rag,
    graph,
    kb_workspace,
    lid,
    write_profiles,
    write_store,
)

from arklore.core.errors import InputFileError
from arklore.graph.io import load_graph, save_graph
from arklore.graph.matrix import load_matrix
from arklore.rag.context import Relation, known_at

TEACHER = "严厉又可靠的老师"  # the curated description of 阿米娅's view of 凯尔希


def _home(tmp_path: Path, since: str) -> Path:
    """The service world, with 阿米娅's curated view of 凯尔希 resting on a T-1 line and an
    AT-1 line (a later stage) and beginning at ``since``."""
    home = tmp_path / "home"
    home.mkdir()
    write_store(home)
    g = graph()
    edge = next(e for e in g.edges() if (e.source, e.target) == (AMIYA, KALTS))
    edge.evidence_line_ids = [lid(S1, 2), lid(S3, 1)]
    edge.stages, edge.since = [S1, S3], since
    save_graph(g, home / "relation_graph.json")
    build_rag(home, g)
    write_profiles(home / "chars")
    return home


def _relations(home: Path, until: str | None) -> dict[str, Any]:
    with kb_workspace(home) as ws:
        turn = ws.chat.turn("阿米娅", "凯尔希医生在吗", until=until).to_dict()
    return next(b for b in turn["blocks"] if b["name"] == "relations")


def _stages(block: dict[str, Any]) -> set[str]:
    return {x.split("#")[0] for x in block["sources"]["line_ids"]}


def test_a_relation_begun_before_the_point_is_told_without_its_later_lines(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path, since=S1)
    whole, at = _relations(home, None), _relations(home, "T-1")
    assert TEACHER in whole["text"] and S3 in _stages(whole)  # the control: it cites AT-1
    assert TEACHER in at["text"] and _stages(at) <= {S1}


def test_a_relation_without_since_is_held_back_while_any_evidence_is_later(
    tmp_path: Path,
) -> None:
    at = _relations(_home(tmp_path, since=""), "T-1")
    assert TEACHER not in at["text"] and S3 not in _stages(at)


def test_a_relation_that_begins_after_the_point_is_absent_until_it_begins(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path, since=S3)
    assert TEACHER not in _relations(home, "T-1")["text"]
    assert TEACHER in _relations(home, "AT-1")["text"]


def test_since_travels_from_the_graph_file_to_the_index(tmp_path: Path) -> None:
    home = _home(tmp_path, since=S1)
    edge = next(e for e in load_graph(home / "relation_graph.json").edges()
                if (e.source, e.target) == (AMIYA, KALTS))  # fmt: skip
    assert edge.since == S1
    with kb_workspace(home) as ws:
        rel = ws.rag.service().get_anchor_relations(AMIYA)[0]
    assert rel.target_id == KALTS and rel.since == S1


def _rel(evidence: list[str], since: str = "", bare: str = "") -> Relation:
    return Relation("x", "X", "朋友", 0.9, "描述。「引文」", "matrix", "d", None, evidence,
                    "as_written", since, bare)  # fmt: skip


def test_known_at_keeps_a_known_relation_and_bares_a_begun_one() -> None:
    def knows(ids: list[str]) -> bool:
        return all(x.startswith("early") for x in ids)

    assert known_at(_rel(["early#1:00000000"]), knows) == _rel(["early#1:00000000"])
    assert known_at(_rel(["early#1:00000000", "late#1:00000000"]), knows) is None
    begun = known_at(_rel(["early#1:00000000", "late#1:00000000"], "early", "描述。"), knows)
    assert begun is not None and begun.text == "描述。"
    assert begun.evidence_line_ids == ["early#1:00000000"]
    assert known_at(_rel(["late#1:00000000"], "late", "描述。"), knows) is None


def _matrix(tmp_path: Path, since: str) -> Path:
    p = tmp_path / "m.toml"
    p.write_text(f'[[relation]]\nfrom = "阿米娅"\nto = "凯尔希"\npredicate = "朋友"\n'
                 f'since = "{since}"\n', encoding="utf-8")  # fmt: skip
    return p


def test_the_matrix_reads_since_and_refuses_a_line_id_there(tmp_path: Path) -> None:
    def resolve(name: str) -> str | None:
        return {"阿米娅": AMIYA, "凯尔希": KALTS}.get(name)

    assert load_matrix(_matrix(tmp_path, S1), resolve)[0].since == S1
    with pytest.raises(InputFileError, match="since"):
        load_matrix(_matrix(tmp_path, lid(S1, 2)), resolve)


def test_every_shipped_relation_says_the_stage_it_begins_at() -> None:
    import tomllib

    from arklore.graph.matrix import default_matrix_path

    rels = tomllib.loads(default_matrix_path().read_text(encoding="utf-8"))["relation"]
    assert len(rels) >= 290 and all(r.get("since") and "#" not in r["since"] for r in rels)
