"""Small text rules shared by several layers (no I/O)."""

from __future__ import annotations

import re

from arklore.core.errors import BadTextError, MessageTooLongError

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


# What no text field may hold: lone surrogates (U+D800-U+DFFF: invalid UTF-8 decoded with
# surrogateescape from argv/stdin, or a "\ud800" JSON escape: no encoder can write them back)
# and the control characters (C0 but tab, line feed and carriage return; DEL; C1).
_CONTROLS = ((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F))
_SURROGATES = ((0xD800, 0xDFFF),)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


_BAD_CHAR = re.compile(f"[{_char_class(_CONTROLS + _SURROGATES)}]")
TEXT_PATTERN = f"^[^{_char_class(_CONTROLS)}]*$"
"""The same rule as a JSON Schema ``pattern`` (what the OpenAPI document says of every text
field a request carries); lone surrogates are left out: they are not Unicode scalar values,
which is all a JSON Schema string holds (and all regex engines such as Rust's accept)."""


def check_text(text: str, *, what: str = "message") -> str:
    """``text`` unchanged when it is plain Unicode text, else
    :class:`~arklore.core.errors.BadTextError` naming the first bad character's position: the
    one text rule every entry point applies to what a user sends (chat messages and history
    through :func:`check_message`, every command-line argument and standard input, every
    path, query and JSON string of an HTTP request). Tabs and line breaks are text."""
    m = _BAD_CHAR.search(text)
    if m is None:
        return text
    ch = m.group()
    if "\ud800" <= ch <= "\udfff":
        problem = f"invalid UTF-8 (a lone surrogate U+{ord(ch):04X})"
    else:
        problem = f"a control character (U+{ord(ch):04X})"
    raise BadTextError(what, m.start() + 1, problem)


def check_message(text: str, limit: int, *, what: str = "message") -> str:
    """``text`` unchanged when it has at most ``limit`` characters and passes
    :func:`check_text`, else :class:`~arklore.core.errors.MessageTooLongError` (or
    :class:`~arklore.core.errors.BadTextError`): the one check every entry point (turn
    assembly, the relation context, mention search, the HTTP service) applies to a chat
    message before any work is done."""
    if len(text) > limit:
        raise MessageTooLongError(len(text), limit, what=what)
    return check_text(text, what=what)
