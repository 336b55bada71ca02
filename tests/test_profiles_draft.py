"""Task E (mention candidates), the review queue, and one operator's draft end to end, on
invented tables and lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.profiles_world import section

from arklore.core.operators import Operator
from arklore.graph import interaction
from arklore.graph.interaction import ScanLine
from arklore.graph.mentions import story_mention_hook
from arklore.graph.model import INTERACTION, Edge, Node, RelationGraph
from arklore.graph.people import People
from arklore.names.matcher import build_matcher
from arklore.names.registry import Registry
from arklore.profiles.charfile import (
    ANCHOR,
    PHYSICAL,
    QUOTES,
    TIER_B,
    TIER_C,
    TIER_S,
    CharProfile,
    allowed_sections,
    draft_path,
)
from arklore.profiles.draft import draft_all, draft_profile, write_draft
from arklore.profiles.mentions import candidates_from_graph, count_mentions
from arklore.profiles.quotes import StoryLine
from arklore.profiles.results import FAILED, OK, SKIPPED
from arklore.profiles.review import (
    ReviewEntry,
    TaskStatus,
    render_queue,
    spot_check_sample,
)
from arklore.profiles.sources import FORM_LINES_MIN, lines_for, load_tables

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
T, G, TW, TW2, NEW = (
    "char_900_tester",
    "char_901_guide",
    "char_902_twin",
    "char_1902_twin2",
    "char_999_newcomer",
)
OPS = {
    T: Operator(T, "测试员", nation_id="testland"),
    G: Operator(G, "向导", nation_id="testland"),
    TW: Operator(TW, "双生", alternate_ids=[TW2]),
    TW2: Operator(TW2, "新装双生", base_id=TW),
    NEW: Operator(NEW, "新人"),
}
AT = "2026-01-02T03:04:05Z"


@pytest.fixture(scope="module")
def tables():
    return load_tables(FIXTURES)


@pytest.fixture(scope="module")
def people() -> People:
    # names that are not also ordinary words, so the matcher's word rules stay out of the way
    names = {T: "澄砂", G: "墨弦", TW: "苏珀", TW2: "假日苏珀", NEW: "岚烟"}
    ops = {k: Operator(k, names[k], base_id=o.base_id) for k, o in OPS.items()}
    return People(Registry(ops), build_matcher(operators=list(ops.values())))


def _graph() -> RelationGraph:
    nodes = {k: Node(k, OPS[k].name, "operator") for k in (T, G, TW, NEW)}
    edges = [
        Edge(T, G, "朋友", 0.8, ["matrix", "mention"], {"matrix": 1, "mentions": 3, "voice_mentions": 1}, ["s/a#1:00000000"]),
        Edge(T, G, INTERACTION, 0.5, ["interaction", "mention"], {"turns": 4, "mentions": 3, "voice_mentions": 1}, ["s/a#2:00000000"]),
        Edge(T, TW, INTERACTION, 0.3, ["interaction"], {"turns": 9}, []),
        Edge(T, NEW, INTERACTION, 0.2, ["mention"], {"mentions": 5}, ["s/b#1:00000000"]),
        Edge(TW, T, INTERACTION, 0.2, ["mention"], {"voice_mentions": 2}, []),
    ]  # fmt: skip
    return RelationGraph(nodes, edges, alternates={TW2: TW})


# -- task E ------------------------------------------------------------------------------


def test_candidates_read_from_the_graph() -> None:
    g = _graph()
    got = candidates_from_graph(g, T)
    assert [(c.target, c.mentions, c.voice_mentions) for c in got] == [(NEW, 5, 0), (G, 3, 1)]
    guide = got[1]
    assert guide.predicates == ("interaction", "朋友") and guide.strength == 0.8
    assert guide.evidence == ("s/a#1:00000000", "s/a#2:00000000")
    assert "朋友" in str(guide) and "3 story + 1 voice" in str(guide)
    # an alternate form reads her base node; turns alone are no mention
    assert [c.target for c in candidates_from_graph(g, TW2)] == [T]
    assert candidates_from_graph(g, T, limit=1)[0].target == NEW


def test_count_mentions_matches_the_graph_hook(people: People) -> None:
    story = [
        ("s/a#1:00000000", "墨弦说北边的桥还算结实，墨弦从不说谎。"),  # once per line
        ("s/a#2:00000000", "我和墨弦、还有假日苏珀一起去。"),  # a form counts for its base
        ("s/a#3:00000000", "澄砂就是我自己。"),  # herself: not counted
    ]
    voice = ["墨弦总说我太紧张。", "岚烟今天也来了吗？墨弦呢？"]
    got = {c.target: c for c in count_mentions(T, people, voice_texts=voice, story=story)}
    assert (got[G].mentions, got[G].voice_mentions) == (2, 2)
    assert (got[TW].mentions, got[TW].voice_mentions) == (1, 0)
    assert (got[NEW].mentions, got[NEW].voice_mentions) == (0, 1)
    assert T not in got and got[G].evidence == ("s/a#1:00000000", "s/a#2:00000000")
    # the same counts as the graph's own pass over the same story lines
    pairs: interaction.Pairs = {}
    hook = story_mention_hook(people)
    for lid, text in story:
        hook(ScanLine("s/a", 0, T, text, None, lid, True), [], pairs)
    assert {b: st.mentions for (_a, b), st in pairs.items()} == {
        t: c.mentions for t, c in got.items() if c.mentions
    }


# -- drafts ------------------------------------------------------------------------------


def test_draft_of_an_operator_with_archive_and_voice(tables, tmp_path: Path) -> None:
    d = draft_profile(OPS[T], tables, graph=_graph(), generated_at=AT)
    assert d.text is not None and d.entry is not None
    prof = CharProfile.parse(d.text)
    assert prof.tier == TIER_B and not prof.hand_edited and prof.char_id == T
    assert prof.name == "测试员" and prof.header["generated"] == AT
    assert section(prof, ANCHOR).bullets()[6] == "身高：163cm"
    assert section(prof, PHYSICAL).bullets() == ["体表可见源石结晶"]  # the rest is the anchor's
    assert [q.source_id for q in prof.quotes()] == [q.source_id for q in d.gate.kept]
    assert len(prof.quotes()) == 7
    # 我·性格 by the rule: her archive's sentence that opens on her with a habit, with its id
    assert section(prof, "我·性格").content == (
        "- 「她从不抱怨路远，只是把每条岔路都记在一本旧笔记里。」 —— "
        "archive:char_900_tester/档案资料一（档案资料一）"
    )
    # 我·关于博士 by task C's rule: the voice lines that name the Doctor, verbatim with ids
    assert [q.source_id for q in prof.quotes("我·关于博士")] == [
        "voice:char_900_tester_CN_006", "voice:char_900_tester_CN_009",
    ]  # fmt: skip
    srcs = prof.header_list("sources")
    assert srcs[0] == (
        "handbook_info_table: char_900_tester (基础档案, 临床诊断分析, 客观履历, 档案资料一, 档案资料二)"
    )
    assert srcs[-1].startswith("charword_table: char_900_tester_CN_002, ")
    allowed = allowed_sections(prof)
    assert allowed.titles() == [ANCHOR, PHYSICAL, QUOTES, "我·性格", "我·关于博士"]
    e = d.entry
    assert e.tasks["A"] == TaskStatus(OK, "15 fields copied from source; 核心经历: needs a model")
    assert section(prof, ANCHOR).bullets()[-3] == "客观履历：测试员，测试国人，负责巡逻路线的勘察。"
    assert section(prof, ANCHOR).bullets()[-1] == (  # the record's 【权限记录】 runs on
        "档案资料二：测试员的笔记不对外公开。嘴硬，心软。测试员每次被人夸奖都会转过身去，假装在看天气。"
    )
    assert e.tasks["B"] == TaskStatus(
        OK, "7 quotes by the rule (voice); personality: 1 line by the rule"
    )
    assert e.tasks["C"].status == OK and e.tasks["D"].status == SKIPPED
    assert e.tasks["E"].status == OK
    assert e.gaps == "no source: story (story lines)"
    assert e.relation_candidates[0].startswith("新人 (char_999_newcomer): 5 story")
    # same inputs, same bytes
    assert draft_profile(OPS[T], tables, graph=_graph(), generated_at=AT).text == d.text


def test_alternate_form_uses_its_voice_and_base_story_lines(tables) -> None:
    base_lines = [
        StoryLine(
            "s/t#1:00000000", "s/t", 1, 1, "双生", TW, "姐姐说过，灯塔的光会一直亮到天明为止。"
        ),
        StoryLine(
            "s/t#2:00000000", "s/t", 2, 1, "双生", TW, "我会记住这条路，下次由我来带大家回家。"
        ),
    ]
    lines = lines_for(OPS[TW2], {TW: base_lines})
    assert lines == base_lines
    d = draft_profile(OPS[TW2], tables, story_lines=lines, generated_at=AT)
    assert d.entry is not None
    assert [q.source_id for q in d.gate.kept] == [
        "voice:char_1902_twin2_CN_002", "voice:char_1902_twin2_CN_003",
        "story:s/t#1:00000000", "story:s/t#2:00000000",
    ]  # fmt: skip
    assert d.entry.tasks["B"].reason == (
        "4 quotes by the rule (voice+story): few candidates; personality: no line by the rule"
    )
    assert d.anchor.value("身高") == "150cm"
    assert d.entry.gaps == "no source: character_table (faction)"


def test_an_alternate_form_quotes_the_stages_that_show_her_in_that_form() -> None:
    """With enough lines there, only the stages her form's picture is shown in; otherwise all
    of her base form's lines (a form the story barely shows)."""

    def line(stage: str, i: int) -> StoryLine:
        return StoryLine(f"{stage}#{i}:00000000", stage, i, i, "双生", TW, f"第{i}句台词。")

    old = [line("s/old", i) for i in range(FORM_LINES_MIN)]
    new = [line("s/new", i) for i in range(FORM_LINES_MIN)]
    assert lines_for(OPS[TW2], {TW: old + new}, frozenset({"s/new"})) == new
    assert lines_for(OPS[TW2], {TW: old + new[:-1]}, frozenset({"s/new"})) == old + new[:-1]
    assert lines_for(OPS[TW], {TW: old + new}, frozenset({"s/new"})) == old + new  # her own


def test_operator_with_no_source_gets_no_file(tables, tmp_path: Path) -> None:
    d = draft_profile(OPS[NEW], tables, generated_at=AT)
    assert d.text is None and d.entry is not None
    assert d.entry.tier == TIER_C
    assert d.entry.gaps == (
        "no source: handbook_info_table (archive), character_table (faction), "
        "charword_table (voice), story (story lines)"
    )
    assert d.entry.tasks["B"].status == SKIPPED
    assert write_draft(d, tmp_path) is None and not any(tmp_path.iterdir())


def test_write_draft_protects_a_person_file(tables, tmp_path: Path) -> None:
    d = draft_profile(OPS[T], tables, generated_at=AT)
    res = write_draft(d, tmp_path)
    assert res is not None and d.entry is not None
    assert res.action == "written" and d.entry.write.startswith("written")
    assert d.entry.path == str(tmp_path / "char_900_tester.char") and d.entry.tier == TIER_B
    person = "# 测试员\n\n## 我·性格\n由一位编辑亲手写成。\n"
    (tmp_path / "char_900_tester.char").write_text(person, encoding="utf-8")
    d2 = draft_profile(OPS[T], tables, generated_at=AT)
    res = write_draft(d2, tmp_path)
    assert res is not None and d2.entry is not None
    assert res.action == "draft" and res.path == draft_path(tmp_path / "char_900_tester.char")
    assert d2.entry.tier == TIER_S and "draft beside it" in d2.entry.write
    assert (tmp_path / "char_900_tester.char").read_text(encoding="utf-8") == person


def test_draft_all_in_char_id_order(tables) -> None:
    drafts = draft_all(OPS.values(), tables, {}, generated_at=AT)
    assert [d.char_id for d in drafts] == sorted(OPS)
    assert {d.char_id for d in drafts if d.text is None} == {NEW}


# -- review ------------------------------------------------------------------------------


def _entries(n: int) -> list[ReviewEntry]:
    out = []
    for i in range(n):
        e = ReviewEntry(f"char_{i:03d}_x", f"干员{i}", f"/c/char_{i:03d}_x.char", TIER_B)
        e.tasks = {"A": TaskStatus(OK, "")}
        out.append(e)
    return out


def test_review_queue_markdown(tables) -> None:
    drafts = draft_all(OPS.values(), tables, {}, generated_at=AT)
    entries = [d.entry for d in drafts if d.entry is not None]
    assert len(entries) == len(drafts)
    entries[0].quotes_removed.append("「编的」 voice:x_CN_001: not verbatim in voice:x_CN_001")
    entries[1].tasks["B"] = TaskStatus(FAILED, "every chosen quote failed the verbatim gate")
    md = render_queue(entries)
    assert md.startswith("# Profile review queue\n")
    assert "5 operators; tiers B 4, C 1; 5 with missing sources; 2 need attention." in md
    head, others = md.split("## Others")
    assert "### 新装双生 (char_1902_twin2)" in head and "not verbatim" in head
    assert "### 测试员 (char_900_tester) — tier B" in head
    assert "**failed** — every chosen quote failed" in head
    assert "### 向导 (char_901_guide) — tier B" in others
    assert "- no source: handbook_info_table (archive)" in others
    assert "- file: none (tier C)" in others and "- file: not written yet" in others


def test_spot_check_sample_is_seeded_and_ten_percent() -> None:
    entries = _entries(95)
    a = spot_check_sample(entries, seed=7)
    assert len(a) == 10
    assert a == spot_check_sample(list(reversed(entries)), seed=7)  # input order does not matter
    assert [e.char_id for e in a] == sorted(e.char_id for e in a)
    others = {tuple(e.char_id for e in spot_check_sample(entries, seed=s)) for s in range(8)}
    assert len(others) > 1  # the seed matters
    assert spot_check_sample([], seed=1) == [] and len(spot_check_sample(entries[:3])) == 1
