"""Identity links: forms the registry links by a names rule (same name, title prefix), real
names the archives give in prose proposed by ``names audit`` with their evidence and applied
through the alias file, and the display name of operators with a Latin registry name. The
tables and stories are invented; the last test checks the issue's three links on the real data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.tree_world import EXCEL, STORY, make_workspace, write_tree

from arklore.core.errors import InputFileError
from arklore.names.aliases import load_user_aliases
from arklore.names.audit import ARCHIVE_SPEAKER_LINES, RECORD_MIN_LINES
from arklore.names.build import speaker_ids
from arklore.names.facade import says_who
from arklore.names.registry import SAME_NAME, TITLE_PREFIX, archive_names, build_registry

EDGE, EDGE_COPY, EDGE_LORD = "char_950_edge", "char_960_acedge", "char_961_edge2"
KNIGHT, QUIET, COURIER = "char_955_knight", "char_956_quiet", "char_957_courier"
ROSE, LATIN = "char_962_rose", "char_958_latin"


def _archive(cid: str, **sections: str) -> dict[str, Any]:
    return {
        "charID": cid,
        "storyTextAudio": [
            {"storyTitle": title, "stories": [{"storyText": text, "unLockType": "DIRECT"}]}
            for title, text in sections.items()
        ],
    }


def _tables(gamedata: Path, astr: Path) -> None:
    excel = gamedata / EXCEL
    chars = json.loads((excel / "character_table.json").read_text("utf-8"))
    for cid, name in ((EDGE, "刃锋"), (KNIGHT, "辉石"), (QUIET, "静默"), (COURIER, "递信")):
        chars[cid] = {"name": name, "appellation": None, "rarity": "TIER_5"}
    (excel / "character_table.json").write_text(json.dumps(chars, ensure_ascii=False), "utf-8")
    skins = json.loads((excel / "skin_table.json").read_text("utf-8"))
    for cid, model in ((LATIN, "Lumen Ray"), (EDGE_COPY, "Edge"), (EDGE_LORD, "Edge Lord"),
                       (ROSE, "Rose")):  # fmt: skip
        skins["charSkins"][f"{cid}#1"] = {
            "charId": cid, "displaySkin": {"modelName": model, "skinName": None},
        }  # fmt: skip
    (excel / "skin_table.json").write_text(json.dumps(skins, ensure_ascii=False), "utf-8")
    book = json.loads((excel / "handbook_info_table.json").read_text("utf-8"))
    book["handbookDict"][KNIGHT] = _archive(
        KNIGHT,
        基础档案="【代号】辉石\n【性别】女",
        客观履历="艾丝蒂·辉岩，来自山城的年轻骑士，一直想证明自己。",
        档案资料一="艾丝蒂小时候总跟在姐姐身后。后来艾丝蒂给自己取了辉石这个代号。",
    )
    book["handbookDict"][QUIET] = _archive(
        QUIET, 基础档案="【代号】静默", 档案资料一="干员静默，本名诺亚·白沙，很少说话。"
    )
    book["handbookDict"][COURIER] = _archive(
        COURIER, 基础档案="【代号】递信", 客观履历="快递公司员工，于合约期内驻留。"
    )
    (excel / "handbook_info_table.json").write_text(json.dumps(book, ensure_ascii=False), "utf-8")
    chardict = {
        "acedge": {"name": "刃锋", "id": "960"},  # an event's copy of the same operator
        "edge2": {"name": "统领·刃锋", "id": "961"},  # a title before her name
        "rose": {"name": "辉石·刃锋", "id": "962"},  # 辉石 is a name, not a title
    }
    (astr / "zh_CN").mkdir(parents=True, exist_ok=True)
    (astr / "zh_CN/chardict.json").write_text(json.dumps(chardict, ensure_ascii=False), "utf-8")


def _lines(speaker: str, n: int) -> str:
    return "".join(f'[name="{speaker}"]  这是{speaker}的第{i}句话，写给测试。\n' for i in range(n))


def _stories(gamedata: Path) -> None:
    main = gamedata / STORY / "obt/main"
    (main / "level_id_01.txt").write_text(
        _lines("艾丝蒂", ARCHIVE_SPEAKER_LINES + 5) + _lines("刃锋", 3), "utf-8"
    )
    (main / "level_id_02.txt").write_text(
        _lines("快递公司员工", ARCHIVE_SPEAKER_LINES + 5), "utf-8"
    )
    (main / "level_id_03.txt").write_text(_lines("Lumen Ray", 2) + _lines("光线", 30), "utf-8")
    memory = gamedata / STORY / "obt/memory"
    memory.mkdir(parents=True)
    (memory / "story_quiet_1_1.txt").write_text(_lines("诺亚", RECORD_MIN_LINES + 15), "utf-8")


@pytest.fixture
def world(tmp_path: Path):
    gamedata, astr = write_tree(tmp_path / "data")
    _tables(gamedata, astr)
    _stories(gamedata)
    return tmp_path, gamedata, astr


def _ingest(world, aliases: str | None = None):
    tmp, gamedata, astr = world
    kw = {}
    if aliases is not None:
        path = tmp / "aliases.toml"
        path.write_text(aliases, encoding="utf-8")
        kw["aliases_file"] = path
    ws = make_workspace(tmp / "home", gamedata, astr, **kw)
    ws.ingest()
    return ws


def test_same_name_and_title_prefix_link_forms_of_one_person(world) -> None:
    _, gamedata, astr = world
    reg = build_registry(gamedata / EXCEL, astr / "zh_CN/chardict.json")
    copy, lord, rose = reg.get(EDGE_COPY), reg.get(EDGE_LORD), reg.get(ROSE)
    assert (copy.base_id, copy.linked_by) == (EDGE, SAME_NAME)  # character_table's is the base
    assert (lord.base_id, lord.linked_by) == (EDGE, TITLE_PREFIX)
    assert reg.family(EDGE_LORD) == [EDGE, EDGE_COPY, EDGE_LORD]
    assert rose.base_id is None  # 辉石 is a name, not a title
    # the tables' own links keep saying where they came from
    assert reg.get("char_1013_chen2").linked_by == "char_meta_table"


def test_a_shared_name_resolves_to_the_person_and_her_lines_are_hers(world) -> None:
    ws = _ingest(world)
    assert ws.names.resolve("刃锋") == EDGE  # no longer ambiguous
    assert ws.names.resolve("统领·刃锋") == EDGE_LORD and ws.names.family(EDGE_LORD)[0] == EDGE
    assert speaker_ids(ws.corpus.store())["刃锋"] == EDGE
    links = {(x["rule"], x["char_id"]): x for x in ws.names.audit()["identity_links"]}
    assert links[(SAME_NAME, EDGE_COPY)]["to"] == EDGE
    assert "both named 刃锋" in links[(SAME_NAME, EDGE_COPY)]["evidence"]
    assert links[(TITLE_PREFIX, EDGE_LORD)]["status"] == "applied"
    ws.close()


def test_archive_names_are_read_from_the_prose() -> None:
    entry = _archive(
        KNIGHT,
        客观履历="艾丝蒂·辉岩，来自山城的年轻骑士。",
        档案资料一="艾丝蒂小时候的事。干员辉石，本名艾丝蒂·辉岩。",
    )
    found = {f["name"]: f for f in archive_names(entry)}
    assert set(found) == {"艾丝蒂·辉岩", "艾丝蒂"}
    assert found["艾丝蒂"]["how"] == "opening" and found["艾丝蒂"]["mentions"] == 3
    assert found["艾丝蒂"]["full"] == "艾丝蒂·辉岩" and found["艾丝蒂"]["section"] == "客观履历"
    assert archive_names(None) == [] and archive_names({"storyTextAudio": [{}]}) == []
    # an archive that opens with her code name followed by her name
    coded = _archive(
        KNIGHT, 基础档案="【代号】辉石\n【性别】女", 客观履历="辉石艾丝蒂，年轻的骑士。"
    )
    assert [(f["name"], f["how"]) for f in archive_names(coded)] == [
        ("艾丝蒂", "opening, after her code name")
    ]
    plain = _archive(KNIGHT, 基础档案="【代号】辉石", 客观履历="辉石，年轻的骑士。")
    assert archive_names(plain) == []  # her code name is no other name


def test_audit_proposes_real_names_with_evidence_and_the_alias_file_applies_them(world) -> None:
    ws = _ingest(world)
    links = [x for x in ws.names.audit()["identity_links"] if x["rule"] == "archive"]
    by_speaker = {x["speaker"]: x for x in links}
    # backed by the archive (3 mentions) and by her own records (25 lines): proposed
    assert by_speaker["艾丝蒂"]["status"] == "proposed" and by_speaker["艾丝蒂"]["to"] == KNIGHT
    assert "3 mention(s)" in by_speaker["艾丝蒂"]["evidence"]
    assert by_speaker["诺亚"]["to"] == QUIET
    assert (
        f"{RECORD_MIN_LINES + 15} line(s) as 诺亚 in her own records"
        in by_speaker["诺亚"]["evidence"]
    )
    # a role that opens an archive, with nothing else behind it: not proposed
    assert "快递公司员工" not in by_speaker
    assert [x["status"] for x in links] == ["proposed", "proposed"]
    assert "艾丝蒂" not in speaker_ids(ws.corpus.store())
    ws.close()
    # settled in the alias file: the next ingest rebuilds the names (no stage changed)
    entries = "".join(
        f'[[alias]]\nname = "{n}"\nid = "{c}"\nnote = "audit"\n' for n, c in (("艾丝蒂", KNIGHT),)
    )
    ws = _ingest(world, entries)
    assert speaker_ids(ws.corpus.store())["艾丝蒂"] == KNIGHT
    statuses = {
        x["speaker"]: x["status"] for x in ws.names.audit()["identity_links"] if x["speaker"]
    }
    assert statuses == {"艾丝蒂": "applied", "诺亚": "proposed"}
    ws.close()


def test_a_latin_registry_name_shows_as_the_name_the_story_uses(world) -> None:
    # no portraits in this world: the alias file ties the speaker to her, as a user would
    ws = _ingest(world, f'[[alias]]\nname = "光线"\nid = "{LATIN}"\nnote = "t"\n')
    assert ws.names.operators() and ws.names.registry().get(LATIN).name == "Lumen Ray"
    assert ws.names.display_name(LATIN) == "光线"
    assert ws.chat.speaker("Lumen Ray").name == "光线"
    assert ws.names.record(LATIN)["name"] == "光线"
    # the graph's node (what relation blocks and documents name her) and her profile's title
    empty = world[0] / "matrix.toml"
    empty.write_text("", encoding="utf-8")
    assert ws.graph.build(matrix=empty).graph.nodes[LATIN].name == "光线"
    report = ws.profiles.distill(["all"], [LATIN], generated_at="2026-01-01T00:00:00Z")
    assert Path(report.files[LATIN]).read_text("utf-8").startswith("# 光线 [AUTO-DRAFT]")
    assert ws.profiles.review_queue(operators=[LATIN]).entries[0].name == "光线"
    ws.close()


@pytest.mark.realdata
def test_the_issues_identity_links_on_the_real_data(real_workspace, metrics) -> None:
    names = real_workspace.names
    ids = names.speaker_ids()
    assert ids["玛莉娅"] == "char_423_blemsh"  # 瑕光
    assert ids["特蕾西娅"] == "char_4134_cetsyr"  # 魔王: her archive is Theresa's
    assert names.resolve("领主·Sharp") == "char_617_sharp2"
    assert names.family("char_617_sharp2")[0] == names.resolve("Sharp") == "char_508_aguard"
    assert ids["Sharp"] == "char_508_aguard"
    assert names.display_name("char_4228_closur") == "可露希尔"
    assert names.display_name("char_4134_cetsyr") == "特蕾西娅"  # display = true in the file
    links = names.audit()["identity_links"]
    archive = [x for x in links if x["rule"] == "archive"]
    metrics(
        "identity links: "
        + ", ".join(
            f"{r} {sum(x['rule'] == r for x in links)}"
            for r in ("archive", SAME_NAME, TITLE_PREFIX)
        )
        + f"; archive names proposed {sum(x['status'] == 'proposed' for x in archive)}, "
        f"conflicting {sum(x['status'] == 'conflict' for x in archive)}"
    )
    # every archive name the corpus already tied to an operator is hers: the rule agrees
    assert all(x["status"] != "conflict" for x in archive)
    assert {x["speaker"] for x in archive if x["status"] == "proposed"} == set()


def test_an_alias_marked_display_is_the_name_chat_text_shows(world, tmp_path: Path) -> None:
    ws = _ingest(
        world, f'[[alias]]\nname = "艾丝蒂"\nid = "{KNIGHT}"\ndisplay = true\nnote = "t"\n'
    )
    assert ws.names.registry().get(KNIGHT).name == "辉石"
    assert ws.names.display_name(KNIGHT) == ws.chat.speaker("辉石").name == "艾丝蒂"
    assert ws.names.display_name(EDGE) == "刃锋"  # nobody else changes
    # her code name in a story line is a word of the story, not glossed as the shown name
    assert ws.names.mentioned("辉石，今天轮到你巡逻。") == [KNIGHT]
    assert ws.names.glossary([], ["辉石，今天轮到你巡逻。"]) == []
    ws.close()
    bad = tmp_path / "bad.toml"
    bad.write_text(f'[[alias]]\nname = "艾丝蒂"\nid = "{KNIGHT}"\ndisplay = "yes"\n', "utf-8")
    with pytest.raises(InputFileError, match="display"):
        load_user_aliases(bad)


def test_a_name_says_who_she_is_when_it_holds_her_name_or_is_part_of_it() -> None:
    """One test for a speaker label and a mention alike: the exemplars heading glosses a
    name only where a model could not tell who it is."""
    assert says_who("陈晖洁", "陈") and says_who("小黑", "罗小黑")
    assert not says_who("恩雅", "初雪") and not says_who("鬼姐姐", "星熊")


def test_a_stranger_label_speaks_for_nobody_while_the_name_still_finds_her(world) -> None:
    """[[stranger]]: a story speaker who shares an operator's name (红丝绒's 酒神) is somebody
    else; her lines are nobody's, and the name still finds the operator in chat."""
    plain = _ingest(world)
    assert speaker_ids(plain.corpus.store())["刃锋"] == EDGE
    plain.close()
    ws = _ingest(world, '[[stranger]]\nname = "刃锋"\nnote = "the other 刃锋"\n')
    assert "刃锋" not in speaker_ids(ws.corpus.store())
    assert ws.names.resolve("刃锋") == EDGE and ws.names.mentioned("刃锋来了") == [EDGE]
    ws.close()


def test_a_speaker_whose_picture_is_mostly_another_speakers_is_a_portrait_conflict() -> None:
    """The label 林 resolves to the operator, but its picture is her father's (the label 鼠王
    shows it far more): a stranger. 索娜 shows 焰尾's picture far more than 焰尾 does and
    resolves to nobody: a missing alias. Both are listed; a speaker who shares her picture
    with a label of her own is not."""
    from arklore.names.audit import portrait_conflicts

    ids = {"甲": KNIGHT, "甲的本名": KNIGHT, "乙": QUIET, "丙": COURIER, "己": ROSE}
    portraits = [
        ("乙", "avg_npc_034#1", 20), ("乙", None, 3), ("乙", "avg_npc_034#4$1", 9),
        ("鼠王", "avg_npc_034", 60),  # nobody's: her father
        ("甲", "avg_npc_122", 12), ("甲的本名", "avg_npc_122#2", 80),  # one person
        ("丙", "avg_957_courier_1", 30), ("丙", "avg_npc_9", 2),
        ("路人", "avg_957_courier_1", 10),  # a stranger borrows her picture now and then
        ("丁", "avg_npc_7", 15), ("戊", "avg_npc_7", 40),  # neither resolves: nobody's
        ("己", "avg_npc_5", 6), ("己", "avg_962_rose_1", 6), ("庚", "avg_npc_5", 50),  # no one picture
    ]  # fmt: skip
    got = portrait_conflicts(portraits, ids)
    assert [(c["speaker"], c["picture"], c["shown_most_as"], c["other_id"]) for c in got] == [
        ("乙", "avg_npc_034", "鼠王", None)
    ]
    assert got[0]["lines"] == 29 and got[0]["other_lines"] == 60
    assert portrait_conflicts([("乙", "avg_npc_034", 9), ("鼠王", "avg_npc_034", 60)], ids) == []
