"""The relations prompt shows every line with its number and speaker, asks for the agreed
JSON shape, and the response model checks shape only (raw line_no types survive)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from arklore.core.errors import ResponseShapeError
from arklore.core.model import DOCTOR, Branch, Line, LineKind
from arklore.core.predicates import BASES, KINDS, PREDICATE_NAMES
from arklore.extract.relations import (
    PROMPT_VERSION,
    RelationsResponse,
    build_messages,
    chunk_lines,
    parse_data,
    parse_response,
    render_line,
)

STAGE = "test/act/rel_02"

LINES = [
    Line(STAGE, 1, LineKind.NARRATION, "港口的雾还没有散。"),
    Line(STAGE, 2, LineKind.DIALOGUE, "船票带了吗？", speaker="伊索", speaker_raw="伊索"),
    Line(
        STAGE,
        3,
        LineKind.DIALOGUE,
        "带了……大概。",
        speaker="寇拉",
        speaker_raw="寇拉？",
        uncertain=True,
    ),
    Line(
        STAGE,
        4,
        LineKind.CHOICE,
        "上船 / 再等等",
        speaker=DOCTOR,
        options=("上船", "再等等"),
        option_values=("1", "2"),
    ),  # fmt: skip
    Line(STAGE, 5, LineKind.DIALOGUE, "那就走吧。", speaker="伊索", branch=Branch(4, ("1",))),
]


def _edge(**over: object) -> dict[str, Any]:
    base: dict[str, Any] = {
        "subject": "伊索",
        "subject_kind": "character",
        "predicate": "朋友",
        "object": "寇拉",
        "object_kind": "character",
        "basis_claimed": "direct",
        "evidence": [{"line_no": 2, "supports": "direct", "note": "x"}],
        "note": "",
    }
    base.update(over)
    return base


def _content(*edges: dict[str, Any]) -> str:
    return orjson.dumps({"edges": list(edges)}).decode()


def test_messages_show_every_line_no_and_speaker() -> None:
    system, user = build_messages(STAGE, LINES, stage_title="雾港")
    assert (system["role"], user["role"]) == ("system", "user")
    text = user["content"]
    assert STAGE in text and "雾港" in text
    assert "[1] （旁白）港口的雾还没有散。" in text
    assert "[2] 伊索：船票带了吗？" in text
    assert "[3] 寇拉（存疑）：带了……大概。" in text
    assert f"[4] {DOCTOR}（选项）：上船 / 再等等" in text
    assert "[5] 〔第4行选1时〕伊索：那就走吧。" in text


def test_system_prompt_asks_for_the_json_shape_and_lists_the_vocabulary() -> None:
    system = build_messages(STAGE, LINES)[0]["content"]
    for key in ('"edges"', '"subject"', '"subject_kind"', '"predicate"', '"object"',
                '"object_kind"', '"basis_claimed"', '"evidence"', '"line_no"', '"supports"',
                '"note"'):  # fmt: skip
        assert key in system
    for word in (*PREDICATE_NAMES, *KINDS, *BASES):
        assert word in system
    assert PROMPT_VERSION == "relations-v1"


def test_render_line_flattens_newlines() -> None:
    line = Line(STAGE, 9, LineKind.DIALOGUE, "第一句\n第二句", speaker="伊索")
    assert render_line(line) == "[9] 伊索：第一句 第二句"


def test_chunks_keep_line_numbers_overlap_and_cover_everything() -> None:
    lines = [
        Line(STAGE, i, LineKind.DIALOGUE, f"这是第{i}句台词，内容随便写一点。", speaker="伊索")
        for i in range(1, 101)
    ]
    chunks = chunk_lines(lines, max_chars=400, overlap=3)
    assert len(chunks) > 3
    assert chunks[0][0].line_no == 1 and chunks[-1][-1].line_no == 100
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert [ln.line_no for ln in a[-3:]] == [ln.line_no for ln in b[:3]]
    for chunk in chunks:
        assert sum(len(render_line(ln)) + 1 for ln in chunk) <= 400
        assert [ln.line_no for ln in chunk] == list(range(chunk[0].line_no, chunk[-1].line_no + 1))
    assert "本段为第" in build_messages(STAGE, chunks[1])[1]["content"]
    assert chunk_lines(LINES, max_chars=10_000) == [LINES]
    huge = [Line(STAGE, 1, LineKind.NARRATION, "长" * 900), *LINES[1:3]]
    assert [len(c) for c in chunk_lines(huge, max_chars=100, overlap=1)] == [1, 2]


def test_parse_keeps_raw_line_no_types() -> None:
    content = _content(
        _edge(evidence=[
            {"line_no": "12", "supports": "direct"},
            {"line_no": 12.0, "supports": "direct"},
            {"line_no": True, "supports": "direct"},
            {"line_no": None, "supports": "direct"},
            {"line_no": 2, "supports": "direct"},
        ])
    )  # fmt: skip
    values = [e.line_no for e in parse_response(content).edges[0].evidence]
    assert values == ["12", 12.0, True, None, 2]
    assert [type(v) for v in values] == [str, float, bool, type(None), int]


def test_parse_keeps_unknown_vocabulary_for_the_gate_to_judge() -> None:
    parsed = parse_response(_content(_edge(predicate="叔侄", subject_kind="person")))
    assert (parsed.edges[0].predicate, parsed.edges[0].subject_kind) == ("叔侄", "person")


def test_parse_accepts_fences_empty_edges_and_null_notes() -> None:
    assert parse_response('```json\n{"edges": []}\n```').edges == []
    assert parse_response(_content(_edge(note=None))).edges[0].note is None


@pytest.mark.parametrize(
    "content",
    [
        "",
        "not json",
        "[]",
        '{"relations": []}',
        '{"edges": {}}',
        _content(_edge(evidence=[{"supports": "direct"}])),  # line_no missing
        _content(_edge(evidence=[{"line_no": 2, "supports": 1}])),
        _content(_edge(predicate=3)),
        _content({k: v for k, v in _edge().items() if k != "basis_claimed"}),
    ],
)
def test_parse_rejects_non_json_and_wrong_shape(content: str) -> None:
    with pytest.raises(ResponseShapeError):
        parse_response(content)
    assert issubclass(ResponseShapeError, ValueError)  # the LLM layer retries ValueError


def test_parse_data_and_model_validate_accept_decoded_json() -> None:
    data = {"edges": [_edge()]}
    assert parse_data(data) == RelationsResponse.model_validate(data)
    with pytest.raises(ResponseShapeError):
        parse_data({"edges": [1]})
