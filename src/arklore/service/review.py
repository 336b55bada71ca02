"""The profile review queue over the ``.char`` folders, and the two writes a reviewer makes.

Read: every profile in ``$ARKLORE_HOME/chars`` and the user's folder (``ARKLORE_CHARS_DIR``,
read only), drafts waiting beside protected files (``.char.draft``), each with its tier, the
sections a chat may use, and its quotes beside their sources (story lines from the store, voice
lines from ``charword_table`` when the game data is there).

Write (admin token required, see the routes): approve a tier-B draft (``[AUTO-DRAFT]`` ->
``[AUTO]``), or replace a profile's text. Only ``$ARKLORE_HOME/chars`` is ever written, each
file atomically; a profile the user's folder holds is that folder's, and is refused.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from arklore.base.files import atomic_write_text
from arklore.profiles.archive import CHARWORD
from arklore.profiles.charfile import (
    DRAFT_SUFFIX,
    SUFFIX,
    TIER_B,
    CharProfile,
    ProfileFileError,
    allowed_sections,
    approve,
)
from arklore.profiles.quotes import normalize_ws
from arklore.service.errors import ServiceError
from arklore.sources.gamedata import read_table
from arklore.workspace import Workspace

MAX_QUEUE = 2000


def _dirs(ws: Workspace) -> list[tuple[Path, bool]]:
    """(folder, writable): the user's folder first (it wins), then the home's."""
    out = []
    if ws.settings.chars_dir is not None:
        out.append((Path(ws.settings.chars_dir), False))
    out.append((ws.paths.chars, True))
    return out


def _read(path: Path) -> CharProfile | None:
    try:
        return CharProfile.read(path)
    except ProfileFileError:
        return None


def queue(ws: Workspace) -> list[dict[str, Any]]:
    """One entry per char id that has a profile or a draft; drafts to review first."""
    seen: dict[str, dict[str, Any]] = {}
    for d, writable in _dirs(ws):
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir())[: MAX_QUEUE * 2]:
            name = p.name
            if name.endswith(SUFFIX + DRAFT_SUFFIX):
                cid = name[: -len(SUFFIX + DRAFT_SUFFIX)]
                entry = seen.setdefault(cid, {"char_id": cid})
                entry.setdefault("draft_beside", str(p))
                continue
            if not name.endswith(SUFFIX) or cid_taken(seen, name[: -len(SUFFIX)]):
                continue
            cid = name[: -len(SUFFIX)]
            prof = _read(p)
            entry = seen.setdefault(cid, {"char_id": cid})
            entry.update(
                path=str(p),
                writable=writable,
                name=prof.name if prof else None,
                tier=prof.tier if prof else None,
                hand_edited=bool(prof and prof.hand_edited),
                unreadable=prof is None,
            )
    out = []
    for e in seen.values():
        e.setdefault("path", None)
        e["needs_review"] = e.get("tier") == TIER_B or "draft_beside" in e
        out.append(e)
    out.sort(key=lambda e: (not e["needs_review"], e["char_id"]))
    return out[:MAX_QUEUE]


def cid_taken(seen: dict[str, dict[str, Any]], cid: str) -> bool:
    return "path" in seen.get(cid, {})


def locate(ws: Workspace, char_id: str) -> tuple[Path | None, bool]:
    """The profile file of ``char_id`` and whether the service may write it."""
    for d, writable in _dirs(ws):
        p = d / f"{char_id}{SUFFIX}"
        if p.is_file():
            return p, writable
    return None, True


class VoiceTable:
    """``voice:<charWordId>`` -> text, from charword_table (loaded once, when needed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, str] | None = None

    def get(self, ws: Workspace, ids: list[str]) -> dict[str, str]:
        if not ids:
            return {}
        with self._lock:
            if self._by_id is None:
                self._by_id = {}
                root = ws.roots.excel_root_or_none()
                if root is not None:
                    try:
                        table = read_table(root, CHARWORD) or {}
                    except Exception:  # a missing or broken table: no voice texts shown
                        table = {}
                    for wid, w in (table.get("charWords") or {}).items():
                        if isinstance(w, dict) and isinstance(w.get("voiceText"), str):
                            self._by_id[wid] = w["voiceText"]
        return {i: self._by_id[i] for i in ids if i in self._by_id}


def detail(ws: Workspace, char_id: str, voices: VoiceTable) -> dict[str, Any]:
    """A profile (and a draft beside it) with the sections a chat may use and its quotes
    beside their sources, each marked ``verbatim`` when the quote is found in its source."""
    path, writable = locate(ws, char_id)
    draft = ws.paths.chars / f"{char_id}{SUFFIX}{DRAFT_SUFFIX}"
    if path is None and not draft.is_file():
        raise ServiceError(404, "no_profile", f"no profile for {char_id}",
                           hint="run `arklore profiles draft` first")  # fmt: skip
    out: dict[str, Any] = {"char_id": char_id, "path": str(path) if path else None,
                           "writable": writable}  # fmt: skip
    for key, p in (("profile", path), ("draft", draft if draft.is_file() else None)):
        if p is None:
            out[key] = None
            continue
        prof = _read(p)
        if prof is None:
            out[key] = {"path": str(p), "unreadable": True}
            continue
        allowed = allowed_sections(prof)
        quotes = prof.quotes()
        story_ids = [q.source_id.removeprefix("story:") for q in quotes if q.kind == "story"]
        voice_ids = [q.source_id.removeprefix("voice:") for q in quotes if q.kind == "voice"]
        lines = ws.store().lines_by_id(story_ids) if story_ids else {}
        voice = voices.get(ws, voice_ids)
        qs = []
        for q in quotes:
            sid = q.source_id.partition(":")[2]
            src = lines.get(sid, (None, None))[1] if q.kind == "story" else voice.get(sid)
            qs.append({
                "text": q.text, "source_id": q.source_id, "note": q.note, "source_text": src,
                "verbatim": src is not None and normalize_ws(q.text) in normalize_ws(src),
            })  # fmt: skip
        out[key] = {
            "path": str(p),
            "name": prof.name,
            "tier": prof.tier,
            "hand_edited": prof.hand_edited,
            "text": prof.text(),
            "header": prof.header,
            "allowed": [{"title": s.title, "tokens": s.tokens} for s in allowed.sections],
            "excluded": [{"title": t, "why": w} for t, w in allowed.excluded],
            "quotes": qs,
        }
    return out


def approve_profile(ws: Workspace, char_id: str) -> dict[str, Any]:
    path, writable = locate(ws, char_id)
    if path is None:
        raise ServiceError(404, "no_profile", f"no profile for {char_id}")
    if not writable:
        raise ServiceError(409, "read_only", f"{path} is in the user's folder (read only)",
                           hint="edit that file by hand")  # fmt: skip
    prof = CharProfile.read(path)
    if prof.tier != TIER_B:
        raise ServiceError(409, "not_a_draft", f"{char_id} is tier {prof.tier}, not a B draft",
                           hint="only [AUTO-DRAFT] profiles can be approved")  # fmt: skip
    atomic_write_text(path, approve(prof.text()))
    return {"char_id": char_id, "path": str(path), "tier": CharProfile.read(path).tier}


def save_profile(ws: Workspace, char_id: str, name: str, text: str) -> dict[str, Any]:
    path, writable = locate(ws, char_id)
    if not writable:
        raise ServiceError(409, "read_only", f"{path} is in the user's folder (read only)",
                           hint="edit that file by hand")  # fmt: skip
    prof = CharProfile.parse(text)
    if prof.title_line is None:
        raise ServiceError(400, "bad_profile", "a .char file starts with a '# <name>' title line",
                           hint="see the .char format in the README")  # fmt: skip
    if prof.char_id not in (None, char_id):
        raise ServiceError(400, "bad_profile",
                           f"the header says operator {prof.char_id}, not {char_id}")  # fmt: skip
    target = path or ws.paths.chars / f"{char_id}{SUFFIX}"
    atomic_write_text(target, text)
    saved = CharProfile.read(target)
    return {"char_id": char_id, "name": name, "path": str(target), "tier": saved.tier,
            "hand_edited": saved.hand_edited}  # fmt: skip
