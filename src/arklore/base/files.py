"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half.

The data goes to a temporary file in the target's folder, is fsynced, then renamed over the
target (``os.replace``), and the folder is fsynced so the rename itself survives a power cut.
Files get the usual permissions (0666 minus the umask), not the 0600 ``mkstemp`` gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import TypeVar

from arklore.core.errors import OutputPathError

T = TypeVar("T")


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once: os.umask is process-wide and not thread-safe to probe


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (creating the folder); returns the path.

    OutputPathError (one line: the path and why) when it cannot be written there.
    """
    if not str(path).strip():
        raise OutputPathError("cannot write to an empty path")
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"cannot write {path}: it is a folder, not a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise OutputPathError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # make the rename durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return path


def atomic_write_text(path: Path | str, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def file_fingerprint(path: Path | str) -> dict[str, int | str]:
    """Size, mtime and sha256 of a file: enough to tell later whether it changed (the cheap
    size+mtime first, the hash when they differ)."""
    path = Path(path)
    st = path.stat()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}


def file_sha(path: Path) -> str | None:
    """The sha256 of a file, None where there is none: what a step's recorded inputs hold."""
    return str(file_fingerprint(path)["sha256"]) if path.is_file() else None


def read_cached(path: Path, key: str, kind: type[T]) -> T | None:
    """What :func:`write_cached` kept at ``path`` when it was made under the same ``key``
    (a digest of everything it depends on) and is a ``kind``; else None: missing, unreadable,
    from another version or another key, so the caller computes it again."""
    try:
        with path.open("rb") as f:
            stored_key, value = pickle.load(f)  # our own file under ARKLORE_HOME
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError,
            AttributeError, ImportError):  # fmt: skip
        return None
    return value if stored_key == key and isinstance(value, kind) else None


def write_cached(path: Path, key: str, value: object) -> None:
    """Keep ``value`` at ``path`` under ``key`` for :func:`read_cached`, atomically. A cache:
    a failed write (a full disk) only costs the next run the work it would have saved."""
    with contextlib.suppress(OSError):
        atomic_write_bytes(path, pickle.dumps((key, value), protocol=5))
