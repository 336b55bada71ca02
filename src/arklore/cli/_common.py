"""Helpers shared by the CLI modules: settings, store, progress bars, JSON output."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from arklore.config import Settings
from arklore.corpus.store import Store

console = Console()
err_console = Console(stderr=True)


def settings() -> Settings:
    return Settings.from_env()


def open_store(*, must_exist: bool = True) -> Store:
    s = settings()
    store = Store(s.db_path, create=not must_exist)
    if must_exist:
        store.require_ingested()
    return store


def print_json(data: object) -> None:
    sys.stdout.write(
        orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    )
    sys.stdout.write("\n")


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """A callback ``(description, done, total)`` drawing one Rich bar per description.

    Drawn on stderr so ``--json`` output on stdout stays clean; silent when disabled or
    when stderr is not a terminal.
    """
    if not enabled or not err_console.is_terminal:
        yield lambda desc, done, total: None
        return
    tasks: dict[str, int] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    ) as bar:

        def update(desc: str, done: int, total: int) -> None:
            if desc not in tasks:
                tasks[desc] = bar.add_task(desc, total=total)
            bar.update(tasks[desc], completed=done, total=total)

        yield update
