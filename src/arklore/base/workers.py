"""Worker processes for the steps that share out CPU work: ``spawn`` (they share nothing with
this process, whatever threads it runs) and deaf to Ctrl-C, which the terminal sends to the
whole process group: the command stops the pool, so no worker prints a traceback of its own."""

from __future__ import annotations

import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any


def spawn_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes, each ignoring Ctrl-C, then running
    ``initializer(*initargs)`` (a module-level function: it is pickled)."""
    return ProcessPoolExecutor(
        workers,
        mp_context=get_context("spawn"),
        initializer=_start,
        initargs=(initializer, initargs),
    )


def _start(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)
