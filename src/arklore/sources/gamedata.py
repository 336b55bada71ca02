"""Readers for the excel tables of ArknightsGameData (zh_CN) and the stage metadata they give.

Stage metadata comes from ``story_review_table`` (the in-game story review list, one entry
per event/chapter/operator-record set, ``infoUnlockDatas`` one per stage, keyed by
``storyTxt``), from the act archives of ``story_review_meta_table`` (hidden avg stages) and,
when the story folder is given, by inheritance from the event folder a stage sits in (an
``activities/act21side/...`` file the review list does not show still belongs to act21side).
The summaries shown in the review list are the ``[uc]info/<storyInfo minus "info/">.txt`` files.

A missing table reads as ``None`` (the caller decides whether that matters); a table that is
there but unreadable raises :class:`MalformedSourceError`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import orjson

from arklore.core.errors import MalformedSourceError
from arklore.core.model import Stage

STORY_REVIEW_TABLE = "story_review_table"
STORY_REVIEW_META_TABLE = "story_review_meta_table"
INFO_DIR = "[uc]info"
INFO_PREFIX = "info/"

# where a StageMeta came from, best first
META_REVIEW = "story_review"  # its own row in story_review_table
META_ARCHIVE = "act_archive"  # an avg in story_review_meta_table.actArchiveResData
META_FOLDER = "event_folder"  # only the event, inherited from the folder it sits in
META_INFO_ONLY = "info_file"  # only a [uc]info summary file exists for it


def read_table(excel_root: Path, name: str) -> dict[str, Any] | None:
    """Read ``<excel_root>/<name>.json``; ``None`` when the file is absent."""
    path = excel_root / f"{name}.json"
    if not path.is_file():
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise MalformedSourceError(str(path), f"not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MalformedSourceError(str(path), f"expected a JSON object, got {type(data).__name__}")
    return data


@dataclass(slots=True)
class StageMeta:
    """What the tables say about one stage; field names match :class:`Stage`'s."""

    event_id: str | None = None
    event_name: str | None = None
    entry_type: str | None = None  # MAINLINE | ACTIVITY | MINI_ACTIVITY | NONE (operator records)
    story_code: str | None = None
    avg_tag: str | None = None
    story_name: str | None = None
    story_info: str | None = None
    story_sort: int | None = None
    start_time: int | None = None  # when the event opened (:func:`opened`); None: unknown
    meta_source: str = META_REVIEW  # not a Stage field: how much of this is the stage's own

    def apply(self, stage: Stage) -> Stage:
        """Fill the Stage's metadata fields that are still None (the source's own values win)."""
        for f in fields(self):
            if f.name == "meta_source":
                continue
            value = getattr(self, f.name)
            if value is not None and getattr(stage, f.name) is None:
                setattr(stage, f.name, value)
        return stage


def read_info(story_root: Path | None, story_info: str | None) -> str | None:
    """The summary text a ``storyInfo`` reference (``info/obt/...``) points at, if present."""
    if story_root is None or not story_info:
        return None
    rel = story_info[len(INFO_PREFIX) :] if story_info.startswith(INFO_PREFIX) else story_info
    path = story_root / INFO_DIR / f"{rel}.txt"
    if not path.is_file():
        return None
    text = path.read_bytes().decode("utf-8-sig", errors="replace").strip()
    return text or None


def load_stage_meta(excel_root: Path, story_root: Path | None = None) -> dict[str, StageMeta]:
    """Stage metadata keyed by stage_path (``obt/main/level_main_01-01_beg``).

    Without ``story_root`` only the stages the tables list are returned and ``story_info``
    stays None; with it, summaries are read and every other raw story file gets the event
    metadata of the folder it sits in (``meta_source`` says which).
    """
    review = read_table(excel_root, STORY_REVIEW_TABLE)
    if review is None:
        return {}
    out: dict[str, StageMeta] = {}
    events: dict[str, dict[str, Any]] = {}  # review id -> event row
    folder_event: dict[str, str] = {}  # "activities/a001" -> "1stact"
    path = str(excel_root / f"{STORY_REVIEW_TABLE}.json")
    for event_id, event in review.items():
        if not isinstance(event, dict) or not isinstance(event.get("infoUnlockDatas"), list):
            raise MalformedSourceError(path, f"entry {event_id!r} has no infoUnlockDatas list")
        events[event_id] = event
        for story in event["infoUnlockDatas"]:
            txt = story.get("storyTxt") if isinstance(story, dict) else None
            if not txt:
                continue
            txt = txt.lower()
            out[txt] = StageMeta(
                event_id=event_id,
                event_name=event.get("name"),
                entry_type=event.get("entryType"),
                story_code=story.get("storyCode") or None,
                avg_tag=story.get("avgTag") or None,
                story_name=story.get("storyName") or None,
                story_info=read_info(story_root, story.get("storyInfo")),
                story_sort=_int_or_none(story.get("storySort")),
                start_time=opened(event),
                meta_source=META_REVIEW,
            )
            if event.get("entryType") not in (None, "NONE", "MAINLINE"):
                folder_event.setdefault(_folder(txt), event_id)
    _add_archive_avgs(excel_root, story_root, out, events, folder_event)
    if story_root is not None:
        _add_folder_stages(story_root, out, events, folder_event)
    return out


def _add_archive_avgs(
    excel_root: Path,
    story_root: Path | None,
    out: dict[str, StageMeta],
    events: dict[str, dict[str, Any]],
    folder_event: dict[str, str],
) -> None:
    meta = read_table(excel_root, STORY_REVIEW_META_TABLE)
    avgs = ((meta or {}).get("actArchiveResData") or {}).get("avgs") or {}
    for avg in avgs.values():
        txt = avg.get("contentPath") if isinstance(avg, dict) else None
        if not txt:
            continue
        txt = txt.lower()  # the archive writes "Obt/Roguelike/RO1/..."; the files are lower-case
        if txt in out:
            continue
        m = _event_meta(txt, events, folder_event) or StageMeta()
        m.story_name = avg.get("desc") or None
        m.story_info = read_info(story_root, (avg.get("breifPath") or "").lower())  # sic: breif
        m.meta_source = META_ARCHIVE
        out[txt] = m


def _add_folder_stages(
    story_root: Path,
    out: dict[str, StageMeta],
    events: dict[str, dict[str, Any]],
    folder_event: dict[str, str],
) -> None:
    for file in sorted(story_root.rglob("*.txt")):
        rel = file.relative_to(story_root).as_posix()
        if rel.startswith(f"{INFO_DIR}/"):
            continue
        stage_path = rel[: -len(".txt")]
        if stage_path in out:
            continue
        m = _event_meta(stage_path, events, folder_event)
        info = read_info(story_root, INFO_PREFIX + stage_path)
        if m is None and info is None:
            continue
        m = m or StageMeta(meta_source=META_INFO_ONLY)
        m.story_info = info
        out[stage_path] = m


def _event_meta(
    stage_path: str, events: dict[str, dict[str, Any]], folder_event: dict[str, str]
) -> StageMeta | None:
    """Event-level metadata for a stage the review list does not show, from its folders."""
    parts = stage_path.split("/")[:-1]
    event_id = folder_event.get("/".join(parts[:2]))
    if event_id is None:
        # obt/record/main_10/..., activities/act13side/... whose folder is the event id
        event_id = next((p for p in parts[1:] if p in events), None)
    if event_id is None:
        return None
    event = events[event_id]
    return StageMeta(
        event_id=event_id,
        event_name=event.get("name"),
        entry_type=event.get("entryType"),
        start_time=opened(event),
        meta_source=META_FOLDER,
    )


def opened(event: dict[str, Any]) -> int | None:
    """When an event of the review table opened: its ``startTime``; a main chapter, whose
    ``startTime`` is -1, by its ``startShowTime`` (when it was shown in the story review:
    2020-06-01 for chapters 0-7, then each chapter's own date, 风暴瞭望 2021-09-17 …
    相变临界 2026-04-30), so a chapter can be placed among the events; None when neither is
    set (operator records)."""
    start = _time(event.get("startTime"))
    if start is None and event.get("entryType") == "MAINLINE":
        return _time(event.get("startShowTime"))
    return start


def meta_for(metas: dict[str, StageMeta], stage_path: str) -> StageMeta | None:
    """Look a stage up by path; falls back to lower case (ASTR has ``obt/Roguelike/RO1``)."""
    return metas.get(stage_path) or metas.get(stage_path.lower())


def _folder(stage_path: str) -> str:
    return "/".join(stage_path.split("/")[:2])


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(value: Any) -> int | None:
    value = _int_or_none(value)
    return value if value is not None and value > 0 else None
