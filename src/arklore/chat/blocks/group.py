"""The group block: in a group chat (two or more operators present), each present
operator's relations with the others, the strongest kept within the group budget.

The tier-C decision holds here as in the relations block: a chat with an operator who has no
profile gets none of the group's relations (unless the user opted in), and the view of any
other present operator with no profile is left out (``persona.relation_context``).
"""

from __future__ import annotations

from arklore.chat.context import TurnContext
from arklore.chat.turn import Speaker
from arklore.core.blocks import GROUP, Block, empty_block, fit_lines, fitted_block, stage_of, unique
from arklore.core.errors import ArkloreError
from arklore.profiles.persona import OPT_IN_VAR
from arklore.rag.context import Relation, known_at

NAME = GROUP
AFTER: tuple[str, ...] = ()

HEADER = "【在场者之间的关系】"


def build(ctx: TurnContext) -> Block:
    layers, people = ctx.layers, ctx.present
    budget = layers.budgets.group
    if len(people) < 2:
        return empty_block(GROUP, budget, "not a group chat (fewer than two operators)")
    if not ctx.relations_allowed:
        return empty_block(
            GROUP, budget,
            f"no profile for {ctx.speaker.name} (tier C): no relations of the people present "
            f"either (the design's rule; {OPT_IN_VAR}=1 opts in)",
        )  # fmt: skip
    views = [p for p in people if p is ctx.speaker or _allowed(ctx, p)]
    rows: list[tuple[Speaker, Relation]] = []
    try:
        rag = layers.rag.service()
        for p in views:
            if p.node_id is None:
                continue
            others = [q.node_id for q in people if q.node_id and q.node_id != p.node_id]
            rows += [(p, r) for r in rag.get_all_relationships_for(p.node_id, others)]
    except ArkloreError as exc:
        return empty_block(GROUP, budget, exc.one_line())
    known = [(p, k) for p, r in rows if (k := known_at(r, ctx.knows_lines)) is not None]
    held, rows = len(rows) - len(known), known  # relations a story point does not know yet
    if not rows:
        return empty_block(GROUP, budget, "no relations between the operators present")
    lines = [
        f"- {p.name}→{layers.names.named(r.target_id, r.target_name)}：{layers.shown(r.text)}"
        for p, r in rows
    ]

    def weakest(kept: list[int]) -> int:
        return min(kept, key=lambda i: (rows[i][1].strength, -i))

    text, kept = fit_lines(HEADER, lines, budget, layers.counter, drop_order=weakest)
    kept_rows = [rows[i] for i in kept]
    line_ids = unique(lid for _, r in kept_rows for lid in r.evidence_line_ids)
    meta: dict[str, object] = {"present": [p.char_id for p in people]}
    left_out = [p.char_id for p in people if p not in views]
    if left_out:
        meta["no_profile"] = left_out  # present with no profile: their views are not used
    if held:
        meta["held_back"] = held
    return fitted_block(
        GROUP,
        text,
        budget,
        layers.counter,
        noun="relation",
        total=len(rows),
        kept=len(kept),
        line_ids=line_ids,
        stages=layers.stage_refs(stage_of(x) for x in line_ids),
        items=[{"from_id": p.char_id, "from_name": p.name, **r.to_dict()} for p, r in kept_rows],
        meta=meta,
    )


def _allowed(ctx: TurnContext, p: Speaker) -> bool:
    """May a chat use ``p``'s relations? Her persona's tier decision, as for the speaker."""
    return ctx.layers.profiles.persona(p.char_id).relation_context
