"""An invented knowledge base for the chat and service tests: a store with three small
stories written for this project, the operators' registry, a relation graph whose evidence
cites the stored lines, the relation index (hash embedder) and a few ``.char`` profiles.

Nothing here comes from the game: names are operator names, every line is made up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arklore.core.model import Branch, Line, LineKind, Source, Stage
from arklore.core.operators import Operator
from arklore.graph.io import save_graph
from arklore.graph.model import Edge, Node, RelationGraph
from arklore.profiles.charfile import TIER_A, TIER_B, render_profile
from arklore.rag.embedders import HashEmbedder
from arklore.rag.index import build_index
from support.lines import line

if TYPE_CHECKING:
    from arklore.settings import Settings
    from arklore.workspace import Workspace

AMIYA, KALTS, CHEN, CHEN2, HOSHI, SWIRE, LONELY = (
    "char_002_amiya", "char_003_kalts", "char_010_chen", "char_1013_chen2",
    "char_136_hsguma", "char_308_swire", "char_999_lonely",
)  # fmt: skip
THERESA, AUDREY, VERONICA = "npc:特蕾西娅", "npc:奥黛丽", "npc:维罗妮卡"

OPERATORS = [
    Operator(AMIYA, "阿米娅", "Amiya", "character_table", team_id="rhodes"),
    Operator(KALTS, "凯尔希", "Kal'tsit", "character_table", team_id="rhodes"),
    Operator(CHEN, "陈", "Ch'en", "character_table", alternate_ids=[CHEN2], real_names=["陈晖洁"]),
    Operator(CHEN2, "假日威龙陈", "Ch'en the Holungday", "character_table", base_id=CHEN),
    Operator(HOSHI, "星熊", "Hoshiguma", "character_table"),
    Operator(SWIRE, "诗怀雅", "Swire", "character_table"),
    Operator(LONELY, "独行者", "Loner", "character_table"),
]
NAMES = {op.char_id: op.name for op in OPERATORS} | {
    THERESA: "特蕾西娅", AUDREY: "奥黛丽", VERONICA: "维罗妮卡"
}  # fmt: skip


S1, S2, S3 = "obt/main/level_test_01_beg", "obt/main/level_test_01_end", "activities/act_test/st01"

STAGES: list[tuple[Stage, int]] = [
    (
        Stage(
            S1,
            Source.AVG,
            f"{S1}.txt",
            "test_1",
            "测试篇",
            "MAINLINE",
            "T-1",
            "行动前",
            "晨雾",
            "阿米娅与凯尔希在甲板上商量巡逻的路线。",
            content_hash="a",
            start_time=1_500_000_000,
        ),
        1,
    ),  # fmt: skip
    (
        Stage(
            S2,
            Source.AVG,
            f"{S2}.txt",
            "test_1",
            "测试篇",
            "MAINLINE",
            "T-2",
            "行动后",
            "雨后",
            "陈带着星熊赶到，诗怀雅随后也来了。",
            content_hash="b",
        ),
        2,
    ),  # fmt: skip
    (
        Stage(
            S3,
            Source.AVG,
            f"{S3}.txt",
            "act_test",
            "测试活动",
            "ACTIVITY",
            "AT-1",
            "幕间",
            "夜谈",
            "阿米娅和陈在夜里聊起了过去。",
            content_hash="c",
            start_time=1_600_000_000,
        ),
        3,
    ),  # fmt: skip
]
LINES = {
    S1: [
        line(S1, 1, "", "甲板上起了风。"),
        line(S1, 2, "阿米娅", "凯尔希医生，今天的巡逻路线我已经画好了，您看看可以吗？"),
        line(S1, 3, "凯尔希", "阿米娅，北边的桥还没修好，换一条路线再给我看。"),
        line(S1, 4, "阿米娅", "好的，我这就改，北边那条路确实太危险了。"),
        line(
            S1,
            5,
            "博士",
            "走南边",
            kind=LineKind.CHOICE,
            speaker_raw=None,
            options=("走南边", "再等等"),
            option_values=("1", "2"),
        ),  # fmt: skip
        line(S1, 6, "凯尔希", "南边要绕很远，不过这样更稳妥一些。", branch=Branch(5, ("1",))),
        line(S1, 7, "阿米娅", "那我们等雾散了再出发吧。", branch=Branch(5, ("2",))),
    ],
    S2: [
        line(S2, 1, "陈", "星熊，跟上，我们要在天黑之前赶到罗德岛。"),
        line(S2, 2, "星熊", "知道了，陈，你别一个人冲在最前面。"),
        line(S2, 3, "诗怀雅", "陈，你又抢在我前面了，这次的功劳可不能全算你的。"),
        line(S2, 4, "陈", "诗怀雅，现在不是争这个的时候，先把伤员送进去。"),
        line(S2, 5, "阿米娅", "陈小姐，谢谢你们赶来，伤员交给我们吧。"),
    ],
    S3: [
        line(S3, 1, "阿米娅", "陈小姐，你还记得第一次来罗德岛的时候吗？"),
        line(S3, 2, "假日威龙陈", "记得，那天的雨下得很大，你撑着伞在门口等我。"),
        line(S3, 3, "阿米娅", "凯尔希医生那天也在，她说你一定会来的。"),
    ],
}


def lid(path: str, no: int) -> str:
    return next(ln.line_id for ln in LINES[path] if ln.line_no == no)


def write_store(
    home: Path,
    *,
    operators: list[Operator] | None = None,
    stages: list[tuple[Stage, int]] | None = None,
    lines: dict[str, list[Line]] | None = None,
) -> Path:
    """The store of this world (or of another invented one: ``operators``, ``stages`` with
    their story order and ``lines`` per stage path)."""
    from arklore.names.registry import Registry
    from support.store import ingested_store

    operators = OPERATORS if operators is None else operators
    stages = STAGES if stages is None else stages
    lines = LINES if lines is None else lines
    path = home / "arklore.sqlite3"
    for stage, _ in stages:
        stage.lines = lines[stage.stage_path]
    registry = Registry({op.char_id: op for op in operators}, team_names={"rhodes": "罗德岛"})
    order = {stage.stage_path: rank for stage, rank in stages}
    ingested_store(path, [s for s, _ in stages], registry, order=order).close()
    return path


def _e(a: str, b: str, pred: str, s: float, origins: Iterable[str], signals: Mapping[str, int],
       ev: Iterable[str], desc: str | None = None) -> Edge:  # fmt: skip
    stages = sorted({x.split("#")[0] for x in ev})
    return Edge(a, b, pred, s, list(origins), dict(signals), list(ev), desc, stages)


def graph(variant: int = 0) -> RelationGraph:
    nodes = {
        i: Node(i, n, "npc" if i.startswith("npc:") else "operator", {})
        for i, n in NAMES.items()
        if i != CHEN2
    }
    m = {"matrix": 1}
    edges = [
        _e(AMIYA, KALTS, "师徒", 0.99, ["matrix"], m, [lid(S1, 2), lid(S1, 3)],
           "阿米娅把凯尔希当作严厉又可靠的老师，也是最信任的长辈。"),
        _e(AMIYA, THERESA, "近亲", 0.93, ["import"], {"import": 1}, []),
        _e(AMIYA, CHEN, "战友", 0.82, ["story"], {"direct": 2}, [lid(S2, 5), lid(S3, 1)]),
        _e(AMIYA, AUDREY, "朋友", 0.8, ["story"], {"direct": 2}, []),
        _e(AMIYA, VERONICA, "合作", 0.75, ["story"], {"direct": 1}, []),
        _e(AMIYA, HOSHI, "同事", 0.71, ["story"], {"reported": 2}, [lid(S2, 5)]),
        _e(AMIYA, SWIRE, "interaction", 0.65, ["interaction"], {"turns": 30}, [lid(S2, 5)]),
        _e(KALTS, AMIYA, "监护", 0.97, ["matrix"], m, [lid(S1, 3)],
           "凯尔希看着阿米娅长大，对她严格，却从不放手不管。"),
        _e(CHEN, SWIRE, "竞争", 0.9, ["story"], {"direct": 3}, [lid(S2, 3), lid(S2, 4)]),
        _e(CHEN, HOSHI, "战友", 0.88, ["story"], {"direct": 2}, [lid(S2, 1), lid(S2, 2)]),
        _e(CHEN, AMIYA, "合作", 0.5, ["interaction"], {"turns": 4}, [lid(S3, 2)]),
        _e(HOSHI, CHEN, "战友", 0.88, ["story"], {"direct": 2}, [lid(S2, 2)]),
        _e(SWIRE, CHEN, "竞争", 0.87, ["story"], {"direct": 2}, [lid(S2, 3)]),
    ]  # fmt: skip
    if variant:
        edges.append(_e(LONELY, AMIYA, "朋友", 0.97, ["matrix"], {"matrix": 1}, [],
                        f"第{variant}版：独行者把阿米娅当作远方的朋友。"))  # fmt: skip
    return RelationGraph(nodes, edges, alternates={CHEN2: CHEN})


def write_graph(home: Path, variant: int = 0) -> RelationGraph:
    g = graph(variant)
    save_graph(g, home / "relation_graph.json")
    return g


def build_rag(home: Path, g: RelationGraph) -> None:
    build_index(home / "rag", g, embedder=HashEmbedder(), rejects_path=home / "rag_rejects.jsonl")


def amiya_profile() -> str:
    q1 = f"- 「凯尔希医生，今天的巡逻路线我已经画好了，您看看可以吗？」 —— story:{lid(S1, 2)}（T-1 晨雾）"
    q2 = f"- 「陈小姐，你还记得第一次来罗德岛的时候吗？」 —— story:{lid(S3, 1)}（AT-1 夜谈）"
    q3 = f"- 「好的，我这就改，北边那条路确实太危险了。」 —— story:{lid(S1, 4)}（T-1 晨雾）"
    return render_profile(
        name="阿米娅",
        char_id=AMIYA,
        generated_at="2026-07-20T09:30:00Z",
        sections=[
            ("锚", "- 代号：阿米娅\n- 种族：卡特斯\n- 身高：142cm"),
            ("物理标签", "- 卡特斯\n- 戒指"),
            ("语录", "\n".join([q1, q2, q3])),
            ("我·性格", "认真、温柔，总想替大家多做一点。"),
            ("我·关于博士", "博士是我最信任的人。"),
        ],
        sources=[f"story: {lid(S1, 2)}, {lid(S3, 1)}, {lid(S1, 4)}"],
        tier=TIER_B,
    )


KALTS_PROFILE = """# 凯尔希

## 锚

- 代号：凯尔希
- 种族：菲林

## 我·性格

冷静，话少，判断极快。

## 私人笔记

一个人加的段落：她讨厌被打断。
"""


def chen_profile() -> str:
    return render_profile(
        name="陈", char_id=CHEN, generated_at="2026-07-20T09:30:00Z",
        sections=[("锚", "- 代号：陈\n- 种族：龙"), ("我·性格", "直率，不服输。")],
        tier=TIER_A,
    )  # fmt: skip


def write_profiles(chars: Path) -> None:
    chars.mkdir(parents=True, exist_ok=True)
    (chars / f"{AMIYA}.char").write_text(amiya_profile(), encoding="utf-8")
    (chars / f"{KALTS}.char").write_text(KALTS_PROFILE, encoding="utf-8")
    (chars / f"{CHEN}.char").write_text(chen_profile(), encoding="utf-8")


def make_kb(home: Path, *, profiles: bool = True, index: bool = True) -> Path:
    """Store, graph, index and profiles under ``home``; returns ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    write_store(home)
    g = write_graph(home)
    if index:
        build_rag(home, g)
    if profiles:
        write_profiles(home / "chars")
    return home


def kb_settings(home: Path, **kw: Any) -> Settings:
    from arklore.settings import Settings

    return Settings(home=home, embedder="hash", **kw)


def kb_workspace(home: Path, **kw: Any) -> Workspace:
    from arklore.workspace import Workspace

    return Workspace(kb_settings(home, **kw))


def swire_profile() -> str:
    """A tier-B draft quoting one story line (checkable in the store) and one voice line
    (checkable only with the voice table of ARKLORE_GAMEDATA)."""
    story = (
        f"- 「陈，你又抢在我前面了，这次的功劳可不能全算你的。」 —— story:{lid(S2, 3)}（T-2 雨后）"
    )
    voice = "- 「这里是诗怀雅，有事请讲。」 —— voice:char_308_swire_CN_001（任命助理）"
    return render_profile(
        name="诗怀雅", char_id=SWIRE, generated_at="2026-07-20T09:30:00Z",
        sections=[("锚", "- 代号：诗怀雅\n- 种族：菲林"), ("语录", f"{story}\n{voice}")],
        sources=[f"story: {lid(S2, 3)}", "charword_table: char_308_swire_CN_001"], tier=TIER_B,
    )  # fmt: skip


def write_swire_profile(home: Path) -> None:
    (home / "chars" / f"{SWIRE}.char").write_text(swire_profile(), encoding="utf-8")
