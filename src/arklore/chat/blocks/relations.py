"""The relations block: her strongest relations (anchors) and her view of the people the
message names (contextual), from the relation index (:meth:`RagFacade.context`).

Each person once: the people the app's other memory already recalled (``l3_targets``), the
others present in a group chat (the group block's) and the people an earlier block claimed
(the Doctor, when the doctor block has her relation to him) are left out. With no profile
(tier C) a chat gets no relation context either, unless the user opted in: her persona's
tier decision (``persona.relation_context``); the context is then empty with the reason as a
warning. :func:`relation_context` is also what ``arklore context`` and the HTTP route give.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from arklore.chat.context import Layers, TurnContext
from arklore.chat.turn import Speaker
from arklore.core.blocks import DOCTOR, RELATIONS, Block, empty_block, stage_of, unique
from arklore.core.errors import ArkloreError, UnknownNameError
from arklore.core.text import check_message
from arklore.graph.model import DOCTOR_ID
from arklore.graph.named import Span
from arklore.profiles.persona import OPT_IN_VAR, Persona
from arklore.rag.context import RelationContext

NAME = RELATIONS
AFTER = (DOCTOR,)  # the Doctor is the doctor block's when it has her relation to him


def build(ctx: TurnContext) -> Block:
    sp, layers = ctx.speaker, ctx.layers
    exclude = [
        *ctx.l3_targets,
        *(p.node_id or p.char_id for p in ctx.others),
        *ctx.claims.people,
    ]
    budget = layers.budgets.relations
    knows = ctx.knows_lines if ctx.story is not None else None
    try:
        rc = relation_context(layers, sp, ctx.persona, ctx.message, exclude, spans=list(ctx.spans),
                              knows_lines=knows)  # fmt: skip
    except ArkloreError as exc:
        return empty_block(RELATIONS, budget, exc.one_line())
    if not rc.text and rc.warnings and not rc.anchors:
        block = empty_block(RELATIONS, budget, rc.warnings[0])
    else:
        block = render(layers, sp, rc, excluded=bool(exclude))
    block.meta.update(named_recall(ctx.named, exclude, block.items))
    if rc.held_back:
        block.meta["held_back"] = rc.held_back
    return block


def named_recall(
    named: Iterable[str], exclude: Iterable[str], items: Iterable[dict[str, object]]
) -> dict[str, list[str]]:
    """The people the message names that this block answers for (not the Doctor, not one
    present or already told by another block), and those of them it gave her view of: the
    recall the service's metrics count (``arklore_named_people_*``)."""
    left_out = {*exclude, DOCTOR_ID}
    wanted = [n for n in named if n not in left_out]
    got = {str(it.get("target_id")) for it in items}
    return {"named": wanted, "named_related": [n for n in wanted if n in got]}


def relation_context(
    layers: Layers,
    sp: Speaker,
    persona: Persona,
    message: str,
    exclude: Iterable[str] = (),
    budget: int | None = None,
    spans: list[Span] | None = None,
    knows_lines: Callable[[list[str]], bool] | None = None,
) -> RelationContext:
    """Her relation context for ``message``: anchors plus her view of the people it names
    (``spans``: :meth:`GraphFacade.named_spans`, found here when not given), under her
    persona's tier decision (see the module docstring)."""
    budget = budget or layers.budgets.relations
    check_message(message, layers.max_message_chars)
    layers.graph.current()  # no graph built: that is the first thing to fix (one-line error)
    if not persona.relation_context:
        return RelationContext(
            "", [], [], 0, budget,
            warnings=[f"no profile for {sp.name} (tier C): no relation context either "
                      f"(the design's rule; {OPT_IN_VAR}=1 opts in)"],
        )  # fmt: skip
    if sp.node_id is None:
        raise UnknownNameError(f"{sp.name} ({sp.char_id}) is not in the relation graph")
    if spans is None:
        spans = layers.graph.named_spans(sp.char_id, message)
    # the player's name rendered before the block is fitted: a long nickname needs room
    return layers.rag.context(
        sp.node_id, message, exclude, budget=budget, spans=spans,
        prefer=layers.names.form_stages(sp.char_id), name=sp.name, shown=layers.shown,
        knows_lines=knows_lines,
    )  # fmt: skip


def render(layers: Layers, sp: Speaker, ctx: RelationContext, *, excluded: bool = False) -> Block:
    """A relation context as the relations block, with why it is empty when it is."""
    rels = [("anchor", r) for r in ctx.anchors] + [("contextual", r) for r in ctx.contextual]
    reason = ""
    if not ctx.text:
        graph = layers.graph.current()
        if not graph.get_top_anchor_relations(sp.node_id or sp.char_id, 1):
            reason = f"{sp.name} has no relations in the graph"
        elif excluded:
            reason = (
                "every relation was left out: already recalled (l3_targets), present "
                "in the group, or the Doctor (the doctor block's)"
            )
        else:
            reason = f"no relation fits the budget of {ctx.budget} tokens"
    line_ids = unique(lid for _, r in rels for lid in r.evidence_line_ids)
    return Block(
        RELATIONS,
        ctx.text,
        ctx.tokens,
        ctx.budget,
        reason,
        line_ids=line_ids,
        stages=layers.stage_refs(stage_of(x) for x in line_ids),
        items=[{"kind": kind, **r.to_dict()} for kind, r in rels],
        meta={
            "anchors": len(ctx.anchors),
            "contextual": len(ctx.contextual),
            "embedded": ctx.embedded,
            "timings_ms": ctx.timings_ms,
            "warnings": list(ctx.warnings),
        },
    )
