"""Who speaks where the script's own label says otherwise (``data/speakers.toml``).

Two cases, each entry verified in the story:

* ``[[player]]``: a stage where the player is somebody other than the Doctor. A story's
  choices are the player's lines, and the player is the Doctor almost everywhere, so a
  choice line is the Doctor's (``speaker=博士``). In 泥岩's 《回首》 the player is Logos (a
  guard calls him 队长, he answers 「称我Logos罢。」), and crediting those lines to the Doctor
  tells a chat model the Doctor is a Sarkaz called Logos. There a choice is that person's
  dialogue line (the options as one line: such a stage's options continue one another).
* ``[[picture]]``: a speaker label several people use, told apart by the picture on screen.
  ``医生`` is R6's Doc, and with 阿's portrait it is 阿 in his own record; ``林`` with her
  father's portrait is 鼠王, never 林雨霞. A line with that label and that picture (its
  expression and variant aside: ``avg_225_haak_1#7$1`` is ``avg_225_haak_1``) is spoken by
  the given speaker.

Both apply when a stage is read, so every layer sees the same speaker. A stage's digest
carries the entries that can apply to it (its player, the pictures of labels its bytes
hold), so a changed entry re-ingests exactly those stages.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from arklore.core.errors import InputFileError
from arklore.core.model import LINES_VERSION

_KEYS = {"player": frozenset({"stage", "speaker", "note"}),
         "picture": frozenset({"label", "picture", "speaker", "note"})}  # fmt: skip


@dataclass(frozen=True)
class Speakers:
    """The table: stage -> player, (label, picture) -> speaker."""

    players: dict[str, str] = field(default_factory=dict)
    pictures: dict[tuple[str, str], str] = field(default_factory=dict)

    def player(self, stage_path: str) -> str | None:
        return self.players.get(stage_path)

    def by_picture(self, label: str, figure_art: str | None) -> str | None:
        """Who speaks a line labelled ``label`` with ``figure_art`` on screen, when the table
        says it is not the label's usual person."""
        if not figure_art or not self.pictures:
            return None
        return self.pictures.get((label, picture(figure_art)))

    def digest_part(self, data: bytes, stage_path: str) -> str:
        """The entries that can apply to a stage whose file holds ``data``."""
        parts = [f"player={p}" for p in [self.player(stage_path)] if p]
        parts += [f"{lb}|{pic}={sp}" for (lb, pic), sp in sorted(self.pictures.items())
                  if lb.encode() in data]  # fmt: skip
        return "\n".join(parts)


def picture(figure_art: str) -> str:
    """A portrait id without its expression and variant (``avg_npc_034#4`` -> ``avg_npc_034``)."""
    return re.split(r"[#$]", figure_art.strip(), maxsplit=1)[0]


def default_speakers_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "speakers.toml"))


def load_speakers(path: Path | None = None) -> Speakers:
    """Read the table. Raises :class:`InputFileError` naming the file, the entry and the
    reason on any problem."""
    p = path or default_speakers_path()
    try:
        doc = tomllib.loads(p.read_bytes().decode("utf-8"))
    except OSError as e:
        raise InputFileError(str(p), "file", f"cannot read: {e.strerror or e}") from e
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputFileError(str(p), "toml", str(e)) from e
    unknown = set(doc) - set(_KEYS)
    if unknown:
        raise InputFileError(
            str(p), sorted(unknown)[0], "unknown table (use [[player]] or [[picture]])"
        )
    out = Speakers()
    for table, keys in _KEYS.items():
        entries = doc.get(table, [])
        if not isinstance(entries, list):
            raise InputFileError(str(p), table, f"must be an array of tables: [[{table}]]")
        for i, entry in enumerate(entries, 1):
            where = f"[[{table}]] #{i}"
            values = _entry(str(p), where, entry, keys)
            if table == "player":
                stage = values["stage"].lower()
                if stage in out.players:
                    raise InputFileError(str(p), f"{where} stage", f"{stage} is listed twice")
                out.players[stage] = values["speaker"]
            else:
                key = (values["label"], picture(values["picture"]))
                if key in out.pictures:
                    raise InputFileError(str(p), f"{where} picture", f"{key} is listed twice")
                out.pictures[key] = values["speaker"]
    return out


def _entry(path: str, where: str, entry: Any, keys: frozenset[str]) -> dict[str, str]:
    if not isinstance(entry, dict):
        raise InputFileError(path, where, "not a table")
    if set(entry) - keys:
        raise InputFileError(path, where, f"unknown key {sorted(set(entry) - keys)[0]!r}")
    out: dict[str, str] = {}
    for key in sorted(keys):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise InputFileError(path, f"{where} {key}", "missing or empty string")
        out[key] = value.strip()
    return out


@cache
def speakers() -> Speakers:
    """The packaged table, read once."""
    return load_speakers()


def stage_digest(data: bytes, stage_path: str) -> str:
    """What ingest compares to know a stage changed: its file's bytes, the entries of the
    table that can apply to it (a changed entry re-reads those stages) and how lines are
    built (:data:`~arklore.core.model.LINES_VERSION`)."""
    extra = speakers().digest_part(data, stage_path)
    return hashlib.sha1(f"lines:{LINES_VERSION}\n".encode() + data + extra.encode()).hexdigest()


def digest_rules() -> str:
    """What :func:`stage_digest` depends on besides a file's bytes and its stage path: the
    table and :data:`~arklore.core.model.LINES_VERSION`. A digest kept for a file (ingest's
    memo of unchanged files) is valid only under the same rules."""
    table = speakers()
    parts = [
        f"lines:{LINES_VERSION}",
        *(f"player {s}={p}" for s, p in sorted(table.players.items())),
    ]
    parts += [f"picture {lb}|{pic}={sp}" for (lb, pic), sp in sorted(table.pictures.items())]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()
