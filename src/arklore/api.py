"""The module-level API a chat backend calls, over one default :class:`Workspace`.

The default workspace is made from the environment (:meth:`Settings.from_env`) on first use;
this module is, with the CLI and the service factory, one of the entry points allowed to read
it. A program that manages its own settings builds a ``Workspace(settings)`` and calls its
facades instead (``ws.chat.turn(...)``, ``ws.events.memories(...)``); tests call
:func:`set_default_workspace`. Each function here is one call of a facade: the CLI and the
HTTP service call the same ones.

Every function raises a one-line :class:`~arklore.core.errors.ArkloreError` when the knowledge
base is missing (nothing ingested, no graph built): never an empty answer that looks valid.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from arklore.chat.turn import Turn
from arklore.events.memories import Memories
from arklore.names.matcher import Mention, MentionContext
from arklore.rag.context import CONTEXT_K, Relation, RelationRAG
from arklore.rag.docs import ANCHOR_K
from arklore.settings import Settings
from arklore.workspace import Workspace

_DEFAULT: Workspace | None = None
_LOCK = threading.Lock()


def default_workspace() -> Workspace:
    """The process-wide workspace behind the functions below, made from the environment."""
    global _DEFAULT
    with _LOCK:
        if _DEFAULT is None:
            _DEFAULT = Workspace(Settings.from_env())
        return _DEFAULT


def set_default_workspace(workspace: Workspace | None) -> None:
    """Use ``workspace`` from now on (None: make a new one from the environment next time)."""
    global _DEFAULT
    with _LOCK:
        if _DEFAULT is not None and _DEFAULT is not workspace:
            _DEFAULT.close()
        _DEFAULT = workspace


def find_mentions(
    text: str, context: MentionContext | Mapping[str, Any] | None = None
) -> list[Mention]:
    """Operator mentions in ``text`` (see :class:`arklore.names.matcher.MentionMatcher`)."""
    return default_workspace().names.find_mentions(text, context)


def get_relation_context(
    operator_id: str,
    query_text: str,
    l3_recalled_targets: Iterable[str] | None = None,
    *,
    budget: int | None = None,
) -> str:
    """The relation block for one chat turn (anchors + the people the message names), under
    the same rules as the turn's relations block (``arklore context``, the HTTP route)."""
    chat = default_workspace().chat
    sp = chat.speaker(operator_id)
    return chat.relation_context(sp, query_text, l3_recalled_targets or (), budget).text


def get_anchor_relations(operator_id: str, top_k: int = ANCHOR_K) -> list[Relation]:
    return _rag().get_anchor_relations(operator_id, top_k)


def get_contextual_relations(
    operator_id: str, query_text: str, top_k: int = CONTEXT_K
) -> list[Relation]:
    return _rag().get_contextual_relations(operator_id, query_text, top_k)


def get_all_relationships_for(operator_id: str, participants: Iterable[str]) -> list[Relation]:
    return _rag().get_all_relationships_for(operator_id, participants)


def get_relation_background(operator_id: str, top_k: int = 8, *, budget: int | None = None) -> str:
    return _rag().get_relation_background(operator_id, top_k, budget=budget)


def assemble_turn(
    operator: str,
    message: str,
    history: Iterable[Mapping[str, Any]] = (),
    participants: Iterable[str] = (),
    l3_targets: Iterable[str] = (),
    *,
    until: str | None = None,
) -> Turn:
    """The system-prompt blocks of one chat turn: persona, relations, memories and (group
    chat) the relations between the operators present, each with tokens, sources and the
    reason it is empty (:meth:`arklore.chat.facade.ChatFacade.turn`); ``until``: the story
    point the chat is set at (a stage code, an event or chapter name: nothing later)."""
    return default_workspace().chat.turn(
        operator, message, history, participants, l3_targets, until=until
    )


def get_memories(operator: str, query: str | None = None, k: int = 3) -> Memories:
    """Her own first-person story memories for a chat turn (her appearances, marked as such,
    when none were extracted); see :meth:`arklore.events.facade.EventsFacade.memories`."""
    return default_workspace().events.memories(operator, query, k)


def _rag() -> RelationRAG:
    return default_workspace().rag.service()
