"""The persona block: the sections of her ``.char`` profile a chat may use, by tier, as the
profiles layer decides them (:meth:`arklore.profiles.facade.ProfilesFacade.persona`: S/A
everything, B anchor, tags and verified quotes, C nothing), fitted to the block's budget.

In the prompt a quote is only her words (``- 「…」``), a ``## 我·性格`` line the words and who
says them (``- 「…」——赫默``): the source id goes to the block's sources, not to the model
(``line_ids``, ``meta.voice_ids``, ``meta.archive_ids``); a generated anchor is what a
conversation needs of it (:func:`arklore.profiles.archive.chat_anchor`: lab figures, 战斗经验
and 身高 stay in the profile and a card's lore, the infection status is one word), and a
``## 我·性格`` line the anchor tells already is left out; the script's player placeholder is
rendered (:func:`arklore.core.text.render_nickname`). ``## 我·关于博士`` is left to the doctor block
(:mod:`arklore.chat.blocks.doctor`), ``## 说话方式`` to the speech block
(:mod:`arklore.chat.blocks.speech`), and the quotes the doctor block injects (its claims) too:
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
from arklore.profiles.archive import chat_anchor
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PERSONALITY,
    QUOTES,
    SPEECH,
    TIER_A,
    TIER_B,
    TIER_C,
    UsableSection,
)
from arklore.profiles.persona import Persona
from arklore.profiles.quotes import parse_quote_line
from arklore.profiles.temperament import traits
from arklore.profiles.userdir import FileCheck

NAME = PERSONA
AFTER = (DOCTOR,)  # the quotes the doctor block injects are left out here


ELSEWHERE: tuple[str, ...] = (ABOUT_DOCTOR, SPEECH)
"""Her profile's sections other blocks inject (the doctor block, the speech block)."""


def build(ctx: TurnContext) -> Block:
    """A steady turn (:mod:`arklore.chat.layout`) gets her archive whole whatever the message:
    the block opens every prompt of the chat, so it must not change with small talk."""
    brief = ctx.small_talk and not ctx.steady
    got = block(ctx.layers, ctx.persona, skip_quotes=ctx.claims.quotes, brief=brief)
    if ctx.persona_held:  # lines of her profile from after the story point
        got.meta["held_back"] = ctx.persona_held
    return got


def block(
    layers: Layers,
    persona: Persona,
    budget: int | None = None,
    skip_quotes: Iterable[str] = (),
    brief: bool = False,
) -> Block:
    """Her persona block, kept per persona, budget, ``skip_quotes`` (the source ids of quotes
    another block of the turn injects already) and ``brief`` (small talk: her archive
    paragraphs by their openings); ``## 我·关于博士`` is the doctor block's, ``## 说话方式`` the
    speech block's."""
    budget = budget or layers.budgets.persona
    skip = frozenset(skip_quotes)
    key = (persona.char_id, budget, skip, brief)
    hit = layers.personas.get(key, persona)
    if hit is not None:
        return hit
    made = persona_block(
        persona, budget=budget, counter=layers.counter, nickname=layers.nickname,
        leave_out=ELSEWHERE, skip_quotes=skip, brief=brief,
    )  # fmt: skip
    return layers.personas.put(key, persona, made)


def _section_lines(
    sec: UsableSection,
    nickname: str,
    skip: Collection[str] = (),
    *,
    generated: bool = False,
    told: str = "",
    brief: bool = False,
    keep: Collection[str] = (),
) -> list[tuple[str, str | None]]:
    """The lines a chat sees of a section, each with its quote's source id (None: not a
    quote); quotes citing ``skip`` are left out. A generated (A/B) anchor as a conversation
    needs it (:func:`~arklore.profiles.archive.chat_anchor`: no lab figures, 战斗经验 nor
    身高, the infection status in one word; ``brief``: its 档案资料 paragraphs by their
    openings, but the sections in ``keep``, which tell what she is like); a ``## 我·性格``
    quote line as the traits it names, stated when her archive says them
    (:func:`~arklore.profiles.temperament.traits`: 乐天、慷慨：), then its words and
    who says them (:meth:`~arklore.profiles.quotes.Quote.said_by`), unless ``told`` (the
    anchor as injected) says it already."""
    if sec.title == ANCHOR and generated:
        shown = chat_anchor(sec.text, brief=brief, keep=keep).split("\n")
        return [(render_nickname(ln, nickname), None) for ln in shown]
    if sec.title not in (QUOTES, PERSONALITY):
        return [(render_nickname(ln, nickname), None) for ln in sec.text.split("\n")]
    out: list[tuple[str, str | None]] = []
    for ln in sec.text.split("\n"):
        q = parse_quote_line(ln)
        if q is None:
            out.append((render_nickname(ln, nickname), None))
        elif q.source_id in skip:
            continue
        elif sec.title == QUOTES:
            out.append((f"- 「{render_nickname(q.text, nickname)}」", q.source_id))
        elif "".join(q.text.split()) not in told:  # the traits stated, then who says so
            # only the archive's narrator states a trait; a line of the story may deny it or
            # say it of somebody else (莫斯提马: 你有那么一点点严肃我都会觉得你生病了)
            named = "、".join(traits(q.text)) if q.source_id.startswith("archive:") else ""
            said = render_nickname(q.said_by(), nickname)
            out.append((f"- {named}：{said}" if named else f"- {said}", q.source_id))
    return out


def personality_lines(
    persona: Persona, nickname: str = "博士", *, even_if_told: bool = False
) -> list[str]:
    """Her ``## 我·性格`` as a chat shows it (the traits her archive states, the words and who
    says them, no source id; a line the anchor as injected tells already left out, unless
    ``even_if_told``): for a card's ``personality``, so a card and a chat render the section
    one way."""
    sec = next((s for s in persona.sections if s.title == PERSONALITY), None)
    if sec is None or persona.tier == TIER_C:
        return []
    generated = persona.tier in (TIER_A, TIER_B)
    keep = _told_of_her(persona)
    told = "" if even_if_told else _anchor_told(persona, nickname, generated=generated, keep=keep)
    lines = _section_lines(sec, nickname, generated=generated, told=told, keep=keep)
    return [ln for ln, _ in lines if ln.strip()]


def _anchor_told(
    persona: Persona,
    nickname: str,
    *,
    generated: bool,
    brief: bool = False,
    keep: Collection[str] = (),
) -> str:
    """Her anchor as injected, without spaces: a ``## 我·性格`` line it tells is left out."""
    return "".join(
        "".join(ln.split())
        for sec in persona.sections
        if sec.title == ANCHOR
        for ln, _ in _section_lines(sec, nickname, generated=generated, brief=brief, keep=keep)
    )


def _told_of_her(persona: Persona) -> frozenset[str]:
    """The archive sections her ``## 我·性格`` quotes (``archive:<entry>/<section>``): the
    paragraphs that tell what she is like, which small talk keeps whole."""
    return frozenset(
        q.source_id.rsplit("/", 1)[-1]
        for sec in persona.sections
        if sec.title == PERSONALITY
        for ln in sec.text.split("\n")
        if (q := parse_quote_line(ln)) is not None and q.source_id.startswith("archive:")
    )


def persona_block(
    persona: Persona,
    *,
    budget: int,
    counter: TokenCounter = count_tokens,
    nickname: str = "博士",
    leave_out: Collection[str] = (),
    skip_quotes: Collection[str] = (),
    brief: bool = False,
) -> Block:
    """The persona block of ``persona`` (the sections her tier allows, but ``leave_out``:
    sections another block injects, and quotes citing ``skip_quotes``: lines another block
    injects) within ``budget``; ``brief``: small talk, her archive paragraphs by their
    openings (:func:`~arklore.profiles.archive.chat_anchor`)."""
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
    generated = persona.tier in (TIER_A, TIER_B)
    keep = _told_of_her(persona)
    told = _anchor_told(persona, nickname, generated=generated, brief=brief, keep=keep)
    sections = [
        (
            sec.title,
            _section_lines(
                sec, nickname, skip_quotes, generated=generated, told=told, brief=brief, keep=keep
            ),
        )
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
    archive = [s.removeprefix("archive:") for s in sources if s.startswith("archive:")]
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
        meta={
            **meta,
            "voice_ids": voice,
            "archive_ids": archive,
            "profile_sources": list(persona.sources),
        },
    )


def _counted(labels: list[str]) -> list[str]:
    out: dict[str, int] = {}
    for x in labels:
        out[x] = out.get(x, 0) + 1
    return [f"{k} x{v}" if v > 1 else k for k, v in out.items()]


def chars_check(layers: Layers, checks: list[FileCheck]) -> list[FileCheck]:
    """``arklore chars check``: the profiles layer's check of the user's ``.char`` files, with
    the sections the persona block injects within its budget (the doctor's and the speech
    sections go to blocks of their own)."""
    for c in checks:
        if c.persona is not None and c.persona.sections:
            got = block(layers, c.persona)
            c.injected = [it["title"] for it in got.items]
            c.left_out = got.reason
    return checks
