"""How the lorebook's message sets (``data/lorebook_*.jsonl``) are read for the keys-only
measure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arklore.names.aliases import fold


def named_mentions(
    records: Sequence[dict[str, Any]],
    names_of: Mapping[str, Sequence[str]],
    person_of: Callable[[str], str],
) -> tuple[list[dict[str, Any]], int]:
    """The records as the keys-only mode reads them, and how many mentions it leaves out: a
    person a message means only by a kinship or role word (「你舅舅最近好吗」, tagged
    ``kinship``, none of her names in it). With every entry of the world book and no chat,
    nothing tells whose uncle 你舅舅 is; her own card's book keys those words, and the chat
    mode counts these mentions.

    A message written to an operator (``chat_with``) does not label her, though it may call
    her by name (「银灰，你小妹…」): keys only leaves her entry unjudged on it."""
    out, left = [], 0
    for r in records:
        if r.get("chat_with"):
            r = {**r, "unjudged": [r["chat_with"]]}
        if "kinship" not in r.get("tags", ()):
            out.append(r)
            continue
        text = fold(r["text"])
        kept = [
            m
            for m in r["mentions"]
            if any(fold(n) in text for n in names_of.get(person_of(m["id"]), ()))
        ]
        left += len(r["mentions"]) - len(kept)
        out.append({**r, "mentions": kept})
    return out, left
