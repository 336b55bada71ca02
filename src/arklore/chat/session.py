"""A chat session: the operators present, the history, and replies through the LLM layer.

Each message is answered by every operator present, in order (one in a plain chat). For
each, the turn is assembled (:meth:`~arklore.chat.facade.ChatFacade.turn`) and, when a model is
given, sent as the system prompt with the history: her own earlier replies as ``assistant``,
the user's messages as ``user``, and what the others present said as ``user`` messages
prefixed with their name (``【凯尔希】…``). Without a model the session only assembles (the
terminal chat prints the prompt instead of a reply).

The LLM task is ``chat`` (``LLM_CHAT_MODEL``, ``LLM_CHAT_BASE_URL``... override the global
settings); replies are sampled at :data:`CHAT_TEMPERATURE`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from arklore.chat.facade import ChatFacade
from arklore.chat.turn import Speaker, Turn
from arklore.llm.types import ChatModel, ChatRequest

CHAT_TASK = "chat"
CHAT_TEMPERATURE = 0.8
"""Role-play wants some variety; extraction tasks use 0."""
CHAT_MAX_TOKENS = 800
CHAT_PROMPT_VERSION = "chat-1"


@dataclass(frozen=True, slots=True)
class Said:
    """One message of the history: the user's (``speaker_id`` None) or an operator's."""

    speaker_id: str | None
    name: str
    text: str


def history_for(sp_id: str, said: Sequence[Said]) -> list[dict[str, str]]:
    """The history as one operator sees it (see the module docstring)."""
    out = []
    for s in said:
        if s.speaker_id is None:
            out.append({"role": "user", "content": s.text})
        elif s.speaker_id == sp_id:
            out.append({"role": "assistant", "content": s.text})
        else:
            out.append({"role": "user", "content": f"【{s.name}】{s.text}"})
    return out


def chat_request(messages: list[dict[str, str]], key: str = "") -> ChatRequest:
    return ChatRequest(
        task=CHAT_TASK,
        messages=messages,
        key=key,
        temperature=CHAT_TEMPERATURE,
        max_tokens=CHAT_MAX_TOKENS,
        json_mode=False,
        prompt_version=CHAT_PROMPT_VERSION,
    )


@dataclass
class Reply:
    turn: Turn
    text: str | None  # None: no model configured


@dataclass
class ChatSession:
    kb: ChatFacade
    present: list[Speaker]
    llm: ChatModel | None = None
    said: list[Said] = field(default_factory=list)
    last: list[Turn] = field(default_factory=list)
    until: str | None = None  # the story point the chat is set at

    @classmethod
    def start(
        cls,
        kb: ChatFacade,
        operators: Iterable[str],
        llm: ChatModel | None = None,
        *,
        until: str | None = None,
    ) -> ChatSession:
        """A chat with ``operators`` (``until``: its story point, checked now: an unknown
        one fails before the first message)."""
        kb.layers.story_view(until)
        present: list[Speaker] = []
        for name in operators:
            sp = kb.speaker(name)
            if all(sp.char_id != p.char_id for p in present):
                present.append(sp)
        if not present:
            raise ValueError("a chat needs at least one operator")
        return cls(kb, present, llm, until=until)

    def switch(self, name: str) -> Speaker:
        """Talk with ``name`` alone from now on; the history starts over."""
        sp = self.kb.speaker(name)
        self.present = [sp]
        self.said = []
        self.last = []
        return sp

    def reset(self) -> None:
        self.said = []
        self.last = []

    def send(self, message: str) -> Iterator[Reply]:
        """Every operator present answers ``message`` in turn (assembled prompt only when no
        model). The history is updated as replies come."""
        turns: list[Turn] = []
        round_: list[Said] = []
        ids = [p.char_id for p in self.present]
        earlier = list(self.said)
        for sp in self.present:
            others = [c for c in ids if c != sp.char_id]
            hist = history_for(sp.char_id, earlier)
            turn = self.kb.turn(sp.char_id, message, hist, participants=others, until=self.until)
            turns.append(turn)
            text = None
            if self.llm is not None:
                msgs = turn.messages(hist) + history_for(sp.char_id, round_)
                text = self.llm.complete(chat_request(msgs, key=sp.char_id)).content.strip()
                round_.append(Said(sp.char_id, sp.name, text))
            yield Reply(turn, text)
        self.last = turns
        self.said = earlier + [Said(None, "博士", message)] + round_
