"""What the blocks of a turn read: the layers and settings they draw on (:class:`Layers`, one
per :class:`~arklore.chat.facade.ChatFacade`), and the turn itself (:class:`TurnContext`,
built once per turn), with what earlier blocks already inject (:class:`Claims`).

A block reads the turn from its context, never from another block's items: who she is and
who is present, who the message names (one rule, :meth:`GraphFacade.named_spans`), her
persona and with it the tier decision (made once, in :func:`arklore.profiles.persona.persona`:
``persona.relation_context``), and the claims.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from arklore.chat.turn import Speaker
from arklore.core.blocks import Block, StageRef, unique
from arklore.core.errors import ArkloreError, UsageError
from arklore.core.text import render_nickname, topic_words
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.corpus.story import StoryView
from arklore.events.facade import EventsFacade
from arklore.graph.facade import GraphFacade
from arklore.graph.named import Span, named_ids
from arklore.names.facade import NamesFacade
from arklore.profiles.facade import ProfilesFacade
from arklore.profiles.persona import Persona
from arklore.profiles.persona import until as persona_until
from arklore.rag.facade import RagFacade
from arklore.settings import Settings

PERSONA_CACHE = 2048
"""Persona blocks kept in memory (one per operator, file state and budget; cleared when full)."""


@dataclass(frozen=True)
class Budgets:
    """Tokens per block per turn and items per block: the settings' ``ARKLORE_*_TOKEN_BUDGET``,
    ``ARKLORE_MEMORY_K`` and ``ARKLORE_EXEMPLARS_K``, whose defaults are the numbers' one home."""

    persona: int
    relations: int
    memories: int
    group: int
    memories_k: int
    doctor: int
    exemplars: int
    exemplars_k: int
    speech: int = 160
    now: int = 160

    @classmethod
    def from_settings(cls, st: Settings) -> Budgets:
        return cls(
            persona=st.persona_token_budget,
            relations=st.rag_token_budget,
            memories=st.memory_token_budget,
            group=st.group_token_budget,
            memories_k=st.memory_k,
            doctor=st.doctor_token_budget,
            exemplars=st.exemplar_token_budget,
            exemplars_k=st.exemplars_k,
            speech=st.speech_token_budget,
            now=st.now_token_budget,
        )


class BlockCache:
    """Blocks kept across turns by key, each with the persona it was made from: a hit counts
    only for that very persona (the profiles layer keeps one per file state). A copy is
    handed out, so a caller may change it."""

    def __init__(self, size: int = PERSONA_CACHE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._held: dict[tuple[object, ...], tuple[Persona, Block]] = {}

    def get(self, key: tuple[object, ...], persona: Persona) -> Block | None:
        hit = self._held.get(key)
        return copy.deepcopy(hit[1]) if hit is not None and hit[0] is persona else None

    def put(self, key: tuple[object, ...], persona: Persona, block: Block) -> Block:
        with self._lock:
            if len(self._held) >= self.size:
                self._held.clear()
            self._held[key] = (persona, block)
        return copy.deepcopy(block)

    def clear(self) -> None:
        with self._lock:
            self._held = {}


@dataclass(frozen=True)
class Layers:
    """The lower layers' facades a block reads, and the chat's settings."""

    names: NamesFacade
    graph: GraphFacade
    rag: RagFacade
    events: EventsFacade
    profiles: ProfilesFacade
    budgets: Budgets
    nickname: str = "博士"  # what {@nickname} becomes in anything a chat receives
    max_message_chars: int = 8000
    counter: TokenCounter = count_tokens
    personas: BlockCache = field(default_factory=BlockCache)
    story: Callable[[str], StoryView] | None = None  # a story point -> what a chat there knows

    def story_view(self, until: str | None) -> StoryView | None:
        """The story as a chat set at ``until`` knows it (None: no point, everything)."""
        if not until:
            return None
        if self.story is None:
            raise UsageError("this chat has no story order to set a story point in")
        return self.story(until)

    def shown(self, text: str) -> str:
        """``text`` as a chat shows it: the script's player placeholder rendered."""
        return render_nickname(text, self.nickname)

    def stage_refs(self, paths: Iterable[str]) -> list[StageRef]:
        return self.events.stage_refs(unique(paths))

    def label(self, label: str, told: set[str] | None = None) -> str:
        """A speaker label as a block shows it: a popup's avatar id as the person's name; with
        ``told``, a label that does not say who it is is followed by who, the first time in
        ``told``'s scope (``恩希欧迪斯（银灰）：``)."""
        who = self.names.who_is(label)
        if who is not None and label.startswith("$"):
            return who
        shown = self.shown(label)
        if who is None or told is None or label in told:
            return shown
        told.add(label)
        return f"{shown}（{who}）"


@dataclass
class Claims:
    """What the blocks built so far inject, so a later block leaves it out: each person once
    (the Doctor, when the doctor block has her relation to him) and each quote once (the
    source ids of her lines the doctor block quotes)."""

    people: list[str] = field(default_factory=list)  # graph nodes
    quotes: list[str] = field(default_factory=list)  # quote source ids (voice:…, story:…)


@dataclass
class TurnContext:
    """One turn, as every block reads it (see the module docstring)."""

    layers: Layers
    speaker: Speaker
    message: str
    persona: Persona  # her profile as a chat may use it, with the tier decision
    present: tuple[Speaker, ...] = ()  # her first, then the others (a group chat: two or more)
    spans: tuple[Span, ...] = ()  # who the message names for her, with where
    l3_targets: tuple[str, ...] = ()  # people the app's other memory already recalled
    story: StoryView | None = None  # the story point a chat is set at; None: no point
    small_talk: bool = False  # nobody named and no word of a topic (:func:`is_small_talk`)
    steady: bool = False  # the steady blocks the same whatever the message (chat.layout)
    claims: Claims = field(default_factory=Claims)
    persona_held: int = 0  # lines of her profile the story point held back

    def __post_init__(self) -> None:
        if self.story is not None:  # her profile as a chat at the point may use it
            self.persona, self.persona_held = persona_until(self.persona, self.knows_lines)

    @property
    def others(self) -> tuple[Speaker, ...]:
        """The others present (the group block covers them)."""
        return self.present[1:]

    @property
    def named(self) -> list[str]:
        """The people the message names, as graph nodes, in order, without her."""
        return named_ids(self.spans)

    @property
    def with_them(self) -> list[str]:
        """The people the message names, then the others present: in a group chat they count
        as named (the scenes and stages they share with her)."""
        return list(dict.fromkeys([*self.named, *(p.node_id or p.char_id for p in self.others)]))

    def knows(self, stage_path: str) -> bool:
        """Does a chat set at the turn's story point know this stage? (no point: yes)"""
        return self.story is None or self.story.knows(stage_path)

    def knows_lines(self, line_ids: Iterable[str]) -> bool:
        """Are all these lines (line ids, ``story:`` source ids) at or before the point?"""
        return self.story is None or self.story.knows_lines(line_ids)

    @property
    def relations_allowed(self) -> bool:
        """May a chat use her relations? The profiles layer's one tier-C decision."""
        return self.persona.relation_context


def is_small_talk(layers: Layers, message: str, spans: Sequence[Span]) -> bool:
    """Is ``message`` small talk (你好, 最近在忙什么): nobody named and no word of a topic left
    once the lexical tokenizer drops small talk and :func:`~arklore.core.text.topic_words` the
    Doctor's names? Such a turn gets her archive's openings and her signature scenes."""
    if spans:
        return False
    try:
        return not topic_words(layers.rag.tokenizer().query(message))
    except ArkloreError:  # no store to read the story's names from: not known to be small talk
        return False
