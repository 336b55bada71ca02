"""The review queue: one structured entry per operator, its Markdown, and spot-check samples.

A reviewer reads what was generated and why: the file and its tier, each task's status
(``ok`` / ``skipped`` / ``failed`` with the reason), quotes the verbatim gate removed, anchor
fields corrected back to their source, other items a gate dropped, the sources used, the
``no source: …`` gaps, the relation candidates of task E, and a seeded 10% sample of her
relation documents to spot-check. :func:`entry_from_results` builds an entry from the stored
task results; :func:`spot_check_sample` / :func:`sample_fraction` draw seeded, reproducible
10% samples.
"""

from __future__ import annotations

import html
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from arklore.core.operators import Operator
from arklore.graph.model import RelationGraph
from arklore.profiles.archive import Tables, gaps_line, structured_anchor
from arklore.profiles.charfile import CharProfile, draft_path
from arklore.profiles.inputs import gaps_for
from arklore.profiles.quotes import voice_index
from arklore.profiles.results import FAILED, OK, SKIPPED, TaskResult  # noqa: F401 - re-exported
from arklore.rag.docs import RelationDoc

TASK_TITLES: dict[str, str] = {
    "A": "A 锚 / 物理标签 / 核心经历",
    "B": "B 语录 / 我·性格",
    "C": "C 我·关于博士",
    "D": "D 我·身边的人",
    "E": "E 关系候选（提及）",
}
T = TypeVar("T")


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
    findings: list[str] = field(default_factory=list)  # other items a gate dropped or added
    relation_sample: list[str] = field(default_factory=list)  # her relation documents, 10%

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def needs_attention(self) -> bool:
        return bool(
            self.quotes_removed
            or self.corrections
            or self.findings
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
    listed = (
        ("quotes removed by the verbatim gate", e.quotes_removed),
        ("anchor fields set back to their source", e.corrections),
        ("other gate findings", e.findings),
        ("relation candidates (mentions)", e.relation_candidates),
        ("relation documents to spot-check (seeded 10% sample)", e.relation_sample),
        ("sources", e.sources),
    )
    for heading, items in listed:
        if items:
            lines.append(f"- {heading}:")
            lines += [f"  - {item}" for item in items]
    return "\n".join(lines) + "\n"


def render_queue(
    entries: Sequence[ReviewEntry],
    *,
    title: str = "Profile review queue",
    no_source: Sequence[tuple[str, str, str]] = (),
) -> str:
    """The whole queue as Markdown: a summary, then the entries needing attention first
    (removed quotes, corrections, failures, drafts written beside a protected file), then
    the rest, each group by char id, then every operator some source has nothing for
    (``no_source``: (char id, name, "no source: ...")), never left out silently."""
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
    if no_source:
        out += [
            "## No source",
            "",
            f"{len(no_source)} operators lack a source (the shared tables are older snapshots); "
            "they still get what the corpus gives.",
            "",
        ]
        out += [f"- {name} ({cid}): {gaps}" for cid, name, gaps in sorted(no_source)]
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


def sample_fraction(
    items: Sequence[T],
    *,
    key: Callable[[T], Any],
    fraction: float = 0.1,
    seed: int = 0,
    salt: str = "",
) -> list[T]:
    """``ceil(fraction * n)`` of ``items`` drawn with ``random.Random(f"{seed}:{salt}")``
    from the items sorted by ``key``: reproducible whatever the input order, in key order."""
    if not items or fraction <= 0:
        return []
    pool = sorted(items, key=key)
    k = min(len(pool), math.ceil(fraction * len(pool)))
    picked = random.Random(f"{seed}:{salt}").sample(range(len(pool)), k)
    return [pool[i] for i in sorted(picked)]


def entry_from_results(
    char_id: str,
    name: str,
    results: Mapping[str, TaskResult],
    *,
    path: str | None,
    tier: str,
    write: str = "",
    gaps: str = "",
    sources: Sequence[str] = (),
    relation_docs: Sequence[tuple[str, str]] = (),
    seed: int = 0,
) -> ReviewEntry:
    """Her review entry from her stored task results (task letter -> result);
    ``relation_docs``: (doc id, text) of her relation documents, sampled 10% with ``seed``."""
    e = ReviewEntry(char_id, name, path, tier, write=write, gaps=gaps, sources=list(sources))
    for t in sorted(results):
        r = results[t]
        e.tasks[t] = TaskStatus(r.status, r.reason)
        for f in r.findings:
            if f.startswith("quote "):
                e.quotes_removed.append(f.removeprefix("quote "))
            elif f.startswith("anchor field "):
                e.corrections.append(f.removeprefix("anchor field "))
            else:
                e.findings.append(f"{t}: {f}")
    b = results.get("B")
    for q in (b.output.get("quotes") if b is not None else None) or []:
        note = f"（{q['note']}）" if q.get("note") else ""
        e.quotes.append(f"- 「{q['text']}」 —— {q['source_id']}{note}")
    ev = results.get("E")
    e.relation_candidates = list((ev.output.get("candidates") if ev is not None else None) or [])
    sample = sample_fraction(relation_docs, key=lambda d: d[0], seed=seed, salt=char_id)
    e.relation_sample = [f"{doc_id}: {text}" for doc_id, text in sample]
    return e


@dataclass(slots=True)
class Queue:
    """The review queue: entries, the operators with missing sources, and the sample seed."""

    entries: list[ReviewEntry] = field(default_factory=list)
    no_source: list[tuple[str, str, str]] = field(default_factory=list)
    seed: int = 0

    def markdown(self) -> str:
        return render_queue(
            self.entries,
            title=f"Character profile review queue (spot-check seed {self.seed})",
            no_source=self.no_source,
        )

    def html(self) -> str:
        return markdown_to_html(self.markdown())

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "entries": [e.to_dict() for e in self.entries],
            "no_source": [{"char_id": c, "name": n, "gaps": g} for c, n, g in self.no_source],
        }


def build_queue(
    operators: Sequence[Operator],
    tables: Tables,
    results: Mapping[str, Mapping[str, TaskResult]],
    *,
    profiles: Mapping[str, tuple[Path, CharProfile]],
    has_story: set[str],
    relation_docs: Mapping[str, Sequence[RelationDoc]] | None = None,
    graph: RelationGraph | None = None,
    seed: int = 0,
    display: Callable[[str], str] | None = None,
) -> Queue:
    """An entry for every operator of ``operators`` with stored results or a profile, and a
    ``no source`` line for every one some source has nothing for. ``profiles``: char id ->
    (path, CharProfile); ``has_story``: the operators with story lines; ``relation_docs``:
    graph node -> her relation documents (sampled 10% with ``seed``); ``display``: the name
    shown for an operator (default her registry name)."""
    voices = voice_index(tables.charword)
    docs = relation_docs or {}
    q = Queue(seed=seed)
    for op in operators:
        cid = op.char_id
        name = display(cid) if display is not None else op.name
        story = cid in has_story or bool(op.base_id and op.base_id in has_story)
        gaps = gaps_line(
            gaps_for(
                structured_anchor(cid, tables), tables,
                has_voice=bool(voices.get(cid)), has_story=story,
            )
        )  # fmt: skip
        if gaps:
            q.no_source.append((cid, name, gaps))
        mine = results.get(cid, {})
        found = profiles.get(cid)
        if not mine and found is None:
            continue
        write = ""
        path, prof = found if found is not None else (None, None)
        if prof is not None and prof.hand_edited:
            write = f"tier {prof.tier} edited by hand since it was generated: never overwritten"
        if path is not None and draft_path(path).exists():
            write = (write + "; " if write else "") + (
                f"a regenerated draft waits beside it: {draft_path(path).name}"
            )
        node = (graph.resolve(cid) if graph is not None else None) or cid
        e = entry_from_results(
            cid,
            name,
            mine,
            path=str(path) if path is not None else None,
            tier=prof.tier if prof is not None else "C",
            write=write,
            gaps=gaps,
            sources=prof.header_list("sources") if prof is not None else [],
            relation_docs=[(d.doc_id, d.text) for d in docs.get(node, [])],
            seed=seed,
        )
        q.entries.append(e)
    return q


def markdown_to_html(md: str) -> str:
    """The queue's Markdown (headings, nested bullets, paragraphs, **bold**, `code`) as one
    self-contained HTML page; every text escaped."""

    def inline(text: str) -> str:
        t = html.escape(text)
        t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", t)

    body: list[str] = []
    depth = 0
    for ln in md.split("\n"):
        m = re.match(r"^( *)- (.*)$", ln)
        if m is not None:
            level = len(m.group(1)) // 2 + 1
            while depth < level:
                body.append("<ul>")
                depth += 1
            while depth > level:
                body.append("</ul>")
                depth -= 1
            body.append(f"<li>{inline(m.group(2))}</li>")
            continue
        while depth:
            body.append("</ul>")
            depth -= 1
        h = re.match(r"^(#{1,3}) (.*)$", ln)
        if h is not None:
            n = len(h.group(1))
            body.append(f"<h{n}>{inline(h.group(2))}</h{n}>")
        elif ln.strip():
            body.append(f"<p>{inline(ln)}</p>")
    body += ["</ul>"] * depth
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.5}"
        "h3{border-top:1px solid #ccc;padding-top:.5em}code{background:#f4f4f4}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="zh"><head><meta charset="utf-8">'
        f"<title>review queue</title><style>{style}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
