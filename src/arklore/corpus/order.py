"""Stage order and per-stage importance.

``order_key`` approximates *release* order, not in-world chronology, from what the tables
give: main chapters have no start time in story_review_table (it is -1), so they come first,
by chapter then ``storySort`` then path; events follow by their ``startTime``; operator records
(``obt/memory/story_<key>_<set>_<n>``) are grouped per operator; everything else
(tutorials, roguelike, sandbox, ...) comes last by path. Interleaving main chapters with the
events released between them would need release dates the tables do not carry.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from arklore.core.model import Line, LineKind, Stage
from arklore.sources.gamedata import StageMeta

PRINCIPAL_MIN_SHARE = 0.04
"""A principal speaker has at least this share of a stage's attributed dialogue lines..."""
PRINCIPAL_MIN_LINES = 30
"""...and at least this many lines (the story reader's thresholds upstream)."""

GROUP_MAIN, GROUP_EVENT, GROUP_RECORD, GROUP_OTHER = 0, 1, 2, 3
_LAST = 1 << 62  # sorts after any real value

_MAIN_EVENT = re.compile(r"^main_(\d+)$")
_MAIN_PATH = (
    re.compile(r"level_(?:main|st|spst)_(\d+)-"),  # level_main_01-01_beg, level_st_07-01
    re.compile(r"level_main_(\d+)_"),  # level_main_9_chapter_recap
    re.compile(r"(?:^|/)main_(\d+)(?:_|/)"),  # main_10_zone_enter, obt/record/main_10/...
)
_RECORD = re.compile(r"^obt/memory/story_(.+?)_(\d+)_(\d+)$")

OrderKey = tuple[int, int, str, int, str]


def principal_speakers(
    lines: list[Line],
    min_share: float = PRINCIPAL_MIN_SHARE,
    min_lines: int = PRINCIPAL_MIN_LINES,
) -> list[str]:
    """Speakers who carry the stage: share of attributed dialogue >= min_share and
    >= min_lines lines; most lines first."""
    counts = Counter(ln.speaker for ln in lines if ln.kind == LineKind.DIALOGUE and ln.speaker)
    total = sum(counts.values())
    if not total:
        return []
    picked = [s for s, n in counts.items() if n >= min_lines and n / total >= min_share]
    return sorted(picked, key=lambda s: (-counts[s], s))


_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")}
_CHAPTER = re.compile(r"^(?:第\s*([0-9]{1,2}|[零一二三四五六七八九十]{1,3})\s*章|序章)$")


def chapter_event(text: str) -> str | None:
    """The main-story event id a chapter's name means (第十一章, 第11章 -> ``main_11``;
    序章 -> ``main_0``), or None."""
    m = _CHAPTER.match(text.strip())
    if m is None:
        return None
    n = m.group(1)
    if n is None:
        return "main_0"
    if n.isdigit():
        return f"main_{int(n)}"
    tens, _, ones = n.partition("十")
    if "十" not in n:
        value = _DIGITS[n] if len(n) == 1 else None
    else:
        value = (_DIGITS.get(tens, -99) if tens else 1) * 10 + (
            _DIGITS.get(ones, -99) if ones else 0
        )
    return f"main_{value}" if value is not None and value >= 0 else None


def main_chapter(stage_path: str, meta: StageMeta | None = None) -> int | None:
    """The main-story chapter of a stage, from its event id (``main_7``) or its path."""
    if meta is not None and meta.event_id and (m := _MAIN_EVENT.match(meta.event_id)):
        return int(m.group(1))
    if not stage_path.startswith(("obt/main/", "obt/record/")):
        return None
    name = stage_path.rsplit("/", 1)[-1] if stage_path.startswith("obt/main/") else stage_path
    for pattern in _MAIN_PATH:
        if m := pattern.search(name):
            return int(m.group(1))
    return None


def record_owner(stage_path: str) -> str | None:
    """The operator key of an operator record: ``obt/memory/story_amiya_1_1`` -> ``amiya``
    (the last part of ``char_002_amiya``)."""
    m = _RECORD.match(stage_path)
    return m.group(1) if m else None


def record_key(char_id: str) -> str:
    """The key her own records use (``char_498_inside`` -> ``inside``: ``story_inside_1_1``)."""
    return char_id.rsplit("_", 1)[-1]


def is_own_record(stage_path: str, family: Iterable[str]) -> bool:
    """Is the stage an operator record of hers (``family``: her forms' ids)?"""
    owner = record_owner(stage_path)
    return owner is not None and owner in {record_key(c) for c in family}


def order_key(stage_path: str, meta: StageMeta | None) -> OrderKey:
    """A deterministic sort key approximating release order (see the module docstring)."""
    sort = meta.story_sort if meta is not None and meta.story_sort is not None else _LAST
    chapter = main_chapter(stage_path, meta)
    if chapter is not None:
        return (GROUP_MAIN, chapter, "", sort, stage_path)
    if (m := _RECORD.match(stage_path)) is not None:
        return (GROUP_RECORD, 0, m.group(1), int(m.group(2)) * 1000 + int(m.group(3)), stage_path)
    if meta is not None and meta.event_id and meta.entry_type not in (None, "NONE"):
        start = meta.start_time if meta.start_time is not None else _LAST
        return (GROUP_EVENT, start, meta.event_id, sort, stage_path)
    return (GROUP_OTHER, 0, "", 0, stage_path)


def order_rank(
    stages: Iterable[Stage | str], metas: dict[str, StageMeta] | None = None
) -> dict[str, int]:
    """stage_path -> 0-based rank by :func:`order_key`.

    Stages bring their own metadata; plain paths are looked up in ``metas``.
    """
    keys = {}
    for stage in stages:
        if isinstance(stage, str):
            path, meta = stage, (metas or {}).get(stage)
        else:
            path, meta = stage.stage_path, _meta_of(stage, (metas or {}).get(stage.stage_path))
        keys[path] = order_key(path, meta)
    return {path: i for i, path in enumerate(sorted(keys, key=keys.__getitem__))}


_FILLED = ("event_id", "entry_type", "story_code", "story_sort", "start_time")
"""The ordering fields a stage takes from the tables' row when its own are missing."""


def _meta_of(stage: Stage, fallback: StageMeta | None) -> StageMeta:
    own = {name: getattr(stage, name) for name in _FILLED}
    if fallback is not None:
        own = {k: getattr(fallback, k) if v is None else v for k, v in own.items()}
    return StageMeta(event_name=stage.event_name, **own)
