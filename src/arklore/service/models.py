"""Request and response shapes of the HTTP API (the OpenAPI document is made from these).

Message sizes are not limited here: a message over ``ARKLORE_MAX_MESSAGE_CHARS`` gets a 413
from :func:`arklore.core.text.check_message`, not a 422.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Name = Field(min_length=1, max_length=200, description="operator name, alias, appellation or id")


class HistoryItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: str


Until = Field(
    None, min_length=1, max_length=200,
    description="the story point the chat is set at: a stage code (R8-1, CW-ST-1), an event or "
    "chapter name (孤星, 第十一章) or an id; nothing later reaches the turn (default: "
    "ARKLORE_UNTIL, else the whole story)",
)  # fmt: skip


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operator: str = Name
    message: str = Field(description="the user's message (at most ARKLORE_MAX_MESSAGE_CHARS)")
    history: list[HistoryItem] = Field(default_factory=list, max_length=200)
    participants: list[str] = Field(
        default_factory=list, max_length=16,
        description="other operators present (a group chat with two or more)",
    )  # fmt: skip
    l3_targets: list[str] = Field(
        default_factory=list, max_length=64,
        description="people the app's own memory already recalled: left out of the relations",
    )  # fmt: skip
    until: str | None = Until
    reply: bool = Field(False, description="also ask the model (task `chat`) for her reply")
    stream: bool = Field(False, description="with reply: server-sent events")


class RelationContextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operator: str = Name
    message: str
    l3_targets: list[str] = Field(default_factory=list, max_length=64)
    budget: int | None = Field(None, ge=1, le=100_000)
    until: str | None = Until


class PersonaEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=200_000, description="the whole .char file")


class CuratedVerdictIn(BaseModel):
    """A reviewer's verdict on one curated relation (``POST /v1/curated/confirm|reject``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: str = Field(alias="from", min_length=1, max_length=200, description="whose view")
    to: str = Field(min_length=1, max_length=200, description="of whom")
    predicate: str | None = Field(default=None, max_length=40, description="when several")
    by: str = Field(default="admin", max_length=80, description="the reviewer's name")
    note: str = Field(default="", max_length=2000)
    sha: str = Field(min_length=64, max_length=64, description="the relation's sha as shown")


class StageRefOut(BaseModel):
    path: str
    code: str | None = None
    name: str | None = None
    event: str | None = None


class SourcesOut(BaseModel):
    line_ids: list[str]
    stages: list[StageRefOut]
    files: list[str]


class BlockOut(BaseModel):
    name: str
    text: str
    tokens: int
    budget: int
    empty: bool
    reason: str
    sources: SourcesOut
    items: list[dict[str, Any]]
    meta: dict[str, Any]


class OperatorRef(BaseModel):
    id: str
    name: str


class UntilOut(BaseModel):
    query: str  # as asked
    label: str  # the story it resolved to
    group: str  # its story group id (main_11, act25side, story_..._set_1)
    position: int  # in the project's story order
    held_back: dict[str, int]  # per block: the items from later in the story left out


class TurnOut(BaseModel):
    operator: OperatorRef
    participants: list[str]
    blocks: list[BlockOut]
    total_tokens: int
    blocks_tokens: int
    system_prompt: str
    timings_ms: dict[str, float]
    warnings: list[str] = []  # about the knowledge base: a build that did not finish
    until: UntilOut | None = None  # the story point used, None: the whole story
    reply: str | None = None
    reply_error: str | None = None


class RelationOut(BaseModel):
    target_id: str
    target_name: str
    predicate: str
    strength: float
    text: str
    source: str
    doc_id: str | None = None
    score: float | None = None
    evidence_line_ids: list[str]
    generated_by: str = ""


class RelationContextOut(BaseModel):
    operator_id: str
    text: str
    tokens: int
    budget: int
    anchors: list[RelationOut]
    contextual: list[RelationOut]
    timings_ms: dict[str, float]
    embedded: bool
    held_back: int = 0  # relations resting on a line after the story point (``until``)
