"""The doctor block: how she stands with the Doctor, every turn.

The chat is always with the Doctor, so her view of the Doctor is not one relation among her
others competing for a slot: every turn gets it, in its own block (``ARKLORE_DOCTOR_TOKEN_BUDGET``).
It is made of

* her profile's ``## 我·关于博士`` as her tier allows it (the profiles layer decides:
  S/A everything, B only her verified lines to the Doctor, C nothing), each quote line given
  to the model as her words only (``- 「…」``), its source id in the block's sources;
* her relation to the Doctor (graph node ``npc:博士``) when the relation index has a document
  for it (curated, extracted, described or evidence-built), when her persona allows her
  relations (the tier-C decision, ``persona.relation_context``). An evidence-built one (one exchange, how she calls him) is left out when
  her own lines to the Doctor are there: they say more, in her words.

The script's player placeholder is rendered (:func:`arklore.core.text.render_nickname`).
Over budget, lines are dropped in this order: her voice lines that are not trust-unlocked
(earliest first), the relation text, her story lines (earliest first), her trust lines
(lowest trust first), then any other text of the section.

It claims what it injects (:class:`~arklore.chat.context.Claims`): the Doctor, when her
relation to him is in, and the source ids of her lines it quotes, so the relations and
persona blocks leave them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arklore.chat.context import Claims, Layers, TurnContext
from arklore.chat.turn import Speaker
from arklore.core.blocks import DOCTOR, Block, empty_block, fit_reason, unique
from arklore.core.errors import ArkloreError
from arklore.core.text import render_nickname
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.graph.model import DOCTOR_ID
from arklore.profiles.charfile import ABOUT_DOCTOR, TIER_C
from arklore.profiles.doctor import trust_of
from arklore.profiles.persona import OPT_IN_VAR, Persona
from arklore.profiles.quotes import parse_quote_line
from arklore.rag.context import Relation, known_at

NAME = DOCTOR
AFTER: tuple[str, ...] = ()


def build(ctx: TurnContext) -> Block:
    layers, persona = ctx.layers, ctx.persona
    rel = doctor_relation(layers, ctx.speaker) if persona.relation_context else None
    if rel is not None:
        rel = known_at(rel, ctx.knows_lines)  # as the story point knows it, or not yet
    return doctor_block(
        persona, rel, budget=layers.budgets.doctor, nickname=layers.nickname,
        counter=layers.counter, claims=ctx.claims,
    )  # fmt: skip


def block(
    layers: Layers,
    sp: Speaker,
    persona: Persona,
    budget: int | None = None,
    claims: Claims | None = None,
) -> Block:
    """Her view of the Doctor within ``budget`` (default: the doctor budget); what it
    injects goes to ``claims``."""
    return doctor_block(
        persona, doctor_relation(layers, sp) if persona.relation_context else None,
        budget=budget or layers.budgets.doctor, nickname=layers.nickname,
        counter=layers.counter, claims=claims,
    )  # fmt: skip


def doctor_relation(layers: Layers, sp: Speaker) -> Relation | None:
    """Her relation to the Doctor as the relation index describes it (the document that
    speaks for the pair); None without a graph node, an index or such a document."""
    if sp.node_id is None:
        return None
    try:
        rels = layers.rag.service().get_all_relationships_for(sp.node_id, [DOCTOR_ID], weak=False)
    except ArkloreError:
        return None
    return next((r for r in rels if r.doc_id is not None), None)


def lines_header(name: str) -> str:
    """The line above her quotes: her name, never a pronoun (84 operators are men; the
    archive's 性别 is missing for newer ones); "or of the Doctor", because a story line
    may speak of the Doctor to someone else (:mod:`arklore.profiles.doctor`)."""
    return f"{name}说给博士或说起博士的原话："


_THIN = ("evidence", "template")
"""Relation texts a rule built from one exchange or a template, not a view of him."""

# drop order: lower first
_VOICE, _RELATION, _STORY, _TRUST, _TEXT = range(5)


@dataclass(frozen=True, slots=True)
class _Line:
    text: str  # as the model sees it
    rank: int  # drop order
    source_id: str | None = None  # a quote's source id
    trust: int = 0
    shown: str = ""  # the quote as the model reads it (placeholder rendered), for items


def section_lines(persona: Persona, nickname: str) -> list[_Line]:
    """Her ``## 我·关于博士`` as the block's lines (what her tier allows), quotes as her words."""
    sec = next((s for s in persona.sections if s.title == ABOUT_DOCTOR), None)
    if sec is None:
        return []
    out: list[_Line] = []
    for ln in sec.text.split("\n"):
        if not ln.strip():
            continue
        q = parse_quote_line(ln)
        if q is None:
            out.append(_Line(render_nickname(ln, nickname), _TEXT))
            continue
        trust = trust_of(q)
        rank = _STORY if q.kind == "story" else (_TRUST if trust is not None else _VOICE)
        shown = render_nickname(q.text, nickname)
        out.append(_Line(f"- 「{shown}」", rank, q.source_id, trust or 0, shown))
    return out


def doctor_block(
    persona: Persona,
    relation: Relation | None,
    *,
    budget: int,
    nickname: str = "博士",
    counter: TokenCounter = count_tokens,
    claims: Claims | None = None,
) -> Block:
    """Her view of the Doctor (see the module docstring) within ``budget`` tokens;
    ``relation``: her relation to the Doctor from the index (None: none), used only when her
    persona allows her relations (its tier decision); what it injects goes to ``claims``."""
    name = persona.name
    meta: dict[str, Any] = {"tier": persona.tier}
    if persona.profile_of:
        meta["profile_of"] = persona.profile_of
    if not persona.relation_context:
        return empty_block(
            DOCTOR, budget,
            f"no profile for {name} (tier C): no view of the Doctor either "
            f"({OPT_IN_VAR}=1 opts in to her relation to the Doctor)",
            **meta,
        )  # fmt: skip
    lines = section_lines(persona, nickname)
    rows = [x for x in lines if not x.source_id] + [x for x in lines if x.source_id]
    if relation is not None and relation.generated_by in _THIN and any(x.source_id for x in rows):
        relation = None  # her own lines to him say more than one exchange of theirs
    if relation is not None:
        rows.insert(0, _Line(f"- {render_nickname(relation.text, nickname)}", _RELATION))
    if not rows:
        return empty_block(DOCTOR, budget, _why_empty(persona), **meta)
    header = f"【{name}眼中的博士】"

    def render(kept: list[int]) -> str:
        parts = [header]
        first_quote = next((i for i in kept if rows[i].source_id), None)
        for i in kept:
            if i == first_quote:
                parts.append(lines_header(name))
            parts.append(rows[i].text)
        return "\n".join(parts)

    kept = list(range(len(rows)))
    text = ""
    while kept:
        text = render(kept)
        if counter(text) <= budget:
            break
        kept.remove(min(kept, key=lambda i: (rows[i].rank, rows[i].trust, i)))
        text = ""
    if not text:
        return empty_block(DOCTOR, budget, fit_reason(DOCTOR, "line", len(rows), 0, budget), **meta)
    kept_rows = [rows[i] for i in kept]
    sources = [x.source_id for x in kept_rows if x.source_id]
    has_relation = any(x.rank == _RELATION for x in kept_rows)
    line_ids = [s.removeprefix("story:") for s in sources if s.startswith("story:")]
    if has_relation and relation is not None:
        line_ids += relation.evidence_line_ids
    items: list[dict[str, Any]] = []
    if has_relation and relation is not None:
        rel = relation.to_dict() | {"text": render_nickname(relation.text, nickname)}
        items.append({"kind": "relation", **rel})
    items += [
        {"kind": "line", "source_id": x.source_id, "text": x.shown, "trust": x.trust or None}
        for x in kept_rows
        if x.source_id
    ]
    meta |= {
        "voice_ids": [s.removeprefix("voice:") for s in sources if s.startswith("voice:")],
        "relation": relation.source if has_relation and relation is not None else None,
    }
    if claims is not None:
        claims.quotes += sources
        if meta["relation"]:  # each person once: her view of him is here
            claims.people.append(DOCTOR_ID)
    return Block(
        DOCTOR,
        text,
        counter(text),
        budget,
        fit_reason(DOCTOR, "line", len(rows), len(kept_rows), budget),
        line_ids=unique(line_ids),
        files=[persona.path] if persona.path else [],
        items=items,
        meta=meta,
    )


def _why_empty(persona: Persona) -> str:
    name = persona.name
    excluded = [why for title, why in persona.excluded if title == ABOUT_DOCTOR]
    if persona.tier == TIER_C:
        what = f"no profile for {name} (tier C)"
    elif excluded:
        what = f"the ## {ABOUT_DOCTOR} of {name}'s profile is not usable at tier {persona.tier} ({excluded[0]})"
    else:
        what = f"the profile of {name} has no ## {ABOUT_DOCTOR}"
    return f"{what}, and no relation of {name} to the Doctor in the relation index"
