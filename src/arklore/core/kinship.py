"""Kinship and role words: one vocabulary for what a chat message calls someone (舅舅, 你姐姐,
队长, 殿下) and for what a curated description says the other person is (她的舅舅, 深海猎人另一
支队伍的队长, 她敬称为殿下的旧主).

Each word belongs to a :class:`Term` that knows

* the kind of bond it names, on the scale of :data:`arklore.core.predicates.BOND_ORDER`
  (a 舅舅 is kin, a 队长 a superior): the graph ranks a ``other`` relation by the terms of its
  description, so a description decides what the predicate could not say;
* the forms a description uses for it (姐姐, 姐, 阿姐), looked for in the description's
  *head* -- its first clause, the noun phrase that says who B is to A (``她的舅舅，也是……``):
  later clauses talk about other people (``银灰把保护妹妹恩希亚的任务交给他``);
* its inverse, what A is to B when B is this to A (B's description of A says 妹妹: B is A's
  姐姐 or 哥哥), so a relation written only from the other side still answers;
* for role terms, the directed predicate that states it without any word (``B 师徒 A``: B is
  A's teacher), the last resort when no description names it.

No I/O and no arklore imports: :mod:`arklore.graph.named` resolves "her 舅舅" with it and
:mod:`arklore.graph.model` ranks her bonds with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from arklore.core.predicates import BOND_RANK, OTHER

KIN, PARTNER, GUARDIAN, SUPERIOR, FRIEND, PEER = (
    BOND_RANK["近亲"], BOND_RANK["恋人"], BOND_RANK["师徒"], BOND_RANK["上下级"],
    BOND_RANK["朋友"], BOND_RANK["同事"],
)  # fmt: skip

KIN_PREDICATES = frozenset({"近亲", "远亲", OTHER})
"""A family term is read only from relations of these predicates (a 朋友 she calls 姐姐 is no
sister)."""


@dataclass(frozen=True, slots=True)
class Term:
    """One kind of person someone can be to someone else (see the module docstring)."""

    name: str
    bond: int
    forms: tuple[str, ...]  # in a description's head: B is this to A
    words: tuple[str, ...] = ()  # said in a message, besides the forms of 2+ characters
    inverse: tuple[str, ...] = ()  # term names A is to B when B is this to A
    includes: tuple[str, ...] = ()  # term names a message word also means (家人: every kin)
    predicates: tuple[tuple[str, str], ...] = ()  # ("in", "师徒"): B 师徒 A states it
    above: bool = False  # B stands above A: never the object of A's directed predicate
    kin: bool = False  # a family term (see KIN_PREDICATES)
    said: bool = True  # a message may use it (False: a description cue only)
    owned: bool = False  # alone it means the speaker's own (和家人去看山): needs 你/您 before

    @property
    def yours_only(self) -> bool:
        """A role above someone (队长, 老板, 老师) said bare is the speaker's own as often as
        hers (队长说明天集合): hers only with 你/您 right before it (:data:`FILLERS` between)
        or a clause closed by 的 (:data:`RELATIVE`). A family word said bare in a chat with
        her is her family (妹妹最近好吗); :attr:`owned` words need 你/您 in their clause."""
        return not self.kin and not self.owned


_ELDER = ("姐姐", "哥哥")
_YOUNGER = ("妹妹", "弟弟")
_PARENTS = ("父亲", "母亲")
_CHILDREN = ("女儿", "儿子")

TERMS: tuple[Term, ...] = (
    # -- family ---------------------------------------------------------------------------
    Term("姐姐", KIN, ("姐姐", "姐", "阿姐", "老姐", "大姐", "二姐"), inverse=_YOUNGER,
         above=True, kin=True),
    Term("哥哥", KIN, ("哥哥", "哥", "兄长", "兄", "老哥", "大哥", "二哥"), inverse=_YOUNGER,
         above=True, kin=True),
    Term("妹妹", KIN, ("妹妹", "妹", "小妹", "老妹", "大妹妹", "大妹", "二妹"), inverse=_ELDER,
         kin=True),
    Term("弟弟", KIN, ("弟弟", "弟", "二弟"), inverse=_ELDER, kin=True),
    Term("兄弟姐妹", KIN, ("兄弟姐妹", "姐妹", "兄弟", "兄妹", "姐弟", "同胞"),
         inverse=("兄弟姐妹",), includes=(*_ELDER, *_YOUNGER), kin=True, owned=True),
    Term("父亲", KIN, ("父亲", "爸爸", "爸", "老爸", "爹", "老爹", "父王", "家父"),
         inverse=_CHILDREN, above=True, kin=True),
    Term("母亲", KIN, ("母亲", "妈妈", "妈", "老妈", "娘", "母后"), inverse=_CHILDREN,
         above=True, kin=True),
    Term("父母", KIN, ("父母", "双亲"), inverse=_CHILDREN, includes=_PARENTS, above=True,
         kin=True),
    Term("女儿", KIN, ("女儿",), inverse=_PARENTS, kin=True),
    Term("儿子", KIN, ("儿子", "令郎"), inverse=_PARENTS, kin=True),
    Term("舅舅", KIN, ("舅舅", "舅父", "舅"), inverse=("外甥", "外甥女"), above=True, kin=True),
    Term("叔叔", KIN, ("叔叔", "叔父", "叔"), inverse=("侄子", "侄女"), above=True, kin=True),
    Term("伯伯", KIN, ("伯伯", "伯父"), inverse=("侄子", "侄女"), above=True, kin=True),
    Term("姑姑", KIN, ("姑姑", "姑妈", "姑母"), inverse=("侄子", "侄女"), above=True, kin=True),
    Term("阿姨", KIN, ("姨妈", "姨母", "小姨", "阿姨"), inverse=("外甥", "外甥女"), above=True,
         kin=True),
    Term("外甥", KIN, ("外甥",), inverse=("舅舅", "阿姨"), kin=True),
    Term("外甥女", KIN, ("外甥女",), inverse=("舅舅", "阿姨"), kin=True),
    Term("侄子", KIN, ("侄子", "侄儿"), inverse=("叔叔", "伯伯", "姑姑"), kin=True),
    Term("侄女", KIN, ("侄女", "大侄女", "小侄女"), inverse=("叔叔", "伯伯", "姑姑"), kin=True),
    Term("爷爷", KIN, ("爷爷", "祖父", "外公", "姥爷"), inverse=("孙子", "孙女"), above=True,
         kin=True),
    Term("奶奶", KIN, ("奶奶", "祖母", "外婆", "姥姥"), inverse=("孙子", "孙女"), above=True,
         kin=True),
    Term("孙子", KIN, ("孙子", "外孙"), inverse=("爷爷", "奶奶"), kin=True),
    Term("孙女", KIN, ("孙女", "外孙女"), inverse=("爷爷", "奶奶"), kin=True),
    Term("家人", KIN, ("家人", "亲人", "家里人"), inverse=("家人",),
         predicates=(("out", "近亲"),), kin=True, owned=True),
    Term("伴侣", PARTNER, ("恋人", "爱人", "伴侣", "丈夫", "妻子", "未婚夫", "未婚妻", "男朋友",
                          "女朋友"), inverse=("伴侣",), predicates=(("out", "恋人"),), owned=True),
    Term("表亲", FRIEND, ("表姐", "表妹", "表哥", "表弟", "堂姐", "堂妹", "堂哥", "堂弟", "表亲",
                          "堂亲", "远亲"), inverse=("表亲",), predicates=(("out", "远亲"),),
         kin=True, owned=True),
    # -- who raised or taught her -----------------------------------------------------------
    Term("老师", GUARDIAN, ("老师", "导师", "师父", "师傅", "恩师", "教官", "教师"),
         inverse=("学生",), predicates=(("in", "师徒"),), above=True),
    Term("学生", GUARDIAN, ("学生", "徒弟", "学员", "弟子", "门徒"), inverse=("老师",),
         predicates=(("out", "师徒"),), owned=True),
    Term("监护人", GUARDIAN, ("监护人", "养父", "养母"), inverse=("被监护人",),
         predicates=(("in", "监护"),), above=True),
    Term("被监护人", GUARDIAN, ("养女", "养子"), inverse=("监护人",),
         predicates=(("out", "监护"),)),
    Term("照看者", GUARDIAN, ("照顾", "照看", "抚养", "收养", "养大"), said=False),
    # -- command, service, fighting side by side ---------------------------------------------
    Term("队长", SUPERIOR, ("队长", "组长", "小队长"), inverse=("部下",),
         predicates=(("in", "上下级"),), above=True),
    Term("老板", SUPERIOR, ("老板", "老大", "头儿", "大姐头"), inverse=("部下",),
         predicates=(("in", "上下级"), ("in", "主仆")), above=True),
    Term("上级", SUPERIOR, ("上级", "上司", "长官", "将军", "首领", "领袖", "团长", "指挥官",
                            "局长", "舰长", "司令", "会长"), inverse=("部下",),
         predicates=(("in", "上下级"),), above=True),
    Term("主君", SUPERIOR, ("殿下", "陛下", "主君", "旧主", "主人", "老爷", "大小姐", "少爷"),
         inverse=("侍从",), predicates=(("in", "主仆"),), above=True),
    Term("部下", SUPERIOR, ("部下", "下属", "手下", "队员", "部属", "属下", "助手", "团员"),
         inverse=("上级", "队长", "老板"), predicates=(("out", "上下级"),), owned=True,
         includes=("侍从",)),  # 你的手下: her retainers too
    Term("侍从", SUPERIOR, ("侍从", "家臣", "侍卫", "护卫", "侍女", "女仆", "管家", "仆人",
                            "保镖"),
         inverse=("主君",), predicates=(("out", "主仆"),), owned=True),
    Term("搭档", SUPERIOR, ("搭档", "战友", "伙伴", "老搭档", "同伴", "队友"), inverse=("搭档",),
         predicates=(("out", "战友"),), owned=True),
    # -- friends and peers -----------------------------------------------------------------
    Term("朋友", FRIEND, ("朋友", "好友", "挚友", "旧友", "知己", "密友", "闺蜜"),
         inverse=("朋友",), predicates=(("out", "朋友"),), owned=True),
    Term("同事", PEER, ("同事", "同僚"), inverse=("同事",), predicates=(("out", "同事"),), owned=True),
    Term("前辈", PEER, ("前辈", "学姐", "学长", "师姐", "师兄"), inverse=("后辈",), above=True, owned=True),
    Term("后辈", PEER, ("后辈", "学妹", "学弟", "师妹", "师弟"), inverse=("前辈",), owned=True),
    Term("同学", PEER, ("同学", "同窗"), inverse=("同学",), owned=True),
    Term("对手", PEER, ("对手", "宿敌", "劲敌", "仇人", "敌人"), inverse=("对手",),
         predicates=(("out", "竞争"), ("out", "敌对")), owned=True),
)  # fmt: skip
"""Every term, family first. A form belongs to one term only (checked by the tests)."""

BIRTH_ORDER: dict[str, str] = {
    "小妹": "youngest", "大妹": "eldest", "大妹妹": "eldest", "大姐": "eldest", "大哥": "eldest",
    "大侄女": "eldest", "小侄女": "youngest",
}  # fmt: skip
"""Forms that pick one of her siblings by birth order (银灰's 小妹 is 崖心, not 初雪): the graph
layer narrows the people a term means by who is whose elder (:func:`arklore.graph.named.
kin_people`), when that leaves one."""
ELDER_TERMS = _ELDER
"""The terms that make one sibling the other's elder."""
RANKED = "二"
"""A form that starts with this (二姐, 二哥, 二弟, 二妹) picks one sibling by rank: it means only
the one her own description calls so, and nobody where none does (the story rarely says who
is second)."""
NARROWER: dict[str, tuple[str, ...]] = {"姐妹": ("姐姐", "妹妹"), "兄弟": ("哥哥", "弟弟")}
"""Forms of a broad term that mean some of its people only: 你那两个姐妹 are her sisters, not
her brothers (the graph layer narrows them as it does by birth order)."""
BLOCKERS: tuple[str, ...] = (
    "小姐", "姑娘", "新娘", "大叔", "大妈", "大爷", "大娘", "小弟", "哥伦比亚", "格拉斯哥",
    "师兄弟", "老爷子", "老爷车", "老大爷", "老大难", "哥们", "姐们", "老师傅", "小朋友",
    "朋友圈", "主人公", "主人翁", "一队长", "二队长", "三队长", "副队长", "大队长", "学生团",
    "学生会",
)  # fmt: skip
"""Words that hold a term's character without naming a relative (哥伦比亚 is a country, 小姐
a courtesy title, 哥们 a buddy, 朋友圈 a feed, 主人公 a protagonist, 二队长 another captain
than her 队长): matched as words and dropped, so the 哥 inside is never a brother."""

OWNERS_YOURS: tuple[str, ...] = (
    "你们的", "您的", "你的", "你们", "你家", "您家", "你", "您",
    "你們的", "妳們的", "妳的", "你們", "妳們", "妳家", "妳",
)  # fmt: skip
"""What may stand right before a one-character word (你爸, 你的哥): only then is it hers; in
traditional script too (妳們, 你們: a chat in it is read as the simplified, :func:`simplified`;
the lorebook's keys spell both)."""
OWNERS_OTHER: tuple[str, ...] = (
    "我们的", "我们", "我的", "咱们", "我", "咱", "他的", "她的", "他们", "她们", "他", "她",
    "我家", "我们家", "咱家", "他家", "她家", "我們的", "我們", "咱們", "他們", "她們", "我們家",
)  # fmt: skip
"""A word right after these is someone else's relative (我姐姐, 她妹妹), never hers; so is one
with 老 or 好 between (她的老朋友)."""
EPITHETS = ("老", "好")
BETWEEN_THEIRS = (*EPITHETS, "那个", "这个", "那位", "这位", "那個", "這個", "這位")
THEIRS: tuple[str, ...] = tuple(o + e for o in OWNERS_OTHER for e in ("", *BETWEEN_THEIRS))
"""Right before a word, what makes it someone else's: :data:`OWNERS_OTHER`, with 老, 好 or
那个 between or not (我妹妹, 她的老朋友, 我家那个弟弟)."""
FILLERS = "们的那这两三四五几个位些老好家們這兩幾個"
"""What may stand between 你/您 and a word it owns (你们的, 你那两个老…): 你 right before
those alone makes the word hers even where the message spoke of someone else's first."""
YOU = "[你您妳]"
"""你, 您, and 妳 (you, to a woman: common in traditional script, in simplified too)."""
RELATIVE = (
    f"{YOU}[们們]?[那这這](?:[个個]|位|些|[两兩][个個]|[几幾][个個])[^，。！？；,.!?;\n]{{0,10}}?的"
)
"""你那个爱画画的…: a clause between, closed by 的, that still says whose."""
_STRICT = re.compile(f"(?:{YOU}[{FILLERS}]{{0,6}}|{RELATIVE})$")
PREDICATE = "是"
SAYS_WHAT: tuple[str, ...] = tuple(PREDICATE + e for e in ("", *EPITHETS))
"""Right before a word (是, 是老, 是好): the word says what someone is (你们以前是同事,
你们是姐妹吗), it does not name anyone."""

_LONGEST_BEFORE = max(map(len, (*THEIRS, *SAYS_WHAT, *OWNERS_YOURS)))
BY_NAME: dict[str, Term] = {t.name: t for t in TERMS}


@cache
def _form_index() -> dict[str, Term]:
    out: dict[str, Term] = {}
    for t in TERMS:
        for f in t.forms:
            out[f] = t
    return out


@cache
def _word_index() -> dict[str, Term]:
    out: dict[str, Term] = {}
    for t in TERMS:
        if not t.said:
            continue
        for w in (*t.forms, *t.words):
            out[w] = t
    return out


def _alternation(words: list[str]) -> re.Pattern[str]:
    """Leftmost-longest over ``words``: at each position the longest word is tried first."""
    return re.compile("|".join(map(re.escape, sorted(words, key=lambda w: (-len(w), w)))))


@cache
def _form_re() -> re.Pattern[str]:
    return _alternation([*_form_index(), *BLOCKERS])


@cache
def _word_re() -> re.Pattern[str]:
    return _alternation([*_word_index(), *BLOCKERS])


def term_of(word: str) -> Term | None:
    """The term a kinship or role word belongs to (队长 -> 队长, 小妹 -> 妹妹), else None."""
    return _word_index().get(word) or _form_index().get(word)


def is_term_word(word: str) -> bool:
    """Whether ``word`` is a kinship or role word (父亲, 队长, 老板): calling someone by it does
    not say who (德克萨斯's 老板 is 大帝, but the speaker label 老板 is somebody else)."""
    return word in _word_index() or word in _form_index()


_HEAD_END = re.compile(r"[，,；;。！？!?]")


def head(description: str) -> str:
    """The first clause of a description: who B is to A (``她的舅舅``)."""
    return _HEAD_END.split(description.strip(), maxsplit=1)[0]


def description_terms(description: str | None) -> list[Term]:
    """The terms a description's head names, in order, each once (blockers dropped)."""
    if not description:
        return []
    forms = _form_index()
    out: list[Term] = []
    for m in _form_re().finditer(head(description)):
        t = forms.get(m.group())
        if t is not None and t not in out:
            out.append(t)
    return out


def head_forms(description: str | None) -> list[str]:
    """The kinship and role forms a description's head uses, as written (他的二哥 -> 二哥,
    忠心耿耿的家臣 -> 家臣; blockers dropped)."""
    if not description:
        return []
    forms = _form_index()
    return [w for m in _form_re().finditer(head(description)) if (w := m.group()) in forms]


def description_bond(description: str | None) -> int | None:
    """The closest bond a description's head names (lowest rank), None when it names none."""
    ranks = [t.bond for t in description_terms(description)]
    return min(ranks) if ranks else None


_CLAUSE_END = frozenset("，,。！？!?；;\n")


def clause_before(text: str, start: int) -> str:
    """The text of ``start``'s clause before it (back to the last comma or sentence end)."""
    i = start
    while i > 0 and text[i - 1] not in _CLAUSE_END:
        i -= 1
    return text[i:start]


_VARIANTS = str.maketrans({"妳": "你", "姊": "姐"})


@cache
def _t2s() -> Callable[[str], str]:
    import opencc

    return opencc.OpenCC("t2s").convert


def simplified(text: str) -> str:
    """``text`` in simplified script, character for character (隊長 -> 队长, 妳們 -> 你们,
    姊姊 -> 姐姐), so offsets stay those of ``text``; unchanged where a character would not
    map to one."""
    out = _t2s()(text).translate(_VARIANTS)
    return out if len(out) == len(text) else text


def find_terms(text: str) -> list[tuple[Term, int, int]]:
    """Kinship and role words of a chat message that may mean *her* people, as (term, start,
    end): leftmost-longest, blockers dropped, a word right after 我/我们/他/她 (someone
    else's relative) dropped, a one-character word (你爸, 你哥) only right after 你/您, and a
    word that alone means the speaker's own (:attr:`Term.owned`: 家人, 朋友, 搭档…) only with
    你/您 before it in its clause. A word right after 是 says what someone is (你们是姐妹吗),
    and once the message has said someone else's (我妹妹), a word is hers only with 你/您
    right before it (:data:`FILLERS` between, or a clause closed by 的: :data:`RELATIVE`);
    so is a role above someone in any message (:attr:`Term.yours_only`). A message in
    traditional script is read as the simplified (:func:`simplified`: 妳們隊長 is 你们队长)."""
    text = simplified(text)
    words = _word_index()
    out: list[tuple[Term, int, int]] = []
    others = False  # a word of someone else's was said earlier in the message
    for m in _word_re().finditer(text):
        word, start = m.group(), m.start()
        term = words.get(word)
        if term is None:
            continue
        before = text[max(0, start - _LONGEST_BEFORE) : start]
        if before.endswith(THEIRS):
            others = True
            continue
        if before.endswith(SAYS_WHAT):
            continue
        if len(word) == 1 and not any(before.endswith(o) for o in OWNERS_YOURS):
            continue
        if (others or term.yours_only) and not _STRICT.search(text, max(0, start - 24), start):
            continue  # 我妹妹也这样，你说妹妹…: the second is no more hers than the first
        if term.owned and not any(o in clause_before(text, start) for o in ("你", "您", "妳")):
            continue
        out.append((term, start, m.end()))
    return out


def wanted(term: Term) -> frozenset[str]:
    """The term names a message word resolves through: itself and what it includes; 家人
    includes every family term of the closest kind."""
    names = {term.name, *term.includes}
    if term.name == "家人":
        names |= {t.name for t in TERMS if t.kin and t.bond == KIN}
    return frozenset(names)
