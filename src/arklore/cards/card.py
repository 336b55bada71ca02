"""One operator's character card, from what the lower layers give (no I/O here).

Field by field (every text has the player's placeholder ``{@nickname}`` as ``{{user}}``):

==================  =============================================================================
``description``     her ``.char`` sections that describe her, as her tier allows them
                    (:meth:`ProfilesFacade.persona`: S/A everything, B 锚/物理标签/verified quotes,
                    C nothing): 锚, 物理标签, 语录 (her words only), 我·关于博士, and any section a
                    person added; ``我·性格`` goes to ``personality``, ``我·身边的人`` to the lorebook
``personality``     ``## 我·性格``
``first_mes``       her own greeting (:meth:`ProfilesFacade.greeting`: a voice line such as 问候
                    or 交谈, else her first story line to the Doctor)
``mes_example``     her verbatim scenes (the chat's exemplars block: ``<START>``, her lines as
                    ``{{char}}:``, the Doctor's as ``{{user}}:``, others by name, narration in
                    ``*…*``); without scenes, her voice lines (talk first) as ``{{char}}:`` lines
``creator_notes``   what it was made from: the profile and tier, and the source of every
                    greeting, example, relation and memory, with line ids
``character_book``  one entry per person she has a relation with (keyed by that person's names,
                    made safe by :mod:`arklore.cards.keys`) and one per story event she
                    remembers (keyed by the event's and its stages' titles)
``extensions``      ``arklore``: her id, tier and the sources as data; fields of an earlier
                    export that arklore does not write are kept
==================  =============================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.cards.keys import KeySet
from arklore.cards.spec import BookEntry, book_entry, card_v3
from arklore.core.blocks import Block
from arklore.core.text import render_nickname
from arklore.profiles.charfile import PEOPLE, PERSONALITY, QUOTES, SPEECH
from arklore.profiles.greeting import Greeting
from arklore.profiles.persona import Persona
from arklore.profiles.quotes import VoiceLine, parse_quote_line, voice_group
from arklore.profiles.speech import parse_fact_line

USER, CHAR = "{{user}}", "{{char}}"
CREATOR = "arklore"
TAGS = ("明日方舟", "Arknights", "arklore")

EXAMPLE_VOICES = 6
"""Voice lines used as example messages when she has no scenes."""
MEMORY_ITEMS_PER_EVENT = 5
"""Memories (or appearances) written into one event's entry at most."""
MEMORY_CHARS = 240
"""Characters of one memory line at most."""
RELATION_ORDER, MEMORY_ORDER = 100, 50
"""Insertion order bases: relations (plus their strength in hundredths) above memories."""


def user_text(text: str) -> str:
    """Story text for a card: the player's placeholder as SillyTavern's ``{{user}}``."""
    return render_nickname(text, USER)


@dataclass
class RelationInput:
    """One of her relations for the lorebook (from the relation index / graph)."""

    person: str  # graph node id
    name: str
    predicate: str
    strength: float
    text: str
    source: str
    doc_id: str | None
    line_ids: list[str]
    keys: KeySet


@dataclass
class MemoryInput:
    """The memories (or appearances) of one story event, for one lorebook entry."""

    event: str
    titles: list[str]  # the event's and its stages' titles: the entry's key candidates
    lines: list[str]
    stages: list[str]
    line_ids: list[str]
    kind: str  # "memories" | "appearances"
    keys: list[str] = field(default_factory=list)
    dropped_keys: dict[str, str] = field(default_factory=dict)


@dataclass
class CardInputs:
    char_id: str
    name: str
    latin: str
    persona: Persona
    greeting: Greeting | None
    exemplars: Block
    voices: list[VoiceLine]
    relations: list[RelationInput]
    memories: list[MemoryInput]
    notes: list[str] = field(default_factory=list)  # why something is missing
    version: str = ""


@dataclass
class Built:
    """A card and what was left out of it, with why."""

    card: dict[str, Any]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)


# -- fields ---------------------------------------------------------------------------------


def description(p: Persona) -> str:
    parts = []
    for sec in p.sections:
        if sec.title in (PERSONALITY, PEOPLE):
            continue
        text = sec.text
        if sec.title == QUOTES:  # her words only: the source ids go to creator_notes
            quotes = [parse_quote_line(ln) for ln in text.split("\n")]
            text = "\n".join(f"- 「{q.text}」" for q in quotes if q is not None)
            if not text:
                continue
        if sec.title == SPEECH:  # the facts only, never their source ids
            facts = [parse_fact_line(ln) for ln in text.split("\n")]
            text = "\n".join(f"- {f[0]}" for f in facts if f is not None)
        parts.append(f"## {sec.title}\n{user_text(text)}")
    return "\n\n".join(parts)


def personality(p: Persona) -> str:
    """``## 我·性格``: a quote line as its words and who says them (``「…」——赫默``), never its
    source id (that goes to creator_notes with the profile)."""
    sec = next((s for s in p.sections if s.title == PERSONALITY), None)
    if sec is None:
        return ""
    lines = [(ln, parse_quote_line(ln)) for ln in sec.text.split("\n")]
    return user_text("\n".join(f"- {q.said_by()}" if q else ln for ln, q in lines))


def _quote_sources(p: Persona) -> list[str]:
    sec = next((s for s in p.sections if s.title == QUOTES), None)
    if sec is None:
        return []
    return [q.source_id for ln in sec.text.split("\n") if (q := parse_quote_line(ln)) is not None]


def scene_example(item: Mapping[str, Any]) -> str:
    """One scene of the exemplars block as a SillyTavern example: ``<START>`` then its lines."""
    out = ["<START>"]
    for ln in item.get("lines") or ():
        said = user_text(str(ln.get("option") or ln.get("text") or "")).strip()
        if not said:
            continue
        speaker = user_text(str(ln.get("speaker") or "")).strip()
        if ln.get("hers"):
            out.append(f"{CHAR}: {said}")
        elif ln.get("kind") == "choice" or speaker in ("博士", USER):
            out.append(f"{USER}: {said}")
        elif speaker:
            out.append(f"{speaker}: {said}")
        else:
            out.append(f"*{said}*")
    return "\n".join(out) if len(out) > 1 else ""


def _voice_rank(v: VoiceLine) -> tuple[int, int]:
    group = voice_group(v.title)
    return ({"talk": 0, "daily": 1, "battle": 2}.get(group or "", 3), v.index)


def mes_example(block: Block, voices: Sequence[VoiceLine]) -> tuple[str, list[str], str]:
    """(example messages, their source ids, where they come from: "scenes" | "voice" | "")."""
    scenes = [s for s in (scene_example(it) for it in block.items) if s]
    if not scenes and block.text and not block.items:
        scenes = ["<START>\n" + user_text(block.text)]
    if scenes:
        return "\n".join(scenes), [f"story:{x}" for x in block.line_ids], "scenes"
    picked = sorted((v for v in voices if voice_group(v.title)), key=_voice_rank)
    picked = [v for v in picked if v.text.strip()][:EXAMPLE_VOICES]
    if not picked:
        return "", [], ""
    text = "\n".join(f"<START>\n{CHAR}: {user_text(v.text.strip())}" for v in picked)
    return text, [v.source_id for v in picked], "voice"


# -- the lorebook ---------------------------------------------------------------------------


def relation_entry(me: str, r: RelationInput) -> BookEntry:
    return BookEntry(
        keys=list(r.keys.keys),
        content=user_text(r.text),
        comment=f"{me}→{r.name}（{r.predicate}）",
        order=RELATION_ORDER + round(r.strength * 100),
        secondary=list(r.keys.secondary),
        logic=r.keys.logic,
        whole_words=r.keys.whole_words,
        meta={
            "key": f"relation:{r.person}",
            "kind": "relation",
            "person": r.person,
            "predicate": r.predicate,
            "strength": round(r.strength, 4),
            "source": r.source,
            "doc_id": r.doc_id,
            "line_ids": list(r.line_ids),
            "unsafe_keys": dict(r.keys.unsafe),
        },
    )


def _memory_entry(me: str, m: MemoryInput) -> BookEntry:
    head = f"【{me}的记忆：{m.event}】" if m.kind == "memories" else f"【{me}在{m.event}】"
    return BookEntry(
        keys=list(m.keys),
        content="\n".join([head, *(user_text(x) for x in m.lines)]),
        comment=f"{me}：{m.event}",
        order=MEMORY_ORDER,
        meta={
            "key": f"memory:{m.event}",
            "kind": m.kind,
            "stages": list(m.stages),
            "line_ids": list(m.line_ids),
            "dropped_keys": dict(m.dropped_keys),
        },
    )


def _book_entries(inp: CardInputs) -> tuple[list[BookEntry], list[tuple[str, str]]]:
    entries: list[BookEntry] = []
    skipped: list[tuple[str, str]] = []
    for r in inp.relations:
        if r.keys.empty:
            skipped.append((f"relation {r.name}", r.keys.why_empty()))
        else:
            entries.append(relation_entry(inp.name, r))
    for m in inp.memories:
        if not m.keys:
            why = "; ".join(f"{k}: {w}" for k, w in m.dropped_keys.items()) or "no title"
            skipped.append((f"memory {m.event}", f"no safe key ({why})"))
        else:
            entries.append(_memory_entry(inp.name, m))
    return entries, skipped


# -- the card -------------------------------------------------------------------------------


def _creator_notes(inp: CardInputs, example_sources: list[str], example_kind: str) -> str:
    p = inp.persona
    out = [
        f"由 arklore 从《明日方舟》剧情文本整理生成（{inp.char_id}）；图片只有名字，不含游戏美术。"
    ]
    if p.tier == "C":
        out.append("人设：没有 .char 档案（tier C），描述与性格为空。")
    else:
        titles = "、".join(s.title for s in p.sections) or "无"
        out.append(f"人设：{p.path or '.char'}（tier {p.tier}），用到的段落：{titles}。")
    sources: list[str] = []
    if inp.greeting is not None:
        sources.append(f"开场白：{inp.greeting.source_id}（{inp.greeting.note}）")
    if example_sources:
        what = "剧情原文场景" if example_kind == "scenes" else "语音"
        sources.append(f"对话示例（{what}）：" + "，".join(example_sources))
    quotes = _quote_sources(p)
    if quotes:
        sources.append("语录：" + "，".join(quotes))
    for r in inp.relations:
        if not r.keys.empty:
            ids = "，".join(r.line_ids) or "无行号"
            sources.append(f"关系 {r.name}（{r.source}）：{ids}")
    for m in inp.memories:
        if m.keys:
            sources.append(f"记忆 {m.event}：" + ("，".join(m.line_ids) or "，".join(m.stages)))
    if sources:
        out.append("来源与行号：")
        out += [f"- {s}" for s in sources]
    out += [f"注：{n}" for n in inp.notes]
    return "\n".join(out)


def assemble(
    inp: CardInputs,
    *,
    keep_extensions: Mapping[str, Any] | None = None,
    keep_entry_extensions: Mapping[str, Mapping[str, Any]] | None = None,
) -> Built:
    """Her V3 card (see the module doc). ``keep_extensions``: the card-level extension
    fields of an earlier export to keep; ``keep_entry_extensions``: per entry key
    (``extensions.arklore.key``) the entry extension fields to keep."""
    examples, example_sources, example_kind = mes_example(inp.exemplars, inp.voices)
    entries, skipped = _book_entries(inp)
    kept_entries = keep_entry_extensions or {}
    book = {
        "name": f"{inp.name}的人际与记忆",
        "description": f"由 arklore 生成：{inp.name}与身边人的关系（按那人的名字触发）与{inp.name}经历的剧情（按活动与关卡名触发）。",
        "scan_depth": 2,
        "token_budget": 1024,
        "recursive_scanning": False,
        "extensions": {},
        "entries": [
            book_entry(e, i, kept_entries.get(e.meta["key"])) for i, e in enumerate(entries)
        ],
    }
    extensions: dict[str, Any] = {k: v for k, v in (keep_extensions or {}).items() if k != CREATOR}
    extensions[CREATOR] = {
        "char_id": inp.char_id,
        "tier": inp.persona.tier,
        "profile": inp.persona.path,
        "greeting": (
            {"source_id": inp.greeting.source_id, "note": inp.greeting.note}
            if inp.greeting
            else None
        ),
        "examples": {"kind": example_kind, "sources": example_sources},
        "version": inp.version,
    }
    data = {
        "name": inp.name,
        "description": description(inp.persona),
        "personality": personality(inp.persona),
        "scenario": "",
        "first_mes": user_text(inp.greeting.text) if inp.greeting else "",
        "mes_example": examples,
        "creator_notes": _creator_notes(inp, example_sources, example_kind),
        "system_prompt": "",
        "post_history_instructions": "",
        "alternate_greetings": [],
        "tags": list(TAGS),
        "creator": CREATOR,
        "character_version": inp.version,
        "extensions": extensions,
        "character_book": book,
        "group_only_greetings": [],
        "source": [],
    }
    if not inp.greeting:
        skipped.append(("first_mes", "no voice line and no story line of hers to the Doctor"))
    if not examples:
        skipped.append(("mes_example", "no scene and no voice line of hers"))
    return Built(card_v3(data), skipped)


__all__ = [
    "CardInputs",
    "Built",
    "MemoryInput",
    "RelationInput",
    "assemble",
    "description",
    "mes_example",
    "personality",
    "relation_entry",
    "scene_example",
    "user_text",
]
