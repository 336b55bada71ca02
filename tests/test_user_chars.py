"""The user's own .char files (ARKLORE_CHARS_DIR), whatever their names and in the design's
spelling of the headings: what a chat injects, `arklore chars check`, never written to.

The invented 银灰 world of ``support.sisters_world``; every profile sentence here is made up.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from support.profiles_world import FIXTURES as PROFILE_TABLES
from support.sisters_world import (
    AMIYA,
    CLIFFHEART,
    PRAMANIX,
    SILVERASH,
    SILVERASH_PROFILE_PERSONALITY,
    make_sisters_kb,
)
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.errors import UsageError
from arklore.profiles.charfile import ABOUT_DOCTOR, ANCHOR, PEOPLE, PERSONALITY, CharProfile
from arklore.settings import Settings
from arklore.workspace import Workspace

DESIGN_SILVERASH = """# 银灰

## 锚段

- 代号：银灰
- 种族：菲林
- 核心经历：在雪山里长大，后来一个人扛起了家族的生意。

## 物理标签

- 银白的长发
- 总披着一件厚重的大衣

## 语录

- 「雪会停的，路也会有的。」 —— story:activities/act_snow/st01#2:00000000（手写）

## 我段·性格

沉稳，话说一半，剩下的留给对方去想。

## 我段·关于博士

博士是我押上筹码的盟友，我信任博士的判断。

## 我段·身边的人

- 初雪：我最小的妹妹，总想证明自己，我却总放不下心。

## 私人笔记

只有我自己知道：他怕冷。
"""

USER_PERSONALITY = "沉稳，话说一半，剩下的留给对方去想。"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sisters_kb(tmp_path_factory.mktemp("userchars") / "home")


def user_dir(root: Path, files: dict[str, str]) -> Path:
    d = root / "mine"
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def workspace(kb: Path, chars: Path | None = None) -> Workspace:
    return Workspace(Settings(home=kb, embedder="hash", chars_dir=chars))


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_design_headings_read_as_arklores_and_the_file_stays_byte_identical() -> None:
    prof = CharProfile.parse(DESIGN_SILVERASH)
    assert prof.text() == DESIGN_SILVERASH
    titles = [s.title for s in prof.sections]
    assert titles == [ANCHOR, "物理标签", "语录", PERSONALITY, ABOUT_DOCTOR, PEOPLE, "私人笔记"]
    assert [s.written_title for s in prof.sections][:1] == ["锚段"]
    assert prof.tier == "S"


def test_the_chat_injects_the_users_silverash_file_tier_s(kb: Path, tmp_path: Path) -> None:
    """Acceptance: a 银灰.char in the design's spelling is what a turn injects for 银灰."""
    chars = user_dir(tmp_path, {"银灰.char": DESIGN_SILVERASH})
    before = digest(chars)
    with workspace(kb) as ws:  # without the folder: the generated tier-A profile
        generated = ws.chat.turn("银灰", "初雪最近怎么样？").blocks[0]
        assert generated.meta["tier"] == "A" and SILVERASH_PROFILE_PERSONALITY in generated.text
    with workspace(kb, chars) as ws:
        turn = ws.chat.turn("银灰", "初雪最近怎么样？")
        persona = next(b for b in turn.blocks if b.name == "persona")
        assert persona.meta["tier"] == "S"
        assert persona.files == ["user:银灰.char"]
        assert f"## {PERSONALITY}\n{USER_PERSONALITY}" in persona.text
        doctor = turn.block("doctor")  # her view of the Doctor travels in its own block
        assert "博士是我押上筹码的盟友" in doctor.text and ABOUT_DOCTOR in persona.meta["elsewhere"]
        assert "## 锚\n- 代号：银灰" in persona.text and "私人笔记" in persona.text
        assert SILVERASH_PROFILE_PERSONALITY not in persona.text
        assert USER_PERSONALITY in turn.system_prompt
        # her 我·身边的人 feeds the relation index as a char_anchor document (tier S)
        docs = ws.profiles.anchor_documents(ws.graph.current())
        assert [(d.operator_id, d.target_id) for d in docs] == [(SILVERASH, PRAMANIX)]
    assert digest(chars) == before  # read, never written


@pytest.mark.parametrize(
    "name", ["银灰.char", "恩希欧迪斯.char", "SilverAsh.char", f"{SILVERASH}.char"]
)
def test_a_file_named_by_any_name_alias_or_id_maps_to_the_operator(
    kb: Path, tmp_path: Path, name: str
) -> None:
    chars = user_dir(tmp_path, {name: DESIGN_SILVERASH})
    with workspace(kb, chars) as ws:
        found = ws.profiles.find(SILVERASH)
        assert found is not None and found.path.name == name and not found.writable
        assert ws.profiles.persona("恩希欧迪斯").tier == "S"


def test_the_operator_header_wins_over_the_file_name(kb: Path, tmp_path: Path) -> None:
    text = DESIGN_SILVERASH.replace("# 银灰\n", f"# 初雪\n\n- operator: {PRAMANIX}\n", 1)
    chars = user_dir(tmp_path, {"银灰.char": text})
    with workspace(kb, chars) as ws:
        pramanix, silverash = ws.profiles.find(PRAMANIX), ws.profiles.find(SILVERASH)
        assert pramanix is not None and pramanix.path.name == "银灰.char"
        assert silverash is not None and silverash.writable  # 银灰 keeps the generated one


def test_chars_check_lists_each_file_and_the_ones_it_cannot_map(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draft = "# 崖心 [AUTO-DRAFT]\n\n## 锚段\n\n- 代号：崖心\n\n## 我段·性格\n\n爱攀岩。\n"
    chars = user_dir(
        tmp_path,
        {
            "银灰.char": DESIGN_SILVERASH,
            f"{SILVERASH}.char": "# 银灰\n\n## 锚\n\n- 代号：银灰\n",
            "崖心.char": draft,
            "银恢.char": "# 银恢\n\n## 锚\n\n- 代号：？\n",
        },
    )
    before = digest(chars)
    with workspace(kb) as ws:  # any folder, not only ARKLORE_CHARS_DIR
        checks = {c.file: c for c in ws.chat.chars_check(chars)}
    by_id = checks[f"{SILVERASH}.char"]
    assert by_id.used and by_id.mapped_by == "file name" and by_id.tier == "S"
    shadowed = checks["银灰.char"]
    assert shadowed.char_id == SILVERASH and not shadowed.used
    assert "shadowed by char_172_svrash.char" in shadowed.problem
    assert ("锚段", ANCHOR) in shadowed.design_headings and shadowed.own_sections == ["私人笔记"]
    cliff = checks["崖心.char"]
    assert (cliff.char_id, cliff.tier, cliff.injected) == (CLIFFHEART, "B", [ANCHOR])
    assert (PERSONALITY, "tier B: not reviewed (1 line(s) not a quote)") in cliff.excluded
    lost = checks["银恢.char"]
    assert lost.char_id is None and "银灰" in lost.closest

    monkeypatch.setenv("ARKLORE_HOME", str(kb))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    monkeypatch.setenv("ARKLORE_CHARS_DIR", str(chars))
    r = CliRunner().invoke(app, ["chars", "check", "--json"])
    assert r.exit_code == 5, r.output  # findings: a file maps to nobody, one is shadowed
    data = json.loads(r.stdout)
    assert data["not_used"] == 2
    row = next(f for f in data["files"] if f["file"] == f"{SILVERASH}.char")
    assert row["injected"] == [ANCHOR] and row["operator"] == SILVERASH
    r = CliRunner().invoke(app, ["chars", "check"])
    assert "银恢.char: maps to no operator" in r.stdout and "closest: 银灰" in r.stdout
    assert digest(chars) == before


def test_a_file_a_chat_would_get_nothing_from_is_reported_and_fails_the_check(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chars = user_dir(
        tmp_path / "empty",
        {
            # headings one level too high, and a heading with nothing under it
            "银灰.char": "# 银灰\n\n# 性格\n\n沉稳。\n\n## 锚\n\n",
            "崖心.char": "# 崖心 [AUTO-DRAFT]\n\n## 我·性格\n\n爱攀岩。\n",  # B: unreviewed
        },
    )
    with workspace(kb) as ws:
        checks = {c.file: c for c in ws.chat.chars_check(chars)}
    for name, why in (("银灰.char", "no section with text"), ("崖心.char", "tier B leaves out")):
        c = checks[name]
        assert c.char_id is not None and not c.used, name
        assert c.problem.startswith("nothing to inject") and why in c.problem, c.problem
    monkeypatch.setenv("ARKLORE_HOME", str(kb))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    r = CliRunner().invoke(app, ["chars", "check", str(chars)])
    assert r.exit_code == 5 and "not used: nothing to inject" in r.stdout, r.output


CORE_SILVERASH = """# 银灰

## 锚

- 代号：银灰
- 核心经历：小时候常和崖心一起在山里迷路。后来一个人扛起了家族的生意。

## 核心经历

阿米娅来谢拉格那年，他押上了筹码。

## 我·身边的人

- 崖心：我的妹妹，总往山里跑。
"""


def test_the_people_her_core_experience_names_become_her_relation_documents(
    kb: Path, tmp_path: Path
) -> None:
    chars = user_dir(tmp_path / "core", {"银灰.char": CORE_SILVERASH})
    with workspace(kb, chars) as ws:
        docs = ws.profiles.anchor_documents(ws.graph.current(), ws.graph.named_spans)
        # a draft's (tier B) 核心经历 is a model's unreviewed text: never a document
        draft = CORE_SILVERASH.replace("# 银灰", "# 银灰 [AUTO-DRAFT]", 1)
        (chars / "银灰.char").write_text(draft, encoding="utf-8")
        drafted = ws.profiles.anchor_documents(ws.graph.current(), ws.graph.named_spans)
    mine = {(d.target_id, d.doc_id.rsplit(".", 1)[-1]): d.text for d in docs
            if d.operator_id == SILVERASH}  # fmt: skip
    # 崖心: her hand-written view says more than a sentence that names her; 阿米娅: the
    # sentence of her own section; the sentence naming nobody makes no document
    assert mine == {
        (CLIFFHEART, "view"): "银灰眼中的崖心：我的妹妹，总往山里跑。",
        (AMIYA, "core"): "银灰的核心经历里的阿米娅：阿米娅来谢拉格那年，他押上了筹码。",
    }
    assert all(d.source == "char_anchor" and d.source_path.endswith("银灰.char") for d in docs)
    assert not [d for d in drafted if d.operator_id == SILVERASH]


def test_chars_check_without_a_folder_is_a_usage_error(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(kb))
    monkeypatch.delenv("ARKLORE_CHARS_DIR", raising=False)
    r = CliRunner().invoke(app, ["chars", "check"])
    assert isinstance(r.exception, UsageError) and "ARKLORE_CHARS_DIR" in r.exception.one_line()
    assert r.exception.exit_code == 2


def test_distill_skips_the_users_files_and_never_writes_there(kb: Path, tmp_path: Path) -> None:
    chars = user_dir(tmp_path, {"恩希欧迪斯.char": DESIGN_SILVERASH})
    before = digest(chars)
    out = tmp_path / "generated"
    gamedata = tmp_path / "gamedata"  # a distill reads the excel tables: the invented ones
    shutil.copytree(PROFILE_TABLES, gamedata / "zh_CN/gamedata/excel")
    settings = Settings(home=kb, embedder="hash", chars_dir=chars, gamedata=gamedata)
    with Workspace(settings) as ws:
        report = ws.profiles.distill(["A"], ["银灰", "初雪"], out=out, use_llm=False)
        assert SILVERASH in report.protected
        assert not (out / f"{SILVERASH}.char").exists()
        with pytest.raises(Exception, match="ARKLORE_CHARS_DIR"):
            ws.profiles.approve("银灰")
    assert digest(chars) == before
