"""The relation context a chat turn injects, and the other read-only relation lookups.

Two questions per turn with operator X: *whom does she care about* (anchors: the bonds that
define her, from the in-memory graph, whatever the topic -- the kind of bond before the
strength among relations of equal standing, up to five, the Doctor left to his own block; no
vector search) and *who is being talked about right now* (contextual: her documents about the
people the message names -- by name, or by a kinship or role word, :mod:`arklore.graph.named`
-- ranked by embedding similarity inside ``operator_id = X AND target_id IN (named)``; a
person she barely knows, whom the index has no document about, gets a weak-contact view built
for the turn rather than nothing).

Everything here reads the same global knowledge base (the graph and the live Chroma
collection); chat code never reads the matrix directly. One :class:`RelationRAG` per process
(the workspace owns it) serves every thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arklore.core.blocks import ms_since as _ms
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.graph.model import Edge, RelationGraph
from arklore.graph.named import MentionFinder, Span, people_named
from arklore.rag.docs import (
    ANCHOR_CORE,
    ANCHOR_K,
    WEAK_CONTACT,
    RelationDoc,
    anchor_edges,
    rank_key,
    template_description,
)
from arklore.rag.embedders import Embedder, QueryCache
from arklore.rag.index import (
    RagIndexError,
    RagIndexMissingError,
    make_client,
    open_active,
    pointer_path,
)

DEFAULT_BUDGET = 800
CONTEXT_K = 2
QUERY_SIDE = 24  # characters kept either side of each name for the query embedding
QUERY_MAX_CHARS = 96  # e5's cost grows with the tokens: ~1 token per Chinese character
SENTENCE_END = frozenset("。！？!?；;…\n")

WeakView = Callable[[str, Edge], "RelationDoc | None"]
"""(her node, her edge to someone) -> her view of that person built for the turn, or None."""
WEAK_CACHE = 4096
"""Weak-contact views kept per process (cleared when full or when the index changes)."""


@dataclass(slots=True)
class Relation:
    target_id: str
    target_name: str
    predicate: str
    strength: float
    text: str
    source: str  # doc source, or "graph" when no document exists for the pair
    doc_id: str | None = None
    score: float | None = None  # similarity (contextual entries that were ranked)
    evidence_line_ids: list[str] = field(default_factory=list)
    generated_by: str = ""  # the document's (as_written | evidence | llm | ...); template
    since: str = ""  # a curated relation's first stage (:func:`known_at`)
    bare: str = ""  # its text without the quoted exchange (not shown in ``to_dict``)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "bare"}


def known_at(r: Relation, knows_lines: Callable[[list[str]], bool]) -> Relation | None:
    """``r`` as a chat set at a story point knows it, or None when it does not yet: as it is
    when every line it rests on is known; a curated relation whose ``since`` stage is known
    is known even when some evidence lies later: its description alone, citing only the
    lines the point knows; anything else is held back."""
    if knows_lines(r.evidence_line_ids):
        return r
    if not r.since or not knows_lines([r.since]):
        return None
    known = [x for x in r.evidence_line_ids if knows_lines([x])]
    return replace(r, text=r.bare or r.text, evidence_line_ids=known)


def all_known(
    rels: list[Relation], knows_lines: Callable[[list[str]], bool] | None
) -> tuple[list[Relation], int]:
    """The relations of ``rels`` a chat set at a story point knows (:func:`known_at`), as it
    knows them, and how many were held back; all of them when no point is set."""
    if knows_lines is None:
        return rels, 0
    kept = [k for r in rels if (k := known_at(r, knows_lines)) is not None]
    return kept, len(rels) - len(kept)


@dataclass
class RelationContext:
    text: str
    anchors: list[Relation]
    contextual: list[Relation]
    tokens: int
    budget: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    embedded: bool = False
    warnings: list[str] = field(default_factory=list)  # e.g. the index is older than the graph
    held_back: int = 0  # relations quoting a line after the story point

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "warnings": self.warnings,
            "tokens": self.tokens,
            "budget": self.budget,
            "anchors": [r.to_dict() for r in self.anchors],
            "contextual": [r.to_dict() for r in self.contextual],
            "timings_ms": self.timings_ms,
            "embedded": self.embedded,
            "held_back": self.held_back,
        }


class RelationRAG:
    """Read-only relation knowledge for chat: build once per process, share across threads."""

    def __init__(
        self,
        root: Path,
        *,
        graph: RelationGraph | None = None,
        graph_loader: Callable[[], RelationGraph] | None = None,
        embedder: Embedder | None = None,
        embedder_loader: Callable[[], Embedder] | None = None,
        mention_finder: MentionFinder | None = None,
        token_counter: TokenCounter = count_tokens,
        budget: int = DEFAULT_BUDGET,
        client: Any = None,
        client_factory: Callable[[], Any] | None = None,
        rank_always: bool = False,
        window: Callable[[str, list[Span]], str] | None = None,
        weak_view: WeakView | None = None,
        head: Head | None = None,
    ) -> None:
        """``root`` is the index folder (``$ARKLORE_HOME/rag``). The graph, the embedder and
        the Chroma client are given, or loaded on first use by their ``*_loader``/factory (a
        turn that names nobody never loads the embedder). A graph from ``graph_loader`` is
        loaded again when a rebuild switches the index. ``head``: how a line of the block
        names the person it is about (node id, name -> text; default the name)."""
        if graph is None and graph_loader is None:
            raise ValueError("RelationRAG needs graph= or graph_loader=")
        self.root = Path(root)
        self._graph = graph
        self._graph_loader = graph_loader if graph is None else None
        self._embedder = embedder
        self._embedder_loader = embedder_loader
        self._finder = mention_finder
        self.counter = token_counter
        self.budget = budget
        self._client = client
        self._client_factory = client_factory or (lambda: make_client(self.root))
        self.rank_always = rank_always  # benchmarks: query Chroma even when nothing to rank
        self.window = window or query_window  # the text embedded to rank (benchmarks vary it)
        self._lock = threading.RLock()
        self._col: Any = None
        self._ptr_stamp: int | None = None
        self._docs: dict[tuple[str, str], list[RelationDoc]] = {}
        self._by_id: dict[str, RelationDoc] = {}
        self._weak_view = weak_view
        self._head = head or _plain_head
        self._weak: dict[tuple[str, str], Relation | None] = {}
        self._qcache = QueryCache()

    # -- loading -----------------------------------------------------------------------------
    @property
    def graph(self) -> RelationGraph:
        if self._graph is None:
            assert self._graph_loader is not None
            self._graph = self._graph_loader()
        return self._graph

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            if self._embedder_loader is None:
                raise ValueError("RelationRAG needs embedder= or embedder_loader=")
            self._embedder = self._embedder_loader()
        return self._embedder

    def _finder_fn(self) -> MentionFinder:
        if self._finder is None:
            raise ValueError("RelationRAG needs mention_finder=")
        return self._finder

    def _refresh(self) -> None:
        """(Re)open the live collection when the pointer changed (a rebuild switched it)."""
        try:
            stamp = os.stat(pointer_path(self.root)).st_mtime_ns
        except FileNotFoundError as exc:
            raise RagIndexMissingError("no relation index (rag)", self.root.parent) from exc
        if stamp == self._ptr_stamp and self._col is not None:
            return
        with self._lock:
            if stamp == self._ptr_stamp and self._col is not None:
                return
            if self._client is None:
                self._client = self._client_factory()
            if self._graph_loader is not None and self._ptr_stamp is not None:
                self._graph = None  # a rebuild follows a graph rebuild: read it again
            self._weak = {}
            col, _ = open_active(self.root, self.embedder, self._client)
            got = col.get(include=["documents", "metadatas"])
            docs: dict[tuple[str, str], list[RelationDoc]] = {}
            for did, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                d = RelationDoc.from_chroma(did, text, meta)
                docs.setdefault((d.operator_id, d.target_id), []).append(d)
            for lst in docs.values():
                lst.sort(key=rank_key)  # arklore.rag.docs.doc_rank: the one ranking rule
            by_id = {d.doc_id: d for lst in docs.values() for d in lst}
            self._col, self._docs, self._by_id, self._ptr_stamp = col, docs, by_id, stamp

    def reload(self) -> None:
        with self._lock:
            self._ptr_stamp = None
            self._col = None

    # -- helpers -----------------------------------------------------------------------------
    def _name(self, node_id: str) -> str:
        node = self.graph.nodes.get(node_id)
        return node.name if node else node_id.removeprefix("npc:")

    def _resolve(self, who: str) -> str:
        return self.graph.resolve(who) or who

    def _best_doc(self, op: str, target: str, predicate: str | None = None) -> RelationDoc | None:
        """The best-ranked document of op's view of target: of that ``predicate`` when there
        is one (the ranking rule picks which document speaks for the relation), else any."""
        docs = self._docs.get((op, target)) or []
        same = (x for x in docs if x.predicate == predicate)
        return next(same, docs[0] if docs else None)

    def _relation_for_edge(self, op: str, e: Edge) -> Relation:
        d = self._best_doc(op, e.target, e.predicate)
        name = self._name(e.target)
        if d is not None:
            return Relation(e.target, name, e.predicate, e.strength, d.text, d.source, d.doc_id,
                            None, list(d.evidence_line_ids), d.generated_by, d.since,
                            d.bare)  # fmt: skip
        text = template_description(e, self._name(op), name)
        return Relation(e.target, name, e.predicate, e.strength, text, "graph", None, None,
                        list(e.evidence_line_ids), "template")  # fmt: skip

    # -- API ---------------------------------------------------------------------------------
    def get_anchor_relations(
        self, operator_id: str, top_k: int = ANCHOR_K, *, prefer: Collection[str] = ()
    ) -> list[Relation]:
        """Her first ``top_k`` anchors (:func:`arklore.rag.docs.anchor_edges`: one per person,
        the Doctor left out; ``prefer``: her form's stages), from the in-memory graph."""
        op = self._resolve(operator_id)
        edges = anchor_edges(self.graph, op, top_k, prefer)
        if not edges:
            return []
        self._refresh_quiet()
        return [self._relation_for_edge(op, e) for e in edges]

    def _refresh_quiet(self) -> None:
        """Anchors still work (template text) when no index was built yet."""
        with contextlib.suppress(RagIndexError):
            self._refresh()

    def detect_targets(self, operator_id: str, text: str) -> list[Span]:
        """The people ``text`` names for her, as graph node ids with spans (her own node left
        out): :func:`arklore.graph.named.people_named`, the rule a chat turn shares."""
        op = self._resolve(operator_id)
        return people_named(self.graph, op, text, self._finder_fn()(text))

    def get_contextual_relations(
        self,
        operator_id: str,
        query_text: str,
        top_k: int = CONTEXT_K,
        *,
        exclude: Iterable[str] = (),
        spans: list[Span] | None = None,
        _timings: dict[str, float] | None = None,
    ) -> list[Relation]:
        """Her view of the people ``query_text`` names (``spans``: already found by the
        caller with :meth:`detect_targets`' rule): [] without touching the index when it names
        nobody she has a relation with; else the best document per person, ranked by
        similarity, then a weak-contact view of each person named whom the index has no
        document about (:data:`arklore.rag.docs.WEAK_CONTACT`), at most ``top_k`` in all."""
        t = _timings if _timings is not None else {}
        op = self._resolve(operator_id)
        t0 = time.perf_counter()
        if spans is None:
            spans = self.detect_targets(op, query_text)
        excl = {self._resolve(x) for x in exclude}
        named = list(dict.fromkeys(nid for nid, _, _ in spans if nid not in excl and nid != op))
        ids: list[str] = []
        if named and top_k > 0:
            self._refresh()  # only now is the index touched
            ids = [i for i in named if (op, i) in self._docs]
        t["mentions"] = t.get("mentions", 0.0) + (time.perf_counter() - t0) * 1000
        if top_k <= 0 or not named:
            return []
        out = self._ranked(op, query_text, ids, spans, top_k, t) if ids else []
        for i in named:
            if len(out) >= top_k:
                break
            if i not in ids:
                weak = self._weak_relation(op, i)
                if weak is not None:
                    out.append(weak)
        return out

    def _ranked(
        self,
        op: str,
        query_text: str,
        ids: list[str],
        spans: list[Span],
        top_k: int,
        t: dict[str, float],
    ) -> list[Relation]:
        """Her best document per person of ``ids`` (each has one), most similar first."""
        n_docs = sum(len(self._docs[(op, i)]) for i in ids)
        if n_docs <= top_k and not self.rank_always:  # every candidate is returned: no ranking
            every = [self._doc_relation(self._docs[(op, i)][0]) for i in ids]
            return sorted(every, key=lambda r: -r.strength)
        t1 = time.perf_counter()
        ranked = set(ids)
        q = self._qcache.get(
            self.embedder, self.window(query_text, [x for x in spans if x[0] in ranked])
        )
        t2 = time.perf_counter()
        t["embed"] = t.get("embed", 0.0) + (t2 - t1) * 1000
        where = {"$and": [{"operator_id": op}, {"target_id": {"$in": ids}}]}
        # distances only: the documents are the ones loaded in memory by _refresh
        res = self._col.query(
            query_embeddings=[q], n_results=n_docs, where=where, include=["distances"]
        )
        t["search"] = t.get("search", 0.0) + (time.perf_counter() - t2) * 1000
        out: list[Relation] = []
        seen: set[str] = set()
        for did, dist in zip(res["ids"][0], res["distances"][0], strict=True):
            d = self._by_id.get(did)
            if d is None or d.target_id in seen:
                continue
            seen.add(d.target_id)
            # similarity picks the target and the relation (predicate); the ranking rule
            # picks which document speaks for it (curated over extracted over evidence-built)
            r = self._doc_relation(self._best_doc(op, d.target_id, d.predicate) or d)
            r.score = round(1.0 - float(dist), 4)
            out.append(r)
            if len(out) >= top_k:
                break
        return out

    def _weak_relation(self, op: str, target: str) -> Relation | None:
        """Her view of ``target`` when the index has none: built from her edge (the
        ``weak_view`` given, else the template); None when she has no edge to them."""
        key = (op, target)
        if key in self._weak:
            return self._weak[key]
        edges = self.graph.get_relation(op, target)
        rel: Relation | None = None
        if edges:
            e = edges[0]
            d = self._weak_view(op, e) if self._weak_view is not None else None
            if d is not None:
                rel = self._doc_relation(d)
                rel.source, rel.doc_id = WEAK_CONTACT, None
            else:
                rel = self._relation_for_edge(op, e)
        with self._lock:
            if len(self._weak) >= WEAK_CACHE:
                self._weak = {}
            self._weak[key] = rel
        return rel

    def _doc_relation(self, d: RelationDoc) -> Relation:
        return Relation(d.target_id, self._name(d.target_id), d.predicate, d.strength, d.text,
                        d.source, d.doc_id, None, list(d.evidence_line_ids),
                        d.generated_by, d.since, d.bare)  # fmt: skip

    def build_context(
        self,
        operator_id: str,
        query_text: str,
        l3_recalled_targets: Iterable[str] | None = None,
        *,
        budget: int | None = None,
        anchor_k: int = ANCHOR_K,
        context_k: int = CONTEXT_K,
        spans: list[Span] | None = None,
        prefer: Collection[str] = (),
        name: str | None = None,
        shown: Callable[[str], str] | None = None,
        knows_lines: Callable[[list[str]], bool] | None = None,
    ) -> RelationContext:
        """Her anchors and her view of the people the message names (``spans``: found by the
        caller with :meth:`detect_targets`' rule, else found here), within ``budget`` tokens
        (:func:`fit_budget`); ``prefer``: the stages of the form she is in; ``name``: what
        the heading calls her (default: her graph node's name); ``shown``: each relation's
        text as the chat shows it (the player's name rendered), before it is fitted;
        ``knows_lines``: whether a chat set at a story point knows these lines (each relation
        as it knows it, :func:`known_at`; the others are held back, and counted)."""
        budget = self.budget if budget is None else budget
        count = self.counter
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        op = self._resolve(operator_id)
        anchors = self.get_anchor_relations(op, anchor_k, prefer=prefer)
        if not anchors:
            return RelationContext("", [], [], 0, budget, {"total": _ms(t0)})
        if spans is None:
            t1 = time.perf_counter()
            spans = self.detect_targets(op, query_text)
            timings["mentions"] = _ms(t1)
        l3 = {self._resolve(x) for x in (l3_recalled_targets or ())}
        anchors = [a for a in anchors if a.target_id not in l3]
        exclude = l3 | {a.target_id for a in anchors}
        try:
            contextual = self.get_contextual_relations(
                op, query_text, context_k, exclude=exclude, spans=spans, _timings=timings
            )
        except RagIndexError:
            contextual = []
        anchors, held_a = all_known(anchors, knows_lines)  # as a story point knows them
        contextual, held_c = all_known(contextual, knows_lines)
        held = held_a + held_c
        if shown is not None:
            anchors = [replace(r, text=shown(r.text)) for r in anchors]
            contextual = [replace(r, text=shown(r.text)) for r in contextual]
        name = name or self._name(op)
        named = frozenset(nid for nid, _, _ in spans)
        anchors, contextual, text = fit_budget(
            name, anchors, contextual, budget, count, keep=named, head=self._head
        )
        timings["total"] = _ms(t0)
        return RelationContext(text, anchors, contextual, count(text) if text else 0, budget,
                               timings, "embed" in timings, held_back=held)  # fmt: skip

    def get_relation_context(
        self,
        operator_id: str,
        query_text: str,
        l3_recalled_targets: Iterable[str] | None = None,
        *,
        budget: int | None = None,
    ) -> str:
        return self.build_context(operator_id, query_text, l3_recalled_targets, budget=budget).text

    def get_all_relationships_for(
        self, operator_id: str, participants: Iterable[str], *, weak: bool = True
    ) -> list[Relation]:
        """Group chat: her relation to everyone in the room she has one with, strongest first;
        without ``weak``, only those an index document describes (no weak-contact view is
        built: the corpus reads it takes are wasted on a caller that wants documents)."""
        op = self._resolve(operator_id)
        self._refresh_quiet()
        out: list[Relation] = []
        seen: set[str] = set()
        for p in participants:
            pid = self._resolve(p)
            if pid == op or pid in seen:
                continue
            seen.add(pid)
            d = self._best_doc(op, pid)
            edges = self.graph.get_relation(op, pid)
            if d is not None:
                r = self._doc_relation(d)
                if edges:
                    r.strength = max(r.strength, edges[0].strength)
                out.append(r)
            elif weak and (view := self._weak_relation(op, pid)) is not None:
                out.append(view)  # the view a turn naming them gets, not the bare template
        return sorted(out, key=lambda r: -r.strength)

    def get_relation_background(
        self, operator_id: str, top_k: int = 8, *, budget: int | None = None
    ) -> str:
        """A static block of her strongest relations (deep-chat anchor layer); message-free."""
        budget = self.budget if budget is None else budget
        op = self._resolve(operator_id)
        rels = self.get_anchor_relations(op, top_k)
        header = f"【{self._name(op)}的人际关系】"
        while rels:
            text = "\n".join([header, *(_line(r, self._head) for r in rels)])
            if self.counter(text) <= budget:
                return text
            rels = rels[:-1]
        return ""


def query_window(
    text: str, spans: Iterable[Span], *, side: int = QUERY_SIDE, max_chars: int = QUERY_MAX_CHARS
) -> str:
    """What gets embedded to rank a turn's documents: the text around the names, not the
    whole message (the embedding's cost grows with its tokens).

    Each name keeps at most ``side`` characters either side, never past the end of its
    sentence (``。！？!?；;…`` or a line break; the closing mark is kept); overlapping windows
    merge, in text order, joined by a space. When that exceeds ``max_chars`` the sides shrink
    until it fits (the names themselves go last). No names: the whole text, cut to
    ``max_chars``."""
    text_len = len(text)
    marks = sorted({(s, e) for _, s, e in spans if 0 <= s < e <= text_len})
    if not marks:
        return text.strip()[:max_chars]
    bounds = [_sentence(text, s, e, side) for s, e in marks]
    for width in range(side, -1, -1):
        parts: list[list[int]] = []
        for (s, e), (lo_b, hi_b) in zip(marks, bounds, strict=True):
            lo, hi = max(lo_b, s - width), min(hi_b, e + width)
            if parts and lo <= parts[-1][1]:
                parts[-1][1] = max(parts[-1][1], hi)
            else:
                parts.append([lo, hi])
        out = " ".join(p for a, b in parts if (p := text[a:b].strip()))
        if len(out) <= max_chars:
            return out
    return out[:max_chars]


def _sentence(text: str, start: int, end: int, reach: int) -> tuple[int, int]:
    """[lo, hi) of the sentence holding text[start:end] (its closing marks included), looked
    for at most ``reach`` characters either side."""
    lo, stop = start, max(0, start - reach)
    while lo > stop and text[lo - 1] not in SENTENCE_END:
        lo -= 1
    hi, stop = end, min(len(text), end + reach)
    while hi < stop and text[hi] not in SENTENCE_END:
        hi += 1
    while hi < len(text) and text[hi] in SENTENCE_END and text[hi] != "\n":
        hi += 1  # keep "？" / "！！" / "……"
    return lo, hi


Head = Callable[[str, str], str]
"""(node id, name) -> how a block line names that person (灵知（诺希斯）)."""


def _plain_head(node_id: str, name: str) -> str:
    return name


def _line(r: Relation, head: Head = _plain_head) -> str:
    """One relation as a block shows it: ``- 名字：text``, the name as ``head`` gives it."""
    return f"- {head(r.target_id, r.target_name)}：{r.text}"


def render(
    name: str, anchors: list[Relation], contextual: list[Relation], head: Head = _plain_head
) -> str:
    """The relations block: her people, then the people this turn names, one line each."""
    lines: list[str] = []
    if anchors:
        # 身边, not 在意: most are known from the story's evidence alone, not from a judgement
        lines.append(f"【{name}身边的人】")
        lines.extend(_line(r, head) for r in anchors)
    if contextual:
        lines.append("【本轮提到的人】")
        lines.extend(_line(r, head) for r in contextual)
    return "\n".join(lines)


def fit_budget(
    name: str,
    anchors: list[Relation],
    contextual: list[Relation],
    budget: int,
    count: TokenCounter,
    *,
    core: int = ANCHOR_CORE,
    keep: frozenset[str] = frozenset(),
    head: Head = _plain_head,
) -> tuple[list[Relation], list[Relation], str]:
    """Until the block (headers included) fits ``budget`` tokens, drop: the anchors after the
    first ``core`` that the message does not name (``keep``), from the last; then contextual
    entries, weakest first; then the remaining anchors from the last."""
    anchors, contextual = list(anchors), list(contextual)
    while True:
        text = render(name, anchors, contextual, head)
        if not text or count(text) <= budget:
            return anchors, contextual, text
        extra = [i for i in range(core, len(anchors)) if anchors[i].target_id not in keep]
        if extra:
            anchors.pop(extra[-1])
        elif contextual:
            weakest = min(range(len(contextual)), key=lambda i: (contextual[i].strength, -i))
            contextual.pop(weakest)
        else:
            anchors.pop()
