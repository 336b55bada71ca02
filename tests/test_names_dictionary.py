"""jieba's dictionary as the names layer reads it, and the blocking words of signal 1
(:func:`arklore.names.rules.build_stoplist`): the words a plain test of every dictionary word
gives (the one automaton pass over the joined dictionary only finds which words to test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arklore.names import rules
from arklore.names.rules import (
    HONORIFIC_WORD_KEEP,
    STOP_FREQ_MIN,
    _is_name_plus_honorific,
    build_stoplist,
    extra_stopwords,
    word_freqs,
)


def reference_stoplist(risky: frozenset[str], plain: frozenset[str]) -> frozenset[str]:
    """Signal 1 word by word, as the module docstring states it."""
    out = set()
    listed = [*word_freqs().items(), *((w, (HONORIFIC_WORD_KEEP, "x")) for w in extra_stopwords())]
    for word, (freq, _pos) in listed:
        if len(word) < 2 or freq < STOP_FREQ_MIN or word in risky | plain:
            continue
        ends = [(word.index(k) + len(k), -len(k), k) for k in risky if k in word]
        if not ends:
            continue
        singles = [c for c in word if c in risky]
        hit = singles[0] if singles else min(ends)[2]
        if _is_name_plus_honorific(word, hit) and freq < HONORIFIC_WORD_KEEP:
            continue
        subs = {word[i:j] for i in range(len(word)) for j in range(i + 2, len(word) + 1)}
        if subs & plain:
            continue
        out.add(word)
    return frozenset(out)


# single-character names, names that are words, names that are not (identifiers only)
RISKY = frozenset(
    {"年", "空", "山", "陈", "夕", "令", "红", "黑", "梅", "银灰", "初雪", "流星", "真理"}
)
PLAIN = frozenset({"阿米娅", "凯尔希", "梅尔", "黑角", "黑键", "能天使"})


@pytest.mark.parametrize(
    ("risky", "plain"),
    [
        (RISKY, PLAIN),
        (frozenset({"银灰", "初雪", "流星", "真理"}), PLAIN),  # no single-character name
        (frozenset({"年", "空"}), frozenset()),
        (frozenset({"山"}), frozenset({"山上"})),  # a plain name inside a word keeps the word out
    ],
)
def test_blocking_words_are_those_a_test_of_every_word_gives(
    risky: frozenset[str], plain: frozenset[str]
) -> None:
    got = build_stoplist.__wrapped__(risky, plain)
    assert got == reference_stoplist(risky, plain)
    assert len(got) > 10  # the dictionary was read: 年 alone blocks thousands of words


def test_common_collisions_are_blocked_and_name_honorifics_are_not() -> None:
    got = build_stoplist.__wrapped__(RISKY, PLAIN)
    assert {"今年", "空气", "山上", "夕阳", "红色", "银灰色"} <= got
    assert "山哥" not in got  # name + honorific, rare as a word
    assert not got & (RISKY | PLAIN)


def test_no_risky_name_blocks_nothing() -> None:
    assert build_stoplist(frozenset(), PLAIN) == frozenset()


@pytest.mark.realdata
def test_blocking_words_of_the_real_names(gamedata_root: Path) -> None:
    from arklore.names.aliases import load_user_aliases
    from arklore.names.evaluation import operators_from_excel
    from arklore.names.matcher import build_matcher

    ops = operators_from_excel(gamedata_root / "zh_CN/gamedata/excel")
    m = build_matcher(load_user_aliases(), operators=ops)
    entries = m._alias_entries(m.table, m.config)
    risky = frozenset(k for kind, k, _ids in entries if rules.classify(k) == "risky")
    plain = frozenset(k for kind, k, _ids in entries if rules.classify(k) == "plain")
    assert len(risky) > 100
    assert build_stoplist.__wrapped__(risky, plain) == reference_stoplist(risky, plain)


# --- reading jieba's dictionary ------------------------------------------------------------------
def test_dictionary_is_read_without_importing_jieba() -> None:
    import subprocess
    import sys

    code = "import sys; from arklore.names import rules; rules.word_freqs(); print('jieba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert len(word_freqs()) > 300_000


def test_whole_text_split_reads_the_dictionary_as_line_by_line_does() -> None:
    path = rules.jieba_dict_path()
    assert path is not None
    text = path.read_text(encoding="utf-8")
    by_line = rules.parse_dict(text + "\n\n")  # a blank line: read line by line
    assert rules.parse_dict(text) == by_line == word_freqs()
    assert word_freqs()["今年"][1] == "t"


def test_a_dictionary_of_other_shapes_is_read_line_by_line() -> None:
    text = "阿尔卑斯 3 nz\n银灰色 12\n\n坏行 x n\n银灰色 20 n\n"
    assert rules.parse_dict(text) == {"阿尔卑斯": (3, "nz"), "银灰色": (20, "n")}


def test_a_word_is_a_name_with_honorific_by_the_name_that_ends_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """红豆哥 holds 红豆 and 豆哥: it is 红豆 + 哥 (a call, not a word to block), as the
    dictionary-order reading of the word finds 红豆 first; a word that is no name + honorific
    is blocked."""
    words = {"红豆哥": (10, "n"), "红豆沙": (10, "n"), "豆哥们": (10, "n")}
    monkeypatch.setattr(rules, "word_freqs", lambda: words)
    monkeypatch.setattr(rules, "extra_stopwords", lambda: ())
    rules._stop_candidates.cache_clear()
    try:
        got = build_stoplist.__wrapped__(frozenset({"红豆", "豆哥"}), frozenset())
    finally:
        rules._stop_candidates.cache_clear()
    assert got == {"红豆沙", "豆哥们"}
