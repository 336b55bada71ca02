"""`arklore review relations`: every edge of a stage next to the lines it cites.

A human checks the model's claims against the text, so each edge (kept or dropped, the
latter marked with its reason) is shown with its evidence lines marked and ±``context``
lines around them, plus the gate flags. Two renderings: plain text and one self-contained
HTML page (inline CSS, all text escaped, no external assets).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from arklore.core.model import Line
from arklore.extract.gates import GatedEdge, as_line_no

CONTEXT = 2


@dataclass(frozen=True)
class ShownLine:
    line_no: int
    speaker: str
    text: str
    evidence: bool


def excerpt(
    edge: GatedEdge, by_no: dict[int, Line], context: int = CONTEXT
) -> list[list[ShownLine]]:
    """Runs of lines around the edge's evidence (overlapping windows merged)."""
    marks = {n for ev in edge.evidence if (n := as_line_no(ev.line_no)) in by_no}
    wanted = sorted({n + d for n in marks for d in range(-context, context + 1)} & set(by_no))
    runs: list[list[ShownLine]] = []
    for n in wanted:
        ln = by_no[n]
        shown = ShownLine(n, ln.speaker, " ".join(ln.text.split("\n")), n in marks)
        if runs and runs[-1][-1].line_no == n - 1:
            runs[-1].append(shown)
        else:
            runs.append([shown])
    return runs


def flags(edge: GatedEdge) -> list[str]:
    out = []
    if edge.basis_overclaimed:
        out.append("overclaimed")
    if edge.presence_downgraded:
        out.append("downgraded")
    if edge.presence_ok:
        out.append(f"present:{edge.presence_reason}")
    elif edge.presence_reason:
        out.append(f"not-present:{edge.presence_reason}")
    if edge.narration_addressee:
        out.append(f"letter-to:{edge.narration_addressee}")
    if writer := next((ev.writer for ev in edge.evidence if ev.writer), None):
        out.append(f"letter-from:{writer}")
    return out


def _party(name: str, kind: str, char_id: str | None) -> str:
    extra = f" [{char_id}]" if char_id else ""
    return f"{name}{extra} ({kind})" if kind != "character" else f"{name}{extra}"


def headline(edge: GatedEdge) -> str:
    return (
        f"{_party(edge.subject, edge.subject_kind, edge.subject_id)} --{edge.predicate}--> "
        f"{_party(edge.object, edge.object_kind, edge.object_id)}"
    )


def _missing(edge: GatedEdge, by_no: dict[int, Line]) -> list[str]:
    return [repr(ev.line_no) for ev in edge.evidence if as_line_no(ev.line_no) not in by_no]


def render_text(
    stage: str, edges: list[GatedEdge], lines: list[Line], context: int = CONTEXT
) -> str:
    """Plain-text report; evidence lines marked with ``>>``."""
    by_no = {ln.line_no: ln for ln in lines}
    kept = sum(e.kept for e in edges)
    out = [f"stage {stage}: {len(edges)} edges, {kept} kept, {len(edges) - kept} dropped", ""]
    for i, e in enumerate(edges, 1):
        verdict = "KEPT" if e.kept else f"DROPPED ({e.drop_reason}: {e.drop_detail})"
        out.append(f"#{i} {verdict}  {headline(e)}")
        basis = f"basis={e.basis or '-'} claimed={e.basis_claimed}"
        out.append(f"   {basis} flags={','.join(flags(e)) or '-'}")
        if e.note:
            out.append(f"   note: {e.note}")
        for ev in e.evidence:
            out.append(f"   evidence line {ev.line_no!r} [{ev.supports}] {ev.note}".rstrip())
        for bad in _missing(e, by_no):
            out.append(f"   !! line {bad} is not a line of this stage")
        for run in excerpt(e, by_no, context):
            for s in run:
                mark = ">>" if s.evidence else "  "
                out.append(f"   {mark} {s.line_no:>4} {s.speaker or '(旁白)'}：{s.text}")
            out.append("   ..")
        out.append("")
    return "\n".join(out)


def page_css(card: str, width: str, card_rules: str, line_rules: str) -> str:
    """The style both review pages (relations, events) share: a centred column, one bordered
    ``card`` per item (red when dropped), the stage's lines as a table; each page adds its
    own ``card_rules`` and ``line_rules``."""
    return f"""
body{{font-family:system-ui,sans-serif;max-width:{width};margin:1rem auto;padding:0 1rem;color:#222}}
.{card}{{border:1px solid #ccc;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}}
.{card}.dropped{{border-color:#c33;background:#fff5f5}}
{card_rules}
table{{border-collapse:collapse;margin:.4rem 0;width:100%}}
td{{padding:.1rem .4rem;vertical-align:top}}td.no{{color:#888;text-align:right;width:3rem}}
td.sp{{white-space:nowrap;color:#446}}{line_rules}
"""


def page_head(kind: str, stage: str, css: str, counts: str) -> list[str]:
    """The opening of a self-contained review page: title, inline style, heading, counts."""
    esc = html.escape
    return [
        "<!DOCTYPE html><html lang='zh'><head><meta charset='utf-8'>",
        f"<title>{kind}: {esc(stage)}</title><style>{css}</style></head><body>",
        f"<h1>{esc(stage)}</h1><p>{counts}</p>",
    ]


_CSS = page_css(
    "edge",
    "60rem",
    ".verdict{font-weight:bold}.dropped .verdict{color:#c33}.kept .verdict{color:#282}\n"
    ".flags span{display:inline-block;background:#eee;border-radius:3px;padding:0 .3rem;"
    "margin-right:.3rem;font-size:.85em}",
    "tr.ev{background:#fff3b0;font-weight:bold}\ntr.gap td{color:#aaa}.bad{color:#c33}",
)


def render_html(
    stage: str, edges: list[GatedEdge], lines: list[Line], context: int = CONTEXT
) -> str:
    """One self-contained page: inline CSS, every text escaped, no scripts or links."""
    esc = html.escape
    by_no = {ln.line_no: ln for ln in lines}
    kept = sum(e.kept for e in edges)
    parts = page_head(
        "relations", stage, _CSS, f"{len(edges)} edges, {kept} kept, {len(edges) - kept} dropped"
    )
    for i, e in enumerate(edges, 1):
        cls = "kept" if e.kept else "dropped"
        verdict = "KEPT" if e.kept else f"DROPPED: {e.drop_reason} ({e.drop_detail})"
        parts.append(f"<div class='edge {cls}'><h2>#{i} {esc(headline(e))}</h2>")
        parts.append(f"<p class='verdict'>{esc(verdict)}</p>")
        tags = [f"basis={e.basis or '-'}", f"claimed={e.basis_claimed}", *flags(e)]
        parts.append("<p class='flags'>" + "".join(f"<span>{esc(t)}</span>" for t in tags) + "</p>")
        if e.note:
            parts.append(f"<p>note: {esc(e.note)}</p>")
        items = "".join(
            f"<li>line {esc(repr(ev.line_no))} [{esc(ev.supports)}] {esc(ev.note)}</li>"
            for ev in e.evidence
        )
        parts.append(f"<ul>{items}</ul>")
        for bad in _missing(e, by_no):
            parts.append(f"<p class='bad'>line {esc(bad)} is not a line of this stage</p>")
        rows: list[str] = []
        for run in excerpt(e, by_no, context):
            if rows:
                rows.append("<tr class='gap'><td></td><td></td><td>…</td></tr>")
            for s in run:
                rows.append(
                    f"<tr class='{'ev' if s.evidence else ''}'><td class='no'>{s.line_no}</td>"
                    f"<td class='sp'>{esc(s.speaker or '(旁白)')}</td><td>{esc(s.text)}</td></tr>"
                )
        if rows:
            parts.append("<table>" + "".join(rows) + "</table>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
