"""The web pages' world: the service world (:mod:`support.service_world`) with what a
newcomer's first hour shows: two forms of one name (阿米娅 and her guard form, 暮落 and her
alternate form), a profile for each 阿米娅 (the review page lists both), and 独行者 related to
twenty people with long names (the graph explorer's densest view).

Invented, like the service world: no line or relation comes from the game.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from arklore.core.operators import Operator
from arklore.graph.io import save_graph
from arklore.graph.model import Node, RelationGraph
from arklore.profiles.charfile import TIER_B, render_profile
from support.service_world import (
    AMIYA,
    CHEN,
    CHEN2,
    LONELY,
    OPERATORS,
    _e,
    build_rag,
    graph,
    write_profiles,
    write_store,
    write_swire_profile,
)

AMIYA_GUARD, DUSK, DUSK2 = "char_1001_amiya2", "char_512_aprot", "char_4025_aprot2"
STRANGERS = [
    "灰烬观测员", "北港信使", "塔楼守夜人", "老船长", "沙丘测绘员", "雾中旅人", "白塔学者",
    "铁匠铺学徒", "码头记账人", "无名歌手", "夜巡队长", "旧城向导", "药剂师学徒", "风铃匠",
    "荒野猎人", "信号塔值班员", "图书馆管理员", "流浪画家", "集市摊主", "渡口船夫",
]  # fmt: skip
"""The twenty people 独行者 knows (NPC nodes): every label three to six characters."""
PREDICATES = ["朋友", "旧识", "同行", "雇主", "邻居"]


def operators() -> list[Operator]:
    out = [
        replace(op, profession="CASTER", alternate_ids=[AMIYA_GUARD]) if op.char_id == AMIYA
        else op
        for op in OPERATORS
    ]  # fmt: skip
    return out + [
        Operator(AMIYA_GUARD, "阿米娅", "Amiya", "char_patch_table", profession="WARRIOR",
                 base_id=AMIYA, linked_by="char_patch_table"),
        Operator(DUSK, "暮落", "Shalem", "astr_chardict", alternate_ids=[DUSK2]),
        Operator(DUSK2, "暮落", "Shalem", "astr_chardict", base_id=DUSK, linked_by="same_name"),
    ]  # fmt: skip


def pages_graph() -> RelationGraph:
    """The service world's graph, 暮落 as a node, and 独行者's twenty relations."""
    base = graph()
    nodes = dict(base.nodes) | {DUSK: Node(DUSK, "暮落", "operator", {})}
    edges = list(base.edges())
    for i, name in enumerate(STRANGERS):
        nid = f"npc:{name}"
        nodes[nid] = Node(nid, name, "npc", {})
        edges.append(_e(LONELY, nid, PREDICATES[i % len(PREDICATES)], 0.9 - i * 0.02,
                        ["story"], {"direct": 1}, []))  # fmt: skip
    return RelationGraph(nodes, edges, alternates={CHEN2: CHEN, AMIYA_GUARD: AMIYA, DUSK2: DUSK})


def guard_profile() -> str:
    """A tier-B draft of 阿米娅's guard form: the profile file names her 阿米娅, as the base's."""
    return render_profile(
        name="阿米娅", char_id=AMIYA_GUARD, generated_at="2026-07-20T09:30:00Z",
        sections=[("锚", "- 代号：阿米娅\n- 职业：近卫"), ("我·性格", "握剑的时候也还是那个阿米娅。")],
        tier=TIER_B,
    )  # fmt: skip


def make_pages_kb(home: Path) -> Path:
    """Store, graph, relation index and profiles of this world under ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    write_store(home, operators=operators())
    g = pages_graph()
    save_graph(g, home / "relation_graph.json")
    build_rag(home, g)
    write_profiles(home / "chars")
    write_swire_profile(home)
    (home / "chars" / f"{AMIYA_GUARD}.char").write_text(guard_profile(), encoding="utf-8")
    return home
