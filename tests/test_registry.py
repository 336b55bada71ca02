"""The operator registry on fixture tables, and its counts on the real tables."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from arklore.core.errors import AmbiguousNameError, MalformedSourceError, UnknownNameError
from arklore.names.registry import Registry, build_registry

EXCEL = Path(__file__).parent / "fixtures" / "excel"
CHARDICT = EXCEL / "astr_chardict.json"


@pytest.fixture(scope="module")
def reg() -> Registry:
    return build_registry(EXCEL)


def test_character_table_name_wins_and_traps_tokens_are_excluded(reg: Registry) -> None:
    chen = reg.get("char_010_chen")
    assert (chen.name, chen.appellation, chen.name_source) == ("陈", "Ch'en", "character_table")
    assert (chen.nation_id, chen.group_id, chen.profession, chen.rarity) == (
        "lungmen",
        "lgd",
        "WARRIOR",
        6,
    )
    assert not any(op.char_id.startswith(("trap_", "token_")) for op in reg)


def test_operators_newer_than_character_table_are_present(reg: Registry) -> None:
    booked = reg.get("char_9002_booked")
    assert (booked.name, booked.name_source, booked.appellation) == (
        "试作者",
        "handbook_info",
        "Booked",
    )
    newop = reg.get("char_9001_newop")
    assert (newop.name, newop.name_source) == ("Newcomer", "skin_table")  # default skin's modelName


def test_chardict_comes_before_handbook_code_name() -> None:
    reg = build_registry(EXCEL, CHARDICT)
    op = reg.get("char_9003_dicted")
    assert (op.name, op.name_source) == ("字典名", "astr_chardict")
    assert reg.code_names["char_9003_dicted"] == "字典档案名"
    assert build_registry(EXCEL).get("char_9003_dicted").name == "字典档案名"


def test_alternate_forms_link_to_their_base(reg: Registry) -> None:
    assert reg.get("char_1013_chen2").base_id == "char_010_chen"
    assert reg.get("char_010_chen").alternate_ids == ["char_1013_chen2"]
    assert reg.get("char_1019_siege2").base_id == "char_112_siege"
    assert reg.family("char_1013_chen2") == ["char_010_chen", "char_1013_chen2"]
    assert reg.get("char_9001_newop").base_id is None


def test_patch_forms_link_to_the_default_character(reg: Registry) -> None:
    amiya2 = reg.get("char_1001_amiya2")
    assert (amiya2.name, amiya2.name_source, amiya2.base_id) == (
        "阿米娅",
        "char_patch_table",
        "char_002_amiya",
    )
    assert amiya2.nation_id == "rhodes" and amiya2.rarity == 5  # from mainPower, TIER_5


def test_by_name_matches_name_or_appellation_case_insensitively(reg: Registry) -> None:
    assert [op.char_id for op in reg.by_name("ch'EN")] == ["char_010_chen"]
    assert [op.char_id for op in reg.by_name("陈")] == ["char_010_chen"]
    assert reg.by_name("nobody") == []


def test_resolve_prefers_the_base_when_only_one_family_matches(reg: Registry) -> None:
    assert reg.resolve("推进之王").char_id == "char_112_siege"  # siege2's handbook code name
    assert reg.resolve("char_1019_siege2").char_id == "char_1019_siege2"
    assert reg.resolve(" Amiya ").char_id == "char_002_amiya"


def test_resolve_raises_unknown_and_ambiguous() -> None:
    reg = build_registry(EXCEL)
    with pytest.raises(UnknownNameError):
        reg.resolve("不存在")
    with pytest.raises(UnknownNameError):
        reg.get("char_000_none")
    reg.get("char_9002_booked").appellation = "Newcomer"  # now two unrelated operators share it
    reg._index()
    with pytest.raises(AmbiguousNameError) as err:
        reg.resolve("newcomer")
    assert err.value.candidates == ["char_9001_newop", "char_9002_booked"]


def test_factions_and_npcs(reg: Registry) -> None:
    assert reg.faction_of("char_010_chen") == {"nation": "炎-龙门", "group": "龙门近卫局"}
    assert reg.team_names["rhodes"] == "罗德岛"
    assert reg.npcs == {"npc_9001_test": "测试NPC"}
    assert "npc_9001_test" not in reg


def test_rows_round_trip_through_json(reg: Registry) -> None:
    data = orjson.loads(orjson.dumps(reg.to_dict()))
    back = Registry.from_dict(data)
    assert back.to_rows() == reg.to_rows() and len(back) == len(reg)
    assert back.resolve("ch'en").char_id == "char_010_chen"


def test_aliases_offer_appellations_and_code_names(reg: Registry) -> None:
    aliases = {(a.alias, a.char_id, a.source) for a in reg.aliases()}
    assert ("Ch'en", "char_010_chen", "appellation") in aliases
    assert ("推进之王", "char_1019_siege2", "registry") in aliases


def test_malformed_optional_chardict_is_a_warning_not_an_empty_registry(tmp_path: Path) -> None:
    bad = tmp_path / "chardict.json"
    bad.write_bytes(b"[")
    reg = build_registry(EXCEL, bad)
    assert len(reg) == len(build_registry(EXCEL)) > 0
    assert [w for w in reg.warnings if w.startswith("chardict.json skipped: not valid JSON")]


@pytest.mark.parametrize("table", ["character_table", "skin_table"])
@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_required_table_missing_or_unreadable_is_an_error_naming_it(
    tmp_path: Path, table: str, damage: str
) -> None:
    excel = tmp_path / "excel"
    shutil.copytree(EXCEL, excel)
    path = excel / f"{table}.json"
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:200])
    else:
        path.unlink()
    with pytest.raises(MalformedSourceError) as exc:
        build_registry(excel)
    assert f"{table}.json" in exc.value.one_line() and "registry needs this table" in exc.value.hint


def test_missing_optional_table_is_a_warning(tmp_path: Path) -> None:
    excel = tmp_path / "excel"
    shutil.copytree(EXCEL, excel)
    (excel / "handbook_team_table.json").unlink()
    reg = build_registry(excel)
    assert len(reg) > 0 and "handbook_team_table.json not found" in reg.warnings


@pytest.mark.realdata
def test_real_registry_has_new_operators_and_alternate_links(gamedata_root: Path) -> None:
    excel = gamedata_root / "zh_CN/gamedata/excel"
    reg = build_registry(excel)
    old = orjson.loads((excel / "character_table.json").read_bytes())
    assert len(reg) >= 300
    assert sum(1 for op in reg if op.char_id not in old) >= 100
    assert reg.get("char_1013_chen2").base_id == "char_010_chen"
    assert reg.get("char_1019_siege2").base_id == "char_112_siege"
    assert reg.get("char_1001_amiya2").base_id == "char_002_amiya"
    assert "char_1050_chen3" in reg.get("char_010_chen").alternate_ids
    assert reg.resolve("阿米娅").char_id == "char_002_amiya"
    assert not any(op.char_id.startswith(("trap_", "token_", "npc_")) for op in reg)


@pytest.mark.realdata
def test_real_chardict_names_operators_the_tables_only_know_in_english(
    gamedata_root: Path, astr_root: Path
) -> None:
    excel = gamedata_root / "zh_CN/gamedata/excel"
    reg = build_registry(excel, astr_root / "zh_CN/chardict.json")
    assert reg.get("char_1013_chen2").name == "假日威龙陈"
    assert sum(1 for op in reg if op.name_source == "skin_table") <= 20
