"""The chat layer as the workspace uses it: who a chat is with (the names layer's resolver plus
the app's manifest), and :meth:`ChatFacade.turn`, which builds one
:class:`~arklore.chat.context.TurnContext` and runs every block module of
:data:`arklore.chat.blocks.BLOCK_ORDER` over it (persona, doctor, relations, memories, group,
exemplars; each says in its module where its content comes from).

The other methods are thin delegates to the block modules, for the callers that want one
block (``arklore context``, the HTTP routes, the cards). The CLI, the HTTP service and the
Python API all call :meth:`ChatFacade.turn`. Every block renders the script's player
placeholder (``{@nickname}``) as the ``nickname`` setting: none reaches a prompt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arklore.chat.blocks import BLOCK_ORDER, build_order
from arklore.chat.blocks import doctor as doctor_blocks
from arklore.chat.blocks import exemplars as exemplar_blocks
from arklore.chat.blocks import memories as memory_blocks
from arklore.chat.blocks import persona as persona_blocks
from arklore.chat.blocks import relations as relation_blocks
from arklore.chat.context import Budgets, Layers, TurnContext, is_small_talk
from arklore.chat.manifest import Manifest, load_manifest
from arklore.chat.turn import Speaker, Turn, check_history, preamble
from arklore.core.blocks import Block
from arklore.core.blocks import ms_since as _ms
from arklore.core.errors import ArkloreError
from arklore.core.text import check_message
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.corpus.story import StoryView
from arklore.events.facade import EventsFacade
from arklore.events.memories import Memories
from arklore.graph.facade import GraphFacade
from arklore.graph.named import Span, named_ids
from arklore.names.facade import NamesFacade
from arklore.profiles.facade import ProfilesFacade
from arklore.profiles.userdir import FileCheck
from arklore.rag.context import RelationContext
from arklore.rag.facade import RagFacade
from arklore.settings import Settings


class ChatFacade:
    """Who a chat is with, and the turn over the block modules (see the module doc)."""

    def __init__(
        self,
        *,
        names: NamesFacade,
        graph: GraphFacade,
        rag: RagFacade,
        events: EventsFacade,
        profiles: ProfilesFacade,
        manifest_path: Path | None = None,
        budgets: Budgets | None = None,
        max_message_chars: int = 8000,
        nickname: str = "博士",
        counter: TokenCounter = count_tokens,
        warnings: Callable[[], list[str]] | None = None,  # every turn's (an unfinished build)
        story: Callable[[str], StoryView] | None = None,  # a story point -> what it knows
        until: str | None = None,  # the story point of a turn that names none
    ) -> None:
        self.layers = Layers(
            names=names,
            graph=graph,
            rag=rag,
            events=events,
            profiles=profiles,
            budgets=budgets or Budgets.from_settings(Settings()),  # the defaults
            nickname=nickname,
            max_message_chars=max_message_chars,
            counter=counter,
            story=story,
        )
        self.until = until
        self.names, self.graph, self.rag = names, graph, rag
        self.events, self.profiles = events, profiles
        self.manifest_path = manifest_path
        self.warnings = warnings or (lambda: [])
        self._manifest: Manifest | None = None

    @property
    def budgets(self) -> Budgets:
        return self.layers.budgets

    @property
    def counter(self) -> TokenCounter:
        return self.layers.counter

    def reload(self) -> None:
        self._manifest = None
        self.layers.personas.clear()

    # -- who ---------------------------------------------------------------------------------
    def manifest(self) -> Manifest | None:
        if self.manifest_path is None:
            return None
        if self._manifest is None:
            self._manifest = load_manifest(
                self.manifest_path, self.names.resolve, self.names.family
            )
        return self._manifest

    def speaker(self, name: str, *, check_manifest: bool = True) -> Speaker:
        """Any name the alias table knows (or an id) -> the operator; UnknownOperatorError with
        the closest names, AmbiguousNameError, or OperatorNotAvailableError (manifest)."""
        cid = self.names.resolve(name)
        sp_name = self.names.display_name(cid)
        if check_manifest:
            m = self.manifest()
            if m is not None:
                m.check(cid, sp_name)
        node: str | None
        try:
            node = self.graph.current().resolve(cid)
        except ArkloreError:
            node = None
        return Speaker(cid, sp_name, tuple(self.names.family(cid)), node)

    def operator_info(self, sp: Speaker) -> dict[str, Any]:
        """The names layer's record of her, with her graph node, tier and availability."""
        info = self.names.record(sp.char_id)
        info["graph_node"] = sp.node_id
        info["tier"] = self.profiles.persona(sp.char_id).tier
        m = self.manifest()
        info["available"] = m is None or m.allows(sp.char_id)
        return info

    def named(self, sp: Speaker, message: str) -> list[str]:
        """The people ``message`` names for her, as graph nodes, in order, without her: the
        one rule every block shares (:meth:`GraphFacade.named_spans`)."""
        return named_ids(self.graph.named_spans(sp.char_id, message))

    # -- the turn ----------------------------------------------------------------------------
    def context(
        self,
        operator: str,
        message: str,
        participants: Iterable[str] = (),
        l3_targets: Iterable[str] = (),
        *,
        steady: bool = False,
        until: str | None = None,
    ) -> TurnContext:
        """The turn's context: her, the others present (each once), who the message names,
        her persona (with the tier decision), the story point (``until``, else the facade's
        default) and no claims yet."""
        sp = self.speaker(operator)
        present = [sp]
        for name in participants:
            p = self.speaker(name)
            if all(p.char_id != q.char_id for q in present):
                present.append(p)
        spans = tuple(self.graph.named_spans(sp.char_id, message))
        return TurnContext(
            self.layers, sp, message, self.profiles.persona(sp.char_id), present=tuple(present),
            spans=spans, l3_targets=tuple(l3_targets),
            small_talk=is_small_talk(self.layers, message, spans), steady=steady,
            story=self.layers.story_view(until or self.until),
        )  # fmt: skip

    def turn(
        self,
        operator: str,
        message: str,
        history: Iterable[Mapping[str, Any]] = (),
        participants: Iterable[str] = (),
        l3_targets: Iterable[str] = (),
        *,
        steady: bool = False,
        until: str | None = None,
    ) -> Turn:
        """The system-prompt blocks for one turn with ``operator`` (see :mod:`.turn`);
        ``steady``: the blocks of :data:`arklore.chat.layout.STEADY` built the same for every
        message (a cached prefix); ``until``: the story point it is set at (nothing later).

        Raises a one-line ArkloreError for an unknown, ambiguous or unavailable operator or
        participant and for a message (or history item) over the size limit; a block that
        cannot be filled is empty with its reason instead."""
        t0 = time.perf_counter()
        check_message(message, self.layers.max_message_chars)
        check_history(history, self.layers.max_message_chars)
        ctx = self.context(operator, message, participants, l3_targets, steady=steady, until=until)
        timings = {"context": _ms(t0)}
        built: dict[str, Block] = {}
        for module in build_order():
            t = time.perf_counter()
            built[module.NAME] = module.build(ctx)
            timings[module.NAME] = _ms(t)
        blocks = [built[m.NAME] for m in BLOCK_ORDER]
        sp, present = ctx.speaker, ctx.present
        opening = preamble(sp, present)
        system = "\n\n".join([opening] + [b.text for b in blocks if b.text])
        timings["total"] = _ms(t0)
        return Turn(sp.char_id, sp.name, message, [p.char_id for p in present], blocks, system,
                    self.layers.counter(system), timings, opening,
                    self.warnings(), ctx.story.point if ctx.story else None)  # fmt: skip

    # -- one block, for the callers that want only it ------------------------------------------
    def persona(
        self, sp: Speaker, budget: int | None = None, skip_quotes: Iterable[str] = ()
    ) -> Block:
        """Her persona block (:mod:`arklore.chat.blocks.persona`)."""
        p = self.profiles.persona(sp.char_id)
        return persona_blocks.block(self.layers, p, budget, skip_quotes)

    def doctor(self, sp: Speaker, budget: int | None = None) -> Block:
        """Her view of the Doctor (:mod:`arklore.chat.blocks.doctor`)."""
        p = self.profiles.persona(sp.char_id)
        return doctor_blocks.block(self.layers, sp, p, budget)

    def relation_context(
        self,
        sp: Speaker,
        message: str,
        exclude: Iterable[str] = (),
        budget: int | None = None,
        spans: list[Span] | None = None,
        until: str | None = None,
    ) -> RelationContext:
        """Her relation context for ``message`` (:func:`.blocks.relations.relation_context`)."""
        p, view = self.profiles.persona(sp.char_id), self.layers.story_view(until or self.until)
        return relation_blocks.relation_context(self.layers, sp, p, message, exclude, budget,
                                                spans, view.knows_lines if view else None)  # fmt: skip

    def memories(
        self, sp: Speaker, query: str, k: int | None = None, named: Sequence[str] | None = None
    ) -> Block:
        """Her memories for ``query`` as the memories block (:mod:`.blocks.memories`)."""
        return memory_blocks.block(self.layers, sp, query, k, named)

    def memories_block(self, sp: Speaker, memories: Memories) -> Block:
        """``memories`` rendered as the memories block."""
        return memory_blocks.render(self.layers, sp, memories)

    def exemplars(self, sp: Speaker, message: str, named: Sequence[str] = (),
                  knows: Callable[[str], bool] | None = None) -> Block:  # fmt: skip
        """Her scenes for ``message`` as the exemplars block (:mod:`.blocks.exemplars`)."""
        return exemplar_blocks.block(self.layers, sp, message, named, knows)

    def chars_check(self, folder: Path | None = None) -> list[FileCheck]:
        """``arklore chars check`` (:func:`.blocks.persona.chars_check`)."""
        return persona_blocks.chars_check(self.layers, self.profiles.check(folder))


__all__ = ["Budgets", "ChatFacade"]
