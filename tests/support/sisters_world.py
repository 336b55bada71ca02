"""A second invented knowledge base: 银灰 and his two sisters on a snowy ridge, for the
OpenAI-compatible endpoint's tests (a chat "for 银灰 about 初雪").

Every line, description and profile sentence is made up for this project; only the
operators' names and ids are the game's identifiers.
"""

from __future__ import annotations

from pathlib import Path

from arklore.core.model import Source, Stage
from arklore.core.operators import Operator
from arklore.graph.io import save_graph
from arklore.graph.model import Node, RelationGraph
from arklore.profiles.charfile import TIER_A, render_profile
from support.lines import line
from support.service_world import _e, build_rag, write_store

SILVERASH, PRAMANIX, CLIFFHEART, AMIYA = (
    "char_172_svrash", "char_174_slbell", "char_173_slchan", "char_002_amiya",
)  # fmt: skip

OPERATORS = [
    Operator(SILVERASH, "银灰", "SilverAsh", "character_table", real_names=["恩希欧迪斯"]),
    Operator(PRAMANIX, "初雪", "Pramanix", "character_table"),
    Operator(CLIFFHEART, "崖心", "Cliffheart", "character_table"),
    Operator(AMIYA, "阿米娅", "Amiya", "character_table"),
]
NAMES = {op.char_id: op.name for op in OPERATORS}

RIDGE = "activities/act_snow/st01"
STAGES = [
    (Stage(RIDGE, Source.AVG, f"{RIDGE}.txt", "act_snow", "雪线之上", "ACTIVITY", "SN-1",
           "行动前", "山脊", "银灰带着两个妹妹翻过雪山，在山脊上避风。", content_hash="s"), 1),
]  # fmt: skip
LINES = {
    RIDGE: [
        line(RIDGE, 1, "", "山脊上的风卷着雪粒。"),
        line(RIDGE, 2, "银灰", "初雪，跟紧我，风雪会把脚印盖住。"),
        line(RIDGE, 3, "初雪", "哥哥，我不是小孩子了，这条山路我自己也认得。"),
        line(RIDGE, 4, "崖心", "哥，初雪说得对，你别总把她当成要人照看的孩子。"),
        line(RIDGE, 5, "银灰", "崖心，我只是希望你们两个都平安回到家里。"),
        line(RIDGE, 6, "阿米娅", "银灰先生，前面的营地已经生好火了。"),
    ],
}

SILVERASH_ON_PRAMANIX = "银灰把初雪当作要护在身后的小妹妹，嘴上严厉，心里最放不下的就是她。"
SILVERASH_ON_CLIFFHEART = "银灰信任崖心的身手，却总担心这个妹妹在山里走得太远。"


def lid(no: int) -> str:
    return next(ln.line_id for ln in LINES[RIDGE] if ln.line_no == no)


def graph() -> RelationGraph:
    nodes = {i: Node(i, n, "operator", {}) for i, n in NAMES.items()}
    m = {"matrix": 1}
    edges = [
        _e(SILVERASH, PRAMANIX, "近亲", 0.99, ["matrix"], m, [lid(2), lid(3)], SILVERASH_ON_PRAMANIX),
        _e(SILVERASH, CLIFFHEART, "近亲", 0.98, ["matrix"], m, [lid(4), lid(5)],
           SILVERASH_ON_CLIFFHEART),
        _e(PRAMANIX, SILVERASH, "近亲", 0.97, ["matrix"], m, [lid(3)],
           "初雪嫌哥哥管得太多，却从没真的想离开他的视线。"),
        _e(CLIFFHEART, SILVERASH, "近亲", 0.97, ["matrix"], m, [lid(4)],
           "崖心敬重哥哥，也常替初雪说话。"),
        _e(AMIYA, SILVERASH, "合作", 0.7, ["story"], {"direct": 1}, [lid(6)]),
    ]  # fmt: skip
    return RelationGraph(nodes, edges)


SILVERASH_PROFILE_PERSONALITY = "冷静，谋划深远，对家人说话简短，却处处替她们着想。"


def silverash_profile() -> str:
    return render_profile(
        name="银灰", char_id=SILVERASH, generated_at="2026-07-20T09:30:00Z",
        sections=[
            ("锚", "- 代号：银灰\n- 种族：菲林"),
            ("我·性格", SILVERASH_PROFILE_PERSONALITY),
        ],
        tier=TIER_A,
    )  # fmt: skip


def make_sisters_kb(home: Path) -> Path:
    """Store, graph, index (hash embedder) and 银灰's profile under ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    write_store(home, operators=OPERATORS, stages=STAGES, lines=LINES)
    g = graph()
    save_graph(g, home / "relation_graph.json")
    build_rag(home, g)
    chars = home / "chars"
    chars.mkdir(parents=True, exist_ok=True)
    (chars / f"{SILVERASH}.char").write_text(silverash_profile(), encoding="utf-8")
    return home


AMIYA_GUARD, AMIYA_MEDIC, SHALEM, SHALEM2 = (
    "char_1001_amiya2", "char_1037_amiya3", "char_512_aprot", "char_4025_aprot2",
)  # fmt: skip
FORMS = [
    Operator(AMIYA, "阿米娅", "Amiya", "character_table", profession="CASTER",
             alternate_ids=[AMIYA_GUARD, AMIYA_MEDIC]),
    Operator(AMIYA_GUARD, "阿米娅", "Amiya", "char_patch_table", base_id=AMIYA,
             profession="WARRIOR", linked_by="char_patch_table"),
    Operator(AMIYA_MEDIC, "阿米娅", "Amiya", "char_patch_table", base_id=AMIYA,
             profession="MEDIC", linked_by="char_patch_table"),
    Operator(SHALEM, "暮落", "Shalem", "astr_chardict", alternate_ids=[SHALEM2]),
    Operator(SHALEM2, "暮落", "Shalem", "astr_chardict", base_id=SHALEM, linked_by="same_name"),
]  # fmt: skip
"""Alternate forms sharing a name: 阿米娅 as three professions, 暮落 twice with none."""


def make_forms_kb(home: Path) -> Path:
    """The sisters' world with :data:`FORMS` in the registry (and no line of theirs)."""
    home.mkdir(parents=True, exist_ok=True)
    ops = [op for op in OPERATORS if op.char_id != AMIYA] + FORMS
    write_store(home, operators=ops, stages=STAGES, lines=LINES)
    g = graph()
    save_graph(g, home / "relation_graph.json")
    build_rag(home, g)
    return home
