"""What the tables do not say about a stage, read from the stages they do describe.

``story_review_table`` gives a code, a name and an event to the story told before and after a
level (``obt/main/level_main_08-17_beg``: JT8-3 昂首，足践烈焰, 行动前), not to the dialogue
shown inside the level (``obt/tutorial/level/main_08-17``), nor to a chapter's recap or an
event's training files. A reader (``arklore timeline``) is shown:

- a level's in-battle dialogue with the code and name of that level's story (tag
  :data:`IN_LEVEL`);
- any other stage of an event folder (``activities/act12side/…``) or of a main chapter
  (``level_main_9_chapter_recap``) with that event, when the tables know it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from arklore.corpus.order import main_chapter
from arklore.corpus.store import StageInfo

IN_LEVEL = "关卡中"
"""The tag of a level's in-battle dialogue (the tables' tags: 行动前, 行动后, 幕间)."""

_STORY_LEVEL = re.compile(r"^level_(.+?)(?:_beg|_end)?$")
_IN_LEVEL_FOLDERS = ("obt/tutorial/level/", "obt/guide/level/")
_EVENT_FOLDER = re.compile(r"^activities/([^/]+)/")


def level_of(stage_path: str) -> str | None:
    """The level a story stage is told around (``…/level_main_08-17_beg`` -> main_08-17)."""
    m = _STORY_LEVEL.match(stage_path.rsplit("/", 1)[-1])
    return m.group(1) if m else None


def labelled(infos: Iterable[StageInfo], every: Iterable[StageInfo]) -> list[StageInfo]:
    """``infos`` with what ``every`` stage of the corpus tells about those the tables leave
    without a code or an event (see the module doc); the others unchanged."""
    levels: dict[str, StageInfo] = {}
    events: dict[str, str] = {}
    for info in every:
        if info.event_id and info.event_name:
            events.setdefault(info.event_id, info.event_name)
        level = level_of(info.stage_path) if info.story_code else None
        if level is not None:
            levels.setdefault(level, info)
    out = []
    for info in infos:
        if not info.story_code:
            info = _filled(info, levels, events)
        out.append(info)
    return out


def _filled(info: StageInfo, levels: dict[str, StageInfo], events: dict[str, str]) -> StageInfo:
    path = info.stage_path
    if path.startswith(_IN_LEVEL_FOLDERS):
        story = levels.get(path.rsplit("/", 1)[-1])
        if story is not None:
            # its event stays the tables': the file sorts with the game modes' (order.py),
            # not inside the event, so a timeline grouped by event would show it twice
            return dataclasses.replace(
                info, story_code=story.story_code, story_name=story.story_name, avg_tag=IN_LEVEL
            )
    if info.event_id:
        return info
    event = None
    if m := _EVENT_FOLDER.match(path):
        event = m.group(1)
    elif (chapter := main_chapter(path)) is not None:
        event = f"main_{chapter}"
    if event in events:
        return dataclasses.replace(info, event_id=event, event_name=events[event])
    return info


__all__ = ["IN_LEVEL", "labelled", "level_of"]
