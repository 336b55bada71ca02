"""A turn: the system prompt a chat with one operator injects for one message.

:meth:`arklore.chat.facade.ChatFacade.turn` resolves the operator (any name the alias table
knows; the manifest may make her "not available"), checks the message size, and builds the
blocks (one module each, :mod:`arklore.chat.blocks`), in this order:

* **persona** -- the sections of her ``.char`` profile her tier allows;
* **doctor** -- her view of the Doctor, every turn (:mod:`arklore.chat.blocks.doctor`);
* **relations** -- her strongest relations (anchors, top 3) and her view of the people the
  message names (contextual, top 2), without the people the other memory layer already
  recalled (``l3_targets``) or who are present in a group chat (the group block covers them);
* **memories** -- her top-k memories for the message (the events layer's ``memories``; her
  appearances until story events are extracted);
* **group** -- in a group chat (two or more operators present, ``participants``), each
  present operator's relations with the others.

Each block fits its own budget (settings, see :class:`~arklore.chat.context.Budgets`) and
says why it is empty when it is; the total of the whole system prompt is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.core.blocks import Block, book_title
from arklore.core.errors import UsageError
from arklore.core.text import check_message
from arklore.corpus.story import StoryPoint

ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class Speaker:
    """An operator of a chat, resolved: her id, name, every form, and her graph node."""

    char_id: str
    name: str
    family: tuple[str, ...]  # her base id first, then alternate forms
    node_id: str | None  # her node in the relation graph (base id), None without a graph


@dataclass(slots=True)
class Turn:
    """The assembled system prompt of one turn, block by block."""

    operator_id: str
    operator_name: str
    message: str
    participants: list[str]  # char ids present (a group chat has two or more)
    blocks: list[Block]
    system_prompt: str
    total_tokens: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    preamble: str = ""  # the instruction that opens the system prompt (:func:`preamble`)
    warnings: list[str] = field(default_factory=list)  # about the knowledge base (a build that
    # did not finish): one line each
    story: StoryPoint | None = None  # the story point the turn is set at

    def until(self) -> dict[str, Any] | None:
        """The story point used, and per block how many items it held back (None: none)."""
        if self.story is None:
            return None
        held = {b.name: b.meta["held_back"] for b in self.blocks if b.meta.get("held_back")}
        return self.story.to_dict() | {"held_back": held}

    def block(self, name: str) -> Block:
        return next(b for b in self.blocks if b.name == name)

    @property
    def group(self) -> bool:
        return len(self.participants) > 1

    def messages(self, history: Sequence[Mapping[str, str]] = ()) -> list[dict[str, str]]:
        """The chat-completion messages: system prompt, the history, then the message."""
        out = [{"role": "system", "content": self.system_prompt}]
        out += [{"role": m["role"], "content": m["content"]} for m in history]
        out.append({"role": "user", "content": self.message})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": {"id": self.operator_id, "name": self.operator_name},
            "participants": list(self.participants),
            "blocks": [b.to_dict() for b in self.blocks],
            "total_tokens": self.total_tokens,
            "blocks_tokens": sum(b.tokens for b in self.blocks),
            "system_prompt": self.system_prompt,
            "timings_ms": dict(self.timings_ms),
            "warnings": list(self.warnings),
            "until": self.until(),
        }


def check_history(history: Iterable[Mapping[str, Any]], limit: int) -> list[dict[str, str]]:
    """Chat history as ``{"role": "user"|"assistant", "content": str}`` items, each within the
    message size limit; UsageError naming the first bad item."""
    out = []
    for i, m in enumerate(history):
        role, content = m.get("role"), m.get("content")
        if role not in ROLES or not isinstance(content, str):
            raise UsageError(
                f"history[{i}] must be {{'role': 'user'|'assistant', 'content': text}}",
                hint="pass the previous messages of this chat in order",
            )
        check_message(content, limit, what=f"history[{i}] message")
        out.append({"role": str(role), "content": content})
    return out


def preamble(sp: Speaker, present: Sequence[Speaker]) -> str:
    """The instruction before the blocks (Chinese: the prompt language)."""
    text = (
        f"你正在以《明日方舟》干员{sp.name}的身份与博士对话，保持{sp.name}的说话方式、性格和立场。"
        "下面的资料只作背景参考，不要逐条复述，也不要编造资料里没有的经历。"
    )
    if len(present) > 1:
        names = "、".join(p.name for p in present)
        text += f"\n这是一场群聊，在场的干员有：{names}。你只以{sp.name}的身份发言。"
    return text


ITEM_CHARS = 40
"""How much of a sentence a ``/why`` line shows (the stage is on the ``stages`` line)."""


def render_why(turn: Turn) -> str:
    """What a turn injected, block by block, for people (``/why``)."""
    out = [
        f"{turn.operator_name} ({turn.operator_id}): {turn.total_tokens} tokens in the system prompt"
    ]
    if turn.story is not None:
        out.append(f"  set at {turn.story.label}: nothing later in the story reaches her")
    for b in turn.blocks:
        head = f"  {b.name:<9} {b.tokens:>5}/{b.budget:<5} tokens"
        if b.meta.get("held_back"):
            head += f"  ({b.meta['held_back']} held back: later in the story)"
        if b.name == "persona":
            head += f"  tier {b.meta.get('tier', '?')}"
        if b.meta.get("kind"):
            head += f"  ({b.meta['kind']})"
        out.append(head)
        if b.empty:
            out.append(f"      empty: {b.reason}")
            continue
        if b.reason:
            out.append(f"      note: {b.reason}")
        for it in b.items:
            out.append("      - " + _item_label(b.name, it))
        if b.files:
            out.append("      files: " + ", ".join(b.files))
        if b.line_ids:
            shown = ", ".join(b.line_ids[:4]) + (" …" if len(b.line_ids) > 4 else "")
            out.append(f"      lines ({len(b.line_ids)}): {shown}")
        codes = [s.label() for s in b.stages]
        if codes:
            out.append("      stages: " + ", ".join(codes[:6]) + (" …" if len(codes) > 6 else ""))
    return "\n".join(out)


def _item_label(block: str, it: Mapping[str, Any]) -> str:
    if block == "persona":
        return f"## {it['title']} ({it['tokens']} tokens)"
    if block == "relations":
        return (f"{it['kind']}: {it['target_name']} {it['predicate']} "
                f"{it['strength']:.2f} [{it['source']}]")  # fmt: skip
    if block == "group":
        return f"{it['from_name']}→{it['target_name']} {it['predicate']} {it['strength']:.2f}"
    if block == "speech":
        return str(it["text"])
    if block == "now":  # why it was kept (latest, office, place), her record, its sentence
        record = ", her record" if it.get("own_record") else ""
        return f"{it['why']}{record}: {str(it['text'])[:ITEM_CHARS]}"
    if block == "doctor":
        if it.get("kind") == "relation":
            return f"relation: {it['predicate']} {it['strength']:.2f} [{it['source']}]"
        trust = f" (trust ≥ {it['trust']})" if it.get("trust") else ""
        return f"{it['source_id']}{trust}"
    code = it.get("stage_code") or ""
    name = book_title(it.get("story_name")) or ""
    return f"{code} {name} {it.get('stage_path') or ''}".strip()
