"""Her way of speaking (``## 说话方式``), counted from the data with no model.

A chat model that knows who she is still talks like itself unless it is told how she talks:
what she calls the Doctor, 您 or 你, 本小姐 or 我, the words and symbols she favours, how long
her lines run. Every such fact here is *counted* from her own lines and stated in Chinese
with its counts and the source ids it stands on (``voice:<charWordId>``,
``story:<line_id>``, as quotes are cited: :mod:`arklore.profiles.quotes`); nothing is a
paraphrase.

Her lines are her voice lines (said to the Doctor; 标题 never) and her story lines (dialogue
lines whose speaker resolves to her, :func:`arklore.profiles.sources.lines_for`). *Her lines
to the Doctor* are her voice lines and the story lines that call him
(:func:`arklore.profiles.doctor.addresses_doctor`) or that she says in a scene where nobody
but the Doctor (his choices, a line spoken as 博士) speaks besides her, less those that call
somebody else by name. The corpus-wide :class:`Background` (one pass over every spoken line,
once per distill run, never per chat turn) gives what she is compared with, the scenes with
the Doctor and what the others call each operator.

A *vocative* is a word in address position (:func:`arklore.core.vocatives.address_spans`) or
on its own at the start of a clause, between a comma and a pause (早上好，船长，您…), after the
Doctor's placeholder is read as 博士, ``......`` as ``…`` and a symbol (★ ♪ …) as a sentence
end (:func:`vocatives`).

**The facts** (the section lists them in :data:`KINDS` order, most telling first: a chat
that must cut drops from the last):

1. **The form she uses for the Doctor** (:func:`doctor_form`): vocatives in her lines to the
   Doctor that are 博士 (his other names and the placeholder too; 博士大人 keeps its title) or
   a word of address (:func:`is_address_word`: a kinship or role word,
   :func:`arklore.core.kinship.is_term_word`, an honorific, a word of endearment, or a noun
   for a person, jieba's noun ending in :data:`PERSON_ENDINGS`: 老板, 盟友, 前辈), after a
   possessive (我的盟友 is 盟友); never a person's name, a word for a group (大家) or a
   stopword. Each line counts once per form. The most frequent form with
   :data:`DOCTOR_FORM_MIN` lines is stated with the lines that say 博士; a second form with
   as many is stated too (也称).
2. **Her register toward the Doctor**: her lines to him with 您 and with 你 (not 你们; a
   battle voice line with either is said to an enemy): 您 or 你 when one has
   :data:`REGISTER_SHARE` of at least :data:`REGISTER_MIN` lines, else both.
3. **How she calls herself**: the closed list :data:`SELF_FORMS` (本小姐, 人家, 老子, 吾, 在下,
   本人, 咱…) counted in her lines; a form qualifies with :data:`SELF_MIN` uses in
   :data:`SELF_UNITS` stages or voice lines and over-represented against the corpus (z of the
   log-odds below at least :data:`SELF_Z`: everybody says 人家 of other people), stated with
   her count of 我.
4. **Her signature expressions**: tokens (jieba, :class:`arklore.corpus.lexical.Tokenizer`:
   no stopword, no punctuation, no number) and symbols (:data:`SYMBOLS`) over-represented in
   her lines against every dialogue line of the corpus: the log-odds ratio with an informative
   Dirichlet prior (Monroe, Colaresi & Quinn 2008, "Fightin' Words": prior
   :data:`PRIOR_SIZE` times the corpus frequency; her lines against everybody else's) with a
   z of at least :data:`EXPR_Z`, :data:`EXPR_MIN` uses, in :data:`EXPR_UNITS` stages or voice
   lines; only words of manner (:func:`is_manner_word`: interjections, adverbs, adjectives,
   idioms, particles; a noun or a verb is what she talks about, 火山 or 企鹅物流, not how),
   never a person's name (the alias table's, the speaker labels) or the Doctor's. The
   :data:`EXPR_MAX` highest z.
5. **What others call her, and who**: vocatives in the others' lines that are one of her
   names (陈sir: her name and a title), or that her next line answers (one scene, no other
   spoken line between) and are a word of address or a pet name made from her name (小玫 for
   玫兰莎) and nobody else's name; her plain name is not news. A form needs
   :data:`CALLED_MIN` lines in :data:`CALLED_STAGES` stages; the :data:`CALLED_MAX` most
   frequent, each with its count and its most frequent speaker (陈: 陈长官, 陈小姐, 老陈,
   陈sir).
6. **Her line length and ellipses**: the median characters of her lines (placeholder as
   博士), the share of her lines with ``…``/``...``, each beside the corpus's.

A section needs :data:`MIN_LINES` lines of hers; each fact cites at most
:data:`MAX_SOURCES` of the lines it counts.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ahocorasick_rs import AhoCorasick

from arklore.core.kinship import is_term_word
from arklore.core.model import DOCTOR, DOCTOR_NAMES
from arklore.core.vocatives import HONORIFICS, address_spans
from arklore.corpus.lexical import STOPWORDS, Tokenizer
from arklore.corpus.store import SpokenLine
from arklore.profiles.doctor import addresses_doctor
from arklore.profiles.quotes import BATTLE, StoryLine, VoiceLine, voice_group

MIN_LINES = 20
"""Lines of hers (voice and story) a section needs: below it, counts say nothing."""
MAX_SOURCES = 3
"""Source ids a fact cites at most."""

DOCTOR_FORM_MIN = 3
REGISTER_MIN = 3
REGISTER_SHARE = 0.7
SELF_MIN = 5
SELF_UNITS = 3
SELF_Z = 2.58
EXPR_MIN = 5
EXPR_UNITS = 3
EXPR_Z = 3.0
EXPR_MAX = 5
PRIOR_SIZE = 1000.0
"""The Dirichlet prior's size (pseudo-tokens spread by the corpus frequencies)."""
CALLED_MIN = 3
CALLED_STAGES = 2
CALLED_MAX = 4
CALLED_SPEAKERS = 1
MAX_FORM_CHARS = 6
TOKEN_SEP = "\x00"
"""Joins the tokens of a line the background keeps (one string a line: light on memory)."""

SYMBOLS: tuple[str, ...] = ("★", "☆", "♪", "♫", "♬", "♡", "♥", "❤", "～", "✧")
"""Symbols that are a manner of speaking; ``~`` counts as ``～``."""
SELF_FORMS: tuple[str, ...] = (
    "本大小姐", "本小姐", "本姑娘", "本大爷", "本少爷", "本王", "本座", "本人", "老娘", "老子",
    "老夫", "在下", "鄙人", "小女子", "妾身", "人家", "吾", "咱", "俺", "朕",
)  # fmt: skip
"""What she may call herself instead of 我 (a closed list)."""
_SELF_RE = re.compile(
    r"(?<![别老大])人家(?!们)|(?<![\u3400-\u9fff])本人|咱(?![们])|(?<!支)吾(?!吾)"
    r"|在下(?![面方一次午雨个层边头位属来去])|"
    + "|".join(re.escape(f) for f in SELF_FORMS if f not in ("人家", "本人", "咱", "吾", "在下"))
)
_SELF_LITERAL = re.compile("|".join(SELF_FORMS))
_I_RE = re.compile(r"我(?!们)")
GROUP_WORDS = frozenset((
    "大家", "各位", "诸位", "你们", "您们", "大伙", "大伙儿", "朋友们", "兄弟们", "伙计们",
    "姐妹们", "孩子们", "同志们", "先生们", "女士们", "诸君", "众人", "所有人", "全体",
))  # fmt: skip
"""Words that address a group: never one person's form of address."""
ENDEARMENTS = frozenset(("亲爱的", "宝贝", "宝宝", "甜心"))
"""Words of endearment that call one person (亲爱的, as a whole word)."""
PERSON_ENDINGS = frozenset(
    "人者士生子长官师辈友伴姐哥弟妹爷奶爸妈叔姨娘兄板头主君公帅将军王帝爵领客员侠雄蛋伙鬼"
)
"""The last character of a noun for a person (盟友, 前辈, 老板, 笨蛋): a common noun ending
otherwise (小心, 报告, 结果) is not somebody called."""
_POSSESSIVE = ("我亲爱的", "亲爱的", "我们的", "我的")
_DOCTOR_WORD = re.compile(r"^(?:博士|刀客塔|doctor|dr)+$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"Dr\.\{@nickname\}|\{@nickname\}", re.IGNORECASE)
_DOTS = re.compile(r"\.{2,}")
_ELLIPSIS = re.compile(r"…|\.{3,}")
_SYMBOL_RE = re.compile(f"[{''.join(SYMBOLS)}~]")
_MANNER_TAGS = ("a", "c", "d", "e", "i", "l", "o", "y", "z", "u")
"""jieba's tags of a word of manner (adjectives, adverbs, interjections, idioms, particles): a
noun, a verb, a pronoun, a number, a time or a place is what she talks about or does."""
_INTERJECTIONS = frozenset("哼喵呜嘻嘁啧咦嗷哇呵唔嘤呼嘶哟嗨咕嘎嘟噗嘛诶哈嘿嗯啊呀")
_PET_PREFIXES = frozenset("小阿老大")
_NOT_A_TOKEN = frozenset({"dr", "doctor", "nickname", DOCTOR, "刀客塔"})
_SECOND = re.compile(r"你(?!们)")
_WS = re.compile(r"\s")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
_NONE: frozenset[str] = frozenset()


# -- the facts and their lines -----------------------------------------------------------


DOCTOR_FORM, REGISTER, SELF, EXPRESSIONS, CALLED, LENGTH = (
    "doctor_form", "register", "self", "expressions", "called", "length",
)  # fmt: skip
KINDS: tuple[str, ...] = (DOCTOR_FORM, CALLED, SELF, REGISTER, EXPRESSIONS, LENGTH)
"""The kinds of fact, most important first: the order of the section (what others call her
before her register: 银灰's 老爷 was cut by the block's budget before it)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One counted statement about how she speaks, with the lines it stands on."""

    kind: str
    text: str  # the Chinese statement with its counts
    sources: tuple[str, ...] = ()  # voice:<id> / story:<line_id>

    def line(self) -> str:
        """The section's bullet: ``- <fact> —— <source ids>``."""
        src = f" —— {', '.join(self.sources)}" if self.sources else ""
        return f"- {self.text}{src}"


_FACT_LINE = re.compile(r"^\s*[-*]\s+(?P<text>.*?)(?:\s+——\s+(?P<src>(?:voice|story):\S.*))?\s*$")


def parse_fact_line(line: str) -> tuple[str, list[str]] | None:
    """A ``## 说话方式`` bullet as (the fact, its source ids); None for another line."""
    m = _FACT_LINE.match(line)
    if m is None or not m.group("text").strip():
        return None
    src = [s.strip() for s in (m.group("src") or "").split(",") if s.strip()]
    return m.group("text").strip(), src


_CALLED_FORM = re.compile(r"「([^」]+)」")


def _called(section: str) -> str:
    """The fact :func:`called_fact` writes in a ``## 说话方式`` body (别人叫陈「陈长官」（…）…),
    "" when the body has none."""
    for line in section.split("\n"):
        fact = parse_fact_line(line)
        if fact is not None and fact[0].startswith("别人叫"):
            return fact[0]
    return ""


def called_forms(section: str) -> list[str]:
    """The forms the others call her by, read back from a ``## 说话方式`` body (the fact
    :func:`called_fact` writes: 别人叫陈「陈长官」（…）、「陈sir」（…）), most frequent first."""
    return _CALLED_FORM.findall(_called(section))


_CALLED_BY = re.compile(r"「([^」]+)」（([^）]*)）")
_SPEAKER = re.compile(r"([^\s，、（）0-9][^\s，、（）]*) ([0-9]+) 次")


def called_by(section: str) -> dict[str, dict[str, int]]:
    """Who calls her each of those forms and how often, as the same fact tells it
    (「二队长」（斯卡蒂 9 次）): form -> speaker -> times, for the speakers it names."""
    return {
        f: {sp: int(n) for sp, n in _SPEAKER.findall(who)}
        for f, who in _CALLED_BY.findall(_called(section))
    }


def render_section(facts: Sequence[Fact]) -> str:
    """The body of ``## 说话方式``: one bullet per fact, in :data:`KINDS` order."""
    order = {k: i for i, k in enumerate(KINDS)}
    return "\n".join(f.line() for f in sorted(facts, key=lambda f: order.get(f.kind, len(KINDS))))


# -- words -------------------------------------------------------------------------------


def address_text(text: str) -> str:
    """``text`` as the vocative rule reads it here: the Doctor's placeholder as 博士, ``...``
    as ``…`` and a symbol as a sentence end (子弹上膛★老板，… calls 老板)."""
    if "{@" in text:
        text = _PLACEHOLDER.sub(DOCTOR, text)
    if ".." in text:
        text = _DOTS.sub("…", text)
    if _SYMBOL_RE.search(text):
        text = _SYMBOL_RE.sub("。", text)
    return text


_BETWEEN = re.compile(
    r"(?<=[，,])([^\s，,。！!？?…~～—：:；;、「」『』“”（）()]{1,10})(?=[，,。！!？?…~～—])"
)
"""A word on its own between a comma and a pause: the start of a clause (早上好，船长，您…)."""


def vocatives(text: str) -> list[str]:
    """The words of ``text`` in address position (:func:`arklore.core.vocatives.address_spans`,
    after :func:`address_text`) or on their own at the start of a clause, between a comma and
    a pause (早上好，船长，您…), in order."""
    t = address_text(text)
    spans = set(address_spans(t))
    if "，" in t or "," in t:
        spans.update(m.span() for m in _BETWEEN.finditer(t))
    return [t[s:e] for s, e in sorted(spans)]


@functools.lru_cache(maxsize=1 << 15)
def _tags(word: str) -> tuple[tuple[str, str], ...]:
    import rjieba  # its dictionary takes 0.1 s to load: only the steps that tag pay for it

    return tuple(rjieba.tag(word, False))


@functools.lru_cache(maxsize=1 << 16)
def _bare(word: str) -> str:
    """A vocative without a possessive before it (我的盟友 is 盟友) and said once (老板老板 is
    老板)."""
    for p in _POSSESSIVE:
        if word.startswith(p) and len(word) > len(p):
            word = word[len(p) :]
            break
    half = len(word) // 2
    if half >= 2 and len(word) % 2 == 0 and word[:half] == word[half:]:
        return word[:half]
    return word


_HONORIFIC_SET = frozenset(HONORIFICS)
_HONORIFIC_ENDS = frozenset(h[-1] for h in HONORIFICS)
_HONORIFIC_LENGTHS = tuple(sorted({len(h) for h in HONORIFICS}, reverse=True))


def _strip_honorific(word: str) -> tuple[str, str]:
    """(``word`` without one trailing honorific, the honorific) or (``word``, "")."""
    for k in _HONORIFIC_LENGTHS:
        if len(word) > k and word[-k:] in _HONORIFIC_SET:
            return word[:-k], word[-k:]
    return word, ""


def is_address_word(word: str, people: Collection[str] = ()) -> bool:
    """A word that can call somebody without naming them: a kinship or role word, an
    honorific (大小姐 with a short word before it), a word of endearment, or a noun for a
    person (jieba's nouns ending in :data:`PERSON_ENDINGS`: 老板, 盟友, 前辈; not 小心, 报告);
    never a person's name (``people``, folded), a word for a group (大家) or a stopword."""
    return not _is_person(word, people) and _address_shape(word)


@functools.lru_cache(maxsize=1 << 16)
def _address_shape(word: str) -> bool:
    if not 1 <= len(word) <= MAX_FORM_CHARS or word in STOPWORDS or word in GROUP_WORDS:
        return False
    if is_term_word(word) or word in HONORIFICS or word in ENDEARMENTS:
        return True
    rest, title = _strip_honorific(word)
    if title and len(rest) <= 2 and not _CJK.sub("", rest):
        return True  # 大小姐, 小哥
    if len(word) < 2 or word[-1] not in PERSON_ENDINGS:
        return False
    tags = [t for _, t in _tags(word)]
    return tags[-1].startswith("n") and all(t.startswith(("n", "a", "b", "m")) for t in tags)


def doctor_form(word: str, people: Collection[str] = ()) -> str | None:
    """The form of address a vocative is, when it may be the Doctor's: 博士 for any of his
    names (博士大人 keeps its title), else a word of address (:func:`is_address_word`) after a
    possessive (我的盟友 is 盟友); None otherwise."""
    base = _bare(word)
    if _DOCTOR_WORD.match(base):
        return DOCTOR
    rest, title = _strip_honorific(base)
    if title and _DOCTOR_WORD.match(rest):
        return DOCTOR + title
    return base if is_address_word(base, people) else None


def _generic(label: str) -> bool:
    """A speaker label that is a word of address everybody uses (老板, 医生), not a name."""
    return is_term_word(label) or label in HONORIFICS or label in ENDEARMENTS


def _is_person(word: str, people: Collection[str]) -> bool:
    w = word.lower()
    if w in people:
        return True
    rest, title = _strip_honorific(word)
    return bool(title) and rest.lower() in people


def symbols(text: str) -> list[str]:
    """The symbols of :data:`SYMBOLS` in ``text`` (``~`` as ``～``), each use."""
    return [("～" if c == "~" else c) for c in _SYMBOL_RE.findall(text)]


def shown_length(text: str) -> int:
    """Characters of a line as a chat shows it (the placeholder as 博士, no whitespace)."""
    if "{@" in text:
        text = _PLACEHOLDER.sub(DOCTOR, text)
    return len(_WS.sub("", text)) if _WS.search(text) else len(text)


def has_ellipsis(text: str) -> bool:
    return bool(_ELLIPSIS.search(text))


# -- the corpus background ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Heard:
    """Somebody calling an operator: the form as written, who said it, where."""

    form: str
    speaker: str
    line_id: str
    stage_path: str
    by_name: bool  # the form is one of her names (else her next line answers it)


@dataclass(slots=True)
class Background:
    """What every operator's lines are compared with, from one pass over the corpus's
    spoken lines (:func:`build_background`): token, self-form, length and ellipsis counts
    of every dialogue line, the tokens of the operators' lines, the lines said in a scene
    with the Doctor alone, what the others call each operator, and every person's name."""

    tokens: Counter[str] = field(default_factory=Counter)  # token and symbol uses, all lines
    total: int = 0  # every token and symbol use
    lines: int = 0  # dialogue lines
    ellipsis_lines: int = 0
    median_length: float = 0.0
    self_forms: Counter[str] = field(default_factory=Counter)
    line_tokens: dict[str, str] = field(default_factory=dict)  # operators' lines: TOKEN_SEP-joined
    to_doctor: set[str] = field(default_factory=set)  # lines of a scene with him alone
    heard: dict[str, list[Heard]] = field(default_factory=dict)  # char id -> calls
    people: frozenset[str] = frozenset()  # every person's name, folded
    mask: re.Pattern[str] | None = None  # the names holding a self form (self_mask)


def _line_tokens(text: str, tokenizer: Tokenizer | None) -> list[str]:
    """The tokens of a line (:class:`~arklore.corpus.lexical.Tokenizer`, the Doctor's names
    left out) and its symbols."""
    toks = [t for t in tokenizer.tokens(text) if t not in _NOT_A_TOKEN] if tokenizer else []
    if _SYMBOL_RE.search(text):
        toks += symbols(text)
    return toks


def _self_uses(text: str, mask: re.Pattern[str] | None = None) -> list[str]:
    """Her uses of :data:`SELF_FORMS` in ``text``; ``mask``: the names that hold one (魏彦吾
    is nobody's 吾)."""
    if _SELF_LITERAL.search(text) is None:  # most lines: no lookaround, no names to mask
        return []
    if mask is not None:
        text = mask.sub("　", text)
    return [m.group(0) for m in _SELF_RE.finditer(text)]


def self_mask(people: Iterable[str]) -> re.Pattern[str] | None:
    """The names among ``people`` that hold a form of :data:`SELF_FORMS`, longest first."""
    held = sorted({p for p in people if len(p) > 1 and _SELF_RE.search(p)}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, held)), re.IGNORECASE) if held else None


def _branches_meet(a: str | None, b: str | None) -> bool:
    """Two lines can follow each other: not in different options of one decision."""
    if not a or not b or a == b:
        return True
    da, _, va = a.partition(":")
    db, _, vb = b.partition(":")
    return da != db or bool(set(va.split(";")) & set(vb.split(";")))


def _stages(lines: Iterable[SpokenLine]) -> Iterator[list[SpokenLine]]:
    cur: list[SpokenLine] = []
    for ln in lines:
        if cur and ln.stage_path != cur[0].stage_path:
            yield cur
            cur = []
        cur.append(ln)
    if cur:
        yield cur


def _is_doctor_turn(ln: SpokenLine) -> bool:
    return ln.kind == "choice" or ln.speaker.strip() in DOCTOR_NAMES


def _mark_to_doctor(stage: Sequence[SpokenLine], out: set[str]) -> None:
    """The lines of a scene where only one person speaks besides the Doctor (his choices or
    lines spoken as 博士): what she says there is said to him."""
    scenes: dict[int, list[SpokenLine]] = {}
    for ln in stage:
        scenes.setdefault(ln.scene, []).append(ln)
    for lines in scenes.values():
        if not any(_is_doctor_turn(ln) for ln in lines):
            continue
        said = [ln for ln in lines if not _is_doctor_turn(ln) and ln.kind == "dialogue"]
        if len({ln.speaker for ln in said}) == 1:
            out.update(ln.line_id for ln in said if not ln.uncertain)


def _next_speaker(stage: Sequence[SpokenLine], i: int) -> SpokenLine | None:
    ln = stage[i]
    for nb in stage[i + 1 :]:
        if nb.scene != ln.scene:
            return None
        if _branches_meet(nb.branch, ln.branch):
            return nb
    return None


def _name_chars(names: Collection[str]) -> frozenset[str]:
    """The characters of her names a pet name may be made from (小玫 for 玫兰莎): not a pet
    prefix (小, 阿, 老, 大)."""
    return frozenset(c for n in names for c in n if _CJK.match(c)) - _PET_PREFIXES


def build_background(
    lines: Iterable[SpokenLine],
    *,
    tokenizer: Tokenizer | None,
    speaker_ids: Mapping[str, str],
    names_of: Mapping[str, Collection[str]],
    people: Collection[str] = (),
    display: Callable[[str], str] | None = None,
) -> Background:
    """One pass over the corpus's spoken lines in (stage, line number) order: every dialogue
    line's tokens and symbols, lengths and ellipses (the background), the tokens of the lines
    of operators (``speaker_ids``: speaker label -> char id), the lines of a scene with the
    Doctor alone, and every vocative that calls an operator (``names_of``: char id -> the names she
    goes by; ``people``: every person's name, folded; ``display``: what an operator speaker is
    called in a fact). ``tokenizer`` None: no tokens (the tests of the other facts)."""
    bg = Background(people=frozenset(p.lower() for p in (*people, *speaker_ids) if not _generic(p)))
    bg.mask = self_mask(bg.people)
    owner: dict[str, str] = {}
    for cid, names in names_of.items():
        for n in names:
            owner.setdefault(n.lower(), cid)
    chars = {cid: _name_chars(names) for cid, names in names_of.items()}
    finder = AhoCorasick(sorted(k for k in owner if k) or ["\x00"])
    lengths: Counter[int] = Counter()
    for stage in _stages(lines):
        _mark_to_doctor(stage, bg.to_doctor)
        for i, ln in enumerate(stage):
            if ln.kind == "dialogue":
                toks = _line_tokens(ln.text, tokenizer)
                bg.tokens.update(toks)
                bg.total += len(toks)
                bg.lines += 1
                lengths[shown_length(ln.text)] += 1
                bg.ellipsis_lines += has_ellipsis(ln.text)
                bg.self_forms.update(_self_uses(ln.text, bg.mask))
                if not ln.uncertain and ln.speaker in speaker_ids:
                    bg.line_tokens[ln.line_id] = TOKEN_SEP.join(toks)
            if ln.uncertain:
                continue
            me = speaker_ids.get(ln.speaker)
            nb = _next_speaker(stage, i)
            answer = speaker_ids.get(nb.speaker) if nb is not None and not nb.uncertain else None
            if answer == me:
                answer = None  # she goes on: nobody answers her
            if answer is None and not finder.find_matches_as_indexes(ln.text.lower()):
                continue  # no operator's name in it, none answering: nobody to hear it
            words = vocatives(ln.text)
            if words:
                who = (
                    DOCTOR
                    if _is_doctor_turn(ln)
                    else (display(me) if me and display else ln.speaker)
                )
                _hear(ln, words, who, me, answer, bg, owner, chars)
    bg.median_length = _median_of(lengths)
    return bg


def _hear(
    ln: SpokenLine,
    words: list[str],
    who: str,
    me: str | None,
    answer: str | None,
    bg: Background,
    owner: Mapping[str, str],
    chars: Mapping[str, frozenset[str]],
) -> None:
    """The operators ``ln`` calls (``words``: its vocatives; ``me``: its speaker's id;
    ``answer``: the operator whose line answers it, None for nobody or the speaker herself)."""
    for w in dict.fromkeys(words):
        if len(w) > MAX_FORM_CHARS + 4:  # a clause, not somebody called
            continue
        named = owner.get(w.lower())
        if named is None and w[-1] in _HONORIFIC_ENDS:
            rest, title = _strip_honorific(w)
            named = owner.get(rest.lower()) if title else None
        if named is not None:
            if named != me:
                bg.heard.setdefault(named, []).append(
                    Heard(w, who, ln.line_id, ln.stage_path, True)
                )
            continue
        if answer is None or _DOCTOR_WORD.match(_bare(w)):
            continue
        if _is_person(w, bg.people) or not (
            is_address_word(_bare(w), bg.people)
            or (w not in STOPWORDS and not chars.get(answer, _NONE).isdisjoint(w))
        ):
            continue
        bg.heard.setdefault(answer, []).append(Heard(w, who, ln.line_id, ln.stage_path, False))


def _median_of(hist: Counter[int]) -> float:
    n = sum(hist.values())
    if not n:
        return 0.0
    vals: list[int] = []
    seen = 0
    for v in sorted(hist):
        for _ in range(hist[v]):
            seen += 1
            if seen in ((n + 1) // 2, n // 2 + 1):
                vals.append(v)
        if seen > n // 2:
            break
    return sum(vals) / len(vals)


# -- the statistic -------------------------------------------------------------------------


def log_odds_z(mine: int, my_total: int, rest: int, rest_total: int, prior: float) -> float:
    """The z-score of the log-odds ratio of a word in her lines against everybody else's,
    with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008, eq. 22):
    ``prior`` is the word's pseudo-count (:data:`PRIOR_SIZE` x its corpus frequency)."""
    a0 = PRIOR_SIZE
    a = max(prior, 1e-9)
    mine_odds = (mine + a) / max(my_total + a0 - mine - a, 1e-9)
    rest_odds = (rest + a) / max(rest_total + a0 - rest - a, 1e-9)
    delta = math.log(mine_odds) - math.log(rest_odds)
    return delta / math.sqrt(1 / (mine + a) + 1 / (rest + a))


# -- one operator ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Said:
    """One line of hers as the facts count it."""

    text: str
    source_id: str
    unit: str  # a stage path, or the voice line's own id
    voice: bool
    line_id: str = ""  # story lines
    battle: bool = False


def _said(voice: Sequence[VoiceLine], story: Sequence[StoryLine]) -> list[_Said]:
    out = [
        _Said(v.text, v.source_id, v.source_id, True, battle=voice_group(v.title) == BATTLE)
        for v in voice
        if voice_group(v.title) is not None or v.title.startswith("戳一下")
    ]
    seen: set[str] = set()
    for s in story:
        if s.line_id not in seen:
            seen.add(s.line_id)
            out.append(_Said(s.text, s.source_id, s.stage_path, False, s.line_id))
    return out


def _to_doctor(lines: Sequence[_Said], bg: Background) -> list[_Said]:
    """Her lines to the Doctor (see the module docstring)."""
    out = []
    for s in lines:
        if not s.voice and not (addresses_doctor(s.text) or s.line_id in bg.to_doctor):
            continue
        if not s.voice and any(
            _is_person(w, bg.people) and not _DOCTOR_WORD.match(_bare(w)) for w in vocatives(s.text)
        ):
            continue  # she calls somebody else here
        out.append(s)
    return out


def _counts(voice: int, story: int) -> str:
    parts = [f"语音 {voice} 次" if voice else "", f"剧情 {story} 次" if story else ""]
    return "，".join(p for p in parts if p) or "0 次"


def _sources(lines: Iterable[_Said]) -> tuple[str, ...]:
    return tuple(list(dict.fromkeys(s.source_id for s in lines))[:MAX_SOURCES])


def doctor_form_fact(to_doctor: Sequence[_Said], people: Collection[str]) -> Fact | None:
    """Fact 1 (module docstring)."""
    by_form: dict[str, list[_Said]] = {}
    written: dict[str, Counter[str]] = {}
    for s in to_doctor:
        for w in dict.fromkeys(vocatives(s.text)):
            form = doctor_form(w, people)
            if form is None:
                continue
            if not by_form.get(form) or by_form[form][-1] is not s:
                by_form.setdefault(form, []).append(s)
            written.setdefault(form, Counter())[w if form != DOCTOR else DOCTOR] += 1
    ranked = sorted(
        (f for f in by_form if len(by_form[f]) >= DOCTOR_FORM_MIN),
        key=lambda f: (-len(by_form[f]), -sum(s.voice for s in by_form[f]), f),
    )
    if not ranked:
        return None

    def said(form: str) -> str:
        return written[form].most_common(1)[0][0]

    def counted(form: str) -> str:
        got = by_form.get(form, [])
        v = sum(s.voice for s in got)
        return _counts(v, len(got) - v)

    top = ranked[0]
    text = f"称博士为「{said(top)}」（{counted(top)}"
    if top != DOCTOR:
        doc = by_form.get(DOCTOR, [])
        text += f"；「博士」{len(doc)} 次"
    text += "）"
    cited = list(by_form[top])
    if len(ranked) > 1:
        second = ranked[1]
        text += f"；也称「{said(second)}」（{counted(second)}）"
        cited = cited[:2] + by_form[second][:1]
    return Fact(DOCTOR_FORM, text, _sources(cited))


def register_fact(to_doctor: Sequence[_Said]) -> Fact | None:
    """Fact 2: 您 or 你 in her lines to the Doctor."""
    lines = [s for s in to_doctor if not (s.battle and ("你" in s.text or "您" in s.text))]
    nin = [s for s in lines if "您" in s.text]
    ni = [s for s in lines if _SECOND.search(s.text)]
    n = len(nin) + len(ni)
    if n < REGISTER_MIN:
        return None
    if len(nin) / n >= REGISTER_SHARE:
        return Fact(REGISTER, f"对博士称「您」（{len(nin)} 句；「你」{len(ni)} 句）", _sources(nin))
    if len(ni) / n >= REGISTER_SHARE:
        return Fact(REGISTER, f"对博士称「你」（{len(ni)} 句；「您」{len(nin)} 句）", _sources(ni))
    counts = f"「您」{len(nin)} 句，「你」{len(ni)} 句"
    return Fact(REGISTER, f"对博士「您」「你」都用（{counts}）", _sources(nin[:2] + ni[:1]))


def _units(lines: Iterable[_Said]) -> int:
    return len({s.unit for s in lines})


def self_fact(lines: Sequence[_Said], bg: Background) -> Fact | None:
    """Fact 3: what she calls herself, besides 我."""
    uses: Counter[str] = Counter()
    where: dict[str, list[_Said]] = {}
    for s in lines:
        for f in _self_uses(s.text, bg.mask):
            uses[f] += 1
            where.setdefault(f, []).append(s)
    if not uses:
        return None
    mine_total = sum(len(_I_RE.findall(s.text)) for s in lines) + sum(uses.values())
    rest_total = max(bg.total, 1)
    bg_total = max(sum(bg.self_forms.values()), 1)
    kept = []
    for f, n in uses.most_common():
        if n < SELF_MIN or _units(where[f]) < SELF_UNITS:
            continue
        rest = max(bg.self_forms.get(f, 0) - n, 0)
        prior = PRIOR_SIZE * bg.self_forms.get(f, 0) / bg_total
        if log_odds_z(n, mine_total, rest, rest_total, prior) >= SELF_Z:
            kept.append(f)
    if not kept:
        return None
    i_lines = sum(1 for s in lines if _I_RE.search(s.text))
    named = "、".join(f"「{f}」（{uses[f]} 次）" for f in kept[:2])
    return Fact(
        SELF,
        f"自称{named}；「我」{i_lines} 句",
        _sources(s for f in kept[:2] for s in where[f][:2]),
    )


def expressions_fact(
    lines: Sequence[_Said], bg: Background, tokenizer: Tokenizer | None, names: Collection[str]
) -> Fact | None:
    """Fact 4: her signature tokens and symbols (module docstring)."""
    toks_of: list[list[str]] = []
    mine: Counter[str] = Counter()
    story_mine: Counter[str] = Counter()  # her uses the background counted too
    for s in lines:
        joined = bg.line_tokens.get(s.line_id) if not s.voice else None
        toks = (joined.split(TOKEN_SEP) if joined else []) if joined is not None else None
        if toks is None:
            toks = _line_tokens(s.text, tokenizer)
        else:
            story_mine.update(toks)
        toks_of.append(toks)
        mine.update(toks)
    blocked = bg.people | {n.lower() for n in names}
    cands = {
        t
        for t, n in mine.items()
        if n >= EXPR_MIN and t.lower() not in blocked and t not in STOPWORDS
    }
    where: dict[str, list[_Said]] = {}
    for s, toks in zip(lines, toks_of, strict=True):
        for t in cands.intersection(toks):
            where.setdefault(t, []).append(s)
    my_total = sum(mine.values())
    rest_total = max(bg.total - sum(story_mine.values()), 1)
    bg_total = max(bg.total, 1)
    scored = []
    for t in cands:
        if _units(where[t]) < EXPR_UNITS or not is_manner_word(t):
            continue
        rest = max(bg.tokens.get(t, 0) - story_mine.get(t, 0), 0)
        prior = PRIOR_SIZE * max(bg.tokens.get(t, 0), 1) / bg_total
        z = log_odds_z(mine[t], my_total, rest, rest_total, prior)
        if z >= EXPR_Z:
            scored.append((z, t))
    if not scored:
        return None
    top = [t for _, t in sorted(scored, key=lambda x: (-x[0], x[1]))[:EXPR_MAX]]
    body = "、".join(f"「{t}」（{mine[t]} 次，{_units(where[t])} 处）" for t in top)
    return Fact(EXPRESSIONS, f"常用语：{body}", _sources(where[t][0] for t in top))


def is_manner_word(token: str) -> bool:
    """A token that says how she speaks, not what of: a symbol, an interjection, or a word
    jieba's dictionary tags as one of :data:`_MANNER_TAGS`; a single character only when it is
    an interjection (:data:`_INTERJECTIONS`); never a Latin word (her robots' and her
    products' names)."""
    if token in SYMBOLS:
        return True
    if not _CJK.search(token):
        return False
    if len(token) == 1:
        return token in _INTERJECTIONS
    tags = _tags(token)
    return all(t.startswith(_MANNER_TAGS) for _, t in tags) and not any(
        t.startswith(("vn", "an")) for _, t in tags
    )


def called_fact(heard: Sequence[Heard], name: str, plain: Collection[str]) -> Fact | None:
    """Fact 5: what the others call her, and who (module docstring)."""
    by_form: dict[str, list[Heard]] = {}
    trivial = {p.lower() for p in plain}
    for h in heard:
        if h.form.lower() in trivial:
            continue
        key = _bare(h.form)
        by_form.setdefault(key, []).append(h)
    kept = [
        f
        for f, hs in by_form.items()
        if len(hs) >= CALLED_MIN and len({h.stage_path for h in hs}) >= CALLED_STAGES
    ]
    if not kept:
        return None
    kept.sort(key=lambda f: (-len(by_form[f]), f))
    parts = []
    cited: list[str] = []
    for f in kept[:CALLED_MAX]:
        who = Counter(h.speaker for h in by_form[f])
        shown = "、".join(f"{sp} {n} 次" for sp, n in who.most_common(CALLED_SPEAKERS))
        if len(who) > CALLED_SPEAKERS:
            shown = f"{len(by_form[f])} 次，{shown}等"
        parts.append(f"「{f}」（{shown}）")
        cited.append(f"story:{by_form[f][0].line_id}")
    return Fact(CALLED, f"别人叫{name}" + "、".join(parts), tuple(cited[:MAX_SOURCES]))


def length_fact(lines: Sequence[_Said], bg: Background) -> Fact | None:
    """Fact 6: her median line length and her share of lines with an ellipsis."""
    if not lines:
        return None
    lengths = [shown_length(s.text) for s in lines]
    median = statistics.median(lengths)
    with_dots = [s for s in lines if has_ellipsis(s.text)]
    share = len(with_dots) / len(lines)
    bg_share = bg.ellipsis_lines / bg.lines if bg.lines else 0.0
    text = f"句长中位 {_num(median)} 字（{len(lines)} 句"
    text += f"，全体 {_num(bg.median_length)} 字）" if bg.lines else "）"
    text += f"；{round(share * 100)}% 带省略号"
    text += f"（全体 {round(bg_share * 100)}%）" if bg.lines else ""
    order = sorted(range(len(lines)), key=lambda i: (abs(lengths[i] - median), lines[i].source_id))
    typical = [lines[i] for i in order[:2]]
    return Fact(LENGTH, text, _sources([*typical, *with_dots[:1]]))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def speech_facts(
    voice: Sequence[VoiceLine],
    story: Sequence[StoryLine],
    bg: Background,
    *,
    name: str,
    char_ids: Collection[str] = (),
    names: Collection[str] = (),
    plain: Collection[str] = (),
    tokenizer: Tokenizer | None = None,
) -> list[Fact]:
    """Every fact of her way of speaking (module docstring), in section order; [] when she
    has fewer than :data:`MIN_LINES` lines. ``name``: what a chat calls her (facts name her,
    never 她/他: many operators are men); ``char_ids``: her forms (whose calls count as hers);
    ``names``: every name she goes by (never an expression); ``plain``: the other names
    everybody calls her (her code name: not news when others do); ``tokenizer``: the one the
    background was built with."""
    lines = _said(voice, story)
    if len(lines) < MIN_LINES:
        return []
    to_doc = _to_doctor(lines, bg)
    heard = [h for c in char_ids for h in bg.heard.get(c, ())]
    facts = [  # most telling first: a block over budget drops from the last
        doctor_form_fact(to_doc, bg.people),
        called_fact(heard, name, {name, *plain}),
        self_fact(lines, bg),
        register_fact(to_doc),
        expressions_fact(lines, bg, tokenizer, names),
        length_fact(lines, bg),
    ]
    return [f for f in facts if f is not None]
