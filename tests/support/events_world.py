"""An invented story for the story-event tests (the shared test tree plus two stages and a
review-table entry naming them). Nothing here is game text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support.tree_world import EXCEL, STORY, write_tree

HARBOUR = "activities/evtest/level_ev_01_beg"
BEACH = "activities/evtest/level_ev_02_beg"
EVENT_ID = "evtest"
EVENT_NAME = "港口篇"

FILLER_LINES = 150  # long enough for two chunks


def harbour_script() -> str:
    lines = [
        '[HEADER(key="title_ev", is_skippable=true, fit_mode="BLACK_MASK")] 港口',
        "夜色笼罩着港口。",  # 1
        '[name="「陈晖洁」"]  阿米娅，货船几点靠岸？',  # 2: a real name, quoted
        '[name="阿米娅"]  三点。Dr.{@nickname}也在等。',  # 3: the Doctor, by nickname only
        "两个小时过去了。",  # 4
        '[name="阿米娅"]  船来了。',  # 5
    ]
    for i in range(FILLER_LINES):  # 6 ..: 推进之王 and a porter take turns unloading
        who = "推进之王" if i % 2 == 0 else "搬运工"
        lines.append(
            f'[name="{who}"]  第{i + 1}箱货搬好了，下一箱放在仓库靠窗的那一排架子上，小心别压坏。'
        )
    lines.append("雨停了。")  # the last line: narration
    return "\n".join(lines) + "\n"


BEACH_SCRIPT = """\
[name="假日威龙陈"]  阿米娅，防晒霜带了吗？
[name="阿米娅"]  带了。
[PopupDialog(dialogHead="$avatar_chen2")]快跟上。
浪花拍打着沙滩。
"""

INFO = {HARBOUR: "一段关于港口卸货的测试简介。", BEACH: "一段关于沙滩的测试简介。"}
CODES = {HARBOUR: ("EV-1", "卸货"), BEACH: ("EV-2", "沙滩")}


def write_events_tree(root: Path) -> tuple[Path, Path]:
    """The shared invented tree plus the harbour (two chunks) and beach stages, with a review
    table entry (event, codes, summaries) for both."""
    gamedata, astr = write_tree(root)
    story = gamedata / STORY
    (story / "activities/evtest").mkdir(parents=True)
    (story / "[uc]info/activities/evtest").mkdir(parents=True)
    (story / f"{HARBOUR}.txt").write_text(harbour_script(), encoding="utf-8")
    (story / f"{BEACH}.txt").write_text(BEACH_SCRIPT, encoding="utf-8")
    for path, text in INFO.items():
        (story / "[uc]info" / f"{path}.txt").write_text(text, encoding="utf-8")
    table_path = gamedata / EXCEL / "story_review_table.json"
    table = json.loads(table_path.read_text(encoding="utf-8"))
    entries = [
        {
            "storyId": f"{EVENT_ID}_{i}",
            "storyGroup": EVENT_ID,
            "storySort": i,
            "storyCode": CODES[p][0],
            "storyName": CODES[p][1],
            "storyInfo": f"info/{p}",
            "storyTxt": p,
            "avgTag": "行动前",
        }
        for i, p in enumerate((HARBOUR, BEACH), 1)
    ]
    table[EVENT_ID] = {
        "id": EVENT_ID,
        "name": EVENT_NAME,
        "entryType": "ACTIVITY",
        "actType": "ACTIVITY_STORY",
        "startTime": 1700000000,
        "infoUnlockDatas": entries,
    }
    table_path.write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    return gamedata, astr


_RANGE = re.compile(r"本段为第 (\d+)–(\d+) 行")


def chunk_range(prompt: str) -> tuple[int, int]:
    m = _RANGE.search(prompt)
    assert m, prompt[:200]
    return int(m.group(1)), int(m.group(2))


def mixed_answer(prompt: str) -> dict[str, Any]:
    """The scripted model: one answer mixing every case the checks must judge."""
    first, last = chunk_range(prompt)
    if "level_ev_02_beg" in prompt:
        return {"events": [{
            "phase": "经过", "summary": "陈和阿米娅在沙滩上说话。", "actors": ["假日威龙陈", "阿米娅"],
            "memories": {"假日威龙陈": "我在沙滩上问阿米娅带没带防晒霜。",
                         "阿米娅": "我告诉陈我带了防晒霜。"},
            "time_hint": None, "line_start": 1, "line_end": 4}]}  # fmt: skip
    if "level_ev_01_beg" not in prompt:
        return {"events": []}
    if first == 1:
        return {"events": [
            {"phase": "起因", "summary": "陈问阿米娅货船几点靠岸。",
             "actors": ["「陈晖洁」", "阿米娅", "博士", "推进之王"],
             "memories": {
                 "“陈晖洁”": "我在港口问阿米娅货船几点靠岸。",  # quoted key
                 "阿米娅": "陈问阿米娅货船几点到。",  # third person
                 "Dr.{@nickname}": "我和阿米娅在港口等船。",  # the Doctor, by nickname
                 "推进之王": "我在港口看着船靠岸。",  # absent from lines 1-5: dropped
             },
             "time_hint": "两个小时", "line_start": 1, "line_end": 5},
            {"phase": "经过", "summary": "推进之王和搬运工开始卸货。", "actors": ["推进之王", "搬运工"],
             "memories": {"推进之王": "我和搬运工开始把货搬进仓库。"},
             "time_hint": "第二天",  # not in the text: dropped
             "line_start": 6, "line_end": 20},
            {"phase": "经过", "summary": "卸货一直持续到傍晚。", "actors": ["推进之王"],
             "memories": {"推进之王": "我们一箱一箱地把货搬完了大半。"},
             "time_hint": None, "line_start": 21, "line_end": last},  # crosses into chunk 1
        ]}  # fmt: skip
    return {"events": [
        {"phase": "结果", "summary": "最后几箱货也搬进了仓库。", "actors": ["推进之王"],
         "memories": {"推进之王": "最后几箱货也被我们搬进了仓库。"},
         "time_hint": None, "line_start": first, "line_end": last},
    ]}  # fmt: skip
