"""What a chat may inject for one operator: the sections her tier allows, with token counts.

Tier S and A: every section (sections a person added too); B: ``## 锚``, ``## 物理标签`` and
verified verbatim lines only (quotes, the rule's ``## 我·性格`` lines, her lines to the Doctor:
a model's paragraph in her 我-sections is an unreviewed draft); C (no profile): nothing, and no
relation context either unless the user opts in (``ARKLORE_TIER_C_RELATIONS=1``): a chat that
knows nothing about her must not make up her relations from the graph alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arklore.core.tokens import count_tokens
from arklore.profiles.archive_since import dated_sections
from arklore.profiles.charfile import TIER_C, CharProfile, UsableSection, allowed_sections
from arklore.profiles.quotes import QuoteSource

OPT_IN_VAR = "ARKLORE_TIER_C_RELATIONS"


@dataclass(slots=True)
class Persona:
    char_id: str
    name: str
    tier: str
    path: str | None
    hand_edited: bool
    sections: list[UsableSection] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    relation_context: bool = True
    note: str = ""
    profile_of: str | None = None  # her base form's id when the file is her base form's
    sources: list[str] = field(default_factory=list)  # the profile's header ``sources``

    @property
    def total_tokens(self) -> int:
        return sum(s.tokens for s in self.sections)

    def text(self) -> str:
        """The sections as injected: ``## <title>`` then the content, in file order."""
        return "\n\n".join(f"## {s.title}\n{s.text}" for s in self.sections)

    def to_dict(self) -> dict[str, Any]:
        return {
            "char_id": self.char_id,
            "name": self.name,
            "tier": self.tier,
            "path": self.path,
            "hand_edited": self.hand_edited,
            "sections": [
                {"title": s.title, "text": s.text, "tokens": s.tokens} for s in self.sections
            ],
            "excluded": [{"title": t, "why": w} for t, w in self.excluded],
            "total_tokens": self.total_tokens,
            "relation_context": self.relation_context,
            "note": self.note,
            "profile_of": self.profile_of,
        }


def persona(
    char_id: str,
    name: str,
    found: tuple[Path, CharProfile] | None,
    *,
    tier_c_relations: bool = False,
    quote_sources: dict[str, QuoteSource] | None = None,
    owners: set[str] | None = None,
) -> Persona:
    """Her persona from her profile (``found``: its path and parsed file, None for tier C).
    ``quote_sources``: re-verify a B file's quotes against them (pass them for a B file edited
    by hand, whose quotes the hash no longer vouches for)."""
    prof = found[1] if found else None
    allowed = allowed_sections(prof, quote_sources=quote_sources, owners=owners)
    out = Persona(
        char_id,
        name,
        allowed.tier,
        str(found[0]) if found else None,
        bool(prof and prof.hand_edited),
        allowed.sections,
        allowed.excluded,
        sources=prof.header_list("sources") if prof is not None else [],
    )
    if allowed.tier == TIER_C:
        out.relation_context = tier_c_relations
        out.note = (
            "tier C (no profile): relation context is used because the user opted in "
            f"({OPT_IN_VAR}=1)"
            if tier_c_relations
            else "tier C (no profile): no relation context is used either, unless the user "
            f"opts in ({OPT_IN_VAR}=1)"
        )
    return out


_STORY_ID = re.compile(r"story:([^\s，,；;）)]+#\d+:[0-9a-f]{8})")
_ARCHIVE_ID = re.compile(r"archive:([^/\s]+)/([^\s（(，,]+)")
_ANCHOR_FIELD = re.compile(r"^- ([^：:\s]{2,8})[：:]")


def _later(
    line: str,
    char_id: str,
    knows_lines: Callable[[Iterable[str]], bool],
    dated: Callable[[str], Mapping[str, str]],
) -> bool:
    """Does this persona line tell of something after the story point: a story line it
    cites, or an archive section the curated file dates later (:mod:`.archive_since`)?"""
    ids = _STORY_ID.findall(line)
    if ids and not knows_lines(ids):
        return True
    sections: list[tuple[str, str]] = _ARCHIVE_ID.findall(line)
    if (m := _ANCHOR_FIELD.match(line)) is not None:
        sections.append((char_id, m.group(1)))
    return any(
        (since := dated(entry).get(title)) is not None and not knows_lines([since])
        for entry, title in sections
    )


def until(
    persona: Persona,
    knows_lines: Callable[[Iterable[str]], bool],
    dated: Callable[[str], Mapping[str, str]] = dated_sections,
) -> tuple[Persona, int]:
    """``persona`` as a chat set at a story point may use it, and how many lines it held
    back: a line citing a story line after the point (a quote, her line to the Doctor, a way
    of speaking shown by a later line) or an archive section dated after it (``dated``: char
    id -> section title -> since stage, the curated file by default) is left out, a section
    left with no line goes whole. The rest of her archive and her voice lines are undated
    and stay."""
    held = 0
    sections = []
    for sec in persona.sections:
        kept = []
        for ln in sec.text.split("\n"):
            if _later(ln, persona.char_id, knows_lines, dated):
                held += 1
                continue
            kept.append(ln)
        text = "\n".join(kept)
        if text == sec.text:  # nothing of this section held back
            sections.append(sec)
        elif text.strip():
            sections.append(replace(sec, text=text, tokens=count_tokens(f"## {sec.title}\n{text}")))
    return (replace(persona, sections=sections) if held else persona), held
