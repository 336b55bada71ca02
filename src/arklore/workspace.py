"""The composition root: one :class:`Workspace` made from one :class:`Settings` wires every
path under ``ARKLORE_HOME`` and every setting into the layers' facades, and runs the few steps
that span layers.

Each layer has one facade, defined in the layer itself (``corpus/facade.py`` ...), built here
from the settings and the facades below it:

=================  ============================================================================
``ws.corpus``      the store, ingest runs, the cross-check, the anchor drift check
``ws.names``       operators, aliases, mentions, her forms, her display name, "did you mean"
``ws.extract``     LLM relation extraction: stage selection, runs, dry runs, review
``ws.graph``       the relation graph: build, read, install, imports, people, curation
``ws.rag``         embedders, the Chroma client, the relation index and its context
``ws.events``      appearances, the timeline, memories, LLM story events
``ws.profiles``    ``.char`` profiles: persona, distillation, review queue, approve, save
``ws.chat``        chat turns: who the chat is with, one builder per block, ``turn()``
``ws.cards``       SillyTavern character cards and lorebooks, and the lint of their keys
=================  ============================================================================

A new query goes into its layer's facade; the CLI, the HTTP service and the Python API
(``arklore.api``) call it and never re-implement it. Steps that span layers stay here: :meth:`Workspace.ingest` (corpus,
then names) and :meth:`Workspace.verify_anchors` (every layer's citations).

Handles are opened on first use and kept for the workspace's life (a CLI run, a server):
:meth:`Workspace.reload` drops what a rebuild may change, :meth:`Workspace.close` releases
all. Nothing here is process-global: two workspaces on two homes never share state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arklore.base.buildmark import BuildMark, BuildStatus
from arklore.base.db import Migration
from arklore.cards.facade import CardsFacade
from arklore.chat.facade import Budgets, ChatFacade
from arklore.corpus import anchors
from arklore.corpus import schema as corpus_schema
from arklore.corpus.facade import CorpusFacade
from arklore.corpus.ingest import IngestReport
from arklore.corpus.store import Store
from arklore.events import schema as events_schema
from arklore.events.facade import EventsFacade
from arklore.extract import schema as extract_schema
from arklore.extract.facade import ExtractFacade
from arklore.graph import schema as graph_schema
from arklore.graph.facade import GraphFacade
from arklore.graph.people import Admission
from arklore.llm import LLM, LLMFiles
from arklore.llm.access import LLMAccess
from arklore.names import schema as names_schema
from arklore.names.facade import NamesFacade
from arklore.names.registry import build_registry
from arklore.profiles import schema as profiles_schema
from arklore.profiles.facade import ProfilesFacade
from arklore.rag import schema as rag_schema
from arklore.rag.facade import RagFacade
from arklore.rag.index import BuildReport
from arklore.settings import Settings
from arklore.sources.roots import DataRoots

Progress = Callable[[str, int, int], None]

CITING_KINDS: tuple[str, ...] = (
    "relation_edges", "event_memories", "matrix", "user_matrix", "import", "graph", "rag",
)  # fmt: skip
"""What cites line ids, as ``verify-anchors`` reports it (see :meth:`Workspace.verify_anchors`)."""

STORE_MIGRATIONS: tuple[Migration, ...] = (
    corpus_schema.MIGRATIONS[0],
    *names_schema.MIGRATIONS,  # copies the 0.1 speaker ids before corpus/002 drops them
    *corpus_schema.MIGRATIONS[1:],
    *extract_schema.MIGRATIONS,
    *profiles_schema.MIGRATIONS,
    *events_schema.MIGRATIONS,
    *rag_schema.MIGRATIONS,
    *graph_schema.MIGRATIONS,
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
    def pair_facts(self) -> Path:
        """What the corpus proves about the described pairs, kept per corpus, names and pairs."""
        return self.home / "cache" / "pair_facts.pickle"

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


class Workspace:
    """Settings, paths and the layers' facades of one ``ARKLORE_HOME`` (see module doc)."""

    def __init__(self, settings: Settings) -> None:
        st = self.settings = settings
        self.paths = paths = Paths(Path(settings.home))
        self.roots = roots = DataRoots(settings.gamedata, settings.astr)
        llm = LLMAccess(
            factory=self.llm,
            config=st.llm_config,
            configured=st.llm.configured,
            files=paths.llm,
            breaker_failures=st.llm.breaker_failures,
            secrets=st.llm.secrets,
        )
        self.corpus = CorpusFacade(paths.db, roots, STORE_MIGRATIONS, workers=st.workers)
        store = self.corpus.store
        self.names = NamesFacade(
            store,
            alias_file=st.aliases_file,
            max_message_chars=st.max_message_chars,
            corpus_version=self.corpus.version,
        )
        self.extract = ExtractFacade(
            store,
            llm,
            resolve=lambda name: self.names.aliases().resolve(name).char_id,
            exports=paths.relation_exports,
        )
        self.graph = GraphFacade(
            store, self.names, path=paths.graph, imports_dir=paths.graph_imports,
            excel_root=roots.excel_root_or_none, matrix=st.matrix,
            matrix_replace=st.matrix_replace, confirmed_only=st.confirmed_only,
            facts_cache=paths.pair_facts, admission=Admission(st.npc_min_lines, st.npc_min_share),
            build_cache=paths.pair_facts.with_name("graph_build"),  # kept for the next build
        )  # fmt: skip
        self.rag = RagFacade(
            paths.rag,
            graph=self.graph,
            names=self.names,
            store=store,
            llm=llm,
            rejects=paths.rag_rejects,
            embedder=st.embedder,
            e5_threads=st.e5_threads,
            budget=st.rag_token_budget,
            chroma_host=st.chroma_host,
            chroma_port=st.chroma_port,
            workers=st.workers,
        )
        self.events = EventsFacade(
            store,
            self.names,
            self.extract,
            llm,
            embedder=self.rag.embedder,
            embed_cache=paths.embed_cache,
            exports=paths.event_exports,
            graph=self.graph,
            scenes=self.rag.scene_index,
            story=self.corpus.story_order,
        )
        self.profiles = ProfilesFacade(
            store,
            self.names,
            self.graph,
            self.rag,
            llm,
            home_dir=paths.chars,
            user_dir=st.chars_dir,
            excel_root=roots.excel_root_or_none,
            errors_path=paths.distill_errors,
            queue_path=paths.review_queue,
            tier_c_relations=st.tier_c_relations,
        )
        self.chat = ChatFacade(
            names=self.names,
            graph=self.graph,
            rag=self.rag,
            events=self.events,
            profiles=self.profiles,
            manifest_path=st.manifest,
            budgets=Budgets.from_settings(st),
            nickname=st.nickname,
            max_message_chars=st.max_message_chars,
            warnings=lambda: self.build_state().warnings(),
            story=self.corpus.story_view,
            until=st.until,  # a story point -> what it knows
        )
        self.cards = CardsFacade(self.chat)

    def build_state(self) -> BuildStatus:
        """Whether ``arklore build`` finished here (:mod:`arklore.base.buildmark`): built,
        incomplete (the steps done and missing) or not built (no store, no build started)."""
        return BuildMark(self.paths.home).status(has_store=self.paths.db.is_file())

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self.events.close()
        self.corpus.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reload(self) -> None:
        """Forget what a rebuild or a user-file edit may have changed (names, graph, index,
        appearances, profiles); the next call reads them again."""
        facades = (self.names, self.graph, self.rag, self.events, self.profiles, self.chat)
        for facade in (*facades, self.cards):
            facade.reload()

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

    # -- steps that span layers --------------------------------------------------------------
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
        self.names.user_aliases()
        run = self.corpus.begin_ingest(sources, allow_data_change=allow_data_change)
        report = self.corpus.ingest(sources, force=force, progress=progress)
        if report.post_processed or run.first or self.names.stale(self.corpus.open(), registry):
            self.names.rebuild(self.corpus.open(), registry)
            report.names_rebuilt = True
        report.warnings = list(registry.warnings)
        report.counts = self.corpus.counts() | {"operators": self.names.count(self.corpus.open())}
        self.corpus.finish_ingest(run)
        self.reload()
        return report

    def build_index(
        self,
        *,
        embedder: str | None = None,
        no_llm: bool = False,
        force: bool = False,
        patch: bool = False,
        graph_path: Path | None = None,
        progress: Progress | None = None,
    ) -> BuildReport:
        """The relation index (:meth:`RagFacade.build`) with every profile's anchor documents
        (:meth:`ProfilesFacade.anchor_documents`), passed in: the profiles are read only
        when the index is built again, not when it is :meth:`~RagFacade.unchanged`."""
        state = self.profiles.state()
        if not force:
            done = self.rag.unchanged(
                extra_state=state, embedder=embedder, no_llm=no_llm, graph_path=graph_path
            )
            if done is not None:
                return done
        graph = self.graph.read(graph_path)
        return self.rag.build(
            extra_state=state,
            extra_documents=self.profiles.anchor_documents(graph, self.graph.named_spans),
            embedder=embedder,
            no_llm=no_llm,
            force=force,
            patch=patch,
            graph_path=graph_path,
            progress=progress,
        )

    def index_inputs(self, *, no_llm: bool = False) -> str:
        """A digest of what :meth:`build_index` makes the index from (``arklore build``)."""
        return self.rag.inputs(extra_state=self.profiles.state(), no_llm=no_llm)

    def fingerprint(self) -> tuple[str, ...]:
        """What a server compares to notice a rebuild under its home (an ingest, a graph or
        an index build): the facades' own states of their files, cheap to read."""
        return (self.corpus.state(), self.graph.state(), self.rag.state())

    def counts(self) -> dict[str, int]:
        """What the store holds (corpus and names)."""
        return self.corpus.counts() | {"operators": self.names.count()}

    def stats(self) -> dict[str, Any]:
        stats = self.corpus.stats()
        return {"counts": self.counts(), **stats, "warnings": self.names.warnings()}

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
        documents, read without an embedder). A graph built from a matrix file that is not
        among ``matrices`` gets a note: its path is not recorded, so it cannot be read here.
        """
        t0 = time.perf_counter()
        self.corpus.store(check_roots=True, allow_data_change=allow_data_change)
        notes: list[str] = []
        report = self.corpus.verify_anchors(
            self._citations(matrices, notes),
            CITING_KINDS,
            full=full,
            allow_data_change=allow_data_change,
            progress=progress,
        )
        report.notes += notes
        report.seconds = round(time.perf_counter() - t0, 2)  # gathering the citations included
        return report

    def _citations(self, matrices: Sequence[Path], notes: list[str]) -> Iterator[anchors.Citation]:
        yield from self.extract.citations()
        yield from self.events.citations()
        yield from self.graph.citations(matrices, notes)
        yield from self.rag.citations()


__all__ = ["CITING_KINDS", "Paths", "Workspace", "open_store"]
