"""Worker processes for the steps that share out CPU work: ``spawn`` (they share nothing with
this process, whatever threads it runs) and deaf to Ctrl-C, which the terminal sends to the
whole process group: the command stops the pool, so no worker prints a traceback of its own.
A worker whose command was killed outright (no pool left to stop it) exits by itself: it
would otherwise wait for work forever."""

from __future__ import annotations

import os
import signal
import threading
import time
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


ORPHAN_CHECK = 1.0
"""Seconds between a worker's looks at whether the process that started it is still there."""


def _start(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


def _exit_when_orphaned(parent: int) -> None:
    """Exit this worker once its parent is gone (it is then re-parented)."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK)
    os._exit(1)
