"""The exemplars block: a few scenes of her own story lines that fit the message, verbatim, as
a short script (how she talks). The rag layer picks them (:meth:`RagFacade.exemplars`),
preferring the people the message names, the others present and the Doctor; the weakest
scenes are left out whole to fit the budget. Last in the prompt, nearest the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arklore.chat.context import Layers, TurnContext
from arklore.chat.turn import Speaker
from arklore.core.blocks import (
    EXEMPLARS,
    Block,
    StageRef,
    empty_block,
    fit_lines,
    fitted_block,
    unique,
)
from arklore.core.errors import ArkloreError
from arklore.core.model import DOCTOR as DOCTOR_NAME
from arklore.rag.exemplars import Scene

NAME = EXEMPLARS
AFTER: tuple[str, ...] = ()


def build(ctx: TurnContext) -> Block:
    got = block(ctx.layers, ctx.speaker, ctx.message, ctx.with_them, ctx.knows)
    if ctx.story is not None:  # her scenes' stages after the story point
        held = sum(1 for s in ctx.layers.rag.scene_stages(ctx.speaker.family) if not ctx.knows(s))
        if held:
            got.meta["held_back"] = held
    return got


def block(
    layers: Layers,
    sp: Speaker,
    message: str,
    named: Sequence[str] = (),
    knows: Callable[[str], bool] | None = None,
) -> Block:
    """Her scenes for ``message`` (``named``: graph nodes to prefer; ``knows``: the stages a
    chat set at a story point knows) within the budget."""
    budget = layers.budgets.exemplars
    try:
        scenes = layers.rag.exemplars(
            sp.family, message, named, layers.budgets.exemplars_k, knows=knows
        )
        if not scenes:
            if not layers.rag.exemplars_built():
                why = "her scenes were never indexed (run `arklore build`)"
            else:
                why = f"{sp.name} speaks in no story stage"
            return empty_block(EXEMPLARS, budget, why)
    except ArkloreError as exc:
        return empty_block(EXEMPLARS, budget, exc.one_line())
    refs = {r.path: r for r in layers.stage_refs(s.stage_path for s in scenes)}
    parts = [scene_text(layers, refs[s.stage_path], s) for s in scenes]

    def weakest(kept: list[int]) -> int:
        return max(kept)  # scenes come best first

    header = _header(layers, sp, scenes)
    text, kept = fit_lines(header, parts, budget, layers.counter, drop_order=weakest)
    picked = [scenes[i] for i in kept]
    # no longer than ``header``, so it still fits; the same when no scene was left out
    shown = header if len(picked) == len(scenes) else _header(layers, sp, picked)
    if text and shown != header:
        text = "\n".join([shown, *(parts[i] for i in kept)])
    return fitted_block(
        EXEMPLARS,
        text,
        budget,
        layers.counter,
        noun="scene",
        total=len(scenes),
        kept=len(kept),
        line_ids=unique(x for s in picked for x in s.line_ids),
        stages=[refs[s.stage_path] for s in picked],
        items=[s.to_dict() | {"stage": refs[s.stage_path].to_dict()} for s in picked],
        meta={"scenes": len(picked), "named": list(named)},
    )


def scene_text(layers: Layers, ref: StageRef, scene: Scene) -> str:
    """One scene as a short script under its stage label: ``名字：台词``, narration in
    （）, the Doctor's choices as 博士：…; the player's placeholder rendered."""
    out = [f"〔{ref.heading()}〕"]
    for ln in scene.lines:
        said = layers.shown(ln.shown())
        if ln.kind == "choice":
            out.append(f"{DOCTOR_NAME}：{said}")
        elif ln.speaker:
            out.append(f"{layers.label(ln.speaker)}：{said}")
        else:
            out.append(f"（{said}）")
    return "\n".join(out)


def _header(layers: Layers, sp: Speaker, scenes: Sequence[Scene]) -> str:
    """The heading; it names the other labels her lines carry in these scenes (恩希欧迪斯 for
    银灰, 玛嘉烈 for 临光), so a model knows those lines are hers, and who the others are
    where a label or a name in a line does not say it (恩雅即初雪)."""
    lines = [ln for s in scenes for ln in s.lines]
    aka = unique(
        ln.speaker
        for ln in lines
        if ln.hers and ln.speaker != sp.name and not ln.speaker.startswith("$")
    )  # an avatar id is shown as her name (Layers.label), never as another of hers
    also = f"；剧情里也写作{'、'.join(aka)}" if aka else ""
    others = layers.names.glossary(
        [ln.speaker for ln in lines if ln.speaker and not ln.hers],
        [ln.text for ln in lines],
        skip=sp.family,
    )
    known = "、".join(f"{a}即{b}" for a, b in others if not a.startswith("$"))
    return f"【{sp.name}在剧情里说过的话（原文{also}{'；' + known if known else ''}）】"
