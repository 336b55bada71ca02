"""SillyTavern's key matching, emulated, and the lint that runs it over labelled chat.

**Matching** (:func:`fires`), as SillyTavern's World Info does it for an entry: keys are
compared case-insensitively (unless the entry is case-sensitive) as substrings of the scanned
text; with "match whole words" a one-word key must have a non-word character (JavaScript's
``\\W``: anything but ASCII letters, digits and ``_``) or the text's edge on both sides, and a
key of several words is a substring test again; a key written ``/pattern/flags`` is a regular
expression. A ``constant`` entry always fires. A ``selective`` entry with secondary keys fires
only when, besides a primary key, its secondary keys satisfy its logic: AND ANY (0, the
default), NOT ALL (1), NOT ANY (2), AND ALL (3).

**The lint** (:func:`lint`): every entry is matched against every message of a labelled set
(the names layer's ``data/names_eval.jsonl``: chat messages with the operators each one
mentions). A firing on a message that does not mention the entry's person (her alternate
forms count as her) is a *false trigger*, reported with the key that fired. The rate is false
triggers over all firings; the test suite prints it and holds it to at most
:data:`MAX_FALSE_RATE`. Firings on the messages that do mention her are counted too (how much
of her the keys still reach).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

MAX_FALSE_RATE = 0.02
"""The most false triggers (as a share of all firings on the labelled set) the keys may give."""

AND_ANY, NOT_ALL, NOT_ANY, AND_ALL = 0, 1, 2, 3

_REGEX_KEY = re.compile(r"^/(.+)/([gimsuy]*)$", re.DOTALL)


@lru_cache(maxsize=65536)
def _pattern(key: str, whole: bool, case: bool) -> re.Pattern[str] | None:
    """The regex SillyTavern would use for ``key`` (None: a plain substring test)."""
    m = _REGEX_KEY.match(key)
    if m is not None:
        flags = 0 if "i" not in m.group(2) else re.IGNORECASE
        try:
            return re.compile(m.group(1), flags | (re.DOTALL if "s" in m.group(2) else 0))
        except re.error:
            return re.compile(r"(?!)")  # SillyTavern skips a key that does not compile
    if not whole or len(key.split()) > 1:
        return None
    flags = re.ASCII | (0 if case else re.IGNORECASE)
    return re.compile(r"(?:^|\W)(" + re.escape(key) + r")(?:$|\W)", flags)


def key_matches(key: str, text: str, *, whole: bool = False, case: bool = False) -> bool:
    """Whether SillyTavern finds ``key`` in ``text`` (see the module doc)."""
    key = key.strip()
    if not key:
        return False
    pat = _pattern(key, whole, case)
    if pat is not None:
        return pat.search(text) is not None
    return key in text if case else key.lower() in text.lower()


@dataclass(frozen=True)
class Matchable:
    """What matching needs of an entry, in either format (character book or World Info)."""

    keys: tuple[str, ...]
    secondary: tuple[str, ...] = ()
    selective: bool = False
    logic: int = AND_ANY
    constant: bool = False
    whole_words: bool = False
    case_sensitive: bool = False
    enabled: bool = True

    @classmethod
    def from_book_entry(cls, e: Mapping[str, Any]) -> Matchable:
        """A character-book entry (V2/V3 ``character_book.entries[]``)."""
        ext = e.get("extensions") or {}
        return cls(
            tuple(e.get("keys") or ()),
            tuple(e.get("secondary_keys") or ()),
            bool(e.get("selective")),
            int(ext.get("selectiveLogic") or AND_ANY),
            bool(e.get("constant")),
            bool(ext.get("match_whole_words")),
            bool(e.get("case_sensitive") or ext.get("case_sensitive")),
            bool(e.get("enabled", True)),
        )

    @classmethod
    def from_world_entry(cls, e: Mapping[str, Any]) -> Matchable:
        """A World Info file entry (``entries["<uid>"]``)."""
        return cls(
            tuple(e.get("key") or ()),
            tuple(e.get("keysecondary") or ()),
            bool(e.get("selective")),
            int(e.get("selectiveLogic") or AND_ANY),
            bool(e.get("constant")),
            bool(e.get("matchWholeWords")),
            bool(e.get("caseSensitive")),
            not e.get("disable", False),
        )


def fires(entry: Matchable, text: str) -> str | None:
    """The primary key that makes SillyTavern fire ``entry`` on ``text`` (``"<constant>"``
    for a constant entry), or None."""
    if not entry.enabled:
        return None
    if entry.constant:
        return "<constant>"

    def found(k: str) -> bool:
        return key_matches(k, text, whole=entry.whole_words, case=entry.case_sensitive)

    primary = next((k for k in entry.keys if found(k)), None)
    if primary is None:
        return None
    if not (entry.selective and entry.secondary):
        return primary
    hits = [found(k) for k in entry.secondary]
    ok = {
        AND_ANY: any(hits),
        NOT_ALL: not all(hits),
        NOT_ANY: not any(hits),
        AND_ALL: all(hits),
    }.get(entry.logic, any(hits))
    return primary if ok else None


@dataclass
class LintEntry:
    """One entry to lint: whose it is, a label for the report, and how it matches."""

    person: str
    label: str
    match: Matchable


@dataclass
class Finding:
    label: str
    person: str
    key: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"entry": self.label, "person": self.person, "key": self.key, "message": self.text}


@dataclass
class LintReport:
    entries: int
    messages: int
    fires: int = 0
    false: list[Finding] = field(default_factory=list)
    mentioned: int = 0  # (message, person) pairs labelled where the person has an entry
    reached: int = 0  # of those, how many her entry fires on

    @property
    def false_rate(self) -> float:
        return len(self.false) / self.fires if self.fires else 0.0

    @property
    def reach(self) -> float:
        return self.reached / self.mentioned if self.mentioned else 0.0

    def line(self) -> str:
        return (
            f"lorebook key lint: {self.entries} entries x {self.messages} messages: "
            f"{self.fires} firings, {len(self.false)} false "
            f"({self.false_rate:.1%}, limit {MAX_FALSE_RATE:.0%}); fires for "
            f"{self.reached}/{self.mentioned} people mentioned ({self.reach:.1%})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "messages": self.messages,
            "fires": self.fires,
            "false_triggers": len(self.false),
            "false_rate": round(self.false_rate, 4),
            "max_false_rate": MAX_FALSE_RATE,
            "mentioned": self.mentioned,
            "reached": self.reached,
            "findings": [f.to_dict() for f in self.false],
        }


def lint(
    entries: Sequence[LintEntry],
    records: Iterable[Mapping[str, Any]],
    person_of: Callable[[str], str],
) -> LintReport:
    """Run every entry over every labelled message (``records``: ``{"text", "mentions":
    [{"id"}]}``); ``person_of`` maps a labelled operator id to the person id entries use
    (her base form, her graph node). A record's ``unjudged`` ids are people its labels say
    nothing about (the operator a message is written to, whom the sets do not label): their
    entries are neither counted nor judged on it."""
    records = list(records)
    rep = LintReport(len(entries), len(records))
    people = {e.person for e in entries}
    for rec in records:
        text = rec["text"]
        there = {person_of(m["id"]) for m in rec.get("mentions") or ()}
        unjudged = {person_of(i) for i in rec.get("unjudged") or ()} - there
        rep.mentioned += len(there & people)
        reached: set[str] = set()
        for e in entries:
            if e.person in unjudged:
                continue
            key = fires(e.match, text)
            if key is None:
                continue
            rep.fires += 1
            if e.person in there:
                reached.add(e.person)
            else:
                rep.false.append(Finding(e.label, e.person, key, text))
        rep.reached += len(reached)
    return rep


__all__ = [
    "AND_ALL",
    "AND_ANY",
    "MAX_FALSE_RATE",
    "NOT_ALL",
    "NOT_ANY",
    "Finding",
    "LintEntry",
    "LintReport",
    "Matchable",
    "fires",
    "key_matches",
    "lint",
]
