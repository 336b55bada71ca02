"""The extraction layer as the workspace uses it: which stages a run covers, the relations
run (model -> gates -> store -> export), its dry run, its review report, and the line ids its
kept edges cite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from arklore.core.errors import ConfigError
from arklore.corpus.store import Store
from arklore.extract import review as relations_review
from arklore.extract import runner
from arklore.extract import store as edges_db
from arklore.llm import Estimate
from arklore.llm.access import LLMAccess

Progress = Callable[[str, int, int], None]


class ExtractFacade:
    """LLM relation extraction over the store (see the module doc)."""

    def __init__(
        self,
        store: Callable[[], Store],
        llm: LLMAccess,
        *,
        resolve: Callable[[str], str | None],
        exports: Path,
    ) -> None:
        self._store = store
        self._llm = llm
        self._resolve = resolve  # a name -> operator id (the alias table), None for others
        self.exports = exports

    def select_stages(
        self, paths: list[str] | None = None, *, event: str | None = None, all_: bool = False
    ) -> list[str]:
        """Stage paths named, an event's stages, or every primary stage (ConfigError with the
        closest ones when unknown)."""
        return runner.select_stages(self._store(), paths, event=event, all_=all_)

    def stage(self, path: str) -> str:
        """One stage path, checked (an extension is tolerated)."""
        return self.select_stages([path])[0]

    def relations(
        self,
        stage_paths: list[str],
        *,
        concurrency: int = 8,
        resume: bool = True,
        no_cache: bool = False,
        retry: int | None = None,
        max_cost: float | None = None,
        out: Path | None = None,
        progress: Progress | None = None,
    ) -> runner.RunReport:
        """Extract, gate, store and export the relations of ``stage_paths`` (stops early at
        the circuit breaker or at ``max_cost`` USD; a rerun resumes)."""
        store = self._store()
        with self._llm.session(no_cache=no_cache, retry=retry) as llm:
            report = runner.extract_relations(
                store,
                llm,
                stage_paths,
                concurrency=concurrency,
                resume=resume,
                progress=progress,
                resolve=self._resolve,
                stop_after_unreachable=self._llm.breaker_failures,
                max_cost=max_cost,
            )
        report.exports = [
            str(p) for p in runner.export_stages(store, stage_paths, out or self.exports)
        ]
        return report

    def relations_dry_run(
        self, stage_paths: list[str], progress: Progress | None = None
    ) -> Estimate:
        """Tokens and cost of extracting ``stage_paths``; nothing is sent."""
        return runner.dry_run(self._store(), stage_paths, self._llm.prices(runner.TASK), progress)

    def review(self, stage: str, *, html: bool = False, context: int = 2) -> str:
        """Every extracted edge of a stage with its evidence lines marked, as text or HTML."""
        path = self.stage(stage)
        store = self._store()
        edges = edges_db.load_edges(store, path)
        if not edges and not edges_db.has_chunks(store, path):
            raise ConfigError(
                f"no relations extracted for {path}",
                hint=f"run `arklore extract relations {path}` first",
            )
        render = relations_review.render_html if html else relations_review.render_text
        return render(path, edges, store.lines(path), context)

    def speaker_whitelist(self) -> set[str]:
        """Known speakers plus operator names: what vocatives and addressees may match."""
        return runner.speaker_whitelist(self._store())

    def citations(self) -> Iterator[tuple[str, str]]:
        """(line id, label) for the evidence of every kept extracted edge."""
        return edges_db.cited_line_ids(self._store())
