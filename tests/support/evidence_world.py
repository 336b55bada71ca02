"""A tiny invented corpus for the evidence-built relation descriptions: four stages in three
events, five people who talk and call each other by name, and a graph over them.

Everything here is written for the tests (same formats as the game data, none of its text).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from arklore.core.model import Line, Source, Stage
from arklore.core.operators import Operator
from arklore.corpus.store import Store
from arklore.graph.model import Edge, Node, RelationGraph
from arklore.graph.people import People
from arklore.names.matcher import build_matcher
from arklore.names.registry import Registry
from support.lines import line
from support.store import ingested_store

ELV, MOX, SUP, ANV, SPR, HAWK = (
    "char_900_elvina", "char_901_moxian", "char_902_super", "char_903_anvil",
    "char_904_sprout", "char_905_hawk",
)  # fmt: skip
OPS = [
    Operator(ELV, "艾尔维娜"),
    Operator(MOX, "墨弦"),
    Operator(SUP, "苏珀"),
    Operator(ANV, "铁砧"),
    Operator(SPR, "小禾"),
    Operator(HAWK, "灰隼"),
]
REGISTRY = Registry({o.char_id: o for o in OPS})

Stages = dict[str, tuple[str, list[tuple[str, str]]]]  # path -> (event, [(speaker, line)])
STAGES: Stages = {
    "test/e1": ("灯塔篇", [
        ("艾尔维娜", "墨弦姐姐，灯还亮着吗？"),
        ("墨弦", "亮着，别担心。"),
        ("艾尔维娜", "墨弦姐姐，我去看看。"),
        ("墨弦", "小心台阶。"),
        ("艾尔维娜", "知道啦，墨弦。"),
        ("墨弦", "早点回来。"),
    ]),
    "test/e2": ("灯塔篇", [
        ("墨弦", "艾尔维娜，帮我拿绳子。"),
        ("艾尔维娜", "给你。"),
        ("墨弦", "谢谢。"),
        ("苏珀", "我也来帮忙。"),
    ]),
    "test/e3": ("归航", [
        ("艾尔维娜", "苏珀，船修好了吗？"),
        ("苏珀", "还差一点。"),
        ("艾尔维娜", "那我等你。"),
    ]),
    "test/u1": ("铁匠铺", [
        ("铁砧", "小禾，把锤子递给叔叔。"),
        ("小禾", "叔叔，给。"),
        ("铁砧", "好孩子。"),
        ("小禾", "我想学打铁。"),
        ("铁砧", "小禾，等你再长高些。"),
    ]),
}  # fmt: skip


def stage_lines(path: str, stages: Stages = STAGES) -> list[Line]:
    return [line(path, i, who, text) for i, (who, text) in enumerate(stages[path][1], start=1)]


def line_id(path: str, no: int, stages: Stages = STAGES) -> str:
    return stage_lines(path, stages)[no - 1].line_id


def make_store(path: Path, stages: Stages = STAGES) -> Store:
    """The invented corpus ingested (``stages``: another one over the same people)."""
    return ingested_store(
        path,
        [Stage(sp, Source.AVG, sp + ".txt", event_id=event, event_name=event,
               content_hash=sp, lines=stage_lines(sp, stages))
         for sp, (event, _) in stages.items()],
        REGISTRY,
    )  # fmt: skip


def make_people(store: Store) -> People:
    return People(REGISTRY, build_matcher(operators=OPS), sorted(store.speaker_counts()))


def _edge(a: str, b: str, pred: str, strength: float, signals: dict[str, int],
          origins: Iterable[str] = ("story",)) -> Edge:  # fmt: skip
    return Edge(a, b, pred, strength, list(origins), dict(signals), [], None, [])


def make_graph(*, curated: str | None = None) -> RelationGraph:
    """Edges over the invented people; ``curated`` gives ELV -> MOX a matrix description."""
    nodes = {o.char_id: Node(o.char_id, o.name, "operator", {}) for o in OPS}
    e = _edge(ELV, MOX, "朋友", 0.9, {"turns": 7, "vocatives": 3})
    if curated:
        e.origins, e.description = ["matrix", "interaction"], curated
    edges = [
        e,
        _edge(MOX, ELV, "朋友", 0.85, {"turns": 7, "vocatives": 1}),
        _edge(ELV, SUP, "interaction", 0.7, {"turns": 2, "vocatives": 1}, ("interaction",)),
        _edge(SUP, ELV, "interaction", 0.66, {"turns": 2}, ("interaction",)),
        _edge(ANV, SPR, "近亲", 0.8, {"turns": 4, "vocatives": 2}),
        _edge(SPR, ANV, "近亲", 0.8, {"turns": 4}),
        _edge(MOX, HAWK, "interaction", 0.7, {"voice_mentions": 1}, ("mention",)),
        _edge(HAWK, SUP, "相识", 0.7, {}, ("import",)),
    ]
    return RelationGraph(nodes, edges)
