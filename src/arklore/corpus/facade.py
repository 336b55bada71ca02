"""The corpus layer as the workspace uses it: the store, ingest runs, the cross-check and the
anchor drift check.

:meth:`CorpusFacade.store` is the one gate every reader passes: it refuses a store that was
never ingested, one whose last ingest did not finish, and (for commands that read the data
files) one ingested from other checkouts than the settings name.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arklore.base.db import Migration
from arklore.core.errors import (
    ArkloreError,
    DataRootsChangedError,
    IncompleteIngestError,
    NotIngestedError,
)
from arklore.corpus import anchors, crosscheck
from arklore.corpus.ingest import IngestReport, tables_fingerprint
from arklore.corpus.ingest import ingest as ingest_corpus
from arklore.corpus.store import Store
from arklore.corpus.story import (
    StoryOrder,
    StoryPoint,
    StoryView,
    build_order,
    load_order,
    resolve_point,
)
from arklore.sources.roots import DataRoots

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IngestRun:
    """An ingest run begun: its id, and whether the store held a finished ingest before."""

    id: int
    first: bool


VIEW_CACHE = 256
"""Story points whose views are kept (cleared when full)."""


class CorpusFacade:
    """The store under one ``ARKLORE_HOME`` and the steps that read the data checkouts."""

    def __init__(
        self,
        db: Path,
        roots: DataRoots,
        migrations: Sequence[Migration],
        *,
        workers: int = 1,
        digest_memo: Path | None = None,
    ) -> None:
        self.db = db
        # the story files' digests by their stat: an ingest reads only the files that changed
        self.digest_memo = digest_memo or db.parent / "cache" / "ingest_digests.pickle"
        self.roots = roots
        self.workers = workers  # processes that parse story files during an ingest
        self.migrations = tuple(migrations)
        self._store: Store | None = None
        self._version: tuple[int, str] | None = None
        self._story: tuple[str, StoryOrder] | None = None
        self._views: dict[str, StoryView] = {}  # story point -> what a chat there knows
        self.order_file: Path | None = None  # the curated story order (None: the packaged)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- the store ---------------------------------------------------------------------------
    def open(self) -> Store:
        """The store with every layer's migrations applied, ingested or not (ingest, counts)."""
        if self._store is None:
            self._store = Store(self.db, create=True, migrations=self.migrations)
        return self._store

    def exists(self) -> bool:
        return self._store is not None or self.db.exists()

    def store(self, *, check_roots: bool = False, allow_data_change: bool = False) -> Store:
        """The ingested store. Raises when nothing was ingested, when the last ingest did not
        finish, and (``check_roots``: commands that read the data files) when it was ingested
        from other data checkouts than the settings name, unless ``allow_data_change``."""
        if not self.exists():
            raise NotIngestedError(f"no store ({self.db.name})", self.db.parent)
        store = self.open()
        store.require_ingested()
        run = store.last_ingest_run()
        if run is None or not run.finished:
            raise IncompleteIngestError(
                f"the last ingest into {self.db} did not finish"
                + (f" (started {run.started_at})" if run is not None else "")
            )
        if check_roots and not allow_data_change:
            self.check_roots(run.gamedata, run.astr)
        return store

    def check_roots(self, gamedata: str | None, astr: str | None) -> None:
        """DataRootsChangedError when the settings name other checkouts than these."""
        for var, was, now in (
            ("ARKLORE_GAMEDATA", gamedata, self.roots.gamedata),
            ("ARKLORE_ASTR", astr, self.roots.astr),
        ):
            now_s = _abs(now)
            if was is not None and now_s is not None and was != now_s:
                raise DataRootsChangedError(
                    f"the store was ingested from {var}={was}, but {var} is now {now_s}"
                )

    def state(self) -> str:
        """The last finished ingest run, as ``<id>:<finished at>`` ("" before the first, or
        while a store is being rebuilt): what a server compares to notice a new ingest."""
        if not self.exists():
            return ""
        try:
            run = self.store().last_ingest_run()
        except (ArkloreError, sqlite3.Error):  # being rebuilt: compare next time
            return ""
        return f"{run.id}:{run.finished_at}" if run is not None else ""

    def story_order(self) -> StoryOrder:
        """Every stage's place in the story (:mod:`arklore.corpus.story`), from the curated
        order file and the store; built once per corpus version."""
        version = self.version()
        if self._story is None or self._story[0] != version:
            rows, names = self.store().story_rows()
            self._story = (version, build_order(rows, load_order(self.order_file), names))
        return self._story[1]

    def story_point(self, query: str) -> StoryPoint:
        """The story point ``query`` names (a stage code, an event or chapter name, an event
        or stage id): StoryPointError listing the closest when it names none, or several."""
        store = self.store()
        return resolve_point(self.story_order(), query, store.find_stages(query), store.stage_names)

    def story_view(self, query: str) -> StoryView:
        """The story as a chat set at ``query`` knows it (:class:`StoryView`), kept per point
        for the order it was resolved in: a service set at one point resolves it once."""
        order = self.story_order()
        view = self._views.get(query)
        if view is None or view.order is not order:
            if len(self._views) >= VIEW_CACHE:
                self._views.clear()
            view = self._views[query] = StoryView(order, self.story_point(query))
        return view

    def version(self) -> str:
        """What the corpus holds, as a short hash: every stored stage's content hash and the
        excel tables' fingerprint. Unlike the ingest run id it only changes when the data
        did, so later build steps can tell when their input is the same (kept per run)."""
        store = self.store()
        run = store.last_ingest_run()
        run_id = run.id if run is not None else 0
        if self._version is None or self._version[0] != run_id:
            h = hashlib.sha256((run.tables_fingerprint or "").encode() if run else b"")
            for source in ("avg", "astr"):
                for path, digest in sorted(store.stage_hashes(source).items()):
                    h.update(f"{source}\t{path}\t{digest}\n".encode())
            self._version = (run_id, h.hexdigest()[:16])
        return self._version[1]

    # -- ingest ------------------------------------------------------------------------------
    def begin_ingest(self, sources: Sequence[str], *, allow_data_change: bool) -> IngestRun:
        """Record an ingest run (a run that does not finish leaves the store marked
        incomplete); refuses other checkouts than the last finished ingest's."""
        store = self.open()
        previous = store.last_ingest_run()
        finished = previous is not None and previous.finished
        if previous is not None and finished and not allow_data_change:
            self.check_roots(previous.gamedata, previous.astr)
        run_id = store.begin_ingest_run(
            _abs(self.roots.gamedata), _abs(self.roots.astr), list(sources)
        )
        return IngestRun(run_id, not finished)

    def ingest(
        self, sources: Sequence[str], *, force: bool = False, progress: Progress | None = None
    ) -> IngestReport:
        """Both story sources -> the corpus tables (unchanged stages skipped)."""
        return ingest_corpus(
            self.roots, self.open(), sources=tuple(sources), progress=progress, force=force,
            workers=self.workers, memo=self.digest_memo,
        )  # fmt: skip

    def finish_ingest(self, run: IngestRun) -> None:
        self.open().finish_ingest_run(run.id, tables_fingerprint(self.roots))

    # -- reads and checks --------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        return self.open().counts()

    def stats(self) -> dict[str, Any]:
        """Ingest errors, parse warnings and the last run (the names layer adds its part)."""
        store = self.store()
        run = store.last_ingest_run()
        return {
            "ingest_errors": store.ingest_errors(),
            "parse_warnings": store.parse_warnings(),
            "last_ingest": None if run is None else {
                "started_at": run.started_at,
                "finished_at": run.finished_at,
                "gamedata": run.gamedata,
                "astr": run.astr,
            },
        }  # fmt: skip

    def speakers(self) -> list[dict[str, Any]]:
        """Every speaker with line counts, most lines first."""
        keys = ("name", "lines", "stages", "avg_lines", "astr_lines")
        return [dict(zip(keys, r, strict=True)) for r in self.store().speaker_rows()]

    def crosscheck(
        self, *, from_files: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> crosscheck.CrosscheckReport:
        """The two sources compared line by line (from the store, or re-read from files)."""
        if from_files:
            return crosscheck.crosscheck(
                self.roots.avg_story_root(), self.roots.astr_story_root(), progress
            )
        return crosscheck.crosscheck_store(self.store(), progress)

    def verify_anchors(
        self,
        citations: Iterable[anchors.Citation],
        kinds: Sequence[str],
        *,
        full: bool = False,
        allow_data_change: bool = False,
        progress: Progress | None = None,
    ) -> anchors.AnchorReport:
        """Stored and cited line ids checked against the current data files."""
        store = self.store(check_roots=True, allow_data_change=allow_data_change)
        return anchors.verify_anchors(
            self.roots, store, citations=list(citations), kinds=kinds, full=full,
            progress=progress,
        )  # fmt: skip


def _abs(p: Path | str | None) -> str | None:
    return str(Path(p).resolve()) if p is not None else None
