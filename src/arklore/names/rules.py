"""Every rule that decides whether a name-shaped string in chat text is an operator mention.

All word lists and thresholds live here, each with its reason.  The matcher
(:mod:`arklore.names.matcher`) finds candidates with one Aho-Corasick pass (leftmost-longest) and
asks this module about the ones that need it.

Classes of alias (:func:`classify`)
-----------------------------------
* ``latin``  – contains ASCII letters/digits (W, Mon3tr, U-Official, appellations).  Matched
  case-insensitively after full-width folding, and only on word boundaries: the characters either
  side must not be ASCII letters or digits (so ``w`` in ``waw`` / ``WWDC`` / ``10w`` is not W).
  Chinese names never use word boundaries (Chinese has no spaces).
* ``risky``  – a Chinese alias that is also an ordinary word: every single-character name
  (陈 年 夕 令 空 红 山 …), and any longer name that jieba's dictionary lists as a word with
  frequency >= :data:`RISKY_WORD_FREQ` (银灰 "silver-grey", 初雪 "first snow", 真理 "truth", …).
* ``plain``  – everything else (阿米娅, 假日威龙陈, 恩希欧迪斯): accepted wherever found.

Signals for risky aliases (in the order they are tried)
--------------------------------------------------------
1. ``stoplist`` – word collisions.  Every jieba dictionary word (freq >= :data:`STOP_FREQ_MIN`)
   that contains a risky alias, plus the hand list ``data/name_stopwords.txt``, is put into the
   same automaton as a *blocker*; leftmost-longest then consumes 今年/年轻/空气/红色/山上/阿姨/
   夕阳/陈旧… as words, so the name inside is never a candidate.  This is segmentation compiled
   into the trie: it costs nothing at match time (running jieba per message would cap throughput
   far below 5 M chars/s).  Exceptions: words that are name+honorific (山哥) unless common as a
   word (空姐, freq >= :data:`HONORIFIC_WORD_KEEP`); words that contain a plain alias.
2. ``numeral`` (negative) – a single-character name right after a numeral or quantity word
   (2024年, 三年, 几年) is a measure word, never a name, whatever else says so.
3. ``honorific`` – a title/affix right after the name (陈sir, 陈警官, 年姐, 夕小姐, 令姐) or an
   ``@`` before it.
4. ``context`` – the operator is the one being talked to (``speaking_to``) or was detected in an
   earlier message of the conversation (``history``).
5. ``vocative`` – the name opens the message and is followed by a pause (``夕，…``, ``年！…``), or
   closes it after a comma (``画好了吗，夕？``), or is the whole message.  A message is a line
   of the text: a name opening the second line is as vocative as one opening the first.
6. ``coordination`` – joined to another candidate name by 和/与/跟/同/、 (年和夕, 初雪和崖心).
7. ``subject`` – followed by a verb or adverb that takes a person as subject (说 问 笑 在 又 还
   今天 …): 夕在看夕阳, 宴说她… .
8. ``game_cue`` – a fandom cue word within :data:`CUE_WINDOW` characters (抽到, 精二, 专三, 技能,
   天赋, 模组, 立绘, 干员…): in chat about the game, these surround operator names.
9. ``bare_rare`` – a single-character name that jieba rarely sees as a word on its own (standalone
   frequency < :data:`BARE_FREQ_MAX`) or tags as a person name/surname (``nr``: 陈, 梅): once the
   stoplist has removed its compounds, what is left is almost always the name (夕, 黍, 芬, 砾, 锏,
   孑, 吽, 煌, 宴).  Multi-character dictionary words never pass on this signal alone.

10. ``title`` (negative) – a risky name that is itself a title right after another name is the
    title (凯尔希医生: 医生 is also an operator's name).  Checked first.
11. ``repeat`` – once a risky name is accepted in a message, its other occurrences in the same
    message are accepted too (红和能天使…不对，红是特种).

A risky candidate with none of 3–9 (or 11) is dropped.

Measured on ``data/names_eval.jsonl`` (248 messages, 181 labelled mentions) with the real name
inventory; "without X" = that signal switched off (reproduce: ``pytest tests/test_names_eval.py
-s``)::

    all signals            P=0.982 R=0.923 (tp=167 fp=3 fn=14)
    without stoplist       P=0.839 R=0.923 (fp 3 -> 32)
    without numeral        P=0.982 R=0.923 (no case in the set; kept for 2024年/三年 with context)
    without honorific      P=0.982 R=0.890
    without context        P=0.982 R=0.917
    without vocative       P=0.982 R=0.912
    without coordination   P=0.981 R=0.873
    without subject        P=0.981 R=0.867
    without game_cue       P=0.981 R=0.878
    without bare_rare      P=0.994 R=0.845
    without title          P=0.977 R=0.923
    without repeat         P=0.982 R=0.917
    plain trie (no rules)  P=0.636 R=0.994 (fp=103)

Known misses: possessive use with no other cue (山的拳套, 林的伞), multi-character names that are
dictionary words with no cue (真理的甜点, 银灰带着初雪); known false hits: compounds of a
"bare" name that jieba lacks (陈皮, 梅西) and a Latin letter glued to a Chinese word (W型).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from functools import cache
from importlib import resources
from pathlib import Path

import ahocorasick

# --- thresholds ------------------------------------------------------------------------------
#: a multi-character name is "risky" when jieba lists it as a word at least this often
RISKY_WORD_FREQ = 3
#: dictionary words rarer than this are not used as blockers (jieba has noisy rare entries)
STOP_FREQ_MIN = 3
#: a name+honorific dictionary word (空姐, 山哥) stays a blocker only if at least this common
HONORIFIC_WORD_KEEP = 50
#: a single-char name rarer than this as a standalone jieba word is accepted bare (signal 9)
BARE_FREQ_MAX = 2000
#: characters either side searched for a game cue word (signal 8)
CUE_WINDOW = 8

# --- word lists -------------------------------------------------------------------------------
#: titles and affixes that follow a name: 陈sir, 年姐, 夕小姐, 陈警官
HONORIFIC_SUFFIXES: tuple[str, ...] = (
    "sir", "小姐", "姐姐", "姐", "妹妹", "妹", "哥哥", "哥", "酱", "桑", "警官", "长官", "队长",
    "老师", "医生", "大人", "阁下", "殿下", "前辈", "女士", "先生", "总", "老板", "宝宝",
)  # fmt: skip
#: single characters before a name that address someone
ADDRESS_PREFIXES: tuple[str, ...] = ("@", "＠")
#: a numeral or quantity right before a single-char name makes it a measure word (三年, 几年)
NUMERAL_CHARS = frozenset("0123456789〇零一二三四五六七八九十百千万两几多每半整上下前后去今明")
#: joins two names
COORDINATORS = frozenset("和与跟同、及")
#: words after a name that take a person as subject
SUBJECT_FOLLOWERS: tuple[str, ...] = (
    "说", "问", "笑", "喊", "叫", "告诉", "觉得", "认为", "想", "在", "又", "还", "今天", "昨天",
    "明天", "今年", "去年", "最近", "正在", "居然", "竟然", "好像", "一直", "已经", "刚", "真是", "回来", "来了",
    # actions only a person does
    "穿", "喝", "吃", "画", "写", "唱", "睡", "哭", "看着", "看了", "拿着", "抱着", "坐在", "站在",
)  # fmt: skip
#: fandom words that surround operator names in game talk
GAME_CUES: tuple[str, ...] = (
    "抽到", "抽了", "出了", "精一", "精二", "专一", "专二", "专三", "技能", "天赋", "模组", "潜能",
    "立绘", "皮肤", "语音", "干员", "练了", "升了", "复刻", "卡池", "六星", "五星", "满潜", "开技能",
)  # fmt: skip
#: punctuation that can follow a name used to address someone
VOCATIVE_PUNCT = frozenset("，,！!：:？?。~～ 　…")
#: characters allowed around a vocative besides the name
_EDGE_PUNCT = " \t\r\n\"'“”‘’「」『』@…。.，,！!？?~～：:"


@dataclass(frozen=True, slots=True)
class RuleConfig:
    """Which signals are on; every field defaults to on (switch one off to measure it)."""

    stoplist: bool = True
    numeral: bool = True
    honorific: bool = True
    context: bool = True
    vocative: bool = True
    coordination: bool = True
    subject: bool = True
    game_cue: bool = True
    bare_rare: bool = True
    title: bool = True
    repeat: bool = True

    @classmethod
    def signal_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def without(self, name: str) -> RuleConfig:
        return replace(self, **{name: False})


# --- dictionary -------------------------------------------------------------------------------
@cache
def word_freqs() -> dict[str, tuple[int, str]]:
    """jieba's dictionary as ``word -> (freq, pos)``; empty if jieba is missing."""
    try:
        text = (resources.files("jieba") / "dict.txt").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):  # pragma: no cover
        return {}
    out: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = (int(parts[1]), parts[2] if len(parts) > 2 else "")
    return out


def extra_stopwords_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "name_stopwords.txt"))


@cache
def extra_stopwords() -> tuple[str, ...]:
    """Hand-listed word collisions (chat words jieba lacks); one per line, ``#`` comments."""
    try:
        lines = extra_stopwords_path().read_text(encoding="utf-8").splitlines()
    except OSError:  # pragma: no cover
        return ()
    return tuple(w for w in (ln.split("#", 1)[0].strip() for ln in lines) if w)


_ASCII_ALNUM = re.compile(r"[0-9a-z]")


def classify(key: str) -> str:
    """``latin`` | ``risky`` | ``plain`` for a folded alias key."""
    if _ASCII_ALNUM.search(key):
        return "latin"
    if len(key) == 1:
        return "risky"
    f = word_freqs().get(key)
    if f is not None and f[0] >= RISKY_WORD_FREQ:
        return "risky"
    return "plain"


@cache
def bare_ok(key: str) -> bool:
    """Signal 9: a single-char name that is rarely a standalone word (or is a surname)."""
    if len(key) != 1:
        return False
    freq, pos = word_freqs().get(key, (0, ""))
    return freq < BARE_FREQ_MAX or pos == "nr"


def _is_name_plus_honorific(word: str, key: str) -> bool:
    if word.startswith(key) and word[len(key) :] in HONORIFIC_SUFFIXES:
        return True
    return any(word == p + key for p in ADDRESS_PREFIXES)


def _substrings(word: str, lengths: Iterable[int]):
    for n in lengths:
        for i in range(len(word) - n + 1):
            yield word[i : i + n]


@cache
def build_stoplist(risky_keys: frozenset[str], plain_keys: frozenset[str]) -> frozenset[str]:
    """Words that contain a risky alias and must be consumed as words (signal 1)."""
    if not risky_keys:
        return frozenset()
    singles = {k for k in risky_keys if len(k) == 1}
    multis = {k for k in risky_keys if len(k) > 1}
    multi_chars = {k[0] for k in multis}
    multi_auto = None
    if multis:
        multi_auto = ahocorasick.Automaton()
        for k in multis:
            multi_auto.add_word(k, k)
        multi_auto.make_automaton()
    all_keys = risky_keys | plain_keys
    out: set[str] = set()
    words = list(word_freqs().items()) + [
        (w, (HONORIFIC_WORD_KEEP, "x")) for w in extra_stopwords()
    ]
    for word, (freq, _pos) in words:
        if len(word) < 2 or freq < STOP_FREQ_MIN or word in all_keys:
            continue
        hit = None
        if not singles.isdisjoint(word):
            hit = next(c for c in word if c in singles)
        elif multi_auto is not None and not multi_chars.isdisjoint(word):
            hit = next((k for _end, k in multi_auto.iter(word)), None)
        if hit is None:
            continue
        if _is_name_plus_honorific(word, hit) and freq < HONORIFIC_WORD_KEEP:
            continue
        if any(sub in plain_keys for sub in _substrings(word, range(2, len(word) + 1))):
            continue
        out.add(word)
    return frozenset(out)


_CUE_RE = re.compile("|".join(map(re.escape, sorted(GAME_CUES, key=len, reverse=True))))


def _alternation(words: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(words, key=len, reverse=True))))


_HON_RE = _alternation(HONORIFIC_SUFFIXES)
_SUBJ_RE = _alternation(SUBJECT_FOLLOWERS)
_EDGE_SET = frozenset(_EDGE_PUNCT)
#: what may stand between the start of a line and a vocative name (a newline ends the walk)
_LEAD_SET = _EDGE_SET - {"\n"}
_CLOSE_RE = re.compile("[" + re.escape(_EDGE_PUNCT) + r"]*(?:\n|\Z)")
_HONORIFIC_SET = frozenset(HONORIFIC_SUFFIXES)
_PREFIX_SET = frozenset(ADDRESS_PREFIXES)
#: first characters of the words each list can match with (cheap guards before a regex call)
_HON_FIRST = frozenset(w[0] for w in HONORIFIC_SUFFIXES)
_SUBJ_FIRST = frozenset(w[0] for w in SUBJECT_FOLLOWERS)


def make_gate(cfg: RuleConfig) -> Callable[[str, int, int], bool]:
    """A cheap test that is True whenever signal 3, 5, 6, 7 or 8 could accept ``t[start:end]``.

    Most risky candidates are ordinary words that no signal accepts, and :func:`decide` has to
    try every signal before it can say so.  The gate looks at the two neighbour characters
    first (set lookups; a word-list regex only when the character after starts one of its
    words) and searches for a game cue last.  It ignores the negative signals (2, 10) and the
    candidate neighbours of signal 6, so it is True for a superset of what :func:`decide`
    accepts through these signals: the matcher calls :func:`decide` when the gate is open and
    drops the candidate otherwise (it checks signals 4 and 9 itself).
    """
    # characters before that accept on their own (@; 和 joining two names)
    before_any: set[str] = set()
    # an edge character or line start before, and punctuation or line end after (vocative)
    voc_before: set[str] = set()
    voc_after: set[str] = set()
    # characters after: coordinators, and the first characters of word lists (checked by regex)
    after_any: set[str] = set()
    after_words: list[tuple[frozenset[str], re.Pattern[str]]] = []
    if cfg.honorific:
        before_any |= _PREFIX_SET
        after_words.append((_HON_FIRST, _HON_RE))
    if cfg.vocative:
        voc_before |= _EDGE_SET | {"\n"}
        voc_after |= VOCATIVE_PUNCT | _EDGE_SET | {"\n"}
    if cfg.coordination:
        before_any |= COORDINATORS
        after_any |= COORDINATORS
    if cfg.subject:
        after_words.append((_SUBJ_FIRST, _SUBJ_RE))
    cue = _CUE_RE.search if cfg.game_cue else None
    before_any_f, voc_before_f, voc_after_f = map(frozenset, (before_any, voc_before, voc_after))
    after_any_f = frozenset(after_any)
    after_first = frozenset().union(*(first for first, _ in after_words))
    # one lookup per side rules out 3, 5, 6 and 7 for most candidates
    before_trig, after_trig = before_any_f | voc_before_f, after_any_f | after_first

    def gate(t: str, start: int, end: int) -> bool:
        before = t[start - 1] if start > 0 else "\n"
        after = t[end] if end < len(t) else "\n"
        if before in before_trig or after in after_trig:
            if before in before_any_f or after in after_any_f:
                return True
            if before in voc_before_f and after in voc_after_f:
                return True
            if after in after_first:
                for first, regex in after_words:
                    if after in first and regex.match(t, end):
                        return True
        if cue is None:
            return False
        return cue(t, start - CUE_WINDOW if start > CUE_WINDOW else 0, end + CUE_WINDOW) is not None

    return gate


def is_title(key: str) -> bool:
    """Signal 10 applies to this alias (it is also a title such as 医生)."""
    return key in _HONORIFIC_SET


def decide(
    t: str,
    start: int,
    end: int,
    key: str,
    ids: tuple[str, ...],
    prev_end: int,
    next_start: int,
    ctx_ids: frozenset[str],
    cfg: RuleConfig,
) -> str | None:
    """How a risky candidate ``t[start:end]`` is accepted (signal name), or None to drop it.

    ``t`` is the folded text (one message per line); ``prev_end`` / ``next_start`` are where the
    previous candidate name ends and the next one starts (-1 when there is none).

    Speed: the matcher calls this only for risky candidates that pass :func:`make_gate` (about
    one in four in chat text).  Each ``match`` at ``end`` is guarded by a set lookup of
    ``t[end]``: a word list can only match there if ``t[end]`` begins one of its words, so the
    guard only skips a sure miss.
    (The cue search stays a plain regex search: sre already skips on the first-character set,
    and slicing the window to test it first costs more than the search.)
    """
    before = t[start - 1] if start > 0 else "\n"
    after = t[end] if end < len(t) else "\n"
    if cfg.title and prev_end == start and key in _HONORIFIC_SET:
        return None
    if cfg.numeral and before in NUMERAL_CHARS and len(key) == 1:
        return None
    if cfg.honorific:
        if after in _HON_FIRST and _HON_RE.match(t, end):
            return "honorific"
        if before in _PREFIX_SET:
            return "honorific"
    if cfg.context and ctx_ids and not ctx_ids.isdisjoint(ids):
        return "context"
    if cfg.vocative:
        if before == "\n" or before in _EDGE_SET:
            i = start - 1
            while i >= 0 and t[i] in _LEAD_SET:
                i -= 1
            if (i < 0 or t[i] == "\n") and (after == "\n" or after in VOCATIVE_PUNCT):
                return "vocative"
        if before in "，," and _CLOSE_RE.match(t, end):
            return "vocative"
    if cfg.coordination:
        if next_start == end + 1 and after in COORDINATORS:
            return "coordination"
        if prev_end >= 0 and prev_end == start - 1 and before in COORDINATORS:
            return "coordination"
    if cfg.subject and after in _SUBJ_FIRST and _SUBJ_RE.match(t, end):
        return "subject"
    if cfg.game_cue and _CUE_RE.search(t, max(0, start - CUE_WINDOW), end + CUE_WINDOW):
        return "game_cue"
    if cfg.bare_rare and bare_ok(key):
        return "bare_rare"
    return None
