"""The turn output for fixed real (operator, message) pairs, to prove a refactor changed nothing.

    python -m bench.turn_snapshot write OUT.jsonl     # every pair's turn, as JSON, one a line
    python -m bench.turn_snapshot compare A.jsonl B.jsonl

``write`` runs :meth:`arklore.chat.facade.ChatFacade.turn` on the built ``ARKLORE_HOME`` for
each pair of :data:`PAIRS` (single chats, group chats, recalled targets) and writes the turn's
``to_dict()`` without its timings (they vary run to run); ``compare`` prints how many pairs
are byte-identical and, for the others, the first block that differs, and exits 1 when any
does. Run ``write`` with the old code (a worktree of the old commit on ``PYTHONPATH``) and
with the new, then ``compare``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

Pair = tuple[str, str, tuple[str, ...], tuple[str, ...]]  # operator, message, present, l3

GREETING = "博士，好久不见，最近还好吗？"
PAIRS: tuple[Pair, ...] = (
    ("阿米娅", "你好", (), ()),
    ("阿米娅", "你还记得切尔诺伯格发生的事吗？", (), ()),
    ("陈", "你还记得塔露拉吗", (), ()),
    ("陈", "你舅舅最近身体还好吗？", (), ()),
    ("银灰", "你的两个妹妹最近怎么样？", (), ()),
    ("银灰", "初雪最近在做什么？", (), ()),
    ("能天使", "你好", (), ()),
    ("能天使", "德克萨斯去哪了？", (), ()),
    ("塞雷娅", "最近在忙什么？", (), ()),
    ("塞雷娅", "你和赫默为什么关系不好？", (), ()),
    ("年", "你的妹妹们还好吗？", (), ()),
    ("夕", "我和夕去看夕阳了", (), ()),
    ("令", "喝一杯吗？", (), ()),
    ("棘刺", "你在研究什么？", (), ()),
    ("澄闪", "你和你姐姐见面了吗？", (), ()),
    ("夜莺", "你还记得临光吗？", (), ()),
    ("推进之王", "你在维多利亚的时候过得怎么样？", (), ()),
    ("赫拉格", "你还会回乌萨斯吗？", (), ()),
    ("芬", "克洛丝最近怎么样？", (), ()),
    ("玫兰莎", "芙兰卡又去哪了？", (), ()),
    ("德克萨斯", "拉普兰德来找你了。", (), ()),
    ("拉普兰德", "你为什么总跟着德克萨斯？", (), ()),
    ("凯尔希", "特蕾西娅是个怎样的人？", (), ()),
    ("星熊", GREETING, (), ()),
    ("临光", "你妹妹最近怎么样？", (), ()),
    ("瑕光", "你姐姐呢？", (), ()),
    ("艾雅法拉", "你的老师是谁？", (), ()),
    ("史尔特尔", "你还记得过去的事吗？", (), ()),
    ("斯卡蒂", "你在找谁？", (), ()),
    ("W", "你和特蕾西娅是什么关系？", (), ()),
    ("初雪", "你哥哥最近忙吗？", (), ()),
    ("崖心", "你姐姐还好吗？", (), ()),
    ("灰喉", GREETING, (), ()),
    ("缪尔赛思", "你和克丽斯腾是什么关系？", (), ()),
    ("赫默", "你和塞雷娅为什么吵架？", (), ()),
    ("伊芙利特", "赫默对你好吗？", (), ()),
    ("电弧", "你还记得罗德岛的大家吗？", (), ()),  # tier C
    ("红", "凯尔希让你做什么？", (), ()),
    ("黑", "你以前的队长是谁？", (), ()),
    ("协律", "你好", (), ()),  # tier C: no profile
    ("重岳", "你好", (), ()),
    ("老鲤", "最近生意怎么样？", (), ()),
    ("维什戴尔", GREETING, (), ()),
    ("陈", "我想吃点陈皮糖", (), ()),
    ("阿米娅", "大家一起去吃饭吧", ("凯尔希", "陈"), ()),
    ("银灰", "你们两个又吵架了？", ("初雪", "崖心"), ()),
    ("德克萨斯", "企鹅物流的大家都在吗？", ("能天使", "拉普兰德", "可颂"), ()),
    ("年", "今天过年，大家一起吃饺子。", ("夕", "令"), ()),
    ("陈", "你还记得塔露拉吗", (), ("塔露拉",)),
    ("银灰", "初雪和崖心最近怎么样？", (), ("初雪",)),
)


def _strip(value: Any) -> Any:
    """``value`` without its timings (they differ on every run)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "timings_ms"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def write(out: Path) -> int:
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    with Workspace(Settings.from_env()) as ws, out.open("w", encoding="utf-8") as f:
        for op, message, present, l3 in PAIRS:
            turn = ws.chat.turn(op, message, (), present, l3)
            row = {"pair": [op, message, list(present), list(l3)], "turn": _strip(turn.to_dict())}
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{len(PAIRS)} turns written to {out}")
    return 0


def compare(a: Path, b: Path) -> int:
    rows_a = a.read_text(encoding="utf-8").splitlines()
    rows_b = b.read_text(encoding="utf-8").splitlines()
    same = sum(x == y for x, y in zip(rows_a, rows_b, strict=False))
    print(f"{same} of {max(len(rows_a), len(rows_b))} turns byte-identical")
    for x, y in zip(rows_a, rows_b, strict=False):
        if x == y:
            continue
        ta, tb = json.loads(x), json.loads(y)
        blocks = {bl["name"]: bl for bl in ta["turn"]["blocks"]}
        first = next(
            (bl["name"] for bl in tb["turn"]["blocks"] if blocks.get(bl["name"]) != bl),
            "system_prompt or header",
        )
        print(f"  differs: {ta['pair'][:2]}: first in {first}")
    return 0 if same == len(rows_a) == len(rows_b) else 1


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "write":
        return write(Path(argv[1]))
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
