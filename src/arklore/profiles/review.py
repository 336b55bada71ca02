"""The review queue: one structured entry per operator, its Markdown, and spot-check samples.

A reviewer reads what was generated and why: the file and its tier, each task's status
(``ok`` / ``skipped`` / ``failed`` with the reason), quotes the verbatim gate removed, anchor
fields corrected back to their source, the sources used and the ``no source: …`` gaps.
:func:`spot_check_sample` draws a seeded, reproducible 10% sample for spot checks.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

OK, SKIPPED, FAILED = "ok", "skipped", "failed"

TASK_TITLES: dict[str, str] = {
    "anchor": "A 锚（结构化字段）",
    "core": "A 核心经历",
    "quotes": "B 语录",
    "personality": "C 我·性格 / 我·关于博士",
    "relations": "E 关系候选",
}


@dataclass(frozen=True, slots=True)
class TaskStatus:
    status: str  # ok | skipped | failed
    reason: str = ""


@dataclass(slots=True)
class ReviewEntry:
    char_id: str
    name: str
    path: str | None  # the .char file (or the .char.draft written beside it), None: none
    tier: str  # S | A | B | C, after this run
    tasks: dict[str, TaskStatus] = field(default_factory=dict)
    quotes: list[str] = field(default_factory=list)  # the kept quote lines
    quotes_removed: list[str] = field(default_factory=list)  # "「…」 <source>: reason"
    corrections: list[str] = field(default_factory=list)  # anchor fields set back to source
    sources: list[str] = field(default_factory=list)
    gaps: str = ""  # "no source: …" or ""
    relation_candidates: list[str] = field(default_factory=list)
    write: str = ""  # what the writer did and why

    def to_dict(self) -> dict:
        return asdict(self)

    def needs_attention(self) -> bool:
        return bool(
            self.quotes_removed
            or self.corrections
            or any(t.status == FAILED for t in self.tasks.values())
            or self.write.startswith("draft")
        )


def render_entry(e: ReviewEntry) -> str:
    lines = [f"### {e.name} ({e.char_id}) — tier {e.tier}", ""]
    if e.path:
        lines.append(f"- file: `{e.path}`")
    else:
        lines.append("- file: none (tier C)" if e.tier == "C" else "- file: not written yet")
    if e.write:
        lines.append(f"- write: {e.write}")
    if e.gaps:
        lines.append(f"- {e.gaps}")
    for key, st in e.tasks.items():
        title = TASK_TITLES.get(key, key)
        lines.append(f"- {title}: **{st.status}**" + (f" — {st.reason}" if st.reason else ""))
    if e.quotes_removed:
        lines.append("- quotes removed by the verbatim gate:")
        lines += [f"  - {q}" for q in e.quotes_removed]
    if e.corrections:
        lines.append("- anchor fields set back to their source:")
        lines += [f"  - {c}" for c in e.corrections]
    if e.relation_candidates:
        lines.append("- relation candidates (mentions):")
        lines += [f"  - {c}" for c in e.relation_candidates]
    if e.sources:
        lines.append("- sources:")
        lines += [f"  - {s}" for s in e.sources]
    return "\n".join(lines) + "\n"


def render_queue(entries: Sequence[ReviewEntry], *, title: str = "Profile review queue") -> str:
    """The whole queue as Markdown: a summary, then the entries needing attention first
    (removed quotes, corrections, failures, drafts written beside a protected file), then
    the rest, each group by char id."""
    tiers: dict[str, int] = {}
    for e in entries:
        tiers[e.tier] = tiers.get(e.tier, 0) + 1
    gaps = sum(1 for e in entries if e.gaps)
    attention = sorted((e for e in entries if e.needs_attention()), key=lambda e: e.char_id)
    rest = sorted((e for e in entries if not e.needs_attention()), key=lambda e: e.char_id)
    out = [f"# {title}", ""]
    out.append(
        f"{len(entries)} operators; tiers "
        + ", ".join(f"{t} {n}" for t, n in sorted(tiers.items()))
        + f"; {gaps} with missing sources; {len(attention)} need attention."
    )
    out.append("")
    if attention:
        out += ["## Needs attention", ""] + [render_entry(e) for e in attention]
    if rest:
        out += ["## Others", ""] + [render_entry(e) for e in rest]
    return "\n".join(out).rstrip("\n") + "\n"


def spot_check_sample(
    entries: Sequence[ReviewEntry], *, fraction: float = 0.1, seed: int = 0
) -> list[ReviewEntry]:
    """``ceil(fraction * n)`` entries drawn with ``random.Random(seed)`` from the entries
    sorted by char id: the same seed and entries give the same sample, in char id order."""
    if not entries or fraction <= 0:
        return []
    pool = sorted(entries, key=lambda e: e.char_id)
    k = min(len(pool), math.ceil(fraction * len(pool)))
    picked = random.Random(seed).sample(range(len(pool)), k)
    return [pool[i] for i in sorted(picked)]
