"""Stages where the player speaks as somebody other than the Doctor.

A story's choices are the player's lines, and the player is the Doctor almost everywhere,
so a choice line is the Doctor's (``speaker=博士``). A few stages hand the player another
person: in 泥岩's 《回首》 the player is Logos (an operator calls him 队长, and he answers
「称我Logos罢。」), and crediting those lines to the Doctor tells a chat model the Doctor is
a Sarkaz called Logos. ``data/players.toml`` lists such stages, each verified in the story:

    [[player]]
    stage = "activities/act13d0/level_act13d0_st04"
    speaker = "逻各斯"
    note = "why"

There a choice is that person's dialogue line (the options as one line: such a stage's
options continue one another), so every layer sees it as his, not the Doctor's; the stage's
content hash carries the entry, so a changed entry re-ingests the stage.
"""

from __future__ import annotations

import hashlib
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path

from arklore.core.errors import InputFileError

_KEYS = frozenset({"stage", "speaker", "note"})


def default_players_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "players.toml"))


def load_players(path: Path | None = None) -> dict[str, str]:
    """stage path -> the speaker the player is there. Raises :class:`InputFileError` naming
    the file, the entry and the reason on any problem."""
    p = path or default_players_path()
    try:
        doc = tomllib.loads(p.read_bytes().decode("utf-8"))
    except OSError as e:
        raise InputFileError(str(p), "file", f"cannot read: {e.strerror or e}") from e
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputFileError(str(p), "toml", str(e)) from e
    if set(doc) - {"player"}:
        raise InputFileError(
            str(p), sorted(set(doc) - {"player"})[0], "unknown table (use [[player]])"
        )
    entries = doc.get("player", [])
    if not isinstance(entries, list):
        raise InputFileError(str(p), "player", "must be an array of tables: [[player]]")
    out: dict[str, str] = {}
    for i, entry in enumerate(entries, 1):
        where = f"[[player]] #{i}"
        if not isinstance(entry, dict):
            raise InputFileError(str(p), where, "not a table")
        if set(entry) - _KEYS:
            raise InputFileError(str(p), where, f"unknown key {sorted(set(entry) - _KEYS)[0]!r}")
        for key in ("stage", "speaker", "note"):
            value = entry.get(key)
            if not isinstance(value, str) or not value.strip():
                raise InputFileError(str(p), f"{where} {key}", "missing or empty string")
        stage = entry["stage"].strip().lower()
        if stage in out:
            raise InputFileError(str(p), f"{where} stage", f"{stage} is listed twice")
        out[stage] = entry["speaker"].strip()
    return out


@cache
def players() -> dict[str, str]:
    """The packaged table, read once."""
    return load_players()


def stage_digest(data: bytes, stage_path: str) -> str:
    """What ingest compares to know a stage changed: its file's bytes, and who the player is
    there when the table lists it (a changed entry re-reads the stage)."""
    player = players().get(stage_path)
    return hashlib.sha1(data if player is None else data + player.encode()).hexdigest()
