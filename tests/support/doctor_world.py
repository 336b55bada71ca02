"""An invented world for the doctor block and the player placeholder: three short stories
whose lines, summaries and relation texts carry ``{@nickname}``, a voice table with
trust-unlocked lines, a relation graph with a curated relation to the Doctor, the relation
index (hash embedder) and rule-built profiles (``arklore distill`` with no model).

Every name is an operator's name, every line is written for these tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arklore.core.model import LineKind, Source, Stage
from arklore.core.operators import Operator
from arklore.graph.io import save_graph
from arklore.graph.model import DOCTOR_ID, Edge, Node, RelationGraph
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import build_index
from support.lines import line

if TYPE_CHECKING:
    from arklore.workspace import Workspace

AMIYA, KALTS, CHEN, HOSHI = "char_002_amiya", "char_003_kalts", "char_010_chen", "char_136_hsguma"
OPERATORS = [
    Operator(AMIYA, "阿米娅", "Amiya", "character_table"),
    Operator(KALTS, "凯尔希", "Kal'tsit", "character_table"),
    Operator(CHEN, "陈", "Ch'en", "character_table"),
    Operator(HOSHI, "星熊", "Hoshiguma", "character_table"),
]
S1, S2, S3 = "obt/main/level_dw_01_beg", "obt/main/level_dw_01_end", "activities/act_dw/st01"
PH = "Dr.{@nickname}"


LINES = {
    S1: [
        line(S1, 1, "", "甲板上起了风，灯塔还没有亮。"),
        line(S1, 2, "阿米娅", f"{PH}，今天的巡逻路线我已经画好了，您看看可以吗？"),
        line(S1, 3, "凯尔希", f"{PH}，北边的桥还没修好，你不要一个人过去。"),
        line(
            S1,
            4,
            "博士",
            "走南边",
            kind=LineKind.CHOICE,
            speaker_raw=None,
            options=("走南边",),
            option_values=("1",),
        ),  # fmt: skip
        line(S1, 5, "阿米娅", "博士，我会一直跟在你身边的，不管路有多远。"),
    ],
    S2: [
        line(S2, 1, "陈", f"星熊，跟上，{PH}还在等我们。"),
        line(S2, 2, "星熊", "知道了，陈，你别一个人冲在最前面。"),
        line(S2, 3, "陈", "博士，我相信你的判断，这次就按你说的办。"),
        line(S2, 4, "阿米娅", "陈小姐，谢谢你们赶来，伤员交给我们吧。"),
    ],
    S3: [  # nobody plays the Doctor here
        line(S3, 1, "凯尔希", "赫默博士的报告，你今晚之前交给我。"),
        line(S3, 2, "阿米娅", "凯尔希医生，您真的不打算告诉赫默博士吗？"),
    ],
}
STAGES = [
    (S1, "DW-1", "行动前", "晨雾", f"阿米娅陪着{PH}走上甲板，凯尔希叮嘱了几句。", 1),
    (S2, "DW-2", "行动后", "雨后", f"陈带着星熊赶到，与{PH}会合。", 2),
    (S3, "DW-3", "幕间", "夜谈", "凯尔希与阿米娅谈起赫默的报告。", 3),
]


def lid(path: str, no: int) -> str:
    return next(ln.line_id for ln in LINES[path] if ln.line_no == no)


def _word(cid: str, n: int, title: str, text: str, trust: int | None = None) -> dict[str, Any]:
    unlock = {"unlockType": "FAVOR", "unlockParam": [{"valueStr": None, "valueInt": trust}]}
    return {
        "charWordId": f"{cid}_CN_{n:03d}", "wordKey": cid, "charId": cid, "voiceId": f"CN_{n:03d}",
        "voiceText": text, "voiceTitle": title, "voiceIndex": n, "voiceType": "ONLY_TEXT",
        **(unlock if trust else {"unlockType": "DIRECT", "unlockParam": []}),
    }  # fmt: skip


VOICE = [
    _word(AMIYA, 1, "任命助理", f"{PH}，今天也请多多指教，我会努力跟上您的节奏。"),
    _word(AMIYA, 2, "交谈1", "罗德岛的甲板上风很大，记得多穿一件外套。"),
    _word(AMIYA, 3, "信赖提升后交谈1", "我以前总觉得自己太小，什么都做不好，现在不这么想了。", 40),
    _word(
        AMIYA, 4, "信赖提升后交谈2", "嘿嘿，{@nickname}，悄悄告诉你，我又学会了一首新曲子。", 100
    ),
    _word(AMIYA, 5, "信赖提升后交谈3", "不管前面的路有多长，只要和您一起走，我就不害怕。", 200),
    _word(CHEN, 1, "任命助理", "博士，现在起由我负责你的安全，别乱跑。"),
]


def write_tables(gamedata: Path) -> Path:
    excel = gamedata / "zh_CN/gamedata/excel"
    excel.mkdir(parents=True, exist_ok=True)
    (gamedata / "zh_CN/gamedata/story").mkdir(parents=True, exist_ok=True)
    words = {w["charWordId"]: w for w in VOICE}
    (excel / "charword_table.json").write_text(
        json.dumps({"charWords": words}, ensure_ascii=False), encoding="utf-8"
    )
    return gamedata


def write_store(home: Path) -> None:
    from arklore.names.registry import Registry
    from support.store import ingested_store

    stages = [
        Stage(path, Source.AVG, f"{path}.txt", "dw", "测试之旅", "MAINLINE", code, tag, name, info,
              content_hash=path, lines=LINES[path])
        for path, code, tag, name, info, _ in STAGES
    ]  # fmt: skip
    order = {path: rank for path, *_, rank in STAGES}
    registry = Registry({op.char_id: op for op in OPERATORS})
    ingested_store(home / "arklore.sqlite3", stages, registry, order=order).close()


def graph() -> RelationGraph:
    nodes = {op.char_id: Node(op.char_id, op.name, "operator", {}) for op in OPERATORS}
    nodes[DOCTOR_ID] = Node(DOCTOR_ID, "博士", "npc", {})

    def e(a: str, b: str, pred: str, s: float, ev: list[str], desc: str | None) -> Edge:
        return Edge(a, b, pred, s, ["matrix"], {"matrix": 1}, ev, desc,
                    sorted({x.split("#")[0] for x in ev}))  # fmt: skip

    edges = [
        e(AMIYA, DOCTOR_ID, "战友", 0.99, [lid(S1, 2), lid(S1, 5)],
          f"阿米娅把{PH}当作最信任的人，总愿意把判断托付给博士。"),
        e(AMIYA, KALTS, "师徒", 0.98, [lid(S1, 2), lid(S1, 3)],
          f"阿米娅敬重凯尔希，也常替{PH}在她面前说情。"),
        e(AMIYA, CHEN, "战友", 0.9, [lid(S2, 4)], "阿米娅感谢陈在危急时赶来。"),
        e(CHEN, HOSHI, "战友", 0.95, [lid(S2, 1), lid(S2, 2)], f"陈和星熊并肩作战，一起护送{PH}。"),
        e(CHEN, AMIYA, "合作", 0.8, [lid(S2, 4)], f"陈信任阿米娅和{PH}。"),
        e(KALTS, AMIYA, "监护", 0.97, [lid(S1, 3)], "凯尔希看着阿米娅长大。"),
    ]  # fmt: skip
    return RelationGraph(nodes, edges)


def make_world(root: Path) -> tuple[Path, Path]:
    """(home, gamedata) with the store, the graph, the index and rule-built profiles."""
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    home, gamedata = root / "home", write_tables(root / "gamedata")
    home.mkdir(parents=True)
    write_store(home)
    g = graph()
    save_graph(g, home / "relation_graph.json")
    build_index(home / "rag", g, embedder=HashEmbedder(), rejects_path=home / "rag_rejects.jsonl")
    with Workspace(Settings(home=home, gamedata=gamedata, embedder="hash")) as ws:
        ws.profiles.distill(["all"], generated_at="2026-07-20T09:30:00Z")
    return home, gamedata


def world_workspace(home: Path, gamedata: Path, **kw: Any) -> Workspace:
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    return Workspace(Settings(home=home, gamedata=gamedata, embedder="hash", **kw))
