"""Speaker <-> portrait statistics: which operator a speaker name belongs to.

The portrait on screen while a name speaks is not the speaker, but over many lines the
dominant portrait of a name is strong evidence: 恩希欧迪斯's lines mostly show
``avg_172_svrash_1#...``, the portrait of char_172_svrash. Portrait ids carry the
operator's number and code between a prefix (``avg_``, ``avgnew_``, ``char_``) and a
suffix (``_1#1$1``); the code may differ from the char id's (``char_194_rosali`` is
char_194_leto), so the number decides. NPC portraits (``avg_npc_…``) name nobody.

A name becomes an alias only when

* it spoke at least ``MIN_LINES`` lines that showed an operator portrait, and
* one operator's portraits make up at least ``MIN_SHARE`` of those lines,

and the evidence (share, lines, runner-up) is stored with the alias.

An alternate form's portrait (费德里科 shows ``char_1032_excu2``) names the person, so the
alias points at the base character; the form is kept in the evidence.

Names that describe rather than name (整合运动术师, 神秘的女性, 老奶奶 — a character before her
reveal) are right about *who spoke* but would be wrong as names in chat, so they resolve the
speaker (``speaker_only``) without becoming aliases for mention detection.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from arklore.core.operators import Alias

MIN_LINES = 30
"""Lines with an operator portrait a speaker name needs before its portraits count."""

MIN_SHARE = 0.6
"""Share of those lines the dominant operator's portraits must reach."""

DESCRIPTOR_SUFFIXES = (
    "术师",
    "士兵",
    "干员",
    "队员",
    "战士",
    "女性",
    "男性",
    "女子",
    "男子",
    "老人",
    "青年",
    "男孩",
    "女孩",
    "少女",
    "少年",
    "孩子",
    "奶奶",
    "爷爷",
    "大叔",
    "大婶",
    "商人",
    "居民",
    "路人",
    "守卫",
    "卫兵",
    "成员",
    "医生",
    "护士",
    "佣兵",
    "骑士",
    "龙",
    "人",
)
"""Endings of descriptive speaker labels; with "的" in the name they mark ``speaker_only``."""


def is_descriptor(name: str) -> bool:
    """A label like 乌萨斯术师 or 路过的黎博利 rather than a name."""
    return "的" in name or name.endswith(DESCRIPTOR_SUFFIXES)


_PORTRAIT = re.compile(r"^(?:avgnew_|avg_|char_)?(?:char_)?(\d+)_([a-z0-9]+)", re.IGNORECASE)


def portrait_number(portrait: str | None) -> str | None:
    """The operator number in a portrait id, or None for NPC/empty portraits."""
    if not portrait:
        return None
    p = portrait.strip().lower()
    if "npc" in p.split("_")[:2] or p.startswith("npc_"):
        return None
    m = _PORTRAIT.match(p)
    return m.group(1).lstrip("0") or "0" if m else None


def char_number(char_id: str) -> str | None:
    m = re.match(r"^char_(\d+)_", char_id)
    return (m.group(1).lstrip("0") or "0") if m else None


def portrait_aliases(
    pairs: Iterable[tuple[str, str | None, int]],
    char_ids: Iterable[str],
    *,
    base_of: dict[str, str] | None = None,
    min_lines: int = MIN_LINES,
    min_share: float = MIN_SHARE,
) -> tuple[list[Alias], dict[str, dict]]:
    """From (speaker, portrait, lines) counts, the aliases that pass the thresholds, and the
    statistics of every speaker that had an operator portrait (for audits)."""
    by_number: dict[str, str] = {}
    for char_id in sorted(char_ids):
        n = char_number(char_id)
        if n is not None:
            by_number.setdefault(n, char_id)
    counts: dict[str, Counter] = defaultdict(Counter)
    for speaker, portrait, lines in pairs:
        if not speaker:
            continue
        n = portrait_number(portrait)
        cid = by_number.get(n) if n is not None else None
        if cid is not None:
            counts[speaker][cid] += lines
    aliases: list[Alias] = []
    stats: dict[str, dict] = {}
    for speaker, c in counts.items():
        total = sum(c.values())
        (top, top_n), *rest = c.most_common(2)
        share = top_n / total
        base = (base_of or {}).get(top, top)
        entry = {
            "char_id": base,
            "portrait_of": top,
            "share": round(share, 3),
            "lines": total,
            "runner_up": rest[0][0] if rest else None,
            "accepted": total >= min_lines and share >= min_share,
            "speaker_only": is_descriptor(speaker),
        }
        stats[speaker] = entry
        if entry["accepted"] and not entry["speaker_only"]:
            evidence = {"share": entry["share"], "lines": total, "runner_up": entry["runner_up"]}
            if top != base:
                evidence["portrait_of"] = top
            aliases.append(Alias(speaker, base, "portrait", evidence))
    return aliases, stats
