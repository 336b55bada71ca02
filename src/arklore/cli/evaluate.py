"""`arklore eval fidelity`: score what chat turns inject against the labelled fidelity set.

This module owns its Typer app (the ``eval`` group), registered in :mod:`arklore.cli.app`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from arklore.chat.fidelity import (
    KINDS,
    answer,
    chat_completer,
    load_items,
    missing_cites,
    score,
    store_line_speaker,
)
from arklore.chat.session import CHAT_TASK
from arklore.cli import group
from arklore.cli._common import JsonOpt, console, err_console, print_json, workspace
from arklore.core.errors import ConfigError, UsageError

app = group(
    "eval", "Evaluations of what arklore injects.", rich_markup_mode=None, add_completion=False
)

SHOWN_FAILURES = 40
"""Failed items listed in the plain-text report (all of them are in --json)."""


@app.command("fidelity")
def fidelity_cmd(
    kind: Annotated[
        str | None,
        typer.Option("--kind", help=f"Score only items of this kind ({', '.join(KINDS)})."),
    ] = None,
    answer_mode: Annotated[
        bool,
        typer.Option(
            "--answer",
            help="Also ask the chat model each item's question, with arklore's system prompt "
            "and with a bare one-line prompt (task `chat`: LLM_CHAT_MODEL... or LLM_*).",
        ),
    ] = False,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Another labelled set (default: the shipped one)."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Does what a chat turn injects let a model stay in character? Scores each labelled
    message on `arklore turn <operator> <message>`: relations named and implied, anchors, the
    doctor block, her own lines as examples, memories. Exit 0 once scored."""
    if kind is not None and kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}", hint="one of " + ", ".join(KINDS))
    items = load_items(data)
    if kind is not None:
        items = [it for it in items if it.kind == kind]
    ws = workspace()
    store = ws.corpus.store()

    def turn(operator: str, message: str) -> dict[str, Any]:
        return ws.chat.turn(operator, message).to_dict()

    report = score(items, turn, store_line_speaker(store, ws.names))
    drifted = missing_cites(items, store.lines_by_id)
    answers = None
    if answer_mode:
        if not ws.settings.llm.configured(CHAT_TASK):
            raise ConfigError(
                "no LLM configured for the chat task",
                hint="set LLM_API_KEY (or LLM_CHAT_BASE_URL for a local server)",
            )
        llm = ws.llm()
        try:
            answers = answer(items, turn, chat_completer(llm))
        finally:
            err_console.print(llm.format_cost_line())
            llm.close()
    if json:
        out = report.to_dict() | {"drifted_cites": [list(x) for x in drifted]}
        if answers is not None:
            out["answers"] = answers.to_dict()
        print_json(out)
        return
    console.print(
        f"fidelity: {report.n} items, {len(report.operators())} operators"
        + ("" if report.speakers_checked else " (speakers not checked)")
    )
    for line in report.lines():
        console.print("  " + line)
    if answers is not None:
        for line in answers.lines():
            console.print("  " + line)
    failed = [r for r in report.results if not r.passed]
    if failed:
        console.print(f"failed ({len(failed)}):")
        for r in failed[:SHOWN_FAILURES]:
            console.print(f"  {r.id} [{r.kind}] {r.operator}: {r.reason}")
        if len(failed) > SHOWN_FAILURES:
            console.print(f"  ... {len(failed) - SHOWN_FAILURES} more (--json lists all)")
    if drifted:
        console.print(f"cited lines no longer in the store ({len(drifted)}):")
        for item_id, lid in drifted[:SHOWN_FAILURES]:
            console.print(f"  {item_id}: {lid}")
