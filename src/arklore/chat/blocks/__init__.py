"""The blocks of a turn's system prompt, one module each, in the order a prompt shows them.

Every block module has the same shape:

* ``NAME`` -- the block's name (:mod:`arklore.core.blocks`);
* ``AFTER`` -- the blocks whose claims it reads (:class:`~arklore.chat.context.Claims`), built
  before it whatever their place in the prompt;
* ``build(ctx: TurnContext) -> Block`` -- the block for one turn, empty with its reason when
  there is nothing to inject.

:meth:`arklore.chat.facade.ChatFacade.turn` builds them in :func:`build_order` and joins them
in :data:`BLOCK_ORDER`. A new block is one new module and one line in :data:`BLOCK_ORDER`.
"""

from __future__ import annotations

from typing import Protocol

from arklore.chat.blocks import (
    doctor,
    exemplars,
    group,
    memories,
    now,
    persona,
    relations,
    speech,
)
from arklore.chat.context import TurnContext
from arklore.core.blocks import Block


class BlockModule(Protocol):
    """What :meth:`ChatFacade.turn` needs of a block module (see the module docstring)."""

    @property
    def NAME(self) -> str: ...  # noqa: N802 - a module's constant

    @property
    def AFTER(self) -> tuple[str, ...]: ...  # noqa: N802 - a module's constant

    def build(self, ctx: TurnContext, /) -> Block: ...


BLOCK_ORDER: tuple[BlockModule, ...] = (
    persona,
    speech,
    now,
    doctor,
    relations,
    memories,
    group,
    exemplars,
)
"""The order blocks appear in a system prompt: who she is and how she speaks, where she stands
now, how she stands with the Doctor (the chat is with the Doctor), her people, what she lived
through, who is present, and last, nearest the conversation, examples of how she talks."""

BLOCK_NAMES: tuple[str, ...] = tuple(m.NAME for m in BLOCK_ORDER)


def build_order(blocks: tuple[BlockModule, ...] = BLOCK_ORDER) -> list[BlockModule]:
    """``blocks`` in prompt order, except that a block comes after the blocks of its
    ``AFTER`` (the persona block after the doctor block, whose quotes it leaves out)."""
    by_name = {m.NAME: m for m in blocks}
    out: list[BlockModule] = []
    visiting: set[str] = set()

    def visit(m: BlockModule) -> None:
        if m in out:
            return
        if m.NAME in visiting:
            raise ValueError(f"blocks wait for each other: {sorted(visiting)}")
        visiting.add(m.NAME)
        for name in m.AFTER:
            visit(by_name[name])
        visiting.discard(m.NAME)
        out.append(m)

    for m in blocks:
        visit(m)
    return out


__all__ = ["BLOCK_NAMES", "BLOCK_ORDER", "BlockModule", "build_order"]
