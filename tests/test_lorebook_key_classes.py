"""The general rules the second development set (``data/lorebook_dev2.jsonl``) called for,
each on messages written for this test: an English word that is a codename is that word
inside an English phrase, a Latin name is keyed in its ASCII form too, a name two people are
called keys neither, a name that is a title is her only beside a word of the game, a
single-character surname after 姓 is nobody, a name after a measure word is a thing, and a story form that is a question is no name."""

from __future__ import annotations

import pytest
from support.lorebook_sets import named_mentions

from arklore.cards.keys import KeyMaker, Person, ascii_form, key_data, kin_key, nickname_ok
from arklore.cards.lint import Matchable, fires
from arklore.core.kinship import BY_NAME, TERMS, find_terms, simplified

PEOPLE = [
    Person("ray", ("ray", "莱伊")),
    Person("silverash", ("silverash",)),
    Person("mlynar", ("młynar", "玛恩纳")),
    Person("specter", ("幽灵鲨", "二队长")),
    Person("gladiia", ("歌蕾蒂娅", "二队长")),
    Person("doc", ("doc", "医生")),
    Person("chen", ("陈",)),
    Person("flint", ("燧石",)),
    Person("texas", ("德克萨斯",)),
    Person("skybox", ("天空盒",)),
    Person("grain", ("小满",)),
]


@pytest.fixture(scope="module")
def maker() -> KeyMaker:
    return KeyMaker(PEOPLE)


def fired(maker: KeyMaker, text: str) -> set[str]:
    """Whose entries fire on ``text``, each person keyed as ``maker`` keys her."""
    return {pid for pid in maker.people if fires(Matchable(tuple(maker.keys(pid).keys)), text)}


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("Ray又去劫车了", {"ray"}),
        ("我用光追ray tracing跑了一下", set()),  # an English phrase: the word
        ("the Ray of light", set()),
        ("SilverAsh is so handsome", {"silverash"}),  # not an English word: any phrase
        ("a town in SilverAsh county", set()),  # after an English preposition: a place
        ("抽到 SilverAsh 了", {"silverash"}),
        ("把这个doc文件发给我", set()),  # lower case, no person marker: the word
        ("Doc又在给大家打针了", {"doc"}),  # a capital: her name
        ("doc说今天要体检", {"doc"}),  # lower case beside a person marker
        ("Mlynar又在睡觉", {"mlynar"}),  # typed without ł
        ("młynar又在睡觉", {"mlynar"}),
        ("二队长今天心情好吗", set()),  # both are called so: neither
        ("幽灵鲨和歌蕾蒂娅", {"specter", "gladiia"}),
        ("医生说我这周要多休息", set()),  # a doctor, not the operator
        ("医生干员的手枪能回血", {"doc"}),
        ("我刚抽到医生", {"doc"}),
        ("楼下烧腊店的老板姓陈", set()),
        ("陈又加班了", {"chen"}),
        ("燧石的拳头太硬了", {"flint"}),  # what a person has
        ("用燧石打火好难", set()),
        ("德克萨斯去送货了", {"texas"}),  # what a person does
        ("我给卧室装了个天空盒灯", set()),  # after a measure word: the thing
        ("天空盒把无人机开进了食堂", {"skybox"}),
        ("小满是二十四节气之一", set()),  # a chat word (a solar term)
        ("小满在田边画画", {"grain"}),
    ],
)
def test_each_class_of_the_second_development_set(
    maker: KeyMaker, text: str, who: set[str]
) -> None:
    assert fired(maker, text) == who, [k for p in PEOPLE for k in maker.keys(p.id).keys]


def test_a_shared_name_is_listed_as_nobody_in_particular(maker: KeyMaker) -> None:
    ks = maker.keys("specter")
    assert ks.shared == ["二队长"] and "幽灵鲨" in ks.keys
    alone = KeyMaker([Person("a", ("二队长",)), Person("b", ("二队长", "歌蕾蒂娅"))]).keys("a")
    assert alone.empty and "another person's" in alone.why_empty()


def test_ascii_form_of_a_latin_name() -> None:
    assert ascii_form("młynar") == "mlynar"
    assert ascii_form("varkáris") == "varkaris"
    assert ascii_form("ray") == "" and ascii_form("玛恩纳") == "" and ascii_form("лето") == ""


def test_english_codenames_are_data_and_a_question_is_no_nickname() -> None:
    assert {"ray", "may", "spot", "doc"} <= key_data().english
    assert not nickname_ok("什么意思") and nickname_ok("小玫")


def test_keys_only_leaves_a_mention_by_kinship_alone_to_the_chat_mode() -> None:
    names = {"chen": ("陈", "陈sir"), "wei": ("魏彦吾",)}
    records = [
        {"text": "你舅舅最近好吗", "mentions": [{"id": "wei"}], "tags": ["kinship"]},
        {"text": "陈SIR的舅舅魏彦吾", "mentions": [{"id": "chen"}, {"id": "wei"}], "tags": ["kinship"]},
        {"text": "陈的舅舅来了", "mentions": [{"id": "chen"}, {"id": "wei"}], "tags": ["kinship"]},
        {"text": "舅舅", "mentions": [{"id": "wei"}], "tags": ["plain"]},  # not tagged: counted
    ]  # fmt: skip
    kept, left = named_mentions(records, names, lambda i: i)
    assert left == 2  # red if a kinship record loses a named mention or keeps an unnamed one
    assert [[m["id"] for m in r["mentions"]] for r in kept] == [
        [],
        ["chen", "wei"],
        ["chen"],
        ["wei"],
    ]


THIRD = [
    Person("cello", ("阿尔图罗",)),
    Person("nightingale", ("夜莺",)),
    Person("tequila", ("龙舌兰",)),
    Person("pudding", ("布丁",)),
]


@pytest.fixture(scope="module")
def third() -> KeyMaker:
    return KeyMaker(THIRD)


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("阿尔图罗的琴声又响起来了", {"cello"}),  # a foreign name in the dictionary is a name
        ("夜莺三技能开了全场法抗", {"nightingale"}),  # game talk right after her name
        ("夜莺那个大招", {"nightingale"}),
        ("窗外的夜莺在唱歌", set()),  # after 的: the bird
        ("龙舌兰拉满血量就硬了", {"tequila"}),  # a word of the game later in her clause
        ("龙舌兰酒太烈了，喝不动", set()),  # no word of the game on the line: the drink
        ("肉鸽抓了个龙舌兰，打得挺好", {"tequila"}),  # game talk: not a thing after 个
        ("这次周边有龙舌兰的立牌吗", {"tequila"}),  # a word of the game before her
        ("焦糖布丁做失败了", set()),  # a dessert, whatever follows
        ("布丁的连锁攻击好可爱", {"pudding"}),
    ],
)
def test_each_class_of_the_third_development_set(third: KeyMaker, text: str, who: set[str]) -> None:
    got = fired(third, text)
    assert got == who, [k for p in THIRD for k in third.keys(p.id).keys]


def test_a_word_that_alone_means_the_speakers_own_is_hers_with_you_in_its_clause() -> None:
    partner = next(t for t in TERMS if t.name == "搭档")
    said = Matchable((kin_key("战友", partner),))
    assert fires(said, "你那两个老战友今天来了")
    assert not fires(said, "我那两个老战友今天来了")
    assert not fires(said, "你知道吗，我的战友今天来了")  # 你 in another clause
    assert not fires(said, "你和银灰的战友")  # somebody else's


def test_a_kinship_word_that_starts_a_blocker_is_not_that_word() -> None:
    lord = next(t for t in TERMS if t.name == "主君")
    said = Matchable((kin_key("老爷", lord),))
    assert fires(said, "你老爷让你去一趟")
    assert not fires(said, "我家老爷子今天生日")  # 老爷子: somebody's old man


BONDED = [
    Person("nightingale", ("夜莺",)),
    Person("shining", ("闪灵",)),
    Person("nian", ("年",)),
    Person("dusk", ("夕",)),
    Person("frostleaf", ("霜叶",)),
    Person("red", ("红",)),
    Person("snowsant", ("白雪",)),
    Person("pramanix", ("初雪",)),
]


@pytest.fixture(scope="module")
def bonded() -> KeyMaker:
    """夜莺 and 闪灵, 年 and 夕, 霜叶 and 红 are each other's people; 白雪 and 初雪 are not."""
    pairs = [("nightingale", "shining"), ("nian", "dusk"), ("frostleaf", "red")]
    bonds: dict[str, set[str]] = {}
    for a, b in pairs:
        bonds.setdefault(a, set()).add(b)
        bonds.setdefault(b, set()).add(a)
    return KeyMaker(BONDED, bonds=bonds)


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("夜莺和闪灵到底是什么关系", {"nightingale", "shining"}),  # joined to one of her people
        ("闪灵夜莺，总是一起出现", {"nightingale", "shining"}),  # no join word after a plain name
        ("年和夕又吵起来了", {"nian", "dusk"}),  # a one-character partner, joined
        ("白雪、初雪都好浪漫", set()),  # two words in a list, not each other's people
        ("窗外的夜莺在叫", set()),  # alone, still the bird
        ("秋天的霜叶红于二月花", set()),  # a partner that is a word needs a join word
    ],
)
def test_a_word_name_joined_to_one_of_her_people_is_her(
    bonded: KeyMaker, text: str, who: set[str]
) -> None:
    got = fired(bonded, text)
    assert got == who, [k for p in BONDED for k in bonded.keys(p.id).keys]


def test_partner_names_leave_out_a_name_two_people_share() -> None:
    people = [Person("a", ("流星",)), Person("b", ("二队长", "歌蕾蒂娅")), Person("c", ("二队长",))]
    maker = KeyMaker(people, bonds={"a": {"b"}})
    assert maker.partner_names("a") == ["歌蕾蒂娅"]


HAS = [Person("absinthe", ("苦艾",)), Person("ash", ("灰烬",)), Person("flint", ("燧石",))]


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("苦艾的拐杖弹好帅", {"absinthe"}),  # what she carries, after 的
        ("灰烬那把枪好帅", {"ash"}),  # that weapon of hers
        ("燧石的近战太猛了", {"flint"}),  # a word of the game on the line
        ("苦艾酒喝多了头疼", set()),
        ("炉子里只剩一点灰烬", set()),
        ("燧石可以用来打火", set()),
        ("说真的，你们抽苦艾了吗", {"absinthe"}),  # a pull: game talk
        ("燧石练满了没", {"flint"}),
        ("烟灰缸里全是灰烬，我爸又抽烟了", set()),  # 抽烟 is no pull
        ("排练的时候燧石掉在地上", set()),  # 排练 is no levelling
    ],
)
def test_what_she_carries_and_how_she_fights_mark_a_word_name(text: str, who: set[str]) -> None:
    maker = KeyMaker(HAS)
    assert fired(maker, text) == who


SIXTH = [
    Person("heavyrain", ("暴雨",)), Person("skyfire", ("天火",)), Person("indigo", ("深靛",)),
    Person("reed", ("苇草",)), Person("papyrus", ("莎草",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("群里有没有大佬 h12-4 用暴雨能过吗", {"heavyrain"}),  # a stage code is game talk
        ("天火 s2 清杂还是香", {"skyfire"}),  # her second skill, as players write it
        ("这期PV里那个背影是不是深靛", {"indigo"}),
        ("说实话我一直以为深靛是男的", {"indigo"}),  # only a person is a man or a woman
        ("暴雨天下了3-1小时", set()),  # digits and a dash alone are no stage
        ("天火烧了三天三夜", set()),
        ("深靛色的布料", set()),
        ("苇草和莎草长在池塘边", set()),  # 和 after a word that is a name: two plants
        ("他和莎草一起出任务", {"papyrus"}),  # 和 after a person still marks her
        ("苇草跟莎草这俩是什么关系", {"reed", "papyrus"}),  # what says it is about people
        ("苇草和莎草名字太像了", {"reed", "papyrus"}),
        ("天火 一开全屏都是火", {"skyfire"}),  # set apart by a space: a name
        ("莎草 和 苇草 是同一个活动的吗", {"reed", "papyrus"}),
        ("今天下暴雨了", set()),
        ("窗外 下起了暴雨", set()),  # a space elsewhere on the line is no mark
    ],
)
def test_each_class_of_the_sixth_development_set(text: str, who: set[str]) -> None:
    maker = KeyMaker(SIXTH)
    assert fired(maker, text) == who


@pytest.mark.parametrize(
    "text",
    [
        "你们以前是同事吗",
        "你是她的老朋友吧",
        "我妹妹最近也总顶嘴，妹妹长大了都这样",
        "我妹妹也来了，你妹妹呢",
        "你跟你那两个姐妹谁最能喝",
        "年和夕是姐妹吗",
        "你们二队长有消息吗？",
        "舅舅最近身体还好吗？",
        "你那位老搭档呢？",
        "我妹妹最近也总跟我顶嘴，你说妹妹是不是长大了都这样",
        "我妹妹也来了，你那个爱画画的妹妹呢",
        "你那个爱画画的妹妹呢",
        "我的老战友来了，你那两个老战友呢",
        "我姐说你的朋友很多",
        "你大妹妹最近回信了吗",
        "你小妹呢",
        "队长说明天集合，今晚不能陪你了",
        "你们队长又开会了",
        "你那个总板着脸的老板呢",
        "我家那个弟弟也让我头疼",
        "妳們隊長今天來找過妳",  # traditional script, and 妳
        "妳姊姊最近好嗎",
        "你那兩個弟弟妹妹又吵架了",
        "我們隊長說明天集合",
        "我姊姊也來了，妳那個愛畫畫的妹妹呢",
    ],
)
def test_her_book_reads_a_kinship_word_as_her_turns_do(text: str) -> None:
    """kin_key (the lorebook) and find_terms (arklore's own turns) agree on which kinship
    words of a message are hers, in either script."""
    said = {t.name for t, _, _ in find_terms(text)}
    plain = simplified(text)
    keyed = {
        t.name
        for t in TERMS
        if t.said and any(f in plain and fires(Matchable((kin_key(f, t),)), text) for f in t.forms)
    }
    assert keyed == said


TRADITIONAL = [
    Person("kaltsit", ("凯尔希",)), Person("chen", ("陈",)), Person("nightingale", ("夜莺",)),
    Person("shining", ("闪灵",)), Person("dusk", ("夕",)), Person("nian", ("年",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("凱爾希醫生又在加班", {"kaltsit"}),  # a plain name, in traditional script too
        ("陳又加班了", {"chen"}),
        ("我想吃點陳皮糖", set()),  # the lookarounds hold in either script
        ("夜鶯的技能", {"nightingale"}),
        ("窗外的夜鶯在叫", set()),
        ("這期危機合約全靠夜鶯", {"nightingale"}),  # a word of the game in traditional script
        ("夜鶯的傷害不高但是很穩", {"nightingale"}),
        ("窗外有夜鶯，我在練琴", set()),
        ("夕陽好美，拍了好多照片", set()),  # the word that holds her name, in either script
        ("年輕人不要熬夜", set()),
        ("夕又在畫畫了", {"dusk"}),
    ],
)
def test_a_name_written_in_traditional_script_is_keyed_like_the_simplified(
    text: str, who: set[str]
) -> None:
    maker = KeyMaker(TRADITIONAL, bonds={"nightingale": {"shining"}, "shining": {"nightingale"}})
    assert fired(maker, text) == who


TRAITS = [
    Person("nightingale", ("夜莺",)), Person("indigo", ("深靛",)), Person("heavyrain", ("暴雨",)),
    Person("deepcolor", ("深海色",)), Person("suzuran", ("铃兰",)), Person("vulcan", ("火神",)),
    Person("ling", ("令",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("深靛好冷淡啊", {"indigo"}),  # what only a person is, right after her name
        ("铃兰也挺可爱的", {"suzuran"}),
        ("暴雨好猛，出不了门", set()),  # fierce is the rain's too: no mark
        ("我老婆是铃兰", {"suzuran"}),
        ("火神一个人堵一条路", {"vulcan"}),
        ("深海色的衣服好看", set()),  # a colour's clothes
        ("半夜窗外夜莺在叫", set()),  # a cry with nobody called: the bird
        ("夜莺在叫你过去", {"nightingale"}),
        ("令昨晚又喝醉了", {"ling"}),  # when she did it
        ("命令刚才下达了", set()),
    ],
)
def test_what_a_person_is_or_did_after_a_word_name_marks_her(text: str, who: set[str]) -> None:
    assert fired(KeyMaker(TRAITS), text) == who


TENTH = [
    Person("liskam", ("雷蛇",)), Person("croissant", ("可颂",)), Person("myrrh", ("末药",)),
    Person("tachanka", ("战车",)), Person("headbr", ("凛冬",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("雷蛇的鼠标好用吗，想换一个", set()),  # the brand (data/lorebook_keys.toml)
        ("雷蛇鼠标好用吗", set()),
        ("雷蛇今天又加班了", {"liskam"}),
        ("早餐吃了可颂配咖啡", set()),  # 配 as pairing food is no mark
        ("末药配的药很苦", {"myrrh"}),  # 配 as making up medicine is hers
        ("塔罗牌抽到了战车正位，是好兆头吗", set()),  # the tarot card, though 抽到 is a pull
        ("凛冬将至，大家记得加衣服", set()),
    ],
)
def test_what_the_tenth_development_set_showed(text: str, who: set[str]) -> None:
    assert fired(KeyMaker(TENTH), text) == who


def test_a_partner_a_longer_word_holds_still_joins_without_a_join_word() -> None:
    """凛冬 is held by 凛冬将至 (data/lorebook_keys.toml), so her key has a lookaround, but she
    is no word: 凛冬真理 lists two people, as 闪灵夜莺 does."""
    people = [Person("headbr", ("凛冬",)), Person("glassb", ("真理",))]
    maker = KeyMaker(people, bonds={"glassb": {"headbr"}, "headbr": {"glassb"}})
    assert fired(maker, "凛冬真理古米，自治团全员到齐") == {"headbr", "glassb"}
    assert fired(maker, "凛冬将至，真理永存") == set()


def test_a_kinship_word_in_traditional_script_before_her_name_is_about_her_alone() -> None:
    """妳姊姊年 is 年, not her other sisters: the name after the word, in either script."""
    key = kin_key("姐姐", BY_NAME["姐姐"], others=["年", "令"])
    assert not fires(Matchable((key,)), "妳姊姊年又在甲板上放鞭炮了")
    assert fires(Matchable((key,)), "妳姊姊又在甲板上放鞭炮了")
    one = kin_key("姐", BY_NAME["姐姐"], others=["年", "令"])
    assert not fires(Matchable((one,)), "妳姊姊年又在甲板上放鞭炮了")
