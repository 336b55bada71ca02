"""Small text rules shared by several layers (no I/O)."""

from __future__ import annotations

from arklore.core.errors import MessageTooLongError


def strip_json_fence(content: str) -> str:
    """The JSON inside a model reply: some models wrap it in ```json fences even in JSON mode."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


def check_message(text: str, limit: int, *, what: str = "message") -> str:
    """``text`` unchanged when it has at most ``limit`` characters, else
    :class:`~arklore.core.errors.MessageTooLongError`: the one size check every entry point
    (turn assembly, the relation context, the HTTP service) applies to a chat message."""
    if len(text) > limit:
        raise MessageTooLongError(len(text), limit, what=what)
    return text
