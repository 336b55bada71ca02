"""The memories block: what she lived through that fits the message, each entry citing its
stage. The events layer decides which and in what order
(:meth:`~arklore.events.facade.EventsFacade.memories`): her extracted first-person memories,
or, until story events are extracted, her appearances (the stages she is in), each with the
game's summary and her own lines there. Here they are rendered within the memories budget:
over it, fewer of her lines per appearance before fewer appearances, the lowest-ranked entry
first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from arklore.chat.context import Layers, TurnContext
from arklore.chat.turn import Speaker
from arklore.core.blocks import MEMORIES, Block, empty_block, fit_lines, fitted_block, unique
from arklore.core.errors import ArkloreError
from arklore.core.text import one_line
from arklore.events.memories import Memories, MemoryItem, about_her, summary_shown

NAME = MEMORIES
AFTER: tuple[str, ...] = ()

SUMMARY_CHARS = 60
"""Characters of the official summary shown per appearance in the memories block."""

NO_EVENTS = "no story events extracted yet: her appearances (stages she is in) stand in"

NAME_ONLY = "  （这一段里没有本人的台词，只是被人叫到名字）"
"""Under an appearance where she has no line (:func:`appearance_text`)."""
NOT_IN_SUMMARY = "（概要未提到{name}）"
"""After a stage summary that names none of her names (:func:`appearance_text`): it tells
another thread of the stage (15% of the entries shown over 80 real operators, once a summary
naming her ranks a stage higher: :data:`arklore.events.memories.W_ABOUT`)."""


def build(ctx: TurnContext) -> Block:
    """Her memories for the message; the others present count as named (the scenes they
    share with her)."""
    knows = ctx.knows if ctx.story is not None else None
    return block(ctx.layers, ctx.speaker, ctx.message, named=ctx.with_them, knows=knows)


def block(
    layers: Layers,
    sp: Speaker,
    query: str,
    k: int | None = None,
    named: Sequence[str] | None = None,
    knows: Callable[[str], bool] | None = None,
) -> Block:
    """Her memories for ``query`` as the memories block (``named``: the people the query
    names, as graph nodes, when the caller already knows them; ``knows``: the stages a chat
    set at a story point knows)."""
    try:
        mem = layers.events.memories(
            sp.char_id, query or None, k or layers.budgets.memories_k, named=named, knows=knows
        )
    except ArkloreError as exc:
        return empty_block(MEMORIES, layers.budgets.memories, exc.one_line())
    got = render(layers, sp, mem)
    if mem.held_back:
        got.meta["held_back"] = mem.held_back
    return got


def render(layers: Layers, sp: Speaker, memories: Memories) -> Block:
    """``memories`` rendered within the memories budget, each item citing its stage."""
    budget = layers.budgets.memories
    kind = memories.kind
    if not memories.items:
        return empty_block(MEMORIES, budget, memories.reason or "no memories", kind=kind)
    if kind == "memories":
        items, text, kept = _fit_memories(layers, sp, memories.items)
    else:
        items, text, kept = _fit_appearances(layers, sp, memories.items, memories.story_order)
    picked = [items[i] for i in kept]
    meta: dict[str, Any] = {"kind": kind, "query": memories.query}
    if kind != "memories":
        meta["note"] = NO_EVENTS
    return fitted_block(
        MEMORIES,
        text,
        budget,
        layers.counter,
        noun="memory" if kind == "memories" else "appearance",
        total=len(items),
        kept=len(kept),
        line_ids=unique(x for m in picked for x in m.line_ids),
        stages=[m.ref for m in picked],
        items=[m.to_dict() for m in picked],
        meta=meta,
    )


Fitted = tuple[list[MemoryItem], str, list[int]]


def _weakest(items: Sequence[MemoryItem]) -> Callable[[list[int]], int]:
    """The drop order: the lowest-ranked entry (the latest without a query)."""

    def pick(kept: list[int]) -> int:
        return min(kept, key=lambda i: (items[i].score or 0.0, -i))

    return pick


def _fit_memories(layers: Layers, sp: Speaker, items: list[MemoryItem]) -> Fitted:
    header = f"【{sp.name}的记忆】"
    lines = [layers.shown(f"- 在{m.ref.label()}里：{one_line(m.text)}") for m in items]
    text, kept = fit_lines(
        header, lines, layers.budgets.memories, layers.counter, drop_order=_weakest(items)
    )
    return items, text, kept


def _fit_appearances(
    layers: Layers, sp: Speaker, items: list[MemoryItem], story_order: bool
) -> Fitted:
    """Fewer of her lines per appearance before fewer appearances; the heading says which
    order they are listed in."""
    header = f"【{sp.name}的出场记录（按{'剧情' if story_order else '发布'}顺序）】"
    hers = layers.names.known_as(sp.family)  # her display name among them
    best: Fitted | None = None
    for n in range(max(len(m.quotes) for m in items), -1, -1):
        shown = [_with_quotes(m, n) for m in items]
        lines = [appearance_text(layers, m, sp, hers) for m in shown]
        text, kept = fit_lines(
            header, lines, layers.budgets.memories, layers.counter, drop_order=_weakest(shown)
        )
        if best is None or len(kept) > len(best[2]):
            best = (shown, text, kept)
        if len(kept) == len(items):
            break
    assert best is not None  # items is not empty: the loop ran at least once
    return best


def appearance_text(layers: Layers, m: MemoryItem, sp: Speaker, hers: frozenset[str]) -> str:
    """An appearance: where, the game's summary, then her own lines there (verbatim), or
    that she has none there: a stage where she is only called by name (or talked about
    in a way that reads like it) must not read as one she took part in. A summary that
    names none of her names, outside her own records, says so (:data:`NOT_IN_SUMMARY`):
    it tells another thread of the stage, which a model must not take for what she did."""
    told: set[str] = set()
    quotes = [
        f"  {layers.label(q['speaker'], told)}：「{layers.shown(q['text'])}」" for q in m.quotes
    ]
    if m.kind == "appearance" and not m.spoken:
        quotes.append(NAME_ONLY)
    summary = summary_shown(m.summary or "", hers, SUMMARY_CHARS)  # the part it shows
    about = about_her(m.stage_path, summary, hers, sp.family)
    aside = NOT_IN_SUMMARY.format(name=sp.name) if summary and not about else ""
    head = layers.shown(_appearance_head(m, summary) + aside)
    return "\n".join([head, *quotes])


def _with_quotes(m: MemoryItem, n: int) -> MemoryItem:
    """The appearance with at most ``n`` of her lines (and only their ids among the quotes')."""
    if len(m.quotes) <= n:
        return m
    dropped = {q["line_id"] for q in m.quotes[n:]}
    return replace(m, quotes=m.quotes[:n], line_ids=[x for x in m.line_ids if x not in dropped])


def _appearance_head(m: MemoryItem, summary: str) -> str:
    """Where, and the game's ``summary`` of the stage as the entry shows it."""
    head = m.ref.heading()
    return f"- {head}" + (f"：{summary}" if summary else "")
