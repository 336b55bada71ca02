"""Archive sections dated by hand (``data/archive_since.toml``): a chat set before a section's
``since`` does not receive it, as her anchor line or as a quote; the rest of her archive stays."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from arklore.core.errors import InputFileError
from arklore.profiles.archive_since import load, packaged
from arklore.profiles.charfile import UsableSection
from arklore.profiles.persona import Persona, until

HER = "char_900_test"
LATE = "activities/act_late/level_late_01_beg"
DATED = {HER: {"客观履历": LATE, "档案资料二": LATE}}

ANCHOR = "\n".join([
    "- 代号：测试员",
    "- 客观履历：她如今已是某城的议员。",  # dated: tells of later events
    "- 档案资料一：她喜欢在甲板上晒太阳。",  # undated: stays
])  # fmt: skip
TRAITS = "\n".join([
    f"- 「她变得好相处了一些。」 —— archive:{HER}/档案资料二（档案资料二）",
    f"- 「她总是很早起床。」 —— archive:{HER}/档案资料三（档案资料三）",
])  # fmt: skip


def _persona() -> Persona:
    return Persona(HER, "测试员", "B", None, False,
                   [UsableSection("锚", ANCHOR, 10), UsableSection("我·性格", TRAITS, 10)])  # fmt: skip


def _knows(late: bool) -> Callable[[Iterable[str]], bool]:
    def knows(ids: Iterable[str]) -> bool:
        return late or not any(x.startswith(LATE) for x in ids)

    return knows


def test_a_dated_archive_section_is_held_back_before_its_stage() -> None:
    got, held = until(_persona(), _knows(late=False), DATED.__getitem__)
    text = "\n".join(s.text for s in got.sections)
    assert held == 2
    assert "议员" not in text and "好相处" not in text  # the anchor line and the quote
    assert "晒太阳" in text and "很早起床" in text and "代号" in text  # undated: kept


def test_a_dated_archive_section_is_kept_from_its_stage_on() -> None:
    got, held = until(_persona(), _knows(late=True), DATED.__getitem__)
    assert held == 0 and got == _persona()


def test_the_packaged_file_dates_each_section_once_with_a_stage_path() -> None:
    dated = packaged()
    assert dated and all("#" not in s and "/" in s for d in dated.values() for s in d.values())
    assert "客观履历" in dated["char_1019_siege2"]  # the speaker of Londinium


def _file(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "a.toml"
    p.write_text(body, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "body, why",
    [
        ('[[archive]]\noperator = "c"\nsections = ["客观履历"]\nsince = "a/b#1:00"\n'
         'reason = "r"\n', "since: a stage path"),
        ('[[archive]]\noperator = "c"\nsections = []\nsince = "a/b"\nreason = "r"\n',
         "sections"),
        ('[[archive]]\noperator = "c"\nsections = ["客观履历"]\nsince = "a/b"\n',
         "needs exactly the keys"),
        ('[[archive]]\noperator = "c"\nsections = ["客观履历"]\nsince = "a/b"\nreason = "r"\n'
         '[[archive]]\noperator = "c"\nsections = ["客观履历"]\nsince = "a/c"\nreason = "r"\n',
         "dated twice"),
    ],
)  # fmt: skip
def test_a_malformed_entry_is_refused_naming_the_entry(tmp_path: Path, body: str, why: str) -> None:
    with pytest.raises(InputFileError, match=why):
        load(_file(tmp_path, body))
