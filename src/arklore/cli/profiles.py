"""Profile commands: draft .char files without a model, show what a chat may use of one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arklore.base.files import atomic_write_text
from arklore.cli._common import JsonOpt, console, print_json, workspace
from arklore.cli.app import app
from arklore.graph.io import load_graph
from arklore.profiles import sources
from arklore.profiles.charfile import SUFFIX, CharProfile, allowed_sections
from arklore.profiles.draft import draft_all, write_draft
from arklore.profiles.review import render_queue, spot_check_sample

profiles_app = typer.Typer(help="Character profiles (.char files).", no_args_is_help=True)
app.add_typer(profiles_app, name="profiles")
OutOpt = Annotated[
    Path | None,
    typer.Option("--dir", help="Folder of the .char files (default $ARKLORE_HOME/chars)."),
]


def _char_dir(d: Path | None) -> Path:
    return d if d is not None else workspace().paths.home / "chars"


@profiles_app.command("draft")
def draft(
    only: Annotated[
        list[str] | None, typer.Argument(help="Char ids or names (default: all).")
    ] = None,
    char_dir: OutOpt = None,
    review: Annotated[
        Path | None, typer.Option(help="Review queue Markdown (default <dir>/review.md).")
    ] = None,
    no_graph: Annotated[bool, typer.Option("--no-graph", help="Skip relation candidates.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the 10% spot-check sample.")] = 0,
    json: JsonOpt = False,
) -> None:
    """Draft tier-B profiles from the archive, voice and story lines (no model); files people
    wrote or edited are never overwritten (the draft goes beside them)."""
    ws = workspace()
    tables = sources.load_tables(ws.roots.excel_root())
    store = ws.store()
    ops = sources.load_operators(store)
    if only:
        wanted = {ws.resolve_operator(who) for who in only}
        ops = [o for o in ops if o.char_id in wanted]
    lines = sources.story_lines(store, None if not only else _with_bases(ops))
    gpath = ws.paths.graph
    graph = load_graph(gpath) if not no_graph and gpath.exists() else None
    out_dir = _char_dir(char_dir)
    drafts = draft_all(ops, tables, lines, graph=graph)
    actions: dict[str, int] = {}
    for d in drafts:
        res = write_draft(d, out_dir)
        key = res.action if res is not None else "tier C"
        actions[key] = actions.get(key, 0) + 1
    entries = [d.entry for d in drafts if d.entry is not None]
    queue = review if review is not None else out_dir / "review.md"
    atomic_write_text(queue, render_queue(entries))
    sample = [e.char_id for e in spot_check_sample(entries, seed=seed)]
    if json:
        print_json(
            {
                "dir": str(out_dir),
                "review": str(queue),
                "actions": actions,
                "spot_check": sample,
                "entries": [e.to_dict() for e in entries],
            }
        )
        return
    console.print(
        f"{len(drafts)} operators -> {out_dir}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(actions.items())),
        highlight=False,
    )
    console.print(f"review queue: {queue}", highlight=False)
    console.print(f"spot check (seed {seed}): {', '.join(sample)}", highlight=False)


def _with_bases(ops) -> set[str]:
    return {o.char_id for o in ops} | {o.base_id for o in ops if o.base_id}


@profiles_app.command("show")
def show(char_id: str, char_dir: OutOpt = None, json: JsonOpt = False) -> None:
    """The tier of one .char file, whether it was edited by hand, and the sections a chat may
    use of it with their token counts."""
    path = _char_dir(char_dir) / f"{char_id}{SUFFIX}"
    prof = CharProfile.read(path) if path.exists() else None
    allowed = allowed_sections(prof)
    out = {
        "char_id": char_id,
        "path": str(path) if prof else None,
        "tier": allowed.tier,
        "hand_edited": bool(prof and prof.hand_edited),
        "sections": [{"title": x.title, "tokens": x.tokens} for x in allowed.sections],
        "excluded": [{"title": t, "why": w} for t, w in allowed.excluded],
        "total_tokens": allowed.total_tokens,
    }
    if json:
        print_json(out)
        return
    edited = " (edited by hand)" if out["hand_edited"] else ""
    console.print(f"{char_id}: tier {allowed.tier}{edited}", highlight=False)
    for x in allowed.sections:
        console.print(f"  ## {x.title}: {x.tokens} tokens", highlight=False)
    for t, w in allowed.excluded:
        console.print(f"  (## {t}: {w})", highlight=False)
