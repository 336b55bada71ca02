"""SillyTavern's formats as plain data: the character card (V2 ``chara_card_v2`` / V3
``chara_card_v3``), its lorebook (``character_book``), and the World Info file.

**Card.** ``{"spec", "spec_version", "data": {name, description, personality, scenario,
first_mes, mes_example, creator_notes, system_prompt, post_history_instructions,
alternate_greetings, tags, creator, character_version, extensions, character_book, (V3:)
group_only_greetings, nickname, source, ...}}``. SillyTavern writes the same ``data`` into
both chunks, the V2 one with ``spec`` ``chara_card_v2`` / ``2.0`` and the V3 one with
``chara_card_v3`` / ``3.0``; so does :func:`card_chunks`. A card read back keeps every field,
known or not (``extensions`` of the card and of each entry included).

**Lorebook entry** (``character_book.entries[]``): ``keys``, ``content``, ``extensions``,
``enabled``, ``insertion_order``, ``case_sensitive``, ``use_regex`` (V3), ``constant``,
``name``, ``priority``, ``id``, ``comment``, ``selective``, ``secondary_keys``, ``position``
(``before_char``/``after_char``). What SillyTavern keeps of its own World Info settings goes
into the entry's ``extensions`` (``selectiveLogic``, ``match_whole_words``,
``exclude_recursion``, ``depth``, ``position`` as a number, …: the names its importer reads).

**World Info file**: ``{"entries": {"<uid>": {uid, key, keysecondary, comment, content,
constant, selective, selectiveLogic, order, position, disable, excludeRecursion,
preventRecursion, probability, useProbability, depth, matchWholeWords, caseSensitive,
characterFilter, ...}}}``: an object keyed by uid (:func:`world_entry`).

**Bytes.** JSON is written compactly inside the PNG (as SillyTavern's ``JSON.stringify``) and
indented beside it (:func:`dumps`); both keep key order and non-ASCII text, so equal data
gives equal bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.cards.lint import AND_ANY

V2_SPEC, V2_VERSION = "chara_card_v2", "2.0"
V3_SPEC, V3_VERSION = "chara_card_v3", "3.0"

POSITION_AT_DEPTH = 4
"""SillyTavern's numeric World Info position "at depth": inserted among the chat messages."""
DEPTH = 1
"""Where an entry goes at depth: right before the last message. What fires changes every
message, so anywhere higher (SillyTavern's "after character definitions") it changes the
prompt ahead of the examples and the whole history, and the provider's prompt cache reuses
only the card; here every turn's prompt opens with the last one's up to its last message
(SillyTavern 1.12.6's own client, ten turns with 银灰: docs/sillytavern.md)."""
ROLE_SYSTEM = 0
"""SillyTavern's role of an entry at depth: a system message (its default)."""
SCAN_DEPTH = 2
"""Messages an entry scans for its keys: only the last two, so a person named long ago, who
has left the scene, no longer pulls her entry in."""


@dataclass
class BookEntry:
    """One lorebook entry, the format-independent way (rendered by :func:`book_entry` for a
    card and :func:`world_entry` for a World Info file)."""

    keys: list[str]
    content: str
    comment: str
    order: int  # insertion order: higher is inserted later, nearer the chat, kept first
    secondary: list[str] = field(default_factory=list)
    logic: int = AND_ANY
    whole_words: bool = False
    group: str = ""  # SillyTavern's inclusion group: of several that fire, one goes in
    meta: dict[str, Any] = field(default_factory=dict)  # extensions.arklore
    characters: list[str] = field(default_factory=list)  # World Info: only in these chats

    @property
    def selective(self) -> bool:
        return bool(self.secondary)


def book_entry(e: BookEntry, uid: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``character_book`` entry (V2 fields, V3's ``use_regex``); ``extra``: extension
    fields to keep (read from an earlier export)."""
    ext: dict[str, Any] = dict(extra or {})
    ext.update(
        {
            "position": POSITION_AT_DEPTH,
            "role": ROLE_SYSTEM,
            "group": e.group,
            "selectiveLogic": e.logic,
            "match_whole_words": e.whole_words,
            "case_sensitive": False,
            "exclude_recursion": True,
            "prevent_recursion": True,
            "scan_depth": SCAN_DEPTH,
            "depth": DEPTH,
            "probability": 100,
            "useProbability": True,
            "display_index": uid,
            "arklore": e.meta,
        }
    )
    return {
        "id": uid,
        "keys": list(e.keys),
        "secondary_keys": list(e.secondary),
        "comment": e.comment,
        "content": e.content,
        "constant": False,
        "selective": e.selective,
        "insertion_order": e.order,
        "enabled": True,
        "position": "after_char",
        "use_regex": False,
        "case_sensitive": False,
        "name": e.comment,
        "priority": e.order,
        "extensions": ext,
    }


def world_entry(e: BookEntry, uid: int) -> dict[str, Any]:
    """A World Info file entry (SillyTavern's own field names)."""
    return {
        "uid": uid,
        "key": list(e.keys),
        "keysecondary": list(e.secondary),
        "comment": e.comment,
        "content": e.content,
        "constant": False,
        "vectorized": False,
        "selective": e.selective,
        "selectiveLogic": e.logic,
        "addMemo": True,
        "order": e.order,
        "position": POSITION_AT_DEPTH,
        "disable": False,
        "excludeRecursion": True,
        "preventRecursion": True,
        "delayUntilRecursion": False,
        "probability": 100,
        "useProbability": True,
        "depth": DEPTH,
        "group": e.group,
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": SCAN_DEPTH,
        "caseSensitive": False,
        "matchWholeWords": e.whole_words,
        "useGroupScoring": None,
        "automationId": "",
        "role": ROLE_SYSTEM,
        "sticky": 0,
        "cooldown": 0,
        "delay": 0,
        "displayIndex": uid,
        "characterFilter": {"isExclude": False, "names": list(e.characters), "tags": []},
        "extensions": {"arklore": e.meta},
    }


def world_info(entries: Sequence[BookEntry]) -> dict[str, Any]:
    """A World Info file: ``{"entries": {"<uid>": entry}}``, uids 0.. in the given order."""
    return {"entries": {str(i): world_entry(e, i) for i, e in enumerate(entries)}}


def card_v3(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"spec": V3_SPEC, "spec_version": V3_VERSION, "data": dict(data)}


def as_spec(card: Mapping[str, Any], spec: str, version: str) -> dict[str, Any]:
    """The same card under another ``spec``/``spec_version`` (everything else shared, as it
    is: the result is for serializing, not for editing)."""
    return {**card, "spec": spec, "spec_version": version}


def dumps(obj: Any, *, compact: bool = False) -> str:
    """JSON text: compact as inside a PNG, else indented with a final newline."""
    if compact:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


def card_chunks(card: Mapping[str, Any]) -> tuple[str, str]:
    """(V2 JSON for ``chara``, V3 JSON for ``ccv3``) of a V3 card, as SillyTavern writes them."""
    return (
        dumps(as_spec(card, V2_SPEC, V2_VERSION), compact=True),
        dumps(as_spec(card, V3_SPEC, V3_VERSION), compact=True),
    )


__all__ = [
    "DEPTH",
    "POSITION_AT_DEPTH",
    "SCAN_DEPTH",
    "V2_SPEC",
    "V2_VERSION",
    "V3_SPEC",
    "V3_VERSION",
    "BookEntry",
    "as_spec",
    "book_entry",
    "card_chunks",
    "card_v3",
    "dumps",
    "world_entry",
    "world_info",
]
