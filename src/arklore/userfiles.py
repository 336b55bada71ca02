"""Reading the files users edit by hand (alias file, relation matrix, relation imports).

One place turns "cannot read" and "not UTF-8" into an InputFileError naming the file, so every
hand-edited input fails the same way: with the path, where, and what to fix.
"""

from __future__ import annotations

from pathlib import Path

from arklore.core.errors import InputFileError


def read_user_text(path: Path | str) -> str:
    """The file's text; InputFileError(path, "file", reason) when it cannot be read as UTF-8."""
    p = str(path)
    try:
        return Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        raise InputFileError(p, "file", f"cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise InputFileError(p, "file", f"not UTF-8: {e}") from e
