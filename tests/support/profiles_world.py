"""An invented home for the distillation tests: a tiny store (three operators, a few story
lines), the invented profile tables of tests/fixtures/profiles as the excel folder, and a
small relation graph with curated descriptions. All text is written for these tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from arklore.core.operators import Operator
from arklore.graph.io import save_graph
from arklore.graph.model import Edge, Node, RelationGraph
from arklore.names.registry import Registry
from arklore.profiles.charfile import CharProfile, Section
from support.lines import line, stage
from support.store import ingested_store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "profiles"
T, G, NEW = "char_900_tester", "char_901_guide", "char_999_newcomer"
OPS = [Operator(T, "测试员"), Operator(G, "向导"), Operator(NEW, "岚烟")]
AT = "2026-03-04T05:06:07Z"


def section(prof: CharProfile, title: str) -> Section:
    """``prof.section(title)``, a section the test expects the profile to have."""
    found = prof.section(title)
    assert found is not None, f"no section {title!r}"
    return found


NEW_LINES = [
    "我第一次来到测试国的时候，连一张像样的地图都没有。",
    "那时候我只能跟着河流一直走，走到看见灯塔的光为止。",
    "你们的巡逻队总是这么早出发吗，天都还没有亮呢。",
    "如果我能画出一条没有人走过的路，那条路会有我的名字吗？",
    "我想留在这里，至少等到这一次的雨季彻底结束以后。",
    "灯塔的光又亮起来了，今晚大家都能平安地回家了吧。",
    "谢谢你们愿意收留我，我会尽快学会怎么看懂地图的。",
]


def make_home(root: Path) -> tuple[Path, Path]:
    """(home, gamedata): a finished ingest of the invented lines, the invented tables, and a
    saved relation graph."""
    home, gamedata = root / "home", root / "gamedata"
    (gamedata / "zh_CN/gamedata/story").mkdir(parents=True)
    shutil.copytree(FIXTURES, gamedata / "zh_CN/gamedata/excel")
    stages = []
    for k in range(4):
        sp = f"test/s{k}"
        lines = [line(sp, i + 1, "岚烟", t) for i, t in enumerate(NEW_LINES[k::4])]
        lines.append(line(sp, 10, "测试员", "北边的桥每到雨季就会松动，大家过桥时要小心。"))
        lines.append(line(sp, 11, "向导", "向导会走在最前面，跟紧我的脚步就不会迷路。"))
        stages.append(stage(sp, lines))
    ingested_store(home / "arklore.sqlite3", stages, Registry({o.char_id: o for o in OPS})).close()
    save_graph(small_graph(), home / "relation_graph.json")
    return home, gamedata


def small_graph() -> RelationGraph:
    nodes = {o.char_id: Node(o.char_id, o.name, "operator") for o in OPS}
    nodes["npc:灯塔守"] = Node("npc:灯塔守", "灯塔守", "npc")
    ev = ["test/s0#10:00000000"]
    edges = [
        Edge(T, G, "朋友", 0.95, ["matrix"], {"matrix": 1}, ev, "测试员把向导当作可以托付后背的朋友。"),
        Edge(T, NEW, "同事", 0.9, ["matrix"], {"matrix": 1}, ev, "测试员负责带岚烟熟悉巡逻路线。"),
        Edge(T, "npc:灯塔守", "相识", 0.7, ["story"], {"direct": 2, "turns": 6}, ev),
        Edge(G, T, "朋友", 0.95, ["matrix"], {"matrix": 1}, ev, "向导觉得测试员太紧张，却很信任她。"),
        Edge(NEW, T, "同事", 0.8, ["matrix", "mention"], {"matrix": 1, "mentions": 2}, ev,
             "岚烟跟着测试员学习看地图。"),
    ]  # fmt: skip
    return RelationGraph(nodes, edges)
