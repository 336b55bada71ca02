"""Her ``## 说话方式`` written by the rule path (``arklore distill`` with no model, the build's
profiles step) and served by the speech block: the facts alone in the prompt, their ids in
the sources, within the block's budget (the least important facts dropped first), empty with
its reason; the persona block leaves the section to it. On the invented corpus of
``speech_world``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import speech_world as W
from support.profiles_world import FIXTURES

from arklore.chat.blocks import BLOCK_NAMES
from arklore.chat.blocks.persona import persona_block
from arklore.chat.blocks.speech import speech_block
from arklore.core.blocks import PERSONA, SPEECH
from arklore.core.tokens import count_tokens
from arklore.profiles.archive import Tables
from arklore.profiles.charfile import (
    B_ALLOWED,
    QUOTES,
    SECTION_ORDER,
    TIER_B,
    TIER_C,
    CharProfile,
    UsableSection,
)
from arklore.profiles.charfile import SPEECH as SECTION
from arklore.profiles.draft import draft_profile
from arklore.profiles.persona import Persona
from arklore.profiles.speech import parse_fact_line, render_section, speech_facts
from arklore.settings import Settings
from arklore.workspace import Workspace

AT = "2026-03-04T05:06:07Z"
RULE_TASKS = ["A", "B", "C", "E"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("speech-world")
    home = W.make_home(root)
    gamedata = root / "gamedata"
    (gamedata / "zh_CN/gamedata/story").mkdir(parents=True)
    shutil.copytree(FIXTURES, gamedata / "zh_CN/gamedata/excel")
    ws = Workspace(Settings(home=home, gamedata=gamedata, embedder="hash"))
    ws.profiles.distill(RULE_TASKS, use_llm=False, generated_at=AT)
    ws.close()
    return home, gamedata


@pytest.fixture
def ws(home: tuple[Path, Path]):
    w = Workspace(Settings(home=home[0], gamedata=home[1], embedder="hash"))
    yield w
    w.close()


def test_the_section_has_its_place_and_a_draft_may_use_it() -> None:
    assert SECTION_ORDER.index(SECTION) == SECTION_ORDER.index(QUOTES) + 1
    assert SECTION in B_ALLOWED  # counted by code from her lines, like 锚


def test_the_rule_path_writes_her_way_of_speaking(home: tuple[Path, Path]) -> None:
    prof = CharProfile.read(home[0] / "chars" / f"{W.SHE}.char")
    assert prof.tier == TIER_B and not prof.hand_edited
    titles = [s.title for s in prof.sections]
    assert titles.index(SECTION) == titles.index(QUOTES) + 1
    sec = prof.section(SECTION)
    assert sec is not None
    facts = [parse_fact_line(ln) for ln in sec.content.split("\n")]
    texts = [f[0] for f in facts if f is not None]
    assert len(texts) == len(sec.content.split("\n"))  # every line a fact with its sources
    # her story lines only (the invented voice table does not know her): 船长 in the scene
    # where only she and the Doctor speak
    assert texts[0] == "称博士为「船长」（剧情 3 次；「博士」0 次）"
    assert "自称「本小姐」（6 次）；「我」2 句" in texts
    assert any(t.startswith("常用语：「嘻嘻」") for t in texts)
    assert "别人叫星砂「小砂」（悠悠 3 次）、「星砂队长」（巡逻队员 3 次）" in texts
    cited = {s.removeprefix("story:") for f in facts if f is not None for s in f[1]}
    assert cited and cited <= set(prof.header_list("sources")[-1].split(": ")[1].split(", "))


def test_a_draft_given_her_facts_writes_the_section() -> None:
    ls = W.lines()
    facts = speech_facts(
        [], W.her_story(ls), W.background(ls), name="星砂", char_ids=[W.SHE],
        names={"星砂"}, tokenizer=W.tokenizer(),
    )  # fmt: skip
    d = draft_profile(
        W.OPS[0], Tables(), story_lines=W.her_story(ls), speech=facts, generated_at=AT
    )
    assert d.text is not None
    sec = CharProfile.parse(d.text).section(SECTION)
    assert sec is not None and sec.content == render_section(facts)
    plain = draft_profile(W.OPS[0], Tables(), story_lines=W.her_story(ls), generated_at=AT)
    assert plain.text is not None
    empty = CharProfile.parse(plain.text).section(SECTION)
    assert empty is not None and empty.content == ""  # no facts given: the heading alone


def test_an_operator_with_too_few_lines_gets_no_section(home: tuple[Path, Path]) -> None:
    path = home[0] / "chars" / f"{W.OTHER}.char"
    sec = CharProfile.read(path).section(SECTION) if path.exists() else None
    assert sec is None or sec.content == ""  # the heading alone, like any empty section


def test_the_speech_block_gives_the_facts_and_keeps_their_ids(ws: Workspace) -> None:
    t = ws.chat.turn("星砂", "今天去哪儿？")
    assert BLOCK_NAMES.index(SPEECH) == BLOCK_NAMES.index(PERSONA) + 1
    block, persona = t.block(SPEECH), t.block(PERSONA)
    assert block.text.startswith("【星砂的说话方式】\n- 称博士为「船长」")
    assert " —— " not in block.text and "story:" not in block.text
    assert block.tokens == count_tokens(block.text) <= block.budget == 160
    assert block.line_ids and all(i.startswith("test/speech/") for i in block.line_ids)
    assert block.meta["voice_ids"] == [] and block.meta["tier"] == TIER_B
    assert [i["text"] for i in block.items][0] == "称博士为「船长」（剧情 3 次；「博士」0 次）"
    # the persona block leaves the section to the speech block
    assert SECTION not in persona.text and SECTION in persona.meta["elsewhere"]
    assert block.text in t.system_prompt


FACTS = [
    "- 称博士为「船长」（语音 4 次；「博士」0 次） —— voice:v_001, voice:v_002",
    "- 对博士称「您」（5 句；「你」0 句） —— voice:v_003",
    "- 常用语：「嘻嘻」（7 次，6 处）、「♪」（6 次，5 处） —— story:s#1:aa, voice:v_004",
    "- 别人叫星砂「小砂」（悠悠 3 次） —— story:s#7:bb",
    "- 见到 Dr.{@nickname} 就笑",
]


def persona(lines: list[str], tier: str = TIER_B) -> Persona:
    text = "\n".join(lines)
    sec = UsableSection(SECTION, text, count_tokens(f"## {SECTION}\n{text}"))
    return Persona(W.SHE, "星砂", tier, "chars/x.char", False, [sec])


def test_the_block_strips_the_ids_into_its_sources() -> None:
    b = speech_block(persona(FACTS), budget=400, nickname="刀客塔")
    assert b.text.split("\n") == [
        "【星砂的说话方式】",
        "- 称博士为「船长」（语音 4 次；「博士」0 次）",
        "- 对博士称「您」（5 句；「你」0 句）",
        "- 常用语：「嘻嘻」（7 次，6 处）、「♪」（6 次，5 处）",
        "- 别人叫星砂「小砂」（悠悠 3 次）",
        "- 见到 刀客塔 就笑",  # a person's own line, the placeholder rendered
    ]
    assert b.line_ids == ["s#1:aa", "s#7:bb"] and not b.reason
    assert b.meta["voice_ids"] == ["v_001", "v_002", "v_003", "v_004"]
    assert b.items[0] == {
        "text": "称博士为「船长」（语音 4 次；「博士」0 次）",
        "sources": ["voice:v_001", "voice:v_002"],
    }


def test_over_budget_the_least_important_facts_go_first() -> None:
    full = speech_block(persona(FACTS[:4]), budget=400)
    without_last = "\n".join(full.text.split("\n")[:-1])
    b = speech_block(persona(FACTS[:4]), budget=count_tokens(without_last))
    assert b.text == without_last and b.tokens <= b.budget
    assert b.reason == f"1 fact(s) left out to fit {b.budget} tokens"
    assert "s#7:bb" not in b.line_ids  # its id left with it
    two = "\n".join(full.text.split("\n")[:3])
    b = speech_block(persona(FACTS[:4]), budget=count_tokens(two))
    assert b.text == two and b.line_ids == [] and b.meta["voice_ids"] == ["v_001", "v_002", "v_003"]


def test_the_block_is_empty_with_its_reason() -> None:
    tiny = speech_block(persona(FACTS), budget=5)
    assert tiny.empty and tiny.reason == "not even one fact fits the speech budget of 5 tokens"
    none = speech_block(Persona(W.SHE, "星砂", TIER_B, "chars/x.char", False), budget=160)
    assert none.empty and "has no ## 说话方式" in none.reason and "20 lines" in none.reason
    c = speech_block(Persona(W.SHE, "星砂", TIER_C, None, False), budget=160)
    assert c.empty and c.reason == "no profile for 星砂 (tier C)"


def test_the_persona_block_can_leave_the_section_out() -> None:
    p = persona(FACTS)
    assert SECTION in persona_block(p, budget=400).text
    left = persona_block(p, budget=400, leave_out=(SECTION,))
    assert left.empty and SECTION in left.reason
