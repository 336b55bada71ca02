"""The persona block: the sections of her ``.char`` profile a chat may use, by tier.

Profiles are looked up by char id in the user's folder (``ARKLORE_CHARS_DIR``, read only, wins)
then in ``$ARKLORE_HOME/chars``; an alternate form without a file of her own uses her base
form's (the same person). What the tier allows is decided by
:func:`arklore.profiles.charfile.allowed_sections` (S/A everything, B anchor, tags and verified
quotes, C nothing).

In the prompt a quote is only her words (``- 「…」``): its source id goes to the block's
sources, not to the model. Over budget, quotes are dropped from the last, then whole sections
from the last, the anchor (``锚``) last of all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arklore.core.blocks import PERSONA, Block, empty_block, unique
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.profiles.charfile import (
    ANCHOR,
    QUOTES,
    SUFFIX,
    TIER_C,
    AllowedSections,
    CharProfile,
    UsableSection,
    allowed_sections,
)
from arklore.profiles.quotes import parse_quote_line


def find_profile_path(char_ids: Sequence[str], dirs: Sequence[Path]) -> Path | None:
    """The first ``<dir>/<char_id>.char`` that exists, ``char_ids`` tried in order (her own
    id, then her base form's) in each of ``dirs`` (the user's folder first)."""
    for cid in char_ids:
        for d in dirs:
            p = Path(d) / f"{cid}{SUFFIX}"
            if p.is_file():
                return p
    return None


def _section_lines(sec: UsableSection) -> list[tuple[str, str | None]]:
    """The lines a chat sees of a section, each with its quote's source id (None: not a quote)."""
    if sec.title != QUOTES:
        return [(ln, None) for ln in sec.text.split("\n")]
    out: list[tuple[str, str | None]] = []
    for ln in sec.text.split("\n"):
        q = parse_quote_line(ln)
        out.append((ln, None) if q is None else (f"- 「{q.text}」", q.source_id))
    return out


def persona_block(
    profile: CharProfile | None,
    name: str,
    *,
    budget: int,
    counter: TokenCounter = count_tokens,
    allowed: AllowedSections | None = None,
) -> Block:
    """The persona block of ``profile`` (None: tier C) within ``budget`` tokens."""
    allowed = allowed if allowed is not None else allowed_sections(profile)
    meta = {
        "tier": allowed.tier,
        "excluded": [{"title": t, "why": w} for t, w in allowed.excluded],
        "hand_edited": bool(profile and profile.hand_edited),
    }
    files = [str(profile.path)] if profile is not None and profile.path else []
    if profile is None or allowed.tier == TIER_C:
        return empty_block(PERSONA, budget, f"no profile for {name} (tier C)", **meta)
    if not allowed.sections:
        return Block(PERSONA, budget=budget, files=files, meta=meta,
                     reason=f"tier {allowed.tier}: no section a chat may use")  # fmt: skip
    sections = [(sec.title, _section_lines(sec)) for sec in allowed.sections]
    header = f"【{name}的人设】"
    dropped: list[str] = []

    def render() -> str:
        parts = [header]
        for title, lines in sections:
            if lines:
                parts.append(f"## {title}\n" + "\n".join(ln for ln, _ in lines))
        return "\n".join(parts)

    text = render()
    while counter(text) > budget:
        q = next((s for s in sections if s[0] == QUOTES and sum(1 for _, x in s[1] if x) > 1), None)
        if q is not None:  # one quote less, from the last
            idx = max(i for i, (_, src) in enumerate(q[1]) if src)
            q[1].pop(idx)
            dropped.append(f"a quote of ## {QUOTES}")
        else:
            rest = [i for i, s in enumerate(sections) if s[0] != ANCHOR] or list(
                range(len(sections))
            )
            if not rest:
                break
            title = sections.pop(rest[-1])[0]
            dropped.append(f"## {title}")
        if not sections:
            break
        text = render()
    if not sections:
        return Block(PERSONA, budget=budget, files=files, meta=meta,
                     reason=f"not even ## {ANCHOR} fits the persona budget of {budget} tokens")  # fmt: skip
    sources = unique(src for _, lines in sections for _, src in lines if src)
    line_ids = [s.removeprefix("story:") for s in sources if s.startswith("story:")]
    voice = [s.removeprefix("voice:") for s in sources if s.startswith("voice:")]
    reason = ""
    if dropped:
        reason = f"left out to fit {budget} tokens: " + ", ".join(_counted(dropped))
    items = [
        {"title": t, "lines": len(lines),
         "tokens": counter(f"## {t}\n" + "\n".join(ln for ln, _ in lines))}
        for t, lines in sections
    ]  # fmt: skip
    return Block(
        PERSONA,
        text,
        counter(text),
        budget,
        reason,
        line_ids=line_ids,
        files=files,
        items=items,
        meta={**meta, "voice_ids": voice, "profile_sources": profile.header_list("sources")},
    )


def _counted(labels: list[str]) -> list[str]:
    out: dict[str, int] = {}
    for x in labels:
        out[x] = out.get(x, 0) + 1
    return [f"{k} x{v}" if v > 1 else k for k, v in out.items()]
