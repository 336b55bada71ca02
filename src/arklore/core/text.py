"""Small text rules shared by several layers (no I/O)."""

from __future__ import annotations

import re

from arklore.core.errors import MessageTooLongError

_NICKNAME = re.compile(
    r"(?:Dr\.\s?|Doctor\s?|博士\s?)?\{@nickname\}(?P<title>\s?博士)?", re.IGNORECASE
)
_DOCTOR_TITLE = "博士"


def render_nickname(text: str, nickname: str = "博士") -> str:
    """Story text as a chat may receive it: the script's placeholder for the player's name
    (``Dr.{@nickname}``, ``{@nickname}``) becomes ``nickname`` (the setting
    ``ARKLORE_NICKNAME``, default 博士); no placeholder ever reaches a prompt. A title the
    script writes after the name (``{@nickname}博士``) is kept unless the nickname already
    ends with it (no 博士博士)."""

    def one(m: re.Match[str]) -> str:
        if m.group("title") and not nickname.endswith(_DOCTOR_TITLE):
            return nickname + _DOCTOR_TITLE
        return nickname

    return _NICKNAME.sub(one, text)


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
