"""The service's hold on one workspace: readiness, warm-up, and switching to a rebuilt
knowledge base without a restart.

A rebuild (``arklore ingest``, ``graph build``, ``rag build``) writes new files under the same
``ARKLORE_HOME``; every request first calls :meth:`ServiceState.watch`, which compares (at most
once per :data:`WATCH_INTERVAL`) the workspace's fingerprint (:meth:`Workspace.fingerprint`:
the last finished ingest run, the graph file, the index pointer) with what it loaded, and
drops the workspace's cached handles when it changed: the next request loads the new ones.
Requests already running finish on the old handles.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from arklore.chat.session import CHAT_TASK
from arklore.core.errors import ArkloreError
from arklore.llm import LLM
from arklore.llm.relay import ChatRelay
from arklore.rag.index import open_active
from arklore.service.graphview import CitationIndex
from arklore.workspace import Workspace

WATCH_INTERVAL = 1.0


def service_state(request: Request) -> ServiceState:
    """The app's state, after checking (at most once a second) for a rebuild."""
    st: ServiceState = request.app.state.arklore
    st.watch()
    return st


class ServiceState:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.citations = CitationIndex()
        self._lock = threading.Lock()
        self._stamp: tuple[str, ...] | None = None
        self._checked = 0.0
        self._llm: LLM | None = None
        self._relay: ChatRelay | None = None
        self.warm = False
        self.warm_error: str | None = None
        self.rewarm: threading.Thread | None = None  # a warm-up again after a first build
        self.reloads = 0

    # -- rebuilds ----------------------------------------------------------------------------
    def stamp(self) -> tuple[str, ...]:
        return self.ws.fingerprint()

    def watch(self) -> None:
        now = time.monotonic()
        if now - self._checked < WATCH_INTERVAL:
            return
        with self._lock:
            if now - self._checked < WATCH_INTERVAL:
                return
            self._checked = now
            stamp = self.stamp()
            if self._stamp is not None and stamp != self._stamp:
                self.ws.reload()
                self.reloads += 1
                if not self.warm and self.warm_error is not None:
                    # started on a home not built yet: the build just finished, warm up now
                    self.warm_error = None
                    self.rewarm = threading.Thread(
                        target=self.warm_up, name="arklore-warm-up", daemon=True
                    )
                    self.rewarm.start()
            self._stamp = stamp

    # -- readiness ---------------------------------------------------------------------------
    def readiness(self) -> dict[str, Any]:
        """The build finished, store, graph and index each loaded (or why not). What to do
        about any of them is one step, ``arklore build`` (it resumes and rebuilds what is
        out of date): ``hint`` names it with the home; each check says what is wrong."""
        ws = self.ws
        checks: dict[str, Any] = {}
        build = ws.build_state()
        checks["build"] = {"ok": build.complete, "state": build.state,
                           "missing": list(build.missing)}  # fmt: skip
        if not build.complete:
            checks["build"]["error"] = build.problem()
        try:
            ws.corpus.store()
            checks["store"] = {"ok": True}
        except ArkloreError as exc:
            checks["store"] = {"ok": False, "error": exc.message}
        try:
            g = ws.graph.current()
            checks["graph"] = {"ok": True, "nodes": len(g.nodes), "edges": len(g)}
        except ArkloreError as exc:
            checks["graph"] = {"ok": False, "error": exc.message}
        try:
            _, ptr = open_active(ws.paths.rag, ws.rag.embedder(), ws.rag.chroma())
            checks["index"] = {"ok": True, "collection": ptr.get("collection"),
                               "documents": ptr.get("doc_count")}  # fmt: skip
        except ArkloreError as exc:
            checks["index"] = {"ok": False, "error": exc.message}
        checks["warm"] = {
            "ok": self.warm,
            **({"error": self.warm_error} if self.warm_error else {}),
        }
        out: dict[str, Any] = {"ready": all(c["ok"] for c in checks.values()), "checks": checks}
        if not all(checks[k]["ok"] for k in ("build", "store", "graph", "index")):
            out["hint"] = f"{build.hint()} (ARKLORE_HOME={ws.paths.home})"
        return out

    def warm_up(self, then: Callable[[], None] | None = None) -> None:
        """Load what the first turn would (alias table, matcher, graph, index, embedder, the
        people of a weak-contact view) so it does not pay for it, then run ``then`` (the turn workers' warm-up); failures are
        reported by /readyz, never raised."""
        try:
            ws = self.ws
            ws.corpus.store()
            first = next(iter(ws.names.operators()), None)
            if first is not None:
                sp = ws.chat.speaker(first.char_id, check_manifest=False)
                ws.names.find_mentions(first.name)
                ws.events.appearances_of(sp.family)
                with contextlib.suppress(ArkloreError):
                    ws.rag.context(sp.node_id or sp.char_id, first.name)
                    # the names -> people table a weak-contact view reads (a group chat's
                    # pairs no document describes): ~0.1 s of the first group turn
                    ws.graph.people()
            with contextlib.suppress(ArkloreError):
                ws.rag.embedder().embed_query("你好")
            ws.rag.tokenizer().tokens("你好")  # jieba loads its dictionary on first use (~2 s)
            self.stamp()
            if then is not None:
                then()
            self.warm = True
        except ArkloreError as exc:
            self.warm_error = exc.message  # what to do: readiness()'s one hint
        except Exception as exc:  # never let a warm-up kill the server
            self.warm_error = f"{type(exc).__name__}: {exc}"
        finally:
            self._stamp = self.stamp()

    # -- the model ---------------------------------------------------------------------------
    def llm_configured(self) -> bool:
        return self.ws.settings.llm.configured(CHAT_TASK)

    def llm(self) -> LLM:
        with self._lock:
            if self._llm is None:
                self._llm = self.ws.llm()
            return self._llm

    def relay(self) -> ChatRelay:
        """The chat endpoint for the OpenAI-compatible route (task ``chat``), counted in the
        cost ledger of :meth:`llm`; one per process, created on first use in the event loop."""
        if self._relay is None:
            llm = self.llm()
            settings = self.ws.settings
            self._relay = ChatRelay(
                settings.llm_config(CHAT_TASK), task=CHAT_TASK, secrets=settings.llm.secrets(),
                ledger=llm.ledger, run_id=llm.run_id,
            )  # fmt: skip
        return self._relay

    async def aclose(self) -> None:
        """What must be closed in the event loop (the relay's connections)."""
        if self._relay is not None:
            await self._relay.aclose()
            self._relay = None

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
        self.ws.close()
