"""Speaker <-> portrait statistics: which operator a speaker name belongs to.

The portrait on screen while a name speaks is not the speaker, but over many lines the
dominant portrait of a name is strong evidence: 恩希欧迪斯's lines mostly show
``avg_172_svrash_1#...``, the portrait of char_172_svrash. Portrait ids carry the
operator's number and code between a prefix (``avg_``, ``avgnew_``, ``char_``) and a
suffix (``_1#1$1``); the code may differ from the char id's (``char_194_rosali`` is
char_194_leto), so the number decides. NPC portraits (``avg_npc_…``) name nobody.

A name becomes an alias only when

* it spoke at least ``MIN_LINES`` lines that showed an operator portrait, and
* one operator's portraits make up at least ``MIN_SHARE`` of those lines, and
* it does not talk with her: a name that trades lines with her own name while her portrait
  is on screen for her (``MIN_TALKS`` exchanges and ``TALK_SHARE`` of its lines) is somebody
  else in her scenes -- 保存者 talking to 凯尔希 in her story, her patient 洛拉 in 絮雨's
  record -- not her. Her own name under another portrait (林's father, written 林 in
  《登临意》, talking with 林雨霞) does not count;
* the picture is hers: a portrait whose code is not her id's (``char_1011_wizard`` under
  炎狱炎熔's number 1011) counts only when it is not shown for two other people. Old NPC art
  can share an operator's number: the Reunion casters' picture speaks for 依拉, 梅斯 and
  整合运动术师, none of them 炎熔; her own alternate pictures (``skadisp``, ``purgatory``)
  speak with her name, and a person's picture before she became an operator (``wdmane``
  for 艾沃娜) speaks for one person only;

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
from collections.abc import Iterable, Mapping
from typing import Any

from arklore.core.operators import Alias

MIN_LINES = 30
"""Lines with an operator portrait a speaker name needs before its portraits count."""

MIN_SHARE = 0.6
"""Share of those lines the dominant operator's portraits must reach."""

MIN_TALKS = 10
TALK_SHARE = 0.2
"""A name that exchanges lines with her (her own name, her portrait) at least ``MIN_TALKS``
times and at least ``TALK_SHARE`` times its portrait lines is not her. On the real corpus the
two names caught talk with her 0.7 and 2.3 times per line; real names that are hers, at most
0.04 (索尼娅 with 凛冬 twice in 116 lines)."""

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
    "信使",
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


SHARED_PICTURE_LINES = 20
"""Lines a name needs under a portrait to count as one of the people it is shown for."""


def is_descriptor(name: str) -> bool:
    """A label like 乌萨斯术师 or 路过的黎博利 rather than a name."""
    return "的" in name or name.endswith(DESCRIPTOR_SUFFIXES)


_PORTRAIT = re.compile(r"^(?:avgnew_|avg_|char_)?(?:char_)?(\d+)_([a-z0-9]+)", re.IGNORECASE)


def portrait_parts(portrait: str | None) -> tuple[str, str] | None:
    """(operator number, picture code) of a portrait id (``("1011", "wizard")`` for
    ``char_1011_wizard_1``), or None for NPC/empty portraits."""
    if not portrait:
        return None
    p = portrait.strip().lower()
    if "npc" in p.split("_")[:2] or p.startswith("npc_"):
        return None
    m = _PORTRAIT.match(p)
    return (m.group(1).lstrip("0") or "0", m.group(2)) if m else None


def portrait_number(portrait: str | None) -> str | None:
    """The operator number in a portrait id, or None for NPC/empty portraits."""
    parts = portrait_parts(portrait)
    return parts[0] if parts else None


def char_number(char_id: str) -> str | None:
    m = re.match(r"^char_(\d+)_", char_id)
    return (m.group(1).lstrip("0") or "0") if m else None


def char_code(char_id: str) -> str:
    """The code of a char id (``lava2`` in ``char_1011_lava2``), as a portrait writes it."""
    return char_id.split("_", 2)[-1]


def _is_person(name: str) -> bool:
    return not is_descriptor(name) and any(ch.isalnum() for ch in name)


def portrait_aliases(
    pairs: Iterable[tuple[str, str | None, int]],
    char_ids: Iterable[str],
    *,
    base_of: dict[str, str] | None = None,
    exchanges: Iterable[tuple[str, str | None, str, str | None, int]] = (),
    own_names: Mapping[str, str] | None = None,
    min_lines: int = MIN_LINES,
    min_share: float = MIN_SHARE,
) -> tuple[list[Alias], dict[str, dict[str, Any]]]:
    """From (speaker, portrait, lines) counts, the aliases that pass the thresholds, and the
    statistics of every speaker that had an operator portrait (for audits). ``exchanges``:
    (speaker, portrait, next speaker, their portrait, times) of consecutive lines;
    ``own_names``: each operator's own name, to see who talks with her."""
    by_number: dict[str, str] = {}
    for char_id in sorted(char_ids):
        n = char_number(char_id)
        if n is not None:
            by_number.setdefault(n, char_id)
    shown: list[tuple[str, str, str, int]] = []  # (speaker, char id, code, lines)
    for speaker, portrait, lines in pairs:
        parts = portrait_parts(portrait)
        cid = by_number.get(parts[0]) if parts is not None else None
        if speaker and parts is not None and cid is not None:
            shown.append((speaker, cid, parts[1], lines))
    not_hers = _pictures_of_others(shown, own_names or {}, base_of or {})
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for speaker, cid, code, lines in shown:
        if (cid, code) not in not_hers:
            counts[speaker][cid] += lines
    talks = _talks_with_her(exchanges, by_number, own_names or {}, base_of or {})
    aliases: list[Alias] = []
    stats: dict[str, dict[str, Any]] = {}
    for speaker, c in counts.items():
        total = sum(c.values())
        (top, top_n), *rest = c.most_common(2)
        share = top_n / total
        base = (base_of or {}).get(top, top)
        talked = talks.get((speaker, top), 0)
        entry = {
            "char_id": base,
            "portrait_of": top,
            "share": round(share, 3),
            "lines": total,
            "runner_up": rest[0][0] if rest else None,
            "talks_with": talked,
            "accepted": total >= min_lines
            and share >= min_share
            and not (talked >= MIN_TALKS and talked >= TALK_SHARE * total),
            "speaker_only": is_descriptor(speaker),
        }
        stats[speaker] = entry
        if entry["accepted"] and not entry["speaker_only"]:
            evidence = {"share": entry["share"], "lines": total, "runner_up": entry["runner_up"]}
            if top != base:
                evidence["portrait_of"] = top
            aliases.append(Alias(speaker, base, "portrait", evidence))
    return aliases, stats


def _pictures_of_others(
    shown: Iterable[tuple[str, str, str, int]],
    own_names: Mapping[str, str],
    base_of: Mapping[str, str],
) -> set[tuple[str, str]]:
    """(char id, code) of the portraits under her number that show other people: a code that
    is not her id's, that no name of hers speaks under, and that speaks for two or more
    people (``SHARED_PICTURE_LINES`` lines each). Names of hers: her own and her base form's,
    and any that speaks that often under her id's own code."""
    by_code: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for speaker, cid, code, lines in shown:
        by_code[(cid, code)][speaker] += lines
    hers: dict[str, set[str]] = {
        cid: {own_names.get(cid, ""), own_names.get(base_of.get(cid, cid), "")}
        for cid, _ in by_code
    }
    for (cid, code), speakers in by_code.items():
        if code == char_code(cid):
            hers[cid] |= {s for s, n in speakers.items() if n >= SHARED_PICTURE_LINES}
    out: set[tuple[str, str]] = set()
    for (cid, code), speakers in by_code.items():
        if code == char_code(cid) or hers[cid] & set(speakers):
            continue
        people = [s for s, n in speakers.items() if n >= SHARED_PICTURE_LINES and _is_person(s)]
        if len(people) >= 2:
            out.add((cid, code))
    return out


def _talks_with_her(
    exchanges: Iterable[tuple[str, str | None, str, str | None, int]],
    by_number: Mapping[str, str],
    own_names: Mapping[str, str],
    base_of: Mapping[str, str],
) -> Counter[tuple[str, str]]:
    """(name, char id) -> how often the name and her own name (or her base form's), with her
    portrait on screen, speak one right after the other."""
    talks: Counter[tuple[str, str]] = Counter()
    for a, a_art, b, b_art, n in exchanges:
        for name, (her_name, her_art) in ((a, (b, b_art)), (b, (a, a_art))):
            num = portrait_number(her_art)
            cid = by_number.get(num) if num is not None else None
            if cid is not None and her_name in (
                own_names.get(cid),
                own_names.get(base_of.get(cid, cid)),
            ):
                talks[(name, cid)] += n
    return talks
