"""Lorebook keys that SillyTavern can match in Chinese chat without firing on the wrong words.

SillyTavern fires a World Info / character-book entry when one of its keys occurs in the recent
chat: a case-insensitive substring test. "Match whole words" wraps a key in JavaScript's
``(?:^|\\W)…(?:$|\\W)`` without the ``u`` flag, and every CJK character is a ``\\W`` there, so
for Chinese it changes nothing. A Chinese name that is also a word (空 in 空气, 年 in 今年, 银灰
in 银灰色, 陈 in 陈皮) or part of another name (红 in 红豆) therefore fires where nobody meant
that person. A secondary NOT ANY blocker does not help: 夕阳 anywhere in the scanned text
blocks the entry even where 夕 is named beside it (我和夕去看夕阳了).

**The rule** (:class:`KeyMaker`). A name of a person is *unsafe* as a plain key when

* it is a name the names layer treats as a word (:func:`arklore.names.rules.classify`: every
  single character, and any name jieba's dictionary lists as a common word), or
* it occurs inside a dictionary word or a hand-listed chat word
  (``data/name_stopwords.txt``), or
* it occurs inside a name of another person (红 is inside 红豆), or
* it is Latin (W is the w of WWDC; Ash the ash of ashes).

An unsafe name becomes a JavaScript regular-expression key, ``/pattern/``, which SillyTavern
tests as written (:meth:`KeyMaker.regex_key`): the name with a lookbehind for what comes before
it in the words that end with it (今年, 七夕: ``(?<!今|七)``), a lookahead for what comes after it
in the words that start with it (年轻, 夕阳, 陈皮: ``(?!轻|阳|皮)``), and for a word that holds it
inside both at once (新陈代谢: ``(?<!新(?=陈代谢))``), each the whole rest of the word, so 年夜饭
does not cost 年 her 年夜; a single character also not after a digit (3年). A Latin name gets ASCII letter boundaries and
the ``i`` flag (``/(?<![a-z])w(?![a-z])/i``). Each lookbehind holds alternatives of one width,
so the pattern means the same in Python's ``re`` (the lint) as in JavaScript (SillyTavern).

What players type that the game text does not tell is in ``data/lorebook_keys.toml``
(:func:`key_data`): fan nicknames (德狗, 小羊), which key her like her other names, and chat
words that hold a name (陈记, 陈奕迅: a lookaround) or are one (可颂 the pastry: keyed only
where a person is meant). Where a name that is a word is keyed only next to what marks a
person, 的, 有 or a measure word just before it make it the thing (窗外的夜莺), and what a
person has after 的 (暴雨的盾) or does (远山给我…) marks her.

A person of the story who is not an operator and whose name is itself a word (主教, 奶奶) is
nobody in particular: she gets no key (listed, with why). Her nicknames (陈sir, 小玫: what the
story calls her, :meth:`~arklore.cards.facade.CardsFacade.people`) are names like any other,
except a form that is a question (什么意思: :func:`nickname_ok`); a name two people are called
(二队长: 幽灵鲨 and 歌蕾蒂娅) keys neither (``KeySet.shared``).

What the second development set (``data/lorebook_dev2.jsonl``) showed, as rules: a Latin name
with letters beyond ASCII is keyed in its ASCII form too (młynar, mlynar: :func:`ascii_form`);
a codename that is an English word (``[english]`` of the data file: ray, may, spot, doc) is that
word inside an English phrase, so it keys her only where no Latin word stands a space or hyphen
away (``ray tracing``, ``see you in may``), and typed in lower case only beside what marks a
person (``doc文件`` is a file, ``Doc又在打针`` and ``ash拿着枪`` are her); a name that is a
title (医生) is a person wherever it is, so only a word of the game makes it her (医生干员,
抽到医生), not 医生说; a single
character after 姓 is a surname (老板姓陈); a measure word before a name that is a word makes
it the thing (装了个天空盒灯).

What the development sets written the way players chat showed, as one more rule: players
join the names of people who belong together (夜莺和闪灵, 年和夕, 银灰崖心初雪), so a name that is
a word is her where it is joined to one of her people (the relations her card describes, both
ways: ``bonds``, :meth:`KeyMaker.partner_names`); a partner whose name is itself a word needs
a joining word (霜叶红于二月花 is the leaves). A name that is a word set apart by spaces, at
the start of a line or between words (惊蛰 老婆, 莎草 和 裁度 是…), is her too: Chinese writes
no spaces between words, so players space out the name they mean (:data:`SET_APART`). Every
name is keyed in traditional script as well (銀灰, 夜鶯: :func:`both_scripts`), as players on
the Taiwan and Hong Kong servers write it, and so is a word of the game anywhere on her line
(:func:`game_talk`: 這期危機合約全靠夜鶯); the words right beside a name, and her people's
names joined to hers, stay simplified (in both scripts they made the keys far longer or a
scan slower for a mention or two: ``bench_lorebook_scan``, docs/sillytavern.md).

``arklore export lint`` (:mod:`arklore.cards.lint`) measures what this rule lets through on
labelled chat messages, and the suite runs SillyTavern's own ``matchKeys`` on them.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources

import ahocorasick
import opencc

from arklore.cards.lint import AND_ANY
from arklore.core.kinship import (
    BETWEEN_THEIRS,
    BLOCKERS,
    FILLERS,
    OWNERS_OTHER,
    OWNERS_YOURS,
    RELATIVE,
    SAYS_WHAT,
    TERMS,
    THEIRS,
    YOU,
    Term,
    is_term_word,
)
from arklore.names import rules
from arklore.names.aliases import AliasTable, fold

MIN_LATIN = 3
"""A Latin topic shorter than this (Ex) keys no memory entry."""

SKIP_PREFIX = "$"
"""Alias-table surfaces that are script ids (``$avatar_chen2``), never written in chat."""

_ASCII = re.compile(r"[0-9a-z]")


_EDGE_MARKS = "\"'“”‘’「」『』《》〈〉（）()【】[]？?！!。，,、…~～·：: \u3000"


def topic_key(title: str) -> str:
    """A stage or event title as a key: folded, quotes and punctuation at its ends removed
    (“降临” -> 降临, 逃票？ -> 逃票), since a chat message does not repeat them."""
    return fold(title.strip().strip(_EDGE_MARKS))


TRANSLITERATION = frozenset(
    "阿埃艾爱安昂奥巴拜班邦鲍贝本比彼宾波伯博布采查达戴丹道德登迪蒂丁杜多厄恩尔法菲费芬弗"
    "福盖甘冈戈格根古哈海豪赫亨胡霍基吉加贾杰卡凯坎康考柯科克肯库奎拉莱赖兰朗劳勒雷蕾黎里"
    "丽利莉琳卢鲁伦罗洛玛马迈麦曼梅蒙米莫姆穆纳奈瑙内尼涅纽努诺欧帕佩皮珀普奇齐乔切琼萨塞"
    "瑟森莎舍施舒斯苏索塔泰坦特提图托瓦威韦维温沃乌伍西希锡休雅亚耶伊尤约泽扎詹兹佐娅娜妮"
    "琪缇薇嘉黛茜妲摩夫哲丝辛柳英桑茨因陀赛"
)
"""Characters Chinese spells foreign names with (卡, 斯, 娅, 尔 …): a dictionary word made of
them only is a foreign name (卡夫卡, 阿尔图罗, 莱辛, 德克萨斯), which players write as her
name, not as a word."""


def is_transliterated(name: str) -> bool:
    """Whether a CJK name is spelled in transliteration characters only (:data:`TRANSLITERATION`)."""
    return len(name) > 1 and all(c in TRANSLITERATION for c in name)


def _one_char_name(name: str) -> bool:
    """A single CJK character that is no numeral: a name (绩, 颉), not 九."""
    pos = rules.word_freqs().get(name)
    return len(name) == 1 and not is_latin(name) and (pos is None or pos[1] != "m")


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
    """The keys of one person's entry (see the module doc): plain names and regex keys.
    ``secondary`` is what a caller adds (her name for a memory entry in a shared book)."""

    person: str
    keys: list[str]
    secondary: list[str] = field(default_factory=list)
    whole_words: bool = False
    unsafe: dict[str, str] = field(default_factory=dict)  # name -> why it is a regex key
    unreachable: list[str] = field(default_factory=list)  # names that are nobody in particular
    shared: list[str] = field(default_factory=list)  # names another person is called too
    logic: int = AND_ANY

    @property
    def selective(self) -> bool:
        return bool(self.secondary)

    @property
    def empty(self) -> bool:
        return not self.keys

    def why_empty(self) -> str:
        if self.shared and not self.unreachable:
            return "every name is another person's too: it tells nobody apart"
        if self.unreachable:
            return "every name is an ordinary word: nobody in particular"
        return "no name usable as a key"


@dataclass(frozen=True)
class KeyData:
    """``data/lorebook_keys.toml``: fan nicknames (base char id -> names) and chat words that
    hold a name or are one."""

    nicknames: dict[str, tuple[str, ...]]
    words: frozenset[str]
    english: frozenset[str] = frozenset()


@cache
def key_data() -> KeyData:
    """The packaged ``data/lorebook_keys.toml`` (see its header)."""
    raw = (resources.files("arklore") / "data" / "lorebook_keys.toml").read_text("utf-8")
    doc = tomllib.loads(raw)
    nicks: dict[str, list[str]] = {}
    for row in doc.get("nickname", []):
        nicks.setdefault(str(row["id"]), []).append(str(row["name"]))
    words = frozenset(fold(str(row["text"])) for row in doc.get("word", []))
    english = frozenset(fold(str(w)) for w in doc.get("english", {}).get("words", []))
    return KeyData({k: tuple(v) for k, v in nicks.items()}, words, english)


@cache
def _words() -> tuple[tuple[str, int], ...]:
    """Dictionary and chat words a key could sit inside, with their frequency: jieba's (at
    least the names layer's STOP_FREQ_MIN), the hand list and the lorebook's chat words
    (:func:`key_data`; both counted as common), folded."""
    freq = rules.word_freqs()
    words = {fold(w): f for w, (f, _pos) in freq.items() if f >= rules.STOP_FREQ_MIN and len(w) > 1}
    for w in [*rules.extra_stopwords(), *key_data().words]:
        if len(w) > 1:
            words[fold(w)] = max(words.get(fold(w), 0), rules.HONORIFIC_WORD_KEEP)
    return tuple(sorted(words.items()))


@dataclass
class _Hosts:
    """The most frequent longer word containing a key, and every one (``collect`` keys)."""

    inside: tuple[str, int] = ("", 0)
    words: list[str] = field(default_factory=list)  # every host word (``collect`` keys only)


def _automaton(words: Iterable[str]) -> ahocorasick.Automaton:
    """An automaton that finds each of ``words`` (its value: the word itself)."""
    auto = ahocorasick.Automaton()
    for w in words:
        auto.add_word(w, w)
    auto.make_automaton()
    return auto


def word_hosts(keys: Iterable[str], collect: Iterable[str] = ()) -> dict[str, _Hosts]:
    """For each key, the most frequent longer dictionary word containing it, and for the
    keys in ``collect`` every word containing it (one scan of the dictionary for all keys)."""
    collect = set(collect)
    keys = {k for k in keys if k and not is_latin(k)}
    out = {k: _Hosts() for k in keys}
    if not keys:
        return out
    auto = _automaton(keys)
    for word, f in _words():
        for _end, k in auto.iter(word):
            if len(word) == len(k):
                continue
            h = out[k]
            if k in collect:
                h.words.append(word)
            if f > h.inside[1]:
                h.inside = (word, f)
    return out


_FUNCTION_CHARS = frozenset("的了是好对行嗯吗呢吧啊呀哦嘛就都也还")
_PARTICLES = "啊呀呢吧哦嘛哇啦"
_QUESTIONS = ("什么", "怎么", "哪", "谁", "为何")


def nickname_ok(form: str) -> bool:
    """Whether a form the story's others call her by (陈sir, 小玫, 丽兹) may key her: not a
    kinship or role word (队长, 姐姐), a title alone (小姐, 先生), a common word (鲨鱼, 小家伙),
    a reply (好的) or a call with its particle (芙蓉啊), or a single character: those say
    nobody's name."""
    f = fold(form)
    return (
        len(f) > 1
        and not set(f) <= _FUNCTION_CHARS  # 好的, 是的: a reply the speech rule took for a call
        and not f.endswith(tuple(_PARTICLES))  # 芙蓉啊
        and not any(
            q in f for q in _QUESTIONS
        )  # 什么意思: a question the speech rule took for a call
        and not is_term_word(form)
        and form not in rules.HONORIFIC_SUFFIXES
        and rules.classify(f) != "risky"
    )


def kin_key(word: str, term: Term, others: Iterable[str] = ()) -> str:
    """A kinship or role word (妹妹, 舅舅, 哥) as the key of the person it means in a chat with
    her, with the kinship rule of a message (:func:`arklore.core.kinship.find_terms`): never
    right after 我/他/她 (somebody else's), a one-character word only right after 你/您 (你哥),
    one that alone means the speaker's own (家人, 搭档) only with 你/您 before it in its clause
    (你那两个老战友), and not where a blocker holds it (小姐姐 is no 姐姐, 老爷子 no 老爷).
    ``others``: the names of her other people; right before one of them the word is about that
    one (你妹妹崖心 is not her other sister, 你的搭档菲亚梅塔 not 能天使)."""
    esc = _kin_spelling(word)  # 隊長, 姊姊: traditional script too
    named = sorted({n for n in others if n and not is_latin(n)}, key=lambda n: (-len(n), n))
    if named:  # 妹 of 你妹妹崖心: its doubled form too
        esc += f"(?!{_kin_spelling(word[-1])}*(?:{'|'.join(map(_js_escape, named))}))"
    blocked = {b[: -k] for b in BLOCKERS for k in range(1, len(word) + 1)
               if len(b) > k and b.endswith(word[:k])}  # fmt: skip
    blocked |= {b[: b.find(word)] for b in BLOCKERS if word in b and b.find(word) > 0}
    # a longer word that ends with it is that word (大妹妹 picks one sister: not 妹妹)
    blocked |= {f[: -len(word)] for t in TERMS for f in t.forms if f.endswith(word) and f != word}
    held = sorted(b[len(word) :] for b in BLOCKERS if b.startswith(word) and b != word)
    if held:  # 老爷子 is somebody's old man, not her lord
        esc += f"(?!{'|'.join(map(_js_escape, held))})"
    if len(word) == 1:
        yours = _by_width(OWNERS_YOURS)
        return f"/(?:{'|'.join(f'(?<={alts})' for alts in yours)}){esc}/"
    # someone else's (我妹妹, 她的老朋友) or what someone is (你们以前是同事): not her people
    not_theirs = "".join(f"(?<!{alts})" for alts in _by_width([*THEIRS, *SAYS_WHAT, *blocked]))
    mine = "(?<![^你您妳们們]的)"  # after 的 it is somebody's (银灰的妹妹), unless 你的/您的
    # 你 right before it (你那两个老…), or a clause closed by 的 (你那个爱画画的妹妹): hers
    strict = f"{YOU}[{FILLERS}]{{0,6}}{mine}|{RELATIVE}"
    if term.yours_only:  # 队长说明天集合: the speaker's own captain as often as hers
        return f"/(?:{strict}){not_theirs}{esc}/"
    # else hers only where her line has not said someone else's first (我妹妹也总顶嘴，你说
    # 妹妹长大了都这样): a line of the scan runs from its start or a newline. The ways in
    # share one tail, so the lookbehinds are written once.
    theirs = (
        f"(?:{_any_of(OWNERS_OTHER)})(?:{_any_of(BETWEEN_THEIRS)})?"
        f"(?:{_any_of(f for t in TERMS for f in t.forms)})"
    )
    line = f"(?:^|\\n)(?:(?!{theirs})[^\\n])*?"
    if term.owned:  # 战友, 家人: hers only with 你/您 before it in its clause (你那两个老战友)
        line += f"{YOU}{BEFORE_IN_CLAUSE}"
    return f"/(?:{strict}|{line}{mine}){not_theirs}{esc}/"


def _kin_spelling(word: str) -> str:
    """A kinship word as a pattern in both scripts (隊長), 姊 as 姐 (姊姊: Taiwan's 姐姐)."""
    return both_scripts(word).replace("姐", "[姐姊]")


BEFORE_IN_CLAUSE = "[^，。！？；,.!?;\\n]{0,8}?"
"""What may stand between 你/您 and a word that alone means the speaker's own (你那两个老战友),
as :func:`arklore.core.kinship.find_terms` reads it: the same clause."""


def _by_width(words: Iterable[str]) -> list[str]:
    """``words`` as alternations of one width each (Python's ``re`` takes only fixed-width
    lookbehinds), shortest first."""
    widths: dict[int, list[str]] = {}
    for w in sorted(set(words)):
        widths.setdefault(len(w), []).append(_js_escape(w))
    return ["|".join(ws) for _, ws in sorted(widths.items())]


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
    the dictionary once for all names."""

    def __init__(
        self,
        people: Sequence[Person],
        topics: Iterable[str] = (),
        bonds: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self.people = {p.id: p for p in people}
        self._bonds = {pid: sorted(set(ids)) for pid, ids in (bonds or {}).items()}
        self._topics = sorted({k for t in topics if (k := topic_key(t))})
        self._owners: dict[str, set[str]] = {}
        for p in people:
            for n in p.names:
                self._owners.setdefault(fold(n), set()).add(p.id)
        self._all_names = list(self._owners)
        cjk = [n for n in self._all_names if not is_latin(n)]
        self._hosts = word_hosts([*cjk, *self._topics], collect=cjk)
        self._containers = _containers(self._all_names)
        self._topic_in_names = _first_container(self._topics, self._all_names)
        self._titles = _containing(cjk, self._topics)  # 长夜临光 holds 临光, 怀黍离 黍
        self._overlaps = {n: o for n in cjk if len(n) > 1 and (o := _overlaps(n))}
        self._unsafe = {n: self._why_unsafe(n) for n in self._all_names}
        words = {fold(n) for p in people if p.operator for n in p.names if n}
        self._after_word = "".join(
            f"(?<!(?:{alts})[和跟同])"
            for alts in _by_width(n for n in words if not is_latin(n) and self._confirmed(n))
        )
        self._sets: dict[str, KeySet] = {}

    # -- names ----------------------------------------------------------------------------------
    def _others_containing(self, key: str) -> list[str]:
        """Names of other people that contain ``key`` (longer than it)."""
        owners = self._owners.get(key, set())
        return [n for n in self._containers.get(key, ()) if not self._owners[n] & owners]

    def _why_unsafe(self, name: str) -> str:
        if is_latin(name):
            return "Latin: ASCII letters around it are another word"
        if name in key_data().words:
            return "a chat word (data/lorebook_keys.toml)"
        hosts = self._hosts.get(name)
        others = self._others_containing(name)
        if rules.classify(name) == "risky":
            return "a single character" if len(name) == 1 else "a dictionary word"
        if hosts is not None and hosts.inside[1]:
            return f"inside the word {hosts.inside[0]}"
        if others:
            return f"inside the name {others[0]}"
        if self._titles.get(name):
            return f"inside the title {self._titles[name][0]}"
        if name in self._overlaps:
            return "a common word runs into it (可能天使)"
        return ""

    def _contexts(self, name: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        """Where ``name`` sits inside the words and other people's names that hold it: what
        comes before it in those that end with it (今年: 今), after it in those that start
        with it (年轻: 轻, 年夜饭: 夜饭), and both for those that hold it inside (新陈代谢:
        新, 代谢); each minimal (一年 makes 十一年 needless)."""
        ends: set[str] = set()
        starts: set[str] = set()
        inside: set[tuple[str, str]] = set()
        hosts = self._hosts.get(name)
        titles = self._titles.get(name, [])
        for w in {*(hosts.words if hosts else ()), *self._others_containing(name), *titles}:
            i = w.find(name)
            while i >= 0:
                pre, post = w[:i], w[i + len(name) :]
                if not pre:
                    starts.add(post)
                elif not post:
                    ends.add(pre)
                else:
                    inside.add((pre, post))
                i = w.find(name, i + 1)
        ends |= self._overlaps.get(name, set())  # 可能 ends with 能: 可 before 能天使
        before = sorted(p for p in ends if not any(p.endswith(q) for q in ends if q != p))
        after = sorted(p for p in starts if not any(p.startswith(q) for q in starts if q != p))
        held = sorted(
            (a, b)
            for a, b in inside
            if not any(a.endswith(q) for q in before) and not any(b.startswith(q) for q in after)
        )
        return before, after, held

    def partner_names(self, person_id: str) -> list[str]:
        """The names of the people she is bonded to (the graph's relations, both ways): joined
        to one of them (夜莺和闪灵, 初雪跟崖心, 年和夕), a name that is a word is her. Names two
        people share tell nobody apart; Latin ones do not join Chinese names: both left out."""
        out: set[str] = set()
        for other in self._bonds.get(person_id, ()):
            p = self.people.get(other)
            for n in p.names if p is not None else ():
                n = fold(n)
                if (
                    n and not n.startswith(SKIP_PREFIX) and not is_latin(n)
                    and len(self._owners.get(n, ())) == 1
                ):  # fmt: skip
                    out.add(n)
        return sorted(out)

    def regex_key(self, name: str, partners: Sequence[str] = ()) -> str:
        """``name`` as a SillyTavern regex key with the lookarounds of the module doc;
        ``partners``: the names of her people (:meth:`partner_names`)."""
        if is_latin(name):
            head = "(?<![a-z])" if is_latin(name[0]) else ""
            tail = "(?![a-z])" if is_latin(name[-1]) else ""
            if len(name) < MIN_LATIN and tail:  # W型, V字, 3W字, 两W: a letter or a unit
                tail = f"(?![a-z{SHAPES}])"
                head = f"(?<![a-z0-9{NUMERALS}])" if head else head
            if name in key_data().english:
                return self._english_key(name, head, tail)
            if head:  # lives in Texas: after an English preposition, a place or a thing
                head += PREPOSITIONS
            return f"/{head}{_js_escape(name)}{tail}/i"
        before, after, held = self._contexts(name)
        esc = both_scripts(name)
        behind: dict[int, list[str]] = {}
        # the words that hold the name in both scripts too: 夕陽 is the sunset as 夕阳 is
        for pre in [*before, *(DEGREE if len(name) == 1 else ())]:
            behind.setdefault(len(pre), []).append(both_scripts(pre))
        for pre, post in held:
            behind.setdefault(len(pre), []).append(
                f"{both_scripts(pre)}(?={esc}{both_scripts(post)})"
            )
        # one lookbehind per width: Python's re (the lint) takes only fixed-width ones
        head = "".join(f"(?<!{'|'.join(alts)})" for _, alts in sorted(behind.items()))
        if len(name) == 1:  # 3年; 老板姓陈: the surname, nobody in particular; 那些年
            head = f"(?<![{DIGITS}{SURNAME_OF}{MEASURES}])" + head
        tail = f"(?!{'|'.join(both_scripts(a) for a in after)})" if after else ""
        if self._confirmed(name):  # 初雪 the first snow: only where a person is meant
            bare = f"{head}{esc}{tail}"
            if rules.is_title(name):
                # a title is a person anyway (医生说…): only a word of the game makes it her;
                # after a name it is that person's (凯尔希医生又…): not her, without a marker
                lone = "(?<![\\u4e00-\\u9fff])"
                return (
                    f"/(?={esc})(?:(?:{_TITLE_BEFORE}){bare}|{lone}{head}{esc}(?={_TITLE_AFTER}))/"
                )
            lone = f"(?<![{NOUN_BEFORE}])" if len(name) > 1 else ""  # 窗外的夜莺, 有夜莺: the thing
            # a partner that is no word joins bare (闪灵夜莺), one a longer word holds too
            # (凛冬 of 凛冬将至: 凛冬真理); one that is a word needs a joining word
            plain = [n for n in partners if not self._confirmed(n) and len(n) > 1]
            words = [n for n in partners if n not in plain]
            # a word of the game anywhere in her message (one line of the scanned chat) makes
            # it game talk, where a word name is the operator and no thing (危机合约放了陨星,
            # 抽了个陨星, 同人图里的银灰)
            return (
                f"/(?={esc})(?:(?:{_PERSON_BEFORE}){self._after_word}{bare}"
                f"|{lone}{head}{esc}{NOT_A_CALL}(?={_PERSON_AFTER})"
                f"|{SET_APART}{bare}(?={SPACE})"
                f"|{bare}(?={IN_LINE}(?:{_GAME})){_joined_before(bare, words, plain)}"
                f"{_joined_after(bare, words, plain)})|(?:{_GAME}){IN_LINE}{bare}/"
            )
        if len(name) > 1:  # 装了个天空盒: a measure word makes it a thing
            head += f"(?<![{MEASURES}])"
        # (?=name) first: a regex engine tries the pattern at every position, and the name
        # fails fast where the long lookbehinds would be read for nothing
        return f"/(?={esc}){head}{esc}{tail}/" if head else f"/{esc}{tail}/"

    @staticmethod
    def _english_key(name: str, head: str, tail: str) -> str:
        """A codename that is an English word (doc, click, mint): the word, where no Latin word
        stands a space or hyphen away (ray tracing, see you in may) and, typed in lower case,
        where no person marker stands beside it (doc文件, click一下, 烟灰缸里全是ash). Her name
        is written with a capital (Doc又在打针), or beside what marks a person (ash拿着枪).
        Case-sensitive: letters are spelled as classes, no ``i`` flag."""
        head = (head + "(?<![a-z][ -])").replace("a-z", "A-Za-z")
        tail = (tail + "(?![ -][a-z])").replace("a-z", "A-Za-z")
        rest = "".join(f"[{c}{c.upper()}]" if "a" <= c <= "z" else _js_escape(c) for c in name[1:])
        first = name[0]
        capital = (first.upper() if "a" <= first <= "z" else _js_escape(first)) + rest
        any_case = (
            f"[{first}{first.upper()}]" if "a" <= first <= "z" else _js_escape(first)
        ) + rest
        return (
            f"/{head}(?:{capital}|(?:{_PERSON_BEFORE}){any_case}|{any_case}(?={_PERSON_AFTER}))"
            f"{tail}/"
        )

    @staticmethod
    def _confirmed(name: str) -> bool:
        """A name that is itself a common word is keyed only next to what marks a person
        (:data:`BEFORE_PERSON`, :data:`AFTER_PERSON`), since no lookaround tells the word from
        her: a word of two or more characters (初雪 the first snow, 暴雨, 真理), or a single
        character that is a word on its own (空的瓶子, 这座山, 红的那个). A single character
        the names layer accepts bare (signal 9: rare on its own, or a surname: 夕, 黍, 陈)
        has lookarounds only."""
        if len(name) > 1:
            if name in key_data().words:
                return True
            return rules.classify(name) == "risky" and not is_transliterated(name)
        return not rules.bare_ok(name) or rules.is_title(name)

    def topic_unsafe(self, topic: str) -> str:
        """Why a place or event name (one of ``topics``) cannot key a memory entry: too short,
        a dictionary word, inside one, or inside a person's name; "" when it can. Memory
        entries get no lookarounds: a topic that is unsafe is left out."""
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

    # -- one person ----------------------------------------------------------------------------
    def keys(self, person_id: str) -> KeySet:
        hit = self._sets.get(person_id)
        if hit is not None:
            return hit
        p = self.people[person_id]
        names = [fold(n) for n in p.names if n and not n.startswith(SKIP_PREFIX)]
        names = list(dict.fromkeys([*names, *(a for n in names if (a := ascii_form(n)))]))
        # a name two people are called (二队长 of 幽灵鲨 and 歌蕾蒂娅) tells neither apart
        shared = [n for n in names if len(self._owners.get(n, ())) > 1]
        names = [n for n in names if n not in shared]
        unsafe = {n: self._unsafe[n] for n in names if self._unsafe.get(n, "")}
        plain = [n for n in names if n not in unsafe]
        plain += [t for n in plain if (t := traditional(n)) != n and t not in plain]
        ks = KeySet(person_id, plain, unsafe=unsafe)
        ks.shared.extend(shared)
        partners = self.partner_names(person_id) if unsafe else []
        for n in unsafe:
            # a person of the story who is not an operator and whose name is a word is
            # nobody in particular (主教, 奶奶): no key
            if not p.operator and not is_latin(n) and rules.classify(n) == "risky":
                ks.unreachable.append(n)
            else:
                ks.keys.append(self.regex_key(n, partners))
        self._sets[person_id] = ks
        return ks

    def her_book_keys(self, person_id: str) -> KeySet:
        """:meth:`keys`, and in her own card's book the names of the story's others that the
        world book leaves out as words: a foreign name the dictionary holds (安妮塔, 胡安娜,
        贝尔德) and a one-character name (绩, 颉), keyed as an operator's would be (the one
        character only beside what marks a person). In the world book 玛丽 could be anyone's;
        in a chat with 斯卡蒂 or 棘刺 it is the one of her story. A role or a kin word that
        is no name (主教, 奶奶, 镜头) and a numeral (九) stay without a key."""
        ks = self.keys(person_id)
        named = [n for n in ks.unreachable if is_transliterated(n) or _one_char_name(n)]
        if not named:
            return ks
        return replace(
            ks,
            keys=[*ks.keys, *(self.regex_key(n) for n in named)],
            unreachable=[n for n in ks.unreachable if n not in named],
        )

    def all(self) -> dict[str, KeySet]:
        return {pid: self.keys(pid) for pid in self.people}


PREPOSITIONS = "(?<!in |at |to |of |on )(?<!the )(?<!from )"
"""Before a Latin name, an English preposition makes it a place or a thing (lives in Texas,
the book of Saga); her name follows other English words (Nian and Dusk are sisters)."""
NUMERALS = "一二两三四五六七八九十几百千万"
"""Before a Latin name of one or two letters, a Chinese numeral makes it a unit (月薪两W)."""
DIGITS = "0-9０-９"
"""Before a single-character name, a digit makes it a count or a date (3年, 7号)."""
SURNAME_OF = "姓"
SHAPES = "型形字号键"
"""After a Latin name of one or two letters, these make it a letter (W型, V字领)."""
DEGREE = (
    "很",
    "太",
    "更",
    "最",
    "挺",
    "好",
    "真",
    "超",
    "不",
    "没",
    "非常",
    "比较",
    "特别",
    "有点",
)
"""Before a single-character name, a degree word makes it an adjective (很红, 不空, 太黑)."""
BEFORE_PERSON: tuple[str, ...] = (
    *rules.ADDRESS_PREFIXES, *rules.PERSON_PRECEDERS_STRONG, *rules.GAME_CUES, "我家", "我们家",
    "找", "模仿", "练", "老婆是", "老公是", "本命是",
)  # fmt: skip
"""What before a name that is a word marks a person: @, a verb whose object is a person (和,
陪, 告诉), a word of the game (抽到, 练了). 和 joins two things too: right after another name
that is a word it does not mark her (白雪和初雪, 苇草和莎草: the sixth development set), and
two operators joined so are reached where the message is about people or the game
(:data:`ABOUT_PEOPLE`, :data:`GAME_WORDS`: 白金和流星谁好用)."""
PERSON_THINGS: tuple[str, ...] = (
    "盾", "刀", "剑", "枪", "弓", "弩", "箭", "法杖", "伤", "信", "演唱会", "演出", "新歌",
    "双刀", "拳", "锤", "电锯", "狙击", "手套", "剑术", "手里剑", "薙刀", "拐杖", "生日",
    "触手", "腿", "造型", "笑容", "乐器", "料理", "药箱",
)  # fmt: skip
"""What a person of the game has, after 的 (暴雨的盾, 空的演唱会, 芙蓉的料理): her, not the word.
Not clothes or hair: 深海色的衣服 is the colour's."""
PERSON_DOES: tuple[str, ...] = (
    "做", "配的", "配了", "配药", "骑", "扛", "射", "带队", "带着", "给你", "给我", "找你", "找我",
    "来看", "来找", "把", "被", "去", "和她", "和他", "和你", "跟她", "跟他", "陪我", "陪你", "托我",
    "一个人",
)  # fmt: skip
"""Verbs after a name that a person does to somebody or with something (远山给我算了一卦,
末药配的药, 灰烬带队): her, not the word. 配 only as making up (配的, 配药): 可颂配咖啡 is
breakfast."""
WHEN_AFTER = ("昨晚", "今晚", "刚才", "刚刚", "前天")
"""When she did something, right after her name (令昨晚又喝醉了), as 今天 and 昨天 are
(:data:`arklore.names.rules.SUBJECT_FOLLOWERS`)."""
DEGREE_SAID = ("好", "真", "很", "太", "最", "挺", "超", "真的", "也太", "也挺", "也好")
PERSON_TRAITS = (
    "强", "帅", "可爱", "肉", "酷", "温柔", "冷淡", "高冷", "靠谱", "能打", "能扛", "男人",
)  # fmt: skip
"""What players call an operator right after her name (银灰真男人, 深靛好冷淡, 九色鹿也挺可爱):
words of a person or of how she plays, none of a thing the name also is (no 好看, 好美: 极光
好美 is the sky; no 猛, 凶: 暴雨好猛 is the rain)."""
GAME_TALK: tuple[str, ...] = (
    "剧情", "大招", "配音", "档案", "召唤物", "陷阱", "无人机", "人设", "台词", "强度", "故事",
    "过去", "连锁", "奶量", "机制", "尾巴", "耳朵",
)  # fmt: skip
"""What players say of an operator, right after her name or after 的 (夜莺的大招, 卡夫卡剧情
好离谱, 桑葚奶量): the development set written the way players chat (``lorebook_dev3``)
names a word-named operator mostly so."""
TALK_AFTER: tuple[str, ...] = (
    *GAME_TALK, *(f"的{t}" for t in GAME_TALK), "那个", "上线", "专精", "好帅",
    "一拳", "一锤", "一箭", "举盾", "补刀", "开了技能", *(f"{n}技能" for n in "一二三123"),
    "这个名字", "这名字", "这个人", "这人", "让你", "让我", "上次", "开口",
    *(f"是{s}{n}" for s in ("", "个") for n in ("男的", "女的", "男生", "女生")),
    *(f"{d}{t}" for d in ("那把", "这把") for t in ("刀", "剑", "枪", "弓", "弩", "锤", "伞")),
    "永远的神", "天下第一", "帅死", "帅炸", "我的我的", "那孩子", "那丫头", "那小子", "那家伙",
)  # fmt: skip
"""Game talk after her name: 流星那个减防, 夜莺三技能, 莎草上线了, 洋灰这个名字, 真理让你去."""
GAME_WORDS: tuple[str, ...] = (
    *rules.GAME_CUES, "专精", "开荒", "先锋", "近卫", "重装", "术师", "狙击", "医疗", "辅助",
    "特种", "三星", "四星", "奶盾", "群奶", "单奶", "回费", "站场", "挂机", "复活", "阻挡", "部署",
    "攻速", "法抗", "减防", "减速", "血量", "大招", "剧情", "保底", "危机合约", "关卡",
    "池子", "十连", "基建", "输出", "联动", "打群", "肉鸽", "集成战略", "干员", "卡池",
    "限定", "六星", "五星", "新皮", "声优", "同人", "cos", "周边", "手办", "立牌", "抱枕", "配队",
    "阵容", "主力", "奶妈", "练度", "满级", "强度", "伤害", "治疗量", "贸易站", "制造站", "精英",
    "萌新", "新人", "打图", "新出", "攻略", "角色", "设定", "上场", "近战", "法盾", "法术盾",
    "出场", "本命", "副官", "助理", "清杂", "群伤", "新手", "配音", "戏份", "特效", "嗑",
    *(f"{s}{n}" for s in "sS" for n in "123"), "PV", "pv", "CG", "cg", "BGM", "bgm", "CP", "cp",
    "这关", "龙门币", "赛高", "yyds", "人设", "画师",
)  # fmt: skip
"""Words of the game: one anywhere in a message, before or after a name that is a word, makes
the message game talk, where the name is the operator (夜烟是我第一个精二的术师, 危机合约放了陨星,
肉鸽抓了个异客). The development sets written the way players chat name a word-named operator
so far more often than they talk of the weather in a line about 精二. The world's places and
peoples (萨尔贡, 乌萨斯) are no such word: a role-play chat is set there (今年喀兰的初雪下得早吗)."""
ABOUT_PEOPLE: tuple[str, ...] = (
    "这俩", "那俩", "她俩", "他俩", "她们俩", "他们俩", "两个人", "关系", "谁更", "谁比较", "谁强",
    "谁厉害", "谁好用", "谁的", "名字",
)  # fmt: skip
"""What says a message is about people (折光跟隐现这俩是什么关系, 暴雨和泥岩谁更肉): anywhere on
her line, like a word of the game."""
PULL_OR_TRAIN = "抽(?![烟屉筋风空象签水])|(?<![排训操演熟磨锻历])练(?![习琴字得舞歌功车])"
"""抽 (a pull) and 练 (to level her) as words of the game, not in 抽烟 or 排练, 练琴."""
STAGE_CODE = "[A-Za-z]{1,3}[0-9]{0,2}-[0-9]{1,2}"
"""A stage code (h12-4, CE-5, 1-7 is left out: a score or a date): a word of the game too."""
IN_LINE = "[^\\n]*?"
"""Anything on the same line: SillyTavern scans each message as one ``Name: text`` line."""
SPACE = "[ \u3000]"
SET_APART = "(?<![^\\n \u3000])"
"""Before a name that is a word, the start of a line or a space: with a space after it, the
name stands apart (惊蛰 老婆), as no word does in Chinese (module doc)."""
NOT_A_CALL = "(?!在?叫(?![你我他她]))"
"""After a name that is a word, 叫 with nobody called is the creature's cry (窗外夜莺在叫); 夜莺
在叫你 is her."""
MEASURES = "个只些群"
NOUN_BEFORE = f"有的{MEASURES}"
"""Before a name that is a word, what makes it the thing (窗外的夜莺, 有夜莺, 一只夜莺): a
marker after it does not make it her there."""
AFTER_PERSON: tuple[str, ...] = (
    *rules.HONORIFIC_SUFFIXES, *rules.SUBJECT_FOLLOWERS, *rules.GAME_CUES, *PERSON_DOES,
    *(f"的{n}" for n in rules.PERSON_NOUNS), *(f"的{w}" for w in rules.GAME_CUES),
    *(f"的{t}" for t in PERSON_THINGS), "，你", ",你", *TALK_AFTER, *WHEN_AFTER,
)  # fmt: skip
"""What after it does: a title (姐, 小姐), a verb a person does (说, 最近, 喝, 给你), a word of
the game (精二, 技能, 的皮肤), 的 and a person noun (的妹妹) or what a person has (的盾), a
call (初雪，你…)."""


JOINS = ("和", "跟", "与", "同", "、", "及", "还有", "以及", "或", "还是", "，", ",", "/", " ")
"""What joins two names in a list (闪灵夜莺 needs none)."""


def _joined_before(bare: str, words: Sequence[str], plain: Sequence[str]) -> str:
    """The alternative of a word-name key where one of her people follows her in a list
    (夜莺和闪灵, 年和夕). ``plain``: her people's names that are no word, which need no
    joining word (银灰崖心初雪); ``words``: the others, which do (霜叶红于二月花 is leaves)."""
    alts = [f"{_JOIN}?(?:{_any_of(plain)})"] if plain else []
    alts += [f"{_JOIN}(?:{_any_of(words)})"] if words else []
    return f"|{bare}(?={'|'.join(alts)})" if alts else ""


def _joined_after(bare: str, words: Sequence[str], plain: Sequence[str]) -> str:
    """The same with her person first (闪灵夜莺, 崖心和初雪), as lookbehinds of one width
    each (Python's ``re``, the lint, takes no other), so the name still guards the key."""
    widths: dict[tuple[int, int], tuple[set[str], set[str]]] = {}
    for names, joins in ((plain, ("", *JOINS)), (words, JOINS)):
        for n in names:
            for j in joins:
                got = widths.setdefault((len(n), len(j)), (set(), set()))
                got[0].add(n)
                got[1].add(j)
    behind = [
        f"(?<=(?:{_any_of(ns)}){f'(?:{_any_of(js)})' if any(js) else ''})"
        for _, (ns, js) in sorted(widths.items())
    ]
    return f"|(?:{'|'.join(behind)}){bare}" if behind else ""


def _any_before(words: Iterable[str]) -> str:
    """``words`` as positive lookbehinds, one per width (Python's ``re`` takes only fixed-width
    ones): the name right after any of them."""
    return "|".join(f"(?<={alts})" for alts in _by_width(words))


def _any_of(words: Iterable[str], escape: Callable[[str], str] | None = None) -> str:
    """``words`` as one alternation, longest first (的妹妹 before 的), ties in order: the same
    key on every run; ``escape`` spells each (default: literally, :func:`both_scripts` for
    both scripts)."""
    spell = escape or _js_escape
    return "|".join(spell(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))


_ASCII_LETTERS = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "æ": "ae", "œ": "oe", "ß": "ss"})


def ascii_form(name: str) -> str:
    """A Latin name with letters beyond ASCII as players type it on an ASCII keyboard
    (młynar -> mlynar, varkáris -> varkaris); "" when it has none or is not Latin."""
    if not is_latin(name) or name.isascii():
        return ""
    bare = "".join(
        c for c in unicodedata.normalize("NFKD", name.translate(_ASCII_LETTERS))
        if not unicodedata.combining(c)
    )  # fmt: skip
    return bare if bare.isascii() else ""


@cache
def _to_traditional() -> Callable[[str], str]:
    return opencc.OpenCC("s2t").convert


def traditional(text: str) -> str:
    """``text`` in traditional script, character by character (银灰 -> 銀灰): players on the
    Taiwan and Hong Kong servers, and many elsewhere, write names so."""
    convert = _to_traditional()
    return "".join(convert(c) for c in text)


def both_scripts(name: str) -> str:
    """``name`` escaped as a pattern that matches it in simplified and traditional script,
    each character that differs as a class of both (银灰 -> ``[银銀]灰``): one character
    wide, so lookbehinds keep their width."""
    out = []
    for c in name:
        t = traditional(c)
        out.append(f"[{c}{t}]" if len(t) == 1 and t != c else _js_escape(c))
    return "".join(out)


def _js_escape(text: str) -> str:
    """``text`` literal in a JavaScript (and Python) pattern, ``/`` escaped for
    SillyTavern's ``/pattern/`` form."""
    return re.sub(r"[\\^$.*+?()[\]{}|/-]", lambda m: "\\" + m.group(), text)


# the markers as the keys spell them, built once for every key
_PERSON_BEFORE = _any_before(BEFORE_PERSON)
# a degree and a trait as two groups: spelled out, every pair made the keys 13% longer
_PERSON_AFTER = f"{_any_of(AFTER_PERSON)}|(?:{_any_of(DEGREE_SAID)})(?:{_any_of(PERSON_TRAITS)})"
_TITLE_BEFORE = _any_before((*rules.ADDRESS_PREFIXES, *rules.GAME_CUES))
_TITLE_AFTER = _any_of((*rules.GAME_CUES, *(f"的{w}" for w in rules.GAME_CUES)))


def game_talk(escape: Callable[[str], str] | None = both_scripts) -> str:
    """A word of the game or about people, anywhere on her line (:data:`GAME_WORDS`,
    :data:`ABOUT_PEOPLE`), spelled in both scripts: 這期危機合約靠夜鶯 is game talk as much as
    the simplified. The markers right beside a name stay simplified (a name's own traditional
    form is keyed; every marker in both scripts made the keys 29% longer for one mention more
    than this)."""
    return f"{_any_of((*GAME_WORDS, *ABOUT_PEOPLE), escape)}|{STAGE_CODE}|{PULL_OR_TRAIN}"


_GAME = game_talk()
_JOIN = f"(?:{_any_of(JOINS)})"


OVERLAP_FREQ = 5000
"""A word this common that ends with the start of a name (可能 / 能天使) runs into it:
这项目可能天使轮 is no 能天使. Rarer words are left to chance."""


@cache
def _common_edges() -> dict[str, set[str]]:
    """For every proper end of a common word, what comes before it (可能: 能 -> {可})."""
    ends: dict[str, set[str]] = {}
    for w, f in _words():
        if f >= OVERLAP_FREQ:
            for k in range(1, len(w)):
                ends.setdefault(w[k:], set()).add(w[:k])
    return ends


def _overlaps(name: str) -> set[str]:
    """What a common word puts before ``name`` when it ends with its start
    (:data:`OVERLAP_FREQ`). Not after it: a word that starts with its end is most often what
    she does (崖心想…, 崖心里…), and blocking it would lose her."""
    ends = _common_edges()
    return {a for k in range(1, len(name)) for a in ends.get(name[:k], ())}


def _containing(names: Sequence[str], texts: Sequence[str]) -> dict[str, list[str]]:
    """name -> the ``texts`` (longer) that hold it, sorted (one automaton pass)."""
    if not names or not texts:
        return {}
    auto = _automaton(names)
    out: dict[str, list[str]] = {}
    for text in sorted(texts):
        for _end, k in auto.iter(text):
            if len(text) > len(k):
                out.setdefault(k, []).append(text)
    return out


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
    """key -> the first (sorted) of ``texts`` that holds it and is longer."""
    return {k: held[0] for k, held in _containing(keys, texts).items()}


__all__ = [
    "MIN_LATIN",
    "KeyData",
    "KeyMaker",
    "KeySet",
    "Person",
    "ascii_form",
    "both_scripts",
    "game_talk",
    "is_latin",
    "is_transliterated",
    "key_data",
    "kin_key",
    "nickname_ok",
    "people_from_table",
    "topic_key",
    "traditional",
    "word_hosts",
]
