"""What the lorebook keys take from ``data/lorebook_keys.toml`` (fan nicknames, chat words
that hold a name or are one) and the markers that tell a name that is a word from the word
(暴雨的盾 is her, 窗外的夜莺 the bird). Messages are written for this test."""

from __future__ import annotations

import pytest

from arklore.cards.keys import KeyMaker, Person, key_data, kin_key
from arklore.cards.lint import Matchable, fires
from arklore.core.kinship import TERMS

PEOPLE = [
    Person("chen", ("陈",)),
    Person("croissant", ("可颂",)),
    Person("nightingale", ("夜莺",)),
    Person("rainstorm", ("暴雨",)),
    Person("texas", ("德克萨斯", *key_data().nicknames["char_102_texas"])),
]


@pytest.fixture(scope="module")
def maker() -> KeyMaker:
    return KeyMaker(PEOPLE)


def fired(maker: KeyMaker, text: str) -> set[str]:
    return {p.id for p in PEOPLE if fires(Matchable(tuple(maker.keys(p.id).keys)), text)}


def test_the_table_gives_fan_nicknames_by_operator_and_chat_words() -> None:
    data = key_data()
    assert "德狗" in data.nicknames["char_102_texas"]
    assert {"陈记", "陈奕迅", "可颂"} <= data.words


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("德狗今天又把巧克力塞给我了", {"texas"}),  # a fan nickname the game never says
        ("陈今天又加班了", {"chen"}),
        ("楼下新开了一家陈记烧腊", set()),  # a shop name holding her name
        ("昨晚听了陈奕迅的演唱会", set()),  # a singer's
        ("可颂说她明天来", {"croissant"}),
        ("早餐吃了个可颂", set()),  # the pastry: keyed only where a person is meant
        ("夜莺在甲板上发呆", {"nightingale"}),
        ("窗外的夜莺在唱歌", set()),  # 的 before it: the bird
        ("有夜莺在叫", set()),
        ("暴雨的盾真的很硬", {"rainstorm"}),  # what a person has, after 的
        ("暴雨的声音好吵", set()),
    ],
)
def test_a_name_that_is_a_word_fires_for_her_and_not_for_the_word(
    maker: KeyMaker, text: str, who: set[str]
) -> None:
    assert fired(maker, text) == who


def test_a_kinship_word_right_before_one_of_her_people_is_that_one() -> None:
    sister = next(t for t in TERMS if t.name == "妹妹")
    other = [kin_key(w, sister, others=["崖心"]) for w in ("妹妹", "妹")]  # 初雪's keys
    alone = [kin_key(w, sister) for w in ("妹妹", "妹")]
    said = Matchable(tuple(other))
    assert fires(said, "你妹妹最近还好吗") and fires(said, "你妹还好吗")
    assert not fires(said, "你妹妹崖心又去爬山了")  # her other sister, named
    assert fires(Matchable(tuple(alone)), "你妹妹崖心又去爬山了")  # the rule is the lookahead
