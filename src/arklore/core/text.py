"""Small text rules shared by several layers (no I/O)."""

from __future__ import annotations

from arklore.core.errors import MessageTooLongError


def check_message(text: str, limit: int) -> str:
    """``text`` when it is at most ``limit`` characters, else MessageTooLongError: a chat
    message is bounded before any work is done on it (mention detection, embedding)."""
    if not isinstance(text, str):
        raise TypeError(f"a message must be str, not {type(text).__name__}")
    if len(text) > limit:
        raise MessageTooLongError(
            f"the message has {len(text):,} characters; the limit is {limit:,}"
        )
    return text


def strip_json_fence(content: str) -> str:
    """The JSON inside a model reply: some models wrap it in ```json fences even in JSON mode."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()
