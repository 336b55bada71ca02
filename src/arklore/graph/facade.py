"""The graph layer as the workspace uses it: build and save the relation graph, read it,
install or register what a user brings (a whole graph, a relation import), find a person's
node, the evidence facts of its pairs, the line ids it cites, and the curation helpers.

The saved graph (``relation_graph.json``) is the truth; :meth:`GraphFacade.current` reads it
once and keeps it until :meth:`GraphFacade.reload` or a build replaces it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any, TypeVar

import orjson

from arklore import __version__
from arklore.base.files import file_sha, read_cached, write_cached
from arklore.base.userfiles import read_user_bytes
from arklore.core.errors import (
    AmbiguousNameError,
    ArkloreError,
    InputFileError,
    UnknownNameError,
    UnknownOperatorError,
)
from arklore.core.kinship import Term
from arklore.corpus.anchors import Citation
from arklore.corpus.store import Store
from arklore.graph import confirm, curate, story
from arklore.graph.build import CorpusPart, Kept, corpus_part, read_user_files
from arklore.graph.build import build as build_graph
from arklore.graph.citations import curated_citations, graph_citations
from arklore.graph.curated_check import check_curated
from arklore.graph.evidence import FACTS_VERSION, PairFacts, pair_facts
from arklore.graph.importer import FORMAT as IMPORT_FORMAT
from arklore.graph.importer import load_import
from arklore.graph.interaction import load_spoken
from arklore.graph.io import FORMATS_READ, load_graph, loads_graph, save_graph
from arklore.graph.matrix import default_matrix_path, load_matrix
from arklore.graph.model import GRAPH_FORMAT, Edge, RelationGraph
from arklore.graph.named import Span, kin_words, named_spans, spans_from_mentions
from arklore.graph.people import Admission, People
from arklore.names.facade import NamesFacade

Progress = Callable[[str, int, int], None]
Pairs = Callable[[RelationGraph, Store], set[tuple[str, str]]]
BUILD_CACHE_VERSION = 2
"""Bumped when what a build keeps for the next one (:attr:`GraphFacade.build_cache`) changes."""
CORPUS_FILE = "corpus.pickle"
"""What the corpus pass read (:class:`~arklore.graph.build.CorpusPart`), written when it runs."""
KEPT_FILE = "kept.pickle"
"""Each pair's named relations, edges and curated checks (:class:`~arklore.graph.build.Kept`)."""
T = TypeVar("T")
CONTACT_STAGES = 12
"""Stages read at most to describe a pair during a turn (:meth:`GraphFacade.contact_facts`)."""


@dataclass
class GraphBuild:
    """A built and saved graph with its build report."""

    graph: RelationGraph
    report: dict[str, Any] = field(default_factory=dict)


@dataclass
class Installed:
    """What :meth:`GraphFacade.import_file` did: a graph installed, or an import registered."""

    kind: str  # "graph" | "import"
    path: Path  # where it now lives under ARKLORE_HOME
    graph: RelationGraph | None = None
    build: GraphBuild | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "graph":
            assert self.graph is not None
            return {"installed": str(self.path), "nodes": len(self.graph.nodes),
                    "edges": len(self.graph)}  # fmt: skip
        return {"registered": str(self.path), "build": self.build.report if self.build else None}


class GraphFacade:
    """The relation graph under one ``ARKLORE_HOME`` (see the module doc)."""

    def __init__(
        self,
        store: Callable[..., Store],
        names: NamesFacade,
        *,
        path: Path,
        imports_dir: Path,
        excel_root: Callable[[], Path | None],
        matrix: Path | None = None,
        matrix_replace: bool = False,
        confirmed_only: bool = False,
        facts_cache: Path | None = None,
        admission: Admission | None = None,
        build_cache: Path | None = None,
    ) -> None:
        self._store = store  # store(check_roots=...) -> the ingested store
        self.facts_cache = facts_cache
        self.build_cache = build_cache
        self.names = names
        self.matrix = matrix or default_matrix_path()  # the user's matrix, else the packaged
        self.matrix_replace = matrix_replace  # the user's matrix replaces the packaged one
        self.confirmed_only = confirmed_only  # builds use confirmed curated relations only
        self.admission = admission or Admission()  # which NPC speakers become nodes
        self.path = path
        self.imports_dir = imports_dir
        self._excel_root = excel_root
        self.reload()

    def reload(self) -> None:
        self._graph: RelationGraph | None = None
        self._people: People | None = None
        self._speaker_counts: dict[str, tuple[int, int]] = {}  # read with the people
        # the graph the facts were gathered for, held so its identity cannot be reused
        self._facts: tuple[RelationGraph, dict[tuple[str, str], PairFacts]] | None = None

    # -- reading -----------------------------------------------------------------------------
    def exists(self) -> bool:
        return self._graph is not None or self.path.is_file()

    def current(self) -> RelationGraph:
        """The saved relation graph (GraphNotBuiltError with a hint when there is none)."""
        if self._graph is None:
            self._graph = load_graph(self.path)
        return self._graph

    def current_or_none(self) -> RelationGraph | None:
        return self.current() if self.exists() else None

    def read(self, path: Path | None = None) -> RelationGraph:
        """The graph saved at ``path`` (None: the saved graph, :meth:`current`)."""
        return load_graph(path) if path is not None else self.current()

    def state(self) -> str:
        """The saved graph file's size and modification time ("" with none): what a server
        compares to notice a graph build."""
        try:
            st = self.path.stat()
        except OSError:
            return ""
        return f"{st.st_size}:{st.st_mtime_ns}"

    def incoming(self, node: str, *, min_strength: float = 0.0, limit: int = 30) -> list[Edge]:
        """The others' views of ``node``: each one's strongest edge to it (at least
        ``min_strength``), strongest first (ties: by id), at most ``limit``."""
        best: dict[str, Edge] = {}
        for e in self.current().in_edges(node):
            if e.strength >= min_strength and (
                e.source not in best or e.strength > best[e.source].strength
            ):
                best[e.source] = e
        return sorted(best.values(), key=lambda e: (-e.strength, e.source))[:limit]

    def most_connected(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` operators of the saved graph related to the most people (an edge either
        way, each person once), with that number; most first, ties by id."""
        graph = self.current()
        people: dict[str, set[str]] = {}
        for e in graph.edges():
            people.setdefault(e.source, set()).add(e.target)
            people.setdefault(e.target, set()).add(e.source)
        ops = [
            (nid, len(others))
            for nid, others in people.items()
            if (node := graph.nodes.get(nid)) is not None and node.kind == "operator"
        ]
        return sorted(ops, key=lambda x: (-x[1], x[0]))[:n]

    def people(self) -> People:
        """Names -> graph node ids (registry, alias table and corpus speakers)."""
        if self._people is None:
            store = self._store()
            self._speaker_counts = store.speaker_counts()
            self._people = People(
                self.names.registry(),
                self.names.matcher,  # made when a mention is first looked for
                sorted(self._speaker_counts),
                display=self.names.display_name,
                strangers=self.names.strangers(),
                admission=self.admission,
                table=self.names.aliases(),
            )
        return self._people

    def node(self, name: str) -> str:
        """A name, alias or id -> its node in the saved graph (one-line error when unknown)."""
        graph = self.current()
        nid = graph.resolve(name)
        if nid is None:
            try:
                nid = graph.resolve(self.names.resolve(name))
            except UnknownOperatorError:
                if not name.startswith("npc:"):
                    raise
                nid = None
            except (UnknownNameError, AmbiguousNameError):
                nid = None
            except ArkloreError:  # no store: the graph's own names are all there is
                nid = None
        if nid is None:
            names = [n.name for n in graph.nodes.values()]
            near = get_close_matches(name, names, n=3, cutoff=0.5)
            raise UnknownNameError(
                f"{name!r} is not in the relation graph",
                hint=("did you mean " + ", ".join(near) + "?") if near else None,
            )
        return nid

    def name(self, nid: str) -> str:
        """A node's display name (an operator's from the names layer when not in the graph)."""
        graph = self._graph
        if graph is None and self.path.is_file():
            graph = self.current()
        if graph is not None and nid in graph.nodes:
            return graph.nodes[nid].name
        if nid.startswith("char_"):
            return self.names.display_name(nid)
        return nid.removeprefix("npc:")

    def search(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        """People by any name, best first: an exact name (an alias of an operator, or a
        person's name in the graph), then names containing the query, then the closest
        operator names. Each: ``id``, ``name``, ``kind`` (operator|npc), ``node``, ``matched``."""
        q = query.strip()
        graph = self.current_or_none()
        out: dict[str, dict[str, Any]] = {}

        def add(pid: str, name: str, kind: str, node: str | None, how: str) -> None:
            if pid not in out:
                out[pid] = {"id": pid, "name": name, "kind": kind, "node": node, "matched": how}

        def add_operator(cid: str, how: str) -> None:
            node = graph.resolve(cid) if graph is not None else None
            add(cid, self.names.display_name(cid), "operator", node, how)

        if not q:
            return []
        with contextlib.suppress(ArkloreError):
            add_operator(self.names.resolve(q), "exact")
        npcs = [(nid, n.name) for nid, n in graph.nodes.items() if n.kind != "operator"] if (
            graph is not None
        ) else []  # fmt: skip
        for nid, name in npcs:
            if name == q:
                add(nid, name, "npc", nid, "exact")
        folded = q.lower()
        for op in self.names.operators():
            if q in op.name or (op.appellation and folded in op.appellation.lower()):
                add_operator(op.char_id, "contains")
        for nid, name in npcs:
            if q in name:
                add(nid, name, "npc", nid, "contains")
        for name in self.names.closest(q):
            with contextlib.suppress(ArkloreError):
                add_operator(self.names.resolve(name), "closest")
        return list(out.values())[:limit]

    # -- building and installing -------------------------------------------------------------
    def imports(self) -> list[Path]:
        """Registered relation imports, merged by every build."""
        d = self.imports_dir
        return sorted(d.glob("*.json")) if d.is_dir() else []

    def matrices(self, matrix: Path | None = None, *, replace: bool | None = None) -> list[Path]:
        """The matrix files a build layers, first to last: the packaged one, then the user's
        (``matrix``, else the setting's), whose view of a pair wins
        (:func:`~arklore.graph.matrix.layer_matrices`); the user's alone with ``replace``
        (``None``: the setting's)."""
        shipped = default_matrix_path()
        user = matrix or self.matrix
        if user.resolve() == shipped.resolve():
            return [shipped]
        return [user] if (self.matrix_replace if replace is None else replace) else [shipped, user]

    def build(
        self,
        *,
        matrix: Path | None = None,
        replace: bool | None = None,
        imports: Sequence[Path] | None = None,
        progress: Progress | None = None,
    ) -> GraphBuild:
        """Build the graph from the corpus, the matrices (:meth:`matrices`) and the relation
        imports (``None``: the registered ones), and save it atomically: a failed build keeps
        the previous file."""
        t0 = time.perf_counter()
        excel_root = self._excel_root()
        store = self._store(check_roots=True)
        key = self._corpus_key(store, excel_root)
        part = self._stored(key, CORPUS_FILE, CorpusPart)
        previous = self._stored(key, KEPT_FILE, Kept) if part is not None else None
        if previous is not None:
            previous.part = part

        def corpus() -> CorpusPart:
            if part is not None:
                return part
            return corpus_part(store, self.people(), excel_root=excel_root, progress=progress)

        built = build_graph(
            store,
            self.people(),
            matrix_paths=self.matrices(matrix, replace=replace),
            import_paths=self.imports() if imports is None else imports,
            excel_root=excel_root,
            confirmed_only=self.confirmed_only,
            progress=progress,
            corpus=corpus,
            previous=previous,
        )
        graph = built.graph
        save_graph(graph, self.path)
        self._graph = graph
        if part is None:  # the corpus pass ran: what it read is kept for the next build
            self._keep(key, CORPUS_FILE, built.kept.part)
        self._keep(key, KEPT_FILE, dataclasses.replace(built.kept, part=None))
        report = {"path": str(self.path), **graph.meta, "corpus_pass": part is None}
        warnings = []
        if excel_root is None:  # built, but without one of its sources: say so
            warnings.append(
                "ARKLORE_GAMEDATA is not set (or has no zh_CN/gamedata/excel folder): "
                "mentions in voice lines were not counted"
            )
        if unknown := (graph.meta.get("matrix") or {}).get("unknown_people"):
            warnings.append(
                f"{unknown} relations of the packaged matrix name people this corpus does not "
                "have: left out (--matrix-replace builds from your matrix alone)"
            )
        if warnings:
            report["warnings"] = warnings
        report["seconds"] = round(time.perf_counter() - t0, 2)
        return GraphBuild(graph, report)

    # -- what a build keeps for the next one ---------------------------------------------------
    def _corpus_key(self, store: Store, excel_root: Path | None) -> str:
        """What the corpus part of a build (:class:`~arklore.graph.build.CorpusPart`) depends
        on: the corpus and the names (their state), the voice table, the kept extracted
        relations, which NPCs become nodes, and the arklore version that computed it."""
        voice = excel_root / "charword_table.json" if excel_root is not None else None
        try:
            st = voice.stat() if voice is not None else None
        except OSError:
            st = None
        parts = [
            __version__,
            BUILD_CACHE_VERSION,
            self.names.state(),
            str(excel_root) if excel_root is not None else None,
            (st.st_size, st.st_mtime_ns) if st is not None else None,
            [asdict(row) for row in story.load_rows(store)],
            [self.admission.min_lines, self.admission.min_share],  # who the pass counts
        ]
        return hashlib.sha256(orjson.dumps(parts)).hexdigest()

    def _stored(self, key: str, name: str, kind: type[T]) -> T | None:
        """What the last build kept in ``name`` under :attr:`build_cache` when it was made
        from the same corpus part (``key``), else None."""
        return read_cached(self.build_cache / name, key, kind) if self.build_cache else None

    def _keep(self, key: str, name: str, what: object) -> None:
        if self.build_cache is not None:
            write_cached(self.build_cache / name, key, what)

    def inputs(self) -> str:
        """A digest of everything :meth:`build` reads: the corpus and the names (their state),
        the curated matrix, the registered imports and the kept extracted relations (stored by
        ``arklore extract relations``). ``arklore build`` records it for its graph step, so an
        extraction reaches the graph, and what is built from it, at the next build."""
        parts = [
            self.names.state(),
            [(p.name, file_sha(p)) for p in self.imports()],
            [(p.name, file_sha(p)) for p in self.matrices()],
            [asdict(row) for row in story.load_rows(self._store())],
            [self.confirmed_only, confirm.digest(confirm.load_verdicts(self._store()))],
            [self.admission.min_lines, self.admission.min_share],
        ]
        return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:16]

    # -- a person's verdicts on the curated relations (graph/confirm.py) ----------------------
    def curated_status(self) -> dict[str, Any]:
        """Every curated relation the next build layers, with its status (unconfirmed,
        confirmed, rejected, edited-since-confirmed) and evidence; the counts per status."""
        curated, _ = read_user_files(self.people(), self.matrices(), [])
        return confirm.listing(curated, confirm.load_verdicts(self._store()), self.name)

    def curate_verdict(
        self, source: str, target: str, verdict: str, *, predicate: str | None = None,
        by: str = "cli", note: str = "", seen_sha: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Record a person's verdict (``confirmed`` | ``rejected``) on the curated relation
        ``source`` -> ``target`` (names, aliases or ids), on its text as it is now; refused
        (CuratedChangedError) when ``seen_sha`` is given and the text changed since. The
        CLI and the HTTP routes call this. Returns the relation's new listing row."""
        people = self.people()
        ids = []
        for who in (source, target):
            nid = people.user_node(who.strip())
            if nid is None:
                raise UnknownNameError(f"{who!r} names no one this corpus knows",
                                       hint="use an operator id or npc:<name>")  # fmt: skip
            ids.append(nid)
        curated, _ = read_user_files(people, self.matrices(), [])
        c = confirm.pick(curated, ids[0], ids[1], predicate, f"{source} -> {target}")
        store = self._store()
        confirm.save_verdict(store, confirm.key_of(c),
                             confirm.verdict_for(c, verdict, by=by, note=note, seen_sha=seen_sha))  # fmt: skip
        row: dict[str, Any] = confirm.listing([c], confirm.load_verdicts(store), self.name)[
            "relations"
        ][0]
        return row

    def install(self, data: bytes, where: str) -> RelationGraph:
        """Install relation_graph.json bytes (an export) as the current graph."""
        graph = loads_graph(data, where)
        save_graph(graph, self.path)
        self._graph = graph
        return graph

    def register_import(self, path: Path, *, build: bool = True) -> tuple[Path, GraphBuild | None]:
        """Validate a relation import, copy it under the imports folder and (``build``)
        rebuild with it; a bad file is rejected before anything is copied or rebuilt."""
        dest = self.imports_dir / path.name
        others = [p for p in self.imports() if p.name != path.name]
        built = None
        if build:
            built = self.build(imports=[*others, path])
        else:
            load_import(path, self.people().user_node)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.resolve() != dest.resolve():
            shutil.copyfile(path, dest)
        return dest, built

    def import_file(self, path: Path, *, build: bool = True) -> Installed:
        """A file a user brings: a whole relation graph (installed as the current one) or a
        relation import (registered, then rebuilt with), told apart by its ``format``."""
        data = read_user_bytes(path)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise InputFileError(str(path), "json", f"not valid JSON: {e}") from None
        fmt = doc.get("format") if isinstance(doc, dict) else None
        if fmt in FORMATS_READ:
            return Installed("graph", self.path, graph=self.install(data, str(path)))
        if fmt != IMPORT_FORMAT:
            raise InputFileError(
                str(path), "key 'format'",
                f"expected {GRAPH_FORMAT!r} or {IMPORT_FORMAT!r}, got {fmt!r}",
            )  # fmt: skip
        dest, built = self.register_import(path, build=build)
        return Installed("import", dest, build=built)

    # -- what the corpus proves about pairs --------------------------------------------------
    def facts(
        self, graph: RelationGraph, pairs: Pairs, progress: Progress | None = None
    ) -> dict[tuple[str, str], PairFacts]:
        """What the corpus proves about the ``pairs`` a caller describes; {} without a store.

        A whole-corpus pass (tens of seconds on the real data), so the answer is kept: in
        memory for this graph until reload, and on disk (:attr:`facts_cache`) under a key of
        what it depends on -- the corpus content and the names (:meth:`NamesFacade.state`)
        and the pairs asked for -- so the build's profile and index steps, a later
        ``arklore distill`` or ``rag build`` do not walk the corpus again."""
        try:
            store = self._store()
        except ArkloreError:
            return {}
        if self._facts is not None and self._facts[0] is graph:
            return self._facts[1]
        wanted = sorted(pairs(graph, store))
        key = hashlib.sha256(
            repr((FACTS_VERSION, self.names.state(), wanted)).encode("utf-8")
        ).hexdigest()
        facts = read_cached(self.facts_cache, key, dict) if self.facts_cache else None
        if facts is None:
            if progress:
                progress("evidence", 0, 1)
            facts = pair_facts(store, self.people(), wanted)
            if progress:
                progress("evidence", 1, 1)
            if self.facts_cache is not None:
                write_cached(self.facts_cache, key, facts)
        self._facts = (graph, facts)
        return facts

    def contact_facts(self, edge: Edge, *, max_stages: int = CONTACT_STAGES) -> PairFacts | None:
        """What the corpus proves about ``edge``'s pair, read from the stages the edge cites
        (where they talk or call each other, the stages of its evidence lines; at most
        ``max_stages``): a few stage reads, for a pair no index document describes; None
        without a store or when the edge cites no stage."""
        stages = list(
            dict.fromkeys([*edge.stages, *(x.split("#", 1)[0] for x in edge.evidence_line_ids)])
        )
        if not stages:
            return None
        try:
            store = self._store()
        except ArkloreError:
            return None
        people = self.people()
        lines = load_spoken(store, people, stages=stages[:max_stages], counts=self._speaker_counts)
        pair = (edge.source, edge.target)
        return pair_facts(store, people, [pair], lines=lines)[pair]

    # -- people a message names --------------------------------------------------------------
    def named_spans(self, char_id: str, text: str) -> list[Span]:
        """Who ``text`` names for operator ``char_id``, with where
        (:func:`arklore.graph.named.named_spans`): operators by any alias (an ambiguous name:
        the candidates she has a relation with), people of her graph by their name, and
        kinship and role words resolved to the people her relations name (陈「舅舅…」->
        魏彦吾); her own forms and the Doctor left out. The one rule of a turn's blocks and
        of her memories."""
        graph = self.current_or_none()
        node = graph.resolve(char_id) if graph is not None else None
        ops = spans_from_mentions(self.names.find_mentions)(text)
        return named_spans(graph, node, self.names.family(char_id), text, ops)

    def kin_words(self, char_id: str) -> dict[str, list[tuple[str, Term]]]:
        """Her people (graph node ids) and the kinship and role words that mean each for her
        (:func:`arklore.graph.named.kin_words`): what a lorebook keys for a chat with her."""
        graph = self.current_or_none()
        node = graph.resolve(char_id) if graph is not None else None
        if graph is None or node is None:
            return {}
        return kin_words(graph, node)

    # -- citations ---------------------------------------------------------------------------
    def citations(self, matrices: Sequence[Path], notes: list[str]) -> Iterator[Citation]:
        """(line id, label) for the evidence of the matrix the saved graph was built from,
        user ``matrices``, registered imports and the saved graph's edges; a note when the
        graph was built from a matrix that cannot be read here."""
        graph = self.current_or_none()

        def resolve(who: str) -> str:  # labels only: an unknown name is shown as written
            if graph is not None:
                return graph.resolve(who.removeprefix("npc:")) or who
            return self.people().user_node(who) or who

        meta = (graph.meta.get("matrix") or {}) if graph is not None else {}
        built_from = meta.get("paths") or ([meta["path"]] if meta.get("path") else [])
        for name in built_from:
            if name == default_matrix_path().name:
                yield from curated_citations(
                    load_matrix(default_matrix_path(), resolve), "matrix", self.name
                )
            elif name == self.matrix.name and self.matrix.is_file():
                yield from curated_citations(
                    load_matrix(self.matrix, resolve), "user_matrix", self.name
                )
            elif all(Path(m).name != name for m in matrices):
                notes.append(
                    f"the graph was built from the matrix {name}: pass it with --matrix "
                    "(or set ARKLORE_MATRIX) to check its evidence"
                )
        for path in matrices:
            yield from curated_citations(load_matrix(path, resolve), "user_matrix", self.name)
        for path in self.imports():
            yield from curated_citations(load_import(path, resolve), "import", self.name)
        if graph is not None:
            yield from graph_citations(graph)

    # -- curation ----------------------------------------------------------------------------
    def curate_candidates(
        self,
        operator: str,
        *,
        use_graph: bool = True,
        limit: int = 15,
        per_signal: int = 2,
        only: str | None = None,
    ) -> curate.CandidateReport:
        """Relations worth curating for ``operator``, each with its evidence; interaction
        signals come from the saved graph (none when it was never built)."""
        return curate.candidates(
            self._store(),
            self.people(),
            operator,
            graph=self.current_or_none() if use_graph else None,
            handbook=curate.load_handbook(self._excel_root()),
            limit=limit,
            per_signal=per_signal,
            only=only,
        )

    def central(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` operators with the most story lines, with their line counts."""
        store, table = self._store(), self.names.aliases()
        counts = curate.operator_line_counts(store, table)
        return [
            {"char_id": c, "name": self.names.display_name(c), "lines": counts[c]}
            for c in curate.central_operators(store, n, table)
        ]

    def check_matrix(self, matrix: Path | None = None, *, central: int = 60) -> dict[str, Any]:
        """A matrix checked against the corpus without building: rejected entries, and how
        many of the ``central`` most-speaking operators have at least two passing ones."""
        path = matrix if matrix is not None else self.matrix
        store, people = self._store(), self.people()
        entries = load_matrix(path, people.user_node)
        _, failures = check_curated(
            entries, store, people, require_evidence=[str(default_matrix_path())]
        )
        top = curate.central_operators(store, central, people.table) if central > 0 else []
        bad = {(f.line, f.source, f.target) for f in failures}
        per_from: dict[str, int] = {}
        for e in entries:  # coverage counts only the entries that pass
            if (e.line, e.source, e.target) not in bad:
                per_from[e.source] = per_from.get(e.source, 0) + 1
        short = [c for c in top if per_from.get(c, 0) < 2]
        return {
            "path": str(path),
            "relations": len(entries),
            "with_evidence": sum(bool(e.evidence_line_ids) for e in entries),
            "rejected": [f.to_dict() for f in failures],
            "central": len(top),
            "central_with_2": len(top) - len(short),  # central operators with >= 2 passing
            "central_short": [
                {"char_id": c, "name": people.operator_name(c), "relations": per_from.get(c, 0)}
                for c in short
            ],
        }

    def search_lines(
        self, text: str, *, speaker: str | None = None, near: str | None = None, limit: int = 20
    ) -> list[curate.SearchHit]:
        """Primary-corpus lines containing ``text`` with their ids and context."""
        return curate.search_lines(
            self._store(), self.people(), text, speaker=speaker, near=near, limit=limit
        )
