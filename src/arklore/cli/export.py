"""`arklore export`: SillyTavern character cards and World Info, and the lint of their keys.

Exit codes: 0 done; 1 an unknown operator or an unreadable file; 2 a usage error (no operator
and no --all) or, for `export card`, no game tables (ARKLORE_GAMEDATA); 5 (`export lint`) the keys fire on more labelled messages that do not mention
their person than the limit allows (the findings are listed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arklore.cards.lint import MAX_FALSE_RATE
from arklore.cli import group
from arklore.cli._common import (
    JsonOpt,
    UntilOpt,
    console,
    err_console,
    print_json,
    progress_bar,
    workspace,
)
from arklore.core.errors import EXIT_FINDINGS, UsageError
from arklore.core.text import counted
from arklore.workspace import Workspace

AllowIncompleteOpt = Annotated[
    bool,
    typer.Option(
        "--allow-incomplete",
        help="Export even when the last `arklore build` did not finish (what its missing "
        "steps build is left out).",
    ),
]


def _complete(ws: Workspace, allow_incomplete: bool) -> Workspace:
    """``ws``, after refusing a home whose last build did not finish (unless allowed)."""
    if not allow_incomplete:
        ws.build_state().require_complete()
    return ws


app = group(
    "export", "SillyTavern character cards and lorebooks (World Info), and the lint of their keys."
)


@app.command("card")
def card_cmd(
    operators: Annotated[
        list[str] | None,
        typer.Argument(help="Operators (any name the alias table knows, or an id)."),
    ] = None,
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every operator a chat may use (the manifest applies) but those with nothing "
            "of theirs in this data (listed as left out).",
        ),
    ] = False,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for <name>.png and <name>.json.")
    ] = Path("cards"),
    allow_incomplete: AllowIncompleteOpt = False,
    until: UntilOpt = None,
    json: JsonOpt = False,
) -> None:
    """A Character Card V3 per operator: <name>.png (the card in the chara (V2) and ccv3 (V3)
    text chunks, as SillyTavern writes them; the image is her name on a plain background) and
    <name>.json beside it; an alternate form's name tells it apart (阿米娅（近卫）).
    Description from her .char (as her tier allows), personality from its 我·性格 and 说话方式,
    scenario from the setting and where she stands now, first message and alternate greetings
    from her own voice lines (else her story lines), example messages from her own scenes
    (other speakers told inside her messages, as SillyTavern's parser needs), a lorebook of
    her relations (keyed by each person's names, made safe for Chinese) and memories (keyed
    by the events' and stages' titles). Fields of an earlier export that arklore does not
    write (extensions) are kept. Needs ARKLORE_GAMEDATA (exit 2 without it)."""
    if all_ == bool(operators):
        raise UsageError(
            "name operators or pass --all (not both)", hint="arklore export card 银灰 --out cards"
        )
    ws = _complete(workspace(), allow_incomplete)
    with progress_bar(not json) as progress:
        done = ws.cards.export_cards(
            None if all_ else operators, out, progress=progress, until=until
        )
    if json:
        print_json(done.to_dict())
        return
    for r in done.cards:
        console.print(
            f"{r.name} ({r.char_id}, tier {r.tier}): {counted(r.relations, 'relation')}, "
            f"{counted(r.memories, 'memory')} -> {r.png}"
        )
        for what, why in r.skipped:
            console.print(f"  without {what}: {why}")
    if done.left_out:
        names = "、".join(name for _, name, _ in done.left_out)
        console.print(
            f"left out {counted(len(done.left_out), 'operator')} ({done.left_out[0][2]}): {names}"
        )


@app.command("lorebook")
def lorebook_cmd(
    out: Annotated[Path, typer.Option("--out", help="The World Info file to write.")] = Path(
        "arklore-lorebook.json"
    ),
    allow_incomplete: AllowIncompleteOpt = False,
    json: JsonOpt = False,
) -> None:
    """One World Info file of every operator's relations: an entry per (operator, person she
    has a relation with), keyed by that person's names (made safe for Chinese), shown only in
    chats with that operator. Import it in SillyTavern under World Info."""
    ws = _complete(workspace(), allow_incomplete)
    with progress_bar(not json) as progress:
        report = ws.cards.export_lorebook(out, progress=progress)
    if json:
        print_json(report.to_dict())
        return
    console.print(
        f"{counted(report.entries, 'entry')} for {counted(report.operators, 'operator')} "
        f"-> {report.path}"
    )
    if report.left_out:
        console.print(f"{len(report.left_out)} left out (see --json for all):")
        for what, why in report.left_out[:10]:
            console.print(f"  {what}: {why}")


@app.command("lint")
def lint_cmd(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="A World Info file, a card JSON or PNG (default: the lorebook `export "
            "lorebook` would write)."
        ),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Run every person entry's keys, as SillyTavern matches them, over the names layer's
    labelled chat messages (data/names_eval.jsonl) and report every key that fires on a
    message that does not mention that person. Exit 5 when the false-trigger rate (false
    firings / all firings) is over the limit."""
    report = workspace().cards.lint(file)
    if json:
        print_json(report.to_dict() | {"line": report.line()})
    else:
        for f in report.false:
            console.print(f"{f.label}: key {f.key!r} fires on {f.text!r}")
        console.print(report.line())
    if report.false_rate > MAX_FALSE_RATE:
        err_console.print(f"over the limit of {MAX_FALSE_RATE:.0%}")
        raise typer.Exit(EXIT_FINDINGS)
