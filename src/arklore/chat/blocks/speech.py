"""The speech block: how she speaks, every turn.

Her profile's ``## 说话方式`` (:mod:`arklore.profiles.speech`: what she calls the Doctor, 您
or 你, how she calls herself, her signature words and symbols, what others call her, her line
length) as her tier allows it (the profiles layer decides; the section is counted by code
from her lines, so tier B has it like ``锚``), under the header ``【<name>的说话方式】``.
Each fact reaches the model as the statement alone (``- <fact>``): its source ids go to the
block's sources (story line ids in ``line_ids``, voice ids in ``meta.voice_ids``), never to
the prompt. The script's player placeholder is rendered
(:func:`arklore.core.text.render_nickname`).

The section lists its facts most important first, so over budget (``ARKLORE_SPEECH_TOKEN_BUDGET``)
they are dropped from the last. Empty, with the reason, for tier C and for a profile without
the section (fewer lines of hers than a fact needs, or a person's file without one).
"""

from __future__ import annotations

from typing import Any

from arklore.chat.context import TurnContext
from arklore.core.blocks import SPEECH, Block, empty_block, fit_lines, fit_reason, unique
from arklore.core.text import render_nickname
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.profiles.charfile import SPEECH as SECTION
from arklore.profiles.charfile import TIER_C
from arklore.profiles.persona import Persona
from arklore.profiles.speech import MIN_LINES, parse_fact_line

NAME = SPEECH
AFTER: tuple[str, ...] = ()


def build(ctx: TurnContext) -> Block:
    layers = ctx.layers
    return speech_block(
        ctx.persona, budget=layers.budgets.speech, counter=layers.counter, nickname=layers.nickname
    )


def speech_block(
    persona: Persona,
    *,
    budget: int,
    counter: TokenCounter = count_tokens,
    nickname: str = "博士",
) -> Block:
    """Her ``## 说话方式`` within ``budget`` tokens (see the module docstring)."""
    name = persona.name
    meta: dict[str, Any] = {"tier": persona.tier}
    if persona.profile_of:
        meta["profile_of"] = persona.profile_of
    if persona.tier == TIER_C:
        return empty_block(SPEECH, budget, f"no profile for {name} (tier C)", **meta)
    sec = next((s for s in persona.sections if s.title == SECTION), None)
    if sec is None:
        return empty_block(SPEECH, budget, _why_empty(persona), **meta)
    rows: list[tuple[str, list[str]]] = []
    for ln in sec.text.split("\n"):
        fact = parse_fact_line(ln)
        if fact is not None:
            rows.append((f"- {render_nickname(fact[0], nickname)}", fact[1]))
        elif ln.strip():  # a person's own line: as written
            rows.append((render_nickname(ln, nickname), []))
    if not rows:
        return empty_block(SPEECH, budget, f"the ## {SECTION} of {name}'s profile is empty", **meta)
    header = f"【{name}的说话方式】"
    text, kept = fit_lines(header, [r[0] for r in rows], budget, counter)
    reason = fit_reason(SPEECH, "fact", len(rows), len(kept), budget)
    if not text:
        return empty_block(SPEECH, budget, reason, **meta)
    sources = unique(s for i in kept for s in rows[i][1])
    meta["voice_ids"] = [s.removeprefix("voice:") for s in sources if s.startswith("voice:")]
    return Block(
        SPEECH,
        text,
        counter(text),
        budget,
        reason,
        line_ids=[s.removeprefix("story:") for s in sources if s.startswith("story:")],
        files=[persona.path] if persona.path else [],
        items=[{"text": rows[i][0].removeprefix("- "), "sources": rows[i][1]} for i in kept],
        meta=meta,
    )


def _why_empty(persona: Persona) -> str:
    name = persona.name
    excluded = [why for title, why in persona.excluded if title == SECTION]
    if excluded:
        return f"the ## {SECTION} of {name}'s profile is not usable at tier {persona.tier} ({excluded[0]})"
    return (
        f"the profile of {name} has no ## {SECTION} (it needs {MIN_LINES} lines of hers to "
        "count from)"
    )
