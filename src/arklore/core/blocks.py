"""One block of a chat turn's system prompt, as plain data (no I/O).

A chat turn injects a few blocks (persona, her view of the Doctor, relations, memories, her
own lines as examples, and in a group chat the relations between the people present). Each says what it injects (``text``), what it costs
(``tokens``, counted by :func:`arklore.core.tokens.count_tokens`, within ``budget``), where it
comes from (``line_ids``, ``stages``, ``files``) and, when it is empty, why (``reason``): an
empty block is an answer, never an error, so a chat app can show what is missing.

Every subsystem that feeds a chat returns a :class:`Block`: the memories of the events layer
(``ws.events.memories``, rendered by the chat layer) plug in by returning one.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.core.tokens import TokenCounter, count_tokens

PERSONA = "persona"
DOCTOR = "doctor"
RELATIONS = "relations"
MEMORIES = "memories"
GROUP = "group"
EXEMPLARS = "exemplars"
NOW = "now"
SPEECH = "speech"
"""The blocks' names; the order a prompt shows them in is :data:`arklore.chat.blocks.BLOCK_ORDER`."""


UNTITLED = "一段无标题的剧情"
"""What a chat calls a stage the tables give neither a title nor an event."""
MODES: tuple[tuple[str, str], ...] = (
    ("obt/guide/", "新手引导"),
    ("obt/tutorial/", "新手引导"),
    ("obt/rogue/", "集成战略"),
    ("obt/roguelike/", "集成战略"),
    ("obt/sandboxperm/", "生息演算"),
    ("activities/act1sandbox/", "生息演算"),
    ("obt/legion/", "保全派驻"),
    ("obt/rune/", "危机合约"),
    ("activities/act5d1/", "危机合约"),
    ("activities/act1autochess/", "卫戍协议"),
    ("activities/act1vautochess/", "卫戍协议"),
    ("activities/bossrush/", "引航者试炼"),
    ("activities/act1bossrush/", "引航者试炼"),
    ("activities/act1lock/", "联锁竞赛"),
    ("activities/act3fun/", "愚人节活动"),
    ("activities/act4fun/", "愚人节活动"),
    ("activities/act5fun/", "愚人节活动"),
    ("activities/act6fun/", "愚人节活动"),
    ("activities/act7fun/", "愚人节活动"),
    ("obt/main/level_main_9_chapter_recap", "主线前情回顾"),
)
"""The game mode an untitled stage belongs to, by the folder it sits in (each mode's name is
the one its own dialogue uses; act3fun's and act4fun's training headers say 愚人节, act6fun's
opening says 4月1日, act5fun and act7fun are that folder series' jokes: a shop pricing all at
1000 源石锭, a 博士？ taking Rhodes Island over): most untitled stages are a mode's dialogue,
which a model should weigh as such (a tutorial, a roguelike ending, an April Fools' joke), not
as the story. Chapter 9's opening recap replays scenes of the chapters before it, line for line."""
GUIDE_FOLDERS = frozenset({"guide", "training"})
GUIDE = "一段玩法引导对话"
"""An untitled stage in an event's ``guide/`` or ``training/`` folder, or a file named
``guide_…`` or ``…_tutorial``: how to play it."""


NOT_STORY_MODES = frozenset({"愚人节活动"})
"""Modes whose dialogue is not her story: an April Fools' joke (维什戴尔？ and 阿米娅？ taking
Rhodes Island over) is not what she lived."""


@functools.lru_cache(maxsize=1 << 14)  # per stage path, asked about per line
def mode_of(path: str) -> str | None:
    """The game mode a stage's folder belongs to (:data:`MODES`), or None."""
    return next((m for folder, m in MODES if path.startswith(folder)), None)


def is_guide(path: str) -> bool:
    """A stage that teaches how to play (:data:`GUIDE`), whatever event it belongs to."""
    *folders, name = path.split("/")
    return bool(
        GUIDE_FOLDERS.intersection(folders)
        or name.startswith("guide_")
        or name.endswith("_tutorial")
    )


@functools.lru_cache(maxsize=1 << 14)
def is_story(path: str) -> bool:
    """Does a stage tell her story? Not a how-to-play (年 explaining 辞岁行's tiles: “食”，会
    生成能给我方干员提供技力的炊事) nor an April Fools' joke (:data:`NOT_STORY_MODES`): her
    memories and her example scenes read story stages only (her timeline lists every stage)."""
    return not is_guide(path) and mode_of(path) not in NOT_STORY_MODES


def book_title(name: str | None) -> str | None:
    """A stage's name as a title, 《name》, or None when it has none: the one place a title is
    wrapped, so a name the tables already wrap (``《管理法修正案》``, 4 real stages) is not
    wrapped twice, and the tables' stray spaces (``" 夕"``) are gone."""
    name = (name or "").strip()
    if not name:
        return None
    if name.startswith("《") and name.endswith("》"):
        return name
    return f"《{name}》"


@dataclass(frozen=True, slots=True)
class StageRef:
    """A stage a block cites: its path and what the game calls it."""

    path: str
    code: str | None = None  # story code, e.g. "0-1"
    name: str | None = None  # story name
    event: str | None = None  # event name
    tag: str | None = None  # where in the stage's level: 行动前, 行动后, 幕间…

    def label(self) -> str:
        parts = [p for p in (self.code, book_title(self.name)) if p]
        return " ".join(parts) or self.untitled()

    def heading(self) -> str:
        """Where the stage sits and what it is called, as an entry shows it: the code and
        the tag (行动前 and 行动后 of one level are two stages), the title or :meth:`untitled`,
        and the event in brackets unless it is the title itself (an operator record's event
        is its own name: said once)."""
        where = " ".join(x for x in (self.code, self.tag) if x)
        name = book_title(self.name)
        event = (self.event or "").strip()
        title = name or self.untitled()
        if name and event and book_title(event) != name:
            title += f"（{event}）"
        return " ".join(x for x in (where, title) if x)

    def untitled(self) -> str:
        """A stage the tables give no title (a level's or a training's dialogue): its event's
        in-level dialogue; with no event either (1,104 real stages), its game mode's dialogue
        (:data:`MODES`) or an event's how-to-play (:data:`GUIDE`), 1,089 of them; else
        一段无标题的剧情; never the file path a model cannot read (``path`` and ``to_dict``
        keep it for tools)."""
        event = (self.event or "").strip()
        if event:
            return f"「{event}」关卡中的对话"
        mode = mode_of(self.path)
        if mode:
            return f"{mode}中的一段对话"
        return GUIDE if is_guide(self.path) else UNTITLED

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "code": self.code,
            "name": self.name,
            "event": self.event,
            "tag": self.tag,
        }


@dataclass(slots=True)
class Block:
    """One block of a system prompt (see the module docstring).

    ``items`` are the block's entries as structured data (a section, a relation, a memory);
    ``meta`` says more about the block as a whole (the profile tier, ``kind="appearances"``).
    """

    name: str
    text: str = ""
    tokens: int = 0
    budget: int = 0
    reason: str = ""  # why the block is empty (or what it left out to fit), "" when complete
    line_ids: list[str] = field(default_factory=list)
    stages: list[StageRef] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.text

    def stage_codes(self) -> list[str]:
        return [s.code for s in self.stages if s.code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "empty": self.empty,
            "reason": self.reason,
            "sources": {
                "line_ids": list(self.line_ids),
                "stages": [s.to_dict() for s in self.stages],
                "files": list(self.files),
            },
            "items": list(self.items),
            "meta": dict(self.meta),
        }


def ms_since(t0: float) -> float:
    """Milliseconds since ``t0`` (``time.perf_counter()``), as the turn's timings show them."""
    return round((time.perf_counter() - t0) * 1000, 3)


def empty_block(name: str, budget: int, reason: str, **meta: Any) -> Block:
    """A block with nothing to inject and the reason why."""
    return Block(name, budget=budget, reason=reason, meta=dict(meta))


def fit_reason(block: str, noun: str, total: int, kept: int, budget: int) -> str:
    """Why a block listing ``total`` items holds only ``kept`` of them ("" when all fit): one
    wording for every block, so a reader of ``arklore turn --why`` learns it once."""
    if not kept:
        return f"not even one {noun} fits the {block} budget of {budget} tokens"
    if kept < total:
        return f"{total - kept} {noun}(s) left out to fit {budget} tokens"
    return ""


def fitted_block(
    name: str,
    text: str,
    budget: int,
    counter: TokenCounter,
    *,
    noun: str,
    total: int,
    kept: int,
    **fields: Any,
) -> Block:
    """A block whose ``text`` :func:`fit_lines` cut to ``budget``: its tokens and the
    :func:`fit_reason` for what was left out."""
    reason = fit_reason(name, noun, total, kept, budget)
    return Block(name, text, counter(text) if text else 0, budget, reason, **fields)


def stage_of(line_id: str) -> str:
    """The stage path of a line id (``<stage_path>#<line_no>:<hash>``)."""
    return line_id.split("#", 1)[0]


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def fit_lines(
    header: str,
    lines: Sequence[str],
    budget: int,
    counter: TokenCounter = count_tokens,
    *,
    drop_order: Callable[[list[int]], int] | None = None,
) -> tuple[str, list[int]]:
    """``header`` plus as many of ``lines`` as fit ``budget`` tokens, joined by newlines.

    Lines are dropped one at a time (``drop_order`` picks the index among those left; default:
    the last) until the text fits. Returns the text ("" when not even one line fits) and the
    indexes of the lines kept, in order."""
    kept = list(range(len(lines)))
    while kept:
        text = "\n".join(
            [header, *(lines[i] for i in kept)] if header else [lines[i] for i in kept]
        )
        if counter(text) <= budget:
            return text, kept
        kept.remove(drop_order(kept) if drop_order else kept[-1])
    return "", []
