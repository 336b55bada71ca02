"""The now block: where she stands now, from the game's summaries of her latest stages and of
her own records (:meth:`arklore.events.facade.EventsFacade.standing`), every turn.

Her archive was written long before the latest story (塞雷娅 is 前防卫科主任 there, and 总辖
in her record 《沃土》), so the block says that what follows is later and wins where they
differ. Each entry names its stage. Over budget, a sentence of place goes first, then the
latest, then her record; one that says she took an office goes last.
"""

from __future__ import annotations

from arklore.chat.context import TurnContext
from arklore.core.blocks import NOW, Block, empty_block, fit_lines, fitted_block
from arklore.core.errors import ArkloreError
from arklore.events.standing import LATEST, OFFICE_TAKEN, PLACE, Standing

NAME = NOW
AFTER: tuple[str, ...] = ()

KEEP_ORDER = {PLACE: 0, LATEST: 1, OFFICE_TAKEN: 2}
"""Which entry is left out first to fit (lowest first; her record before the latest)."""
RECORD = "她的干员密录"


def build(ctx: TurnContext) -> Block:
    layers, sp = ctx.layers, ctx.speaker
    budget = layers.budgets.now
    try:
        items = layers.events.standing(sp.char_id, ctx.knows if ctx.story is not None else None)
    except ArkloreError as exc:
        return empty_block(NOW, budget, exc.one_line())
    if not items:
        return empty_block(NOW, budget, f"no summary of a story stage of {sp.name} names her")
    header = heading(sp.name)
    lines = [layers.shown(standing_line(it)) for it in items]

    def weakest(kept: list[int]) -> int:
        return min(kept, key=lambda i: (_rank(items[i]), -i))

    text, kept = fit_lines(header, lines, budget, layers.counter, drop_order=weakest)
    picked = [items[i] for i in kept]
    return fitted_block(
        NOW,
        text,
        budget,
        layers.counter,
        noun="entry",
        total=len(items),
        kept=len(kept),
        stages=[it.ref for it in picked],
        items=[it.to_dict() for it in picked],
    )


def heading(name: str) -> str:
    """The block's heading: her latest summaries are newer than her archive and win."""
    return f"【{name}的近况（剧情概要，新于档案资料，有出入时以此为准）】"


def standing_line(it: Standing) -> str:
    """One entry as the block (and a card's scenario) shows it: its stage, then the sentence."""
    where = it.ref.heading() + (f"（{RECORD}）" if it.own_record else "")
    return f"- {where}：{it.text}"


def _rank(it: Standing) -> tuple[int, int]:
    return (KEEP_ORDER.get(it.why, 0), 1 if it.own_record else 0)
