"""The raw AVG script reader: what is a line, how lines are numbered, branches, portraits."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from arklore.core.errors import MalformedSourceError
from arklore.core.model import DOCTOR, LINES_VERSION, Branch, Line, LineKind, Source, content_hash
from arklore.corpus.store import Store
from arklore.sources._commands import warning_kind
from arklore.sources.avg import iter_avg_files, parse_avg, read_avg_stage, stage_path_for

FIXTURES = Path(__file__).parent / "fixtures" / "story" / "avg"
FX_FILE = FIXTURES / "obt/main/level_fx_01_beg.txt"
SP = "obt/test/stage"


def kinds_texts(text: str) -> list[tuple[str, str, str]]:
    return [(line.kind.value, line.speaker, line.text) for line in parse_avg(text, SP)]


@pytest.fixture(scope="module")
def fx_stage():
    return read_avg_stage(FIXTURES, FX_FILE)


# --- files and stage metadata -------------------------------------------------------------


def test_iter_skips_uc_info_and_non_script_files() -> None:
    files = list(iter_avg_files(FIXTURES))
    assert files == [FX_FILE]


def test_stage_path_is_posix_relative_without_extension() -> None:
    assert stage_path_for(FIXTURES, FX_FILE) == "obt/main/level_fx_01_beg"


def test_read_stage_records_source_path_and_hash_of_bytes(fx_stage) -> None:
    """The hash is of the bytes and of how lines are built: a new LINES_VERSION re-reads."""
    assert fx_stage.source is Source.AVG
    assert fx_stage.source_path == "obt/main/level_fx_01_beg.txt"
    version = f"lines:{LINES_VERSION}\n".encode()
    assert fx_stage.content_hash == hashlib.sha1(version + FX_FILE.read_bytes()).hexdigest()
    assert fx_stage.story_name is None and fx_stage.event_id is None


# --- what is a line ---------------------------------------------------------------------------


def test_each_kind_of_text_element_is_a_line(fx_stage) -> None:
    assert [line.kind for line in fx_stage.lines] == [
        LineKind.DIALOGUE,
        LineKind.DIALOGUE,
        LineKind.DIALOGUE,
        LineKind.NARRATION,
        LineKind.SUBTITLE,
        LineKind.STICKER,
        LineKind.MULTILINE,
        LineKind.DIALOGUE,
        LineKind.CHOICE,
        LineKind.DIALOGUE,
        LineKind.DIALOGUE,
        LineKind.DIALOGUE,
    ]


def test_commands_are_not_counted_in_line_numbers(fx_stage) -> None:
    assert [line.line_no for line in fx_stage.lines] == list(range(1, 13))
    assert fx_stage.lines[3].text == "雾气弥漫在港口。"  # after HEADER, Character, delay, blank


def test_line_id_pins_stage_position_and_content(fx_stage) -> None:
    line = fx_stage.lines[0]
    digest = hashlib.sha1("贝塔\n早上好，Dr.{@nickname}。".encode()).hexdigest()[:8]
    assert line.line_id == f"obt/main/level_fx_01_beg#1:{digest}"
    assert content_hash(line.speaker, line.text) == digest


def test_narration_is_a_bare_line_without_speaker() -> None:
    [line] = parse_avg("风吹过荒原。", SP)
    assert (line.kind, line.speaker, line.speaker_raw) == (LineKind.NARRATION, "", None)


def test_name_tag_with_extra_attributes_is_dialogue() -> None:
    text = '[name="欧米伽", avatarId="avg_npc_1", isAvatarRight="FALSE"]出发。'
    assert kinds_texts(text) == [("dialogue", "欧米伽", "出发。")]


def test_blank_name_and_nameless_attribute_tag_are_narration() -> None:
    text = '[name=""]  港口 第2天\n[isAvatarRight="TRUE"]警报解除。'
    assert kinds_texts(text) == [("narration", "", "港口 第2天"), ("narration", "", "警报解除。")]


def test_subtitle_and_sticker_without_text_are_commands() -> None:
    text = '[Subtitle(text="")]\n[subtitle]\n[Sticker(id="a")]\n[stickerclear]'
    assert parse_avg(text, SP) == []


def test_other_commands_are_not_lines_and_their_trailing_text_is_dropped() -> None:
    text = (
        '[HEADER(key="t", is_skippable=true)] 标题\n'
        "[Blocker(a=1, fadetime=1, block=true)]d\n"
        '[charslot(slot="m", name="x")]。\n'
        "[Div] Part.02\n"
        '[Tutorial(dialogHead="$avatar_a")]部署干员。\n'
        "[]\n[[character(fadetime=0.3)]]\n"
    )
    assert parse_avg(text, SP) == []


def test_narration_like_commands_keep_their_text() -> None:
    text = '[Narration]夜深了。\n[Title]卷宗一\n[Dialog(style="ask")]你是谁？\n[Narration]'
    assert kinds_texts(text) == [
        ("narration", "", "夜深了。"),
        ("narration", "", "卷宗一"),
        ("narration", "", "你是谁？"),
    ]


def test_command_names_and_attribute_keys_are_case_insensitive() -> None:
    text = (
        '[NAME="欧米伽"]一\n[MultiLine(Name="欧米伽")]二\n[SUBTITLE(TEXT="三")]\n'
        '[decision(OPTIONS="四", VALUES="1")]\n[PREDICATE(References="1")]'
    )
    assert [k for k, _, _ in kinds_texts(text)] == [
        "dialogue",
        "multiline",
        "subtitle",
        "choice",
    ]


def test_empty_lines_comments_bom_and_crlf_are_not_lines() -> None:
    text = '\ufeff[name="欧米伽"]一\r\n\r\n   \r\n// 注释\r\n二\r\n'
    assert kinds_texts(text) == [("dialogue", "欧米伽", "一"), ("narration", "", "二")]


def test_backslash_continues_a_tag_on_the_next_line() -> None:
    text = '[Subtitle(x=1, \\\n   text="续行")]\n路标\\后面'
    assert kinds_texts(text) == [("subtitle", "", "续行"), ("narration", "", "路标\\后面")]


def test_attribute_values_keep_separators_escaped_quotes_and_backslash_n() -> None:
    text = (
        '[Sticker(id = "s", text = "甲;乙,丙=丁]\\"戊\\"\\n己", x=1)]\n'
        "[Subtitle(text=unquoted, x=2)]"
    )
    assert [line.text for line in parse_avg(text, SP)] == ['甲;乙,丙=丁]"戊"\\n己', "unquoted"]


# --- normalization --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "raw"),
    [
        ('[name="“欧米伽”"]', "“欧米伽”"),
        ('[name="「欧米伽」"]', "「欧米伽」"),
        ('[name="\\"欧米伽\\""]', '"欧米伽"'),
        ('[name=" 欧米伽\u3000"]', " 欧米伽\u3000"),
    ],
)
def test_speaker_quotes_and_spaces_are_stripped(tag: str, raw: str) -> None:
    [line] = parse_avg(f"{tag}话。", SP)
    assert line.speaker == "欧米伽"
    assert line.speaker_raw == raw


@pytest.mark.parametrize("raw", ["欧米伽?", "欧米伽？"])
def test_trailing_question_mark_marks_speaker_uncertain(raw: str) -> None:
    [line] = parse_avg(f'[name="{raw}"]话。', SP)
    assert (line.speaker, line.uncertain, line.speaker_raw) == ("欧米伽", True, raw)


def test_text_is_trimmed_of_full_width_spaces_inside_kept(fx_stage) -> None:
    assert fx_stage.lines[1].text == "你好。"
    [line] = parse_avg('[name="甲"]\u3000 一\u3000二 \u3000', SP)
    assert line.text == "一\u3000二"


def test_nickname_token_is_kept_and_marks_addressing_the_doctor(fx_stage) -> None:
    assert fx_stage.lines[0].text == "早上好，Dr.{@nickname}。"
    assert fx_stage.lines[0].addresses_doctor
    assert not fx_stage.lines[1].addresses_doctor


# --- choices and branches ------------------------------------------------------------------------


def test_decision_is_one_choice_line_spoken_by_the_doctor(fx_stage) -> None:
    choice = fx_stage.lines[8]
    assert choice.kind is LineKind.CHOICE
    assert choice.speaker == DOCTOR
    assert choice.text == "向左走。;向右走。;原地等待。"
    assert choice.options == ("向左走。", "向右走。", "原地等待。")
    assert choice.option_values == ("1", "2", "3")


def test_predicate_blocks_set_the_branch_and_the_closing_block_returns_to_main(fx_stage) -> None:
    assert [line.branch for line in fx_stage.lines[8:]] == [
        None,
        Branch(9, ("1", "2")),  # shared block of options 1 and 2
        Branch(9, ("3",)),
        None,  # references="1;2;3" covers every option
    ]


def test_single_option_decision_with_its_predicate_stays_on_main_path() -> None:
    text = '[Decision(options="嗯。", values="1")]\n[Predicate(references="1")]\n[name="甲"]好。'
    assert [line.branch for line in parse_avg(text, SP)] == [None, None]


def test_nested_decision_innermost_wins_then_outer_resumes() -> None:
    text = "\n".join(
        [
            '[Decision(options="甲;乙", values="1;2")]',
            '[Predicate(references="1")]',
            "一",
            '[Decision(options="丙;丁", values="3;4")]',
            '[Predicate(references="3")]',
            "三",
            '[Predicate(references="4")]',
            "四",
            '[Predicate(references="2")]',
            "二",
            '[Predicate(references="1;2")]',
            "合",
        ]
    )
    branches = {line.text: line.branch for line in parse_avg(text, SP)}
    assert branches == {
        "甲;乙": None,
        "一": Branch(1, ("1",)),
        "丙;丁": Branch(1, ("1",)),
        "三": Branch(3, ("3",)),
        "四": Branch(3, ("4",)),
        "二": Branch(1, ("2",)),
        "合": None,
    }


def test_predicate_naming_nested_values_can_close_both_decisions() -> None:
    text = "\n".join(
        [
            '[Decision(options="甲;乙", values="1;2")]',
            '[Predicate(references="1")]',
            '[Decision(options="丙;丁", values="3;4")]',
            '[Predicate(references="3;4")]',
            "一",
            '[Predicate(references="2")]',
            "二",
            '[Predicate(references="2;3;4")]',
            "合",
        ]
    )
    branches = {line.text: line.branch for line in parse_avg(text, SP)}
    assert branches["一"] == Branch(1, ("1",))
    assert branches["二"] == Branch(1, ("2",))
    assert branches["合"] is None


def test_bare_predicate_ends_the_options() -> None:
    text = (
        '[Decision(options="甲;乙", values="1;2")]\n[Predicate(references="1")]\n一\n'
        '[Predicate(references="2")]\n二\n[Predicate]\n合'
    )
    assert [line.branch for line in parse_avg(text, SP)][-1] is None


# --- portraits -------------------------------------------------------------------------------------


def test_figure_art_follows_character_focus(fx_stage) -> None:
    assert fx_stage.lines[0].figure_art == "char_901_beta_1"  # focus=2 -> name2
    assert fx_stage.lines[1].figure_art == "char_900_alpha_1"  # focus=1 -> name


def test_figure_art_follows_charslot_focus_and_is_never_the_speaker(fx_stage) -> None:
    delta, gamma = "avg_903_delta_1#2$1", "avg_902_gamma_1#1$1"
    assert fx_stage.lines[7].figure_art == delta
    assert fx_stage.lines[10].figure_art == gamma
    assert fx_stage.lines[10].speaker == "伽马"


def test_figure_art_only_on_named_lines_and_cleared_by_dialog() -> None:
    text = '[Character(name="char_1")]\n旁白\n[name="甲"]一\n[Dialog]\n[name="甲"]二'
    assert [line.figure_art for line in parse_avg(text, SP)] == [None, "char_1", None]


# --- malformed input -----------------------------------------------------------------------------


def test_unterminated_name_bracket_raises_with_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "obt" / "bad.txt"
    bad.parent.mkdir()
    bad.write_text('[name="甲]  话\n', encoding="utf-8")
    with pytest.raises(MalformedSourceError) as err:
        read_avg_stage(tmp_path, bad)
    assert err.value.path == "obt/bad.txt"
    assert "line 1" in err.value.reason


def test_name_tag_missing_its_bracket_raises() -> None:
    with pytest.raises(MalformedSourceError):
        parse_avg('[name="甲"  话', SP)


def test_command_missing_only_its_bracket_is_tolerated() -> None:
    assert parse_avg('[spellsticker(id="s", block=true)\n一', SP)[0].text == "一"


def test_non_utf8_bytes_raise_with_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "gbk.txt"
    bad.write_bytes('[name="甲"]你好'.encode("gbk"))
    with pytest.raises(MalformedSourceError, match="not UTF-8") as err:
        read_avg_stage(tmp_path, bad)
    assert err.value.path == "gbk.txt"


# --- the real data -------------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_scripts_all_parse_with_expected_volume(real_store_path: Path) -> None:
    """On the shared ingest (every raw script read once for the suite): no file failed."""
    with Store(real_store_path) as store:
        c = store.conn
        failures = c.execute("SELECT path, reason FROM ingest_errors WHERE source = 'avg'")
        assert dict(failures.fetchall()) == {}
        stages, lines = c.execute(
            "SELECT count(*), sum(line_count) FROM stages WHERE source = 'avg'"
        ).fetchone()
        speakers = c.execute(
            "SELECT count(DISTINCT speaker) FROM lines WHERE source = 'avg' AND speaker != ''"
        ).fetchone()[0]
    assert stages >= 3600
    assert lines >= 400_000
    assert speakers >= 6000


# --- parse warnings: malformed commands are reported, never turned into lines or branches -------


def parsed(text: str) -> tuple[list[Line], list[str]]:
    warnings: list[str] = []
    return parse_avg(text, SP, warnings=warnings), warnings


def test_unreadable_tag_is_a_warning_and_dropped_with_its_text() -> None:
    lines, warnings = parsed('[name="甲"]一\n[Dialog(head="x", ]]]] [[[ 乱码\n[name="甲"]二')
    assert [(ln.line_no, ln.text) for ln in lines] == [(1, "一"), (2, "二")]
    assert len(warnings) == 1 and warnings[0].startswith("line 2: ")


def test_attribute_tag_that_names_nothing_is_a_warning() -> None:
    # [Delay=2] is neither a command call nor a name tag; text after such a tag stays narration
    lines, warnings = parsed("[Delay=2]\n[fadetime=1]旁白")
    assert [(ln.kind.value, ln.text) for ln in lines] == [("narration", "旁白")]
    assert [w.split(":")[0] for w in warnings] == ["line 1", "line 2"]


def test_known_junk_tags_are_warnings_too() -> None:
    lines, warnings = parsed("[]\n[[character(fadetime=0.3)]]\n一")
    assert [ln.text for ln in lines] == ["一"]
    assert [w.split(":")[0] for w in warnings] == ["line 1", "line 2"]


def test_well_formed_script_has_no_warnings(fx_stage) -> None:
    assert fx_stage.parse_warnings == []


def test_decision_with_fewer_values_than_options() -> None:
    """The choice line keeps its text; options with a value open branches, the others none."""
    lines, warnings = parsed(
        '[Decision(options="甲;乙", values="1")]\n'
        '[Predicate(references="1")]\n一\n[Predicate(references="2")]\n二'
    )
    choice = lines[0]
    assert (choice.kind, choice.text) == (LineKind.CHOICE, "甲;乙")
    assert choice.options == ("甲", "乙") and choice.option_values == ("1",)
    assert [ln.branch for ln in lines[1:]] == [None, None]  # 1 closes it; 2 is offered by none
    assert [w.split(":")[0] for w in warnings] == ["line 1", "line 4"]
    assert "2 options" in warnings[0] and "1 value" in warnings[0]


def test_decision_with_more_values_than_options_opens_only_the_options() -> None:
    lines, warnings = parsed(
        '[Decision(options="嗯。", values="1;2;3")]\n'
        '[Predicate(references="1")]\n一\n[Predicate(references="2")]\n二'
    )
    assert [ln.branch for ln in lines] == [None, None, None]
    assert len(warnings) == 2 and "1 option" in warnings[0] and "3 values" in warnings[0]


def test_predicate_naming_no_option_gets_no_invented_branch() -> None:
    text = "\n".join(
        [
            '[Decision(options="甲;乙", values="1;2")]',
            '[Predicate(references="1")]',
            "一",
            '[Predicate(references="9")]',
            "九",
            '[Predicate(references="2")]',
            "二",
            '[Predicate(references="1;2")]',
            "合",
        ]
    )
    lines, warnings = parsed(text)
    branches = {ln.text: ln.branch for ln in lines}
    assert branches == {
        "甲;乙": None,
        "一": Branch(1, ("1",)),
        "九": None,  # today: Branch(1, ("9",)), a branch no option opens
        "二": Branch(1, ("2",)),
        "合": None,
    }
    assert len(warnings) == 1 and warnings[0].startswith("line 4: ") and "9" in warnings[0]


def test_predicate_naming_an_option_and_a_missing_one_keeps_the_real_option() -> None:
    lines, warnings = parsed(
        '[Decision(options="甲;乙", values="1;2")]\n[Predicate(references="1;9")]\n一'
    )
    assert lines[1].branch == Branch(1, ("1",))
    assert len(warnings) == 1 and "9" in warnings[0]


def test_predicate_before_any_decision_is_a_warning() -> None:
    lines, warnings = parsed('[Predicate(references="1")]\n一')
    assert lines[0].branch is None and len(warnings) == 1


def test_single_option_decision_inside_a_block_does_not_end_the_outer_choice() -> None:
    """A one-option Decision reusing value 1 inside option 1's block (a pattern of the real
    scripts): the next Predicate naming option 2 is the outer Decision's, not a warning."""
    text = "\n".join(
        [
            '[Decision(options="甲;乙", values="1;2")]',
            '[Predicate(references="1")]',
            '[Decision(options="嗯。", values="1")]',
            '[Predicate(references="1")]',
            "一",
            '[Predicate(references="2")]',
            "二",
            '[Predicate(references="1;2")]',
            "合",
        ]
    )
    lines, warnings = parsed(text)
    branches = {ln.text: ln.branch for ln in lines}
    # (the one-option Decision still ends the outer one for the lines of its own block)
    assert branches["二"] == Branch(1, ("2",))  # today: Branch(3, ("2",)), which 嗯。 never offers
    assert branches["合"] is None
    assert warnings == []


def test_numbered_decision_options_are_read() -> None:
    """``Decision(option1=..., value1=..., option2=...)`` (sandbox scripts) is the same choice."""
    lines, warnings = parsed(
        '[Decision(option1="甲", value1="1.1", option2="乙", value2="1.2")]\n'
        '[Predicate(references="1.2")]\n二\n[Predicate(references="1.1;1.2")]\n合'
    )
    choice = lines[0]
    assert (choice.text, choice.options, choice.option_values) == (
        "甲;乙",
        ("甲", "乙"),
        ("1.1", "1.2"),
    )
    assert [ln.branch for ln in lines[1:]] == [Branch(1, ("1.2",)), None]
    assert warnings == []


def test_read_stage_carries_the_warnings(tmp_path: Path) -> None:
    f = tmp_path / "obt" / "w.txt"
    f.parent.mkdir()
    f.write_text('一\n[Decision(options="甲;乙", values="1")]\n', encoding="utf-8")
    stage = read_avg_stage(tmp_path, f)
    assert len(stage.lines) == 2
    assert len(stage.parse_warnings) == 1 and stage.parse_warnings[0].startswith("line 2: ")


# --- PopupDialog: speech in battle and tutorials, the speaker known by an avatar id -------------


def test_popup_dialog_text_is_a_dialogue_line_with_the_avatar_id_as_uncertain_speaker() -> None:
    text = (
        '[name="甲"]一\n'
        '[Character(name="char_1")]\n'
        '[PopupDialog(dialogHead="$avatar_beta", dialogX="$x")]小心，前面有敌人。\n'
        '[popupdialog(dialogHead="$avatar_beta")] \\\n'
        "  第二句。\n"
        '[PopupDialog(dialogHead="$avatar_beta")]\n'
        '[name="甲"]二'
    )
    lines = parse_avg(text, SP)
    assert [(ln.line_no, ln.kind.value, ln.text) for ln in lines] == [
        (1, "dialogue", "一"),
        (2, "dialogue", "小心，前面有敌人。"),
        (3, "dialogue", "第二句。"),
        (4, "dialogue", "二"),
    ]
    popup = lines[1]
    assert (popup.speaker, popup.speaker_raw, popup.uncertain) == (
        "$avatar_beta",
        "$avatar_beta",
        True,
    )
    assert popup.figure_art is None  # the avatar is no portrait of the Character commands
    assert lines[3].figure_art == "char_1" and not lines[3].uncertain


def test_popup_dialog_without_avatar_is_narration() -> None:
    lines = parse_avg("[PopupDialog(focusX=1, \\\n focusY=2)]点击这里部署。", SP)
    assert [(ln.kind.value, ln.speaker, ln.text) for ln in lines] == [
        ("narration", "", "点击这里部署。")
    ]


def test_decision_without_options_keeps_its_line_and_opens_nothing() -> None:
    lines, warnings = parsed('[Decision(values="1;2")]\n[Predicate(references="2")]\n二')
    assert [(ln.kind.value, ln.text, ln.branch) for ln in lines] == [
        ("choice", "", None),
        ("narration", "二", None),
    ]
    assert [warning_kind(w) for w in warnings] == [
        "decision_no_options",
        "predicate_unknown_option",
    ]


def test_command_missing_its_bracket_is_read_with_a_warning() -> None:
    lines, warnings = parsed('[spellsticker(id="s", block=true)\n一')
    assert [ln.text for ln in lines] == ["一"]
    assert [warning_kind(w) for w in warnings] == ["tag_not_closed"]
