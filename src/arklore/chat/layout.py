"""Where a turn's knowledge goes in a chat completion's messages, and what of it a chat app
already sends (the OpenAI-compatible endpoint, :mod:`arklore.service.openai`, places it).

A provider's prompt cache (DeepSeek's, OpenAI's) bills the part of a prompt that repeats the
start of an earlier one at a fraction, so the knowledge is split in two:

* **steady** -- the preamble and the blocks that are the same for every message of a chat
  with her (:data:`STEADY`: who she is, how she speaks, where she stands now, how she stands
  with the Doctor): they open the system message, before the app's own messages;
* **per message** -- the blocks this message asks for (:data:`PER_MESSAGE`: the people it
  names, her memories and scenes for it, the group): just before the last user message, so
  everything before it (the steady part, the app's card, the history) is the previous
  turn's prompt unchanged.

A chat app that already carries arklore's text (an exported card's description and
personality, its lorebook's entries) would otherwise send the model each fact twice: a line
of a block that the app's own system messages already hold is left out (:func:`unsent`), and
a block left with nothing is left out whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.chat.blocks import BLOCK_NAMES
from arklore.chat.turn import Turn
from arklore.core.blocks import DOCTOR, NOW, PERSONA, SPEECH
from arklore.settings import PromptLayout as Layout

STEADY: tuple[str, ...] = (PERSONA, SPEECH, NOW, DOCTOR)
"""The blocks built the same for every message of a chat (the turn is built ``steady``)."""
PER_MESSAGE: tuple[str, ...] = tuple(n for n in BLOCK_NAMES if n not in STEADY)
"""Every other block, in prompt order."""

KNOWLEDGE_HEAD = "〔以下是回复这条消息的参考资料，不是博士说的话〕"
MESSAGE_HEAD = "〔博士的消息〕"
"""What the per-message part is wrapped in, inside the last user message."""

MIN_FACT_CHARS = 4
"""Shortest line (without spaces and list marks) counted as a fact a client may already send."""
MIN_TAIL_CHARS = 8
"""Shortest text after a line's label (``初雪：……``) matched on its own: a lorebook entry
holds what the block says of that person without the label."""

_MARK = re.compile(r"^\s*(?:[-*•]\s*|#+\s*)")
_SPACE = re.compile(r"\s+")
_LABEL = re.compile(r"^[^：:]{1,40}[：:]")


@dataclass(frozen=True)
class Placed:
    """A turn's knowledge in two parts (see the module docstring); ``left_out``: the lines the
    client already sends."""

    steady: str
    per_message: str
    left_out: tuple[str, ...] = field(default_factory=tuple)


def place(turn: Turn, sent: str = "", nickname: str = "博士") -> Placed:
    """``turn``'s blocks split into the steady and the per-message part, each without the
    lines ``sent`` (the client's own system text) already holds."""
    known = _flat(sent)
    left: list[str] = []
    parts: dict[str, list[str]] = {"steady": [turn.preamble], "per_message": []}
    for b in turn.blocks:
        if not b.text:
            continue
        text, dropped = unsent(b.text, known, nickname)
        left += dropped
        if text:
            parts["steady" if b.name in STEADY else "per_message"].append(text)
    steady = "\n\n".join(p for p in parts["steady"] if p)
    return Placed(steady, "\n\n".join(parts["per_message"]), tuple(left))


def messages(
    turn: Turn,
    client: Sequence[Mapping[str, Any]],
    last_user: int,
    layout: Layout = "cache",
    nickname: str = "博士",
) -> list[dict[str, Any]]:
    """What the chat model receives: the client's messages as sent, with ``turn``'s knowledge
    placed by ``layout`` (``last_user``: the index of the message the turn answers) and
    without what the client's system messages already carry.

    The per-message part goes *into* the last user message, ahead of its text, rather than
    in a system message of its own before it: servers move a system message to the top
    (DeepSeek-V3's chat template gathers every system message into the opening system
    prompt; Anthropic's and Gemini's OpenAI-compatible layers lift system text out of the
    conversation), which would put it back in front of the history and break the cached
    prefix. A user message stays where it is on every server."""
    sent = "\n".join(
        _text(m.get("content")) for m in client if m.get("role") in ("system", "developer")
    )
    placed = place(turn, sent, nickname)
    out = [dict(m) for m in client]
    if layout == "system":
        whole = "\n\n".join(p for p in (placed.steady, placed.per_message) if p)
        return [{"role": "system", "content": whole}, *out]
    if placed.per_message:
        out[last_user]["content"] = _ahead(placed.per_message, out[last_user].get("content"))
    return [{"role": "system", "content": placed.steady}, *out]


def _ahead(knowledge: str, content: Any) -> Any:
    """``content`` (a string or a list of parts) with ``knowledge`` ahead of it."""
    head = f"{KNOWLEDGE_HEAD}\n{knowledge}\n{MESSAGE_HEAD}\n"
    if isinstance(content, list):
        return [{"type": "text", "text": head.rstrip("\n")}, *content]
    return head + (content if isinstance(content, str) else "")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p["text"])
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def unsent(text: str, known: str, nickname: str = "博士") -> tuple[str, list[str]]:
    """A block's ``text`` without its fact lines ``known`` (flattened: :func:`_flat`) holds,
    and those lines. A heading (``【…】``, ``## …``, ``〔…〕``, a label line ending on a colon)
    goes with the last of its lines;
    "" when no fact is left."""
    if not known:
        return text, []
    head, *rest = text.split("\n")
    if not _heading(head):
        head, rest = "", [head, *rest]
    kept: list[str] = []
    dropped: list[str] = []
    section: list[str] = []  # a sub-heading and the lines under it
    facts = 0

    def close() -> None:
        if section and (len(section) > 1 or not _heading(section[0])):
            kept.extend(section)
        section.clear()

    for line in rest:
        if _heading(line):
            close()
            section.append(line)
        elif _sent(line, known, nickname):
            dropped.append(line)
        else:
            section.append(line)
            facts += 1
    close()
    if not facts:
        return "", dropped
    return "\n".join([head, *kept] if head else kept), dropped


def _heading(line: str) -> bool:
    """A heading or a label that introduces the lines under it (``银灰说过的话：``): it goes
    with the last of them."""
    s = line.strip()
    return s.startswith(("【", "〔", "#")) or s.endswith(("：", ":")) or not s


def _flat(text: str) -> str:
    return _SPACE.sub("", text)


def _sent(line: str, known: str, nickname: str) -> bool:
    """Does ``known`` hold this line's fact: the line (list mark and spaces aside), or the text
    after its label? The Doctor's name may stand in ``known`` as whatever the app calls the
    user (another app's card may say ``{{user}}``), so the pieces around it are matched."""
    fact = _flat(_MARK.sub("", line))
    if len(fact) < MIN_FACT_CHARS:
        return False
    if _holds(known, fact, nickname):
        return True
    label = _LABEL.match(fact)
    tail = fact[label.end() :] if label else ""
    if len(tail) >= MIN_TAIL_CHARS and _holds(known, tail, nickname):
        return True
    return label is not None and _field(known, label.group(0), tail)


def _field(known: str, label: str, value: str) -> bool:
    """Does ``known`` give the field ``label`` (``矿石病感染情况：``) a value that holds
    ``value`` (非感染者 in 参照医学检测报告，确认为非感染者。: the anchor shortens a field the
    card gives whole)?"""
    if not value:
        return False
    at = known.find(label)
    while at >= 0:
        end = known.find("\n", at)
        if value in known[at + len(label) : end if end >= 0 else None]:
            return True
        at = known.find(label, at + 1)
    return False


def _holds(known: str, fact: str, nickname: str) -> bool:
    pieces = fact.split(nickname) if nickname else [fact]
    if len(pieces) == 1:
        return fact in known
    at = 0
    for p in pieces:
        if not p:
            continue
        found = known.find(p, at)
        if found < 0:
            return False
        at = found + len(p)
    return True


__all__ = ["PER_MESSAGE", "STEADY", "Layout", "Placed", "messages", "place", "unsent"]
