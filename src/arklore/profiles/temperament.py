"""``## 我·性格`` without a model: a few verbatim sentences that say what she is like.

A chat keeps an operator in character from what she is like, and the game says it in its own
words: her archive (炎熔: 嘴巴倔，做事一点都听不进去别人的指指点点) and what others say of her in
the story. The rule picks such sentences by a temperament lexicon (:data:`TEMPERAMENT`:
温柔, 倔, 冷静, 开朗, 孤僻, 认真, 冷淡, 天真, 傲, 性格, 为人, …), never a paraphrase, each
cited by its source id and written as a quote line (``- 「原文」 —— <source id>（note）``,
:meth:`~arklore.profiles.quotes.Quote.line`):

* **archive** -- a sentence of a paragraph of her archive that the narrator tells
  (:func:`~arklore.profiles.archive.narrative`: no signed note, no quotation, no 【权限记录】
  in somebody's voice; no 我/你/您, not the record's 我们 either), from ``客观履历``,
  ``档案资料一``~``四`` and ``晋升记录`` (not the fields, the test scores nor the lab report),
  not one the anchor quotes already (a chat is never told a line twice):
  ``archive:<entry id>/<section title>``, the note the section title;
* **story** -- a sentence of a line somebody else speaks that names her (the names layer's
  matcher: an ambiguous name names nobody) in the clause of its temperament word, not an order
  (冷静点 / 别那么固执) nor a question: ``story:<line_id>``, the note the speaker;
* **her own words** -- only to top the section up to :data:`MIN_LINES`, one at most and last:
  a sentence of her voice or story lines that opens on 我 and states a trait or a habit of
  hers (:func:`self_candidates`): ``voice:<id>`` or ``story:<line_id>``, the note the voice
  title or her name.

Each candidate must hold a word of the lexicon and be :data:`MIN_CHARS`-:data:`MAX_CHARS`
characters long. Ranked: a sentence whose subject is she (it opens on her name, 她 or 他:
:func:`subject_rank`) before one that only names her in the word's clause, before one that
does neither (an archive sentence without a subject: 为人慷慨大方，……); then more distinct
lexicon words; then source order. At most :data:`ARCHIVE_LINES` from the archive (one per
section first) and :data:`STORY_LINES` from the story (one per speaker), topped up from the
other up to :data:`MAX_LINES` lines and :data:`SECTION_CHARS` characters; a habit without a
lexicon word (:data:`HABITS`) comes only in that top-up. The verbatim gate
(:func:`~arklore.profiles.quotes.verify_quotes`) checks every line against its source's text:
the handbook table's section for an archive id, the corpus or voice line otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arklore.core.text import one_line, sentence_pieces
from arklore.profiles.archive import narrative, passage, told, voiced
from arklore.profiles.quotes import ARCHIVE, Quote, StoryLine, VoiceLine, normalize_ws

TEMPERAMENT: tuple[str, ...] = (
    # gentle, kind
    "温柔", "温和", "和善", "和气", "随和", "亲切", "友善", "善良", "心软", "体贴", "细心",
    "耐心", "热心", "热情", "热忱",
    # cheerful, lively
    "开朗", "乐观", "乐天", "活泼", "爽朗", "豪爽", "直率", "坦率", "直爽", "耿直", "直来直去",
    # childlike, carefree
    "天真", "纯真", "孩子气", "稚气", "任性", "调皮", "顽皮", "淘气", "贪玩", "懒散",
    "吊儿郎当", "散漫", "随性", "慵懒",
    # stubborn, proud
    "倔", "固执", "执拗", "要强", "好强", "好胜", "逞强", "嘴硬", "不服输", "傲", "自负",
    "自信", "谦逊", "谦虚",
    # calm, cold, withdrawn
    "冷静", "沉着", "沉稳", "稳重", "镇定", "从容", "理性", "冷淡", "冷漠", "冷酷", "高冷",
    "冷冰冰", "淡漠", "孤僻", "独来独往", "不合群", "内向", "腼腆", "害羞", "羞涩", "怕生",
    "寡言", "不苟言笑",
    # earnest, strict
    "认真", "严肃", "严谨", "一丝不苟", "较真", "古板", "刻板", "死板", "正经", "尽职", "恪守",
    "勤恳", "勤奋", "敬业", "正直", "真诚", "坦诚", "憨厚", "乖巧", "懂事",
    # quick-tempered, bold, timid
    "急躁", "暴躁", "急性子", "火爆", "冲动", "鲁莽", "莽撞", "易怒", "胆小", "怯懦", "懦弱",
    "勇敢", "果断", "坚强", "坚毅", "坚韧",
    # wary, moody, sly, odd
    "多疑", "谨慎", "多虑", "忧郁", "阴郁", "悲观", "狡黠", "圆滑", "精明", "机灵",
    "古怪", "偏执", "毒舌", "刻薄", "优雅", "矜持", "别扭", "执着", "可靠", "靠谱", "强势",
    "霸道", "嚣张", "狂妄", "安静", "文静", "内敛", "低调", "大大咧咧", "马虎", "粗心", "冒失",
    "仗义", "义气", "记仇", "小气", "慷慨", "冷血", "无情", "残忍", "粗鲁", "啰嗦",
    "唠叨", "幽默", "疯子", "怪人", "老好人", "聪明", "敏锐", "诚实", "好心", "自私", "通情达理",
    "胆量", "胆识", "怕死", "兢兢业业", "踏实", "细致", "周到", "机敏", "睿智", "狡猾", "阴险",
    "虚伪", "率真", "坚定", "桀骜", "不羁", "悲悯", "沉默", "爱护", "温顺", "叛逆", "冷冽",
    "冰冷", "疏离", "凶狠", "好斗", "好战", "无私", "自律", "神秘", "多愁善感", "优柔寡断",
    "好说话", "好相处", "难相处", "难缠", "不好惹", "爽快", "礼貌", "客气", "能干", "挑剔",
    "讲究", "心细", "心大", "小心眼", "话少", "话痨", "木讷", "迟钝", "可爱", "有趣", "懒惰",
    "勤快", "热血", "温暖", "敢于", "勇于", "无拘无束", "大胆", "胆大", "谦和", "随意", "洒脱",
    "率性", "拘谨", "腼腆", "羞怯", "坚决", "专注", "活力", "朝气", "元气",
    # the words for character itself
    "性格", "性子", "个性", "脾气", "秉性", "为人", "天性",
)  # fmt: skip
"""Words that say what a person is like (temperament, manner, character), not what she does
or feels at one moment (开心, 生气 are left out) nor a common word with another sense (负责
巡逻, 陷入沉默)."""

MIN_CHARS, MAX_CHARS = 6, 90
"""Characters of one line: less says nothing; a longer sentence is a story, not a trait."""
MIN_LINES, MAX_LINES = 3, 5
ARCHIVE_LINES, STORY_LINES, SELF_LINES = 3, 2, 1
SECTION_CHARS = 320
"""Characters of the whole section at most (about 200 tokens)."""

_WORDS = re.compile("|".join(sorted(map(re.escape, TEMPERAMENT), key=len, reverse=True)))
_NOT_A_TRAIT = re.compile(
    "必要强|需要强|想要强|只要强|要强上|要强得|要强一|要强很|要强多|要强大|还要强|合理性|正经历|成为人|作为人|因为人|认为人|和气氛|刻板印象|"
    "不为人知|为人知|废话少|今天真|昨天真|明天真|不容乐观|并不乐观|不太乐观|记仇恨|忘记仇|和气球|和气味|和气息|和气候|和气势|陷入沉默|陷入了沉默|"
    "一阵沉默|短暂的沉默|沉默了|保持沉默|神秘人|神秘的"
)
"""Longer words and phrases a lexicon word only sits inside (必要强调 is not 要强, 合理性 not
理性, 正经历 not 正经, 成为人 not 为人, 忘记仇恨 not 记仇), and a situation that is 不容乐观."""
_ORDER = re.compile(
    r"(?:别|不要|不许|不能|不可以|请|快|给我|必须|要|应该|应当|需要|可以)[^，。！？]{0,2}$"
)
"""What makes the word after it an order or advice (别那么固执, 必须要小心谨慎; 冷静点 below)."""
_ORDER_AFTER = re.compile(r"^(?:一?点|一下|下来|些)")
_CLAUSE = re.compile(r"[，；：,;:]")
_PRONOUN = ("她", "他")
_HERE = (
    "这位", "这名", "这个", "这是一个", "这是一位", "在她身上", "在他身上", "她身上", "他身上",
    "在她的身上", "在他的身上", "她的身上", "他的身上",
)  # fmt: skip
"""In her own archive, what points at her too (这是一个长相乖巧文静……的女孩 / 在他的身上…)."""
_OPENING = re.compile(
    r"^(?:当然|不过|但是?|然而|而且?|并且|可是|因此|所以|同时|其实|事实上|实际上|也许|或许)，?"
)
_VOCATIVE = re.compile(r"^[^，。！？的是很太真也都总又还就]{0,3}[，,！!…—]")
"""After her name at the start of a sentence: it is called out (恩希欧迪斯，… / 凯尔希修士，…),
not the subject (塞雷娅很冷静，… is)."""
_ADVERB = re.compile(r"^.?地")
"""A word used as an adverb (认真地学习, 谨慎地对待敌人, 认认真真地开会): how she does one thing,
not what she is like."""
_ATTRIBUTE = re.compile(r"^的")
_PERSON = re.compile(
    r"^的[^，。！？]{0,6}?(?:人|孩子|家伙|姑娘|女孩|男孩|小姐|女士|先生|少女|少年|女人|男人|教官|"
    r"样子|一面|员|者|师|使)(?=[，。！？…,.!?]|$)"
)
"""A word before 的 describes what follows (高傲的维多利亚贵族, 性格文静的胞弟): somebody else,
but for a person or a role the clause ends on, or her manner (是个骄傲的人, 冒冒失失的探员小姐,
沉默寡言的信使, 你这么认真的样子: by the subject rules, she)."""
SKIP_TITLES = ("基础档案", "综合体检测试", "综合性能检测结果", "临床诊断分析")
"""Archive sections never read for her temperament: fields, test scores, the lab report."""
OPENING_SECTION = "档案资料一"
"""The section that introduces her, often without her name (是个彻头彻尾的乐天派。)."""


def _matches(text: str) -> list[re.Match[str]]:
    """The lexicon words of ``text`` that say what somebody is like there: not inside a
    longer word (:data:`_NOT_A_TRAIT`), not an adverb (:data:`_ADVERB`), not describing a
    thing or another person (:data:`_PERSON`)."""
    blocked = [(m.start(), m.end()) for m in _NOT_A_TRAIT.finditer(text)]
    out = []
    for m in _WORDS.finditer(text):
        after = text[m.end() :]
        if any(a < m.end() and m.start() < b for a, b in blocked) or _ADVERB.match(after):
            continue
        if _ATTRIBUTE.match(after) and not _PERSON.match(after):
            continue
        out.append(m)
    return out


def has_word(text: str) -> bool:
    """Does ``text`` hold a word of :data:`TEMPERAMENT` (a quick test before the rules)?"""
    return _WORDS.search(text) is not None


def words(text: str) -> list[str]:
    """The distinct lexicon words of ``text``, in order (leftmost longest)."""
    return list(dict.fromkeys(m.group() for m in _matches(text)))


CHARACTER_WORDS = frozenset({"性格", "性子", "个性", "脾气", "秉性", "为人", "天性"})
"""The lexicon's words for character itself: they point at a trait, they name none."""


def traits(text: str) -> list[str]:
    """The traits ``text`` names (:func:`words` but the words for character itself): what a
    chat states of her before the sentence that says it (``乐天派：「……」``)."""
    return [w for w in words(text) if w not in CHARACTER_WORDS]


_MOMENT = re.compile(r"今天|今日|今晚|此刻|现在|刚才|刚刚|这会儿|一时|这次|这一次")
"""A time of one moment before the word (恩希欧迪斯大人今日怎么这样沉默): how she is then, not
what she is like."""


def _ordered(text: str) -> bool:
    """Is every lexicon word of ``text`` part of an order or advice (冷静点, 别那么固执)?"""
    found = _matches(text)
    return bool(found) and all(
        _ORDER.search(text[: m.start()]) or _ORDER_AFTER.match(text[m.end() :]) for m in found
    )


_GOES_ON = re.compile(
    r"^(?:(?:(?![我你他她它])[^，。！？]){0,3}|(?:却|也|又|更|还|很|非常|十分|极其|极为|总是|从不|"
    r"从来|一直|向来|一向|有些|有点|稍微|相当|颇为|格外|并不|不太|一个|是个|是一个|是一位)"
    r"[^，。！？我你他她它]{0,6})$"
)
"""A clause that goes on about the one an earlier clause of the sentence opened on, with no
subject of its own (双月是彩虹小队成员之一，自信、坚决 / 霜叶小姐才逐渐变成了现在的霜叶小姐，一个
爱听音乐，……，稍微有点冷淡的酷女孩)."""
_OBJECT = frozenset("对给跟和向让把被为替同比")
"""Before 你, what makes 你 an object (阿米娅对你太温柔了: the 温柔 is 阿米娅's)."""


def subject_rank(
    sentence: str,
    names: Sequence[str],
    *,
    pronoun: bool = True,
    you: bool = False,
    pointers: bool = False,
) -> int:
    """How surely the sentence is about her, by where she stands in it (``names``: how it
    writes her; ``pronoun``: 她/他 are she, as in her own archive; ``you``: 你 is she, in a
    line said to her):

    * 2 -- it opens on her (an opening word such as 但是，当然， and 干员 aside): 芬的反应和行动
      很果断, not her name called out (恩希欧迪斯，……我们的处境并不乐观);
    * 1 -- the clause of its first lexicon word opens on her (拉普兰德，你还是这么……), or holds
      her (以塞雷娅的性格，…; 她的恪尽职守; 见过你这么认真的样子; 平时有些沉默的她会表现出明显的
      热情), not 你 as an object (阿米娅对你太温柔了), or goes on, with no subject of its own,
      about her named before it (双月是彩虹小队成员之一，自信、坚决: :data:`_GOES_ON`);
    * 0 -- neither: it may well be about somebody else (是一位坚毅的菲林妇女); or the clause
      of the word holds a time of one moment (:data:`_MOMENT`)."""
    found = _matches(sentence)
    if not found or _MOMENT.search(_CLAUSE.split(sentence[: found[0].start()])[-1]):
        return 0
    you_ = ("你",) if you else ()
    who = [*names, *(_PRONOUN if pronoun else ()), *(_HERE if pointers else ()), *you_]
    s = _OPENING.sub("", sentence).removeprefix("干员")
    at = found[0].start() - (len(sentence) - len(s))  # the word's place in ``s``
    name = next((n for n in who if _opens(s, n)), None)
    called = name in names and _VOCATIVE.match(s[len(name) :]) is not None if name else False
    if name is not None and not called:
        rest = s[len(name) : at]
        if _CLAUSE.search(rest) is None and _hers(rest):
            return 2
        who = [*who, *_PRONOUN]  # a sentence about her goes on about her: 她的臭脾气
    head = sentence[: found[0].start()]
    clause = _CLAUSE.split(head)[-1]
    c = _OPENING.sub("", clause.strip()).removeprefix("干员")
    n = next((n for n in who if _opens(c, n)), None)
    if n is not None and _hers(c[len(n) :]):
        return 1
    if any(_holds(clause, n) for n in who):
        return 1
    earlier = _CLAUSE.split(head)[:-1]
    topic = any(_opens(_OPENING.sub("", x.strip()), n) for x in earlier for n in who)
    return 1 if topic and _GOES_ON.match(clause.strip()) else 0


def _opens(text: str, n: str) -> bool:
    """Does ``text`` open on ``n`` as one person (not 你们, 她们, 他们: a group; not 她被…)?"""
    return text.startswith(n) and text[len(n) : len(n) + 1] not in ("们", "被")


def _in_clause(clause: str, n: str) -> bool:
    """Is ``n`` in ``clause`` as somebody who is something (平时有些沉默的她会表现出明显的热情),
    not as an object (阿米娅对你太温柔了) nor a group (你们, 她们)?"""
    at = clause.rfind(n)
    if at < 0 or clause[at + len(n) : at + len(n) + 1] in ("们", "被"):
        return False
    return at == 0 or clause[at - 1] not in _OBJECT


_REPORTS = re.compile("说|认为|觉得|表示|声称|以为|知道|相信|听说|看来|发现|猜测|猜想")
"""A verb of saying or thinking: what follows is what she says or thinks (她说雾里的脚步声比
地图更可靠), not what she is like."""


def _hers(between: str) -> bool:
    """Is the word hers, with ``between`` between her and it: not a thing of hers far from
    the word (你的结论未免有些乐观), only one right before it (你的坦诚, 她的臭脾气, 芬的反应和
    行动很果断); not what she says or thinks (:data:`_REPORTS`)."""
    if _REPORTS.search(between):
        return False
    return not between.startswith("的") or len(between) <= 7


def _holds(clause: str, n: str) -> bool:
    """Does ``clause`` (up to the word) hold her as the one the word is about: ``n`` in it
    as somebody (:func:`_in_clause`) with nothing of hers far between (X的臭脾气, 你这么认真的,
    not 你的结论未免有些乐观: :func:`_hers`)?"""
    if not _in_clause(clause, n):
        return False
    return _hers(clause[clause.rfind(n) + len(n) :])


@dataclass(frozen=True, slots=True)
class Candidate:
    quote: Quote
    rank: int  # subject_rank
    words: int  # distinct lexicon words
    order: tuple[int, ...]  # source order
    group: str  # the archive section or the story speaker: one line per group first

    @property
    def key(self) -> tuple[bool, int, int, tuple[int, ...]]:
        """Best first: with a lexicon word before a habit only, then by :func:`subject_rank`,
        by more words, in source order."""
        return (self.words == 0, -self.rank, -self.words, self.order)


_JUDGED = re.compile(r"(?:这么|那么|这样|总是|还是|一直|向来|一向)[^，。！？]{0,2}$")
"""Before the word in a question, what makes it a judgment of her (你对谁都这么啰嗦吗？ / 你为什么
这么严肃？), not a question whether she is (你冷静吗？)."""


def _fits(sentence: str) -> bool:
    """A sentence of :data:`MIN_CHARS`-:data:`MAX_CHARS` characters, a statement or a
    question that judges (:data:`_JUDGED`)."""
    if not MIN_CHARS <= len(sentence) <= MAX_CHARS:
        return False
    if not sentence.endswith(("？", "?", "？！", "?!")):
        return True
    found = _matches(sentence)
    return bool(found) and _JUDGED.search(sentence[: found[0].start()]) is not None


def _quoted(sentence: str) -> str:
    """The sentence as quoted: a list number (4，…) and an opening word that points back
    (当然，… 而…) left out, so it reads on its own (still verbatim: a part of the source)."""
    return _OPENING.sub("", _LIST_NUMBER.sub("", sentence)).strip() or sentence


_LIST_NUMBER = re.compile(r"^\d{1,2}[，,.．、)）]\s*")


def archive_candidates(
    sections: Sequence[tuple[str, int, Mapping[str, object]]], names: Sequence[str]
) -> list[Candidate]:
    """Her archive sentences about her temperament (module docstring), ``sections`` as
    :func:`~arklore.profiles.archive.archive_sections` gives them: a sentence with a lexicon
    word of :func:`subject_rank` 1 or 2 (她/他, 这位, 在她身上 are she here), or any with one in
    the portrait that opens ``档案资料一`` without her name (:func:`_portrait`: 与大多数拉特兰人
    给人的印象不同，是个彻头彻尾的乐天派。……为人慷慨大方……); else one that opens on her with a
    habit (:data:`HABITS`: 夜烟从不掩饰自己对菲林兽亲们的喜爱。), ranked after them."""
    out: list[Candidate] = []
    for n, (entry, _, sec) in enumerate(sections):
        title = str(sec.get("storyTitle") or "")
        if not title or title in SKIP_TITLES:
            continue
        stories = sec.get("stories")
        texts = [
            st["storyText"]
            for st in (stories if isinstance(stories, list) else [])
            if isinstance(st, dict) and isinstance(st.get("storyText"), str)
        ]
        paras = [p for text in texts for p in narrative(text)]
        portrait = _portrait(paras, names) if title == OPENING_SECTION else set()
        for k, para in enumerate(paras):
            if not told(para) or voiced(para):
                continue
            for j, s in enumerate(sentence_pieces(one_line(para))):
                s = _quoted(s)
                if not _fits(s) or voiced(s, ours=True) or _ordered(s):
                    continue
                if words(s):
                    rank = max(subject_rank(s, names, pointers=True), 1 if k in portrait else 0)
                    weight = len(words(s))
                else:
                    rank, weight = (2 if _habit(s, names) or _portrayed(s, names) else 0), 0
                if rank == 0:
                    continue
                q = Quote(s, f"{ARCHIVE}:{entry}/{title}", title)
                out.append(Candidate(q, rank, weight, (0, n, k, j), title))
    return out


PORTRAIT_CHARS = 30
"""The longest first line of ``档案资料一`` read as her portrait (沉默寡言的信使。 / 不苟言笑的
铁面教官。 / 与大多数拉特兰人给人的印象不同，是个彻头彻尾的乐天派。)."""


def _portrait(paras: list[str], names: Sequence[str]) -> set[int]:
    """The paragraphs (indexes) of the portrait ``档案资料一`` opens with when its first line,
    short, with a lexicon word and without her name, sketches her: that line and the passage
    it opens (not 测试国的北境常年多雾，……: a land, not a person)."""
    k = next((i for i, p in enumerate(paras) if p), None)
    if k is None or not told(paras[k]) or len(paras[k]) > PORTRAIT_CHARS:
        return set()
    if not words(paras[k]):
        return set()
    if any(x in paras[k] for x in names):
        return set()
    return set(range(k, k + len(passage(paras, k))))


HABITS = re.compile(
    "总是|从不(?!同)|从来不|一向|向来|经常|常常|往往|习惯|常说|喜欢|喜爱|偏爱|热爱|热衷|乐趣|擅长|讨厌|"
    "好感|感兴趣|敌意|满意|不满|厌恶"
)
"""Words of a habit, a liking or an attitude: a sentence of her archive with her before one
says what she is like without a word of the lexicon (她总是围着孩子们转; 她最喜欢的地方是黄澄
澄游戏室; 占卜对于远山来说是一种乐趣; 赫拉格对乌萨斯当局抱有强烈的敌意)."""


PORTRAIT = re.compile(
    r"是(?:个|一个|一位|一名|天生的)[^，。！？]{0,12}?(?:人|者|家|孩子|女孩|少女|姑娘)"
)
"""A sentence that says what kind of person she is (原来他是一个外冷内热的人; 崖心是天生的探险
家和攀登者), with her before it in its clause (:func:`_portrayed`)."""


def _portrayed(sentence: str, names: Sequence[str]) -> bool:
    """Does a clause of ``sentence`` say what kind of person she is (:data:`PORTRAIT`), her
    (her name, 她/他) right before the 是 (not 她说他是个好人: his)?"""
    for clause in _CLAUSE.split(_OPENING.sub("", sentence)):
        m = PORTRAIT.search(clause)
        if m is None:
            continue
        head = clause[: m.start()].removeprefix("原来").removeprefix("干员")
        if any(head.endswith(n) and _opens(head[len(head) - len(n) :], n) for n in names) or any(
            head in (p, f"原来{p}") for p in _PRONOUN
        ):
            return True
    return False


_EXCEPT = re.compile(r"除(?:了|去)?(?!此)")
_EXCEPT_END = re.compile(r"(?:之外|以外)$")
"""A frame 除(了/去)……之外 (not 除此之外: that points back): what it holds is hers too when
the clause after it opens on her."""


def _habit(sentence: str, names: Sequence[str]) -> bool:
    """Is a habit or a liking hers in ``sentence``: its first clause opens on her (her name,
    她/他) or says 对(于)<her>来说 before the word (not 有些人喜欢同她打牌, nor 大家对于布丁
    都习惯照顾: theirs); or a later clause opens on her name, with no 的 before the word (为了
    ……，贝娜总是愿意多做些什么; not ……，梅尔的工作室总是空间紧张: her workshop's), with nothing
    said or thought before it (not 她说芬总是迟到); or it is in a frame 除(去)……之外 whose sentence
    goes on about her (除去经常捉弄其他干员……之外，干员白金的表现……: :data:`_EXCEPT`)?"""
    clauses = _CLAUSE.split(_OPENING.sub("", sentence).removeprefix("干员"))
    who = (*names, *_PRONOUN)
    if not _has_object(clauses):
        return False
    if _EXCEPT.match(clauses[0]):
        end = next((k for k, c in enumerate(clauses) if _EXCEPT_END.search(c)), None)
        if end is None or end + 1 >= len(clauses):
            return False
        main = clauses[end + 1].removeprefix("干员")
        framed = "，".join(clauses[: end + 1])
        return HABITS.search(framed) is not None and any(_opens(main, n) for n in who)
    m = HABITS.search(clauses[0])
    if m is not None:
        head = clauses[0][: m.start()]
        return any(_opens(clauses[0], n) for n in who) or any(
            re.search(f"对于?{re.escape(n)}来说", head) for n in who
        )
    for k, clause in enumerate(clauses[1:], 1):
        m = HABITS.search(clause)
        if m is None:
            continue
        if _REPORTS.search("".join(clauses[:k])):
            return False
        c = _OPENING.sub("", clause).removeprefix("干员")
        at = m.start() - (len(clause) - len(c))
        return "的" not in c[:at] and any(_opens(c, n) for n in names)
    return False


def _has_object(clauses: Sequence[str]) -> bool:
    """Does the first habit word in ``clauses`` have what it is about: words after it in its
    clause, or 对 before it (对调香很感兴趣)? One with neither is how she felt at a point the
    sentence points back to (在这一点上，幽灵鲨是十分满意的), not a habit."""
    for k, clause in enumerate(clauses):
        m = HABITS.search(clause)
        if m is not None:
            before = "".join(clauses[:k]) + clause[: m.start()]
            if m.group() in ("乐趣", "习惯"):  # nouns: 只有一个追求——乐趣
                return True
            return bool(clause[m.end() :].strip(_PARTICLES)) or "对" in before
    return True


@dataclass(frozen=True, slots=True)
class Remark:
    """A line somebody else says of her or to her in the story (:func:`remarks`)."""

    line: StoryLine
    names: tuple[str, ...] = ()  # her names as the line writes them (not calling her)
    to_her: bool = False  # said to her: her name called, or a two-person exchange with her


def story_candidates(remarks: Sequence[Remark]) -> list[Candidate]:
    """Sentences of others' story lines with a temperament word about her: a
    :func:`subject_rank` of 1 or 2 (her names as the line writes them, 她/他 once the line has
    named her, 你 in a line said to her), not an order nor a question (module docstring)."""
    out: list[Candidate] = []
    for r in remarks:
        ln = r.line
        named = False  # she is named in this sentence or one before it: 她/他 are she
        for j, piece in enumerate(sentence_pieces(ln.text)):
            s = _quoted(piece)
            here = [n for n in r.names if n in s]
            named = named or bool(here)
            if not _fits(s) or not words(s) or _ordered(s):
                continue
            if not named and not r.to_her:
                continue
            rank = subject_rank(s, here, pronoun=named, you=r.to_her)
            if rank == 0:
                continue
            q = Quote(s, ln.source_id, ln.speaker)
            order = (1, ln.order, ln.line_no, j)
            out.append(Candidate(q, rank, len(words(s)), order, ln.speaker))
    return out


_SELF_ADVERBS = (
    r"(?:这个人|这人|本来就?|向来|一向|从来|从不|总是|天生|生来|最|很|特别|非常|一直|其实|确实|"
    r"还是|也|就|可|真的?|是个|是一个)*"
)
_SELF_HEAD = re.compile(f"我(?:的[^，。！？]{{0,3}})?{_SELF_ADVERBS}(?:不|没有?)?{_SELF_ADVERBS}")
"""Before the word in the clause that opens on 我: 我 (or 我的 and a thing of hers, 我的脾气) and
adverbs only (我从来不做……, 我最讨厌……, 我这个人很固执), nothing she does to anybody first."""
_SELF_GOES_ON = re.compile(f"{_SELF_ADVERBS}(?:不|没有?)?{_SELF_ADVERBS}")
"""Before the word in a later clause with no subject of its own (我记性差，从来不记账)."""
_SELF_LEAD = re.compile(r"我[^，。！？你他她它们]{0,8}")
"""The first clause a later one goes on from: 我 and a short predicate, nobody else in it
(not 我就知道你能行，真可靠: the 可靠 is 你's)."""
_UNSURE = re.compile(
    "如果|若|要是|假如|假设|万一|倘若|只要|除非|难道|也许|或许|可能|好像|似乎|以为"
)
"""A condition or a guess: not what she says she is."""


def _self_word(sentence: str) -> str | None:
    """The word of a lexicon trait or a habit (:data:`HABITS`) ``sentence`` says of its
    speaker herself, or None: a statement opening on 我 (not 我们), no condition nor guess
    (:data:`_UNSURE`), no time of one moment (正在 either), not an order, not 不客气 (a
    reply), not about somebody or something here (:data:`_SELF_NOT_AFTER`, 你 after it) nor a
    habit with no object (:data:`_PARTICLES`); the word in the first clause after 我 and
    adverbs only (:data:`_SELF_HEAD`) or in the second, with no subject of its own, after a
    short first one with nobody else in it and nothing said or thought (:data:`_SELF_LEAD`,
    :data:`_SELF_GOES_ON`, :data:`_REPORTS`: not 我觉得，你是……最擅长聆听的人)."""
    if not sentence.startswith("我") or sentence.startswith(("我们", "我家")):
        return None
    if sentence.endswith(("？", "?")) or not _fits(sentence) or _UNSURE.search(sentence):
        return None
    if _ordered(sentence):
        return None
    clauses = _CLAUSE.split(sentence)
    for k, clause in enumerate(clauses[:2]):
        found = _matches(clause)
        hit = found[0] if found else HABITS.search(clause)
        if hit is None:
            continue
        head, rest = clause[: hit.start()], clause[hit.end() :]
        if (
            _MOMENT.search(head)
            or "正在" in clause
            or head.endswith("不")
            and hit.group() == "客气"
        ):
            return None
        if rest.lstrip().startswith(_SELF_NOT_AFTER) or "你" in rest or "您" in rest:
            return None
        if not found and not rest.strip(_PARTICLES):
            return None
        if k == 0:
            return hit.group() if _SELF_HEAD.fullmatch(head) else None
        lead = clauses[0]
        if (
            _SELF_GOES_ON.fullmatch(head)
            and _SELF_LEAD.fullmatch(lead)
            and not _REPORTS.search(lead)
        ):
            return hit.group()
        return None
    return None


_SELF_NOT_AFTER = ("你", "您", "她", "他", "这", "那")
"""What the habit is about when it opens the rest: somebody (我最喜欢她了) or what is here
(我很讨厌这种感觉, 我喜欢这个说法): a moment or a person, not what she is like."""
_PARTICLES = "嘛啦了呀啊吧的呢哦！!~…。. "
"""A habit with only these after it has no object (我很感兴趣嘛): a reply, not a habit."""


def self_candidates(lines: Sequence[VoiceLine | StoryLine]) -> list[Candidate]:
    """Sentences of her own lines (voice, then story) that say what she is like in her own
    words (:func:`_self_word`: 我从来不做成功率太低的事。 / 我记性差，从来不记账。), a lexicon
    trait before a habit; the last pool :func:`choose` draws from, when her archive and others
    give fewer than :data:`MIN_LINES`."""
    out: list[Candidate] = []
    for i, ln in enumerate(lines):
        for j, piece in enumerate(sentence_pieces(ln.text)):
            s = piece.strip()
            word = _self_word(s)
            if word is None:
                continue
            trait = len(words(s))
            note = ln.title if isinstance(ln, VoiceLine) else ln.speaker
            q = Quote(s, ln.source_id, note)
            out.append(Candidate(q, 1, trait, (2, i, j), "self"))
    return out


def choose(
    archive: Sequence[Candidate], story: Sequence[Candidate], own: Sequence[Candidate] = ()
) -> list[Quote]:
    """Up to :data:`MAX_LINES` lines: the best :data:`ARCHIVE_LINES` of the archive and
    :data:`STORY_LINES` of the story (one per section or speaker before a second), then the
    next best of either, within :data:`SECTION_CHARS`; archive lines first, each group in
    rank order. Her own words of herself (``own``: :func:`self_candidates`) top it up to
    :data:`MIN_LINES` at most, :data:`SELF_LINES` of them, last: what others say of her
    comes first."""
    picked = _choose_others(archive, story)
    size = sum(len(q.text) for q in picked)
    for c in _spread(own)[: max(0, min(SELF_LINES, MIN_LINES - len(picked)))]:
        if size + len(c.quote.text) <= SECTION_CHARS:
            picked.append(c.quote)
            size += len(c.quote.text)
    return picked


def _choose_others(archive: Sequence[Candidate], story: Sequence[Candidate]) -> list[Quote]:
    """:func:`choose` over what others say of her. The quotas take lexicon lines only: a long
    habit line of the archive must not crowd out a story line that names her temperament;
    habits come in the top-up."""
    pools = [_spread(archive), _spread(story)]
    quotas = [ARCHIVE_LINES, STORY_LINES]
    picked: list[list[Candidate]] = [[], []]
    size = 0
    for i, pool in enumerate(pools):
        for c in pool:
            if len(picked[i]) >= quotas[i]:
                break
            if c.words and size + len(c.quote.text) <= SECTION_CHARS:
                picked[i].append(c)
                size += len(c.quote.text)
    for i, pool in enumerate(pools):  # top up from either
        for c in pool:
            if sum(map(len, picked)) >= MAX_LINES:
                break
            if c not in picked[i] and size + len(c.quote.text) <= SECTION_CHARS:
                picked[i].append(c)
                size += len(c.quote.text)
    return [c.quote for group in picked for c in sorted(group, key=lambda c: c.key)]


def _spread(cands: Sequence[Candidate]) -> list[Candidate]:
    """``cands`` best first, the best of each group (section, speaker) before any second; a
    text said twice once."""
    ranked = sorted(cands, key=lambda c: c.key)
    seen: set[str] = set()
    firsts: list[Candidate] = []
    rest: list[Candidate] = []
    groups: set[str] = set()
    for c in ranked:
        text = normalize_ws(c.quote.text)
        if text in seen:
            continue
        seen.add(text)
        (rest if c.group in groups else firsts).append(c)
        groups.add(c.group)
    return firsts + rest
