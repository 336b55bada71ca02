"""Small text rules shared by several layers (no I/O)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from arklore.core.errors import BadTextError, MessageTooLongError
from arklore.core.model import DOCTOR_NAMES

_NICKNAME = re.compile(
    r"(?:Dr\.\s?|Doctor\s?|博士\s?)?\{@nickname\}(?P<title>\s?博士)?", re.IGNORECASE
)
_DOCTOR_TITLE = "博士"


def render_nickname(text: str, nickname: str = "博士") -> str:
    """Story text as a chat may receive it: the script's placeholder for the player's name
    (``Dr.{@nickname}``, ``{@nickname}``) becomes ``nickname`` (the setting
    ``ARKLORE_NICKNAME``, default 博士); no placeholder ever reaches a prompt. A title the
    script writes after the name (``{@nickname}博士``) is kept unless the nickname already
    ends with it (no 博士博士). The game's rich-text tags (``<i>``, ``<color=#000000>``) are
    dropped too: they style the words, they are not words; so are zero-width characters (23
    story lines carry U+200B)."""

    def one(m: re.Match[str]) -> str:
        if m.group("title") and not nickname.endswith(_DOCTOR_TITLE):
            return nickname + _DOCTOR_TITLE
        return nickname

    return _NICKNAME.sub(one, _MARKUP.sub("", text))


_MARKUP = re.compile(
    r"</?(?:i|b|u|color|size)(?:=[^<>]*)?>|[\u200b-\u200d\u2060\ufeff]", re.IGNORECASE
)


SENTENCE_END = re.compile(r"[。！？!?]+[」』”’）)]*")
"""A sentence's end: 。！？ (a run of them) with the closing quotes after it."""
_CLAUSE_END = re.compile(r"[，；、,;：:]")


def counted(n: int, noun: str) -> str:
    """``n`` and an English ``noun`` in the number it takes: 1 line, 2 lines, 0 memories."""
    if n == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{n:,} {plural}"


def one_line(text: str) -> str:
    """Line breaks and repeated spaces folded: a section bullet is one line."""
    return " ".join(text.split())


def sentence_pieces(text: str) -> list[str]:
    """``text``'s sentences in order, each with its 。！？ and closing quotes, plus a trailing
    part without them; each stripped, empty ones left out."""
    pieces, start = [], 0
    for m in SENTENCE_END.finditer(text):
        pieces.append(text[start : m.end()])
        start = m.end()
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def first_sentences(text: str, max_chars: int) -> str:
    """The whole sentences from the start of ``text`` that fit ``max_chars`` (at least the
    first), its line breaks and runs of spaces folded: a verbatim prefix, one line."""
    out = ""
    for piece in sentence_pieces(one_line(text)):
        if out and len(out) + len(piece) > max_chars:
            break
        out += piece
    return out


def shorten(text: str, max_chars: int) -> str:
    """``text`` on one line within ``max_chars``: its whole sentences that fit, else its first
    sentence cut after the last clause mark (，；、：) that fits, else cut, marked ``…``;
    never a cut inside a word where a clause ends nearby (近卫干员也做出了自己的决…)."""
    t = one_line(text)
    if len(t) <= max_chars:
        return t
    out = first_sentences(t, max_chars)
    if len(out) <= max_chars:
        return out
    head = t[: max_chars - 1]
    ends = [m.start() for m in _CLAUSE_END.finditer(head)]
    if ends and ends[-1] >= max_chars // 2:
        head = head[: ends[-1]]
    return head + "…"


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


_SURROGATE = re.compile(f"[{_char_class(_SURROGATES)}]")


def check_forwarded(text: str, *, what: str = "message") -> str:
    """``text`` unchanged unless it holds a lone surrogate (not Unicode: it cannot be sent on
    as UTF-8), else :class:`~arklore.core.errors.BadTextError`: the rule for text arklore only
    passes on (a chat app's history and system messages), which no step of arklore reads, so
    length and control characters are the app's business."""
    m = _SURROGATE.search(text)
    if m is None:
        return text
    problem = f"invalid UTF-8 (a lone surrogate U+{ord(m.group()):04X})"
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


_SUBSTANCE = re.compile(r"[0-9A-Za-z\u4e00-\u9fff]")


def substance(text: str) -> int:
    """Distinct letters, digits and CJK characters of ``text``: how much a line says, whatever
    its dashes, dots and repeats (``......`` 0, ``还有——`` 2, ``哈……哈……`` 1)."""
    return len(set(_SUBSTANCE.findall(text)))


STANCE: tuple[str, ...] = (
    "相信", "信任", "信赖", "希望", "保护", "守护", "担心", "关心", "谢谢", "感谢", "多亏",
    "抱歉", "对不起", "原谅", "愿意", "答应", "发誓", "誓言", "承诺", "陪", "喜欢", "讨厌",
    "恨", "想念", "记得", "忘", "永远", "依靠", "托付", "期待", "欠",
)  # fmt: skip
"""Words of how she stands with somebody (trust, care, thanks, apology, promise, memory):
凯尔希's 即使我时常向你表现出恶意，我也希望你不要在乎这些 tells more of her and the Doctor
than 情况就是这样…详细的事情会由…帕拉斯…和你慢慢详说 (:func:`stance`)."""


def topic_words(tokens: Iterable[str]) -> list[str]:
    """A message's query tokens (the lexical tokenizer's, small talk already left out) that can
    tell one of her stages from another: not the Doctor's names (every chat is with the Doctor;
    博士来看你了 matched 斯卡蒂's 欸，博士，你要去哪？ in BP-2). None left, and nobody named:
    small talk, which gets her signature scenes rather than stages that happen to hold the
    same word."""
    return [t for t in tokens if t not in DOCTOR_NAMES]


def stance(text: str) -> bool:
    """Does she say something of herself and how she stands (我 and a word of :data:`STANCE`)?"""
    return "我" in text and any(w in text for w in STANCE)


_GOES_ON = re.compile(
    r"^(?:然后|所以|而且|并且|但是?|可是|不过|而(?![且已])|那就|那么|因此|于是|否则|接着|不仅如此)"
)


def goes_on(text: str) -> bool:
    """Does a line go on from the one before it (然后/所以/但是/不过/而/不仅如此…)? Quoted alone
    it says something else: 德克萨斯's 然后让那个人的家族从叙拉古除名。 ends a hypothetical, 左乐's
    不仅如此，他还试图夺取天镜阁 a report on somebody. A quote picks another line first."""
    return bool(_GOES_ON.match(text.strip()))
