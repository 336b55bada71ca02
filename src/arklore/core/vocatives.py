"""The one rule for "this line addresses someone by name" (a vocative), and the one list of
honorifics that may follow a name.

Three callers share it, so they agree on what an address is:

* the relation gates (``extract/gates.py``): is the other party addressed near an evidence line?
* the interaction statistics (``graph/interaction.py``): who calls whom by name?
* the chat-message name rules (``names/rules.py``, signal ``vocative``): is a name that is also
  an ordinary word used to address someone (``夕，画好了吗？``)?

A span ``text[start:end]`` is in **address position** when either

* *opening*: it starts a sentence -- between it and the start of the text, a newline, or a
  sentence end (。！？…~—：) there are only edge characters (spaces, quotes, brackets, ``@``) --
  and it is followed by a pause (，！？。…~—： or a space) or by the end of the line; or
* *closing*: it directly follows a comma and is followed, after optional edge characters, by
  a sentence end or the end of the line (``你还好吗，凯尔希？``).

:func:`address_spans` finds the candidate words of a line in address position (runs of name
characters, at most :data:`MAX_NAME_CHARS`); a caller keeps those its whitelist knows, with
:func:`strip_honorific` for ``凯尔希医生，`` and ``陈警官，``. Whether a word is a person is the
caller's business (the gate's speaker whitelist, the graph's node table); the position rule is
this module's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

HONORIFICS: tuple[str, ...] = (
    "sir", "小姐", "姐姐", "大姐", "姐", "妹妹", "妹", "哥哥", "大哥", "哥", "酱", "桑", "警官",
    "长官", "队长", "老师", "医生", "大人", "阁下", "殿下", "前辈", "女士", "先生", "总", "老板",
    "宝宝",
)  # fmt: skip
"""Titles and affixes that follow a name (陈sir, 凯尔希医生, 年姐); one list for every layer."""

_HONORIFIC_SET = frozenset(HONORIFICS)
_LENGTHS = tuple(sorted({len(h) for h in HONORIFICS}, reverse=True))

MAX_NAME_CHARS = 14
"""Longest word taken as an addressed name (names with titles: 审判官艾丽妮, 凯尔希医生)."""

EDGE = frozenset(" \t\u3000\"'“”‘’「」『』（）()@＠")
"""May stand between a sentence start and an opening address, or after a closing one."""
SENTENCE_END = frozenset("。！!？?…~～—.：:")
"""Ends a sentence (or a speaker label): an opening address may follow."""
PAUSE = frozenset("，,！!？?。…~～—：: \u3000")
"""May follow an opening address."""
COMMA = frozenset("，,")
"""Precedes a closing address."""

_NOT_NAME = "".join(sorted(EDGE | SENTENCE_END | PAUSE | COMMA | set("、\n\r；;")))
_WORD = re.compile(f"[^{re.escape(_NOT_NAME)}]+")


def _opening(text: str, start: int, end: int) -> bool:
    after = text[end] if end < len(text) else "\n"
    if after not in PAUSE and after not in "\r\n":
        return False
    i = start - 1
    while i >= 0 and text[i] in EDGE:
        i -= 1
    return i < 0 or text[i] in "\n\r" or text[i] in SENTENCE_END


def _closing(text: str, start: int, end: int) -> bool:
    if start == 0 or text[start - 1] not in COMMA:
        return False
    j, n = end, len(text)
    while j < n and text[j] in EDGE:
        j += 1
    return j >= n or text[j] in "\n\r" or text[j] in SENTENCE_END


def is_address(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` in address position (see the module docstring)?"""
    return _opening(text, start, end) or _closing(text, start, end)


def could_be_address(before: str, after: str) -> bool:
    """A cheap necessary condition on the characters either side of a span (``"\\n"`` for the
    start/end of the text): False means :func:`is_address` is False."""
    return (
        (before in EDGE or before in SENTENCE_END or before in "\n\r")
        and (after in PAUSE or after in "\n\r")
    ) or (before in COMMA and (after in EDGE or after in SENTENCE_END or after in "\n\r"))


def address_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every word of ``text`` in address position, left to right."""
    for m in _WORD.finditer(text):
        start, end = m.span()
        if end - start <= MAX_NAME_CHARS and is_address(text, start, end):
            yield start, end


def strip_honorific(word: str, known: Callable[[str], bool]) -> str | None:
    """``word`` if ``known(word)``; else ``word`` without one trailing honorific when the rest
    is known (凯尔希医生 -> 凯尔希); else None."""
    if known(word):
        return word
    for k in _LENGTHS:  # the longest honorific first; one set lookup per length
        if len(word) > k and word[-k:] in _HONORIFIC_SET and known(word[:-k]):
            return word[:-k]
    return None


def addressed(text: str, lookup: Callable[[str], str | None]) -> list[str]:
    """Whom ``text`` addresses: ``lookup(word)`` of every word in address position (after
    :func:`strip_honorific`), unique, in order. ``lookup`` returns a name or id, or None for
    a word that is not a known person."""
    out: list[str] = []
    for hit, _form in addressed_forms(text, lookup):
        if hit not in out:
            out.append(hit)
    return out


def addressed_forms(text: str, lookup: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """(``lookup`` hit, the form as written) of every address in ``text``, in order: the same
    rule as :func:`addressed`, keeping the words used (``凯尔希医生`` with its title), so a
    description can say how someone is called."""
    out: list[tuple[str, str]] = []
    cache: dict[str, str | None] = {}

    def known(w: str) -> bool:
        if w not in cache:
            cache[w] = lookup(w)
        return cache[w] is not None

    for start, end in address_spans(text):
        written = text[start:end]
        word = strip_honorific(written, known)
        if word is not None:
            hit = cache[word]
            if hit is not None:
                out.append((hit, written))
    return out
