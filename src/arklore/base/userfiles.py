"""Reading the files users edit by hand (alias file, relation matrix, relation imports).

One place turns "cannot read" and "not UTF-8" into an InputFileError naming the file, so every
hand-edited input fails the same way: with the path, where, and what to fix.
"""

from __future__ import annotations

from pathlib import Path

from arklore.core.errors import InputFileError


def read_user_bytes(path: Path | str) -> bytes:
    """The file's bytes; InputFileError(path, "file", reason) when it cannot be read."""
    p = Path(path)
    if not str(path).strip():
        raise InputFileError(repr(str(path)), "file", "empty path")
    if p.is_dir():
        raise InputFileError(str(p), "file", "is a folder, not a file")
    try:
        return p.read_bytes()
    except OSError as e:
        raise InputFileError(str(p), "file", f"cannot read: {e.strerror or e}") from e


def read_user_text(path: Path | str) -> str:
    """The file's text; InputFileError(path, "file", reason) when it cannot be read as UTF-8."""
    data = read_user_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(str(path), "file", f"not UTF-8: {e}") from e
