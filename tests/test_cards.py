"""SillyTavern cards and lorebooks (`arklore export`): what goes into a card, read back by an
independent reader (the ``tavern-card`` package from PyPI) and by ours, byte for byte.

The invented 银灰 world of ``support.sisters_world``; voice lines below are made up for this test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import tavern_card
from support.gamedata import write_gamedata
from support.sisters_world import (
    CLIFFHEART,
    PRAMANIX,
    SILVERASH,
    SILVERASH_ON_PRAMANIX,
    SILVERASH_PROFILE_PERSONALITY,
    make_sisters_kb,
)
from typer.testing import CliRunner

from arklore.cards import png
from arklore.cards.card import mes_example, scene_example
from arklore.cards.facade import read_card, write_png
from arklore.cards.lint import Matchable, fires, lint
from arklore.cli.app import app
from arklore.core.blocks import EXEMPLARS, Block
from arklore.core.errors import ArkloreError, UsageError
from arklore.profiles.charfile import TIER_B, render_profile
from arklore.profiles.greeting import choose_greeting
from arklore.profiles.quotes import StoryLine, VoiceLine
from arklore.settings import Settings
from arklore.workspace import Workspace

GREETING = "Dr.{@nickname}，雪山上的风停了，我们谈谈生意吧。"
VOICES = {
    "char_172_svrash_CN_001": ("任命助理", 1, "我在这里，盟友。"),
    "char_172_svrash_CN_002": ("交谈1", 2, "喀兰的雪，比你想象的更深。"),
    "char_172_svrash_CN_003": ("交谈2", 3, "{@nickname}，别让我等太久。"),
    "char_172_svrash_CN_004": ("问候", 40, GREETING),
    "char_172_svrash_CN_005": ("作战中1", 20, "雪落无声。"),
}


def charword_table() -> dict[str, Any]:
    words = {}
    for wid, (title, idx, text) in VOICES.items():
        words[wid] = {
            "charWordId": wid, "wordKey": SILVERASH, "charId": SILVERASH, "voiceId": wid,
            "voiceText": text, "voiceTitle": title, "voiceIndex": idx,
        }  # fmt: skip
    return {"charWords": words}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("cards")
    home = make_sisters_kb(root / "home")
    write_gamedata(root / "gamedata", charword_table()["charWords"])
    draft = render_profile(
        name="崖心", char_id=CLIFFHEART, generated_at="2026-07-20T09:30:00Z",
        sections=[("锚", "- 代号：崖心"), ("物理标签", "- 攀岩绳"), ("我·性格", "爱冒险。")],
        tier=TIER_B,
    )  # fmt: skip
    (home / "chars" / f"{CLIFFHEART}.char").write_text(draft, encoding="utf-8")
    return home, root / "gamedata"


def workspace(kb: tuple[Path, Path], **kw) -> Workspace:
    home, gamedata = kb
    return Workspace(Settings(home=home, gamedata=gamedata, embedder="hash", **kw))


@pytest.fixture(scope="module")
def exported(kb: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    with workspace(kb) as ws:
        reports = ws.cards.export_cards(["恩希欧迪斯", "崖心"], out).cards
    assert [r.name for r in reports] == ["银灰", "崖心"]
    return out


def entry_about(card: dict[str, Any], person: str) -> dict[str, Any]:
    return next(
        e for e in card["data"]["character_book"]["entries"]
        if e["extensions"]["arklore"].get("person") == person
    )  # fmt: skip


def test_silverash_card_read_by_an_independent_reader(exported: Path) -> None:
    """Acceptance: tavern-card reads the PNG as V3, name 银灰, with an entry keyed by each
    of his sisters' names."""
    card = tavern_card.parse_png_card((exported / "银灰.png").read_bytes())
    assert card["spec"] == "chara_card_v3" and card["data"]["name"] == "银灰"
    book = card["data"]["character_book"]["entries"]
    # the book says whose it is by name: 银灰 is a man, a pronoun of ours would be wrong
    assert "银灰与身边人的关系" in card["data"]["character_book"]["description"]
    sisters = {e["comment"]: e for e in book}
    assert "崖心" in sisters["银灰→崖心（近亲）"]["keys"]
    # the entry says whom it is about: several fire at once in one prompt
    assert sisters["银灰→初雪（近亲）"]["content"] == f"初雪：{SILVERASH_ON_PRAMANIX}"
    # 初雪 is also a word ("first snow"): her key is a regex that wants a person beside it
    pram = sisters["银灰→初雪（近亲）"]
    assert any(k.startswith("/") and "初雪" in k for k in pram["keys"])
    assert not fires(_match(pram), "今年冬天想去看初雪")
    assert fires(_match(pram), "和初雪一起去看雪")
    # the V2 chunk, alone, is a V2 card of the same data, also for the independent reader
    raw = (exported / "银灰.png").read_bytes()
    kinds = [(c.type, png._keyword(c)) for c in png.chunks(raw)]
    assert kinds[-3:] == [(b"tEXt", "chara"), (b"tEXt", "ccv3"), (b"IEND", None)]
    only_v2 = png.SIGNATURE + b"".join(
        c.encode() for c in png.chunks(raw) if png._keyword(c) != "ccv3"
    )
    v2 = tavern_card.parse_png_card(only_v2)
    assert v2["spec"] == "chara_card_v2" and v2["data"]["name"] == "银灰"
    assert v2["data"]["character_book"] == card["data"]["character_book"]


def test_her_lorebook_is_linked_to_her_and_goes_in_right_before_the_last_message(
    kb, exported: Path, tmp_path: Path
) -> None:
    """What SillyTavern 1.12.6 reads of it (its importer's field names): the card links the
    book by name (its embedded-book import saves the book but not the link, so without it
    the book never fires), and every entry goes in at depth 1, so what fires for a message
    changes the prompt only there and the card, examples and history before it stay one
    cached prefix."""
    data = json.loads((exported / "银灰.json").read_text(encoding="utf-8"))["data"]
    assert data["extensions"]["world"] == data["character_book"]["name"] == "银灰的人际与记忆"
    for e in data["character_book"]["entries"]:
        ext = e["extensions"]
        assert (ext["position"], ext["depth"], ext["role"]) == (4, 1, 0), e["comment"]
    path = tmp_path / "银灰.json"
    card = json.loads((exported / "银灰.json").read_text(encoding="utf-8"))
    card["data"]["extensions"]["world"] = "我自己的世界书"
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    with workspace(kb) as ws:  # a book the user linked instead is kept
        ws.cards.export_cards(["银灰"], tmp_path)
    again = json.loads(path.read_text(encoding="utf-8"))["data"]
    assert again["extensions"]["world"] == "我自己的世界书"


def test_her_entry_in_her_card_and_in_the_world_info_file_goes_in_once(
    kb, exported: Path, tmp_path: Path
) -> None:
    """Both books enabled, both entries on 初雪 fire: they share one inclusion group, of
    which SillyTavern puts one entry in the prompt (seen in its own client: without it the
    model got her entry twice)."""
    card = json.loads((exported / "银灰.json").read_text(encoding="utf-8"))["data"]
    in_card = {e["comment"]: e["extensions"]["group"] for e in card["character_book"]["entries"]}
    with workspace(kb) as ws:
        ws.cards.export_lorebook(tmp_path / "w.json")
    world = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))["entries"].values()
    in_world = {e["comment"]: e["group"] for e in world if e["comment"].startswith("银灰→")}
    assert in_world and all(in_world[c] == in_card[c] for c in in_world)
    groups = [g for g in in_card.values() if g]
    assert len(set(groups)) == len(groups) >= 2  # one group per person, never shared
    assert not any("," in g for g in groups)  # SillyTavern splits group names on commas


def _match(entry: dict[str, Any]):
    from arklore.cards.lint import Matchable

    return Matchable.from_book_entry(entry)


def test_export_read_export_is_byte_identical(
    kb: tuple[Path, Path], exported: Path, tmp_path: Path
) -> None:
    raw = (exported / "银灰.png").read_bytes()
    back = read_card(exported / "银灰.png")
    assert back.image is not None
    assert write_png(back.card, back.image) == raw
    assert read_card(exported / "银灰.json").card == back.card
    assert back.v2 is not None and back.v2["data"] == back.card["data"]
    with workspace(kb) as ws:  # a second export writes the same bytes
        ws.cards.export_cards(["银灰"], tmp_path)
    assert (tmp_path / "银灰.png").read_bytes() == raw
    assert (tmp_path / "银灰.json").read_bytes() == (exported / "银灰.json").read_bytes()


def test_card_fields_come_from_her_profile_greeting_and_voice(exported: Path) -> None:
    data = json.loads((exported / "银灰.json").read_text(encoding="utf-8"))["data"]
    assert data["personality"] == "性格：\n" + SILVERASH_PROFILE_PERSONALITY  # tier A: 我·性格
    assert data["description"].startswith("代号：银灰")
    assert data["first_mes"] == "博士，雪山上的风停了，我们谈谈生意吧。"  # 问候
    # no scenes indexed: her voice lines, talk first, as examples
    assert data["mes_example"].split("\n")[:2] == [
        "<START>",
        "{{char}}: 喀兰的雪，比你想象的更深。",
    ]
    assert "博士，别让我等太久。" in data["mes_example"]
    assert "{@nickname}" not in json.dumps(data, ensure_ascii=False)
    notes = data["creator_notes"]
    assert "voice:char_172_svrash_CN_004（问候）" in notes
    assert "activities/act_snow/st01#2:" in notes  # the line ids behind his relation to 初雪
    assert data["extensions"]["arklore"]["tier"] == "A"
    memory = next(e for e in data["character_book"]["entries"] if e["comment"] == "银灰：雪线之上")
    assert memory["keys"] == ["雪线之上"]  # the event's title; 山脊 is a word, left out
    assert memory["extensions"]["arklore"]["dropped_keys"] == {"山脊": "a dictionary word"}


def test_the_doctor_is_one_name_in_every_card_field(exported: Path) -> None:
    """博士 in every text, as her greetings and voice lines say it; SillyTavern's ``{{user}}``
    (the persona's name) only as the examples' speaker mark."""
    for name in ("银灰", "崖心"):
        data = json.loads((exported / f"{name}.json").read_text(encoding="utf-8"))["data"]
        texts = {k: v for k, v in data.items() if isinstance(v, str)}
        texts |= {f"alternate_greetings[{i}]": g for i, g in enumerate(data["alternate_greetings"])}
        texts |= {
            f"book[{i}]": e["content"] for i, e in enumerate(data["character_book"]["entries"])
        }
        texts["mes_example"] = re.sub(r"^\{\{user\}\}:", "", texts["mes_example"], flags=re.M)
        assert [k for k, v in texts.items() if "{{user}}" in v] == []
        assert "博士" in data["scenario"]


def test_a_tier_b_card_uses_only_what_tier_b_allows(exported: Path) -> None:
    data = json.loads((exported / "崖心.json").read_text(encoding="utf-8"))["data"]
    assert data["personality"] == ""  # 我·性格 of a draft nobody reviewed
    assert data["description"] == "代号：崖心\n\n外貌与身份：攀岩绳"
    assert data["extensions"]["arklore"]["tier"] == "B"


def test_scenes_become_example_messages() -> None:
    item = {
        "stage_path": "s",
        "lines": [
            {"line_id": "s#1:a", "kind": "narration", "speaker": "", "text": "风停了。", "hers": False},
            {"line_id": "s#2:b", "kind": "dialogue", "speaker": "银灰", "text": "Dr.{@nickname}，来了？", "hers": True},
            {"line_id": "s#3:c", "kind": "choice", "speaker": "博士", "text": "嗯/不", "hers": False, "option": "嗯"},
            {"line_id": "s#4:d", "kind": "dialogue", "speaker": "初雪", "text": "哥哥！", "hers": False},
        ],
    }  # fmt: skip
    # narration told inside his message; 初雪's line after the Doctor's last words, with no
    # line of 银灰's after it, is left out
    assert scene_example(item) == "<START>\n{{char}}: （风停了。）\n博士，来了？\n{{user}}: 嗯"
    block = Block(EXEMPLARS, "…", 10, 500, items=[item, item], line_ids=["s#1:a", "s#2:b"])
    text, sources, kind = mes_example(block, [])
    assert (
        kind == "scenes"
        and text.count("<START>") == 2
        and sources == ["story:s#1:a", "story:s#2:b"]
    )
    empty = Block(EXEMPLARS, budget=500, reason="no scenes")
    voice = [VoiceLine("v1", SILVERASH, "交谈1", 1, "雪。")]
    assert mes_example(empty, voice) == ("<START>\n{{char}}: 雪。", ["voice:v1"], "voice")


def test_the_exemplar_scenes_reach_the_card_through_the_chat(kb, monkeypatch, tmp_path) -> None:
    item: dict[str, Any] = {"stage_path": "activities/act_snow/st01", "lines": [
        {"line_id": "activities/act_snow/st01#2:x", "kind": "dialogue", "speaker": "银灰",
         "text": "初雪，跟紧我。", "hers": True}]}  # fmt: skip
    with workspace(kb) as ws:
        block = Block(EXEMPLARS, "x", 1, 500, items=[item], line_ids=[item["lines"][0]["line_id"]])
        monkeypatch.setattr(ws.chat, "exemplars", lambda sp, message, named=(), knows=None: block)
        data = ws.cards.card("银灰").card["data"]
    assert data["mes_example"] == "<START>\n{{char}}: 初雪，跟紧我。"
    assert "对话示例（剧情原文场景）：story:activities/act_snow/st01#2:x" in data["creator_notes"]


def test_greeting_falls_back_to_her_first_line_to_the_doctor() -> None:
    story = [
        StoryLine("s#1:a", "s", 1, 1, "银灰", SILVERASH, "初雪，跟紧我。"),
        StoryLine("s#2:b", "s", 2, 1, "银灰", SILVERASH, "博士，你来得正好。"),
    ]
    g = choose_greeting([[]], story)
    assert g is not None and (g.text, g.source_id) == ("博士，你来得正好。", "story:s#2:b")
    talk = VoiceLine("v2", SILVERASH, "交谈1", 2, "说吧。")
    g = choose_greeting([[talk]], story)
    assert g is not None and g.source_id == "voice:v2"


def test_unknown_extension_fields_of_an_earlier_export_are_kept(kb, tmp_path: Path) -> None:
    with workspace(kb) as ws:
        ws.cards.export_cards(["银灰"], tmp_path)
        path = tmp_path / "银灰.json"
        card = json.loads(path.read_text(encoding="utf-8"))
        card["data"]["extensions"]["depth_prompt"] = {"prompt": "x", "depth": 4}
        card["data"]["extensions"]["arklore"]["stale"] = True
        entry_about(card, PRAMANIX)["extensions"]["sticky_note"] = "mine"
        path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
        ws.cards.export_cards(["银灰"], tmp_path)
    again = read_card(tmp_path / "银灰.png").card
    assert again["data"]["extensions"]["depth_prompt"] == {"prompt": "x", "depth": 4}
    assert "stale" not in again["data"]["extensions"]["arklore"]  # ours is rewritten
    assert entry_about(again, PRAMANIX)["extensions"]["sticky_note"] == "mine"


def test_the_lorebook_covers_every_operator_with_relations(kb, tmp_path: Path) -> None:
    out = tmp_path / "world.json"
    with workspace(kb, tier_c_relations=True) as ws:
        report = ws.cards.export_lorebook(out)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["entries"]) == [str(i) for i in range(len(data["entries"]))]
    by_op: dict[str, list[dict[str, Any]]] = {}
    for uid, e in data["entries"].items():
        assert e["uid"] == int(uid)
        by_op.setdefault(e["extensions"]["arklore"]["operator"], []).append(e)
        assert e["characterFilter"]["names"] == [e["comment"].split("→")[0]]
    # every operator with a relation in the graph: 银灰, 初雪, 崖心, 阿米娅
    assert set(by_op) == {SILVERASH, PRAMANIX, CLIFFHEART, "char_002_amiya"}
    assert report.operators == 4 and report.entries == len(data["entries"])
    pram = next(e for e in by_op[SILVERASH] if e["comment"].startswith("银灰→初雪"))
    assert any(k.startswith("/") and "初雪" in k for k in pram["key"]) and not pram["selective"]
    assert (pram["position"], pram["depth"], pram["role"]) == (4, 1, 0)  # as in her card
    assert pram["content"].startswith("初雪：")
    with workspace(kb) as ws:  # the chat's tier rule: no profile, no relations
        _, rep = ws.cards.lorebook_entries()
    left = dict(rep.left_out)
    assert set(left) == {"初雪", "阿米娅"} and all("tier C" in why for why in left.values())
    assert rep.operators == 2  # 银灰 (tier A) and 崖心 (tier B)


@pytest.fixture
def kb_cli(kb, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line on the invented knowledge base and its game tables."""
    home, gamedata = kb
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(gamedata))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    monkeypatch.delenv("ARKLORE_CHARS_DIR", raising=False)


def test_the_cli_exports_cards_lorebook_and_lints(kb_cli, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["export", "card", "银灰", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["cards"][0]["relations"] == 2
    assert (
        tavern_card.parse_png_card((tmp_path / "银灰.png").read_bytes())["data"]["name"] == "银灰"
    )
    r = CliRunner().invoke(app, ["export", "lorebook", "--out", str(tmp_path / "w.json")])
    assert r.exit_code == 0 and "entries" in r.stdout
    r = CliRunner().invoke(app, ["export", "lint", str(tmp_path / "银灰.json"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["entries"] == 2  # the two relation entries (people)
    r = CliRunner().invoke(app, ["export", "card"])
    assert isinstance(r.exception, UsageError)


def test_the_cli_names_a_file_that_is_no_book_or_no_folder(kb_cli, tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"foo": 1}', encoding="utf-8")
    for path, says in ((other, "neither World Info"), (tmp_path / "gone.json", "no such file")):
        r = CliRunner().invoke(app, ["export", "lint", str(path)])
        assert isinstance(r.exception, ArkloreError) and r.exit_code != 0  # linted nothing
        assert says in r.exception.one_line()
    r = CliRunner().invoke(app, ["export", "card", "银灰", "--out", str(other)])
    assert isinstance(r.exception, UsageError) and "is a file" in r.exception.one_line()


def test_lint_reports_a_key_that_fires_on_a_message_not_about_her() -> None:
    from arklore.cards.lint import LintEntry, Matchable

    entries = [
        LintEntry("p", "初雪 (plain)", Matchable(("初雪",))),
        LintEntry("p2", "初雪 (confirmed)", Matchable(("初雪",), ("和初雪",), True)),
    ]
    records: list[dict[str, Any]] = [
        {"text": "今年冬天想去看初雪", "mentions": []},
        {"text": "和初雪一起去", "mentions": [{"id": "p"}, {"id": "p2"}]},
    ]
    rep = lint(entries, records, lambda x: x)
    assert [(f.label, f.key) for f in rep.false] == [("初雪 (plain)", "初雪")]
    assert rep.fires == 3 and rep.reached == 2 and rep.mentioned == 2


def test_her_own_book_keys_her_people_by_what_she_calls_them(exported: Path) -> None:
    """In 银灰's card, 妹妹 means 初雪 and 崖心 (his relations say so): a word of kinship keys
    them when it is his (你的两个妹妹), never somebody else's (我妹妹, 她是银灰的妹妹) nor how two
    others are related (年和夕是姐妹)."""
    card = json.loads((exported / "银灰.json").read_text(encoding="utf-8"))["data"]
    book = {e["comment"]: e for e in card["character_book"]["entries"]}
    for sister in ("银灰→初雪（近亲）", "银灰→崖心（近亲）"):
        match = _match(book[sister])
        assert fires(match, "你的两个妹妹最近还好吗")
        for other in ("我妹妹在上学", "她是银灰的妹妹吗", "年和夕是姐妹吗", "小姐姐你好"):
            assert not fires(match, other), (sister, other)


def test_her_own_book_keys_a_shared_name_for_the_one_she_calls_so(
    tmp_path: Path,
) -> None:
    """Both sisters are called 「小崖崖」 in the story, so the shared name keys neither in a
    world book; 银灰 calls 崖心 so five times and 初雪 never: in his own book it keys 崖心."""
    home = make_sisters_kb(tmp_path / "home")
    write_gamedata(tmp_path / "gamedata", charword_table()["charWords"])
    for cid, name, who in ((CLIFFHEART, "崖心", "银灰 5 次"), (PRAMANIX, "初雪", "角峰 3 次")):
        speech = f"- 别人叫{name}「小崖崖」（{who}） —— story:x#1:00000000"
        draft = render_profile(
            name=name, char_id=cid, generated_at="2026-07-20T09:30:00Z",
            sections=[("锚", f"- 代号：{name}"), ("说话方式", speech)], tier=TIER_B,
        )  # fmt: skip
        (home / "chars" / f"{cid}.char").write_text(draft, encoding="utf-8")
    with workspace((home, tmp_path / "gamedata")) as ws:
        assert "小崖崖" in ws.cards.keymaker().keys(CLIFFHEART).shared
        entries = {e.meta["person"]: e for e in ws.cards.relation_entries("银灰")}
    said = "小崖崖今天又去攀岩了吗"
    assert fires(Matchable(tuple(entries[CLIFFHEART].keys)), said)
    assert not fires(Matchable(tuple(entries[PRAMANIX].keys)), said)


def test_her_relation_entries_alone_are_the_ones_her_card_holds(kb) -> None:
    with workspace(kb) as ws:
        alone = ws.cards.relation_entries("银灰")
        book = ws.cards.card("银灰").card["data"]["character_book"]["entries"]
    held = [e for e in book if e["extensions"]["arklore"]["kind"] == "relation"]
    assert alone and [(e.comment, e.keys) for e in alone] == [
        (e["comment"], e["keys"]) for e in held
    ]
