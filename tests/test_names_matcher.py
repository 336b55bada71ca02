"""Mention matcher and alias table on a hand-built operator list (no game data needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arklore.core.errors import InputFileError
from arklore.core.operators import Alias, Operator
from arklore.names.aliases import (
    AliasTable,
    aliases_from_operators,
    fold,
    load_user_aliases,
)
from arklore.names.matcher import MentionContext, MentionMatcher, build_matcher, find_mentions
from arklore.names.rules import RuleConfig

# real ids and names (identifiers only)
OPS = [
    Operator("char_010_chen", "陈", "Ch'en", alternate_ids=["char_1013_chen2"]),
    Operator("char_1013_chen2", "假日威龙陈", "Ch'en the Holungday", base_id="char_010_chen"),
    Operator("char_2014_nian", "年", "Nian"),
    Operator("char_2015_dusk", "夕", "Dusk"),
    Operator("char_2023_ling", "令", "Ling"),
    Operator("char_101_sora", "空", "Sora"),
    Operator("char_144_red", "红", "Red"),
    Operator("char_264_f12yin", "山", "Mountain"),
    Operator("char_133_mm", "梅", "May"),
    Operator("char_242_otter", "梅尔", "Mayer"),
    Operator("char_300_phenxi", "菲亚梅塔", "Fiammetta"),
    Operator("char_340_shwaz", "黑", "Schwarz"),
    Operator("char_500_noirc", "黑角", "Noir Corne"),
    Operator("char_4046_ebnhlz", "黑键", "Ebenholz"),
    Operator("char_121_lava", "炎熔", "Lava"),
    Operator("char_1011_lava2", "炎狱炎熔", "Lava the Purgatory", base_id="char_121_lava"),
    Operator("char_113_cqbw", "W", "W"),
    Operator("char_4179_monstr", "Mon3tr", "Mon3tr"),
    Operator("char_4091_ulika", "U-Official", "U-Official"),
    Operator("char_172_svrash", "银灰", "SilverAsh", real_names=["恩希欧迪斯"]),
    Operator("char_002_amiya", "阿米娅", "Amiya"),
    Operator("char_003_kalts", "凯尔希", "Kal'tsit"),
    Operator("char_103_angel", "能天使", "Exusiai"),
    Operator("char_112_siege", "推进之王", "Siege", alternate_ids=["char_1019_siege2"]),
    Operator("char_1019_siege2", "维娜·维多利亚", "Vina Victoria", base_id="char_112_siege"),
]


@pytest.fixture(scope="module")
def matcher() -> MentionMatcher:
    return build_matcher(operators=OPS)


def ids(ms) -> list[str | None]:
    return [m.char_id for m in ms]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("假日威龙陈的水枪好可爱", ["char_1013_chen2"]),
        ("炎狱炎熔和炎熔", ["char_1011_lava2", "char_121_lava"]),
        ("黑键弹琴，黑角在看书", ["char_4046_ebnhlz", "char_500_noirc"]),
        ("菲亚梅塔和梅尔", ["char_300_phenxi", "char_242_otter"]),
        ("今年空气真好，红色的山上有梅花", []),
        ("阿姨，黑色的那个多少钱", []),
        ("年姐又把锻造室炸了", ["char_2014_nian"]),
        ("陈sir今天加班", ["char_010_chen"]),
        ("陈警官，请出示证件", ["char_010_chen"]),
        ("夕小姐在画画", ["char_2015_dusk"]),
        ("夕，你画完了吗", ["char_2015_dusk"]),
        ("恩希欧迪斯在谢拉格", ["char_172_svrash"]),
        ("维娜·维多利亚上台了", ["char_1019_siege2"]),
        ("维娜・维多利亚上台了", ["char_1019_siege2"]),
        ("W又放炸弹了", ["char_113_cqbw"]),
        ("ｗ又放炸弹了", ["char_113_cqbw"]),
        ("waw，WWDC 和 10w 不是人", []),
        ("MON3TR好萌，u-official在直播", ["char_4179_monstr", "char_4091_ulika"]),
        ("２０２４年的夏天", []),
    ],
)
def test_find(matcher: MentionMatcher, text: str, expected: list[str]) -> None:
    assert ids(matcher.find(text)) == expected


def test_offsets_point_into_original_text(matcher: MentionMatcher) -> None:
    text = "😀 Ｗ和假日威龙陈，还有ＭＯＮ３ＴＲ"
    ms = matcher.find(text)
    assert [text[m.start : m.end] for m in ms] == [m.surface for m in ms]
    assert [m.surface for m in ms] == ["Ｗ", "假日威龙陈", "ＭＯＮ３ＴＲ"]


def test_context_speaking_to_and_history(matcher: MentionMatcher) -> None:
    text = "你觉得年怎么样"
    assert ids(matcher.find(text)) == []
    assert ids(matcher.find(text, {"speaking_to": "char_2014_nian"})) == ["char_2014_nian"]
    assert ids(matcher.find(text, {"speaking_to": "年"})) == ["char_2014_nian"]
    ctx = MentionContext(history=("年姐回来了",))
    assert ids(matcher.find(text, ctx)) == ["char_2014_nian"]
    # a word stays a word even for the operator being talked to
    assert ids(matcher.find("今年冬天好冷", {"speaking_to": "char_2014_nian"})) == []


def test_alternate_form_in_context_counts_for_base(matcher: MentionMatcher) -> None:
    ms = matcher.find("今天陈红想什么", {"speaking_to": "char_1013_chen2"})
    assert "char_010_chen" in ids(ms)


@pytest.mark.parametrize(
    "text",
    ["", " ", "！？。，……", "😀😂🎉" * 100, "Ｗ" * 5000, "a" * 10, "\n\n\n", "年" * 10000],
)
def test_odd_inputs_never_raise(matcher: MentionMatcher, text: str) -> None:
    assert isinstance(matcher.find(text), list)


def test_one_megabyte(matcher: MentionMatcher) -> None:
    text = ("陈sir今天又加班了吗？今年的年夜饭吃什么，夕，画好了吗\n" * 40000)[:1_000_000]
    ms = matcher.find(text)
    assert ms and all(text[m.start : m.end] == m.surface for m in ms)


def test_type_errors(matcher: MentionMatcher) -> None:
    with pytest.raises(TypeError):
        matcher.find(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        matcher.find("年", context=42)  # type: ignore[arg-type]


def test_ablation_config_changes_behaviour() -> None:
    m = build_matcher(operators=OPS, config=RuleConfig(stoplist=False))
    assert ids(m.find("夕阳好美")) == ["char_2015_dusk"]
    assert ids(build_matcher(operators=OPS).find("夕阳好美")) == []


# --- alias table ------------------------------------------------------------------------------
def test_precedence_and_ambiguity() -> None:
    table = AliasTable(
        [
            Alias("陈", "char_010_chen", "registry"),
            Alias("陈", "char_1013_chen2", "handbook", {"base_id": "char_010_chen"}),
            Alias("Shalem", "char_512_aprot", "appellation"),
            Alias("Shalem", "char_4025_aprot2", "appellation"),
            Alias("临光", "char_148_nearl", "registry"),
            Alias("临光", "char_1014_nearl2", "registry", {"base_id": "char_148_nearl"}),
            Alias("小陈", "char_010_chen", "portrait"),
            Alias("小陈", "char_999_other", "user"),
        ]
    )
    r = table.resolve("陈")
    assert (r.ids, r.source, r.ambiguous) == (("char_010_chen",), "registry", False)
    assert {a.char_id for a in table.candidates("陈")} == {"char_010_chen", "char_1013_chen2"}
    r = table.resolve("shalem")
    assert r.ambiguous and set(r.ids) == {"char_512_aprot", "char_4025_aprot2"}
    assert r.char_id is None
    assert table.resolve("临光").ids == ("char_148_nearl",)  # same person: the base
    assert table.resolve("小陈").ids == ("char_999_other",)  # the user file wins
    assert table.resolve("nobody").ids == ()
    assert table.resolve("char_010_chen").ids == ("char_010_chen",)


def test_ambiguous_mention_is_not_picked() -> None:
    table = AliasTable(
        [Alias("双子", "char_1_a", "registry"), Alias("双子", "char_2_b", "registry")]
    )
    [m] = MentionMatcher(table).find("双子来了")
    assert m.char_id is None and set(m.candidates) == {"char_1_a", "char_2_b"}


def test_block_removes_alias() -> None:
    table = AliasTable(
        [
            Alias("Red", "char_144_red", "appellation"),
            Alias("Red", "char_144_red", "block"),
            Alias("Lin", "char_4080_lin", "appellation"),
            Alias("Lin", "*", "block"),
        ]
    )
    assert table.resolve("Red").ids == () and table.resolve("Lin").ids == ()


def test_aliases_from_operators() -> None:
    al = aliases_from_operators(OPS)
    got = {(a.alias, a.char_id, a.source) for a in al}
    assert ("假日威龙陈", "char_1013_chen2", "alternate_form") in got
    assert ("恩希欧迪斯", "char_172_svrash", "handbook") in got
    assert ("维娜维多利亚", "char_1019_siege2", "alternate_form") in got
    assert ("Ch'en", "char_010_chen", "appellation") in got


def test_fold_is_length_preserving() -> None:
    for s in ["ＡＢＣ１２３－", "Mon3tr", "维娜・维多利亚", "İstanbul", "😀Ｗ"]:
        assert len(fold(s)) == len(s)
    assert fold("ＭＯＮ３ＴＲ") == "mon3tr"


# --- user file --------------------------------------------------------------------------------
def test_packaged_user_file_loads() -> None:
    al = load_user_aliases()
    assert any(a.alias == "陈sir" and a.char_id == "char_010_chen" for a in al)
    assert all(a.source in ("user", "block") for a in al)


def write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "aliases.toml"
    p.write_text(body, encoding="utf-8")
    return p


def test_user_file_alias_and_block(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        '[[alias]]\nname = "小年"\nid = "char_2014_nian"\nnote = "n"\n'
        '[[block]]\nname = "Red"\nid = "char_144_red"\n[[block]]\nname = "Lin"\n',
    )
    al = load_user_aliases(p)
    assert [(a.alias, a.char_id, a.source) for a in al] == [
        ("小年", "char_2014_nian", "user"),
        ("Red", "char_144_red", "block"),
        ("Lin", "*", "block"),
    ]


@pytest.mark.parametrize(
    "body,where",
    [
        ("[[alias]]\nname = 'x'\n", "id"),
        ("[[alias]]\nid = 'char_010_chen'\n", "name"),
        ("[[alias]]\nname = 'x'\nid = 'chen'\n", "id"),
        ("[[alias]]\nname = 'x'\nid = 'char_010_chen'\ncolour = 1\n", "colour"),
        ("[[nickname]]\nname = 'x'\n", "nickname"),
        ("[[alias\nname = 'x'\n", "toml"),
        ("alias = 3\n", "alias"),
    ],
)
def test_user_file_errors(tmp_path: Path, body: str, where: str) -> None:
    p = write(tmp_path, body)
    with pytest.raises(InputFileError) as ei:
        load_user_aliases(p)
    assert str(p) in str(ei.value) and where in ei.value.where


def test_missing_user_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError):
        load_user_aliases(tmp_path / "nope.toml")


def test_find_mentions_module_level(monkeypatch: pytest.MonkeyPatch) -> None:
    from arklore.names import matcher as mod

    monkeypatch.setattr(mod, "_DEFAULT", build_matcher(operators=OPS))
    assert ids(find_mentions("陈sir和W")) == ["char_010_chen", "char_113_cqbw"]
