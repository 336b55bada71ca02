"""Lexical retrieval over story text: jieba tokens and BM25, no model.

Used wherever a chat turn ranks story lines by a message without embedding it: her scenes
(``rag.exemplars``) and her appearances as memories (``events.memories``).

* :class:`Tokenizer`: jieba's dictionary (precise mode, no HMM) with the story's own names kept
  whole (塔露拉 is not 塔露 + 拉): the names are cut out first with one Aho-Corasick automaton
  and jieba cuts the text between them, so jieba's shared dictionary is never changed. The
  cutting is jieba-rs (``rjieba``): the same dictionary and the same cuts as Python jieba
  (every one of 300,000 story lines, both modes), ~7x faster. Function words, punctuation and digits are dropped; Latin
  words are lower-cased. A query is cut in search mode too (为什么 also gives 什么).
* :class:`BM25`: Okapi BM25 (k1 1.2, b 0.75) over token lists with an inverted index: a query
  touches only the postings of its own tokens.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

from ahocorasick_rs import AhoCorasick, MatchKind

from arklore.corpus.store import Store

K1 = 1.2
B = 0.75

_STOPWORDS = """
    的 地 得 了 着 过 吗 呢 吧 啊 呀 嘛 么 啦 哦 哟 嗯 哈 哇 喔 诶 欸 哎 唉 呃 噢 嘿 呐 咯 喽
    是 在 有 和 与 及 或 也 都 就 还 又 再 才 很 太 更 最 挺 真 好 非常 已经 曾经 正在 一直 总是
    这 那 哪 这个 那个 哪个 这些 那些 这里 那里 哪里 这儿 那儿 这样 那样 这么 那么 怎么 怎样
    怎么样 什么 什么样 为什么 为何 如何 多少 几 谁 啥
    我 你 您 他 她 它 我们 你们 他们 她们 它们 咱 咱们 自己 人家 大家
    一 一个 一下 一些 一点 一样 一起 个 些 点 种 次 回 下 上 中 里 前 后
    不 没 没有 别 不是 不会 不要 不能 可能 可以 能 会 要 想 得 该 应该 需要 必须
    说 讲 看 做 让 被 把 对 从 到 向 跟 给 为 比 于 以 之 其 而 但 但是 可是 不过 然后 所以
    因为 如果 虽然 还是 就是 只是 或者 而且 并且 那就 现在 以后 之后 以前 之前 当时 当年
    真的 到底 究竟 其实 当然 知道 觉得 记得 还会 今天 最近 时候 事情 东西
    你好 您好 早上好 中午好 下午好 晚上好 早安 午安 晚安 再见 谢谢 多谢 拜拜 嗨 哈喽 喂
"""
STOPWORDS = frozenset(_STOPWORDS.split())
"""Words that say nothing about a topic (chat messages are full of them: greetings too)."""
_SMALL_TALK = """
    来 去 来看 看看 见 见到 见面 过来 过得 忙 忙什么 好久 不见 好久不见 久违 聊聊 聊天 聊聊天 陪陪
    坐坐 一趟 近况 还好 好吗 早上 上好 中午 下午 晚上 早安 晚安
"""
SMALL_TALK = frozenset(_SMALL_TALK.split())
"""Words of a message's small talk, left out of the query only (her own lines keep them: 我去
找她 is what she says): 博士来看你了，最近过得好吗 names no topic, so a greeting's memories and
scenes are her most telling ones, not those where somebody says 从…来看 or 过得."""

_PUNCT = re.compile(r"^[\W_]+$", re.UNICODE)


@functools.lru_cache(maxsize=1 << 17)  # a story's vocabulary: each word is judged once
def _keep(tok: str) -> bool:
    if not tok or tok in STOPWORDS or _PUNCT.match(tok):
        return False
    return not all(unicodedata.category(c).startswith("N") for c in tok)


def name_words(store: Store) -> list[str]:
    """The story's speaker names, kept whole by the tokenizer and found in lines as people:
    two to twelve characters with at least one CJK character, not ``？？？``-like labels."""
    out = []
    for name, *_ in store.speaker_rows():
        n = name.strip()
        if (
            2 <= len(n) <= 12
            and any("\u4e00" <= c <= "\u9fff" for c in n)
            and not _PUNCT.search(n[-1])
        ):
            out.append(n)
    return sorted(set(out))


class Tokenizer:
    """Text -> content tokens (see the module doc); ``words`` are kept whole."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        self.__setstate__(sorted({w for w in words if len(w) >= 2}))

    def __getstate__(self) -> list[str]:  # pickled as its words: the automaton is rebuilt
        return self.words

    def __setstate__(self, words: list[str]) -> None:
        self.words = words
        self._auto = AhoCorasick(words, matchkind=MatchKind.LeftmostLongest) if words else None

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Leftmost-longest, non-overlapping occurrences of the kept words."""
        if self._auto is None:
            return []
        return [(s, e) for _, s, e in self._auto.find_matches_as_indexes(text)]

    def names(self, text: str) -> list[str]:
        """The kept words (the story's names) written in ``text``, once each."""
        return list(dict.fromkeys(text[s:e] for s, e in self._spans(text)))

    def _cut(self, text: str, search: bool) -> list[str]:
        import rjieba  # its dictionary takes 0.1 s to load: only the steps that cut pay for it

        cut = rjieba.cut_for_search if search else rjieba.cut
        raw: list[str] = []
        pos = 0
        for s, e in [*self._spans(text), (len(text), len(text))]:
            if s > pos:
                gap = text[pos:s]
                raw += cut(gap, False)  # no HMM: only the dictionary's words
            if e > s:
                raw.append(text[s:e])
            pos = e
        return [t.lower() for t in (x.strip() for x in raw) if _keep(t)]

    def tokens(self, text: str) -> list[str]:
        """Content tokens of a stored text (precise mode)."""
        return self._cut(text, search=False)

    def query(self, text: str) -> list[str]:
        """Content tokens of a message (search mode: the parts of long words too), once each."""
        return list(dict.fromkeys(t for t in self._cut(text, search=True) if t not in SMALL_TALK))


class BM25:
    """Okapi BM25 over ``docs`` (token lists); :meth:`scores` -> {doc index: score}."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.lengths = [len(d) for d in docs]
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 0.0
        postings: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(docs):
            for tok, tf in Counter(d).items():
                postings.setdefault(tok, []).append((i, tf))
        self.postings = postings

    def idf(self, tok: str) -> float:
        df = len(self.postings.get(tok, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5)) if df else 0.0

    def scores(self, query: Iterable[str]) -> dict[int, float]:
        out: dict[int, float] = {}
        avgdl = self.avgdl or 1.0
        for tok in dict.fromkeys(query):
            plist = self.postings.get(tok)
            if not plist:
                continue
            idf = self.idf(tok)
            for i, tf in plist:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / avgdl)
                out[i] = out.get(i, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        return out
