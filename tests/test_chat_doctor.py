"""The doctor block (her view of the Doctor, every turn), the tier rule for her lines to the
Doctor, and the player placeholder kept out of every prompt, on the invented world of
``doctor_world`` (rule-built profiles, no model)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.doctor_world import (
    AMIYA,
    CHEN,
    HOSHI,
    KALTS,
    PH,
    S1,
    S2,
    lid,
    make_world,
    world_workspace,
)

from arklore.chat.blocks.doctor import doctor_block, lines_header
from arklore.core.text import render_nickname
from arklore.graph.model import DOCTOR_ID
from arklore.profiles.charfile import ABOUT_DOCTOR, CharProfile, body_hash
from arklore.profiles.persona import Persona
from arklore.rag.context import Relation

V = f"voice:{AMIYA}_CN_"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_world(tmp_path_factory.mktemp("doctor-world"))


@pytest.fixture
def ws(world):
    w = world_workspace(*world)
    yield w
    w.close()


def test_every_turn_gets_her_view_of_the_doctor_apart_from_her_relations(ws) -> None:
    t = ws.chat.turn("阿米娅", "你好")
    doc, persona, rel = t.block("doctor"), t.block("persona"), t.block("relations")
    assert doc.text.startswith("【阿米娅眼中的博士】\n- 阿米娅把博士当作最信任的人")
    assert lines_header("阿米娅") in doc.text and "「嘿嘿，博士，悄悄告诉你" in doc.text
    assert [i["source_id"] for i in doc.items if i["kind"] == "line"] == [
        V + "001", f"story:{lid(S1, 2)}", V + "003", V + "004", V + "005",
    ]  # fmt: skip
    # line ids: her story line and the relation's evidence; voice ids beside them
    assert doc.line_ids == [lid(S1, 2), lid(S1, 5)]
    assert doc.meta["voice_ids"] == [f"{AMIYA}_CN_{n:03d}" for n in (1, 3, 4, 5)]
    assert doc.meta["relation"] == "matrix" and doc.tokens <= doc.budget == 250
    assert doc.files and doc.files[0].endswith(f"{AMIYA}.char") and not doc.reason
    # nothing twice: the persona leaves the section and its quotes to the doctor block
    assert ABOUT_DOCTOR not in persona.text and persona.meta["elsewhere"] == [ABOUT_DOCTOR]
    assert "今天也请多多指教" not in persona.text and "甲板上风很大" in persona.text
    # and the Doctor takes no slot among her other relations
    assert DOCTOR_ID not in {i["target_id"] for i in rel.items} and rel.items
    assert doc.text in t.system_prompt


def test_doctor_lines_are_her_stored_words(ws, world) -> None:
    store = ws.corpus.store()
    words = json.loads((world[1] / "zh_CN/gamedata/excel/charword_table.json").read_text("utf-8"))
    for name, cid in (("阿米娅", AMIYA), ("凯尔希", KALTS), ("陈", CHEN)):
        doc = ws.chat.turn(name, "你好").block("doctor")
        lines = [i for i in doc.items if i["kind"] == "line"]
        assert lines, name
        for it in lines:
            kind, _, ref = it["source_id"].partition(":")
            if kind == "story":
                speaker, text = store.lines_by_id([ref])[ref]
                assert ws.names.resolve_person(speaker) == cid
            else:
                w = words["charWords"][ref]
                assert w["charId"] == cid
                text = w["voiceText"]
            assert it["text"] == render_nickname(text) and f"「{it['text']}」" in doc.text


def test_a_profile_without_the_section_and_no_relation_says_why(ws) -> None:
    hoshi = ws.chat.turn("星熊", "你好").block("doctor")
    assert hoshi.empty
    assert (
        "no ## 我·关于博士" in hoshi.reason and "no relation of 星熊 to the Doctor" in hoshi.reason
    )


def test_tier_c_gets_nothing_unless_the_user_opts_in() -> None:
    rel = Relation(DOCTOR_ID, "博士", "战友", 0.9, f"她信任{PH}。", "matrix", "d1", None, ["x#1:1"])
    nobody = Persona(HOSHI, "星熊", "C", None, False, relation_context=False)
    block = doctor_block(nobody, rel, budget=300)
    assert block.empty and "tier C" in block.reason and "ARKLORE_TIER_C_RELATIONS" in block.reason
    opted = doctor_block(replace(nobody, relation_context=True), rel, budget=300)
    assert opted.text == "【星熊眼中的博士】\n- 她信任博士。" and opted.line_ids == ["x#1:1"]


def test_an_exchange_built_by_rule_gives_way_to_her_own_lines_to_him(ws) -> None:
    """A relation text a rule built from one exchange says less than her own lines to the
    Doctor: with them, it is left out; alone, it is what the block has."""
    persona = ws.profiles.persona(AMIYA)
    thin = Relation(DOCTOR_ID, "博士", "interaction", 0.6, f"阿米娅称博士为“{PH}”。",
                    "graph_edge", "d2", None, ["x#2:2"], "evidence")  # fmt: skip
    with_lines = doctor_block(persona, thin, budget=300)
    assert "阿米娅称博士为" not in with_lines.text and with_lines.meta["relation"] is None
    assert lines_header("阿米娅") in with_lines.text
    written = Relation(DOCTOR_ID, "博士", "战友", 0.9, "她信任博士。", "matrix", "d1",
                       None, ["x#1:1"], "as_written")  # fmt: skip
    assert "- 她信任博士。" in doctor_block(persona, written, budget=300).text
    nobody = Persona(HOSHI, "星熊", "B", None, False)
    alone = doctor_block(nobody, thin, budget=300)
    assert alone.text == "【星熊眼中的博士】\n- 阿米娅称博士为“博士”。"


def test_over_budget_the_least_telling_lines_go_first(ws) -> None:
    sp = ws.chat.speaker("阿米娅")
    full = ws.chat.doctor(sp)
    kept = [
        x for x in full.text.split("\n") if "今天也请多多指教" not in x and "最信任的人" not in x
    ]
    budget = ws.chat.counter("\n".join(kept))
    small = ws.chat.doctor(sp, budget)
    # the voice line not unlocked by trust, then the relation text went; trust lines stayed
    assert (
        small.text == "\n".join(kept)
        and small.reason == f"2 line(s) left out to fit {budget} tokens"
    )
    assert small.meta["relation"] is None and small.line_ids == [lid(S1, 2)]
    tiny = ws.chat.doctor(
        sp,
        ws.chat.counter(
            "【阿米娅眼中的博士】\n阿米娅说给博士或说起博士的原话：\n- 「不管前面的路有多长，只要和您一起走，我就不害怕。」"
        ),
    )
    assert [i["source_id"] for i in tiny.items] == [V + "005"]  # the deepest trust line is last
    assert ws.chat.doctor(sp, 5).empty


def _hand_edit(path: Path, section: str, extra: str) -> None:
    prof = CharProfile.read(path)
    text = prof.text()
    sec = prof.section(section)
    assert sec is not None
    text = text.replace(
        sec.heading + sec.body, sec.heading + sec.body.rstrip("\n") + "\n" + extra + "\n\n"
    )
    path.write_text(text, encoding="utf-8")
    assert CharProfile.read(path).hand_edited


def test_tier_b_lines_to_the_doctor_are_verified_again_after_a_hand_edit(world, tmp_path) -> None:
    home, gamedata = world
    chars = tmp_path / "chars"
    chars.mkdir()
    path = chars / f"{CHEN}.char"
    path.write_text((home / "chars" / f"{CHEN}.char").read_text("utf-8"), encoding="utf-8")
    forged = f"- 「博士，我从来没有怀疑过你。」 —— story:{lid(S2, 3)}（DW-2）"
    stolen = f"- 「知道了，陈，你别一个人冲在最前面。」 —— story:{lid(S2, 2)}（DW-2）"  # 星熊's
    added = f"- 「星熊，跟上，{PH}还在等我们。」 —— story:{lid(S2, 1)}（DW-2）"  # hers, verbatim
    _hand_edit(path, ABOUT_DOCTOR, "\n".join([forged, stolen, added, "我一直很信任博士。"]))
    with world_workspace(home, gamedata, chars_dir=chars) as w:
        p = w.profiles.persona("陈")
        about = next(s for s in p.sections if s.title == ABOUT_DOCTOR).text
        assert "我从来没有怀疑过你" not in about and "你别一个人冲在最前面" not in about
        assert "我相信你的判断" in about and "负责你的安全" in about
        assert f"星熊，跟上，{PH}还在等我们。" in about  # checked against its own source
        assert "我一直很信任博士" not in about  # not a quote: an unreviewed draft at tier B
        assert any(t == ABOUT_DOCTOR and "not a quote" in why for t, why in p.excluded)
        doc = w.chat.turn("陈", "你好").block("doctor")
        assert "我相信你的判断" in doc.text and "我从来没有怀疑过你" not in doc.text


def test_tier_a_and_s_give_the_whole_section(world, tmp_path) -> None:
    home, gamedata = world
    chars = tmp_path / "chars"
    chars.mkdir()
    text = (home / "chars" / f"{CHEN}.char").read_text("utf-8").replace("[AUTO-DRAFT]", "[AUTO]")
    path = chars / f"{CHEN}.char"
    path.write_text(text, encoding="utf-8")
    _hand_edit(path, ABOUT_DOCTOR, "我一直很信任博士。")
    prof = CharProfile.read(path)  # approved with its edits: the reviewer's call
    fixed = prof.text().replace(prof.stored_hash or "", body_hash(prof.body()))
    path.write_text(fixed, encoding="utf-8")
    with world_workspace(home, gamedata, chars_dir=chars) as w:
        doc = w.chat.turn("陈", "你好").block("doctor")
    assert doc.meta["tier"] == "A" and "我一直很信任博士。" in doc.text


@pytest.mark.parametrize("nickname", ["博士", "阿斯特"])
def test_the_players_placeholder_never_reaches_a_prompt(world, nickname: str) -> None:
    home, gamedata = world
    # the world's lines, summaries, quotes and relation texts do carry it
    assert PH in (home / "chars" / f"{AMIYA}.char").read_text("utf-8")
    with world_workspace(home, gamedata, nickname=nickname, tier_c_relations=True) as w:
        docs = w.rag.documents(["matrix"])
        assert any(PH in d.text for lst in docs.values() for d in lst)
        assert any(PH in (i.story_info or "") for i in w.corpus.store().stage_infos())
        turns = [
            w.chat.turn("阿米娅", "你好"),
            w.chat.turn("阿米娅", "凯尔希和陈最近怎么样？"),
            w.chat.turn("陈", "星熊呢？", participants=["阿米娅", "星熊"]),
            w.chat.turn("凯尔希", "博士去哪了？"),
            w.chat.turn("星熊", "陈最近怎么样？"),
        ]
    # with no room for the doctor block, her quotes to the Doctor stay in the persona block
    with world_workspace(home, gamedata, nickname=nickname, doctor_token_budget=1) as w:
        turns.append(w.chat.turn("阿米娅", "你好"))
        assert turns[-1].block("doctor").empty
    for t in turns:
        assert "{@nickname}" not in t.system_prompt, t.operator_name
        for b in t.blocks:
            assert "{@nickname}" not in b.text, (t.operator_name, b.name)
    seen = "\n".join(t.system_prompt for t in turns)
    assert f"阿米娅把{nickname}当作最信任的人" in seen  # relation text, doctor block
    assert f"也常替{nickname}在她面前说情" in seen  # relation text, relations block
    assert f"陈带着星熊赶到，与{nickname}会合" in seen  # a stage summary, memories block
    assert f"「嘿嘿，{nickname}，悄悄告诉你" in seen  # her voice line, doctor block
    assert f"护送{nickname}" in seen  # the group block
    assert f"「{nickname}，今天也请多多指教" in turns[-1].block("persona").text  # a quote


def test_why_lists_the_doctor_blocks_lines_and_relation(ws) -> None:
    from arklore.chat.turn import render_why

    why = render_why(ws.chat.turn("阿米娅", "你好"))
    assert "relation: 战友 0.99 [matrix]" in why
    assert f"{V}005 (trust ≥ 200)" in why and f"story:{lid(S1, 2)}" in why


def test_the_blocks_own_words_name_her_never_a_pronoun(ws) -> None:
    """The block's headings are ours, not hers: a man (84 operators are) must not be 她."""
    doc = ws.chat.turn("阿米娅", "你好").block("doctor")
    ours = [ln for ln in doc.text.split("\n") if not ln.startswith(("- ", "  "))]
    assert len(ours) == 2 and all("阿米娅" in ln for ln in ours), ours
    assert not any(p in ln for ln in ours for p in "她他"), ours


def test_the_games_rich_text_tags_never_reach_a_prompt() -> None:
    """A line the script styles (<i>, <color=#…>) reaches a chat as its words."""
    styled = "（<color=#000000>“答案一直都在这里。”</color>）<i>亲爱的K先生：</i>Dr.{@nickname}"
    assert render_nickname(styled) == "（“答案一直都在这里。”）亲爱的K先生：博士"
    assert render_nickname("a<b and c>d, 1<3") == "a<b and c>d, 1<3"  # not a tag: kept
    assert render_nickname("米诺斯\u200b的\ufeff英雄") == "米诺斯的英雄"  # zero-width: invisible
