"""`arklore demo`: the main job on the real data (`arklore build`), then three chat turns as a
model would receive them: 阿米娅 greeting the Doctor, 陈 asked about 塔露拉, 银灰 about 初雪."""

from __future__ import annotations

import typer

from arklore.build import run_build
from arklore.cli._common import JsonOpt, console, print_json, progress_bar, workspace
from arklore.cli.build import print_build_report
from arklore.core.blocks import Block
from arklore.core.text import counted

DEMO_TURNS: tuple[tuple[str, str], ...] = (
    ("阿米娅", "你好"),
    ("陈", "你还记得塔露拉吗"),
    ("银灰", "初雪最近怎么样？"),
)
"""(operator, message): a greeting, a person she lost, a person she cares for."""

app = typer.Typer()


@app.command()
def demo(json: JsonOpt = False) -> None:
    """Build everything a chat needs from the data (no LLM; see `arklore build`), then show
    three chat turns block by block: her profile, her view of the Doctor, her people, what
    she lived through and her own lines, each citing the story lines it comes from."""
    ws = workspace()
    ws.roots.require_gamedata()
    ws.roots.require_astr()
    with progress_bar(not json) as progress:
        report = run_build(ws, progress=progress)
    turns = [ws.chat.turn(op, message) for op, message in DEMO_TURNS]
    if json:
        # each turn as `arklore turn --json` and /v1/turn give it, with the message asked
        turns_json = [{"message": t.message, **t.to_dict()} for t in turns]
        print_json({"build": report.to_dict(), "turns": turns_json})
        raise typer.Exit(report.exit_code)
    console.rule("arklore demo: the build (no LLM)")
    print_build_report(report)
    for t in turns:
        console.rule(f"{t.operator_name}：「{t.message}」 ({t.total_tokens} tokens)")
        for b in t.blocks:
            if b.empty:
                console.print(f"[{b.name}] (empty: {b.reason})")
                continue
            console.print(block_head(b))
            console.print(_excerpt(b.text))
    raise typer.Exit(report.exit_code)


def block_head(b: Block) -> str:
    """A block's line above its excerpt: its name, tokens and how many story lines it cites."""
    cites = f"; cites {counted(len(b.line_ids), 'line')}" if b.line_ids else ""
    return f"[{b.name}] {b.tokens}/{b.budget} tokens{cites}"


def _excerpt(text: str, lines: int = 12) -> str:
    rows = text.splitlines()
    more = f"\n  … ({len(rows) - lines} more lines)" if len(rows) > lines else ""
    return "\n".join("  " + r for r in rows[:lines]) + more
