"""Her way of speaking on the real corpus: what 能天使, 银灰 and 艾雅法拉 call the Doctor, what
the others call 陈 and 玫兰莎, and how many operators with lines enough get a section."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.speech import CALLED, DOCTOR_FORM
from arklore.workspace import Workspace

pytestmark = pytest.mark.realdata

COVERAGE_LINES = 200
"""Lines of her own (voice and story) from which an operator must have a section."""


@pytest.fixture(scope="module")
def inputs(real_profile_inputs: list[OperatorInputs]) -> dict[str, OperatorInputs]:
    return {i.char_id: i for i in real_profile_inputs}


def fact(ws: Workspace, inputs: dict[str, OperatorInputs], name: str, kind: str) -> str:
    found = [f.text for f in inputs[ws.names.resolve(name)].speech if f.kind == kind]
    assert found, (name, kind)
    return found[0]


def test_what_they_call_the_doctor(real_workspace: Workspace, inputs) -> None:
    ws = real_workspace
    # 能天使: 老板 in 8 voice lines (★老板，… and 老板......不，… too), 博士 never there
    assert fact(ws, inputs, "能天使", DOCTOR_FORM).startswith("称博士为「老板」（语音 8 次")
    assert fact(ws, inputs, "艾雅法拉", DOCTOR_FORM).startswith("称博士为「前辈」（语音 10 次")
    # 银灰: 盟友 in his voice lines and one story line; his story lines to the Doctor say 博士
    # far more often, so 盟友 is his second form (the data, not what a fan would expect)
    silver = fact(ws, inputs, "银灰", DOCTOR_FORM)
    assert silver.startswith("称博士为「博士」") and "也称「我的盟友」" in silver


def test_what_the_others_call_them(real_workspace: Workspace, inputs) -> None:
    ws = real_workspace
    chen = fact(ws, inputs, "陈", CALLED)  # her most frequent four: 陈长官, 陈小姐, 老陈, 陈sir
    assert re.search(r"「陈sir」（\d+ 次，近卫局成员 \d+ 次等）", chen), chen
    assert "「小玫」（芙兰卡" in fact(ws, inputs, "玫兰莎", CALLED)


def test_nearly_every_operator_with_lines_enough_has_a_section(
    real_workspace: Workspace, inputs, metrics: Callable[[str], None]
) -> None:
    big = [i for i in inputs.values() if len(i.voice) + len(i.story) >= COVERAGE_LINES]
    covered = [i for i in big if i.speech]
    more = [i for i in big if any(f.kind != "length" for f in i.speech)]
    share = len(covered) / len(big)
    metrics(
        f"speech (## 说话方式): {len(covered)}/{len(big)} operators with {COVERAGE_LINES}+ lines "
        f"of their own have a section ({share:.0%}), {len(more)} with a fact besides line length"
    )
    assert len(big) > 200 and share >= 0.95
