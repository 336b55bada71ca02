"""Names commands: resolve a name, find mentions in text, audit speakers."""

from __future__ import annotations

from typing import Annotated

import typer

from arklore.cli import group
from arklore.cli._common import JsonOpt, console, print_json, read_message, table, workspace
from arklore.core.errors import UnknownNameError

app = group("names", "Operator names: aliases and mention detection.")


@app.command("resolve")
def resolve(name: str, json: JsonOpt = False) -> None:
    """Which operator a name belongs to, and which source decided; ambiguous names list all."""
    table = workspace().names.aliases()
    res = table.resolve(name)
    cands = [
        {
            "char_id": a.char_id,
            "source": a.source,
            "evidence": a.evidence,
            "name": table.canonical_name(a.char_id),
        }
        for a in table.candidates(name)
    ]
    out = {
        "name": name,
        "char_id": res.char_id,
        "ids": list(res.ids),
        "names": list(res.names),
        "source": res.source,
        "ambiguous": res.ambiguous,
        "candidates": cands,
    }
    if json:
        print_json(out)
        if not res.ids:
            raise typer.Exit(1)
        return
    if not res.ids:
        raise UnknownNameError(
            f"no operator is called {name!r}", hint=workspace().names.add_alias_advice(name)
        )
    if res.ambiguous:
        console.print(
            f"{name}: ambiguous, one of "
            + ", ".join(f"{i} ({n})" for i, n in zip(res.ids, res.names, strict=True)),
        )
    else:
        console.print(f"{name} -> {res.char_id} {res.names[0]} (decided by {res.source})")


@app.command("find")
def find(
    text: Annotated[str, typer.Argument(help="The text to search ('-': read stdin).")],
    json: JsonOpt = False,
    speaking_to: Annotated[
        str | None, typer.Option(help="The operator being talked to (id or name).")
    ] = None,
) -> None:
    """Operator mentions in a text, with how each was matched."""
    names = workspace().names
    text = read_message(text, names.max_message_chars)
    ctx = {"speaking_to": names.resolve(speaking_to)} if speaking_to is not None else None
    mentions = names.find_mentions(text, ctx)
    rows = [
        {
            "char_id": m.char_id,
            "surface": m.surface,
            "start": m.start,
            "end": m.end,
            "how": m.how,
            "candidates": list(m.candidates),
            "name": names.display_name(m.char_id) if m.char_id else None,
        }
        for m in mentions
    ]
    if json:
        print_json(rows)
        return
    if not rows:
        console.print("no operator mentioned")
    for r in rows:
        who = f"{r['char_id']} {r['name']}" if r["char_id"] else f"ambiguous {r['candidates']}"
        console.print(f"[{r['start']}:{r['end']}] {r['surface']} -> {who} ({r['how']})")


@app.command("audit")
def audit_cmd(json: JsonOpt = False) -> None:
    """Speakers with >= 200 lines as operator or NPC, speakers that look like operators but
    have no alias, and identity links with their evidence: names the archives give that big
    speakers use (proposed until settled in data/aliases.toml), forms linked by a names rule."""
    report = workspace().names.audit()
    if json:
        print_json(report)
        return
    console.print(
        f"{len(report['big_speakers'])} speakers with >= 200 lines: "
        f"{report['big_speakers_operators']} operators, {report['big_speakers_npcs']} NPCs",
    )
    t = table("speaker", "lines", "reasons", "candidates")
    for s in report["suspects"][:60]:
        t.add_row(
            s["speaker"], str(s["lines"]), "; ".join(s["reasons"]), ", ".join(s["candidates"])
        )
    console.print(t)
    if len(report["suspects"]) > 60:
        console.print(f"... {len(report['suspects']) - 60} more suspects (use --json)")
    links = report["identity_links"]
    t = table("status", "rule", "speaker / form", "operator", "evidence")
    for x in links:
        t.add_row(
            x["status"], x["rule"], x["speaker"] or f"{x['name']} ({x['char_id']})",
            f"{x['to_name']} ({x['to']})", x["evidence"],
        )  # fmt: skip
    console.print(
        f"{len(links)} identity links ({sum(x['status'] == 'proposed' for x in links)} proposed)"
    )
    console.print(t)
    conflicts = report["portrait_conflicts"]
    console.print(f"{len(conflicts)} portrait conflicts (settle with [[stranger]] or [[alias]])")
    for c in conflicts:
        console.print(
            f"  {c['speaker']} -> {c['char_id']}: {c['picture']} in {c['lines']} lines, shown "
            f"more as {c['shown_most_as']} ({c['other_id'] or 'nobody'}, {c['other_lines']})"
        )
