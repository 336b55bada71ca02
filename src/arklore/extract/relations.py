"""The relation-extraction task: prompt, response shape and chunking.

The model only *proposes*; ``extract.gates`` decides what is believed. So the response
model here checks the shape and nothing else: ``line_no`` stays ``Any`` (pydantic must not
turn "12", 12.0 or True into 12 — the gate has to see them to reject them) and the
vocabulary fields stay plain strings (the gate judges their values and records why).
"""

from __future__ import annotations

from typing import Any

import orjson

from arklore.core.model import DOCTOR, Line, LineKind
from arklore.core.predicates import BASES, KINDS, PREDICATES
from arklore.llm.shape import Shape, decode_shape, validate_shape

PROMPT_VERSION = "relations-v1"
TASK = "relations"

_EXAMPLE = {
    "edges": [
        {
            "subject": "洛文",
            "subject_kind": "character",
            "predicate": "近亲",
            "object": "米拉",
            "object_kind": "character",
            "basis_claimed": "direct",
            "evidence": [{"line_no": 12, "supports": "direct", "note": "洛文称米拉为小侄女"}],
            "note": "叔侄",
        }
    ]
}

_KIND_HELP = {
    "character": "有名字的人物",
    "court_seat": "职位本身，担任者会更替（如某城的执政官）",
    "role": "功能性称呼，不是具体的人（如“卫兵”“店主”）",
    "unknown_speaker": "剧本未给出名字的说话人（如“？？？”）",
}

_BASIS_HELP = {
    "direct": "两人在这几行里直接互动，或一方当面向另一方说出这层关系",
    "reported": "由第三人转述，或只在旁白/书信中提到",
    "inferred": "没有明说，是从上下文推断的",
}


def _system_prompt() -> str:
    predicates = "\n".join(f"- {name}：{meaning}" for name, meaning in PREDICATES)
    kinds = "\n".join(f"- {k}：{_KIND_HELP[k]}" for k in KINDS)
    bases = "\n".join(f"- {b}：{_BASIS_HELP[b]}" for b in BASES)
    example = orjson.dumps(_EXAMPLE).decode()
    return f"""你是剧情关系标注员。你会读到一个剧情关卡的台词，每行以 [行号] 开头。
请找出人物之间在这段剧情里有文本依据的关系，只输出 JSON，形如：
{example}

规则：
1. 每条关系必须给出 evidence：引用支持它的行，line_no 写成整数，必须是上文出现过的行号。
2. supports 说明该行如何支持这条关系；basis_claimed 是你对整条关系的判断。取值只能是：
{bases}
3. subject_kind / object_kind 只能是：
{kinds}
4. predicate 只能从下表中选，都不合适时才用 other，并在 note 里写清是什么关系：
{predicates}
5. 有方向的关系（监护、师徒、上下级、主仆、委托、恩人）以 subject 为施予方/上位方。
6. 玩家角色写作“{DOCTOR}”；台词里的 Dr.{{@nickname}} 指的就是{DOCTOR}。
7. 人名照台词中的写法，不要自行翻译或补全；不要把同一个人和自己连成关系。
8. 没有可靠依据就不要输出；没有任何关系时输出 {{"edges": []}}。"""


SYSTEM_PROMPT = _system_prompt()


def render_line(line: Line) -> str:
    """One line as the model sees it: ``[line_no] 说话人：文本`` with branch info if any."""
    text = " ".join(line.text.split("\n"))
    if line.kind is LineKind.CHOICE:
        options = " / ".join(line.options) if line.options else text
        body = f"{line.speaker or DOCTOR}（选项）：{options}"
    elif line.speaker:
        mark = "（存疑）" if line.uncertain else ""
        body = f"{line.speaker}{mark}：{text}"
    else:
        label = {LineKind.SUBTITLE: "字幕", LineKind.STICKER: "字幕"}.get(line.kind, "旁白")
        body = f"（{label}）{text}"
    branch = ""
    if line.branch is not None:
        values = "/".join(line.branch.values)
        branch = f"〔第{line.branch.decision_line_no}行选{values}时〕"
    return f"[{line.line_no}] {branch}{body}"


def build_messages(
    stage_path: str, lines: list[Line], *, stage_title: str | None = None
) -> list[dict[str, str]]:
    """System + user messages for one stage (or one chunk of it, see ``chunk_lines``)."""
    return stage_messages(SYSTEM_PROMPT, stage_path, lines, stage_title=stage_title)


def stage_messages(
    system: str, stage_path: str, lines: list[Line], *, stage_title: str | None = None
) -> list[dict[str, str]]:
    """A chunked task's messages: its ``system`` prompt, then the stage's lines as every such
    task shows them (a header naming the stage and the chunk's line range)."""
    header = f"关卡：{stage_path}"
    if stage_title:
        header += f"（{stage_title}）"
    if lines:
        header += f"\n本段为第 {lines[0].line_no}–{lines[-1].line_no} 行。"
    body = "\n".join(render_line(line) for line in lines)
    user = f"{header}\n\n{body}\n\n请按要求输出 JSON。"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def chunk_lines(lines: list[Line], *, max_chars: int = 6000, overlap: int = 3) -> list[list[Line]]:
    """Split a long stage into windows of at most ``max_chars`` rendered characters that keep
    their original line numbers; consecutive windows share ``overlap`` lines so a relation
    spread over a boundary is still seen whole once."""
    sizes = [len(render_line(line)) + 1 for line in lines]
    chunks: list[list[Line]] = []
    start = 0
    while start < len(lines):
        end, used = start, 0
        while end < len(lines) and (end == start or used + sizes[end] <= max_chars):
            used += sizes[end]
            end += 1
        chunks.append(lines[start:end])
        if end >= len(lines):
            break
        start = max(end - overlap, start + 1)
    return chunks


class EvidenceProposal(Shape):
    line_no: Any  # judged by gate 1; never coerced here
    supports: str
    note: str | None = ""


class EdgeProposal(Shape):
    subject: str
    subject_kind: str
    predicate: str
    object: str
    object_kind: str
    basis_claimed: str
    evidence: list[EvidenceProposal]
    note: str | None = ""


class RelationsResponse(Shape):
    edges: list[EdgeProposal]


def parse_data(data: Any) -> RelationsResponse:
    """Validate already-decoded JSON."""
    return validate_shape(RelationsResponse, data)


def parse_response(content: str) -> RelationsResponse:
    """Raw reply text -> validated shape; ResponseShapeError on non-JSON or wrong shape."""
    return decode_shape(RelationsResponse, content)
