"""The persona block: the sections of her ``.char`` profile a chat may use, by tier, as the
profiles layer decides them (:meth:`arklore.profiles.facade.ProfilesFacade.persona`: S/A
everything, B anchor, tags and verified quotes, C nothing), fitted to the block's budget.

In the prompt a quote is only her words (``- 「…」``): its source id goes to the block's
sources, not to the model; the script's player placeholder is rendered
(:func:`arklore.core.text.render_nickname`). ``## 我·关于博士`` is left to the doctor block
(:mod:`arklore.chat.blocks.doctor`), and so are the quotes that block injects (its claims):
no section and no line is injected twice. Over budget, quotes are dropped
from the last, then whole sections from the last, the anchor (``锚``) last of all.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from arklore.chat.context import Layers, TurnContext
from arklore.core.blocks import DOCTOR, PERSONA, Block, empty_block, unique
from arklore.core.text import render_nickname
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.profiles.charfile import ABOUT_DOCTOR, ANCHOR, QUOTES, TIER_C, UsableSection
from arklore.profiles.persona import Persona
from arklore.profiles.quotes import parse_quote_line

NAME = PERSONA
AFTER = (DOCTOR,)  # the quotes the doctor block injects are left out here


def build(ctx: TurnContext) -> Block:
    return block(ctx.layers, ctx.persona, skip_quotes=ctx.claims.quotes)


def block(
    layers: Layers, persona: Persona, budget: int | None = None, skip_quotes: Iterable[str] = ()
) -> Block:
    """Her persona block, kept per persona, budget and ``skip_quotes`` (the source ids of
    quotes another block of the turn injects already); ``## 我·关于博士`` is the doctor
    block's."""
    budget = budget or layers.budgets.persona
    skip = frozenset(skip_quotes)
    key = (persona.char_id, budget, skip)
    hit = layers.personas.get(key, persona)
    if hit is not None:
        return hit
    made = persona_block(
        persona, budget=budget, counter=layers.counter, nickname=layers.nickname,
        leave_out=(ABOUT_DOCTOR,), skip_quotes=skip,
    )  # fmt: skip
    return layers.personas.put(key, persona, made)


def _section_lines(
    sec: UsableSection, nickname: str, skip: Collection[str] = ()
) -> list[tuple[str, str | None]]:
    """The lines a chat sees of a section, each with its quote's source id (None: not a
    quote); quotes citing ``skip`` are left out."""
    if sec.title != QUOTES:
        return [(render_nickname(ln, nickname), None) for ln in sec.text.split("\n")]
    out: list[tuple[str, str | None]] = []
    for ln in sec.text.split("\n"):
        q = parse_quote_line(ln)
        if q is None:
            out.append((render_nickname(ln, nickname), None))
        elif q.source_id not in skip:
            out.append((f"- 「{render_nickname(q.text, nickname)}」", q.source_id))
    return out


def persona_block(
    persona: Persona,
    *,
    budget: int,
    counter: TokenCounter = count_tokens,
    nickname: str = "博士",
    leave_out: Collection[str] = (),
    skip_quotes: Collection[str] = (),
) -> Block:
    """The persona block of ``persona`` (the sections her tier allows, but ``leave_out``:
    sections another block injects, and quotes citing ``skip_quotes``: lines another block
    injects) within ``budget``."""
    meta: dict[str, Any] = {
        "tier": persona.tier,
        "excluded": [{"title": t, "why": w} for t, w in persona.excluded],
        "hand_edited": persona.hand_edited,
    }
    if persona.profile_of:
        meta["profile_of"] = persona.profile_of  # her base form's profile
    files = [persona.path] if persona.path else []
    name = persona.name
    if persona.tier == TIER_C:
        return empty_block(PERSONA, budget, f"no profile for {name} (tier C)", **meta)
    sections = [
        (sec.title, _section_lines(sec, nickname, skip_quotes))
        for sec in persona.sections
        if sec.title not in leave_out
    ]
    elsewhere = [sec.title for sec in persona.sections if sec.title in leave_out]
    if elsewhere:
        meta["elsewhere"] = elsewhere  # injected by another block
    if not sections:
        also = f" besides {', '.join(f'## {t}' for t in elsewhere)}" if elsewhere else ""
        return Block(PERSONA, budget=budget, files=files, meta=meta,
                     reason=f"tier {persona.tier}: no section a chat may use{also}")  # fmt: skip
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
        meta={**meta, "voice_ids": voice, "profile_sources": list(persona.sources)},
    )


def _counted(labels: list[str]) -> list[str]:
    out: dict[str, int] = {}
    for x in labels:
        out[x] = out.get(x, 0) + 1
    return [f"{k} x{v}" if v > 1 else k for k, v in out.items()]
