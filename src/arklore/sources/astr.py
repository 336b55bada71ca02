"""Reader for ArknightsStoryJson (ASTR): ``<astr>/zh_CN/gamedata/story/**.json``.

Each file is a header (``eventid, eventName, entryType, storyCode, avgTag, storyName,
storyInfo``) and ``storyList``, a list of ``{id, prop, attributes, figure_art?,
targetLine?, endOfOpt?}``. ``prop`` case varies, so it is lower-cased; ``id`` is only the
array index and never used. The elements go through the same line builder as the raw
scripts (``_commands.build_lines``), so both readers agree on what a line is, its number,
its speaker and its branch; ``figure_art`` is ASTR's own. ``targetLine``/``endOfOpt``
are not needed: the Predicate references carry the same structure.

Malformed Decision/Predicate elements are parse warnings (``Stage.parse_warnings``, each
naming the element as ``storyList[i]``), read exactly as the raw reader reads them (the checks
live in the shared line builder: see ``_commands``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from arklore.core.errors import MalformedSourceError
from arklore.core.model import Line, Source, Stage
from arklore.sources._commands import (
    Element,
    build_lines,
    parse_source,
    read_source,
    stage_path_for,
    stage_path_of,
    story_files,
)
from arklore.sources.speakers import stage_digest

# stage_path_for and stage_path_of are re-exported: each reader module offers the same calls
# (iter_*_files or *_files, stage_path_for or stage_path_of, read_*_stage) to corpus ingest
# and crosscheck.
__all__ = [
    "astr_files",
    "iter_astr_files",
    "parse_astr",
    "read_astr_stage",
    "stage_path_for",
    "stage_path_of",
]


def iter_astr_files(story_root: Path) -> Iterator[Path]:
    """Every stage file under ``story_root``, sorted."""
    return (story_root / rel for rel in astr_files(story_root))


def astr_files(story_root: Path) -> list[str]:
    """:func:`iter_astr_files` as paths under ``story_root`` (``obt/main/x.json``)."""
    return story_files(story_root, ".json")


def read_astr_stage(story_root: Path, file: Path, data: bytes | None = None) -> Stage:
    """Read and parse one stage with its header metadata."""
    rel, data = read_source(story_root, file, data)
    try:
        doc = orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8-sig")
        except UnicodeDecodeError as bad:
            raise MalformedSourceError(
                rel, f"not UTF-8 ({bad.reason} at byte {bad.start})"
            ) from bad
        raise MalformedSourceError(rel, f"bad JSON: {exc.msg} at line {exc.lineno}") from exc
    stage_path = stage_path_for(story_root, file)
    lines, warnings = parse_source(parse_astr, doc, stage_path, rel)

    def header(key: str) -> str | None:
        return _opt_str(doc.get(key))

    return Stage(
        stage_path=stage_path,
        source=Source.ASTR,
        source_path=rel,
        event_id=header("eventid"),
        event_name=header("eventName"),
        entry_type=header("entryType"),
        story_code=header("storyCode"),
        avg_tag=header("avgTag"),
        story_name=header("storyName"),
        story_info=header("storyInfo"),
        content_hash=stage_digest(data, stage_path),
        lines=lines,
        parse_warnings=warnings,
    )


def parse_astr(
    doc: dict[str, Any], stage_path: str, *, warnings: list[str] | None = None
) -> list[Line]:
    """The lines of one parsed ASTR document (pure); MalformedSourceError on a wrong shape.
    ``warnings`` receives the malformed choice commands."""
    if not isinstance(doc, dict):
        raise MalformedSourceError(stage_path, f"expected a JSON object, got {type(doc).__name__}")
    story = doc.get("storyList")
    if not isinstance(story, list):
        raise MalformedSourceError(stage_path, "no storyList array")
    return build_lines(
        _elements(story, stage_path), stage_path, track_figures=False, warnings=warnings
    )


def _elements(story: list[Any], stage_path: str) -> Iterator[Element]:
    for index, item in enumerate(story):
        if not isinstance(item, dict) or not isinstance(item.get("prop"), str):
            raise MalformedSourceError(stage_path, f"storyList[{index}] has no prop")
        attrs = item.get("attributes")
        attrs = {} if attrs is None else attrs
        if not isinstance(attrs, dict):
            raise MalformedSourceError(stage_path, f"storyList[{index}].attributes not an object")
        figure = item.get("figure_art")
        yield Element(
            item["prop"].strip().lower(),
            {str(k).lower(): v for k, v in attrs.items()},
            figure if isinstance(figure, str) and figure else None,
            f"storyList[{index}]",
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
