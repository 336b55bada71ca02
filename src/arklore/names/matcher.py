"""Operator-name mention detection in Chinese chat text.

One Aho-Corasick automaton (pyahocorasick) holds every alias key *and* every blocking word of the
stoplist (:mod:`arklore.names.rules`); one leftmost-longest pass over the folded text yields
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

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from arklore.names import rules
from arklore.names.aliases import AliasTable, fold
from arklore.names.rules import RuleConfig

PLAIN, RISKY, LATIN, STOP, BARE = 0, 1, 2, 3, 4
_KIND = {"plain": PLAIN, "risky": RISKY, "latin": LATIN}
_HOW = {PLAIN: "exact", LATIN: "latin", BARE: "bare_rare"}
#: UTF-8 continuation bytes: deleting them from a byte slice leaves one byte per character
_CONT = bytes(range(0x80, 0xC0))


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


def _latin1(s: str) -> str:
    """UTF-8 bytes of ``s`` as a str of code points 0-255 (see :class:`MentionMatcher`)."""
    return s.encode("utf-8").decode("latin-1")


class MentionMatcher:
    """Finds operator mentions; build once, call :meth:`find` many times.

    Speed: pyahocorasick looks a character up among a node's children linearly, and the root has
    one child per distinct first character of ~12k keys (aliases + blocking words), which made
    the search ~0.5 s/MB.  The automaton is therefore built over UTF-8 *bytes* (each key and the
    text re-read as latin-1), where every node has at most a few dozen children; UTF-8 is
    self-synchronising, so byte matches are always whole-character matches.  Byte offsets are
    turned back into character offsets incrementally.
    """

    def __init__(self, table: AliasTable, config: RuleConfig | None = None) -> None:
        self.table = table
        self.config = cfg = config or RuleConfig()
        self._auto = ahocorasick.Automaton()
        self._has_risky = False
        kinds: dict[str, int] = {}
        for key in table.surfaces():
            ids = table.decided_ids(key)
            if not ids:
                continue
            kind = _KIND[rules.classify(key)]
            kinds[key] = kind
            if kind == RISKY and cfg.bare_rare and rules.bare_ok(key) and not rules.is_title(key):
                kind = BARE  # accepted unless a numeral precedes it: no rule call needed
            self._auto.add_word(_latin1(key), (len(key.encode()), kind, ids, key, len(key)))
            self._has_risky |= kind == RISKY
        self.n_aliases = len(kinds)
        self.n_stopwords = 0
        if cfg.stoplist:
            risky = frozenset(k for k, v in kinds.items() if v == RISKY)
            plain = frozenset(k for k, v in kinds.items() if v == PLAIN)
            for word in rules.build_stoplist(risky, plain):
                w = fold(word)
                if w not in kinds:
                    # None, not a tuple: the scan skips the (many) blocker hits with one test
                    self._auto.add_word(_latin1(w), None)
                    self.n_stopwords += 1
        self._empty = self.n_aliases == 0
        if not self._empty:
            self._auto.make_automaton()

    # ----------------------------------------------------------------------------------------
    def _candidates(self, t: str) -> list[tuple[int, int, int, tuple[str, ...], str]]:
        """Leftmost-longest hits in folded text ``t`` as (start, end, kind, ids, key).

        The hot loop of the matcher: a blocker hit (most hits) costs one ``is None`` test, and
        byte offsets become character offsets by counting the non-continuation bytes since the
        previous hit (C-level ``translate``), only for alias hits.
        """
        raw = t.encode("utf-8")
        s = raw.decode("latin-1")
        out = []
        append = out.append
        n_t = len(t)
        word = _WORD_CHARS
        if len(raw) == n_t:  # pure ASCII: byte offsets are character offsets
            for bend, v in self._auto.iter_long(s):
                if v is None:
                    continue
                nb, kind, ids, key, nc = v
                start = bend - nb + 1
                end = start + nc
                if kind == LATIN and (
                    (start > 0 and t[start - 1] in word) or (end < n_t and t[end] in word)
                ):
                    continue
                append((start, end, kind, ids, key))
            return out
        pb = pc = 0
        cont = _CONT
        for bend, v in self._auto.iter_long(s):
            if v is None:
                continue
            nb, kind, ids, key, nc = v
            bstart = bend - nb + 1
            pc += len(raw[pb:bstart].translate(None, cont))
            pb = bstart
            end = pc + nc
            if kind == LATIN and ((pc > 0 and t[pc - 1] in word) or (end < n_t and t[end] in word)):
                continue
            append((pc, end, kind, ids, key))
        return out

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
        cands = self._candidates(t)
        if not cands:
            return []
        if not self._has_risky:
            return self._accept(text, t, cands)
        return self._decide_all(text, t, cands, context)

    def _accept(self, text: str, t: str, cands: list) -> list[Mention]:
        """No risky name in the inventory: every candidate is a mention (bare: unless numeral)."""
        numerals = rules.NUMERAL_CHARS if self.config.numeral else frozenset()
        how_of = _HOW
        return [
            Mention(ids[0] if len(ids) == 1 else None, text[s:e], s, e, how_of[kind], ids)
            for s, e, kind, ids, _key in cands
            if not (kind == BARE and s > 0 and t[s - 1] in numerals)
        ]

    def _decide_all(
        self,
        text: str,
        t: str,
        cands: list,
        context: MentionContext | Mapping[str, Any] | None,
    ) -> list[Mention]:
        """Run the rules on risky candidates; the others are accepted as they are.

        Neighbours are passed to :func:`rules.decide` as two ints (end of the previous
        candidate, start of the next; -1 when none) so no tuple is built per candidate.
        """
        cfg = self.config
        decide = rules.decide
        numerals = rules.NUMERAL_CHARS if cfg.numeral else frozenset()
        repeat, title = cfg.repeat, cfg.title
        how_of = _HOW
        ctx_ids: frozenset[str] | None = None
        out: list[Mention] = []
        append = out.append
        dropped: list[tuple[int, int, int, tuple[str, ...]]] = []
        last = len(cands) - 1
        prev_end = -1
        for i, (s, e, kind, ids, key) in enumerate(cands):
            if kind == RISKY:
                if ctx_ids is None:
                    ctx_ids = self._context_ids(MentionContext.coerce(context))
                ids_ctx = ids
                if ctx_ids:
                    ids_ctx = ids + tuple(self.table.base_of(x) for x in ids)
                next_start = cands[i + 1][0] if i < last else -1
                how = decide(t, s, e, key, ids_ctx, prev_end, next_start, ctx_ids, cfg)
                if how is None:
                    if repeat and not (title and prev_end == s):
                        dropped.append((len(out), s, e, ids))
                    prev_end = e
                    continue
            elif kind == BARE and s > 0 and t[s - 1] in numerals:
                prev_end = e
                continue
            else:
                how = how_of[kind]
            prev_end = e
            append(Mention(ids[0] if len(ids) == 1 else None, text[s:e], s, e, how, ids))
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
        """Signal 11: a dropped risky name whose operator is accepted on the same line.

        Most dropped names are words whose operator is accepted nowhere in the text: one set
        lookup skips them before the line is searched.
        """
        accepted = {m.candidates for m in out}
        starts = [m.start for m in out]
        extra: list[Mention] = []
        for _, s, e, ids in dropped:
            if ids not in accepted:
                continue
            lo = t.rfind("\n", 0, s) + 1
            hi = t.find("\n", e)
            if hi < 0:
                hi = len(t)
            j = bisect_left(starts, lo)
            while j < len(out) and starts[j] < hi:
                if out[j].candidates == ids:
                    cid = ids[0] if len(ids) == 1 else None
                    extra.append(Mention(cid, text[s:e], s, e, "repeat", ids))
                    break
                j += 1
        if not extra:
            return out
        return sorted(out + extra, key=lambda m: m.start)


# --- module-level default ---------------------------------------------------------------------
_DEFAULT: MentionMatcher | None = None


def build_matcher(
    aliases: Iterable[Any] | None = None,
    *,
    operators: Sequence[Any] | None = None,
    user_aliases: bool = True,
    config: RuleConfig | None = None,
) -> MentionMatcher:
    """A matcher from operators (registry) and/or alias lists, plus ``data/aliases.toml``."""
    from arklore.names.aliases import aliases_from_operators, load_user_aliases

    items = list(aliases or [])
    if operators is not None:
        items += aliases_from_operators(operators)
    if user_aliases:
        items += load_user_aliases()
    return MentionMatcher(AliasTable(items), config)


def default_matcher() -> MentionMatcher:
    """The process-wide matcher used by :func:`find_mentions`, built on first use.

    Until the store wires the real registry in (:func:`set_default_matcher`), it is built from
    the registry tables when ``ARKLORE_GAMEDATA`` is set, else from ``data/aliases.toml`` only.
    """
    global _DEFAULT
    if _DEFAULT is None:
        ops = None
        try:
            from arklore.config import Settings
            from arklore.names.registry import build_registry

            settings = Settings.from_env()
            if settings.gamedata is not None:
                ops = list(build_registry(settings.excel_root()))
        except Exception:  # noqa: BLE001 - a missing/broken registry must not break matching
            ops = None
        _DEFAULT = build_matcher(operators=ops)
    return _DEFAULT


def set_default_matcher(matcher: MentionMatcher | None) -> None:
    """Replace (or with None, reset) the matcher :func:`find_mentions` uses."""
    global _DEFAULT
    _DEFAULT = matcher


def find_mentions(
    text: str, context: MentionContext | Mapping[str, Any] | None = None
) -> list[Mention]:
    """Operator mentions in ``text`` using :func:`default_matcher`."""
    return default_matcher().find(text, context)
