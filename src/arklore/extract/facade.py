"""The extraction layer as the workspace uses it: which stages a run covers, the relations
run (model -> gates -> store -> export), its dry run, its review report, and the line ids its
kept edges cite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypedDict, TypeVar, Unpack

from arklore.core.errors import ConfigError
from arklore.corpus.store import Store
from arklore.extract import review as relations_review
from arklore.extract import runner
from arklore.extract import store as edges_db
from arklore.extract.relations import TASK
from arklore.llm import Estimate
from arklore.llm.access import LLMAccess
from arklore.llm.runs import Progress, TaskRunReport

R = TypeVar("R", bound=TaskRunReport)


class RunOptions(TypedDict, total=False):
    """The options of an LLM extraction run as the workspace takes them (the CLI's and the
    service's); defaults: 8 requests in flight, resume, the response cache on, the
    configured retries, no cost limit, the layer's export folder, no progress."""

    concurrency: int
    resume: bool
    no_cache: bool
    retry: int | None
    max_cost: float | None
    out: Path | None
    progress: Progress | None


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

    def relations(self, stage_paths: list[str], **options: Unpack[RunOptions]) -> runner.RunReport:
        """Extract, gate, store and export the relations of ``stage_paths`` (see
        :func:`run_stages`)."""
        return run_stages(
            self._store(),
            self._llm,
            runner.extract_relations,
            stage_paths,
            resolve=self._resolve,
            export=(runner.export_stages, self.exports),
            options=options,
        )

    def relations_dry_run(
        self, stage_paths: list[str], progress: Progress | None = None
    ) -> Estimate:
        """Tokens and cost of extracting ``stage_paths``; nothing is sent."""
        return runner.dry_run(self._store(), stage_paths, self._llm.prices(TASK), progress)

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


def run_stages(
    store: Store,
    llm: LLMAccess,
    extract: Callable[..., R],
    stage_paths: list[str],
    *,
    resolve: Callable[[str], str | None],
    export: tuple[Callable[[Store, list[str], Path], list[Path]], Path],
    options: RunOptions,
) -> R:
    """One chunked LLM run as every layer starts it (relations here, events above): a model
    session with the run's cache and retry settings and the circuit breaker (it stops early
    there or at ``max_cost`` USD; a rerun resumes), then the stages with results exported
    (``export``: the exporter and its default folder)."""
    no_cache, retry = options.get("no_cache", False), options.get("retry")
    with llm.session(no_cache=no_cache, retry=retry) as session:
        report = extract(
            store,
            session,
            stage_paths,
            concurrency=options.get("concurrency", 8),
            resume=options.get("resume", True),
            progress=options.get("progress"),
            resolve=resolve,
            stop_after_unreachable=llm.breaker_failures,
            max_cost=options.get("max_cost"),
        )
    exporter, default_out = export
    out = options.get("out") or default_out
    report.exports = [str(p) for p in exporter(store, stage_paths, out)]
    return report
