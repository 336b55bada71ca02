"""Speakers known only by an avatar id: ``[PopupDialog(dialogHead="$avatar_nearl")]``.

Popup speech (battles, tutorials, activity mini-games) shows a small portrait, not a name, so
the readers keep the avatar id as the line's speaker (flagged ``uncertain``) and never
resolve it: sources know no registry, and a speaker resolved at read time would make the
line id (a hash of speaker and text) depend on the registry. The name is resolved here, at
alias rebuild, as an alias of the lowest precedence (``source = "avatar"``): every layer
that resolves a speaker through the alias table (``speakers.char_id``, ``arklore names
resolve``, the graph's people) then knows ``$avatar_nearl`` is 临光, while the stored line and
its id stay as written.

Rule: ``$avatar_<key>`` is the operator whose char id ends in ``_<key>`` (``char_148_nearl``),
case-insensitive, when exactly one does. Measured on the real scripts (July 2026): 132 of
the 175 distinct ``$avatar_`` ids resolve, 1,276 of their 1,757 popup lines; the rest are NPC
avatars (``$avatar_npc_1005``), the system voice (``$avatar_sys``) and avatars spelled unlike
the char id (``$avatar_closure``, 126 lines, where the registry has ``char_4228_closur``):
those stay unresolved uncertain speakers, and ``data/aliases.toml`` can name them (user
entries win). A popup naming a char id itself (``char_002_amiya``, 11 lines) needs no alias:
the table resolves registry ids.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from arklore.core.operators import Alias

AVATAR_PREFIX = "$avatar_"
ALIAS_SOURCE = "avatar"
_CHAR_KEY = re.compile(r"^char_\d+_(.+)$")


def is_avatar_id(name: str) -> bool:
    """Is this speaker an avatar id rather than a written name?"""
    return name.startswith(AVATAR_PREFIX)


def avatar_aliases(speakers: Iterable[str], char_ids: Iterable[str]) -> list[Alias]:
    """An ``avatar`` alias for every avatar-id speaker exactly one char id matches."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for cid in char_ids:
        m = _CHAR_KEY.match(cid)
        if m:
            by_key[m.group(1).lower()].append(cid)
    out: list[Alias] = []
    for name in sorted(set(speakers)):
        if not is_avatar_id(name):
            continue
        hits = by_key.get(name[len(AVATAR_PREFIX) :].lower(), [])
        if len(hits) == 1:
            out.append(Alias(name, hits[0], ALIAS_SOURCE, {"avatar": name}))
    return out
