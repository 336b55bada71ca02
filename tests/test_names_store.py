"""The alias table in the store: registry + portrait statistics + user file, speakers resolved."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.tree_world import EXCEL, STORY, make_workspace, write_tree

from arklore.names.aliases import load_user_aliases
from arklore.names.build import load_alias_table, portrait_stats, speaker_ids, store_matcher
from arklore.names.portraits import MIN_LINES
from arklore.workspace import open_store

FIXTURE_EXCEL = Path(__file__).parent / "fixtures" / "excel"


def _stage(speaker: str, portrait: str, n: int, other: str | None = None) -> str:
    rows = []
    for i in range(n):
        shown = other if other and i % 4 == 0 else portrait
        rows.append(f'[Character(name="{shown}")]\n[name="{speaker}"]  第{i}句话。\n')
    return "".join(rows)


def _conversation(a: tuple[str, str], b: tuple[str, str], n: int) -> str:
    """``n`` exchanges of two speakers, each with the portrait given on screen."""
    return "".join(
        f'[Character(name="{art}")]\n[name="{who}"]  第{i}句话。\n'
        for i in range(n)
        for who, art in (a, b)
    )


@pytest.fixture
def store(tmp_path: Path):
    gamedata, astr = write_tree(tmp_path / "data")
    for f in FIXTURE_EXCEL.glob("*.json"):
        shutil.copy(f, gamedata / EXCEL / f.name)
    story = gamedata / STORY / "obt/main"
    # a real name whose portraits are mostly the siege alternate form's (75%)
    (story / "level_t_02.txt").write_text(
        _stage("维多利亚之女", "avg_1019_siege2_1#1$1", MIN_LINES + 10, "char_002_amiya_1#1"),
        encoding="utf-8",
    )
    # too few lines to count
    (story / "level_t_03.txt").write_text(
        _stage("路人甲", "char_002_amiya_1#2", MIN_LINES - 5), encoding="utf-8"
    )
    # a descriptive label: resolves the speaker, never becomes an alias
    (story / "level_t_04.txt").write_text(
        _stage("神秘的女性", "avg_010_chen_1#3", MIN_LINES + 5), encoding="utf-8"
    )
    # popup speech names its speaker by an avatar id only
    (story / "level_t_05.txt").write_text(
        '[PopupDialog(dialogHead="$avatar_chen2")]小心。\n'
        '[PopupDialog(dialogHead="$avatar_chen2")]跟上。\n'
        '[PopupDialog(dialogHead="$avatar_npc_77")]有人吗？\n',
        encoding="utf-8",
    )
    # somebody else in her scenes: talks with 陈 while her portrait is all the screen shows
    (story / "level_t_06.txt").write_text(
        _conversation(("守望者", "avg_010_chen_1#1"), ("陈", "avg_010_chen_1#2"), MIN_LINES + 5),
        encoding="utf-8",
    )
    # her real name, talking with her father, whose label is her name but not her portrait
    (story / "level_t_07.txt").write_text(
        _conversation(("陈晖洁", "avg_010_chen_1#1"), ("陈", "avg_npc_034#1"), MIN_LINES + 5),
        encoding="utf-8",
    )
    # old NPC art that shares her number: one picture shown for two other people and a
    # descriptive label, never with her name
    (story / "level_t_08.txt").write_text(
        "".join(
            _stage(who, "avg_010_wizard_1#1", MIN_LINES + 5)
            for who in ("多纳", "科勒", "整合运动术师")
        ),
        encoding="utf-8",
    )
    # a person's own picture under her number, before she became an operator: one person
    (story / "level_t_09.txt").write_text(
        _stage("艾薇", "avg_010_evie_1#1", MIN_LINES + 5), encoding="utf-8"
    )
    # a job, not a name: the courier she plays in one event is anyone's courier in chat
    (story / "level_t_10.txt").write_text(
        _stage("信使", "avg_010_chen_1#4", MIN_LINES + 5), encoding="utf-8"
    )
    ws = make_workspace(tmp_path / "home", gamedata, astr)
    ws.ingest()
    yield ws.corpus.store()
    ws.close()


def test_portrait_alias_points_at_the_base_character_with_its_evidence(store):
    table = load_alias_table(store)
    res = table.resolve("维多利亚之女")
    assert res.char_id == "char_112_siege" and res.source == "portrait"
    (alias,) = [a for a in table.candidates("维多利亚之女") if a.source == "portrait"]
    assert alias.evidence["portrait_of"] == "char_1019_siege2"
    assert alias.evidence["lines"] >= MIN_LINES and 0.6 <= alias.evidence["share"] < 1.0


def test_a_name_that_talks_with_her_under_her_portrait_is_not_her(store):
    assert load_alias_table(store).resolve("守望者").ids == ()
    assert "守望者" not in speaker_ids(store)
    stats = portrait_stats(store)
    assert stats["守望者"][0] == "char_010_chen" and not stats["守望者"][3]


def test_a_picture_shown_for_two_other_people_is_not_hers(store):
    table = load_alias_table(store)
    assert table.resolve("多纳").ids == () and table.resolve("科勒").ids == ()
    ids = speaker_ids(store)
    assert not {"多纳", "科勒", "整合运动术师"} & set(ids)
    assert not {"多纳", "科勒", "整合运动术师"} & set(portrait_stats(store))


def test_a_picture_that_speaks_for_one_person_under_her_number_is_that_persons(store):
    res = load_alias_table(store).resolve("艾薇")
    assert res.char_id == "char_010_chen" and res.source == "portrait"


def test_the_stages_of_a_form_are_those_that_show_her_in_it(store):
    """Her lines under the siege alternate form's portrait mark the stages of that form; the
    base form has none of its own (everything is hers)."""
    from arklore.names.facade import NamesFacade

    names = NamesFacade(lambda: store)
    assert names.form_stages("char_1019_siege2") == {"obt/main/level_t_02"}
    assert names.form_stages("char_112_siege") == frozenset()
    assert names.form_stages("char_1013_chen2") == frozenset()  # never shown in that form


def test_her_own_name_under_another_portrait_does_not_make_her_a_stranger(store):
    res = load_alias_table(store).resolve("陈晖洁")
    assert res.char_id == "char_010_chen" and res.source == "portrait"


def test_speakers_below_the_line_threshold_get_no_alias(store):
    assert load_alias_table(store).resolve("路人甲").ids == ()
    assert "路人甲" in store.speaker_counts() and "路人甲" not in speaker_ids(store)


def test_descriptive_label_resolves_the_speaker_but_is_not_a_mention_alias(store):
    assert load_alias_table(store).resolve("神秘的女性").ids == ()
    assert speaker_ids(store)["神秘的女性"] == "char_010_chen"
    assert store_matcher(store).find("神秘的女性来了") == []


def test_registry_names_resolve_speakers_and_mentions(store):
    assert speaker_ids(store)["维多利亚之女"] == "char_112_siege"
    found = {
        (m.surface, m.char_id)
        for m in store_matcher(store).find("我今天见到了假日威龙陈和推进之王")
    }
    assert found == {("假日威龙陈", "char_1013_chen2"), ("推进之王", "char_112_siege")}


def test_user_file_edits_apply_without_reingest_and_win(store, tmp_path):
    user = tmp_path / "aliases.toml"
    user.write_text(
        '[[alias]]\nname = "维多利亚之女"\nid = "char_010_chen"\nnote = "test"\n', encoding="utf-8"
    )
    res = load_alias_table(store, load_user_aliases(user)).resolve("维多利亚之女")
    assert (res.char_id, res.source) == ("char_010_chen", "user")


def test_avatar_ids_of_popup_speakers_resolve_to_the_operator_they_show(store):
    ids = speaker_ids(store)
    assert ids["$avatar_chen2"] == "char_1013_chen2"
    assert "$avatar_npc_77" in store.speaker_counts() and "$avatar_npc_77" not in ids
    res = load_alias_table(store).resolve("$avatar_chen2")
    assert (res.char_id, res.source) == ("char_1013_chen2", "avatar")
    rows = store.conn.execute(
        "SELECT speaker, speaker_raw, uncertain FROM lines WHERE stage_path = 'obt/main/level_t_05'"
    ).fetchall()
    assert rows == [("$avatar_chen2", "$avatar_chen2", 1)] * 2 + [
        ("$avatar_npc_77", "$avatar_npc_77", 1)
    ]


@pytest.mark.realdata
def test_real_speakers_resolve_and_big_speakers_are_operator_or_npc(real_store_path, metrics):
    from arklore.names.audit import BIG_SPEAKER_LINES, audit

    with open_store(real_store_path) as s:
        user = load_user_aliases()
        report = audit(s, user)
        table = load_alias_table(s, user)
        by_speaker = speaker_ids(s)
        big = sum(1 for n, _ in s.speaker_counts().values() if n >= BIG_SPEAKER_LINES)
    metrics(
        f"names audit: {len(report['big_speakers'])} speakers with >= {BIG_SPEAKER_LINES} lines, "
        f"{report['big_speakers_operators']} operators, {report['big_speakers_npcs']} NPCs, "
        f"{len(report['suspects'])} suspects"
    )
    assert len(report["big_speakers"]) == big
    assert all(b["status"] in ("operator", "npc") for b in report["big_speakers"])
    assert all((b["status"] == "operator") == bool(b["char_id"]) for b in report["big_speakers"])
    # real names found by portrait statistics resolve to the person (the base character)
    assert by_speaker["恩希欧迪斯"] == "char_172_svrash"
    assert table.resolve("罗莎琳").char_id == "char_194_leto"
    assert table.resolve("费德里科").char_id == "char_279_excu"
    assert by_speaker["阿米娅"] == "char_002_amiya"
    # her portrait on screen while somebody talks with her does not make them her
    assert "保存者" not in by_speaker and "洛拉" not in by_speaker  # 凯尔希's, 絮雨's stories
    assert by_speaker["林雨霞"] == "char_4080_lin"  # talking with her father, written 林
    # the Reunion casters' old picture shares 炎狱炎熔's number; a person's own does not
    assert not {"梅斯", "依拉", "整合运动术师", "乌萨斯术师"} & set(by_speaker)
    assert by_speaker["艾沃娜"] == "char_496_wildmn" and by_speaker["炎熔"] == "char_121_lava"
    assert report["suspects"], "the audit should leave something for a human to decide"


def test_a_job_shown_with_her_portrait_resolves_her_lines_but_is_no_name_of_hers(store):
    """信使 speaks with her picture in her event, yet in chat (and in her friends' lines)
    a 信使 is anyone who carries letters."""
    assert speaker_ids(store)["信使"] == "char_010_chen"
    assert load_alias_table(store).resolve("信使").ids == ()
    assert portrait_stats(store)["信使"][0] == "char_010_chen"
