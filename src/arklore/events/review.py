"""``arklore review events``: each event of a stage next to the lines it came from.

A human checks the model's happenings against the text: every event (kept or dropped, with
the reason) shows its line range, the objective summary, the time hint and its verdict, each
actor with how she is present, and each memory with its verdict (kept / dropped and why /
flagged third person) — then the lines of the range, the lines that show an actor present
marked with her name. Two renderings: plain text and one self-contained HTML page (inline
CSS, every text escaped, no scripts or links).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from arklore.core.model import Line
from arklore.events.checks import CheckedEvent, CheckedMemory
from arklore.extract.review import page_css, page_head


@dataclass(frozen=True)
class ShownLine:
    line_no: int
    speaker: str
    text: str
    branch: str | None
    present: tuple[str, ...]  # actors whose presence this line shows


def shown_lines(event: CheckedEvent, by_no: dict[int, Line]) -> list[ShownLine]:
    if event.line_start is None or event.line_end is None:
        return []
    marks: dict[str, list[str]] = {}
    for a in event.actors:
        for lid in a.evidence_line_ids:
            marks.setdefault(lid, []).append(a.name)
    out = []
    for n in range(event.line_start, event.line_end + 1):
        ln = by_no.get(n)
        if ln is None:
            continue
        out.append(
            ShownLine(
                n,
                ln.speaker,
                " ".join(ln.text.split("\n")),
                ln.branch.key() if ln.branch else None,
                tuple(marks.get(ln.line_id, ())),
            )
        )
    return out


def memory_verdict(m: CheckedMemory) -> str:
    if not m.kept:
        return f"DROPPED ({m.drop_reason})"
    if m.person != "first":
        return "FLAGGED third person"
    return f"kept ({m.presence})"


def headline(e: CheckedEvent) -> str:
    rng = f"{e.line_start}-{e.line_end}" if e.line_start is not None else f"{e.range_claimed!r}"
    verdict = "KEPT" if e.kept else f"DROPPED ({e.drop_reason}: {e.drop_detail})"
    return f"#{e.idx} {verdict} lines {rng} {e.phase or e.phase_claimed}"


def time_line(e: CheckedEvent) -> str | None:
    if e.time_hint_verdict == "ok":
        return f"time hint: {e.time_hint} (found in the lines)"
    if e.time_hint_verdict == "not_in_text":
        return f"time hint DROPPED: {e.time_hint_claimed!r} is not in the lines"
    return None


def render_text(stage: str, events: list[CheckedEvent], lines: list[Line]) -> str:
    by_no = {ln.line_no: ln for ln in lines}
    kept = sum(e.kept for e in events)
    mems = [m for e in events for m in e.memories]
    out = [
        f"stage {stage}: {len(events)} events, {kept} kept; memories {sum(m.kept for m in mems)}"
        f" kept, {sum(not m.kept for m in mems)} dropped, "
        f"{sum(m.kept and m.person != 'first' for m in mems)} third person",
        "",
    ]
    for e in events:
        out.append(headline(e) + (f"  flags={','.join(e.flags)}" if e.flags else ""))
        out.append(f"   summary (objective, never a memory): {e.summary}")
        if (t := time_line(e)) is not None:
            out.append(f"   {t}")
        for a in e.actors:
            ident = f" [{a.actor_id}]" if a.actor_id else ""
            how = f"present: {a.presence}" if a.present else "NOT present"
            out.append(f"   actor {a.name}{ident}: {how}")
        for m in e.memories:
            out.append(f"   memory {m.actor} -> {memory_verdict(m)}: {m.text}")
        for s in shown_lines(e, by_no):
            mark = f"<{','.join(s.present)}>" if s.present else ""
            branch = f"〔{s.branch}〕" if s.branch else ""
            out.append(
                f"   {s.line_no:>4} {branch}{s.speaker or '(旁白)'}：{s.text} {mark}".rstrip()
            )
        out.append("")
    return "\n".join(out)


_CSS = page_css(
    "ev",
    "64rem",
    ".mem{margin:.2rem 0}.mem.dropped{color:#c33;font-weight:bold}.mem.flagged{color:#a60}\n"
    ".summary{color:#555}.bad{color:#c33}",
    "tr.pr{background:#fff3b0}td.who{color:#282;white-space:nowrap}",
)


def render_html(stage: str, events: list[CheckedEvent], lines: list[Line]) -> str:
    esc = html.escape
    by_no = {ln.line_no: ln for ln in lines}
    parts = page_head(
        "events", stage, _CSS, f"{len(events)} events, {sum(e.kept for e in events)} kept"
    )
    for e in events:
        parts.append(f"<div class='ev {'kept' if e.kept else 'dropped'}'>")
        parts.append(f"<h2>{esc(headline(e))}</h2>")
        if e.flags:
            parts.append(f"<p>flags: {esc(', '.join(e.flags))}</p>")
        parts.append(f"<p class='summary'>summary (objective): {esc(e.summary)}</p>")
        if (t := time_line(e)) is not None:
            cls = " class='bad'" if e.time_hint_verdict != "ok" else ""
            parts.append(f"<p{cls}>{esc(t)}</p>")
        actors = "".join(
            f"<li>{esc(a.name)}{esc(f' [{a.actor_id}]' if a.actor_id else '')}: "
            f"{esc(('present: ' + str(a.presence)) if a.present else 'NOT present')}</li>"
            for a in e.actors
        )
        parts.append(f"<ul>{actors}</ul>")
        for m in e.memories:
            cls = "dropped" if not m.kept else "flagged" if m.person != "first" else "kept"
            parts.append(
                f"<p class='mem {cls}'>{esc(m.actor)} — {esc(memory_verdict(m))}: {esc(m.text)}</p>"
            )
        rows = [
            f"<tr class='{'pr' if s.present else ''}'><td class='no'>{s.line_no}</td>"
            f"<td class='sp'>{esc((f'〔{s.branch}〕' if s.branch else '') + (s.speaker or '(旁白)'))}</td>"
            f"<td>{esc(s.text)}</td><td class='who'>{esc(','.join(s.present))}</td></tr>"
            for s in shown_lines(e, by_no)
        ]
        if rows:
            parts.append("<table>" + "".join(rows) + "</table>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
