"""CJK-safe lorebook keys (cards/keys.py) and SillyTavern's matching as the lint emulates it
(cards/lint.py). Messages here are written for this test; the scored run on the names
layer's labelled set needs the real name inventory (``realdata``) and prints its figure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sillytavern import Rules, Scan, sillytavern_root

from arklore.cards import keys as keys_mod
from arklore.cards.keys import KeyMaker, Person, people_from_table
from arklore.cards.lint import (
    AND_ALL,
    MAX_FALSE_RATE,
    NOT_ALL,
    NOT_ANY,
    LintEntry,
    Matchable,
    fires,
    key_matches,
    lint,
)
from arklore.names.aliases import AliasTable, aliases_from_operators, load_user_aliases
from arklore.names.evaluation import load_eval_set, operators_from_excel

PEOPLE = [
    Person("chen", ("陈", "陈晖洁", "ch'en", "陈sir")),
    Person("red", ("红", "projekt red")),
    Person("vigna", ("红豆", "vigna")),
    Person("sora", ("空", "sora")),
    Person("blast", ("空爆",)),
    Person("yato", ("夜刀", "yato")),
    Person("pramanix", ("初雪", "pramanix")),
    Person("nian", ("年", "nian")),
    Person("dusk", ("夕", "dusk")),
    Person("w", ("w", "维什戴尔")),
    Person("amiya", ("阿米娅", "amiya")),
    Person("npc:bishop", ("主教",), operator=False),
]
# (message, people it mentions): words that hold a name, names inside names, and the names
MESSAGES = [
    ("陈旧的仓库里什么都没有", []),
    ("陈列柜里摆着奖杯", []),
    ("红豆今天又去训练了", ["vigna"]),
    ("我喜欢吃红豆沙", []),
    ("天空好蓝，空气也清新", []),
    ("空爆的技能很好用", ["blast"]),
    ("今年冬天想去看初雪", []),
    ("这颜色是银灰色的", []),
    ("新年快乐，年年有余", []),
    ("夕阳真美", []),
    ("七夕节要到了", []),
    ("WWDC 今年在六月", []),
    ("主教今天来了", []),
    ("陈警官今天在吗", ["chen"]),
    ("陈晖洁又加班了", ["chen"]),
    ("和初雪一起去滑雪", ["pramanix"]),
    ("夕在画画", ["dusk"]),
    ("年姐又在炸锻造室", ["nian"]),
    ("@空 来唱歌吗", ["sora"]),
    ("阿米娅和夜刀一起巡逻", ["amiya", "yato"]),
    ("抽到W了，好开心", ["w"]),
    ("月薪两W，够不够活", []),  # a Chinese numeral before a letter: a unit
    ("我和夕去看夕阳了", ["dusk"]),  # a NOT ANY blocker would kill the entry here
    ("三年过去了，3年又3年", []),
]
RECORDS = [{"text": t, "mentions": [{"id": p} for p in who]} for t, who in MESSAGES]


def entries(maker: KeyMaker) -> list[LintEntry]:
    out = []
    for pid, ks in maker.all().items():
        if not ks.empty:
            m = Matchable(tuple(ks.keys), tuple(ks.secondary), ks.selective, ks.logic,
                          whole_words=ks.whole_words)  # fmt: skip
            out.append(LintEntry(pid, pid, m))
    return out


@pytest.fixture(scope="module")
def maker() -> KeyMaker:
    return KeyMaker(PEOPLE)


def test_a_name_that_is_a_word_or_inside_one_is_a_regex_key_with_lookarounds(
    maker: KeyMaker,
) -> None:
    sets = maker.all()
    for pid, ks in sets.items():
        plain = [k for k in ks.keys if not k.startswith("/")]
        assert not set(plain) & set(ks.unsafe), pid  # never a bare unsafe name
        for k in ks.keys:
            if k.startswith("/"):
                assert key_matches(k, "") is False  # it compiles (a bad one never fires)
    assert set(sets["chen"].unsafe) == {"陈", "ch'en", "陈sir"} and "陈晖洁" in sets["chen"].keys
    assert "红豆" in sets["vigna"].unsafe  # a word too
    assert set(sets["amiya"].unsafe) == {"amiya"} and "阿米娅" in sets["amiya"].keys
    assert sets["npc:bishop"].empty and sets["npc:bishop"].unreachable == ["主教"]
    (dusk,) = [k for k in sets["dusk"].keys if "夕" in k]
    assert "阳" in dusk and "七" in dusk  # 夕阳, 七夕: whole words, not her
    assert (
        sets["w"].keys[-1]
        == "/(?<![a-z0-9一二两三四五六七八九十几百千万])(?<!in |at |to |of |on )(?<!the )(?<!from )"
        "w(?![a-z型形字号键])/i"
    )


def test_the_keys_fire_on_every_mention_and_no_other_message(maker: KeyMaker) -> None:
    rep = lint(entries(maker), RECORDS, lambda x: x)
    assert rep.false == [], [(f.label, f.key, f.text) for f in rep.false]
    assert rep.reached == rep.mentioned == 12  # 年姐, @空, W and 夕 beside 夕阳 included


def test_the_person_a_message_is_written_to_is_left_unjudged(maker: KeyMaker) -> None:
    """The sets do not label the operator a message is written to: 「夕，…」 firing 夕 is
    neither a false trigger nor a reach there, while every other entry is judged as before."""
    said = [{"text": "夕，你画里那个人是不是陈", "mentions": [{"id": "chen"}]}]
    judged = lint(entries(maker), said, lambda x: x)
    assert [f.person for f in judged.false] == ["dusk"] and judged.fires == 2
    rep = lint(entries(maker), [{**said[0], "unjudged": ["dusk"]}], lambda x: x)
    assert rep.false == [] and rep.fires == 1 and rep.reached == rep.mentioned == 1


def test_sillytavern_itself_fires_the_same_entries() -> None:
    """Its own matchKeys (tests/support/sillytavern.py), on every message: the lint's
    emulation and SillyTavern agree."""
    root = sillytavern_root()
    made = KeyMaker(PEOPLE)
    book = [
        {"uid": pid, "key": ks.keys, "keysecondary": [], "selective": False}
        for pid, ks in made.all().items()
        if not ks.empty
    ]
    rules = Rules(root, scans=[Scan(book, [f"User: {t}"], 1) for t, _ in MESSAGES])
    _, fired_by_st = rules.run()
    for (text, who), st in zip(MESSAGES, fired_by_st, strict=True):
        ours = {e.person for e in entries(made) if fires(e.match, f"User: {text}")}
        assert set(st) == ours, text
        assert ours == set(who), text


def test_the_gate_is_what_keeps_them_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken on purpose (every name counted safe): the lint goes red."""
    monkeypatch.setattr(KeyMaker, "_why_unsafe", lambda self, name: "")
    broken = KeyMaker(PEOPLE)
    rep = lint(entries(broken), RECORDS, lambda x: x)
    assert rep.false_rate > MAX_FALSE_RATE
    assert {f.key for f in rep.false} >= {"陈", "红", "空", "初雪", "年", "夕"}


def test_lookarounds_are_what_keep_them_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken on purpose (the lookarounds emptied): the words fire again."""
    monkeypatch.setattr(KeyMaker, "_contexts", lambda self, name: ([], [], []))
    rep = lint(entries(KeyMaker(PEOPLE)), RECORDS, lambda x: x)
    assert {f.text for f in rep.false} >= {"夕阳真美", "七夕节要到了", "陈旧的仓库里什么都没有"}


def test_sillytavern_matching_as_emulated() -> None:
    # whole words change nothing for Chinese: every CJK character is \W in JavaScript
    assert key_matches("银灰", "这颜色是银灰色的", whole=True)
    assert not key_matches("w", "WWDC 今年在六月", whole=True)
    assert key_matches("w", "抽到W了", whole=True)  # case-insensitive
    assert not key_matches("w", "抽到W了", whole=True, case=True)
    assert not key_matches("陈", "陈sir来了", whole=True)  # an ASCII letter touches it
    assert key_matches("陈", "陈sir来了")
    assert key_matches("silverash the reignfrost", "SilverAsh the Reignfrost!", whole=True)
    assert key_matches("/陈(?!皮)/", "陈来了") and not key_matches("/陈(?!皮)/", "陈皮")
    dusk = Matchable(("夕",), ("夕阳", "七夕"), True, NOT_ANY)
    assert fires(dusk, "夕在画画") == "夕" and fires(dusk, "夕阳真美") is None
    both = Matchable(("a",), ("b", "c"), True, AND_ALL)
    assert fires(both, "a b") is None and fires(both, "a b c") == "a"
    not_all = Matchable(("a",), ("b", "c"), True, NOT_ALL)
    assert fires(not_all, "a b") == "a" and fires(not_all, "a b c") is None
    assert fires(Matchable((), constant=True), "") == "<constant>"
    assert fires(Matchable(("a",), enabled=False), "a") is None


def test_topic_keys_drop_words_and_punctuation(maker: KeyMaker) -> None:
    topics = KeyMaker(PEOPLE, ["雪线之上", "山脊", "“降临”", "逃票？", "红豆沙"])
    assert topics.topic_unsafe("雪线之上") == ""
    assert topics.topic_unsafe("山脊") == "a dictionary word"
    assert keys_mod.topic_key("逃票？") == "逃票"
    assert topics.topic_unsafe("x") == "too short"


@pytest.mark.realdata
def test_lint_figure_on_the_labelled_messages(gamedata_root: Path, metrics) -> None:
    """Every operator of the real inventory gets an entry keyed as the export keys it; the
    names layer's labelled messages (274) are run through them as SillyTavern would."""
    ops = operators_from_excel(gamedata_root / "zh_CN/gamedata/excel")
    table = AliasTable(load_user_aliases() + aliases_from_operators(ops))
    maker = KeyMaker(people_from_table(table))
    for pid, ks in maker.all().items():
        assert not set(ks.keys) & set(ks.unsafe), pid  # an unsafe name is a regex key
    rep = lint(entries(maker), load_eval_set(), table.base_of)
    metrics(rep.line() + " [every operator of the real inventory]")
    print("\n" + rep.line())
    for f in rep.false:
        print(f"  {f.person}: {f.key!r} in {f.text!r}")
    assert rep.false_rate <= MAX_FALSE_RATE, rep.line()


def test_her_own_book_keys_a_foreign_or_one_character_name_of_her_story() -> None:
    """The world book leaves out a person of the story whose name the dictionary holds (玛丽
    could be anyone's); her own card's book keys a foreign name and a one-character name,
    never a role word (主教) or a numeral (九)."""
    people = [
        Person("npc:juana", ("胡安娜",), operator=False),
        Person("npc:ji", ("绩",), operator=False),
        Person("npc:bishop", ("主教",), operator=False),
        Person("npc:nine", ("九",), operator=False),
    ]
    maker = KeyMaker(people)
    assert all(maker.keys(p.id).empty for p in people)  # the world book: nobody in particular

    def fired(pid: str, text: str) -> bool:
        return fires(Matchable(tuple(maker.her_book_keys(pid).keys)), text) is not None

    assert fired("npc:juana", "胡安娜最近还好吗")
    assert fired("npc:ji", "绩又来找你了") and not fired("npc:ji", "这次成绩不错")
    assert maker.her_book_keys("npc:bishop").empty and maker.her_book_keys("npc:nine").empty
