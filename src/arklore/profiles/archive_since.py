"""Archive sections dated by hand: what a chat set at an earlier story point must not receive.

Archive text is undated; most of it is her past or her character and is kept at every point.
The packaged ``data/archive_since.toml`` lists the sections that tell of later events (an
alternate form's record written after her story, a file rewritten after she joined), each with
the stage from which they are known and why (see the file's header).
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from arklore.core.errors import InputFileError

_KEYS = {"operator", "sections", "since", "reason"}


def default_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "archive_since.toml"))


def load(path: Path) -> dict[str, dict[str, str]]:
    """char id -> {section title -> the stage path it is known from}; InputFileError naming
    the file and the entry when an entry is malformed or dates a section twice."""
    p = str(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputFileError(p, "file", str(e)) from None
    out: dict[str, dict[str, str]] = {}
    for i, rec in enumerate(doc.get("archive", []), 1):
        where = f"[[archive]] #{i}"
        _check(p, where, rec)
        mine = out.setdefault(rec["operator"], {})
        for title in rec["sections"]:
            if title in mine:
                raise InputFileError(p, where, f"{rec['operator']} {title} is dated twice")
            mine[title] = rec["since"]
    return out


def _check(p: str, where: str, rec: Any) -> None:
    if not isinstance(rec, dict) or set(rec) != _KEYS:
        raise InputFileError(p, where, f"needs exactly the keys {sorted(_KEYS)}")
    sections = rec["sections"]
    if (
        not isinstance(sections, list)
        or not sections
        or not all(isinstance(s, str) and s for s in sections)
    ):
        raise InputFileError(p, where, "sections: a list of section titles")
    since = rec["since"]
    if not isinstance(since, str) or not since or "#" in since:
        raise InputFileError(p, where, "since: a stage path (the part of a line id before '#')")
    if not all(isinstance(rec[k], str) and rec[k] for k in ("operator", "reason")):
        raise InputFileError(p, where, "operator and reason: non-empty strings")


@cache
def packaged() -> dict[str, dict[str, str]]:
    return load(default_path())


def dated_sections(char_id: str) -> dict[str, str]:
    """Her archive sections the packaged file dates: section title -> since stage."""
    return packaged().get(char_id, {})
