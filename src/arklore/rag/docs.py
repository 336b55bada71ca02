"""Relation documents: one short text per direction (X's view of Y), from pluggable sources.

A *document source* is one function ``(ctx: SourceContext) -> Iterable[RelationDoc]``
registered with :func:`document_source`; :func:`collect_documents` runs them all. Adding a
source (e.g. ``char_anchor``: people named in a profile's 核心经历) is one decorated function.

Built-in sources:

* ``matrix``     graph edges that came from the hand-written matrix: ``Edge.description``
                 as written, then one verbatim exchange of the pair (a line it cites first);
* ``graph_edge`` other graph edges with strength > 0.6 and every operator's anchors:
                 described from what the corpus proves about the pair
                 (:mod:`arklore.rag.evidence`, ``generated_by = "evidence"``: how A addresses
                 B and one verbatim exchange of theirs; the counts in ``facts``), or by the
                 LLM layer (task ``relation_descriptions``, ``"llm"``) when an LLM is
                 configured and its answer passes the gates; the fixed template
                 (``"template"``) only when the corpus proves nothing;
* ``story``      kept relations from ``arklore extract relations``, grouped per (subject,
                 object, predicate): text from the predicate and the evidence (events,
                 lines, a vocative); the model's notes only in the metadata (``notes``);
* ``char_anchor`` an operator's view of her key people from her approved or hand-written
                 profile (``## 我·身边的人``), built by the profiles layer and handed in as
                 :attr:`SourceContext.extra` (this layer never reads profiles).

``doc_id`` is ``<source>.<operator>.<target>.<discriminator>``, ids outside
``[A-Za-z0-9_-.]`` replaced by a short hash, so it is stable across rebuilds.

Only an operator's view is built (a chat speaks as an operator; the Doctor's or 魏彦吾's
view of someone can never reach one). Which document speaks for a pair is :func:`doc_rank`
(the one home of that rule).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from arklore.core.blocks import unique
from arklore.core.predicates import BASIS_RANK, PREDICATE_FAMILY
from arklore.extract.store import kept_edges
from arklore.graph.evidence import PairFacts, event_names
from arklore.graph.model import DOCTOR_ID, Edge, RelationGraph, defines, standing
from arklore.rag.evidence import (
    FEW_STAGES,
    FEW_TURNS,
    curated_text,
    evidence_ids,
    evidence_text,
    fact_counts,
    fit_sentences,
    little_contact,
    relation_sentence,
    role_phrase,
    vocative_clause,
)
from arklore.rag.evidence import (  # re-exported: the length bounds every reader checks
    MAX_CHARS as MAX_CHARS,
)
from arklore.rag.evidence import (
    MIN_CHARS as MIN_CHARS,
)

DOC_ID_RE = re.compile(r"^[a-zA-Z0-9_\-\.]+$")
DOC_SOURCES = ("matrix", "graph_edge", "char_anchor", "story")
DESCRIBE_THRESHOLD = 0.6
ANCHOR_K = 5
"""Her anchors a chat injects each turn when the budget allows (the first ``ANCHOR_CORE`` always,
budget permitting): each gets a document, however weak, so no anchor falls back to the bare
template."""
ANCHOR_CORE = 3
"""Anchors kept before the people a message names when the relations block runs out of budget;
the others go first (:func:`arklore.rag.context.fit_budget`)."""
ANCHOR_SKIP: frozenset[str] = frozenset({DOCTOR_ID})
"""People never given an anchor slot: the chat is with the Doctor, whose view has its own block."""

T = TypeVar("T")


ANCHOR_WRITTEN_MAX = 8
"""Anchors in all when relations a person wrote (the curated matrix) run past ``ANCHOR_K``: each
is an anchor up to this many. 陈's rival 诗怀雅 is her sixth written relation by the kind of
bond. They have their documents already, so nothing more is embedded."""


def anchor_edges(
    graph: RelationGraph, op: str, k: int = ANCHOR_K, prefer: Collection[str] = ()
) -> list[Edge]:
    """Her first ``k`` anchors (:meth:`arklore.graph.model.RelationGraph.anchors`: the kind of
    bond before the strength among relations of equal standing), the Doctor left out;
    ``prefer``: the stages of the form she is in, whose people may claim the last slots.
    Then her other written relations, up to :data:`ANCHOR_WRITTEN_MAX` anchors in all."""
    edges = graph.get_top_anchor_relations(op, k, skip=ANCHOR_SKIP, prefer=prefer)
    if not edges:
        return edges
    taken = {e.target for e in edges} | ANCHOR_SKIP
    written = [
        e for e in graph.anchors(op) if standing(e) == 0 and e.target not in taken and defines(e)
    ]
    return [*edges, *written[: max(0, ANCHOR_WRITTEN_MAX - len(edges))]]


@dataclass(slots=True)
class RelationDoc:
    doc_id: str
    text: str
    operator_id: str  # whose view; the permission key
    target_id: str
    predicate: str  # a core.predicates name, or "interaction"
    strength: float
    source: str  # matrix | graph_edge | char_anchor | story
    source_path: str
    evidence_line_ids: list[str] = field(default_factory=list)
    generated_by: str = "as_written"  # as_written | evidence | template | llm | extract | profile
    basis: str = ""  # story documents: the strongest evidence basis (direct | reported | ...)
    notes: list[str] = field(default_factory=list)  # story documents: the model's notes
    gate_reason: str = ""  # why an LLM description was refused (the fallback was used)
    facts: dict[str, Any] = field(default_factory=dict)  # the numbers behind it (not in text)
    since: str = ""  # a curated relation's first stage (arklore.graph.matrix)
    bare: str = ""  # its text without the quoted exchange, when it quotes one

    def metadata(self) -> dict[str, Any]:
        """Chroma metadata (scalars only: the evidence and notes lists are JSON)."""
        return {
            "operator_id": self.operator_id,
            "target_id": self.target_id,
            "predicate": self.predicate,
            "strength": float(self.strength),
            "source": self.source,
            "source_path": self.source_path,
            "evidence_line_ids": orjson.dumps(self.evidence_line_ids).decode(),
            "generated_by": self.generated_by,
            "basis": self.basis,
            "notes": orjson.dumps(self.notes).decode(),
            "gate_reason": self.gate_reason,
            "facts": orjson.dumps(self.facts, option=orjson.OPT_SORT_KEYS).decode(),
            "since": self.since,
            "bare": self.bare,
        }

    @classmethod
    def from_chroma(cls, doc_id: str, text: str, meta: dict[str, Any]) -> RelationDoc:
        return cls(
            doc_id=doc_id,
            text=text,
            operator_id=meta["operator_id"],
            target_id=meta["target_id"],
            predicate=meta["predicate"],
            strength=float(meta["strength"]),
            source=meta["source"],
            source_path=meta.get("source_path", ""),
            evidence_line_ids=orjson.loads(meta.get("evidence_line_ids") or "[]"),
            generated_by=meta.get("generated_by", ""),
            basis=meta.get("basis", ""),
            notes=orjson.loads(meta.get("notes") or "[]"),
            gate_reason=meta.get("gate_reason", ""),
            facts=orjson.loads(meta.get("facts") or "{}"),
            since=meta.get("since", ""),
            bare=meta.get("bare", ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "text": self.text, **self.metadata()} | {
            "evidence_line_ids": list(self.evidence_line_ids),
            "notes": list(self.notes),
            "facts": dict(self.facts),
        }

    @property
    def rank(self) -> int:
        return doc_rank(self.source, self.generated_by, self.basis)


DOCS_VERSION = "docs-8"
"""The rules that make relation documents from their sources: change it with them, so an
index built by the old rules is rebuilt (``rag build`` skips when its inputs are the same)."""


def doc_rank(source: str, generated_by: str = "", basis: str = "") -> int:
    """Which document speaks for a pair, lowest first -- the one rule every reader uses:

    0 curated (matrix) > 1 extracted story relation with direct evidence > 2 extracted with
    reported (or inferred) evidence > 3 an LLM description of a graph edge > 4 a profile's
    view (``char_anchor``: a summary of the others, never above what it summarizes) > 5 an
    evidence-built (or template) graph edge > 6 a weak-contact view built for a turn
    (:func:`weak_contact_doc`) > 9 anything else. "Nothing" is below all.
    """
    if source == "matrix":
        return 0
    if source == "story":
        return 1 if basis == "direct" else 2
    if source == "graph_edge":
        if generated_by == WEAK_CONTACT:
            return 6
        return 3 if generated_by == "llm" else 5
    if source == "char_anchor":
        return 4
    return 9


def rank_key(d: RelationDoc) -> tuple[int, float, str]:
    """Sort key: :func:`doc_rank`, then stronger first, then doc id (stable)."""
    return (d.rank, -d.strength, d.doc_id)


def slug(node_id: str) -> str:
    """A doc-id-safe, stable form of a node id (``npc:特蕾西娅`` -> ``npc-3f2a9c1d0b``)."""
    if DOC_ID_RE.match(node_id):
        return node_id
    ascii_part = re.sub(r"[^a-zA-Z0-9_\-]+", "", node_id.split(":")[0])[:16] or "x"
    return f"{ascii_part}-{hashlib.sha1(node_id.encode()).hexdigest()[:10]}"


def make_doc_id(source: str, operator_id: str, target_id: str, disc: str) -> str:
    return f"{source}.{slug(operator_id)}.{slug(target_id)}.{slug(disc)}"


# -- descriptions ------------------------------------------------------------------------------
def template_description(edge: Edge, a_name: str, b_name: str) -> str:
    """One or two deterministic Chinese sentences for ``edge`` (A's view of B)."""
    s = edge.signals or {}
    turns = float(s.get("turns", 0) or 0)
    direct = float(s.get("direct", 0) or 0)
    stages = len(edge.stages) or int(s.get("story_stages", 0) or 0)
    role = role_phrase(edge.predicate)
    if role:
        first = f"{a_name}视{b_name}为{role}"
    elif edge.predicate == "相识":
        first = f"{a_name}与{b_name}彼此相识"
    elif edge.predicate == "interaction":  # 常有 only where the numbers say so (not 1 stage)
        often = stages >= FEW_STAGES or turns >= FEW_TURNS
        first = f"{a_name}与{b_name}在故事中{'常有' if often else '有过'}交集"
    else:
        first = f"{a_name}与{b_name}关系匪浅"
    if turns >= 5 or float(s.get("vocatives", 0) or 0) >= 2:
        second = "两人在故事中多次直接交谈。"
    elif direct >= 1:
        second = "故事中有两人直接往来的记载。"
    elif stages:
        second = f"这段关系见于{stages}段剧情。"
    elif float(s.get("voice_mentions", 0) or 0) > 0:
        second = f"{a_name}只在语音中提到过{b_name}。"
    else:
        second = ""
    return f"{first}，{second}" if second else f"{first}。"


@dataclass(slots=True)
class Description:
    """One graph edge's text and where it came from."""

    text: str
    generated_by: str  # evidence | template | llm
    evidence_line_ids: list[str] = field(default_factory=list)
    gate_reason: str = ""  # set when an LLM answer was refused and this is the fallback
    facts: dict[str, Any] = field(default_factory=dict)  # the numbers behind the pair


@dataclass(slots=True)
class EdgeItem:
    """What a describer gets per edge: the edge, both names, the corpus facts, the notes and
    curated text known for the pair, and the evidence-built fallback description."""

    edge: Edge
    a_name: str
    b_name: str
    facts: PairFacts | None
    fallback: Description
    notes: list[str] = field(default_factory=list)
    curated: str | None = None


Describer = Callable[[list[EdgeItem]], list[Description]]
"""EdgeItems -> one Description per item, same order."""


def evidence_describer(items: list[EdgeItem]) -> list[Description]:
    """The no-model describer: every edge keeps its evidence-built description."""
    return [it.fallback for it in items]


def fallback_description(
    e: Edge,
    a: str,
    b: str,
    facts: PairFacts | None,
    name: Callable[[str | None], str] | None = None,
    *,
    weak: bool = False,
    unit: str | None = None,
) -> Description:
    """Evidence-built text when the corpus proves something about the pair (``unit``: the
    team or group both belong to), else the template; the numbers in ``facts`` either way."""
    counts = fact_counts(e, facts)
    got = evidence_text(e, a, b, facts, name, weak=weak, unit=unit)
    if got is not None:
        return Description(got.text, "evidence", evidence_ids(e, facts, got.line_ids),
                           facts=counts)  # fmt: skip
    text = template_description(e, a, b)
    return Description(text, "template", list(e.evidence_line_ids), facts=counts)


WEAK_CONTACT = "weak_contact"
"""``generated_by`` of a view built during a turn for a person the message names whom the
index has no document about (a pair below the describing threshold)."""


def weak_contact_doc(
    e: Edge,
    a: str,
    b: str,
    facts: PairFacts | None,
    name: Callable[[str | None], str],
    unit: str | None = None,
) -> RelationDoc:
    """Her view of someone below the describing threshold, built when a message names that
    person: the evidence-built text, marked ``交集不多`` where the corpus shows little contact
    (:func:`~arklore.rag.evidence.little_contact`, and the edge's shared stages agree: the
    facts read only the stages where they talk), else the template; never indexed."""
    shared = int((e.signals or {}).get("co_stages", 0) or 0)
    weak = little_contact(facts) and shared < FEW_STAGES
    d = fallback_description(e, a, b, facts, name, weak=weak, unit=unit)
    doc = _edge_doc(e, "graph_edge", d.text, "turn", WEAK_CONTACT)
    doc.evidence_line_ids = list(d.evidence_line_ids)
    doc.facts = d.facts
    return doc


class DocMemo:
    """The evidence-built texts of the last index build, by everything each is made from: the
    edge (its every field), both names, the unit they share, the matrix text; within one
    :attr:`world` (the document rules, the corpus facts' version, the corpus and names, the
    graph's node names), where the corpus facts of a pair are fixed. A text found here is the
    one :func:`fallback_description` or :func:`curated_text` would make again, so a build
    after an edit makes only the changed edges' texts (the corpus facts are then read only
    when one is missing). :attr:`used` is what the next build keeps."""

    def __init__(self, world: str, entries: Mapping[bytes, Any] | None = None) -> None:
        self.world = world
        self.entries = dict(entries or {})
        self.used: dict[bytes, Any] = {}
        self.made = 0

    def get(self, key: list[Any], make: Callable[[], Any]) -> Any:
        k = orjson.dumps(key)
        got = self.used.get(k)
        if got is None:
            got = self.entries.get(k)
        if got is None:
            got = make()
            self.made += 1
        self.used[k] = got
        return got


# -- sources -----------------------------------------------------------------------------------
@dataclass
class SourceContext:
    graph: RelationGraph
    graph_path: str = "graph"  # the graph file the documents came from ("graph": in memory)
    store: Any = None  # arklore.corpus.store.Store, or None when nothing is ingested
    describer: Describer = evidence_describer
    threshold: float = DESCRIBE_THRESHOLD
    extra: list[RelationDoc] = field(default_factory=list)  # documents built by upper layers
    facts: Mapping[tuple[str, str], PairFacts] = field(default_factory=dict)  # graph.evidence
    views: frozenset[str] | None = None  # whose views to build: these nodes (None: everyone's)
    memo: DocMemo | None = None  # the last build's texts (an index build), else None
    _groups: dict[tuple[str, str, str], _StoryGroup] | None = field(
        default=None, init=False, repr=False
    )
    _events: dict[str, str] | None = field(default=None, init=False, repr=False)
    _notes: dict[tuple[str, str], list[str]] | None = field(default=None, init=False, repr=False)

    def name(self, node_id: str | None) -> str:
        if node_id is None:
            return "？"
        node = self.graph.nodes.get(node_id)
        return node.name if node else node_id.removeprefix("npc:")

    def made(self, key: list[Any], make: Callable[[], T]) -> T:
        """``make()``, or the text the last build made from the same ``key`` (:class:`DocMemo`,
        in an index build)."""
        return self.memo.get(key, make) if self.memo is not None else make()

    def speaks_in_chat(self, node_id: str) -> bool:
        """Only an operator's view can reach a chat (a chat speaks as an operator): no
        document is built for anyone else's view, nor for one outside :attr:`views` (a
        caller asking about a few operators does not pay for every view)."""
        node = self.graph.nodes.get(node_id)
        return (
            node is not None
            and node.kind == "operator"
            and (self.views is None or node_id in self.views)
        )

    def story_groups(self) -> dict[tuple[str, str, str], _StoryGroup]:
        """Kept extracted relations grouped per (subject, object, predicate), node ids
        resolved through the graph; {} without a store."""
        if self._groups is None:
            self._groups = _story_groups(self) if self.store is not None else {}
        return self._groups

    def notes(self, a: str, b: str) -> list[str]:
        """Every extracted note about A -> B (any predicate)."""
        if self._notes is None:  # one pass over the groups, not one per edge described
            self._notes = {}
            for (x, y, _), g in self.story_groups().items():
                notes = self._notes.setdefault((x, y), [])
                notes.extend(n for n in g.notes if n not in notes)
        return list(self._notes.get((a, b), ()))

    def curated(self, a: str, b: str) -> str | None:
        """The hand-written (matrix) description of A -> B, any predicate."""
        for e in self.graph.get_relation(a, b):
            text = _matrix_text(e)
            if text:
                return text
        return None

    def event_of(self, stage_path: str) -> str | None:
        if self._events is None:
            self._events = event_names(self.store) if self.store is not None else {}
        return self._events.get(stage_path)


def fact_pairs(ctx: SourceContext) -> set[tuple[str, str]]:
    """The ordered pairs whose documents use corpus facts (graph edges to describe, matrix
    entries whose text quotes the pair, extracted relations): what
    :func:`arklore.graph.evidence.pair_facts` should gather."""
    out = {(e.source, e.target) for e in _edges_to_describe(ctx)}
    out.update((e.source, e.target) for e, _ in _matrix_edges(ctx) if _quotes_pair(e))
    out.update((a, b) for a, b, _ in ctx.story_groups() if ctx.speaks_in_chat(a))
    return out


DocSource = Callable[[SourceContext], Iterable[RelationDoc]]
_SOURCES: dict[str, DocSource] = {}


def document_source(name: str) -> Callable[[DocSource], DocSource]:
    """Register a document source under ``name`` (its documents' ``source`` value)."""

    def deco(fn: DocSource) -> DocSource:
        _SOURCES[name] = fn
        return fn

    return deco


def registered_sources() -> dict[str, DocSource]:
    return dict(_SOURCES)


def collect_documents(
    ctx: SourceContext, sources: Iterable[str] | None = None
) -> list[RelationDoc]:
    out: list[RelationDoc] = []
    for name in sources or list(_SOURCES):
        out.extend(_SOURCES[name](ctx))
    return out


def _matrix_text(edge: Edge) -> str | None:
    if "matrix" in edge.origins and edge.description and edge.description.strip():
        return edge.description.strip()
    return None


def _matrix_edges(ctx: SourceContext) -> Iterator[tuple[Edge, str]]:
    """The matrix edges a chat can use (an operator's view), with their text as written."""
    for e in ctx.graph.edges():
        text = _matrix_text(e)
        if text is not None and ctx.speaks_in_chat(e.source):
            yield e, text


def _quotes_pair(e: Edge) -> bool:
    """Whether a matrix document quotes the pair: every view but of the Doctor (her lines to
    him are the doctor block's)."""
    return e.target != DOCTOR_ID


@document_source("matrix")
def matrix_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    """The matrix's description as written, then one verbatim exchange of the pair
    (:func:`~arklore.rag.evidence.curated_text`); its lines lead the document's evidence."""
    for e, text in _matrix_edges(ctx):
        path = e.curated_from  # the matrix file this relation was read from
        lead: list[str] = []
        bare = text
        if _quotes_pair(e):

            def make(e: Edge = e, text: str = text) -> tuple[str, list[str]]:
                got = curated_text(text, e, ctx.facts.get((e.source, e.target)), ctx.name)
                return got.text, got.line_ids

            key = ["matrix", e, text, ctx.name(e.source), ctx.name(e.target)]
            text, lead = ctx.made(key, make)
        doc = _edge_doc(e, "matrix", text, str(path or ctx.graph_path), "as_written")
        doc.evidence_line_ids = unique([*lead, *doc.evidence_line_ids])
        doc.since = e.since
        doc.bare = bare if bare != text else ""
        yield doc


def _edges_to_describe(ctx: SourceContext) -> list[Edge]:
    """An operator's edges stronger than the threshold, and her anchors (:func:`anchor_edges`,
    which a chat shows whatever their strength); never anyone else's view."""
    g = ctx.graph
    anchors = {
        (e.source, e.target, e.predicate)
        for op in g.nodes
        if ctx.speaks_in_chat(op)
        for e in anchor_edges(g, op)
    }
    return [
        e
        for e in g.edges()
        if (e.strength > ctx.threshold or (e.source, e.target, e.predicate) in anchors)
        and ctx.speaks_in_chat(e.source)
        and _matrix_text(e) is None
        and e.source != e.target
    ]


def edge_items(ctx: SourceContext) -> list[EdgeItem]:
    """What a describer gets for every graph edge worth a ``graph_edge`` document."""
    items = []
    for e in _edges_to_describe(ctx):
        a, b = ctx.name(e.source), ctx.name(e.target)
        unit = ctx.graph.shared_unit(e.source, e.target)

        def make(e: Edge = e, a: str = a, b: str = b, unit: str | None = unit) -> Description:
            facts = ctx.facts.get((e.source, e.target))
            return fallback_description(e, a, b, facts, ctx.name, unit=unit)

        fallback = ctx.made(["edge", e, a, b, unit], make)
        # an index build without a model reads no facts but the missing texts'
        lazy = ctx.memo is not None and ctx.describer is evidence_describer
        facts = None if lazy else ctx.facts.get((e.source, e.target))
        items.append(
            EdgeItem(e, a, b, facts, fallback,
                     ctx.notes(e.source, e.target), ctx.curated(e.source, e.target))
        )  # fmt: skip
    return items


@document_source("graph_edge")
def graph_edge_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    items = edge_items(ctx)
    described = ctx.describer(items) if items else []
    for it, d in zip(items, described, strict=True):
        doc = _edge_doc(it.edge, "graph_edge", d.text, ctx.graph_path, d.generated_by)
        doc.evidence_line_ids = list(d.evidence_line_ids)
        doc.gate_reason = d.gate_reason
        doc.facts = dict(it.fallback.facts)
        yield doc


def _edge_doc(e: Edge, source: str, text: str, source_path: str, how: str) -> RelationDoc:
    """One graph edge as a document: X's view (``e.source``) of Y (``e.target``)."""
    return RelationDoc(
        doc_id=make_doc_id(
            source, e.source, e.target, PREDICATE_FAMILY.get(e.predicate, e.predicate)
        ),
        text=text,
        operator_id=e.source,
        target_id=e.target,
        predicate=e.predicate,
        strength=e.strength,
        source=source,
        source_path=source_path,
        evidence_line_ids=list(e.evidence_line_ids),
        generated_by=how,
    )


@document_source("char_anchor")
def char_anchor_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    """The ``char_anchor`` documents handed in by the caller (see the module docstring)."""
    yield from (d for d in ctx.extra if d.source == "char_anchor")


@dataclass(slots=True)
class _StoryGroup:
    notes: list[str] = field(default_factory=list)
    ev: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    basis: str = ""


def _story_groups(ctx: SourceContext) -> dict[tuple[str, str, str], _StoryGroup]:
    groups: dict[tuple[str, str, str], _StoryGroup] = {}
    for e in kept_edges(ctx.store):
        subj, obj = e.subject_id, e.object_id
        if subj is None or obj is None or subj == obj:
            continue
        a = ctx.graph.resolve(subj) or subj
        b = ctx.graph.resolve(obj) or obj
        if a == b:
            continue
        g = groups.setdefault((a, b, e.predicate), _StoryGroup())
        note = (e.note or "").strip()
        if note and note not in g.notes:
            g.notes.append(note)
        g.ev.extend(x for x in e.evidence_line_ids if x not in g.ev)
        if e.stage not in g.stages:
            g.stages.append(e.stage)
        if e.basis in BASIS_RANK and (
            not g.basis or BASIS_RANK[e.basis] > BASIS_RANK.get(g.basis, -1)
        ):
            g.basis = e.basis
    return groups


@document_source("story")
def story_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    """Kept extracted relations, one document per (subject, object, predicate): the text
    says what the predicate and the evidence say; the model's notes stay in ``notes``."""
    for (a, b, pred), g in ctx.story_groups().items():
        if not ctx.speaks_in_chat(a):
            continue
        edge_strength = max(
            (e.strength for e in ctx.graph.get_relation(a, b) if e.predicate == pred), default=0.0
        )
        text = story_text(a, b, pred, g, ctx)
        yield RelationDoc(
            doc_id=make_doc_id("story", a, b, PREDICATE_FAMILY.get(pred, pred)),
            text=text,
            operator_id=a,
            target_id=b,
            predicate=pred,
            strength=edge_strength,
            source="story",
            source_path=g.stages[0],
            evidence_line_ids=g.ev,
            generated_by="extract",
            basis=g.basis,
            notes=list(g.notes),
            facts={"stages": len(g.stages), "evidence_lines": len(g.ev)},
        )


def story_text(a: str, b: str, pred: str, g: _StoryGroup, ctx: SourceContext) -> str:
    """``A视B为…。这一关系见于「…」。A称B为“…”。`` for node ids ``a``, ``b``: the predicate
    and where the evidence is, never the model's note (the counts go to the metadata)."""
    a_name, b_name = ctx.name(a), ctx.name(b)
    sentences = [relation_sentence(pred, a_name, b_name)]
    events: list[str] = []
    for stage in g.stages:
        ev = ctx.event_of(stage)
        if ev and ev not in events:
            events.append(ev)
    where = "".join(f"「{x}」" for x in events[:2])
    if where:
        sentences.append(f"这一关系见于{where}")
    facts = ctx.facts.get((a, b))
    if facts is not None:
        voc = vocative_clause(a_name, b_name, facts)
        if voc:
            sentences.append(voc)
    return fit_sentences(sentences)
