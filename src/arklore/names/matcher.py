"""Operator-name mention detection in Chinese chat text.

One Aho-Corasick automaton (``ahocorasick_rs``) holds every alias key *and* every blocking word
of the stoplist (:mod:`arklore.names.rules`); one leftmost-longest pass over the folded text yields
candidates, so 假日威龙陈 is one mention (not also 陈), 黑键 is not 黑, and 今年 is a word, not 年.
Candidates for names that are also ordinary words then go through the rules in
:mod:`arklore.names.rules`.

Context (``find(text, context)``) is a :class:`MentionContext` or a plain dict with the same keys::

    {"speaking_to": "char_010_chen",          # id or name, or a list of them
     "history": ["earlier message", ...],     # earlier messages of the same conversation
     "known_ids": ["char_2014_nian"]}         # ids the caller already knows were mentioned

An operator being talked to, mentioned earlier, or known, makes its risky names count as names.

Offsets are offsets into the original ``text`` (folding is length-preserving).  An ambiguous
surface (several operators at the deciding source) yields a mention with ``char_id=None`` and the
ids in ``candidates``: the matcher never picks silently.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from ahocorasick_rs import AhoCorasick, MatchKind

from arklore.core.operators import Alias, Operator
from arklore.names import rules
from arklore.names.aliases import AliasTable, aliases_from_operators, fold
from arklore.names.rules import RuleConfig


class AliasKind(IntEnum):
    """How an alias key is matched (an int so the hot loop compares plain integers)."""

    PLAIN = 0  # accepted wherever found
    RISKY = 1  # also an ordinary word: the rules decide
    LATIN = 2  # ASCII letters/digits: word boundaries apply
    BARE = 4  # a risky single character the rules accept unless a numeral precedes it


PLAIN, RISKY, LATIN, BARE = AliasKind.PLAIN, AliasKind.RISKY, AliasKind.LATIN, AliasKind.BARE
_KIND = {"plain": PLAIN, "risky": RISKY, "latin": LATIN}
_HOW: dict[int, str] = {PLAIN: "exact", LATIN: "latin", BARE: "bare_rare"}  # by plain int kind


@dataclass(slots=True)
class Mention:
    """One operator mention: ``text[start:end] == surface``."""

    char_id: str | None  # None when the surface is ambiguous (see ``candidates``)
    surface: str
    start: int
    end: int
    how: str  # exact | latin | bare_rare | honorific | context | vocative | coordination | ...
    candidates: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MentionContext:
    """Who is being talked to and what was said before, for disambiguation."""

    speaking_to: tuple[str, ...] = ()
    history: tuple[str, ...] = ()
    known_ids: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def coerce(cls, ctx: MentionContext | Mapping[str, Any] | None) -> MentionContext | None:
        if ctx is None or isinstance(ctx, MentionContext):
            return ctx
        if not isinstance(ctx, Mapping):
            raise TypeError(f"context must be a MentionContext or a dict, not {type(ctx).__name__}")
        return cls(
            speaking_to=_as_tuple(ctx.get("speaking_to")),
            history=_as_tuple(ctx.get("history")),
            known_ids=frozenset(_as_tuple(ctx.get("known_ids"))),
        )


def _as_tuple(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(str(x) for x in v)


#: ASCII letters and digits: a Latin alias must not touch one (``isascii() and isalnum()``)
_WORD_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class MentionMatcher:
    """Finds operator mentions; build once, call :meth:`find` many times.

    Speed (per MB of the bench's chat text, ~185 ms in all, ~5.4 M chars/s): fold ~12 ms;
    the automaton walk ~55-65 ms, for ~100k hits; keeping the ~24k alias hits ~8 ms; the rules
    and ~15k :class:`Mention` objects ~65 ms; the garbage collector, set off by those
    allocations, the rest.  The automaton is ``ahocorasick_rs`` (Rust): it searches the ``str``
    itself and returns ``(pattern, start, end)`` in *character* offsets, about twice as fast
    as pyahocorasick (which needed a UTF-8 byte trick and byte-to-character bookkeeping).
    Patterns are numbered non-Latin aliases, then Latin aliases, then blocking words, so one
    comprehension keeps alias hits with integer comparisons (blocking words are ~3 hits in 4)
    and checks word boundaries only for Latin hits; what is known about a pattern (kind, ids,
    key, …) sits in lists indexed by its number.  Most risky candidates are ordinary words that
    no signal accepts, so :func:`rules.decide` only sees those that pass a cheap gate (see
    :meth:`_decide_all`), and the repeat rule skips a dropped name at once when its neighbour
    mentions lie beyond the newlines around it (see :meth:`_repeat`: linear in the text).
    """

    def __init__(self, table: AliasTable, config: RuleConfig | None = None) -> None:
        self.table = table
        self.config = cfg = config or RuleConfig()
        aliases = self._alias_entries(table, cfg)
        kinds = {key: kind for kind, key, _ids in aliases}
        blockers = self._blocking_words(kinds) if cfg.stoplist else []
        self.n_aliases = len(aliases)
        self.n_stopwords = len(blockers)
        self._n_latin = sum(1 for kind, _k, _i in aliases if kind == LATIN)
        # per-pattern data, indexed by the automaton's pattern number (aliases only)
        self._kind = [int(kind) for kind, _k, _i in aliases]  # plain ints: hot loop
        self._key = [key for _k, key, _i in aliases]
        self._ids = [ids for _k, _key, ids in aliases]
        self._cid = [ids[0] if len(ids) == 1 else None for ids in self._ids]
        #: ids plus their base forms: what a context must share to accept the name (signal 4)
        self._ids_ctx = [ids + tuple(table.base_of(x) for x in ids) for ids in self._ids]
        #: a risky key that signal 9 can still accept (only titles, e.g. 姐: see ``BARE``)
        self._bare = [cfg.bare_rare and rules.bare_ok(key) for key in self._key]
        self._has_risky = RISKY in self._kind
        self._gate = rules.make_gate(cfg)
        self._empty = not aliases
        if not self._empty:
            self._ac = AhoCorasick(self._key + blockers, matchkind=MatchKind.LeftmostLongest)

    @staticmethod
    def _alias_entries(
        table: AliasTable, cfg: RuleConfig
    ) -> list[tuple[AliasKind, str, tuple[str, ...]]]:
        """(kind, key, ids) of every decided alias key, Latin ones last (see class docstring).

        A risky single-character key that signal 9 accepts anyway becomes ``BARE``: accepted
        unless a numeral precedes it, without a rule call.
        """
        out = []
        for key in table.surfaces():
            ids = table.decided_ids(key)
            if not ids:
                continue
            kind = _KIND[rules.classify(key)]
            if kind == RISKY and cfg.bare_rare and rules.bare_ok(key) and not rules.is_title(key):
                kind = BARE
            out.append((kind, key, ids))
        out.sort(key=lambda entry: entry[0] == LATIN)  # stable: keeps the table's order
        return out

    @staticmethod
    def _blocking_words(kinds: Mapping[str, int]) -> list[str]:
        """Folded stoplist words that are not alias keys themselves (signal 1), sorted."""
        risky = frozenset(k for k, v in kinds.items() if v in (RISKY, BARE))
        plain = frozenset(k for k, v in kinds.items() if v == PLAIN)
        words = {fold(w) for w in rules.build_stoplist(risky, plain)}
        return sorted(words.difference(kinds))

    # ----------------------------------------------------------------------------------------
    def _hits(self, t: str) -> list[tuple[int, int, int]]:
        """Leftmost-longest alias hits in folded text ``t`` as (pattern, start, end).

        The hot loop of the matcher, kept to one comprehension: a blocking-word hit (most hits)
        costs two comparisons, a non-Latin alias hit one, and only Latin hits (pattern numbers
        ``n_other .. n_aliases - 1``) have their word boundaries checked.
        """
        hits = self._ac.find_matches_as_indexes(t)
        n_alias, n_other = self.n_aliases, self.n_aliases - self._n_latin
        if n_other == n_alias:
            return [h for h in hits if h[0] < n_alias]
        n, word = len(t), _WORD_CHARS
        return [
            h
            for h in hits
            if h[0] < n_other
            or (
                h[0] < n_alias
                and (h[1] == 0 or t[h[1] - 1] not in word)
                and (h[2] == n or t[h[2]] not in word)
            )
        ]

    def _candidates(self, t: str) -> list[tuple[int, int, int, tuple[str, ...], str]]:
        """The hits of :meth:`_hits` as (start, end, kind, ids, key), for tests and tools."""
        kinds, idss, keys = self._kind, self._ids, self._key
        return [(s, e, kinds[p], idss[p], keys[p]) for p, s, e in self._hits(t)]

    def _context_ids(self, ctx: MentionContext | None) -> frozenset[str]:
        if ctx is None:
            return frozenset()
        ids: set[str] = set(ctx.known_ids)
        for who in ctx.speaking_to:
            if who.startswith("char_"):
                ids.add(who)
            else:
                ids.update(self.table.resolve(who).ids)
        if ctx.history:
            inner = MentionContext(speaking_to=ctx.speaking_to, known_ids=ctx.known_ids)
            for msg in ctx.history:
                for m in self.find(msg, inner):
                    ids.update(m.candidates)
        ids |= {self.table.base_of(i) for i in ids}
        return frozenset(ids)

    def find(
        self, text: str, context: MentionContext | Mapping[str, Any] | None = None
    ) -> list[Mention]:
        """Mentions in ``text``, left to right, non-overlapping.

        ``text`` may hold many messages, one per line: the vocative and repeat rules work per
        line.  ``context`` applies to all of it.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        if not text or self._empty:
            return []
        t = fold(text)
        cands = self._hits(t)
        if not cands:
            return []
        if not self._has_risky:
            return self._accept(text, t, cands)
        return self._decide_all(text, t, cands, context)

    def _accept(self, text: str, t: str, cands: list[tuple[int, int, int]]) -> list[Mention]:
        """No risky name in the inventory: every candidate is a mention (bare: unless numeral)."""
        numerals = rules.NUMERAL_CHARS if self.config.numeral else frozenset()
        how_of, kinds, cids, idss = _HOW, self._kind, self._cid, self._ids
        return [
            Mention(cids[p], text[s:e], s, e, how_of[kinds[p]], idss[p])
            for p, s, e in cands
            if not (kinds[p] == BARE and s > 0 and t[s - 1] in numerals)
        ]

    def _decide_all(
        self,
        text: str,
        t: str,
        cands: list[tuple[int, int, int]],
        context: MentionContext | Mapping[str, Any] | None,
    ) -> list[Mention]:
        """Run the rules on risky candidates; the others are accepted as they are.

        A risky candidate goes to :func:`rules.decide` only when some signal could accept it:
        a context, a bare-rare key, or the gate of :func:`rules.make_gate` (a neighbour character
        some signal looks at, or a game cue nearby).  Otherwise ``decide`` would try every
        signal and return None (3 of 4 risky candidates in chat text), so the candidate is
        dropped here.  Neighbours are passed to ``decide`` as ints (end of the previous
        candidate, start of the next, end of the last accepted mention; -1 when none).
        """
        cfg = self.config
        decide, gate = rules.decide, self._gate
        kinds, keys, cids, idss, ids_ctx, bare = (
            self._kind, self._key, self._cid, self._ids, self._ids_ctx, self._bare
        )  # fmt: skip
        numerals = rules.NUMERAL_CHARS if cfg.numeral else frozenset()
        repeat, title = cfg.repeat, cfg.title
        how_of = _HOW
        ctx_ids: frozenset[str] | None = None
        out: list[Mention] = []
        append = out.append
        dropped: list[tuple[int, int, int, tuple[str, ...]]] = []
        last = len(cands) - 1
        prev_end = -1
        for i, (p, s, e) in enumerate(cands):
            kind = kinds[p]
            if kind == RISKY:
                if ctx_ids is None:
                    ctx_ids = self._context_ids(MentionContext.coerce(context))
                if ctx_ids or bare[p] or gate(t, s, e):
                    next_start = cands[i + 1][1] if i < last else -1
                    ids = ids_ctx[p] if ctx_ids else idss[p]
                    named_end = out[-1].end if out else -1
                    how = decide(
                        t, s, e, keys[p], ids, prev_end, next_start, ctx_ids, cfg, named_end
                    )
                else:
                    how = None
                if how is None:
                    if repeat and not (title and prev_end == s):
                        dropped.append((len(out), s, e, idss[p]))
                    prev_end = e
                    continue
            elif kind == BARE and s > 0 and t[s - 1] in numerals:
                prev_end = e
                continue
            else:
                how = how_of[kind]
            prev_end = e
            append(Mention(cids[p], text[s:e], s, e, how, idss[p]))
        if dropped and out:
            out = self._repeat(t, text, out, dropped)
        return out

    @staticmethod
    def _repeat(
        t: str,
        text: str,
        out: list[Mention],
        dropped: list[tuple[int, int, int, tuple[str, ...]]],
    ) -> list[Mention]:
        """Signal 13: a dropped risky name whose operator is accepted on the same line.

        ``dropped`` holds ``(k, start, end, ids)`` where ``k`` is ``len(out)`` when the name was
        dropped: the mentions before it are ``out[:k]``.  A mention before the name shares its
        line when no newline lies between the mention's end and the name's start, one after
        it when none lies between the name's end and the mention's start.

        Linear in the text and the mentions (walking outwards from every dropped name over the
        mentions of its line was quadratic: a 1 MB message without a newline took two
        minutes).  The bounds of the name's line come from newline searches that never cover
        a character twice: backwards from the name to the previous dropped name, forwards from
        the name only once the previous search's newline is behind it.  Most dropped names
        are ordinary words on a line whose neighbour mentions lie beyond those bounds: skipped
        at once.  Otherwise the mentions of the line are found by bisection and their
        operators put in a set, once per line.
        """
        merged: list[Mention] = []
        done = 0  # out[:done] is in merged
        n_out, n = len(out), len(t)
        rfind, find = t.rfind, t.find
        line_start = searched = 0  # t[:searched] was searched backwards for newlines
        line_end = -1  # the first newline at or after the last name's end (n: none)
        starts: list[int] = []
        ends: list[int] = []
        on_line: dict[tuple[int, int], set[tuple[str, ...]]] = {}
        for k, s, e, ids in dropped:
            nl = rfind("\n", searched, s)
            if nl >= 0:
                line_start = nl + 1
            searched = s
            if line_end < e:
                line_end = find("\n", e)
                if line_end < 0:
                    line_end = n
            if (k == 0 or out[k - 1].end < line_start) and (k == n_out or out[k].start > line_end):
                continue  # no accepted mention on this line (the common case)
            if not starts:
                starts = [m.start for m in out]
                ends = [m.end for m in out]
            span = (bisect_left(ends, line_start), bisect_right(starts, line_end))
            seen = on_line.get(span)
            if seen is None:
                seen = on_line[span] = {m.candidates for m in out[span[0] : span[1]]}
            if ids in seen:
                merged += out[done:k]
                done = k
                cid = ids[0] if len(ids) == 1 else None
                merged.append(Mention(cid, text[s:e], s, e, "repeat", ids))
        if not merged:
            return out
        merged += out[done:]
        return merged


def build_matcher(
    aliases: Iterable[Alias] = (),
    *,
    operators: Sequence[Operator] | None = None,
    config: RuleConfig | None = None,
) -> MentionMatcher:
    """A matcher from alias lists and/or a registry's operators (tests, tools without a store;
    pass the user file's aliases in ``aliases`` when they should count)."""
    items = list(aliases)
    if operators is not None:
        items += aliases_from_operators(operators)
    return MentionMatcher(AliasTable(items), config)
