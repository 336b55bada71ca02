"""The .char format: lossless round trip, tiers, hand-edit detection, allowed sections, and
the writer that never overwrites what a person wrote. Every profile text here is invented."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.profiles_world import section

from arklore.core.tokens import count_tokens
from arklore.profiles.charfile import (
    ANCHOR,
    PHYSICAL,
    QUOTES,
    TIER_A,
    TIER_B,
    TIER_C,
    TIER_S,
    CharProfile,
    ProfileFileError,
    allowed_sections,
    approve,
    body_hash,
    draft_path,
    render_profile,
    write_profile,
)
from arklore.profiles.quotes import QuoteSource

# -- hand-written files (tier S), deliberately untidy ------------------------------------

HAND_LF = """\
# 测试员

她是巡逻队里最早出发的人。

## 锚
- 种族：菲林
-   身高:163cm
- 核心经历：在测试国长大，十六岁起负责北边的巡逻路线。

## 物理标签
* 菲林
* 右耳有一道旧伤

## 口头禅
“再检查一遍。”

##   我·性格   ##
认真，紧张，但从不抱怨。

```
## 这不是一个标题（在代码块里）
```

## 我·关于博士
把博士当作一起看地图的人。"""  # no final newline on purpose

HAND_CRLF = (
    "\ufeff# 向导\r\n\r\n## 锚\r\n- 种族：未公开\r\n- 身高：177cm   \r\n\r\n"
    "## 笔记（手写）\r\n\t这一段是某位编辑加的。\r\n\r\n\r\n## 语录\r\n"
    "- 「北边的桥还算结实。」 —— story:obt/test/a#3:0123abcd\r\n"
)

HAND_ODD = (
    "前言：写在标题前面的一行。\n#   双生   \n"
    + """
- note: 这个键不是 arklore 的

##锚不是标题（缺空格）
## 锚
- 代号：双生
### 小标题属于锚
- 身高：150cm


## 其他
"""
)

HAND_NO_SECTIONS = "# 只有标题\n\n还没开始写。\n"


@pytest.mark.parametrize("text", [HAND_LF, HAND_CRLF, HAND_ODD, HAND_NO_SECTIONS, ""])
def test_hand_written_files_round_trip_byte_identical(text: str, tmp_path: Path) -> None:
    prof = CharProfile.parse(text)
    assert prof.text() == text
    path = tmp_path / "char_900_tester.char"
    path.write_bytes(text.encode("utf-8"))
    again = CharProfile.read(path)
    assert again.text().encode("utf-8") == path.read_bytes()
    assert again.tier == TIER_S and not again.hand_edited


def test_sections_unknown_ones_kept_in_place() -> None:
    prof = CharProfile.parse(HAND_LF)
    assert [s.title for s in prof.sections] == [
        ANCHOR,
        PHYSICAL,
        "口头禅",
        "我·性格",
        "我·关于博士",
    ]
    assert prof.name == "测试员"
    assert section(prof, "口头禅").content == "“再检查一遍。”"
    # the ## line inside the fence belongs to 我·性格, not a new section
    assert "## 这不是一个标题" in section(prof, "我·性格").body
    assert section(prof, PHYSICAL).bullets() == ["菲林", "右耳有一道旧伤"]

    crlf = CharProfile.parse(HAND_CRLF)
    assert [s.title for s in crlf.sections] == [ANCHOR, "笔记（手写）", QUOTES]
    assert crlf.name == "向导"  # the BOM does not hide the title
    assert section(crlf, ANCHOR).content == "- 种族：未公开\n- 身高：177cm"
    assert crlf.quotes()[0].source_id == "story:obt/test/a#3:0123abcd"

    odd = CharProfile.parse(HAND_ODD)
    assert [s.title for s in odd.sections] == [ANCHOR, "其他"]
    assert "### 小标题属于锚" in section(odd, ANCHOR).body
    assert odd.name == "双生" and odd.header == {"note": "这个键不是 arklore 的"}


def test_char_id_from_header_else_file_name(tmp_path: Path) -> None:
    path = tmp_path / "char_901_guide.char"
    path.write_text(HAND_CRLF, encoding="utf-8", newline="")
    assert CharProfile.read(path).char_id == "char_901_guide"
    gen = CharProfile.parse(_generated())
    assert gen.char_id == "char_900_tester"


def test_non_utf8_file_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "char_900_tester.char"
    path.write_bytes("# 测试员\n".encode("gbk"))
    with pytest.raises(ProfileFileError) as exc:
        CharProfile.read(path)
    assert "not UTF-8" in exc.value.one_line() and "\n" not in exc.value.one_line()


# -- generated files (tiers A and B) -----------------------------------------------------


def _generated(tier: str = TIER_B, height: str = "163cm", quote: str | None = None) -> str:
    q = (
        quote
        or "- 「今天的巡逻路线，我已经替你画好了。」 —— voice:char_900_tester_CN_001（任命助理）"
    )
    return render_profile(
        name="测试员",
        char_id="char_900_tester",
        generated_at="2026-01-02T03:04:05Z",
        model=None,
        tier=tier,
        sources=["handbook_info_table: char_900_tester (基础档案)", "charword_table: x"],
        sections=[
            (ANCHOR, f"- 种族：菲林\n- 身高：{height}"),
            (PHYSICAL, "- 菲林"),
            (QUOTES, q),
            ("我·性格", "认真（草稿）"),
            ("我·关于博士", ""),
        ],
    )


def test_generated_file_header_tier_and_hash() -> None:
    text = _generated()
    prof = CharProfile.parse(text)
    assert prof.text() == text
    assert prof.tier == TIER_B and prof.marker == "[AUTO-DRAFT]"
    assert prof.header["generated"] == "2026-01-02T03:04:05Z" and prof.header["model"] == "none"
    assert prof.header_list("sources")[0].startswith("handbook_info_table")
    assert prof.stored_hash == prof.computed_hash() and not prof.hand_edited
    assert text.splitlines()[0] == "# 测试员 [AUTO-DRAFT]"
    assert CharProfile.parse(_generated(TIER_A)).tier == TIER_A


def test_hash_ignores_line_endings_and_trailing_spaces_but_not_content() -> None:
    text = _generated()
    crlf = text.replace("\n", "\r\n").replace("- 菲林\r\n", "- 菲林   \r\n")
    assert not CharProfile.parse(crlf).hand_edited
    edited = text.replace("身高：163cm", "身高：165cm")
    assert CharProfile.parse(edited).hand_edited
    no_hash = "\n".join(ln for ln in text.split("\n") if not ln.startswith("- hash:"))
    assert CharProfile.parse(no_hash).hand_edited  # a generated tier without a hash: protected
    assert body_hash("## a\n\nb\n") == body_hash("\n## a  \r\n\r\nb")


def test_approve_changes_only_the_marker() -> None:
    text = _generated()
    approved = approve(text)
    prof = CharProfile.parse(approved)
    assert prof.tier == TIER_A and not prof.hand_edited
    diff = [(a, b) for a, b in zip(text.split("\n"), approved.split("\n"), strict=True) if a != b]
    assert diff == [("# 测试员 [AUTO-DRAFT]", "# 测试员 [AUTO]")]
    with pytest.raises(ProfileFileError):
        approve(approved)


# -- allowed_sections --------------------------------------------------------------------


def test_allowed_sections_by_tier() -> None:
    s = allowed_sections(CharProfile.parse(HAND_LF))
    assert s.tier == TIER_S
    assert s.titles() == [ANCHOR, PHYSICAL, "口头禅", "我·性格", "我·关于博士"]
    a = allowed_sections(CharProfile.parse(approve(_generated())))
    assert a.tier == TIER_A and a.titles() == [ANCHOR, PHYSICAL, QUOTES, "我·性格"]  # empty one out
    b = allowed_sections(CharProfile.parse(_generated()))
    assert b.tier == TIER_B and b.titles() == [ANCHOR, PHYSICAL, QUOTES]
    assert ("我·性格", "tier B: not reviewed (1 line(s) not a quote)") in b.excluded
    c = allowed_sections(None)
    assert c.tier == TIER_C and c.sections == [] and c.total_tokens == 0
    for sec in a.sections:
        assert sec.tokens == count_tokens(f"## {sec.title}\n{sec.text}") > 0
    assert a.total_tokens == sum(x.tokens for x in a.sections)


def test_tier_b_quotes_verified() -> None:
    fabricated = "- 「我从来不检查桥。」 —— voice:char_900_tester_CN_001（任命助理）"
    good = "- 「今天的巡逻路线，我已经替你画好了。」 —— voice:char_900_tester_CN_001（任命助理）"
    sources = {
        "voice:char_900_tester_CN_001": QuoteSource(
            "今天的巡逻路线，我已经替你画好了。", "char_900_tester"
        )
    }
    # a person added a made-up quote to a draft: the file is now edited
    edited = CharProfile.parse(_generated().replace(good, good + "\n" + fabricated))
    assert edited.hand_edited
    blind = allowed_sections(edited)
    assert QUOTES not in blind.titles()
    assert any(t == QUOTES and "unverified" in why for t, why in blind.excluded)
    checked = allowed_sections(edited, quote_sources=sources, owners={"char_900_tester"})
    quotes = next(s for s in checked.sections if s.title == QUOTES)
    assert quotes.text == good
    # an unedited draft's quotes passed the gate when it was generated
    assert QUOTES in allowed_sections(CharProfile.parse(_generated())).titles()
    # the same fabricated quote in a tier-S file is the person's call
    s_file = CharProfile.parse("# 测试员\n\n## 语录\n" + fabricated + "\n")
    assert allowed_sections(s_file).titles() == [QUOTES]


# -- the writer --------------------------------------------------------------------------


def test_writer_creates_then_replaces_unedited_draft(tmp_path: Path) -> None:
    path = tmp_path / "chars" / "char_900_tester.char"
    r = write_profile(path, _generated())
    assert r.action == "written" and path.read_text(encoding="utf-8") == _generated()
    same = _generated().replace("2026-01-02T03:04:05Z", "2026-02-02T00:00:00Z")
    assert write_profile(path, same).action == "unchanged"
    assert path.read_text(encoding="utf-8") == _generated()  # not rewritten for a timestamp
    newer = _generated(height="164cm")
    r = write_profile(path, newer)
    assert r.action == "written" and path.read_text(encoding="utf-8") == newer
    assert not draft_path(path).exists()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp files left


def test_writer_never_overwrites_tier_s(tmp_path: Path) -> None:
    path = tmp_path / "char_900_tester.char"
    path.write_bytes(HAND_CRLF.encode("utf-8"))
    r = write_profile(path, _generated())
    assert r.action == "draft" and r.path == draft_path(path)
    assert r.path.name == "char_900_tester.char.draft"
    assert path.read_bytes() == HAND_CRLF.encode("utf-8")
    assert r.path.read_text(encoding="utf-8") == _generated()
    assert "tier S" in r.reason


def test_writer_detects_hand_edited_a_and_writes_draft_beside(tmp_path: Path) -> None:
    path = tmp_path / "char_900_tester.char"
    edited = approve(_generated()).replace("认真（草稿）", "认真，而且很会照顾新人。")
    path.write_text(edited, encoding="utf-8")
    assert CharProfile.read(path).hand_edited
    r = write_profile(path, _generated(height="164cm"))
    assert r.action == "draft" and "edited by hand" in r.reason
    assert path.read_text(encoding="utf-8") == edited
    assert CharProfile.read(draft_path(path)).tier == TIER_B


def test_writer_keeps_approved_file_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "char_900_tester.char"
    approved = approve(_generated())
    path.write_text(approved, encoding="utf-8")
    assert write_profile(path, _generated()).action == "unchanged"  # same body: still A
    assert CharProfile.read(path).tier == TIER_A
    r = write_profile(path, _generated(height="164cm"))
    assert r.action == "draft" and path.read_text(encoding="utf-8") == approved
    r = write_profile(path, _generated(height="164cm"), replace_approved=True)
    assert r.action == "written" and CharProfile.read(path).tier == TIER_B


def test_writer_refuses_non_generated_text(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_profile(tmp_path / "x.char", HAND_LF)
