"""One operator's character card, from what the lower layers give (no I/O here).

Field by field (the Doctor is 博士 in every field, as her own voice lines and greetings call
him: the story's player placeholder ``{@nickname}`` too, and arklore's own words; SillyTavern's
``{{user}}``, which it replaces with the user's persona name, is only the examples' speaker
mark ``{{user}}:`` its parser needs, never text; no field a model reads carries a Markdown heading, a source id or a tier tag: those go to
``creator_notes`` and ``extensions``):

=======================  ========================================================================
``name``                 her display name, an alternate form told apart from her other forms
                         (:meth:`NamesFacade.unique_name`: 阿米娅（近卫）), so no two cards collide
``description``          her ``.char`` sections that describe her, as her tier allows them
                         (:meth:`ProfilesFacade.persona`: S/A everything, B 锚/物理标签/verified
                         quotes, C nothing), as plain lines under plain labels: 锚, 物理标签,
                         语录 (her words only), 我·关于博士, and any section a person added
``personality``          ``## 我·性格`` as a chat shows it (:func:`arklore.chat.blocks.persona.
                         personality_lines`) and ``## 说话方式`` as the speech block shows it
                         (:func:`arklore.chat.blocks.speech.speech_block`); with neither,
                         the traits her anchor tells as well, else her own words (语录)
``scenario``             the setting (Rhodes Island, talking with the Doctor) and where she
                         stands now, as the now block shows it (:mod:`arklore.chat.blocks.now`)
``first_mes``            her own greeting (:meth:`ProfilesFacade.greeting`: a voice line such as
                         问候 or 交谈, else her story line to the Doctor, in her record, or any);
                         with no line of hers at all, a one-sentence narrated opening
``alternate_greetings``  her other voice lines that open a conversation (任命助理, 交谈, 问候…)
``mes_example``          her verbatim scenes (the chat's exemplars block), shaped for SillyTavern's
                         parser, which splits messages only at ``{{user}}:`` and ``{{char}}:``:
                         her consecutive lines are one ``{{char}}:`` message, the Doctor's one
                         ``{{user}}:`` message, and another speaker's line or narration is told
                         inside her message (``（老船长说：「……」）``), never as a ``Name:`` line;
                         without scenes, her voice lines (talk first)
``creator_notes``        what it was made from: the profile and tier, and the source of every
                         greeting, example, relation and memory, with line ids
``character_book``       one entry per person she has a relation with (keyed by that person's
                         names, made safe by :mod:`arklore.cards.keys`) and one per story event
                         she remembers (keyed by the event's and its stages' titles)
``extensions``           ``arklore``: her id, tier and the sources as data; fields of an earlier
                         export that arklore does not write are kept
=======================  ========================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.cards.keys import KeySet
from arklore.cards.spec import BookEntry, book_entry, card_v3
from arklore.chat.blocks import now
from arklore.chat.blocks.persona import personality_lines
from arklore.chat.blocks.speech import speech_block
from arklore.core.blocks import Block
from arklore.core.text import render_nickname
from arklore.events.standing import Standing
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PEOPLE,
    PERSONALITY,
    PHYSICAL,
    QUOTES,
    SPEECH,
)
from arklore.profiles.greeting import Greeting
from arklore.profiles.persona import Persona
from arklore.profiles.quotes import VoiceLine, parse_quote_line, voice_group
from arklore.profiles.speech import parse_fact_line

USER, CHAR = "{{user}}", "{{char}}"  # the examples' speaker marks, never text
DOCTOR = "博士"
"""The Doctor in every card text: how her voice lines and greetings call him (``{{user}}``
would be the persona's name in some fields and 博士 in the lines she says)."""
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
SPEECH_BUDGET = 100_000
"""Tokens for ``## 说话方式`` in ``personality``: a card has no per-turn budget, so all of it."""
NARRATED = "narrated"
"""The ``first_mes`` kind when she has no line at all: :func:`opening`."""


def user_text(text: str) -> str:
    """Story text for a card: the player's placeholder as :data:`DOCTOR`."""
    return render_nickname(text, DOCTOR)


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
    label: str = ""
    """How the entry names the person (初雪（恩雅）, as the chat's relations block does);
    default ``name``."""
    group: str = ""
    """SillyTavern's inclusion group of her entry on this person, the same in her card's book
    and in the World Info file: with both enabled, it goes into the prompt once."""


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
    alternates: list[Greeting] = field(default_factory=list)
    standing: list[Standing] = field(default_factory=list)
    called: str = ""  # what her text calls her (her display name); ``name`` tells forms apart
    until: dict[str, Any] | None = None  # the story point the card is set at (None: all)

    @property
    def her(self) -> str:
        return self.called or self.name


@dataclass
class Built:
    """A card and what was left out of it, with why."""

    card: dict[str, Any]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    empty: bool = False
    """Nothing of hers in the data: no archive or profile text, no line of hers, no scene, no
    person or memory in her book; the card would hold only her name and the setting."""


# -- fields ---------------------------------------------------------------------------------


def _plain(line: str) -> str:
    """A profile line as plain text: a quote as its words, a bullet without its marker and
    source ids, never a heading mark."""
    q = parse_quote_line(line)
    if q is not None:
        return f"「{user_text(q.text.strip())}」"
    fact = parse_fact_line(line)
    text = fact[0] if fact is not None else line.strip()
    return user_text(text.lstrip("#").strip())


def _label(title: str, name: str, lines: Sequence[str]) -> str:
    """What a section is called in the description, in words a reader of the card knows."""
    if title == QUOTES:
        return f"{name}说过的话："
    if title == ABOUT_DOCTOR:
        quoted = all(ln.startswith("「") for ln in lines)
        return f"{name}对{DOCTOR}说过的话：" if quoted else f"{name}眼中的{DOCTOR}："
    if title == PHYSICAL:
        return "外貌与身份："
    return f"{title}："


def description(p: Persona, name: str | None = None) -> str:
    """Her profile's describing sections as plain lines under plain labels (see the module
    doc): no heading, no source id; the anchor's fields as they are (代号：银灰)."""
    name = name or p.name
    parts = []
    shown: set[str] = set()  # a quote in 语录 and in 我·关于博士 is shown once
    for sec in p.sections:
        if sec.title in (PERSONALITY, PEOPLE, SPEECH):
            continue
        lines = [t for t in (_plain(ln) for ln in sec.text.split("\n")) if t and t not in shown]
        shown.update(t for t in lines if t.startswith("「"))
        if not lines:
            continue
        if sec.title == ANCHOR:
            parts.append("\n".join(lines))
        elif sec.title == PHYSICAL:
            parts.append(_label(sec.title, name, lines) + "、".join(lines))
        else:
            parts.append("\n".join([_label(sec.title, name, lines), *lines]))
    return "\n\n".join(parts)


OWN_WORDS_LINES = 4
"""Her own words (``## 语录``) that stand for her way of speaking in ``personality`` when her
profile has neither ``## 我·性格`` nor ``## 说话方式``."""


def personality(p: Persona) -> str:
    """``## 我·性格`` as a chat shows it (the traits, then the words and who says them), then
    ``## 说话方式`` as the speech block shows it: plain lines, no source id.

    A card has no turn that injects her anchor, so where leaving out what the anchor tells
    would leave no trait at all, the traits stay (her archive tells them twice rather than
    never). With neither section, her own words (``## 语录``, at most
    :data:`OWN_WORDS_LINES`) stand for how she speaks: grounded lines, never a summary."""
    parts = []
    traits = personality_lines(p, DOCTOR) or personality_lines(p, DOCTOR, even_if_told=True)
    if traits:
        parts.append("\n".join(["性格：", *traits]))
    speech = speech_block(p, budget=SPEECH_BUDGET, nickname=DOCTOR)
    if speech.items:
        parts.append("\n".join(["说话方式：", *(f"- {it['text']}" for it in speech.items)]))
    if not parts:
        own = [
            f"- {_plain(ln)}"
            for sec in p.sections
            if sec.title == QUOTES
            for ln in sec.text.split("\n")
            if parse_quote_line(ln) is not None
        ][:OWN_WORDS_LINES]
        if own:
            parts.append("\n".join([f"说话方式（{p.name}的原话）：", *own]))
    return "\n\n".join(parts)


def setting(name: str) -> str:
    """The card's setting: where the chat is and with whom."""
    return f"罗德岛本舰。{name}此刻在舰上，与罗德岛的{DOCTOR}交谈。"


def scenario(name: str, standing: Sequence[Standing]) -> str:
    """The setting, then where she stands now as the now block shows it (its heading and
    lines: the game's summaries of her latest stages, newer than her archive)."""
    parts = [setting(name)]
    if standing:
        lines = [user_text(now.standing_line(it)) for it in standing]
        parts.append("\n".join([now.heading(name), *lines]))
    return "\n\n".join(parts)


def opening(name: str) -> str:
    """A first message for an operator with no line of her own anywhere: one narrated
    sentence of the setting, no words put in her mouth."""
    return f"*罗德岛本舰上，{name}见到了{DOCTOR}。*"


def _quote_sources(p: Persona) -> list[tuple[str, list[str]]]:
    """Per section, the source ids of its quote lines (what description and personality
    show without them)."""
    out = []
    for sec in p.sections:
        ids = [
            q.source_id for ln in sec.text.split("\n") if (q := parse_quote_line(ln)) is not None
        ]
        if ids:
            out.append((sec.title, ids))
    return out


def _one_line(text: str) -> str:
    """A story line on one line: SillyTavern's parser reads every line start as a possible
    ``Name:``, so a line break inside a line must not start a new one."""
    return " ".join(user_text(text).split("\n")).strip()


def told(speaker: str, said: str) -> str:
    """Another speaker's line, or narration, as it is told inside her message."""
    return f"（{speaker}说：「{said}」）" if speaker else f"（{said}）"


def scene_example(item: Mapping[str, Any]) -> str:
    """One scene of the exemplars block as a SillyTavern example block: ``<START>``, then
    turns. Her consecutive lines are one ``{{char}}:`` message and the Doctor's one
    ``{{user}}:`` message (SillyTavern strips only the first ``Name:`` of a message);
    another speaker's line and narration are told inside her nearest message
    (:func:`told`): before her next line, else after her last; what precedes the Doctor's
    first words or follows his last, with no line of hers beside it, is left out. A scene
    without a line of hers gives nothing."""
    turns: list[tuple[str, list[str]]] = []
    pending: list[str] = []  # others' lines and narration waiting for a message of hers

    def add(who: str, texts: list[str]) -> None:
        if turns and turns[-1][0] == who:
            turns[-1][1].extend(texts)
        else:
            turns.append((who, texts))

    for ln in item.get("lines") or ():
        said = _one_line(str(ln.get("option") or ln.get("text") or ""))
        if not said:
            continue
        speaker = _one_line(str(ln.get("speaker") or ""))
        if ln.get("hers"):
            add(CHAR, [*pending, said])
            pending = []
        elif ln.get("kind") == "choice" or speaker in ("博士", USER):
            if pending and turns and turns[-1][0] == CHAR:
                turns[-1][1].extend(pending)
            pending = []
            add(USER, [said])
        else:
            pending.append(told(speaker, said))
    if pending and turns and turns[-1][0] == CHAR:
        turns[-1][1].extend(pending)
    if not any(who == CHAR for who, _ in turns):
        return ""
    return "\n".join(["<START>", *(f"{who}: " + "\n".join(texts) for who, texts in turns)])


def _voice_rank(v: VoiceLine) -> tuple[int, int]:
    group = voice_group(v.title)
    return ({"talk": 0, "daily": 1, "battle": 2}.get(group or "", 3), v.index)


def mes_example(block: Block, voices: Sequence[VoiceLine]) -> tuple[str, list[str], str]:
    """(example messages, their source ids, where they come from: "scenes" | "voice" | "")."""
    scenes = [s for s in (scene_example(it) for it in block.items) if s]
    if scenes:
        return "\n".join(scenes), [f"story:{x}" for x in block.line_ids], "scenes"
    picked = sorted((v for v in voices if voice_group(v.title)), key=_voice_rank)
    picked = [v for v in picked if v.text.strip()][:EXAMPLE_VOICES]
    if not picked:
        return "", [], ""
    text = "\n".join(f"<START>\n{CHAR}: {_one_line(v.text.strip())}" for v in picked)
    return text, [v.source_id for v in picked], "voice"


# -- the lorebook ---------------------------------------------------------------------------


def relation_entry(me: str, r: RelationInput) -> BookEntry:
    return BookEntry(
        keys=list(r.keys.keys),
        # the entry names whom it is about: several fire at once, and a description alone
        # (他的大妹妹，……) does not say whose it is
        content=f"{r.label or r.name}：{user_text(r.text)}",
        comment=f"{me}→{r.name}（{r.predicate}）",
        order=RELATION_ORDER + round(r.strength * 100),
        secondary=list(r.keys.secondary),
        logic=r.keys.logic,
        whole_words=r.keys.whole_words,
        group=r.group,
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
    else:
        sources.append("开场白：她在剧情与语音里都没有台词，用一句旁白开场。")
    if inp.alternates:
        sources.append("备选开场白：" + "，".join(g.source_id for g in inp.alternates))
    if inp.standing:
        sources.append("近况：" + "，".join(it.ref.path for it in inp.standing))
    if example_sources:
        what = "剧情原文场景" if example_kind == "scenes" else "语音"
        sources.append(f"对话示例（{what}）：" + "，".join(example_sources))
    for title, quoted in _quote_sources(p):
        sources.append(f"{title}：" + "，".join(quoted))
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


WORLD = "world"
"""The card extension SillyTavern reads as the name of the lorebook linked to her."""

NOTHING_OF_HERS = "no archive, voice line or story line of hers in this data"
"""Why a card holds only her name and the setting (:attr:`Built.empty`)."""


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
    if book["entries"]:
        # the lorebook SillyTavern links her to: its embedded-book import saves the book under
        # this name but not the link, so without it her lorebook never fires until the
        # character is saved again (SillyTavern 1.12.6); a link the user set is kept
        extensions.setdefault(WORLD, book["name"])
    extensions[CREATOR] = {
        "char_id": inp.char_id,
        "tier": inp.persona.tier,
        "profile": inp.persona.path,
        "greeting": (
            {
                "source_id": inp.greeting.source_id,
                "note": inp.greeting.note,
                "kind": inp.greeting.kind,
            }
            if inp.greeting
            else {"kind": NARRATED}
        ),  # fmt: skip
        "alternate_greetings": [g.source_id for g in inp.alternates],
        "scenario": [it.ref.path for it in inp.standing],
        "examples": {"kind": example_kind, "sources": example_sources},
        "version": inp.version,
        "until": inp.until,
    }
    data = {
        "name": inp.name,
        "description": description(inp.persona, inp.her),
        "personality": personality(inp.persona),
        "scenario": scenario(inp.her, inp.standing),
        "first_mes": user_text(inp.greeting.text) if inp.greeting else opening(inp.her),
        "mes_example": examples,
        "creator_notes": _creator_notes(inp, example_sources, example_kind),
        "system_prompt": "",
        "post_history_instructions": "",
        "alternate_greetings": [user_text(g.text) for g in inp.alternates],
        "tags": list(TAGS),
        "creator": CREATOR,
        "character_version": inp.version,
        "extensions": extensions,
        "character_book": book,
        "group_only_greetings": [],
        "source": [],
    }
    if not inp.greeting:
        skipped.append(("first_mes of her own words", "no line of hers anywhere: narrated"))
    if not examples:
        skipped.append(("mes_example", "no scene and no voice line of hers"))
    empty = not (data["description"] or data["personality"] or inp.greeting or examples or entries)
    if empty:
        skipped.append(("everything of hers", NOTHING_OF_HERS))
    return Built(card_v3(data), skipped, empty)


__all__ = [
    "DOCTOR",
    "CardInputs",
    "Built",
    "MemoryInput",
    "NOTHING_OF_HERS",
    "RelationInput",
    "assemble",
    "description",
    "mes_example",
    "opening",
    "personality",
    "relation_entry",
    "scenario",
    "scene_example",
    "setting",
    "told",
    "user_text",
]
