"""Task A: archives -> the anchor (``## 锚``) and physical tags (``## 物理标签``).

Structured facts (race, height, birthplace, birthday, infection status, combat experience,
faction...) are copied from the source fields by code (:mod:`arklore.profiles.archive`),
never by the model: the model writes only ``核心经历``, a few sentences from the archive
text. Any structured field the model returns anyway is checked against its source
(:func:`~arklore.profiles.archive.structured_fields_equal_source`): a wrong value is replaced
by the source value and reported, a field her sources lack is removed and reported, and a
field that is not a source field at all is dropped and reported (the model writes 核心经历
only). With no model, A still gives the structured anchor (:func:`rule_result`).
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from arklore.llm import ChatRequest
from arklore.llm.shape import Shape
from arklore.profiles.archive import (
    BASIC,
    CORE,
    Anchor,
    Fact,
    gaps_line,
    structured_fields_equal_source,
)
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.results import FAILED, OK, SKIPPED, TaskResult
from arklore.profiles.rules import check_text

LETTER = "A"
TASK = "distill_a"
PROMPT_VERSION = "distill-a-v2"
MAX_TOKENS = 600
EXPECTED_OUTPUT_TOKENS = 250
CORE_MIN, CORE_MAX = 20, 240
SKIP_SECTIONS = (BASIC, "综合体检测试")
"""Sections not sent: their fields are copied by code, the test scores say nothing."""

SYSTEM_PROMPT = f"""你是明日方舟干员档案的整理员。你会读到一名干员的官方档案原文。
请只写这名干员的“{CORE}”：用 2–4 句中文概括档案中最关键的经历（来历、重要转折、如今在罗德岛的身份或工作），\
{CORE_MAX} 字以内。
规则：
1. 只依据给出的档案原文，不要加入原文没有的事实、人名或推测。
2. 不要写种族、身高、生日、出身地、感染情况等字段：这些由程序从档案原样抄录。
3. 用第三人称（按档案的【性别】称“他”或“她”，不明时用代号），写成一段连续的文字，不要分行，不要列表。
只输出 JSON，形如：{{"core": "……"}}"""


class AnchorResponse(Shape):
    core: str
    fields: dict[str, Any] = {}  # structured fields a model volunteers: checked, never trusted

    @field_validator("core")
    @classmethod
    def _core(cls, v: str) -> str:
        return check_text(v, CORE, min_chars=CORE_MIN, max_chars=CORE_MAX, min_cjk=10)


def archive_text(inp: OperatorInputs) -> str:
    """The archive sections the model reads (in source order), each headed 【title】."""
    return "\n\n".join(
        f"【{s.title}】\n{s.text}" for s in inp.archive if s.title not in SKIP_SECTIONS
    )


def build_request(inp: OperatorInputs) -> ChatRequest | None:
    """The request for 核心经历; None when her archive has no text beyond its fields."""
    text = archive_text(inp)
    if not text:
        return None
    facts = "\n".join(f"- {f.label}：{f.value}" for f in inp.anchor.facts)
    body = (
        f"程序已从档案抄录的字段（仅供参考，不要改写，不要输出）：\n{facts}\n" if facts else ""
    ) + f"\n档案原文：\n{text}\n\n请按要求输出 JSON。"
    return inp.request(TASK, SYSTEM_PROMPT, body, AnchorResponse, MAX_TOKENS, PROMPT_VERSION)


def _facts_output(facts: list[Fact]) -> list[list[str]]:
    return [[f.label, f.value] for f in facts]


def rule_result(inp: OperatorInputs, *, reason: str = "", status: str | None = None) -> TaskResult:
    """The structured anchor alone (no model): ok when any field was copied."""
    facts = inp.anchor.facts
    if not facts:
        return TaskResult(
            LETTER, inp.char_id, status or SKIPPED, reason or gaps_line(inp.gaps) or "no field"
        )
    why = reason or f"{len(facts)} fields copied from source; {CORE}: needs a model"
    return TaskResult(
        LETTER,
        inp.char_id,
        status or OK,
        why,
        output={"facts": _facts_output(facts), "core": None},
    )


def no_request_result(inp: OperatorInputs) -> TaskResult:
    return rule_result(
        inp,
        reason=f"{len(inp.anchor.facts)} fields copied from source; {CORE}: no archive text",
    )


def failed_result(inp: OperatorInputs, error: str) -> TaskResult:
    """The model gave up: the structured anchor is still written, the failure recorded."""
    return rule_result(inp, reason=f"{CORE} failed: {error}", status=FAILED)


def apply(inp: OperatorInputs, parsed: AnchorResponse, *, model: str) -> TaskResult:
    """The checked result: source facts (any field the model gave corrected and reported)
    and the model's 核心经历."""
    given = [Fact(str(k).strip(), _as_text(v), "", "") for k, v in parsed.fields.items()]
    fixed, corrections = structured_fields_equal_source(
        Anchor(inp.char_id, facts=given, core=parsed.core), inp.tables
    )
    findings = [f"anchor field {c}" for c in corrections if c.action != "added"]
    order = {f.label: i for i, f in enumerate(inp.anchor.facts)}
    facts = []
    for f in fixed.facts:
        if f.label in order:
            facts.append(f)
        else:  # a field no source has: the model was asked for 核心经历 only
            findings.append(f"anchor field {f.label}: {f.value!r} removed (not a source field)")
    facts.sort(key=lambda f: order[f.label])
    reason = f"{len(facts)} fields copied from source; {CORE} by {model or 'the model'}"
    if findings:
        reason += f"; {len(findings)} model fields corrected or removed"
    return TaskResult(
        LETTER,
        inp.char_id,
        OK,
        reason,
        output={"facts": _facts_output(facts), "core": parsed.core},
        findings=findings,
        model=model,
    )


def _as_text(v: Any) -> str:
    return v if isinstance(v, str) else str(v)
