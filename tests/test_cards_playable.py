"""A card SillyTavern can play (issue 36, part 2): personality, scenario, a clean description,
a first message for every operator, example messages SillyTavern's own parser reads as hers
alone, unique names for alternate forms, and no export without the game's tables.

Every line, profile sentence and summary below is invented for this test; only operator ids and
names are the game's identifiers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.gamedata import write_gamedata
from support.lines import line
from support.service_world import write_store
from support.sillytavern import parse_examples, sillytavern_root
from typer.testing import CliRunner

from arklore.cards.card import (
    DOCTOR,
    NOTHING_OF_HERS,
    USER,
    description,
    mes_example,
    opening,
    personality,
    scenario,
    scene_example,
)
from arklore.cli.app import app
from arklore.core.blocks import EXEMPLARS, Block, StageRef
from arklore.core.errors import EXIT_CONFIG, DataNotFoundError
from arklore.core.model import Source, Stage
from arklore.core.operators import Operator
from arklore.events.standing import Standing
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PERSONALITY,
    PHYSICAL,
    QUOTES,
    SPEECH,
    TIER_B,
    TIER_C,
    UsableSection,
)
from arklore.profiles.greeting import (
    RECORD,
    STORY,
    TO_DOCTOR,
    alternate_greetings,
    choose_greeting,
)
from arklore.profiles.persona import Persona
from arklore.profiles.quotes import StoryLine, VoiceLine
from arklore.settings import Settings
from arklore.workspace import Workspace

SURVEYOR = "char_9001_survey"
SOURCE_ID = re.compile(r"(?:story|voice|archive):")


def persona(*sections: tuple[str, str], tier: str = TIER_B) -> Persona:
    return Persona(
        SURVEYOR, "测绘员", tier, "chars/x.char", False,
        [UsableSection(t, text, 10) for t, text in sections],
    )  # fmt: skip


PROFILE = persona(
    (ANCHOR, "- 代号：测绘员\n- 客观履历：测绘员，罗德岛的地图绘制员。"),
    (PHYSICAL, "- 卷尺\n- 防风镜"),
    (QUOTES, "- 「地图不会说谎，Dr.{@nickname}。」 —— voice:char_9001_survey_CN_001（交谈1）"),
    (ABOUT_DOCTOR, "- 「地图不会说谎，Dr.{@nickname}。」 —— voice:char_9001_survey_CN_001（交谈1）\n"
                   "- 「博士，下次外勤带上我。」 —— story:act/x#4:aa11bb22（外勤）"),
    (PERSONALITY, "- 「测绘员做事一丝不苟，连铅笔都削得一样长。」 —— archive:char_9001_survey/档案资料一（档案资料一）\n"
                  "- 「她啊，倔得很。」 —— story:act/x#9:cc33dd44（老船长）"),
    (SPEECH, "- 称博士为「博士」（剧情 12 次） —— story:act/x#4:aa11bb22, story:act/x#5:ee55ff66\n"
             "- 常用语：「精确」（9 次，5 处） —— voice:char_9001_survey_CN_002"),
)  # fmt: skip


# -- personality, description, scenario -------------------------------------------------------


def test_personality_is_her_temperament_and_speech_in_plain_chinese_without_source_ids() -> None:
    text = personality(PROFILE)
    assert text.startswith("性格：\n- ")
    assert "一丝不苟：「测绘员做事一丝不苟，连铅笔都削得一样长。」——档案资料一" in text
    assert "「她啊，倔得很。」——老船长" in text  # a story line: no trait stated for it
    assert "说话方式：\n- 称博士为「博士」（剧情 12 次）\n- 常用语：「精确」（9 次，5 处）" in text
    assert not SOURCE_ID.search(text) and "##" not in text


def test_a_card_without_profile_has_no_personality() -> None:
    assert personality(persona(tier=TIER_C)) == ""


def test_traits_her_anchor_already_tells_stay_in_personality_when_nothing_else_would() -> None:
    trait = "测绘员做事一丝不苟，连铅笔都削得一样长。"
    told = persona(
        (ANCHOR, f"- 代号：测绘员\n- 档案资料一：{trait}"),
        (PERSONALITY, f"- 「{trait}」 —— archive:{SURVEYOR}/档案资料一（档案资料一）"),
    )
    assert personality(told) == f"性格：\n- 一丝不苟：「{trait}」——档案资料一"


def test_her_own_words_stand_for_her_speech_when_no_section_tells_it() -> None:
    words = "\n".join(
        f"- 「第{i}张图画好了，Dr.{{@nickname}}。」 —— story:act/x#{i}:aa11bb2{i}（外勤）"
        for i in range(1, 7)
    )
    text = personality(persona((ANCHOR, "- 代号：测绘员"), (QUOTES, words)))
    assert text.split("\n") == [
        "说话方式（测绘员的原话）：",
        *(f"- 「第{i}张图画好了，博士。」" for i in range(1, 5)),  # OWN_WORDS_LINES of them
    ]


def test_description_is_plain_lines_with_no_heading_source_id_or_placeholder() -> None:
    text = description(PROFILE)
    assert text.split("\n")[:2] == ["代号：测绘员", "客观履历：测绘员，罗德岛的地图绘制员。"]
    assert "外貌与身份：卷尺、防风镜" in text
    assert "测绘员说过的话：\n「地图不会说谎，博士。」" in text
    # a quote shown under 语录 is not repeated under her words to the Doctor
    assert "测绘员对博士说过的话：\n「博士，下次外勤带上我。」" in text
    assert text.count("地图不会说谎") == 1
    assert not SOURCE_ID.search(text)
    assert not re.search(r"^#|^- |\{@nickname\}|AUTO", text, re.M)
    assert "一丝不苟" not in text and "精确" not in text  # those are the personality's


def test_scenario_is_rhodes_island_with_the_doctor_and_where_she_stands_now() -> None:
    ref = StageRef("activities/act_map/st02", "MP-2", "新的航线", "绘图季", "行动后")
    now = [Standing(ref, "测绘员接过了测绘队队长的位置。", 1_700_000_000, why="office")]
    text = scenario("测绘员", now)
    first, rest = text.split("\n\n")
    assert "罗德岛" in first and f"与罗德岛的{DOCTOR}交谈" in first and USER not in first
    assert rest.split("\n") == [
        "【测绘员的近况（剧情概要，新于档案资料，有出入时以此为准）】",
        "- MP-2 行动后 《新的航线》（绘图季）：测绘员接过了测绘队队长的位置。",
    ]
    assert scenario("测绘员", []) == first  # no summary names her: the setting alone


# -- first message and alternate greetings ------------------------------------------------------


def _story(no: int, text: str, path: str = "act/x") -> StoryLine:
    return StoryLine(f"{path}#{no}:{no:08x}", path, no, no, "测绘员", SURVEYOR, text)


RECORD_PATH = "obt/memory/story_survey_1_1"


def test_first_message_falls_back_from_voice_to_the_doctor_to_her_record_to_any_line() -> None:
    record = _story(3, "这张图，我画了整整三个晚上呢。", RECORD_PATH)
    naming = _story(1, "老船长，这条航线的水深你再确认一次。")
    short = _story(2, "......嗯。")
    to_doc = _story(4, "博士，图纸在这儿。")

    def own(s: StoryLine) -> bool:
        return s.stage_path == RECORD_PATH

    def others(text: str) -> bool:
        return "老船长" in text

    g = choose_greeting([[]], [naming, short, record, to_doc], own_record=own, names_other=others)
    assert g is not None and (g.kind, g.text) == (TO_DOCTOR, "博士，图纸在这儿。")
    g = choose_greeting([[]], [naming, short, record], own_record=own, names_other=others)
    assert g is not None and (g.kind, g.source_id) == (RECORD, record.source_id)
    # outside her record: a line that names nobody else and says something comes first
    g = choose_greeting([[]], [naming, short, _story(5, "风向变了，今晚会下雨。")],
                        own_record=own, names_other=others)  # fmt: skip
    assert g is not None and (g.kind, g.text) == (STORY, "风向变了，今晚会下雨。")
    assert choose_greeting([[]], []) is None


def test_alternate_greetings_are_her_other_opening_voice_lines_not_battle_lines() -> None:
    voices = [
        VoiceLine("v1", SURVEYOR, "任命助理", 1, "Dr.{@nickname}，今天测哪里？"),
        VoiceLine("v2", SURVEYOR, "交谈1", 2, "比例尺错了一格，整张图都要重画。"),
        VoiceLine("v3", SURVEYOR, "作战中1", 3, "坐标确认！"),
        VoiceLine("v4", SURVEYOR, "问候", 4, "早上好。"),
    ]
    chosen = choose_greeting([voices], [])
    assert chosen is not None and chosen.text == "早上好。"
    alts = alternate_greetings([voices], chosen)
    assert [a.source_id for a in alts] == ["voice:v1", "voice:v2"]


def test_an_operator_with_no_line_at_all_opens_with_a_narrated_sentence() -> None:
    text = opening("测绘员")
    assert text.startswith("*") and "测绘员" in text and DOCTOR in text and "「" not in text


# -- example messages under SillyTavern's own parser ---------------------------------------------

CAPTAIN_WORDS = "别在甲板上画图，风会把纸吹走"
SCENE: dict[str, Any] = {
    "stage_path": "act/x",
    "lines": [
        {"kind": "narration", "speaker": "", "text": "甲板上风很大。", "hers": False},
        {"kind": "dialogue", "speaker": "测绘员", "text": "Dr.{@nickname}，帮我按住这个角。", "hers": True},
        {"kind": "dialogue", "speaker": "测绘员", "text": "对，就这样。", "hers": True},
        {"kind": "dialogue", "speaker": "老船长", "text": CAPTAIN_WORDS + "！", "hers": False},
        {"kind": "dialogue", "speaker": "测绘员", "text": "知道啦，马上就好。", "hers": True},
        {"kind": "choice", "speaker": "博士", "text": "需要帮忙吗/走吧", "hers": False, "option": "需要帮忙吗"},
        {"kind": "dialogue", "speaker": "老船长", "text": "年轻人就是不听劝。", "hers": False},
    ],
}  # fmt: skip


def test_another_speakers_line_is_told_inside_her_message_and_her_lines_are_one_message() -> None:
    text = scene_example(SCENE)
    assert text == (
        "<START>\n"
        "{{char}}: （甲板上风很大。）\n博士，帮我按住这个角。\n对，就这样。\n"
        f"（老船长说：「{CAPTAIN_WORDS}！」）\n知道啦，马上就好。\n"
        "{{user}}: 需要帮忙吗"
    )  # his last line follows the Doctor's last words with no line of hers: left out
    assert not re.search(r"^(?!\{\{)[^\s（]+:", text, re.M)  # no other "Name:" line
    assert scene_example({"lines": [SCENE["lines"][3]]}) == ""  # no line of hers: no block


def test_sillytavern_parses_the_scene_into_her_messages_with_none_of_his_words_as_a_turn() -> None:
    """SillyTavern's own parseExampleIntoIndividual on the card's example: her message holds
    no ``Name:`` of anybody, the captain is never a speaker, and the Doctor's turn is his."""
    root = sillytavern_root()
    block = Block(EXEMPLARS, "x", 1, 500, items=[SCENE], line_ids=["act/x#2:a"])
    text, _, kind = mes_example(block, [])
    (parsed,) = parse_examples(root, text, "博士", "测绘员")
    assert kind == "scenes"
    assert [m["name"] for m in parsed] == ["example_assistant", "example_user"]
    hers, doctor = parsed[0]["content"], parsed[1]["content"]
    assert not re.search(r"^[^\s（(「]+[:：]", hers, re.M)  # no speaker's name opens a line
    assert "测绘员:" not in hers and "老船长:" not in hers
    assert f"（老船长说：「{CAPTAIN_WORDS}！」）" in hers  # told, not spoken as a turn
    assert doctor == "需要帮忙吗" and CAPTAIN_WORDS not in doctor


def test_the_old_shape_folds_his_line_into_her_message_under_sillytavern() -> None:
    """The fold the card shape avoids, shown by SillyTavern itself: a ``老船长:`` line and a
    second ``测绘员:`` line land inside her message."""
    root = sillytavern_root()
    old = f"<START>\n{{{{char}}}}: 对，就这样。\n老船长: {CAPTAIN_WORDS}\n{{{{char}}}}: 知道啦"
    ((msg,),) = parse_examples(root, old, "博士", "测绘员")
    assert "老船长: " + CAPTAIN_WORDS in msg["content"] and "测绘员: 知道啦" in msg["content"]


# -- names and the data roots ------------------------------------------------------------------

DUSK, DUSK2 = "char_512_aprot", "char_4025_aprot2"
AMIYA, AMIYA_GUARD = "char_002_amiya", "char_1001_amiya2"
FORMS = [
    Operator(DUSK, "暮落", "Shalem", "astr_chardict", alternate_ids=[DUSK2]),
    Operator(DUSK2, "暮落", "Shalem", "astr_chardict", base_id=DUSK, linked_by="same_name"),
    Operator(AMIYA, "阿米娅", "Amiya", "character_table", profession="CASTER",
             alternate_ids=[AMIYA_GUARD]),
    Operator(AMIYA_GUARD, "阿米娅", "Amiya", "char_patch_table", profession="WARRIOR",
             base_id=AMIYA, linked_by="char_patch_table"),
]  # fmt: skip


def write_forms_home(root: Path, *, amiya_speaks: bool = False) -> tuple[Path, Path]:
    """:data:`FORMS` over one stage of narration (and, with ``amiya_speaks``, one line of
    阿米娅's): (home, gamedata)."""
    home = root / "home"
    home.mkdir()
    deck = "activities/act_deck/st01"
    stage = Stage(deck, Source.AVG, f"{deck}.txt", "act_deck", "甲板", "ACTIVITY", "DK-1",
                  "行动前", "甲板", "风很大。", content_hash="d")  # fmt: skip
    lines = [line(deck, 1, "", "甲板上风很大。")]
    if amiya_speaks:
        lines.append(line(deck, 2, "阿米娅", "博士，风这么大，我们回舱里吧。"))
    write_store(home, operators=FORMS, stages=[(stage, len(lines))], lines={deck: lines})
    return home, write_gamedata(root / "gamedata")


@pytest.fixture
def forms_home(tmp_path: Path) -> tuple[Path, Path]:
    return write_forms_home(tmp_path)


def test_two_forms_of_one_name_export_two_cards_with_names_that_tell_them_apart(
    forms_home: tuple[Path, Path], tmp_path: Path
) -> None:
    home, gamedata = forms_home
    with Workspace(Settings(home=home, gamedata=gamedata, embedder="hash")) as ws:
        reports = ws.cards.export_cards([DUSK, DUSK2, AMIYA, AMIYA_GUARD], tmp_path / "out").cards
    names = [r.name for r in reports]
    assert names == ["暮落", "暮落（异格）", "阿米娅", "阿米娅（近卫）"]
    on_disk = [
        json.loads(Path(r.json).read_text(encoding="utf-8"))["data"]["name"] for r in reports
    ]
    assert on_disk == names and len(set(on_disk)) == 4
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == sorted(
        f"{n}.png" for n in names
    )
    for r in reports:  # nothing of hers anywhere: still a first message and a scenario
        data = json.loads(Path(r.json).read_text(encoding="utf-8"))["data"]
        assert data["first_mes"] and data["scenario"]


def test_export_all_leaves_out_an_operator_with_nothing_of_hers_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card of only a name and the setting is not one to play: ``--all`` leaves it out and
    lists it; named, she is written and the report says what her card lacks."""
    home, gamedata = write_forms_home(tmp_path, amiya_speaks=True)
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(gamedata))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["export", "card", "--all", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    done = json.loads(r.stdout)
    written = [c["name"] for c in done["cards"]]
    assert written == ["阿米娅", "阿米娅（近卫）"]  # her other form speaks with her lines
    assert sorted(x["name"] for x in done["left_out"]) == ["暮落", "暮落（异格）"]
    assert {x["why"] for x in done["left_out"]} == {NOTHING_OF_HERS}
    assert {p.stem for p in out.iterdir()} == {"阿米娅", "阿米娅（近卫）"}
    r = CliRunner().invoke(app, ["export", "card", "--all", "--out", str(out)])
    assert r.exit_code == 0 and "left out 2 operators" in r.output and "暮落（异格）" in r.output
    r = CliRunner().invoke(app, ["export", "card", DUSK, "--out", str(out), "--json"])
    (card,) = json.loads(r.stdout)["cards"]
    assert {"what": "everything of hers", "why": NOTHING_OF_HERS} in card["skipped"]
    assert (out / "暮落.png").exists()


def test_export_all_with_nothing_of_anyone_fails_naming_the_data(
    forms_home: tuple[Path, Path], tmp_path: Path
) -> None:
    home, gamedata = forms_home
    with (
        Workspace(Settings(home=home, gamedata=gamedata, embedder="hash")) as ws,
        pytest.raises(DataNotFoundError, match="nothing of any operator"),
    ):
        ws.cards.export_cards(None, tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.png"))


def test_export_without_the_game_tables_fails_with_exit_2_naming_the_variable(
    forms_home: tuple[Path, Path], tmp_path: Path
) -> None:
    """Through the real entry point (``python -m arklore``): its error handler prints one
    line and exits with the error's code."""
    home, _ = forms_home
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARKLORE_")}
    env["ARKLORE_IGNORE_CHECKOUT"] = "1"  # nor the data next to this checkout
    env |= {"ARKLORE_HOME": str(home), "ARKLORE_EMBEDDER": "hash"}
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "arklore", "export", "card", DUSK, "--out", str(out)],
        env=env, capture_output=True, text=True, encoding="utf-8", check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == EXIT_CONFIG == 2, done.stderr
    said = [ln for ln in (done.stdout + done.stderr).split("\n") if ln.strip()]
    assert len(said) == 1 and "ARKLORE_GAMEDATA" in said[0], said
    assert not out.exists()  # nothing written, nothing silently changed


def test_a_card_set_at_a_story_point_holds_nothing_from_later(tmp_path: Path) -> None:
    from support.service_world import S1, S2, S3, kb_workspace, make_kb

    home = make_kb(tmp_path / "home")
    with kb_workspace(home, gamedata=write_gamedata(tmp_path / "gamedata")) as ws:
        whole = json.dumps(ws.cards.card("阿米娅").card, ensure_ascii=False)
        early = ws.cards.card("阿米娅", until="T-1").card
    text = json.dumps(early, ensure_ascii=False)
    # the three invented stages come in release order (T-1, T-2, AT-1): at T-1, only the first
    assert S2 in whole and S3 in whole  # unset, her card cites the later stages
    assert S1 in text and S2 not in text and S3 not in text
    assert early["data"]["extensions"]["arklore"]["until"]["group"] == "test_1"
