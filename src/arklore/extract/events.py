"""The story-event task: prompt, response shape and messages (chunking is relations').

The model splits a stage (or a chunk of it) into happenings and writes, for each one, an
objective third-person ``summary`` and a first-person memory per actor. It only *proposes*:
:mod:`arklore.events.checks` decides what is believed (presence, first person, time hints,
line ranges). So the response model checks the shape and nothing else: line numbers stay
``Any`` (the checks must see ``"12"``, ``12.0`` or ``True`` to refuse them) and ``phase``
stays a plain string (the checks judge it). ``memories`` must be a JSON object keyed by actor:
a list beside ``actors`` would leave a first-person text without its owner, so it is a shape
error (retried, then the chunk fails), never guessed.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import Field

from arklore.core.model import DOCTOR, Line
from arklore.extract.relations import chunk_lines, stage_messages
from arklore.llm.shape import Shape, decode_shape, validate_shape

PROMPT_VERSION = "events-v1"
TASK = "events"

PHASES: tuple[str, ...] = ("起因", "经过", "转折", "结果")
"""The part an event plays in its stretch of story."""

# An invented example (never game text): the shape and the voice the model should use.
_EXAMPLE = {
    "events": [
        {
            "phase": "经过",
            "summary": "洛文在桥头拦下米拉，把一封没有署名的信交给了她。",
            "actors": ["洛文", "米拉"],
            "memories": {
                "洛文": "我在桥头等到了米拉，把那封信交到她手里。",
                "米拉": "我刚走到桥头，洛文就拦住我，塞给我一封没有署名的信。",
            },
            "time_hint": "第二天清晨",
            "line_start": 3,
            "line_end": 9,
        }
    ]
}


def _system_prompt() -> str:
    example = orjson.dumps(_EXAMPLE).decode()
    phases = "、".join(PHASES)
    return f"""你是剧情事件标注员。你会读到一个剧情关卡（或其中一段）的台词，每行以 [行号] 开头。
请把这段剧情按发生顺序切分成事件，只输出 JSON，形如：
{example}

规则：
1. line_start、line_end 写成整数，是该事件起止的行号（含两端），必须是上文出现过的行号；事件按行号先后排列，彼此不要重叠。
2. phase 只能是：{phases}（这件事在本段剧情中起的作用）。
3. summary 是客观的第三人称概述，一到三句，只写台词里发生的事，不加推测。
4. actors 是亲身在场的人物：在这几行里说话的人、被当面称呼的人。名字照台词中说话人的写法，不要翻译或补全。只有旁白、没有人物在场时写 []。
5. memories 是以 actors 中的名字为键的对象（不是列表）：这个人物用第一人称（“我”“我们”）回忆这件事的一两句话，只写她/他亲身经历、看到或听到的事。不在场的人物不要写回忆。
6. time_hint 是台词中明确写出的时间说法（如“两周后”“那天夜里”），必须从台词原文逐字摘出；没有就写 null。
7. 玩家角色写作“{DOCTOR}”；台词里的 Dr.{{@nickname}} 指的就是{DOCTOR}，{DOCTOR}的选项也算{DOCTOR}在场。
8. 标有〔第N行选X时〕的行属于玩家选项的不同分支，是互相替代的内容，不要把不同分支写成先后发生的事。
9. 没有可写的事件时输出 {{"events": []}}。"""


SYSTEM_PROMPT = _system_prompt()


def build_messages(
    stage_path: str, lines: list[Line], *, stage_title: str | None = None
) -> list[dict[str, str]]:
    """System + user messages for one stage or one chunk of it (``chunk_lines``)."""
    return stage_messages(SYSTEM_PROMPT, stage_path, lines, stage_title=stage_title)


def chunks(lines: list[Line]) -> list[list[Line]]:
    """The chunks a stage is sent in: the relation task's windows (overlapping lines)."""
    return chunk_lines(lines)


class EventProposal(Shape):
    phase: str
    summary: str
    actors: list[str] = Field(default_factory=list)
    memories: dict[str, str] = Field(default_factory=dict)
    time_hint: str | None = None
    line_start: Any  # judged by the range check; never coerced here
    line_end: Any


class EventsResponse(Shape):
    events: list[EventProposal]


def parse_data(data: Any) -> EventsResponse:
    """Validate already-decoded JSON."""
    return validate_shape(EventsResponse, data)


def parse_response(content: str) -> EventsResponse:
    """Raw reply text -> validated shape; ResponseShapeError on non-JSON or wrong shape."""
    return decode_shape(EventsResponse, content)
