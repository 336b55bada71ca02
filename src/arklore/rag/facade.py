"""The relation index as the workspace uses it: embedders and the Chroma client (handles the
events layer shares), building the index, its status, the relation context a chat turn
injects, the documents a profile task reads, and the line ids the live index cites; and her
scenes (:mod:`arklore.rag.exemplars`): the windows of her own lines a turn shows as examples
of how she talks, built once (:meth:`RagFacade.index_exemplars`) and ranked per turn
(:meth:`RagFacade.exemplars`).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from arklore import __version__
from arklore.base.files import (
    file_fingerprint,
    file_sha,
    read_cached,
    write_cached,
)
from arklore.core.errors import ArkloreError
from arklore.core.text import check_message
from arklore.corpus.anchors import Citation
from arklore.corpus.lexical import Tokenizer, name_words
from arklore.corpus.store import Store
from arklore.extract.store import kept_state
from arklore.graph.evidence import FACTS_VERSION, PairFacts
from arklore.graph.facade import GraphFacade
from arklore.graph.io import load_graph
from arklore.graph.model import Edge, RelationGraph
from arklore.graph.named import Span, spans_from_mentions
from arklore.llm import Estimate, estimate
from arklore.llm.access import LLMAccess
from arklore.names.facade import NamesFacade
from arklore.rag import describe
from arklore.rag.ahead import AHEAD_EMBEDDERS, AHEAD_MIN_TEXTS, EmbedAhead
from arklore.rag.context import RelationContext, RelationRAG
from arklore.rag.docs import (
    DOCS_VERSION,
    DocMemo,
    RelationDoc,
    SourceContext,
    collect_documents,
    edge_items,
    fact_pairs,
    weak_contact_doc,
)
from arklore.rag.embedders import Embedder, embedder_signature, make_embedder
from arklore.rag.exemplars import ExemplarIndex, Scene, ScenesReport
from arklore.rag.index import (
    EMBED_CACHE_FILE,
    REBUILD,
    BuildReport,
    build_index,
    disk_bytes,
    doc_citations,
    live_documents,
    make_client,
    pointer_path,
    read_pointer,
    stale_reason,
)
from arklore.rag.validate import validate as validate_docs

Progress = Callable[[str, int, int], None]
MEMO_FILE = "doc_memo.pickle"


class _LazyFacts(Mapping[tuple[str, str], PairFacts]):
    """The corpus facts of the described pairs, gathered (or read from their cache) on the
    first look: a build whose texts are all in its memo never reads them."""

    def __init__(self, load: Callable[[], Mapping[tuple[str, str], PairFacts]]) -> None:
        self._load = load
        self._got: Mapping[tuple[str, str], PairFacts] | None = None
        self.seconds = 0.0

    def _facts(self) -> Mapping[tuple[str, str], PairFacts]:
        if self._got is None:
            t = time.perf_counter()
            self._got = self._load()
            self.seconds = time.perf_counter() - t
        return self._got

    def __getitem__(self, key: tuple[str, str]) -> PairFacts:
        return self._facts()[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._facts())

    def __len__(self) -> int:
        return len(self._facts())


NO_INDEX = (
    "no relation index yet: only her strongest relations are shown, none chosen for the "
    "message (run `arklore build`)"
)


class RagFacade:
    """Embedders, the Chroma client and the relation index under one home (module doc)."""

    def __init__(
        self,
        root: Path,
        *,
        graph: GraphFacade,
        names: NamesFacade,
        store: Callable[[], Store],
        llm: LLMAccess,
        rejects: Path,
        embedder: str = "e5-small",
        e5_threads: int = 0,
        budget: int = 800,
        chroma_host: str | None = None,
        chroma_port: int = 8000,
        workers: int = 1,
    ) -> None:
        self.root = root
        self.workers = workers  # processes that compute her scenes in a build
        self.graph = graph
        self.names = names
        self._store = store
        self._llm = llm
        self.rejects = rejects
        self.embedder_name = embedder
        self.e5_threads = e5_threads
        self.budget = budget
        self.chroma_host, self.chroma_port = chroma_host, chroma_port
        self._embedders: dict[str, Embedder] = {}
        self._chroma: Any = None
        self._chroma_lock = threading.Lock()  # chromadb's client registry is not thread-safe
        self._service: RelationRAG | None = None
        self._tokenizer: Tokenizer | None = None
        self._scenes: ExemplarIndex | None = None
        self._scenes_lock = threading.Lock()
        self._ahead_memo: DocMemo | None = None  # texts made by embed_ahead, for build

    def reload(self) -> None:
        self._service = None
        with self._scenes_lock:
            self._tokenizer = None
            if self._scenes is not None:
                self._scenes.clear()

    # -- handles -----------------------------------------------------------------------------
    def embedder(self, name: str | None = None) -> Embedder:
        """The embedder called ``name`` (default: the setting), loaded once per workspace."""
        name = name or self.embedder_name
        if name not in self._embedders:
            self._embedders[name] = make_embedder(name, e5_threads_setting=self.e5_threads)
        return self._embedders[name]

    def chroma(self) -> Any:
        """The Chroma client: a server when ``CHROMA_HOST`` is set, else embedded."""
        with self._chroma_lock:
            if self._chroma is None:
                self._chroma = make_client(self.root, self.chroma_host, self.chroma_port)
        return self._chroma

    def service(self) -> RelationRAG:
        """The relation context service over the saved graph and the live index."""
        if self._service is None:
            self._service = RelationRAG(
                self.root,
                graph_loader=self.graph.current,
                embedder_loader=self.embedder,
                mention_finder=spans_from_mentions(self.names.find_mentions),
                budget=self.budget,
                client_factory=self.chroma,
                weak_view=self.weak_view,
                head=self.names.named,
            )
        return self._service

    def weak_view(self, op: str, edge: Edge) -> RelationDoc | None:
        """Her view of someone she barely knows, for a turn that names them: the evidence-built
        text from the stages their edge cites (:meth:`GraphFacade.contact_facts`), marked as
        slight contact; the template when the corpus shows nothing."""
        graph = self.graph.current()
        name = SourceContext(graph=graph).name
        facts = self.graph.contact_facts(edge)
        unit = graph.shared_unit(op, edge.target)
        return weak_contact_doc(edge, name(op), name(edge.target), facts, name, unit)

    # -- building ----------------------------------------------------------------------------
    def _facts(self, graph: RelationGraph, progress: Progress | None = None) -> dict[Any, Any]:
        return self.graph.facts(
            graph, lambda g, store: fact_pairs(SourceContext(graph=g, store=store)), progress
        )

    def _store_or_none(self) -> Store | None:
        try:
            return self._store()
        except ArkloreError:
            return None

    def unchanged(
        self,
        *,
        extra_state: str = "",
        embedder: str | None = None,
        no_llm: bool = False,
        graph_path: Path | None = None,
    ) -> BuildReport | None:
        """The live index's report when everything its documents are made from is what it
        was built from (the graph file, the corpus and names, ``extra_state``: what the
        documents of other layers are made from, the embedder, the document rules), else
        None: the answer takes about a process start, not a corpus pass."""
        t0 = time.perf_counter()
        gpath = graph_path or self.graph.path
        if not gpath.is_file():
            load_graph(gpath)  # the one error for a graph never built, with what to do
        inputs = self._inputs(file_sha(gpath) or "no graph", extra_state, embedder, no_llm)
        ptr = read_pointer(self.root)
        if ptr is None or ptr.get("inputs") != inputs:
            return None
        return BuildReport(
            collection=str(ptr.get("collection")), unchanged=True,
            documents=int(ptr.get("doc_count") or 0), cached=int(ptr.get("doc_count") or 0),
            embedder=str(ptr.get("embedder")), embedder_version=str(ptr.get("embedder_version")),
            content_hash=str(ptr.get("content_hash")), errors_path=str(self.rejects),
            seconds=round(time.perf_counter() - t0, 3),
            timings={"inputs": round(time.perf_counter() - t0, 4)},
        )  # fmt: skip

    def build(
        self,
        *,
        extra_state: str = "",
        extra_documents: Sequence[RelationDoc] = (),
        embedder: str | None = None,
        no_llm: bool = False,
        force: bool = False,
        patch: bool = False,
        graph_path: Path | None = None,
        progress: Progress | None = None,
    ) -> BuildReport:
        """Relation documents from the graph (and extracted relations), with
        ``extra_documents`` (another layer's, made from ``extra_state``) -> a new Chroma
        collection, switched in atomically (the same documents as the live collection's:
        kept, unless ``force``); with ``patch``, the live collection brought to them in place
        (:func:`~arklore.rag.index.build_index`). The texts of the last build are kept
        (:class:`~arklore.rag.docs.DocMemo`), so only changed edges are described again.
        The workspace's step, :meth:`~arklore.workspace.Workspace.build_index`, asks
        :meth:`unchanged` first and passes every profile's anchor documents."""
        t0 = time.perf_counter()
        gpath = graph_path or self.graph.path
        if not gpath.is_file():
            load_graph(gpath)  # the one error for a graph never built, with what to do
        fingerprint = file_fingerprint(gpath)
        inputs = self._inputs(str(fingerprint["sha256"]), extra_state, embedder, no_llm)
        t = time.perf_counter()
        graph = load_graph(gpath) if graph_path is not None else self.graph.current()
        graph_s = time.perf_counter() - t
        facts = _LazyFacts(lambda: self._facts(graph, progress))
        memo = self._memo(graph)
        with ExitStack() as stack:
            describer = None
            if not no_llm and self._llm.configured(describe.TASK):
                llm = stack.enter_context(self._llm.session())
                describer = describe.llm_describer(
                    llm,
                    find_people=describe.people_finder(
                        graph, spans_from_mentions(self.names.find_mentions)
                    ),
                    name=SourceContext(graph=graph).name,
                )
            t = time.perf_counter()
            emb = self.embedder(embedder)
            load_s = time.perf_counter() - t
            report = build_index(
                self.root,
                graph,
                embedder=emb,
                rejects_path=self.rejects,
                graph_path=str(gpath),
                graph_fingerprint=fingerprint,
                store=self._store_or_none(),
                describer=describer,
                facts=facts,
                extra_documents=list(extra_documents),
                force=force,
                patch=patch,
                memo=memo,
                progress=progress,
                client_factory=self.chroma,  # made on a side thread while embedding runs
                inputs=inputs,
                workers=self.workers,
            )
        self._keep_memo(memo)
        report.described = memo.made
        if "collect" in report.timings:  # the facts are read during it, timed on their own
            report.timings["collect"] = round(
                max(0.0, report.timings["collect"] - facts.seconds), 4
            )
        report.timings = {
            "load_graph": round(graph_s, 4),
            "evidence": round(facts.seconds, 4),
            "load_model": round(load_s, 4),
        } | report.timings
        report.seconds = round(time.perf_counter() - t0, 3)  # the whole step, as a user waits
        self._service = None
        return report

    def embed_ahead(self, progress: Progress | None = None) -> EmbedAhead | None:
        """The relation documents of the saved graph made now and their texts embedded in
        :attr:`workers` processes while the caller goes on (:mod:`arklore.rag.ahead`);
        :meth:`build` then finds them in the embedding cache, and the texts made here in its
        memo. None (nothing started) with one worker, an embedder too heavy to load in each,
        or fewer texts to embed than a worker's batch. Only the documents of a build without
        a model (``no_llm``, as ``arklore build``) are made here; other layers' documents
        (``extra_documents``) are not known yet and are embedded by the build."""
        name = self.embedder_name
        if self.workers < 2 or name not in AHEAD_EMBEDDERS or not self.graph.path.is_file():
            return None
        graph = self.graph.current()
        facts = _LazyFacts(lambda: self._facts(graph, progress))
        memo = self._memo(graph)
        ctx = SourceContext(
            graph=graph,
            graph_path=str(self.graph.path),
            store=self._store_or_none(),
            facts=facts,
            memo=memo,
        )
        ok, _ = validate_docs(collect_documents(ctx), graph)
        self._ahead_memo = memo
        ahead = EmbedAhead(
            self.embedder(name), [d.text for d in ok], self.root / EMBED_CACHE_FILE,
            workers=self.workers, min_texts=AHEAD_MIN_TEXTS,
        )  # fmt: skip
        return ahead if ahead.started else None

    def _memo(self, graph: RelationGraph) -> DocMemo:
        """The last build's texts (:data:`MEMO_FILE`) when they were made in the same world:
        the document rules, the facts' version, this arklore, the corpus and names, the
        graph's node names; else an empty memo. The memo of :meth:`embed_ahead`, when it
        made its texts in the same world (then :attr:`DocMemo.made` counts its texts)."""
        try:
            names = self.names.state()
        except ArkloreError:
            names = "no store"
        nodes = hashlib.sha256(
            "\n".join(f"{nid}\t{n.name}" for nid, n in sorted(graph.nodes.items())).encode()
        ).hexdigest()
        world = hashlib.sha256(
            "\n".join([DOCS_VERSION, FACTS_VERSION, __version__, names, nodes]).encode()
        ).hexdigest()
        ahead, self._ahead_memo = self._ahead_memo, None
        if ahead is not None and ahead.world == world:
            return ahead
        entries = read_cached(self.root / MEMO_FILE, world, dict)
        return DocMemo(world, entries)

    def _keep_memo(self, memo: DocMemo) -> None:
        """What the next build may reuse: the texts this one used."""
        write_cached(self.root / MEMO_FILE, memo.world, memo.used)

    def inputs(
        self,
        *,
        extra_state: str = "",
        embedder: str | None = None,
        no_llm: bool = False,
        graph_path: Path | None = None,
    ) -> str:
        """A digest of everything the documents are made from: what :meth:`build` compares
        with the live index's, and what ``arklore build`` records for its index step."""
        gpath = graph_path or self.graph.path
        return self._inputs(file_sha(gpath) or "no graph", extra_state, embedder, no_llm)

    def _inputs(self, graph_sha: str, extra_state: str, embedder: str | None, no_llm: bool) -> str:
        """A digest of everything the documents are made from (see :meth:`unchanged`)."""
        try:
            names = self.names.state()
            # the story documents read the kept extracted edges themselves (notes, stages)
            extracted = kept_state(self._store())
        except ArkloreError:  # no store: the documents come from the graph alone
            names = extracted = "no store"
        parts = [
            DOCS_VERSION,
            FACTS_VERSION,  # the corpus facts the documents quote
            graph_sha,
            names,
            extracted,
            extra_state,
            embedder_signature(embedder or self.embedder_name),
            "llm" if (not no_llm and self._llm.configured(describe.TASK)) else "no-llm",
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]

    def dry_run(self, graph_path: Path | None = None) -> Estimate:
        """What a build would spend on LLM descriptions (task ``relation_descriptions``),
        nothing sent: one request per graph edge it would describe."""
        graph = load_graph(graph_path) if graph_path is not None else self.graph.current()
        ctx = SourceContext(graph=graph, store=self._store_or_none(), facts=self._facts(graph))
        requests = describe.describe_requests(edge_items(ctx), ctx.name)
        return estimate(
            requests, prices=self._llm.prices(describe.TASK),
            expected_output_tokens=describe.MAX_TOKENS,
        )  # fmt: skip

    def documents(
        self, sources: Sequence[str], views: Iterable[str] | None = None
    ) -> dict[str, list[RelationDoc]]:
        """Graph node -> the relation documents of her view from ``sources``, built without a
        model and validated, for the nodes in ``views`` (None: every operator); {} when no
        graph was built."""
        graph = self.graph.current_or_none()
        if graph is None:
            return {}
        ctx = SourceContext(
            graph=graph,
            graph_path=str(self.graph.path),
            store=self._store_or_none(),
            facts=self._facts(graph),
            views=None if views is None else frozenset(views),
        )
        ok, _ = validate_docs(collect_documents(ctx, list(sources)), graph)
        out: dict[str, list[RelationDoc]] = {}
        for d in ok:
            out.setdefault(d.operator_id, []).append(d)
        return out

    # -- her scenes --------------------------------------------------------------------------
    def tokenizer(self) -> Tokenizer:
        """jieba with the story's speaker names kept whole (the store's, read once per load)."""
        with self._scenes_lock:
            if self._tokenizer is None:
                self._tokenizer = Tokenizer(name_words(self._store()))
            return self._tokenizer

    def scene_index(self) -> ExemplarIndex:
        """Her scene windows in the store (the events layer reads her lines from it too)."""
        with self._scenes_lock:
            if self._scenes is None:
                self._scenes = ExemplarIndex(self._store, self.names.state, self.tokenizer)
            return self._scenes

    def index_exemplars(
        self, progress: Progress | None = None, *, force: bool = False
    ) -> ScenesReport:
        """Every operator's scene windows (the build step), skipped when the last ingest run
        and the names are those they were built from (unless ``force``)."""
        names = self.names

        def base_of(cid: str) -> str:
            return names.family(cid)[0]

        return self.scene_index().build(
            speaker_ids=names.speaker_ids(),
            base_of=base_of,
            mentioned=names.mentioned_bases(),
            force=force,
            progress=progress,
            workers=self.workers,
        )

    def exemplars(
        self,
        family: Sequence[str],
        message: str,
        named_nodes: Sequence[str] = (),
        k: int = 3,
        knows: Callable[[str], bool] | None = None,
    ) -> list[Scene]:
        """Her ``k`` scenes that fit ``message`` best, preferring those with the people it
        names (``named_nodes``: graph nodes) and with the Doctor; ``family``: her forms, base
        first; ``knows``: the stages a chat set at a story point knows. [] when she has no
        lines or the scenes were never built."""
        return self.scene_index().search(family, message, named_nodes, k, knows=knows)

    def scene_stages(self, family: Sequence[str]) -> list[str]:
        """The stages her scenes are from."""
        return list(self.scene_index().doctor_stages(family))

    def exemplars_built(self) -> bool:
        """Whether the scene windows were built from the current names."""
        return self.scene_index().fresh()

    # -- state -------------------------------------------------------------------------------
    def state(self) -> str:
        """The live index's pointer file's modification time ("" with none): what a server
        compares to notice an index build (a new collection switched in)."""
        try:
            return str(pointer_path(self.root).stat().st_mtime_ns)
        except OSError:
            return ""

    def built(self) -> bool:
        return read_pointer(self.root) is not None

    def status(self) -> dict[str, Any] | None:
        """The live index (pointer record) with ``stale`` (the graph changed since it was
        built) and ``disk_bytes``; None when none was built."""
        ptr = read_pointer(self.root)
        if ptr is None:
            return None
        return ptr | {"stale": self.stale(ptr), "disk_bytes": disk_bytes(self.root)}

    def stale(self, ptr: dict[str, Any] | None = None) -> str | None:
        """Why the live index no longer matches the saved graph, or None when it does (or
        when there is no graph or no index to compare)."""
        why = stale_reason(self.root, self.graph.path, ptr)
        return f"{why} ({REBUILD})" if why else None

    def warnings(self) -> list[str]:
        """What a relation context should say about the index it came from."""
        if not self.built():
            return [NO_INDEX]
        stale = self.stale()
        return [stale] if stale else []

    # -- reading -----------------------------------------------------------------------------
    def context(
        self,
        node: str,
        message: str,
        exclude: Iterable[str] = (),
        *,
        budget: int | None = None,
        max_message_chars: int | None = None,
        spans: list[Span] | None = None,
        prefer: Collection[str] = (),
        name: str | None = None,
        shown: Callable[[str], str] | None = None,
        knows_lines: Callable[[list[str]], bool] | None = None,
    ) -> RelationContext:
        """The relation block of graph node ``node`` for ``message``, with the index's
        warnings (MessageTooLongError over the message limit). ``spans``: the people the
        message names, when the caller found them already (the same rule); ``prefer``: the
        stages of the form she is in (:meth:`NamesFacade.form_stages`); ``name``: what the
        heading calls her (the form's name in a form's chat); ``shown``: a relation's text as
        the chat shows it (:meth:`RelationRAG.build_context`)."""
        if max_message_chars is not None:
            check_message(message, max_message_chars)
        ctx = self.service().build_context(
            node, message, list(exclude), budget=budget, spans=spans, prefer=prefer, name=name,
            shown=shown, knows_lines=knows_lines,
        )  # fmt: skip
        ctx.warnings += self.warnings()
        return ctx

    def citations(self) -> Iterator[Citation]:
        """(line id, label) for every document of the live index (read without an embedder)."""
        if read_pointer(self.root) is None:
            return
        yield from doc_citations(live_documents(self.root, self.chroma()), self.graph.name)
