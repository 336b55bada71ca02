"""Lorebook keys that SillyTavern can match in Chinese chat without firing on the wrong words.

SillyTavern fires a World Info / character-book entry when one of its keys occurs in the recent
chat: a case-insensitive substring test. "Match whole words" wraps a key in JavaScript's
``(?:^|\\W)…(?:$|\\W)``, and every CJK character is a ``\\W`` there, so for Chinese it changes
nothing (it only stops a key touching ASCII letters or digits). A Chinese name that is also a
word (空 in 空气, 年 in 今年, 银灰 in 银灰色, 陈 in 陈旧) or part of another name (红 in 红豆)
therefore fires where nobody meant that person.

**The rule** (:class:`KeyMaker`). A name of a person is *unsafe* as a key when

* it is a name the names layer treats as a word (:func:`arklore.names.rules.classify`:
  every single character — except one that is rarely a word on its own and sits inside no
  dictionary word and no other name, such as 吽 — and any name jieba's dictionary lists as a
  word), or
* it occurs inside a dictionary word or a hand-listed chat word (``data/name_stopwords.txt``,
  the names layer's blocking words), or
* it occurs inside a name of another person (陈 is inside nobody else's, 红 is inside 红豆), or
* it is Latin and shorter than :data:`MIN_LATIN` characters (W).

An entry whose keys are all safe is a plain entry. An entry with an unsafe key is
``selective``, in one of two ways.

*Blocking words* (logic NOT ANY: fire unless a secondary key occurs), when every unsafe name
is a single character the names layer accepts wherever its blocking words do not claim it
(signal 9 of :mod:`arklore.names.rules`: 夕, 黍, 陈 — rare as words on their own, or
surnames): the secondary keys are exactly those blocking words — every dictionary or chat word
containing the name (夕阳, 七夕, 除夕; 陈旧, 陈列) and every other name containing it — the
names layer's stoplist compiled into SillyTavern's own logic (longer words that contain a
shorter blocker are left out: 陈列 blocks 陈列室).

*Confirmations* (logic AND ANY: fire only when a secondary key occurs too) otherwise. The
secondary keys are her safe names and *confirmations* of each unsafe
name, built from the names layer's own evidence that a name is a person
(:mod:`arklore.names.rules`): a title after it (陈sir, 年姐, 夕小姐), ``@`` before it, a word
whose object is a person before it (和陈, 陪年), a person noun after ``的`` (银灰的妹妹), and for
names of two or more characters a verb that takes a person as subject (银灰说). A person of
the story who is not an operator gets confirmations only when her name is not itself a word
(桑尼 may be confirmed; 主教 or 奶奶 is nobody in particular and gets no entry). A
confirmation is dropped when it could itself be part of something else: when it occurs in a
dictionary word (空姐, 同年) or in another person's name; when it puts text before a name
that starts a dictionary word or another name (和红 would fire on 和红豆, 和年 on 和年轻人);
when it puts text after a name that ends a dictionary word or another name (年姐 would fire on
今年姐姐回家). An unsafe name with no confirmation left is reached only through her other
names. A person with neither a safe name nor a confirmation gets no entry (listed, with why).

Entries with a Latin key match whole words (``match_whole_words``: W is not the w in WWDC);
their confirmations that touch ASCII (陈sir) are primary keys too, since the whole-word test
would stop the bare name there.

``arklore export lint`` (:mod:`arklore.cards.lint`) measures what this rule lets through on
the names layer's labelled chat messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import ahocorasick

from arklore.cards.lint import AND_ANY, NOT_ANY
from arklore.names import rules
from arklore.names.aliases import AliasTable, fold

MIN_LATIN = 3
"""A Latin key shorter than this (W, Ex) is unsafe even as a whole word."""

AFTER_WORD_FREQ = 50
"""A confirmation that adds text after a name is dropped when a word at least this frequent
ends with the name (年姐 in 今年姐姐); rarer words (乏善可陈) do not cost 陈 its 陈警官. One
that adds text before a name is dropped when any dictionary word starts with the name (和年 in
和年轻人, 和暴雨 in 和暴雨天), except ``@``."""

SKIP_PREFIX = "$"
"""Alias-table surfaces that are script ids (``$avatar_chen2``), never written in chat."""

_ASCII = re.compile(r"[0-9a-z]")


_EDGE_MARKS = "\"'“”‘’「」『』《》〈〉（）()【】[]？?！!。，,、…~～·：: \u3000"


def topic_key(title: str) -> str:
    """A stage or event title as a key: folded, quotes and punctuation at its ends removed
    (“降临” -> 降临, 逃票？ -> 逃票), since a chat message does not repeat them."""
    return fold(title.strip().strip(_EDGE_MARKS))


def is_latin(key: str) -> bool:
    return _ASCII.search(key) is not None


@dataclass(frozen=True)
class Person:
    """Someone a lorebook entry is about: a graph node id and the names she is called by."""

    id: str
    names: tuple[str, ...]
    operator: bool = True


@dataclass
class KeySet:
    """The keys of one person's entry (see the module doc)."""

    person: str
    keys: list[str]
    secondary: list[str] = field(default_factory=list)
    whole_words: bool = False
    unsafe: dict[str, str] = field(default_factory=dict)  # name -> why it needs confirming
    unreachable: list[str] = field(default_factory=list)  # unsafe names with no confirmation
    logic: int = AND_ANY  # AND_ANY: a confirmation must occur; NOT_ANY: no blocking word may

    @property
    def selective(self) -> bool:
        return bool(self.secondary)

    @property
    def empty(self) -> bool:
        return not self.keys or (bool(self.unsafe) and not self.secondary and self.logic == AND_ANY)

    def why_empty(self) -> str:
        if not self.keys:
            return "no name usable as a key"
        return "every name is an ordinary word or part of another name, with no safe confirmation"


@cache
def _words() -> tuple[tuple[str, int], ...]:
    """Dictionary and chat words a key could sit inside, with their frequency: jieba's (at
    least the names layer's STOP_FREQ_MIN) and the hand list (counted as common), folded."""
    freq = rules.word_freqs()
    words = {fold(w): f for w, (f, _pos) in freq.items() if f >= rules.STOP_FREQ_MIN and len(w) > 1}
    for w in rules.extra_stopwords():
        if len(w) > 1:
            words[fold(w)] = max(words.get(fold(w), 0), rules.HONORIFIC_WORD_KEEP)
    return tuple(sorted(words.items()))


@dataclass
class _Hosts:
    """The most frequent longer word containing a key, starting with it, ending with it."""

    inside: tuple[str, int] = ("", 0)
    starts: tuple[str, int] = ("", 0)
    ends: tuple[str, int] = ("", 0)
    words: list[str] = field(default_factory=list)  # every host word (``collect`` keys only)


def _automaton(words: Iterable[str]) -> ahocorasick.Automaton:
    """An automaton that finds each of ``words`` (its value: the word itself)."""
    auto = ahocorasick.Automaton()
    for w in words:
        auto.add_word(w, w)
    auto.make_automaton()
    return auto


def word_hosts(keys: Iterable[str], collect: Iterable[str] = ()) -> dict[str, _Hosts]:
    """For each key, the most frequent longer dictionary word containing it, starting with
    it and ending with it, and for the keys in ``collect`` every word containing it (one
    scan of the dictionary for all keys)."""
    collect = set(collect)
    keys = {k for k in keys if k and not is_latin(k)}
    out = {k: _Hosts() for k in keys}
    if not keys:
        return out
    auto = _automaton(keys)
    for word, f in _words():
        for end, k in auto.iter(word):
            if len(word) == len(k):
                continue
            h = out[k]
            if k in collect:
                h.words.append(word)
            if f > h.inside[1]:
                h.inside = (word, f)
            if end + 1 == len(k) and f > h.starts[1]:
                h.starts = (word, f)
            if end == len(word) - 1 and f > h.ends[1]:
                h.ends = (word, f)
    return out


def people_from_table(table: AliasTable) -> list[Person]:
    """Every operator of an alias table as one person (alternate forms folded into the base
    form), with every surface the table decides for her alone."""
    names: dict[str, list[str]] = {}
    for key in table.surfaces():
        ids = table.decided_ids(key)
        if len(ids) == 1 and not key.startswith(SKIP_PREFIX):
            names.setdefault(table.base_of(ids[0]), []).append(key)
    return [Person(pid, tuple(sorted(set(ns)))) for pid, ns in sorted(names.items())]


class KeyMaker:
    """Keys for each of ``people`` (see the module doc); build once per lorebook: it scans
    the dictionary once for all names and confirmations."""

    def __init__(self, people: Sequence[Person], topics: Iterable[str] = ()) -> None:
        self.people = {p.id: p for p in people}
        self._topics = sorted({k for t in topics if (k := topic_key(t))})
        self._owners: dict[str, set[str]] = {}
        for p in people:
            for n in p.names:
                self._owners.setdefault(fold(n), set()).add(p.id)
        self._all_names = list(self._owners)
        self._bare = {n for n in self._all_names if _bare(n)}
        self._hosts = word_hosts([*self._all_names, *self._topics], collect=self._bare)
        self._containers = _containers(self._all_names)
        self._unsafe = {n: self._why_unsafe(n) for n in self._all_names}
        self._topic_in_names = _first_container(self._topics, self._all_names)
        forms = {c for n, why in self._unsafe.items() if why for c, _ in self._forms(n)}
        self._form_hosts = word_hosts(forms)
        self._sets: dict[str, KeySet] = {}

    # -- names ----------------------------------------------------------------------------------
    def _others_containing(self, key: str) -> list[str]:
        """Names of other people that contain ``key`` (longer than it)."""
        owners = self._owners.get(key, set())
        return [n for n in self._containers.get(key, ()) if not self._owners[n] & owners]

    def _why_unsafe(self, name: str) -> str:
        if is_latin(name):
            if len(name) < MIN_LATIN:
                return f"Latin, shorter than {MIN_LATIN} characters"
            return ""
        hosts = self._hosts.get(name)
        others = self._others_containing(name)
        if rules.classify(name) == "risky":
            if name in self._bare and not _hosts_inside(hosts) and not others:
                return ""  # 吽: rarely a word on its own, and inside no word or name
            return "a single character" if len(name) == 1 else "a dictionary word"
        if hosts is not None and hosts.inside[1]:
            return f"inside the word {hosts.inside[0]}"
        if others:
            return f"inside the name {others[0]}"
        return ""

    def topic_unsafe(self, topic: str) -> str:
        """Why a place or event name (one of ``topics``) cannot key a memory entry: too short,
        a dictionary word, inside one, or inside a person's name; "" when it can. Memory
        entries get no confirmations: a topic that is unsafe is left out."""
        t = topic_key(topic)
        if len(t) < 2 or (is_latin(t) and len(t) < MIN_LATIN):
            return "too short"
        if is_latin(t):
            return ""
        if rules.classify(t) == "risky":
            return "a dictionary word"
        hosts = self._hosts.get(t)
        if hosts is None:
            return "not a stage title"  # only titles scanned at construction are known
        if hosts.inside[1]:
            return f"inside the word {hosts.inside[0]}"
        inside = self._topic_in_names.get(t)
        if inside:
            return f"inside the name {inside}"
        return ""

    # -- confirmations -------------------------------------------------------------------------
    @staticmethod
    def _forms(name: str) -> list[tuple[str, str]]:
        """Candidate confirmations of ``name``: (form, "before"|"after"|"both") — which side
        of the name the added text is on."""
        out = [(name + h, "after") for h in rules.HONORIFIC_SUFFIXES]
        out += [(p + name, "before") for p in rules.ADDRESS_PREFIXES]
        out += [(p + name, "before") for p in rules.PERSON_PRECEDERS_STRONG]
        out += [(f"{name}的{n}", "after") for n in rules.PERSON_NOUNS]
        if len(name) > 1:
            out += [(name + s, "after") for s in rules.SUBJECT_FOLLOWERS]
        return [(fold(f), side) for f, side in out]

    def confirmations(self, name: str) -> list[str]:
        """The confirmations of an unsafe ``name`` that survive the checks of the module doc."""
        hosts = self._hosts.get(name, _Hosts())
        longer_names = self._others_containing(name)
        starts_other = any(n.startswith(name) for n in longer_names)
        ends_other = any(n.endswith(name) for n in longer_names)
        out = []
        for form, side in self._forms(name):
            if side == "before" and (starts_other or (
                hosts.starts[1] and not form.startswith(("@", "＠"))
            )):  # fmt: skip
                continue
            if side == "after" and (
                ends_other or hosts.ends[1] >= AFTER_WORD_FREQ or rules.is_title(name)
            ):
                continue
            fh = self._form_hosts.get(form)
            if fh is not None and fh.inside[1]:
                continue
            if any(form in n for n in longer_names):
                continue
            out.append(form)
        return out

    # -- one person ----------------------------------------------------------------------------
    def keys(self, person_id: str) -> KeySet:
        hit = self._sets.get(person_id)
        if hit is not None:
            return hit
        p = self.people[person_id]
        names = [fold(n) for n in p.names if n and not n.startswith(SKIP_PREFIX)]
        names = list(dict.fromkeys(names))
        safe = [n for n in names if not self._unsafe.get(n, "")]
        unsafe = {n: self._unsafe[n] for n in names if self._unsafe.get(n, "")}
        ks = KeySet(person_id, safe + list(unsafe), unsafe=unsafe)
        ks.whole_words = any(is_latin(n) for n in names)
        if unsafe and p.operator and all(n in self._bare for n in unsafe):
            ks.logic = NOT_ANY  # 夕 unless 夕阳/七夕/除夕…: the names layer's blocking words
            blockers = [w for n in unsafe for w in self._hosts[n].words]
            blockers += [m for n in unsafe for m in self._others_containing(n)]
            ks.secondary = _minimal(set(blockers) - set(names))
        elif unsafe:
            confirms: list[str] = []
            for n in unsafe:
                # a person of the story who is not an operator is confirmed only when her
                # name is not itself a word (桑尼 yes, 主教/奶奶 no: nobody in particular)
                word = rules.classify(n) == "risky"
                c = self.confirmations(n) if p.operator or not word else []
                if not c:
                    ks.unreachable.append(n)
                confirms += c
            ks.secondary = list(dict.fromkeys(safe + confirms))
            if ks.whole_words:  # a confirmation touching ASCII: the bare name would not match
                ks.keys += [c for c in confirms if c not in ks.keys and _touches_ascii(c, unsafe)]
        self._sets[person_id] = ks
        return ks

    def all(self) -> dict[str, KeySet]:
        return {pid: self.keys(pid) for pid in self.people}


def _hosts_inside(h: _Hosts | None) -> bool:
    return h is not None and h.inside[1] > 0


def _minimal(words: Iterable[str]) -> list[str]:
    """``words`` without those that contain another of them (陈列室 goes when 陈列 stays): a
    blocking word already blocks every longer word around it. Shortest first."""
    kept: list[str] = []
    for w in sorted(set(words), key=lambda x: (len(x), x)):
        if not any(k in w for k in kept):
            kept.append(w)
    return kept


def _bare(name: str) -> bool:
    """A single character the names layer accepts as a name wherever its blocking words do
    not claim it (signal 9 of :mod:`arklore.names.rules`: 夕, 黍, 陈 …), titles excepted."""
    return (
        len(name) == 1 and not is_latin(name) and rules.bare_ok(name) and not rules.is_title(name)
    )


def _containers(names: Sequence[str]) -> dict[str, list[str]]:
    """name -> the longer names that contain it (one automaton pass over the names)."""
    out: dict[str, list[str]] = {}
    if not names:
        return out
    auto = _automaton(names)
    for m in names:
        for _end, k in auto.iter(m):
            if k != m:
                out.setdefault(k, []).append(m)
    return {k: sorted(set(v)) for k, v in out.items()}


def _first_container(keys: Sequence[str], texts: Sequence[str]) -> dict[str, str]:
    """key -> the first (sorted) of ``texts`` that holds it and is longer (one pass)."""
    if not keys or not texts:
        return {}
    auto = _automaton(keys)
    out: dict[str, str] = {}
    for text in sorted(texts):
        for _end, k in auto.iter(text):
            if len(text) > len(k):
                out.setdefault(k, text)
    return out


def _touches_ascii(form: str, names: Mapping[str, str]) -> bool:
    for n in names:
        i = form.find(n)
        if i < 0:
            continue
        before = form[i - 1] if i > 0 else ""
        after = form[i + len(n)] if i + len(n) < len(form) else ""
        if (before and is_latin(before)) or (after and is_latin(after)):
            return True
    return False


__all__ = [
    "MIN_LATIN",
    "KeyMaker",
    "KeySet",
    "Person",
    "is_latin",
    "people_from_table",
    "topic_key",
    "word_hosts",
]
