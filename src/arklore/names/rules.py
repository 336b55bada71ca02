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
5. ``vocative`` – the name is in address position by :func:`arklore.core.vocatives.is_address`
   (the rule the relation gates and the interaction statistics use too): it opens a sentence
   and is followed by a pause (``夕，…``, ``年！…``, ``好的。夕，…``), or closes one after a comma
   (``画好了吗，夕？``), or is the whole message.
6. ``coordination`` – joined to another candidate name by 和/与/跟/同/、 (年和夕, 初雪和崖心).
7. ``subject`` – followed by a verb or adverb that takes a person as subject (说 问 笑 在 又 还
   今天 …): 夕在看夕阳, 宴说她… .
8. ``game_cue`` – a fandom cue word within :data:`CUE_WINDOW` characters (抽到, 精二, 专三, 技能,
   天赋, 模组, 立绘, 干员…): in chat about the game, these surround operator names.
9. ``bare_rare`` – a single-character name that jieba rarely sees as a word on its own (standalone
   frequency < :data:`BARE_FREQ_MAX`) or tags as a person name/surname (``nr``: 陈, 梅): once the
   stoplist has removed its compounds, what is left is almost always the name (夕, 黍, 芬, 砾, 锏,
   孑, 吽, 煌, 宴).  Multi-character dictionary words never pass on this signal alone.

10. ``person_object`` – the object of a verb or preposition that takes a person, with a word
    boundary after the name (end of message, punctuation, or a word such as 一起/呢/吧/玩):
    ``今年想和陈sir去看银灰``, ``我想和年一起去看烟花``, ``陪红逛街吧``.  The preceding word
    decides how much it proves (:data:`PERSON_PRECEDERS_STRONG` / ``_WEAK``):

    * *strong* (和 跟 陪 问 帮 告诉 …: their object is almost always a person) accept any name;
    * *weak* (看 见 等 想 找 给 …: they also take things -- 看流星, 等暴雨, 找真理) accept a
      multi-character name that is rare as an ordinary word (jieba frequency <
      :data:`OBJECT_WORD_FREQ_MAX`: 银灰 6, 初雪 8, 风笛 13; not 流星 390, 真理 1269) and only
      when another operator is already named earlier in the message: ``和陈sir去看银灰`` is a
      visit, ``今年冬天想去看初雪`` is the weather.  Single-character names (空 红 年 …) never
      pass on a weak word (等空了 "when I am free").

    The blockers of signal 1 still come first: 看银灰色的外套 has the word 银灰色, so no
    candidate 银灰; and signal 2 keeps 今年/去年 a year.
11. ``possessive`` – ``name + 的 + a person noun`` (:data:`PERSON_NOUNS`: 妹妹 朋友 搭档 老师 …):
    ``都是银灰的妹妹`` is a person, ``银灰的外套`` / ``这颜色是银灰的`` are not.

12. ``title`` (negative) – a risky name that is itself a title right after another name is the
    title (凯尔希医生: 医生 is also an operator's name).  Checked first.
13. ``repeat`` – once a risky name is accepted in a message, its other occurrences in the same
    message are accepted too (红和能天使…不对，红是特种).

A risky candidate with none of 3–11 (or 13) is dropped.

Measured on ``data/names_eval.jsonl`` (274 messages, 202 labelled mentions) with the real name
inventory; "without X" = that signal switched off (reproduce: ``pytest tests/test_names_eval.py
-s``)::

    all signals            P=0.984 R=0.941 (tp=190 fp=3 fn=12)
    without stoplist       P=0.856 R=0.941 (fp 3 -> 32)
    without numeral        P=0.984 R=0.941 (no case in the set; kept for 2024年/三年 with context)
    without honorific      P=0.984 R=0.911
    without context        P=0.984 R=0.936
    without vocative       P=0.984 R=0.931
    without coordination   P=0.984 R=0.896
    without subject        P=0.984 R=0.891
    without game_cue       P=0.984 R=0.901
    without bare_rare      P=0.994 R=0.871
    without person_object  P=0.984 R=0.886
    without possessive     P=0.984 R=0.926
    without title          P=0.979 R=0.941
    without repeat         P=0.984 R=0.936
    plain trie (no rules)  P=0.618 R=0.995 (fp=124)

(Before signals 10 and 11, on the first 248 messages: P=0.982 R=0.923; with them P=0.983
R=0.934.  The 26 messages added with them, tag ``person_context``, are ``dev``.)

Known misses: possessive use with no other cue (山的拳套, 林的伞: only person nouns after 的
count), multi-character names that are dictionary words with no cue (真理的甜点, 银灰带着初雪),
a weak person verb with nobody else named (今天去看银灰: 看初雪 would be the weather); known
false hits: a thing after a strong person word (和暴雨一起来的), a rare word after a weak one
with someone named (和陈sir去看初雪), compounds of a
"bare" name that jieba lacks (陈皮, 梅西) and a Latin letter glued to a Chinese word (W型).
"""

from __future__ import annotations

import importlib.util
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields, replace
from functools import cache
from importlib import resources
from itertools import accumulate
from pathlib import Path

from ahocorasick_rs import AhoCorasick

from arklore.core import vocatives
from arklore.core.vocatives import HONORIFICS, could_be_address, is_address

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
#: titles and affixes that follow a name: 陈sir, 年姐, 夕小姐, 陈警官 (one list for every layer)
HONORIFIC_SUFFIXES: tuple[str, ...] = HONORIFICS
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
#: a risky multi-character name rarer than this as a jieba word may be a person after a weak
#: person verb (signal 10): 银灰 6, 初雪 8, 风笛 13 may; 极光 112, 流星 390, 真理 1269 never
OBJECT_WORD_FREQ_MAX = 50
#: words right before a name whose object is almost always a person (signal 10, any name)
PERSON_PRECEDERS_STRONG: tuple[str, ...] = (
    "和", "跟", "同", "陪", "问", "帮", "告诉", "请", "夸", "骂", "谢谢", "感谢", "嫁给", "娶",
    "认识", "遇到", "碰到", "遇见", "想念", "拜访", "看望", "陪着", "跟着", "抱抱", "亲亲",
)  # fmt: skip
#: words right before a name that also take things (signal 10, rare multi-character names or
#: with another operator named earlier on the line)
PERSON_PRECEDERS_WEAK: tuple[str, ...] = (
    "看", "见", "等", "想", "找", "给", "带", "叫", "喜欢", "爱", "抱", "让", "见到", "看到",
    "找到", "想见", "等着", "带着", "送给", "交给",
)  # fmt: skip
#: what may follow the object of a person verb (signal 10) besides punctuation and line end
PERSON_OBJECT_FOLLOWERS: tuple[str, ...] = (
    "一起", "一块", "去", "来", "聊", "玩", "逛", "吃饭", "呢", "吧", "吗", "嘛", "啊", "呀", "哦", "啦",
)  # fmt: skip
#: person nouns after ``name + 的`` (signal 11): 银灰的妹妹, 红的朋友
PERSON_NOUNS: tuple[str, ...] = (
    "妹妹", "姐姐", "哥哥", "弟弟", "朋友", "好友", "搭档", "同伴", "战友", "队友", "家人",
    "父亲", "母亲", "爸爸", "妈妈", "女儿", "儿子", "老师", "学生", "师父", "徒弟", "部下",
    "手下", "上司", "护卫", "保镖", "男朋友", "女朋友", "对象", "恋人", "粉丝", "前辈", "后辈",
)  # fmt: skip
#: fandom words that surround operator names in game talk
GAME_CUES: tuple[str, ...] = (
    "抽到", "抽了", "出了", "精一", "精二", "专一", "专二", "专三", "技能", "天赋", "模组", "潜能",
    "立绘", "皮肤", "语音", "干员", "练了", "升了", "复刻", "卡池", "六星", "五星", "满潜", "开技能",
)  # fmt: skip


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
    person_object: bool = True
    possessive: bool = True
    title: bool = True
    repeat: bool = True

    @classmethod
    def signal_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def without(self, name: str) -> RuleConfig:
        return replace(self, **{name: False})


# --- dictionary -------------------------------------------------------------------------------
def jieba_dict_path() -> Path | None:
    """jieba's ``dict.txt``, found without importing jieba (its import costs ~0.3 s)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "dict.txt"


@cache
def word_freqs() -> dict[str, tuple[int, str]]:
    """jieba's dictionary as ``word -> (freq, pos)``; empty if jieba is missing."""
    path = jieba_dict_path()
    try:
        text = path.read_text(encoding="utf-8") if path else ""
    except OSError:  # pragma: no cover
        return {}
    return parse_dict(text)


def parse_dict(text: str) -> dict[str, tuple[int, str]]:
    """``word freq [pos]`` lines (the later of a repeated word wins). Every line of jieba's own
    file has three fields, so one ``split`` of the whole text reads it (0.4 s, not 1 s: it
    is read by every process that matches names); any other file is read line by line."""
    tokens = text.split()
    if len(tokens) == 3 * len(text.splitlines()) and all(f.isdigit() for f in tokens[1::3]):
        it = iter(tokens)
        return {w: (int(f), pos) for w, f, pos in zip(it, it, it, strict=True)}
    out: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
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


def _substrings(word: str, lengths: Iterable[int]) -> Iterator[str]:
    for n in lengths:
        for i in range(len(word) - n + 1):
            yield word[i : i + n]


@cache
def _stop_candidates() -> tuple[tuple[tuple[str, int], ...], str, tuple[int, ...]]:
    """The words that may block (two characters or more, freq >= :data:`STOP_FREQ_MIN`, and
    the hand list) with their frequencies, joined by newlines, and where each starts in the
    joined text: :func:`build_stoplist` finds the words holding a risky alias with one
    automaton pass over it (~0.15 s) instead of a test per dictionary word (~0.5 s)."""
    listed = [*word_freqs().items(), *((w, (HONORIFIC_WORD_KEEP, "x")) for w in extra_stopwords())]
    words = [(w, freq) for w, (freq, _pos) in listed if freq >= STOP_FREQ_MIN and len(w) >= 2]
    joined = "\n".join([w for w, _freq in words])
    starts = tuple(accumulate([len(w) + 1 for w, _freq in words[:-1]], initial=0))
    return tuple(words), joined, starts


@cache
def build_stoplist(risky_keys: frozenset[str], plain_keys: frozenset[str]) -> frozenset[str]:
    """Words that contain a risky alias and must be consumed as words (signal 1)."""
    if not risky_keys:
        return frozenset()
    words, joined, starts = _stop_candidates()
    # every word holding a risky key has a match inside it: no key spans a newline
    found = AhoCorasick(sorted(risky_keys)).find_matches_as_indexes(joined)
    holding = sorted({bisect_right(starts, start) - 1 for _key, start, _end in found})
    singles = {k for k in risky_keys if len(k) == 1}
    multis = sorted(k for k in risky_keys if len(k) > 1)
    all_keys = risky_keys | plain_keys
    out: set[str] = set()
    for word, freq in (words[i] for i in holding):
        if word in all_keys:
            continue
        hit = next((c for c in word if c in singles), None)
        if hit is None:  # the multi-character key that ends first, the longest of those
            hit = min(
                (k for k in multis if k in word), key=lambda k: (word.index(k) + len(k), -len(k))
            )
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
#: preceders by length, longest first: (length, strong words, weak words)
_PRECEDERS = tuple(
    (n, frozenset(w for w in PERSON_PRECEDERS_STRONG if len(w) == n),
     frozenset(w for w in PERSON_PRECEDERS_WEAK if len(w) == n))
    for n in sorted({len(w) for w in PERSON_PRECEDERS_STRONG + PERSON_PRECEDERS_WEAK}, reverse=True)
)  # fmt: skip
_PRECEDER_LAST = frozenset(w[-1] for w in PERSON_PRECEDERS_STRONG + PERSON_PRECEDERS_WEAK)
_OBJ_AFTER_RE = _alternation(PERSON_OBJECT_FOLLOWERS)
_OBJ_AFTER_FIRST = frozenset(w[0] for w in PERSON_OBJECT_FOLLOWERS)
#: characters after an object that end the phrase (punctuation, spaces, quotes, line end)
_OBJ_END = frozenset(vocatives.PAUSE | vocatives.SENTENCE_END | vocatives.EDGE | set("、；;\n\r"))
_POSS_RE = re.compile("的(?:" + _alternation(PERSON_NOUNS).pattern + ")")


def _preceder(t: str, start: int) -> str | None:
    """``strong`` | ``weak`` when a person-taking word ends right before ``start``, else None."""
    for n, strong, weak in _PRECEDERS:
        if start >= n:
            w = t[start - n : start]
            if w in strong:
                return "strong"
            if w in weak:
                return "weak"
    return None


def is_person_object(t: str, start: int, end: int, key: str, named_end: int) -> bool:
    """Signal 10: ``t[start:end]`` is the object of a person verb, ended by a boundary.

    ``named_end`` is where the last accepted mention before the name ends (-1 when none): it
    counts when it lies on the name's line.
    """
    after = t[end] if end < len(t) else "\n"
    if after not in _OBJ_END and not (after in _OBJ_AFTER_FIRST and _OBJ_AFTER_RE.match(t, end)):
        return False
    strength = _preceder(t, start)
    if strength is None:
        return False
    if strength == "strong":
        return True
    if len(key) == 1 or word_freqs().get(key, (0, ""))[0] >= OBJECT_WORD_FREQ_MAX:
        return False
    return 0 <= named_end <= start and t.find("\n", named_end, start) < 0


_SUBJ_RE = _alternation(SUBJECT_FOLLOWERS)
_HONORIFIC_SET = frozenset(HONORIFIC_SUFFIXES)
_PREFIX_SET = frozenset(ADDRESS_PREFIXES)
#: first characters of the words each list can match with (cheap guards before a regex call)
_HON_FIRST = frozenset(w[0] for w in HONORIFIC_SUFFIXES)
_SUBJ_FIRST = frozenset(w[0] for w in SUBJECT_FOLLOWERS)


def make_gate(cfg: RuleConfig) -> Callable[[str, int, int], bool]:
    """A cheap test that is True whenever signal 3, 5, 6, 7, 8, 10 or 11 could accept
    ``t[start:end]``.

    Most risky candidates are ordinary words that no signal accepts, and :func:`decide` has to
    try every signal before it can say so.  The gate looks at the two neighbour characters
    first (set lookups; a word-list regex only when the character after starts one of its
    words) and searches for a game cue last.  It ignores the negative signals (2, 12), the
    candidate neighbours of signal 6 and, for signal 10, the preceding word and the name
    (it looks at the character before and the boundary after), so it is True for a superset of what :func:`decide`
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
        # a superset of what core.vocatives.is_address needs on either side
        voc_before |= vocatives.EDGE | vocatives.SENTENCE_END | vocatives.COMMA | {"\n", "\r"}
        voc_after |= vocatives.PAUSE | vocatives.EDGE | vocatives.SENTENCE_END | {"\n", "\r"}
    if cfg.coordination:
        before_any |= COORDINATORS
        after_any |= COORDINATORS
    if cfg.subject:
        after_words.append((_SUBJ_FIRST, _SUBJ_RE))
    # a person verb before opens the gate only with a boundary after (看 到 想 给 are common)
    obj_before = _PRECEDER_LAST if cfg.person_object else frozenset()
    if cfg.possessive:
        after_words.append((frozenset("的"), _POSS_RE))
    cue = _CUE_RE.search if cfg.game_cue else None
    before_any_f, voc_before_f, voc_after_f = map(frozenset, (before_any, voc_before, voc_after))
    after_any_f = frozenset(after_any)
    after_first = frozenset().union(*(first for first, _ in after_words))
    # one lookup per side rules out 3, 5, 6 and 7 for most candidates
    before_trig, after_trig = before_any_f | voc_before_f | obj_before, after_any_f | after_first
    obj_end, obj_first, obj_after = _OBJ_END, _OBJ_AFTER_FIRST, _OBJ_AFTER_RE.match

    def gate(t: str, start: int, end: int) -> bool:
        before = t[start - 1] if start > 0 else "\n"
        after = t[end] if end < len(t) else "\n"
        if before in before_trig or after in after_trig:
            if before in before_any_f or after in after_any_f:
                return True
            if before in voc_before_f and after in voc_after_f and could_be_address(before, after):
                return True
            if before in obj_before and (
                after in obj_end or (after in obj_first and obj_after(t, end))
            ):
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
    """Signal 12 applies to this alias (it is also a title such as 医生)."""
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
    named_end: int = -1,
) -> str | None:
    """How a risky candidate ``t[start:end]`` is accepted (signal name), or None to drop it.

    ``t`` is the folded text (one message per line); ``prev_end`` / ``next_start`` are where the
    previous candidate name ends and the next one starts (-1 when there is none);
    ``named_end`` is where the last *accepted* mention before it ends (-1 when none).

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
    if cfg.vocative and could_be_address(before, after) and is_address(t, start, end):
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
    if (
        cfg.person_object
        and before in _PRECEDER_LAST
        and is_person_object(t, start, end, key, named_end)
    ):
        return "person_object"
    if cfg.possessive and after == "的" and _POSS_RE.match(t, end):
        return "possessive"
    return None
