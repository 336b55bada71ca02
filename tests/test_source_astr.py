"""The ASTR JSON reader, and that it agrees with the raw reader on the same stage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arklore.core.errors import MalformedSourceError
from arklore.core.model import DOCTOR, Branch, LineKind, Source
from arklore.corpus.store import Store
from arklore.sources import avg
from arklore.sources.astr import iter_astr_files, parse_astr, read_astr_stage, stage_path_for

FIXTURES = Path(__file__).parent / "fixtures" / "story"
ASTR = FIXTURES / "astr"
FX_FILE = ASTR / "obt/main/level_fx_01_beg.json"
SP = "obt/test/stage"


def doc(*elements: dict[str, Any]) -> dict[str, Any]:
    story = [{"id": i, **e} for i, e in enumerate(elements)]
    return {"eventid": "e", "storyList": story}


def el(prop: str, figure: str | None = None, **attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"prop": prop, "attributes": attrs}
    if figure:
        out["figure_art"] = figure
    return out


def test_iter_and_stage_path_match_the_raw_script_key() -> None:
    assert list(iter_astr_files(ASTR)) == [FX_FILE]
    assert stage_path_for(ASTR, FX_FILE) == "obt/main/level_fx_01_beg"


def test_stage_path_is_lower_cased_but_source_path_keeps_case(tmp_path: Path) -> None:
    file = tmp_path / "obt/Roguelike/RO1/level_x.json"
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps(doc()), encoding="utf-8")
    stage = read_astr_stage(tmp_path, file)
    assert stage.stage_path == "obt/roguelike/ro1/level_x"
    assert stage.source_path == "obt/Roguelike/RO1/level_x.json"


def test_header_fills_the_stage_metadata() -> None:
    stage = read_astr_stage(ASTR, FX_FILE)
    assert stage.source is Source.ASTR
    assert (stage.event_id, stage.event_name, stage.entry_type) == ("main_fx", "雾港", "MAINLINE")
    assert (stage.story_code, stage.avg_tag, stage.story_name) == ("FX-1", "行动前", "雾港试炼")
    assert stage.story_info == "一段虚构的简介。"
    assert len(stage.content_hash) == 40


def test_same_stage_in_both_formats_yields_identical_lines() -> None:
    raw = avg.read_avg_stage(FIXTURES / "avg", FIXTURES / "avg/obt/main/level_fx_01_beg.txt")
    parsed = read_astr_stage(ASTR, FX_FILE)
    assert raw.stage_path == parsed.stage_path
    assert raw.lines == parsed.lines
    assert [line.line_id for line in raw.lines] == [line.line_id for line in parsed.lines]


def test_prop_case_varies_and_name_without_name_is_narration() -> None:
    lines = parse_astr(
        doc(
            el("Name", content="  一", name="甲"),
            el("name", content="旁白"),
            el("DIALOG"),
            el("MultiLine", content="二", name="乙"),
            el("SubTitle", text="三"),
            el("sticker", text="四", id="s"),
            el("Sticker", id="s"),
        ),
        SP,
    )
    assert [(x.kind, x.speaker, x.text) for x in lines] == [
        (LineKind.DIALOGUE, "甲", "一"),
        (LineKind.NARRATION, "", "旁白"),
        (LineKind.MULTILINE, "乙", "二"),
        (LineKind.SUBTITLE, "", "三"),
        (LineKind.STICKER, "", "四"),
    ]


def test_decision_and_predicates_give_choice_and_branches() -> None:
    lines = parse_astr(
        doc(
            {**el("Decision", options="甲;乙;丙", values="1;2;3"), "targetLine": {}},
            {**el("Predicate", references="1;2"), "endOfOpt": False},
            el("name", content="一二", name="丁"),
            {**el("Predicate", references="3"), "endOfOpt": False},
            el("name", content="三", name="丁"),
            {**el("Predicate", references="1;2;3"), "endOfOpt": True},
            el("name", content="合", name="丁"),
        ),
        SP,
    )
    assert lines[0].speaker == DOCTOR and lines[0].options == ("甲", "乙", "丙")
    assert [x.branch for x in lines] == [None, Branch(1, ("1", "2")), Branch(1, ("3",)), None]


def test_figure_art_is_taken_from_the_element_on_named_lines() -> None:
    lines = parse_astr(doc(el("name", "char_9", content="一", name="甲")), SP)
    assert lines[0].figure_art == "char_9"


def test_numeric_attribute_values_read_as_text() -> None:
    lines = parse_astr(doc(el("Decision", options="好", values=1.0)), SP)
    assert lines[0].option_values == ("1",)


def test_element_id_is_never_used_for_numbering() -> None:
    story = doc(el("name", content="一"), el("Delay", time=1.0), el("name", content="二"))
    for item in story["storyList"]:
        item["id"] = 99
    assert [x.line_no for x in parse_astr(story, SP)] == [1, 2]


# --- malformed input ---------------------------------------------------------------------------


def test_malformed_choice_commands_are_warnings_naming_the_element() -> None:
    """The same checks as the raw reader's: the choice line stays, no branch is invented."""
    warnings: list[str] = []
    lines = parse_astr(
        doc(
            el("Decision", options="甲;乙", values="1"),
            el("Predicate", references="1"),
            el("name", content="一", name="丁"),
            el("Predicate", references="9"),
            el("name", content="九", name="丁"),
        ),
        SP,
        warnings=warnings,
    )
    assert [(x.text, x.branch) for x in lines] == [("甲;乙", None), ("一", None), ("九", None)]
    assert [w.split(":")[0] for w in warnings] == ["storyList[0]", "storyList[3]"]


def test_both_readers_warn_alike_on_the_same_stage() -> None:
    raw = (
        '[Decision(options="甲;乙", values="1;2")]\n[Predicate(references="1")]\n一\n'
        '[Predicate(references="2;7")]\n二\n[Predicate(references="1;2")]\n合'
    )
    avg_warnings: list[str] = []
    astr_warnings: list[str] = []
    avg_lines = avg.parse_avg(raw, SP, warnings=avg_warnings)
    astr_lines = parse_astr(
        doc(
            el("Decision", options="甲;乙", values="1;2"),
            el("Predicate", references="1"),
            el("name", content="一"),
            el("Predicate", references="2;7"),
            el("name", content="二"),
            el("Predicate", references="1;2"),
            el("name", content="合"),
        ),
        SP,
        warnings=astr_warnings,
    )
    assert [x.branch for x in avg_lines] == [x.branch for x in astr_lines]
    assert astr_lines[2].branch == Branch(1, ("2",))
    assert [w.split(": ", 1)[1] for w in avg_warnings] == [
        w.split(": ", 1)[1] for w in astr_warnings
    ]
    assert len(astr_warnings) == 1 and "7" in astr_warnings[0]


def test_read_stage_carries_the_warnings(tmp_path: Path) -> None:
    f = tmp_path / "w.json"
    f.write_text(json.dumps(doc(el("Predicate", references="1"))), encoding="utf-8")
    assert read_astr_stage(tmp_path, f).parse_warnings == [
        "storyList[0]: Predicate references 1 before any Decision: no branch"
    ]
    assert read_astr_stage(ASTR, FX_FILE).parse_warnings == []


def write(tmp_path: Path, data: bytes) -> Path:
    file = tmp_path / "obt" / "bad.json"
    file.parent.mkdir(exist_ok=True)
    file.write_bytes(data)
    return file


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"storyList": [', "bad JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"eventid": "x"}', "storyList"),
        (b'{"storyList": [{"id": 0}]}', "no prop"),
        (b'{"storyList": [{"prop": "name", "attributes": []}]}', "attributes"),
        ('{"storyList": [], "storyName": "你好"}'.encode("gbk"), "not UTF-8"),
    ],
)
def test_bad_files_raise_with_path_and_reason(tmp_path: Path, data: bytes, reason: str) -> None:
    file = write(tmp_path, data)
    with pytest.raises(MalformedSourceError, match=reason) as err:
        read_astr_stage(tmp_path, file)
    assert err.value.path == "obt/bad.json"


def test_parse_astr_rejects_wrong_shape() -> None:
    with pytest.raises(MalformedSourceError):
        parse_astr({"storyList": "nope"}, SP)


@pytest.mark.realdata
def test_real_astr_files_all_parse(real_store_path: Path) -> None:
    """On the shared ingest (every ASTR file read once for the suite): no file failed."""
    with Store(real_store_path) as store:
        c = store.conn
        failures = c.execute("SELECT path, reason FROM ingest_errors WHERE source = 'astr'")
        assert dict(failures.fetchall()) == {}
        count = c.execute("SELECT count(*) FROM stages WHERE source = 'astr'").fetchone()[0]
    assert count >= 1900


def test_popup_dialog_element_gives_the_same_line_as_the_raw_script() -> None:
    """ASTR holds no PopupDialog today; one in its shape of a text command (the text in
    ``attributes.content``, as for ``multiline``) is read as the raw script's popup line."""
    raw = avg.parse_avg('一\n[PopupDialog(dialogHead="$avatar_beta")]小心。\n二', SP)
    story = doc(
        el("name", content="一"),
        el("PopupDialog", dialogHead="$avatar_beta", content="小心。"),
        el("name", content="二"),
    )
    assert parse_astr(story, SP) == raw
    assert [(x.line_no, x.speaker, x.uncertain) for x in raw] == [
        (1, "", False),
        (2, "$avatar_beta", True),
        (3, "", False),
    ]


SCENES_RAW = """[Blocker(a=1, r=0, g=0, b=0, fadetime=1, block=true)]
[Background(image="bg_street")]
[Blocker(a=0, fadetime=1, block=true)]
[name="甲"]走吧。
[Background(image="bg_street", x=40)]
[Blocker(a=1, r=1, g=1, b=1, fadetime=0.1)]
[Image(image="cg_flash")]
[name="乙"]好。
[Blocker(a=1, r=0, g=0, b=0, fadetime=2, block=true)]
[Background]
[Background(image="bg_room")]
[Blocker(a=0, fadetime=2, block=true)]
到了。
[Blocker(a=1, fadetime=1)]
[Blocker(a=0, fadetime=1)]
[name="甲"]天亮了。
"""


def test_a_new_background_or_a_fade_to_black_starts_a_scene_in_both_readers() -> None:
    """The first background is the stage's first scene; the same background moved, a white
    flash or a CG is no cut; a fade to black and a new background with no line between them
    are one cut; a fade to black on the same background is one too (time has passed)."""
    raw = avg.parse_avg(SCENES_RAW, SP)
    assert [(x.text, x.scene) for x in raw] == [
        ("走吧。", 0), ("好。", 0), ("到了。", 1), ("天亮了。", 2),
    ]  # fmt: skip
    story = doc(
        el("Blocker", a=1.0, r=0.0, g=0.0, b=0.0, fadetime=1.0),
        el("Background", image="bg_street"),
        el("name", content="走吧。", name="甲"),
        el("Background", image="bg_street", x=40.0),
        el("Blocker", a=1.0, r=1.0, g=1.0, b=1.0),
        el("Image", image="cg_flash"),
        el("name", content="好。", name="乙"),
        el("Blocker", a=1.0, r=0.0, g=0.0, b=0.0),
        el("Background"),
        el("Background", image="bg_room"),
        el("Blocker", a=0.0),
        el("name", content="到了。"),
        el("Blocker", a=1.0),
        el("Blocker", a=0.0),
        el("name", content="天亮了。", name="甲"),
    )
    assert parse_astr(story, SP) == raw
