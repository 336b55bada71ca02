"""Mention matcher and alias table on a hand-built operator list (no game data needed)."""

from __future__ import annotations

from bisect import bisect_left
from pathlib import Path

import pytest

from arklore.core.errors import InputFileError
from arklore.core.operators import Alias, Operator
from arklore.core.vocatives import is_address
from arklore.names.aliases import (
    AliasTable,
    aliases_from_operators,
    fold,
    load_user_aliases,
)
from arklore.names.matcher import (
    Mention,
    MentionContext,
    MentionMatcher,
    build_matcher,
)
from arklore.names.rules import NUMERAL_CHARS, RuleConfig

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
    Operator("char_173_slchan", "崖心", "Cliffheart"),
    Operator("char_174_slbell", "初雪", "Pramanix"),
    Operator("char_126_shotst", "流星", "Meteor"),
    Operator("char_002_amiya", "阿米娅", "Amiya"),
    Operator("char_003_kalts", "凯尔希", "Kal'tsit"),
    Operator("char_103_angel", "能天使", "Exusiai"),
    Operator("char_112_siege", "推进之王", "Siege", alternate_ids=["char_1019_siege2"]),
    Operator("char_1019_siege2", "维娜·维多利亚", "Vina Victoria", base_id="char_112_siege"),
]


@pytest.fixture(scope="module")
def matcher() -> MentionMatcher:
    return build_matcher(load_user_aliases(), operators=OPS)


def ids(ms) -> list[str | None]:
    return [m.char_id for m in ms]


FIND_CASES = [
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
]  # fmt: skip


@pytest.mark.parametrize("text,expected", FIND_CASES)
def test_find(matcher: MentionMatcher, text: str, expected: list[str]) -> None:
    assert ids(matcher.find(text)) == expected


#: names that are also ordinary words, with a person verb or a person noun around them
#: (signals ``person_object`` and ``possessive``); the project's own sentences
PERSON_CONTEXT_CASES = [
    # the README's example: 看 is a weak person verb, 陈sir is named before, 银灰 is a rare word
    ("今年想和陈sir去看银灰", [("陈sir", "latin"), ("银灰", "person_object")]),
    ("我想跟年一起打牌", [("年", "person_object")]),
    ("周末陪红去逛街吧", [("红", "person_object")]),
    ("问问山吧，他肯定知道", [("山", "person_object")]),
    ("谢谢红！", [("红", "person_object")]),
    ("这次活动我要陪初雪玩", [("初雪", "person_object")]),
    ("凯尔希说要去找银灰呢", [("凯尔希", "exact"), ("银灰", "person_object")]),
    ("崖心是银灰的妹妹", [("崖心", "exact"), ("银灰", "possessive")]),
    ("黑的搭档是谁来着", [("黑", "possessive")]),
    # ordinary words stay words
    ("银灰色的外套配黑裤子", []),  # the blocker 银灰色 wins
    ("这件衬衫是银灰的", []),  # 的 without a person noun
    ("银灰的外套", []),
    ("今年冬天想去看初雪", []),  # weak verb, nobody else named: the weather
    ("今年想去看银灰", []),  # (the same rule: a miss, on purpose)
    ("晚上和朋友去看流星", []),
    ("和阿米娅去看流星", [("阿米娅", "exact")]),  # 流星 is too common a word for a weak verb
    ("等空了再聊吧", []),  # single-character names never pass on a weak verb
    ("去年想和家人去看山", []),
    ("我们要去找真理", []),
    ("这才叫真理！", []),
    ("跟红色的那辆车走", []),
    ("和山一样高", []),  # no boundary after the name
    ("问年轻人借个火", []),
]  # fmt: skip


@pytest.mark.parametrize("text,expected", PERSON_CONTEXT_CASES)
def test_person_context(
    matcher: MentionMatcher, text: str, expected: list[tuple[str, str]]
) -> None:
    assert [(m.surface, m.how) for m in matcher.find(text)] == expected


def test_person_context_signals_can_be_switched_off() -> None:
    off = RuleConfig(person_object=False, possessive=False)
    m = build_matcher(load_user_aliases(), operators=OPS, config=off)
    assert [m_.surface for m_ in m.find("今年想和陈sir去看银灰")] == ["陈sir"]
    assert m.find("崖心是银灰的妹妹")[1:] == []


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
    m = build_matcher(load_user_aliases(), operators=OPS, config=RuleConfig(stoplist=False))
    assert ids(m.find("夕阳好美")) == ["char_2015_dusk"]
    assert ids(build_matcher(load_user_aliases(), operators=OPS).find("夕阳好美")) == []


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
    assert all(a.source in ("user", "block", "stranger") for a in al)
    assert any(a.alias == "酒神" and a.source == "stranger" for a in al)


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


# --- the optimized matcher returns what the straightforward one returned ------------------------
class ReferenceMatcher:
    """The matcher as first written (one tuple per hit, one ``decide`` call per risky name),
    frozen here so the fast path in :mod:`arklore.names.matcher` can be checked against it."""

    def __init__(self, table: AliasTable, config: RuleConfig | None = None) -> None:
        import ahocorasick

        from arklore.names import rules

        self.table, self.config = table, config or RuleConfig()
        cfg = self.config
        self.auto = ahocorasick.Automaton()
        kinds: dict[str, int] = {}
        for key in table.surfaces():
            ids_ = table.decided_ids(key)
            if not ids_:
                continue
            kind = {"plain": 0, "risky": 1, "latin": 2}[rules.classify(key)]
            kinds[key] = kind
            if kind == 1 and cfg.bare_rare and rules.bare_ok(key) and not rules.is_title(key):
                kind = 4
            self.auto.add_word(_latin1(key), (len(key.encode()), kind, ids_, key, len(key)))
        if cfg.stoplist:
            risky = frozenset(k for k, v in kinds.items() if v == 1)
            plain = frozenset(k for k, v in kinds.items() if v == 0)
            for word in rules.build_stoplist(risky, plain):
                w = fold(word)
                if w not in kinds:
                    self.auto.add_word(_latin1(w), (len(w.encode()), 3, (), w, len(w)))
        self.empty = not kinds
        if not self.empty:
            self.auto.make_automaton()

    def candidates(self, t: str) -> list[tuple[int, int, int, tuple[str, ...], str]]:
        raw = t.encode("utf-8")
        out = []
        pb = pc = 0
        for bend, (nb, kind, ids_, key, nc) in self.auto.iter_long(raw.decode("latin-1")):
            if kind == 3:
                continue
            bstart = bend - nb + 1
            pc += len(raw[pb:bstart].decode("utf-8"))
            pb, start = bstart, pc
            end = start + nc
            if kind == 2 and (
                (start > 0 and t[start - 1].isascii() and t[start - 1].isalnum())
                or (end < len(t) and t[end].isascii() and t[end].isalnum())
            ):
                continue
            out.append((start, end, kind, ids_, key))
        return out

    def context_ids(self, ctx: MentionContext | None) -> frozenset[str]:
        if ctx is None:
            return frozenset()
        got: set[str] = set(ctx.known_ids)
        for who in ctx.speaking_to:
            got.update([who] if who.startswith("char_") else self.table.resolve(who).ids)
        if ctx.history:
            inner = MentionContext(speaking_to=ctx.speaking_to, known_ids=ctx.known_ids)
            for msg in ctx.history:
                for m in self.find(msg, inner):
                    got.update(m.candidates)
        got |= {self.table.base_of(i) for i in got}
        return frozenset(got)

    def find(self, text: str, context=None) -> list[Mention]:
        if not text or self.empty:
            return []
        cfg, t = self.config, fold(text)
        cands = self.candidates(t)
        ctx_ids = self.context_ids(MentionContext.coerce(context))
        out: list[Mention] = []
        dropped = []
        for i, (s, e, kind, ids_, key) in enumerate(cands):
            if kind == 1:
                ids_ctx = ids_ + tuple(self.table.base_of(x) for x in ids_) if ctx_ids else ids_
                prev = cands[i - 1][:2] if i > 0 else None
                nxt = cands[i + 1][:2] if i < len(cands) - 1 else None
                named_end = out[-1].end if out else -1
                how = _reference_decide(t, s, e, key, ids_ctx, (prev, nxt), ctx_ids, cfg, named_end)
                if how is None:
                    if cfg.repeat and not (cfg.title and prev is not None and prev[1] == s):
                        dropped.append((s, e, ids_))
                    continue
            elif kind == 4 and s > 0 and cfg.numeral and t[s - 1] in NUMERAL_CHARS:
                continue
            else:
                how = {0: "exact", 2: "latin", 4: "bare_rare"}[kind]
            out.append(Mention(ids_[0] if len(ids_) == 1 else None, text[s:e], s, e, how, ids_))
        extra = []
        starts = [m.start for m in out]
        for s, e, ids_ in dropped if out else ():
            lo, hi = t.rfind("\n", 0, s) + 1, t.find("\n", e)
            hi = len(t) if hi < 0 else hi
            j = bisect_left(starts, lo)
            while j < len(out) and starts[j] < hi and out[j].candidates != ids_:
                j += 1
            if j < len(out) and starts[j] < hi:
                cid = ids_[0] if len(ids_) == 1 else None
                extra.append(Mention(cid, text[s:e], s, e, "repeat", ids_))
        return sorted(out + extra, key=lambda m: m.start) if extra else out


def _reference_decide(t, start, end, key, ids_, neighbours, ctx_ids, cfg, named_end) -> str | None:
    """``rules.decide`` as first written: every signal tried in order with a regex."""
    from arklore.names import rules as r

    prev, nxt = neighbours
    before = t[start - 1] if start > 0 else "\n"
    if cfg.title and prev is not None and prev[1] == start and key in r._HONORIFIC_SET:
        return None
    if cfg.numeral and len(key) == 1 and before in NUMERAL_CHARS:
        return None
    if cfg.honorific and (r._HON_RE.match(t, end) or before in r._PREFIX_SET):
        return "honorific"
    if cfg.context and ctx_ids and not ctx_ids.isdisjoint(ids_):
        return "context"
    if cfg.vocative and is_address(t, start, end):
        return "vocative"
    if cfg.coordination:
        if nxt is not None and nxt[0] == end + 1 and t[end] in r.COORDINATORS:
            return "coordination"
        if prev is not None and prev[1] == start - 1 and before in r.COORDINATORS:
            return "coordination"
    if cfg.subject and r._SUBJ_RE.match(t, end):
        return "subject"
    if cfg.game_cue and r._CUE_RE.search(t, max(0, start - r.CUE_WINDOW), end + r.CUE_WINDOW):
        return "game_cue"
    if cfg.bare_rare and r.bare_ok(key):
        return "bare_rare"
    if cfg.person_object and r.is_person_object(t, start, end, key, named_end):
        return "person_object"
    if cfg.possessive and r._POSS_RE.match(t, end):
        return "possessive"
    return None


def _latin1(s: str) -> str:
    return s.encode("utf-8").decode("latin-1")


Row = tuple[str | None, str, int, int, str, tuple[str, ...]]
"""A mention as (char id, surface, start, end, how, candidates)."""


def _as_rows(ms: list[Mention]) -> list[Row]:
    return [(m.char_id, m.surface, m.start, m.end, m.how, m.candidates) for m in ms]


_NOISE = [
    "",
    "😀",
    "Ｗ",
    "ｗ",
    "W型",
    "２０２４年",
    "，",
    "！",
    "～",
    "@",
    "＠",
    " ",
    "\t",
    "ｍｏｎ３ｔｒ",
]


def chat_like(messages: list[str], n_chars: int, seed: int) -> str:
    """Eval messages one per line, shuffled, with emoji/full-width/punctuation noise spliced in."""
    import random

    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        m = rng.choice(messages)
        if rng.random() < 0.3:
            cut = rng.randrange(len(m) + 1)
            m = m[:cut] + rng.choice(_NOISE) + m[cut:]
        if rng.random() < 0.1:
            m = m + rng.choice(_NOISE) + rng.choice(messages)
        parts.append(m)
        size += len(m) + 1
    return "\n".join(parts)


def _check_same(fast: MentionMatcher, ref: ReferenceMatcher, n_chars: int) -> None:
    from arklore.names.evaluation import load_eval_set

    recs = load_eval_set()
    for r in recs:
        for ctx in (r.get("context"), None, {"speaking_to": "char_2014_nian"}):
            assert _as_rows(fast.find(r["text"], ctx)) == _as_rows(ref.find(r["text"], ctx)), r
    msgs = [r["text"] for r in recs] + [t for t, _ in FIND_CASES]
    for seed in range(3):
        text = chat_like(msgs, n_chars, seed)
        got, want = _as_rows(fast.find(text)), _as_rows(ref.find(text))
        assert len(got) == len(want) and got == want
        ctx = {"speaking_to": ["char_2015_dusk", "红"], "history": ["年姐回来了"]}
        assert _as_rows(fast.find(text[:200_000], ctx)) == _as_rows(ref.find(text[:200_000], ctx))


@pytest.mark.slow  # a reference implementation over a long text: seconds
@pytest.mark.parametrize("config", [RuleConfig(), RuleConfig(stoplist=False, repeat=False)])
def test_same_mentions_as_reference(config: RuleConfig) -> None:
    m = build_matcher(load_user_aliases(), operators=OPS, config=config)
    _check_same(m, ReferenceMatcher(m.table, config), 1_000_000)


def test_same_mentions_as_reference_without_risky_names() -> None:
    """An inventory with no risky name takes the accept-all path."""
    table = AliasTable(aliases_from_operators([op for op in OPS if len(op.name) > 2]))
    m = MentionMatcher(table)
    assert not m._has_risky
    _check_same(m, ReferenceMatcher(table), 300_000)


@pytest.mark.realdata
@pytest.mark.parametrize("signal", [None, *RuleConfig.signal_names()])
def test_same_mentions_as_reference_real_names(gamedata_root: Path, signal: str | None) -> None:
    ops = _real_ops(gamedata_root)
    config = RuleConfig() if signal is None else RuleConfig().without(signal)
    m = build_matcher(load_user_aliases(), operators=ops, config=config)
    _check_same(m, ReferenceMatcher(m.table, config), 2_000_000 if signal is None else 200_000)


_REAL: dict[Path, list[Operator]] = {}


def _real_ops(root: Path) -> list[Operator]:
    from arklore.names.evaluation import operators_from_excel

    if root not in _REAL:
        _REAL[root] = operators_from_excel(root / "zh_CN/gamedata/excel")
    return _REAL[root]


# --- long messages: linear work, same mentions as line by line ----------------------------------
def _one_line(n_chars: int, seed: int = 7) -> str:
    """Eval messages joined by ``，`` into one long message (no newline): the per-line rules
    (repeat, vocative) see the whole of it as one line."""
    from arklore.names.evaluation import load_eval_set

    msgs = [r["text"].replace("\n", "，") for r in load_eval_set()]
    return chat_like(msgs, n_chars, seed).replace("\n", "，")[:n_chars]


def _calls_during(fn) -> int:
    """Python and C function calls made while ``fn()`` runs: a deterministic work count."""
    import sys

    calls = 0

    def count(_frame, event, _arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


#: one operator named, and an ordinary word that is another operator's name (银灰 "silver
#: grey", dropped): the worst case of the repeat rule, many dropped names on one line of mentions
_NAMED_AND_WORD = "凯尔希来了，这颜色是银灰的，"


def test_work_is_linear_in_the_length_of_one_message(matcher: MentionMatcher) -> None:
    """Ten times the text may cost about ten times the calls, not a hundred (the repeat rule
    walked the line's mentions once per dropped name: a 400 KB message took 10 s)."""
    small, big = _NAMED_AND_WORD * 150, _NAMED_AND_WORD * 1500
    assert [m.how for m in matcher.find(_NAMED_AND_WORD)] == ["exact"]
    n_small = _calls_during(lambda: matcher.find(small))
    n_big = _calls_during(lambda: matcher.find(big))
    assert n_big <= 10 * 1.5 * n_small, (n_small, n_big)


def test_same_mentions_as_reference_on_one_long_line(matcher: MentionMatcher) -> None:
    text = _one_line(60_000) + _NAMED_AND_WORD * 100 + "红和能天使，红是特种"
    got = _as_rows(matcher.find(text))
    assert got == _as_rows(ReferenceMatcher(matcher.table).find(text))
    assert any(row[4] == "repeat" for row in got)


def _by_line(m: MentionMatcher, text: str) -> list[Row]:
    """Each line searched on its own, offsets moved to the whole text."""
    rows, offset = [], 0
    for line in text.split("\n"):
        for r in _as_rows(m.find(line)):
            rows.append((r[0], r[1], r[2] + offset, r[3] + offset, r[4], r[5]))
        offset += len(line) + 1
    return rows


@pytest.mark.parametrize("config", [RuleConfig().without("game_cue"), RuleConfig()])
def test_long_multiline_text_is_searched_line_by_line(config: RuleConfig) -> None:
    """The contract of ``find``: many messages, one per line, give what each line gives alone
    (repeat and vocative work per line). The game-cue window (8 characters either side) is
    not per line, so with it on the messages are separated by a line of filler."""
    from arklore.names.evaluation import load_eval_set

    m = build_matcher(operators=OPS, config=config)
    msgs = [r["text"] for r in load_eval_set()] + [t for t, _ in FIND_CASES]
    text = chat_like(msgs, 200_000, seed=3)
    if config.game_cue:
        text = text.replace("\n", "\n" + "嗯" * 10 + "\n")
    whole = _as_rows(m.find(text))
    assert whole == _by_line(m, text)
    assert {"repeat", "vocative"} <= {row[4] for row in whole}
