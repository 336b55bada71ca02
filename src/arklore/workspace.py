"""The composition root: one :class:`Workspace` made from one :class:`Settings` owns every
path under ``ARKLORE_HOME``, every setting, and the handles the pipeline needs (store, alias
table, matcher, LLM per task, embedder, graph, relation index), and runs the pipeline steps.

Library modules never read the environment or pick a path: they get what they need as
arguments from here. The ``arklore`` command and the HTTP service are thin adapters over the
same steps (``ws.ingest()``, ``ws.build_graph()``, ``ws.build_index()``, ``ws.context()``...).

Handles are opened on first use and kept for the workspace's life (a CLI run, a server
process); :meth:`Workspace.close` releases them. Nothing here is process-global: two
workspaces on two homes never share state.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from arklore.base.db import Migration
from arklore.base.files import atomic_write_text, file_fingerprint
from arklore.chat.knowledge import Budgets, ChatKnowledge
from arklore.chat.turn import Turn, assemble_turn
from arklore.core.blocks import Block
from arklore.core.errors import (
    AmbiguousNameError,
    DataRootsChangedError,
    IncompleteIngestError,
    InputFileError,
    NotIngestedError,
    UnknownNameError,
    UsageError,
)
from arklore.core.operators import Alias, Operator
from arklore.core.text import check_message
from arklore.corpus import anchors, crosscheck
from arklore.corpus import schema as corpus_schema
from arklore.corpus.ingest import IngestReport, tables_fingerprint
from arklore.corpus.ingest import ingest as ingest_corpus
from arklore.corpus.store import Store
from arklore.events import appearances as event_appearances
from arklore.events import diff as events_diff
from arklore.events import runner as events_runner
from arklore.events import schema as events_schema
from arklore.events import store as events_db
from arklore.events.memories import Memories, MemoryService
from arklore.events.timeline import Timeline, build_timeline
from arklore.extract import runner as relations_runner
from arklore.extract import schema as extract_schema
from arklore.extract import store as edges_db
from arklore.graph.build import build_graph
from arklore.graph.citations import curated_citations, graph_citations
from arklore.graph.evidence import PairFacts, pair_facts
from arklore.graph.importer import load_import
from arklore.graph.io import load_graph, loads_graph, save_graph
from arklore.graph.matrix import default_matrix_path, load_matrix
from arklore.graph.model import RelationGraph
from arklore.graph.people import People
from arklore.llm import LLM, Estimate, LLMFiles, estimate
from arklore.names import build as names_db
from arklore.names import schema as names_schema
from arklore.names.aliases import AliasTable, default_alias_path, load_user_aliases
from arklore.names.matcher import Mention, MentionContext, MentionMatcher
from arklore.names.registry import build_registry
from arklore.profiles import distill as distill_run
from arklore.profiles import feedback as profile_feedback
from arklore.profiles import review as profile_review
from arklore.profiles import schema as profiles_schema
from arklore.profiles import sources as profile_sources
from arklore.profiles.archive import Tables
from arklore.profiles.charfile import SUFFIX as CHAR_SUFFIX
from arklore.profiles.charfile import ApproveRefusedError, CharProfile
from arklore.profiles.charfile import approve as approve_text
from arklore.profiles.draft import utc_now
from arklore.profiles.inputs import TASK_D_SOURCES, OperatorInputs
from arklore.profiles.persona import Persona, persona
from arklore.profiles.quotes import voice_index, voice_sources
from arklore.profiles.results import load_results
from arklore.rag import describe
from arklore.rag.context import RelationContext, RelationRAG, spans_from_mentions
from arklore.rag.docs import RelationDoc, SourceContext, collect_documents, edge_items, fact_pairs
from arklore.rag.embedders import Embedder, make_embedder
from arklore.rag.index import (
    BuildReport,
    build_index,
    disk_bytes,
    doc_citations,
    live_documents,
    make_client,
    read_pointer,
)
from arklore.rag.validate import validate as validate_docs
from arklore.settings import Settings
from arklore.sources.roots import DataRoots

Progress = Callable[[str, int, int], None]

CITING_KINDS: tuple[str, ...] = (
    "relation_edges", "event_memories", "matrix", "user_matrix", "import", "graph", "rag",
)  # fmt: skip
"""What cites line ids, as ``verify-anchors`` reports it (the labels' kinds, see
:meth:`Workspace.verify_anchors`)."""

STORE_MIGRATIONS: tuple[Migration, ...] = (
    corpus_schema.MIGRATIONS[0],
    *names_schema.MIGRATIONS,  # copies the 0.1 speaker ids before corpus/002 drops them
    *corpus_schema.MIGRATIONS[1:],
    *extract_schema.MIGRATIONS,
    *profiles_schema.MIGRATIONS,
    *events_schema.MIGRATIONS,
)
"""Every layer's tables in the store, in the order they are applied."""


def open_store(path: Path | str, *, create: bool = True) -> Store:
    """The store at ``path`` with every layer's migrations applied (tests and tools)."""
    return Store(path, create=create, migrations=STORE_MIGRATIONS)


@dataclass(frozen=True)
class Paths:
    """Everything arklore writes, under ``home`` (``ARKLORE_HOME``)."""

    home: Path

    @property
    def db(self) -> Path:
        return self.home / "arklore.sqlite3"

    @property
    def llm(self) -> LLMFiles:
        return LLMFiles(
            cache=self.home / "llm_cache.sqlite3",
            state=self.home / "llm_state.sqlite3",
            errors=self.home / "llm_errors.jsonl",
        )

    @property
    def graph(self) -> Path:
        return self.home / "relation_graph.json"

    @property
    def graph_imports(self) -> Path:
        """Registered relation imports, merged by every graph build."""
        return self.home / "graph_imports"

    @property
    def rag(self) -> Path:
        return self.home / "rag"

    @property
    def rag_rejects(self) -> Path:
        return self.home / "rag_rejects.jsonl"

    @property
    def relation_exports(self) -> Path:
        return self.home / "exports" / "relations"

    @property
    def chars(self) -> Path:
        """Generated ``.char`` profiles (``arklore distill`` writes them here by default)."""
        return self.home / "chars"

    @property
    def distill_errors(self) -> Path:
        return self.home / "distill_errors.jsonl"

    @property
    def review_queue(self) -> Path:
        return self.home / "char-auto-review-queue.md"

    @property
    def event_exports(self) -> Path:
        return self.home / "exports" / "events"

    @property
    def embed_cache(self) -> Path:
        """Document vectors by (embedder, text hash), shared by the relation index and
        memories."""
        return self.rag / "embed_cache.sqlite3"


@dataclass
class GraphBuild:
    """A built and saved graph with its build report."""

    graph: RelationGraph
    report: dict[str, Any] = field(default_factory=dict)


class Workspace:
    """Settings, paths, handles and pipeline steps of one ``ARKLORE_HOME`` (see module doc)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.paths = Paths(Path(settings.home))
        self.roots = DataRoots(settings.gamedata, settings.astr)
        self._store: Store | None = None
        self._user_aliases: list[Alias] | None = None
        self._aliases: AliasTable | None = None
        self._matcher: MentionMatcher | None = None
        self._people: People | None = None
        self._embedders: dict[str, Embedder] = {}
        self._graph: RelationGraph | None = None
        # the graph the facts were gathered for, held so its identity cannot be reused
        self._facts: tuple[RelationGraph, dict[tuple[str, str], PairFacts]] | None = None
        self._rag: RelationRAG | None = None
        self._chroma: Any = None
        self._profile_tables: Tables | None = None
        self._memories: MemoryService | None = None
        self._speaker_ids: dict[str, str] | None = None
        self._operators: list[Operator] | None = None
        self._appearances: dict[tuple[str, ...], tuple[Any, list[Any]]] = {}
        self._chat: ChatKnowledge | None = None
        self._chroma_lock = threading.Lock()  # chromadb's client registry is not thread-safe

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        if self._memories is not None:
            self._memories.close()
            self._memories = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reload(self) -> None:
        """Forget cached names, graph and index handles (after a rebuild or a user-file edit)."""
        self._user_aliases = self._aliases = self._matcher = self._people = None
        self._graph = None
        self._facts = None
        self._rag = None
        self._speaker_ids = self._operators = None
        self._appearances = {}
        self._chat = None

    # -- the store ---------------------------------------------------------------------------
    def store(self, *, check_roots: bool = False, allow_data_change: bool = False) -> Store:
        """The ingested store. Raises when nothing was ingested, when the last ingest did not
        finish, and (``check_roots``: commands that read the data files) when it was ingested
        from other data checkouts than the settings name, unless ``allow_data_change``."""
        if self._store is None and not self.paths.db.exists():
            raise NotIngestedError(f"no store at {self.paths.db}")
        store = self._open_store()
        store.require_ingested()
        run = store.last_ingest_run()
        if run is None or not run.finished:
            raise IncompleteIngestError(
                f"the last ingest into {self.paths.db} did not finish"
                + (f" (started {run.started_at})" if run is not None else "")
            )
        if check_roots and not allow_data_change:
            self._check_roots(run.gamedata, run.astr)
        return store

    def _open_store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.paths.db)
        return self._store

    def _check_roots(self, gamedata: str | None, astr: str | None) -> None:
        for var, was, now in (
            ("ARKLORE_GAMEDATA", gamedata, self.roots.gamedata),
            ("ARKLORE_ASTR", astr, self.roots.astr),
        ):
            now_s = str(Path(now).resolve()) if now is not None else None
            if was is not None and now_s is not None and was != now_s:
                raise DataRootsChangedError(
                    f"the store was ingested from {var}={was}, but {var} is now {now_s}"
                )

    # -- names -------------------------------------------------------------------------------
    def user_aliases(self) -> list[Alias]:
        """The user alias file (``ARKLORE_ALIASES``, else the packaged ``data/aliases.toml``)."""
        if self._user_aliases is None:
            self._user_aliases = load_user_aliases(
                self.settings.aliases_file or default_alias_path()
            )
        return self._user_aliases

    def aliases(self) -> AliasTable:
        """The store's alias table plus the user file: the names every command resolves."""
        if self._aliases is None:
            self._aliases = names_db.load_alias_table(self.store(), self.user_aliases())
        return self._aliases

    def matcher(self) -> MentionMatcher:
        if self._matcher is None:
            self._matcher = MentionMatcher(self.aliases())
        return self._matcher

    def people(self) -> People:
        """Names -> graph node ids (registry, alias table and corpus speakers)."""
        if self._people is None:
            store = self.store()
            self._people = People(
                names_db.stored_registry(store), self.matcher(), sorted(store.speaker_counts())
            )
        return self._people

    def resolve_operator(self, name: str) -> str:
        """Any name the alias table knows (or an operator id) -> the operator id; a one-line
        error with the closest names when unknown, every candidate when ambiguous."""
        table = self.aliases()
        res = table.resolve(name)
        if res.ambiguous:
            raise AmbiguousNameError(name, list(res.ids))
        if res.char_id is None:
            raise UnknownNameError(
                f"no operator is called {name!r}", hint=_closest_hint(name, table.surfaces())
            )
        return res.char_id

    def find_mentions(
        self, text: str, context: MentionContext | dict[str, Any] | None = None
    ) -> list[Mention]:
        """Operator mentions in ``text`` with the store's alias table (MessageTooLongError over
        ``ARKLORE_MAX_MESSAGE_CHARS``)."""
        check_message(text, self.settings.max_message_chars)
        return self.matcher().find(text, context)

    # -- ingest ------------------------------------------------------------------------------
    def ingest(
        self,
        *,
        sources: Sequence[str] = ("avg", "astr"),
        force: bool = False,
        allow_data_change: bool = False,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Both story sources -> the corpus tables, then the names layer (registry, aliases,
        speaker ids). The registry and the user alias file are read first, so a broken table
        or file fails before anything is written. Recorded as an ingest run: a run that does
        not finish leaves the store marked incomplete."""
        registry = build_registry(self.roots.excel_root(), self.roots.chardict_or_none())
        user = self.user_aliases()
        store = self._open_store()
        previous = store.last_ingest_run()
        if previous is not None and previous.finished and not allow_data_change:
            self._check_roots(previous.gamedata, previous.astr)
        run_id = store.begin_ingest_run(
            _abs(self.roots.gamedata), _abs(self.roots.astr), list(sources)
        )
        report = ingest_corpus(
            self.roots, store, sources=tuple(sources), progress=progress, force=force
        )
        if report.post_processed or previous is None or not previous.finished:
            names_db.rebuild_names(store, registry, user)
            report.names_rebuilt = True
        report.warnings = list(registry.warnings)
        report.counts = self.counts()
        store.finish_ingest_run(run_id, tables_fingerprint(self.roots))
        self.reload()
        return report

    def counts(self) -> dict[str, int]:
        """What the store holds (corpus and names)."""
        store = self._open_store()
        return store.counts() | {"operators": names_db.operator_count(store)}

    def stats(self) -> dict[str, Any]:
        store = self.store()
        run = store.last_ingest_run()
        return {
            "counts": self.counts(),
            "ingest_errors": store.ingest_errors(),
            "parse_warnings": store.parse_warnings(),
            "warnings": names_db.registry_warnings(store),
            "last_ingest": None if run is None else {
                "started_at": run.started_at,
                "finished_at": run.finished_at,
                "gamedata": run.gamedata,
                "astr": run.astr,
            },
        }  # fmt: skip

    def verify_anchors(
        self,
        *,
        full: bool = False,
        allow_data_change: bool = False,
        matrices: Sequence[Path] = (),
        progress: Progress | None = None,
    ) -> anchors.AnchorReport:
        """Every stored and cited line id checked against the current data files.

        Cited by (the referrer kinds of the report): ``relation_edges`` (extracted relations),
        ``event_memories``, ``matrix`` (the packaged matrix, when the saved graph was built
        from it), ``user_matrix`` (``matrices``), ``import`` (the registered relation
        imports), ``graph`` (the saved graph's edges) and ``rag`` (the live index's
        documents, read without an embedder).  A graph built from a matrix file that is not
        among ``matrices`` gets a note: its path is not recorded, so it cannot be read here.
        """
        t0 = time.perf_counter()
        store = self.store(check_roots=True, allow_data_change=allow_data_change)
        notes: list[str] = []
        citations = list(self._citations(store, matrices, notes))
        report = anchors.verify_anchors(
            self.roots, store, citations=citations, kinds=CITING_KINDS, full=full,
            progress=progress,
        )  # fmt: skip
        report.notes += notes
        report.seconds = round(time.perf_counter() - t0, 2)  # gathering the citations included
        return report

    def _citations(
        self, store: Store, matrices: Sequence[Path], notes: list[str]
    ) -> Iterator[anchors.Citation]:
        """``(line_id, "<kind>: <what>")`` for every line id a later layer cites.

        Names in the labels come from the graph's nodes when there is a graph (the alias
        table is only built when a file must be read without one: it costs seconds)."""
        graph = self.graph() if self.paths.graph.is_file() else None

        def name(nid: str) -> str:
            if graph is not None and nid in graph.nodes:
                return graph.nodes[nid].name
            if nid.startswith("char_"):
                return self.people().operator_name(nid)
            return nid.removeprefix("npc:")

        def resolve(who: str) -> str:  # labels only: an unknown name is shown as written
            if graph is not None:
                return graph.resolve(who.removeprefix("npc:")) or who
            return self.people().user_node(who) or who

        yield from edges_db.cited_line_ids(store)
        yield from events_db.cited_line_ids(store)
        built_from = (graph.meta.get("matrix") or {}).get("path") if graph is not None else None
        if built_from == default_matrix_path().name:
            yield from curated_citations(
                load_matrix(default_matrix_path(), resolve), "matrix", name
            )
        elif built_from and all(Path(m).name != built_from for m in matrices):
            notes.append(
                f"the graph was built from the matrix {built_from}: pass it with --matrix "
                "to check its evidence"
            )
        for path in matrices:
            yield from curated_citations(load_matrix(path, resolve), "user_matrix", name)
        for path in self.registered_imports():
            yield from curated_citations(load_import(path, resolve), "import", name)
        if graph is not None:
            yield from graph_citations(graph)
        if read_pointer(self.paths.rag) is not None:
            yield from doc_citations(live_documents(self.paths.rag, self.chroma()), name)

    def crosscheck(
        self, *, from_files: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> crosscheck.CrosscheckReport:
        if from_files:
            return crosscheck.crosscheck(
                self.roots.avg_story_root(), self.roots.astr_story_root(), progress
            )
        return crosscheck.crosscheck_store(self.store(), progress)

    # -- relation extraction -----------------------------------------------------------------
    def llm(self, *, no_cache: bool = False, **changes: Any) -> LLM:
        """A new LLM service (its own run id and cost line); ``changes`` override the task
        settings (e.g. ``max_retries`` from ``--retry``). Close it when done."""
        llm_settings = self.settings.llm
        return LLM(
            lambda task: llm_settings.config(task, **changes),
            self.paths.llm,
            secrets=llm_settings.secrets(),
            no_cache=no_cache,
        )

    def extract_relations(
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
    ) -> relations_runner.RunReport:
        """Extract, gate, store and export the relations of ``stage_paths`` (stops early at
        the circuit breaker or at ``max_cost`` USD; a rerun resumes)."""
        store = self.store()
        changes = {} if retry is None else {"max_retries": retry}
        llm = self.llm(no_cache=no_cache, **changes)
        try:
            report = relations_runner.extract_relations(
                store,
                llm,
                stage_paths,
                concurrency=concurrency,
                resume=resume,
                progress=progress,
                resolve=relations_runner.table_resolver(self.aliases()),
                stop_after_unreachable=self.settings.llm.breaker_failures,
                max_cost=max_cost,
            )
            out_dir = out or self.paths.relation_exports
            report.exports = [
                str(p) for p in relations_runner.export_stages(store, stage_paths, out_dir)
            ]
        finally:
            llm.close()
        return report

    def extract_relations_dry_run(
        self, stage_paths: list[str], progress: Progress | None = None
    ) -> Estimate:
        prices = self.settings.llm_config(relations_runner.TASK).prices
        return relations_runner.dry_run(self.store(), stage_paths, prices, progress)

    def select_stages(
        self, paths: list[str] | None = None, *, event: str | None = None, all_: bool = False
    ) -> list[str]:
        return relations_runner.select_stages(self.store(), paths, event=event, all_=all_)

    # -- story events, appearances, timeline, memories ---------------------------------------
    def speaker_ids(self) -> dict[str, str]:
        """Corpus speaker -> operator id (the names layer's speaker ids)."""
        if self._speaker_ids is None:
            self._speaker_ids = names_db.speaker_ids(self.store())
        return self._speaker_ids

    def resolve_person(self, name: str) -> str | None:
        """A name as written in the story -> operator id: the alias table, then the speaker
        ids (labels like 神秘的女性 that portraits tie to one operator); None for NPCs."""
        return self.aliases().resolve(name).char_id or self.speaker_ids().get(name)

    def operator_family(self, char_id: str) -> list[str]:
        """The operator's id and every alternate form of the same person (base first)."""
        if self._operators is None:
            self._operators = names_db.load_operators(self.store())
        return event_appearances.family(self._operators, char_id)

    def extract_events(
        self,
        stage_paths: list[str],
        *,
        concurrency: int = 8,
        resume: bool = True,
        no_cache: bool = False,
        retry: int | None = None,
        max_cost: float | None = None,
        out: Path | None = None,
        embed: bool = True,
        progress: Progress | None = None,
    ) -> events_runner.RunReport:
        """Extract, check, store and export the story events of ``stage_paths`` (stops early
        at the circuit breaker or at ``max_cost`` USD; a rerun resumes); ``embed`` embeds the
        kept memories for chat right away (else on an operator's first query)."""
        store = self.store()
        changes = {} if retry is None else {"max_retries": retry}
        llm = self.llm(no_cache=no_cache, **changes)
        try:
            report = events_runner.extract_events(
                store,
                llm,
                stage_paths,
                concurrency=concurrency,
                resume=resume,
                progress=progress,
                resolve=self.resolve_person,
                stop_after_unreachable=self.settings.llm.breaker_failures,
                max_cost=max_cost,
            )
            out_dir = out or self.paths.event_exports
            report.exports = [
                str(p) for p in events_runner.export_stages(store, stage_paths, out_dir)
            ]
        finally:
            llm.close()
        if embed:
            if progress:
                progress("embed memories", 0, 1)
            report.embedded_memories = self.memory_service().embed_stages(stage_paths)
            if progress:
                progress("embed memories", 1, 1)
        return report

    def extract_events_dry_run(
        self, stage_paths: list[str], progress: Progress | None = None
    ) -> Estimate:
        prices = self.settings.llm_config(events_runner.TASK).prices
        return events_runner.dry_run(self.store(), stage_paths, prices, progress)

    def appearances(self, operator: str) -> list[event_appearances.Appearance]:
        """The stages the operator (any of her forms) speaks in or is addressed in, in story
        order, with line counts and the official stage summaries; no LLM."""
        return self._family_appearances(
            tuple(self.operator_family(self.resolve_operator(operator)))
        )

    def _family_appearances(self, family: Sequence[str]) -> list[event_appearances.Appearance]:
        store = self.store()
        run = store.last_ingest_run()
        key = tuple(family)
        held = self._appearances.get(key)
        if held is None or held[0] != run:
            apps = event_appearances.appearances(
                store,
                key,
                speaker_ids=self.speaker_ids(),
                resolve=lambda n: self.aliases().resolve(n).char_id,
                speakers=event_appearances.whitelist(relations_runner.speaker_whitelist(store)),
            )
            held = self._appearances[key] = (run, apps)
        return list(held[1])

    def timeline(
        self, *, operator: str | None = None, event: str | None = None, limit: int | None = None
    ) -> Timeline:
        """Stages in story order (release order, an approximation of in-world time), with
        their extracted events in line order; with ``operator``, only the stages she appears
        in and her events; with ``event``, only that event's stages; the first ``limit``."""
        store = self.store()
        paths = None
        if event is not None:
            paths = relations_runner.select_stages(store, event=event)
        infos = store.stage_infos(paths)
        apps = None
        family: list[str] = []
        char_id = None
        if operator is not None:
            char_id = self.resolve_operator(operator)
            family = self.operator_family(char_id)
            apps = self._family_appearances(tuple(family))
            hers = {a.stage_path for a in apps}
            infos = [i for i in infos if i.stage_path in hers]
        infos = infos[:limit] if limit is not None else infos
        checked = set(events_db.checked_stages(store))
        events = {i.stage_path: events_db.load_events(store, i.stage_path)
                  for i in infos if i.stage_path in checked}  # fmt: skip
        return build_timeline(
            infos, events, appearances=apps, operator=char_id, family_ids=family, event=event
        )

    def memory_service(self) -> MemoryService:
        if self._memories is None:
            self._memories = MemoryService(
                self.store,
                self.embedder,
                self.paths.embed_cache,
                self._family_appearances,
            )
        return self._memories

    def memories(self, operator: str, query: str | None = None, k: int = 3) -> Memories:
        """Her own first-person memories (all her forms share them) ranked by similarity to
        ``query`` (story order without one); with no memory of hers extracted, her
        appearances, marked as such. One call per chat turn."""
        char_id = self.resolve_operator(operator)
        return self.memory_service().memories(char_id, self.operator_family(char_id), query, k)

    def events_diff(self, run_a: str, run_b: str) -> events_diff.RunDiff:
        """Two extractions compared by line-range overlap (a RUN: an export folder, one
        export file, or ``@store``)."""
        return events_diff.diff_runs(self._events_run(run_a), self._events_run(run_b))

    def _events_run(self, spec: str) -> events_diff.Run:
        if spec == events_diff.STORE_RUN:
            store = self.store()
            loaded = {
                sp: events_db.load_events(store, sp) for sp in events_db.checked_stages(store)
            }
            models = sorted({m for evs in loaded.values() for e in evs for m in e.model.split(",")})
            stages = {sp: events_diff.spans_of_events(evs) for sp, evs in loaded.items()}
            versions = sorted({e.prompt_version for evs in loaded.values() for e in evs})
            return events_diff.Run(spec, stages, [m for m in models if m], versions)
        return events_diff.load_run_files(spec, events_diff.run_files(spec))

    # -- the relation graph ------------------------------------------------------------------
    def registered_imports(self) -> list[Path]:
        d = self.paths.graph_imports
        return sorted(d.glob("*.json")) if d.is_dir() else []

    def build_graph(
        self,
        *,
        matrix: Path | None = None,
        imports: Sequence[Path] | None = None,
        progress: Progress | None = None,
    ) -> GraphBuild:
        """Build the graph from the corpus, the matrix and the relation imports (``None``: the
        registered ones), and save it atomically: a failed build keeps the previous file."""
        t0 = time.perf_counter()
        graph = build_graph(
            self.store(check_roots=True),
            self.people(),
            matrix_path=matrix,
            import_paths=self.registered_imports() if imports is None else imports,
            excel_root=self.roots.excel_root_or_none(),
            progress=progress,
        )
        save_graph(graph, self.paths.graph)
        self._graph = graph
        self._rag = None
        report = {"path": str(self.paths.graph), **graph.meta}
        report["seconds"] = round(time.perf_counter() - t0, 2)
        return GraphBuild(graph, report)

    def graph(self) -> RelationGraph:
        """The saved relation graph (``arklore graph build`` writes it)."""
        if self._graph is None:
            self._graph = load_graph(self.paths.graph)
        return self._graph

    def install_graph(self, data: bytes, where: str) -> RelationGraph:
        """Install relation_graph.json bytes (an export) as the current graph."""
        graph = loads_graph(data, where)
        save_graph(graph, self.paths.graph)
        self._graph = graph
        return graph

    def register_import(self, path: Path, *, build: bool = True) -> tuple[Path, GraphBuild | None]:
        """Validate a relation import, copy it under ``graph_imports`` and (``build``) rebuild
        with it; a bad file is rejected before anything is copied or rebuilt."""
        dest = self.paths.graph_imports / path.name
        others = [p for p in self.registered_imports() if p.name != path.name]
        built = None
        if build:
            built = self.build_graph(imports=[*others, path])
        else:
            load_import(path, self.people().user_node)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.resolve() != dest.resolve():
            shutil.copyfile(path, dest)
        return dest, built

    # -- the relation index ------------------------------------------------------------------
    def embedder(self, name: str | None = None) -> Embedder:
        """The embedder called ``name`` (default: the setting), loaded once per workspace."""
        name = name or self.settings.embedder
        if name not in self._embedders:
            self._embedders[name] = make_embedder(name, e5_threads=self.settings.e5_threads)
        return self._embedders[name]

    def chroma(self) -> Any:
        """The Chroma client: a server when ``CHROMA_HOST`` is set, else embedded."""
        with self._chroma_lock:
            if self._chroma is None:
                self._chroma = make_client(
                    self.paths.rag, self.settings.chroma_host, self.settings.chroma_port
                )
        return self._chroma

    def build_index(
        self,
        *,
        embedder: str | None = None,
        no_llm: bool = False,
        force: bool = False,
        graph_path: Path | None = None,
        progress: Progress | None = None,
    ) -> BuildReport:
        """Relation documents from the graph (and extracted relations) -> a new Chroma
        collection, switched in atomically."""
        gpath = graph_path or self.paths.graph
        t = time.perf_counter()
        graph = load_graph(gpath)
        graph_s = time.perf_counter() - t
        fingerprint = file_fingerprint(gpath)
        store = self._open_store() if self.paths.db.exists() else None
        facts = self.relation_facts(graph, store, progress)
        llm = None
        describer = None
        if not no_llm and self.settings.llm.configured(describe.TASK):
            llm = self.llm()
            describer = describe.llm_describer(
                llm,
                find_people=describe.people_finder(graph, spans_from_mentions(self.find_mentions)),
                name=SourceContext(graph=graph).name,
            )
        try:
            t = time.perf_counter()
            emb = self.embedder(embedder)  # loaded once per workspace
            load_s = time.perf_counter() - t
            report = build_index(
                self.paths.rag,
                graph,
                embedder=emb,
                rejects_path=self.paths.rag_rejects,
                graph_path=str(gpath),
                graph_fingerprint=fingerprint,
                store=store,
                describer=describer,
                facts=facts,
                extra_documents=profile_feedback.char_anchor_documents(self.profiles(), graph),
                force=force,
                progress=progress,
                client_factory=self.chroma,  # made on a side thread while embedding runs
            )
            first = {"load_graph": round(graph_s, 4), "load_model": round(load_s, 4)}
            report.timings = first | report.timings
        finally:
            if llm is not None:
                llm.close()
        self._rag = None
        return report

    def relation_facts(
        self, graph: RelationGraph, store: Store | None, progress: Progress | None = None
    ) -> dict[tuple[str, str], PairFacts]:
        """What the corpus proves about every pair the relation documents describe (one
        corpus pass, kept for this graph until the workspace reloads); {} without a store."""
        if store is None:
            return {}
        if self._facts is not None and self._facts[0] is graph:
            return self._facts[1]
        if progress:
            progress("evidence", 0, 1)
        pairs = fact_pairs(SourceContext(graph=graph, store=store))
        facts = pair_facts(store, self.people(), pairs)
        if progress:
            progress("evidence", 1, 1)
        self._facts = (graph, facts)
        return facts

    def build_index_dry_run(self, graph_path: Path | None = None) -> Estimate:
        """What ``rag build`` would spend on LLM descriptions (task ``relation_descriptions``),
        nothing sent: one request per graph edge it would describe."""
        graph = load_graph(graph_path or self.paths.graph)
        store = self._open_store() if self.paths.db.exists() else None
        ctx = SourceContext(graph=graph, store=store, facts=self.relation_facts(graph, store))
        requests = describe.describe_requests(edge_items(ctx), ctx.name)
        prices = self.settings.llm_config(describe.TASK).prices
        return estimate(requests, prices=prices, expected_output_tokens=describe.MAX_TOKENS)

    def index_status(self) -> dict[str, Any] | None:
        """The live index (pointer record) with ``stale`` (the graph changed since it was
        built: run ``arklore rag build``) and ``disk_bytes``; None when none was built."""
        ptr = read_pointer(self.paths.rag)
        if ptr is None:
            return None
        return ptr | {"stale": self.index_stale(ptr), "disk_bytes": disk_bytes(self.paths.rag)}

    def index_stale(self, ptr: dict[str, Any] | None = None) -> str | None:
        """Why the live index no longer matches the saved graph, or None when it does (or
        when there is no graph or no index to compare)."""
        ptr = ptr if ptr is not None else read_pointer(self.paths.rag)
        if ptr is None or not self.paths.graph.is_file():
            return None
        built = ptr.get("graph")
        if not built:
            return "the index does not record which graph it was built from"
        now = self.paths.graph.stat()
        if (now.st_size, now.st_mtime_ns) == (built.get("size"), built.get("mtime_ns")):
            return None
        if file_fingerprint(self.paths.graph)["sha256"] == built.get("sha256"):
            return None
        return "the relation graph changed since the index was built (run `arklore rag build`)"

    def rag(self) -> RelationRAG:
        """The relation context service over the saved graph and the live index."""
        if self._rag is None:
            self._rag = RelationRAG(
                self.paths.rag,
                graph_loader=lambda: load_graph(self.paths.graph),
                embedder_loader=self.embedder,
                mention_finder=spans_from_mentions(self.find_mentions),
                budget=self.settings.rag_token_budget,
                client_factory=self.chroma,
            )
        return self._rag

    def context(
        self,
        operator: str,
        message: str,
        l3_targets: Iterable[str] = (),
        *,
        budget: int | None = None,
    ) -> RelationContext:
        """The relation block a chat turn with ``operator`` injects for ``message``
        (MessageTooLongError over ``ARKLORE_MAX_MESSAGE_CHARS``)."""
        check_message(message, self.settings.max_message_chars)
        rag = self.rag()
        op = rag.graph.resolve(operator) or self.graph_node(operator)
        ctx = rag.build_context(op, message, list(l3_targets), budget=budget)
        if read_pointer(self.paths.rag) is None:
            ctx.warnings.append(
                "no relation index yet: only her strongest relations are shown, none chosen "
                "for the message (run `arklore rag build`)"
            )
        stale = self.index_stale()
        if stale:
            ctx.warnings.append(stale)
        return ctx

    # -- chat ----------------------------------------------------------------------------------
    def chat(self) -> ChatKnowledge:
        """What chat turns read: names (with the manifest), profiles, relations, memories."""
        if self._chat is None:
            st = self.settings
            self._chat = ChatKnowledge(
                store=self.store,
                aliases=self.aliases,
                registry=lambda: self.people().registry,
                rag=self.rag,
                find_targets=lambda text: [
                    m.char_id for m in self.find_mentions(text) if m.char_id
                ],
                memories=lambda op, query, k: self.memories_block(op, query, k),
                profile_dirs=[d for d in (st.chars_dir, self.paths.chars) if d is not None],
                manifest_path=st.manifest,
                budgets=Budgets(
                    persona=st.persona_token_budget,
                    relations=st.rag_token_budget,
                    memories=st.memory_token_budget,
                    group=st.group_token_budget,
                    memories_k=st.memory_k,
                ),
                max_message_chars=st.max_message_chars,
                tier_c_relations=st.tier_c_relations,
            )
        return self._chat

    def turn(
        self,
        operator: str,
        message: str,
        history: Iterable[dict[str, Any]] = (),
        participants: Iterable[str] = (),
        l3_targets: Iterable[str] = (),
    ) -> Turn:
        """The system-prompt blocks of one chat turn (:func:`arklore.chat.turn.assemble_turn`)."""
        return assemble_turn(self.chat(), operator, message, history, participants, l3_targets)

    def memories_block(self, operator: str, query: str = "", k: int | None = None) -> Block:
        """Her top-``k`` memories for ``query`` (:meth:`memories`) as a chat block citing
        stages: the one function the memories block calls. With no memory of hers extracted:
        her appearances, ranked for the message, marked ``meta["kind"] == "appearances"``."""
        kb = self.chat()
        sp = kb.speaker(operator, check_manifest=False)
        k = k or self.settings.memory_k
        # asked first, so a turn never ranks (and embeds) the events layer's appearances
        # only to drop them for the chat's own appearances block
        if self.memory_service().has_memories(self.operator_family(sp.char_id)):
            return kb.memories_block(sp, self.memories(sp.char_id, query or None, k))
        return kb.appearances_block(sp, query, k)

    def graph_node(self, name: str) -> str:
        """A name, alias or id -> its node in the saved graph (one-line error when unknown)."""
        graph = self.graph()
        nid = graph.resolve(name)
        if nid is None:
            try:
                nid = graph.resolve(self.resolve_operator(name))
            except (UnknownNameError, AmbiguousNameError, NotIngestedError, InputFileError):
                nid = None
        if nid is None:
            names = [n.name for n in graph.nodes.values()]
            raise UnknownNameError(
                f"{name!r} is not in the relation graph", hint=_closest_hint(name, names)
            )
        return nid

    # -- character profiles ------------------------------------------------------------------
    def char_dirs(self) -> list[Path]:
        """Where profiles are read, first match wins: the user's folder of hand-written files
        (``ARKLORE_CHARS_DIR``, never written to), then the generated ones."""
        dirs = [Path(self.settings.chars_dir)] if self.settings.chars_dir is not None else []
        return [*dirs, self.paths.chars]

    def profile(self, char_id: str) -> tuple[Path, CharProfile] | None:
        """Her ``.char`` file and its parsed text (None: tier C, no profile)."""
        for d in self.char_dirs():
            p = d / f"{char_id}{CHAR_SUFFIX}"
            if p.is_file():
                return p, CharProfile.read(p)
        return None

    def profiles(self) -> list[tuple[Path, CharProfile]]:
        """Every profile, one per operator (the user's folder wins), by file name."""
        seen: set[str] = set()
        out: list[tuple[Path, CharProfile]] = []
        for d in self.char_dirs():
            if not d.is_dir():
                continue
            for p in sorted(d.glob(f"*{CHAR_SUFFIX}")):
                prof = CharProfile.read(p)
                if prof.char_id and prof.char_id not in seen:
                    seen.add(prof.char_id)
                    out.append((p, prof))
        return out

    def profile_tables(self) -> Tables:
        """The excel tables profiles read (archive, characters, voice, teams), parsed once."""
        if self._profile_tables is None:
            self._profile_tables = profile_sources.load_tables(self.roots.excel_root_or_none())
        return self._profile_tables

    def select_operators(self, names: Sequence[str] | None = None) -> list[Operator]:
        """The registry's operators named (any alias-table name or id), else all of them."""
        ops = profile_sources.load_operators(self.store())
        if not names:
            return ops
        by_id = {o.char_id: o for o in ops}
        wanted = dict.fromkeys(self.resolve_operator(n) for n in names)
        return [by_id[c] for c in wanted if c in by_id]

    def relation_documents(self) -> dict[str, list[RelationDoc]]:
        """Graph node -> the relation documents of her view that the index is built from
        without a model (curated, extracted, evidence-built); {} when no graph was built."""
        if self._graph is None and not self.paths.graph.exists():
            return {}
        graph = self.graph()
        store = self._open_store() if self.paths.db.exists() else None
        ctx = SourceContext(
            graph=graph,
            graph_path=str(self.paths.graph),
            store=store,
            facts=self.relation_facts(graph, store),
        )
        ok, _ = validate_docs(collect_documents(ctx, list(TASK_D_SOURCES)), graph)
        out: dict[str, list[RelationDoc]] = {}
        for d in ok:
            out.setdefault(d.operator_id, []).append(d)
        return out

    def profile_inputs(self, operators: Sequence[Operator]) -> list[OperatorInputs]:
        """What the distillation tasks read about each of ``operators``."""
        graph = self.graph() if self._graph is not None or self.paths.graph.exists() else None
        return profile_sources.operator_inputs(
            self.store(),
            self.profile_tables(),
            operators,
            graph=graph,
            docs_by_operator=self.relation_documents() if graph is not None else None,
        )

    def _chars_out(self, out: Path | None) -> Path:
        target = Path(out) if out is not None else self.paths.chars
        user = self.settings.chars_dir
        if user is not None and target.resolve() == Path(user).resolve():
            raise UsageError(
                f"{target} is ARKLORE_CHARS_DIR, the folder of hand-written profiles",
                hint="it is never written to: write to another folder (--out)",
            )
        return target

    def distill(
        self,
        tasks: Sequence[str] = ("all",),
        operators: Sequence[str] | None = None,
        *,
        out: Path | None = None,
        retry: int | None = None,
        concurrency: int = 8,
        resume: bool = True,
        no_cache: bool = False,
        max_cost: float | None = None,
        generated_at: str | None = None,
        progress: Progress | None = None,
    ) -> distill_run.DistillReport:
        """Run the distillation tasks for ``operators`` (names; None: all) and write their
        profiles (``out``, default ``$ARKLORE_HOME/chars``). A task whose LLM setting
        (``LLM_DISTILL_<X>_*``, else the global one) has a model uses it; the others run
        their rule. Operators with a file in ``ARKLORE_CHARS_DIR`` or a tier-S file are
        skipped. Stops early at the circuit breaker or ``max_cost``; a rerun resumes."""
        letters = self._tasks(tasks)
        out_dir = self._chars_out(out)
        inputs = self.profile_inputs(self.select_operators(operators))
        cfg = self.settings.llm
        llm_tasks = [
            t for t in letters if t in distill_run.TASK_NAMES
            and cfg.configured(distill_run.TASK_NAMES[t])
        ]  # fmt: skip
        models = {t: cfg.config(distill_run.TASK_NAMES[t]).model for t in llm_tasks}
        protected = {}
        if self.settings.chars_dir is not None:
            for inp in inputs:
                p = Path(self.settings.chars_dir) / f"{inp.char_id}{CHAR_SUFFIX}"
                if p.is_file():
                    protected[inp.char_id] = p
        llm = None
        if llm_tasks:
            llm = self.llm(no_cache=no_cache, **({} if retry is None else {"max_retries": retry}))
        try:
            return distill_run.run_distill(
                self.store(),
                inputs,
                letters,
                out_dir=out_dir,
                llm=llm,
                llm_tasks=llm_tasks,
                models=models,
                protected=protected,
                files=self.paths.llm,
                errors_path=self.paths.distill_errors,
                concurrency=concurrency,
                resume=resume,
                stop_after_unreachable=cfg.breaker_failures,
                max_cost=max_cost,
                generated_at=generated_at or utc_now(),
                progress=progress,
                secrets=cfg.secrets(),
            )
        finally:
            if llm is not None:
                llm.close()

    def distill_dry_run(
        self, tasks: Sequence[str] = ("all",), operators: Sequence[str] | None = None
    ) -> dict[str, Estimate]:
        """Task letter -> tokens and cost of its requests at its model's prices; sends nothing."""
        inputs = self.profile_inputs(self.select_operators(operators))
        return distill_run.dry_run(
            inputs, self._tasks(tasks), lambda task: self.settings.llm_config(task).prices
        )

    @staticmethod
    def _tasks(tasks: Sequence[str]) -> list[str]:
        try:
            return distill_run.parse_tasks(tasks)
        except ValueError as exc:
            raise UsageError(str(exc), hint="tasks are A, B, C, D, E or all") from None

    def persona(self, name: str) -> Persona:
        """Exactly the sections a chat may inject for her tier, with their token counts."""
        cid = self.resolve_operator(name)
        op = next((o for o in self.select_operators() if o.char_id == cid), None)
        found = self.profile(cid)
        sources = owners = None
        if found is not None and found[1].tier == "B" and found[1].hand_edited:
            # the hash no longer vouches for the quotes: check them against their sources
            tables = self.profile_tables()
            ids = [q.source_id.partition(":")[2] for q in found[1].quotes()]
            sources = voice_sources(voice_index(tables.charword).get(cid, []))
            sources |= profile_sources.story_line_sources(self.store(), ids)
            owners = {cid} | ({op.base_id} if op is not None and op.base_id else set())
        return persona(
            cid,
            op.name if op is not None else (found[1].name if found else cid),
            found,
            tier_c_relations=self.settings.tier_c_relations,
            quote_sources=sources,
            owners=owners,
        )

    def review_queue(
        self, *, seed: int = 0, operators: Sequence[str] | None = None
    ) -> profile_review.Queue:
        """The review queue: an entry per operator with results or a profile, and every
        operator some source has nothing for ("no source: ...")."""
        return profile_review.build_queue(
            self.select_operators(operators),
            self.profile_tables(),
            load_results(self.store()),
            profiles={cid: found for cid in self._ids() if (found := self.profile(cid))},
            has_story=profile_sources.operators_with_story_lines(self.store()),
            relation_docs=self.relation_documents(),
            graph=self.graph() if self._graph is not None or self.paths.graph.exists() else None,
            seed=seed,
        )

    def _ids(self) -> list[str]:
        return [o.char_id for o in self.select_operators()]

    def approve_profile(
        self, name: str, *, accept_edits: bool = False, char_dir: Path | None = None
    ) -> Path:
        """A reviewer's approval: her tier-B draft becomes tier A (the marker only)."""
        cid = self.resolve_operator(name)
        if self.settings.chars_dir is not None:
            mine = Path(self.settings.chars_dir) / f"{cid}{CHAR_SUFFIX}"
            if mine.is_file():
                raise ApproveRefusedError(
                    f"{mine} is in ARKLORE_CHARS_DIR, the folder of hand-written profiles",
                    hint="that folder is never written to; nothing to approve",
                )
        path = self._chars_out(char_dir) / f"{cid}{CHAR_SUFFIX}"
        if not path.is_file():
            raise ApproveRefusedError(
                f"{name}: no profile at {path} (tier C)",
                hint=f"run `arklore distill --op {name}` first",
            )
        prof = CharProfile.read(path)
        if prof.tier != "B":
            what = "already approved (tier A)" if prof.tier == "A" else "written by a person (S)"
            raise ApproveRefusedError(
                f"{path}: {what}", hint="only tier-B drafts ([AUTO-DRAFT]) can be approved"
            )
        if prof.hand_edited and not accept_edits:
            raise ApproveRefusedError(
                f"{path} was edited by hand since it was generated (its hash no longer "
                "matches): approving would vouch for edits nobody checked against the sources",
                hint="review the edits, then run `arklore review approve` with --accept-edits",
            )
        atomic_write_text(path, approve_text(prof.text()))
        return path


def _abs(p: Path | None) -> str | None:
    return str(Path(p).resolve()) if p is not None else None


def _closest_hint(name: str, candidates: Iterable[str]) -> str:
    near = get_close_matches(name, list(candidates), n=3, cutoff=0.5)
    if near:
        return "did you mean " + ", ".join(near) + "?"
    return "check the spelling, or add the name to the alias file (data/aliases.toml)"


__all__ = ["GraphBuild", "Memories", "Paths", "Workspace", "open_store"]
