"""The user's folder of hand-written ``.char`` files (``ARKLORE_CHARS_DIR``), whatever the files
are called: which operator each one is for.

A person names a file after the operator as they know her — ``银灰.char``,
``恩希欧迪斯.char``, ``SilverAsh.char`` or ``char_172_svrash.char`` — so a file maps to an
operator by, in this order:

1. its ``- operator:`` header line, when present (a char id or any name): it wins, so a file
   can be called anything;
2. its file name without ``.char``, resolved by the names layer's one resolver (any name,
   alias, real name or char id the alias table knows).

A file that maps to nobody (an unknown or ambiguous name, an unreadable file) is listed with
why and the closest names, never guessed. When two files map to the same operator, one
wins — the one whose header names her, then the one named by her char id, then the first
by file name — and the others are listed as shadowed. The folder is only ever read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arklore.core.errors import AmbiguousNameError, ArkloreError, UnknownOperatorError
from arklore.profiles.charfile import SUFFIX, CharProfile, ProfileFileError
from arklore.profiles.persona import Persona

HEADER, FILE_NAME = "header", "file name"


@dataclass(slots=True)
class UserFile:
    """One ``.char`` file of the folder and the operator it maps to (None: it maps to nobody)."""

    path: Path
    profile: CharProfile | None
    char_id: str | None
    how: str  # "header" | "file name" ("" when unmapped)
    problem: str = ""  # why it maps to nobody, or whom it is shadowed by
    closest: list[str] = field(default_factory=list)
    shadowed_by: str | None = None  # the file that wins for the same operator

    @property
    def used(self) -> bool:
        return self.char_id is not None and self.shadowed_by is None


@dataclass(slots=True)
class UserDir:
    """Every ``.char`` file of one folder, mapped (see the module doc)."""

    path: Path
    files: list[UserFile]
    state: tuple[tuple[str, int, int], ...] = ()

    @property
    def by_id(self) -> dict[str, UserFile]:
        return {f.char_id: f for f in self.files if f.used and f.char_id is not None}


def dir_state(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime, size) of every ``.char`` file: what a cached mapping depends on."""
    try:
        with os.scandir(folder) as it:
            rows = []
            for e in it:
                if e.name.endswith(SUFFIX) and e.is_file():
                    st = e.stat()
                    rows.append((e.name, st.st_mtime_ns, st.st_size))
    except OSError:
        return ()
    return tuple(sorted(rows))


def _rank(f: UserFile) -> tuple[int, str]:
    """Which of several files for one operator wins: the header names her, then her char id
    as the file name, then the first by name."""
    named_by_id = f.path.name == f"{f.char_id}{SUFFIX}"
    return (0 if f.how == HEADER else 1 if named_by_id else 2, f.path.name)


def map_dir(folder: Path, resolve: Callable[[str], str]) -> UserDir:
    """Map every ``.char`` file of ``folder`` to an operator (``resolve``: the names layer's
    resolver, raising UnknownOperatorError with the closest names, or AmbiguousNameError)."""
    folder = Path(folder)
    state = dir_state(folder)
    files: list[UserFile] = []
    for name, _mtime, _size in state:
        path = folder / name
        try:
            prof: CharProfile | None = CharProfile.read(path)
        except ProfileFileError as exc:
            files.append(UserFile(path, None, None, "", exc.one_line()))
            continue
        assert prof is not None
        header = prof.header.get("operator")
        if isinstance(header, str) and header.strip():
            who, how = header.strip(), HEADER
        else:
            who, how = name[: -len(SUFFIX)].strip(), FILE_NAME
        try:
            files.append(UserFile(path, prof, resolve(who), how))
        except AmbiguousNameError as exc:
            files.append(UserFile(path, prof, None, "", exc.one_line(), list(exc.candidates)))
        except UnknownOperatorError as exc:
            where = "its operator: header" if how == HEADER else "its file name"
            files.append(
                UserFile(path, prof, None, "", f"{where} {who!r} names no operator",
                         list(exc.closest))
            )  # fmt: skip
        except ArkloreError as exc:  # no store yet: nothing can be mapped
            files.append(UserFile(path, prof, None, "", exc.one_line()))
    groups: dict[str, list[UserFile]] = {}
    for f in files:
        if f.char_id is not None:
            groups.setdefault(f.char_id, []).append(f)
    for same in groups.values():
        same.sort(key=_rank)
        for other in same[1:]:
            other.shadowed_by = same[0].path.name
            other.problem = f"shadowed by {same[0].path.name} (same operator {other.char_id})"
    return UserDir(folder, files, state)


@dataclass(slots=True)
class FileCheck:
    """What ``arklore chars check`` says about one file of the folder."""

    file: str
    char_id: str | None
    name: str | None  # her display name
    mapped_by: str  # "header" | "file name" | "" (maps to nobody)
    tier: str | None
    used: bool  # the file a chat reads for her (not shadowed, mapped)
    sections: list[str] = field(default_factory=list)  # what her tier lets a chat use
    injected: list[str] = field(default_factory=list)  # what the persona block holds (budget)
    left_out: str = ""  # what the persona budget left out
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (title, why)
    design_headings: list[tuple[str, str]] = field(default_factory=list)  # (as written, as read)
    own_sections: list[str] = field(default_factory=list)  # sections a person added
    problem: str = ""
    closest: list[str] = field(default_factory=list)
    persona: Persona | None = None  # what a chat may use of this file (not serialized)

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "operator": self.char_id,
            "name": self.name,
            "mapped_by": self.mapped_by or None,
            "tier": self.tier,
            "used": self.used,
            "sections": list(self.sections),
            "injected": list(self.injected),
            "left_out": self.left_out,
            "excluded": [{"title": t, "why": w} for t, w in self.excluded],
            "design_headings": [{"heading": h, "read_as": t} for h, t in self.design_headings],
            "own_sections": list(self.own_sections),
            "problem": self.problem,
            "closest": list(self.closest),
        }


__all__ = ["FILE_NAME", "HEADER", "FileCheck", "UserDir", "UserFile", "dir_state", "map_dir"]
