"""Per-turn work off the event loop: the turn and the relation context run in worker
processes of their own (``arklore serve``) or in the thread pool (an app made in-process).

A turn is CPU work: milliseconds for a short message, hundreds of them for a long, name-dense
one (every person it names is looked up). Run in the event loop it stalls every other request
of the server process; run in threads of the same process it keeps the event loop waiting for
the GIL behind them (measured on the real data, 64 concurrent 8,000-character turns: the
``/healthz`` p95 went from ~10 ms idle to 9.4 s in the loop and to 2.3 s in the thread pool).
So each server process hands turns to ``ARKLORE_TURN_PROCESSES`` worker processes, each with
its own workspace over the same ``ARKLORE_HOME`` (following rebuilds as the server does), and
its event loop only parses, routes and writes. With 0 processes the thread pool is used: what
:func:`~arklore.service.app.create_app` does by default (tests, programs embedding the app).

The jobs are plain module-level functions of a workspace (:func:`turn`,
:func:`relation_context`), the same in both modes: :meth:`TurnRunner.run` takes the function
itself, so mypy checks every call's arguments and result, and a worker process gets it by
reference (it pickles by name). What they return (a :class:`~arklore.chat.turn.Turn`, a
relation context) and raise (any :class:`~arklore.core.errors.ArkloreError`) crosses the
process boundary unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Concatenate, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from arklore.base.workers import spawn_pool
from arklore.chat.turn import Speaker, Turn
from arklore.rag.context import RelationContext
from arklore.service.errors import ServiceError
from arklore.service.state import ServiceState
from arklore.settings import Settings
from arklore.workspace import Workspace


# -- the jobs --------------------------------------------------------------------------------
def turn(
    ws: Workspace,
    operator: str,
    message: str,
    history: Sequence[dict[str, str]],
    participants: Sequence[str],
    l3_targets: Sequence[str],
    steady: bool = False,
    until: str | None = None,
) -> Turn:
    return ws.chat.turn(
        operator, message, history, participants, l3_targets, steady=steady, until=until
    )


def relation_context(
    ws: Workspace,
    operator: str,
    message: str,
    l3_targets: Sequence[str],
    budget: int | None,
    until: str | None = None,
) -> tuple[Speaker, RelationContext]:
    sp = ws.chat.speaker(operator)
    return sp, ws.chat.relation_context(sp, message, l3_targets, budget, until=until)


def _ready(ws: Workspace) -> None:
    """Nothing: answering it shows a worker process has started and warmed up."""


P = ParamSpec("P")
R = TypeVar("R")


# -- inside a worker process -----------------------------------------------------------------
_CHILD: ServiceState | None = None
NICE = 10
"""How much lower the turn workers' CPU priority is than the server's: on a busy machine the
process answering requests (a probe, the bytes of a reply) is scheduled before more turn
work, so it stays fast while every core assembles turns."""


def _start(settings: Settings) -> None:
    """The worker process's initializer (after :func:`spawn_pool`'s: Ctrl-C is the server's,
    it stops the pool): a lower CPU priority (:data:`NICE`), then its own workspace, loaded
    before the first job."""
    global _CHILD
    with contextlib.suppress(OSError, AttributeError):
        os.nice(NICE)
    _CHILD = ServiceState(Workspace(settings))
    _CHILD.warm_up()


def _run(job: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
    """``job(workspace, *args, **kwargs)`` in a worker process (``job`` came by reference;
    :meth:`TurnRunner.run` checked its arguments)."""
    assert _CHILD is not None, "a turn worker without its workspace"
    _CHILD.watch()  # a rebuild under ARKLORE_HOME is picked up here too
    return job(_CHILD.ws, *args, **kwargs)


# -- in the server process -------------------------------------------------------------------
class TurnRunner:
    """Runs jobs out of the event loop: in ``processes`` worker processes (spawned on first
    use or by :meth:`warm`), or in the thread pool with ``processes == 0``."""

    def __init__(self, ws: Workspace, processes: int = 0) -> None:
        self.ws = ws
        self.processes = processes
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = spawn_pool(self.processes, _start, (self.ws.settings,))
            return self._pool

    async def run(
        self, job: Callable[Concatenate[Workspace, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``job(workspace, *args, **kwargs)`` off the event loop (``job``: a module-level
        function, so a worker process can be handed it); its exceptions are raised here."""
        if not self.processes:
            return await run_in_threadpool(job, self.ws, *args, **kwargs)
        pool = self.pool()
        try:
            return await asyncio.wrap_future(pool.submit(_run, job, args, kwargs))
        except BrokenProcessPool:
            self._drop(pool)
            raise ServiceError(
                503, "worker_lost", "the process assembling turns stopped (killed or out of "
                "memory)", hint="send the request again: a new one is started",
            ) from None  # fmt: skip

    def warm(self) -> None:
        """Start every worker process and wait until each has loaded its workspace."""
        if self.processes:
            pool = self.pool()
            for f in [pool.submit(_run, _ready, (), {}) for _ in range(self.processes)]:
                f.result()

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def turn_runner(request: Request) -> TurnRunner:
    runner: TurnRunner = request.app.state.turns
    return runner
