"""Relation documents: one short text per direction (X's view of Y), from pluggable sources.

A *document source* is one function ``(ctx: SourceContext) -> Iterable[RelationDoc]``
registered with :func:`document_source`; :func:`collect_documents` runs them all. Adding a
source (e.g. ``char_anchor``: people named in a profile's 核心经历) is one decorated function.

Built-in sources:

* ``matrix``     graph edges that came from the hand-written matrix: ``Edge.description``
                 used as written;
* ``graph_edge`` other graph edges with strength > 0.6: described in one or two sentences by
                 the LLM layer (task ``relation_descriptions``) when ``LLM_API_KEY`` /
                 ``LLM_BASE_URL`` are configured, else by a deterministic Chinese template
                 (``generated_by = "template"``);
* ``story``      kept relations from ``arklore extract relations`` (predicate + note +
                 evidence line ids), grouped per (subject, object, predicate);
* ``char_anchor`` an operator's view of her key people from her approved or hand-written
                 profile (``## 我·身边的人``), built by the profiles layer and handed in as
                 :attr:`SourceContext.extra` (this layer never reads profiles).

``doc_id`` is ``<source>.<operator>.<target>.<discriminator>``, ids outside
``[A-Za-z0-9_-.]`` replaced by a short hash, so it is stable across rebuilds.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from arklore.core.predicates import PREDICATE_FAMILY
from arklore.extract.store import kept_edges
from arklore.graph.model import Edge, RelationGraph

DOC_ID_RE = re.compile(r"^[a-zA-Z0-9_\-\.]+$")
DOC_SOURCES = ("matrix", "graph_edge", "char_anchor", "story")
MIN_CHARS, MAX_CHARS = 10, 200
DESCRIBE_THRESHOLD = 0.6


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
    generated_by: str = "as_written"  # as_written | template | llm | extract

    def metadata(self) -> dict[str, Any]:
        """Chroma metadata (scalars only: the evidence list is JSON)."""
        return {
            "operator_id": self.operator_id,
            "target_id": self.target_id,
            "predicate": self.predicate,
            "strength": float(self.strength),
            "source": self.source,
            "source_path": self.source_path,
            "evidence_line_ids": orjson.dumps(self.evidence_line_ids).decode(),
            "generated_by": self.generated_by,
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
        )

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "text": self.text, **self.metadata()} | {
            "evidence_line_ids": list(self.evidence_line_ids)
        }


def slug(node_id: str) -> str:
    """A doc-id-safe, stable form of a node id (``npc:特蕾西娅`` -> ``npc-3f2a9c1d0b``)."""
    if DOC_ID_RE.match(node_id):
        return node_id
    ascii_part = re.sub(r"[^a-zA-Z0-9_\-]+", "", node_id.split(":")[0])[:16] or "x"
    return f"{ascii_part}-{hashlib.sha1(node_id.encode()).hexdigest()[:10]}"


def make_doc_id(source: str, operator_id: str, target_id: str, disc: str) -> str:
    return f"{source}.{slug(operator_id)}.{slug(target_id)}.{slug(disc)}"


# -- descriptions ------------------------------------------------------------------------------
# role B plays for A, by predicate; directed predicates (subject -> object) split by side.
_ROLE_UNDIRECTED = {
    "近亲": "至亲",
    "远亲": "远亲",
    "恋人": "恋人",
    "同事": "同事",
    "战友": "并肩作战的战友",
    "合作": "合作伙伴",
    "朋友": "朋友",
    "竞争": "竞争对手",
    "敌对": "敌人",
}
# A is the subject of the directed predicate: the role B plays for A
_ROLE_AS_SUBJECT = {
    "监护": "自己抚养照看的人",
    "师徒": "自己的学生",
    "上下级": "自己的下属",
    "主仆": "自己的侍从",
    "委托": "受自己委托办事的人",
    "恩人": "受过自己恩惠的人",
}


def role_phrase(predicate: str) -> str | None:
    """How A sees B for edge ``A -> B`` with ``predicate`` (None: no role to name)."""
    return _ROLE_UNDIRECTED.get(predicate) or _ROLE_AS_SUBJECT.get(predicate)


def template_description(edge: Edge, a_name: str, b_name: str) -> str:
    """One or two deterministic Chinese sentences for ``edge`` (A's view of B)."""
    role = role_phrase(edge.predicate)
    if role:
        first = f"{a_name}视{b_name}为{role}"
    elif edge.predicate == "相识":
        first = f"{a_name}与{b_name}彼此相识"
    elif edge.predicate == "interaction":
        first = f"{a_name}与{b_name}在故事中常有交集"
    else:
        first = f"{a_name}与{b_name}关系匪浅"
    s = edge.signals or {}
    turns = float(s.get("turns", 0) or 0)
    direct = float(s.get("direct", 0) or 0)
    stages = len(edge.stages) or int(s.get("story_stages", 0) or 0)
    if turns >= 5 or float(s.get("vocatives", 0) or 0) >= 2:
        second = "两人在故事中多次直接交谈。"
    elif direct >= 1:
        second = "故事中有两人直接往来的记载。"
    elif stages:
        second = f"这段关系见于{stages}段剧情。"
    elif float(s.get("voice_mentions", 0) or 0) > 0:
        second = f"{a_name}在语音中提到过{b_name}。"
    else:
        second = ""
    return f"{first}，{second}" if second else f"{first}。"


Describer = Callable[[list[tuple[Edge, str, str]]], list[tuple[str, str]]]
"""(edge, a_name, b_name) items -> (description, generated_by) per item, same order."""


def template_describer(items: list[tuple[Edge, str, str]]) -> list[tuple[str, str]]:
    return [(template_description(e, a, b), "template") for e, a, b in items]


# -- sources -----------------------------------------------------------------------------------
@dataclass
class SourceContext:
    graph: RelationGraph
    graph_path: str = "graph"  # the graph file the documents came from ("graph": in memory)
    store: Any = None  # arklore.corpus.store.Store, or None when nothing is ingested
    describer: Describer = template_describer
    threshold: float = DESCRIBE_THRESHOLD
    extra: list[RelationDoc] = field(default_factory=list)  # documents built by upper layers

    def name(self, node_id: str) -> str:
        node = self.graph.nodes.get(node_id)
        return node.name if node else node_id.removeprefix("npc:")


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


@document_source("matrix")
def matrix_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    for e in ctx.graph.edges():
        text = _matrix_text(e)
        if text is None:
            continue
        path = (e.signals or {}).get("matrix_path") or ctx.graph.meta.get("matrix_path")
        yield _edge_doc(e, "matrix", text, str(path or ctx.graph_path), "as_written")


@document_source("graph_edge")
def graph_edge_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    items = [
        (e, ctx.name(e.source), ctx.name(e.target))
        for e in ctx.graph.edges()
        if e.strength > ctx.threshold and _matrix_text(e) is None and e.source != e.target
    ]
    described = ctx.describer(items) if items else []
    for (e, _, _), (text, how) in zip(items, described, strict=True):
        yield _edge_doc(e, "graph_edge", text, ctx.graph_path, how)


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


@document_source("story")
def story_documents(ctx: SourceContext) -> Iterator[RelationDoc]:
    """Kept extracted relations, one document per (subject, object, predicate)."""
    if ctx.store is None:
        return
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in kept_edges(ctx.store):
        subj, obj = e.subject_id, e.object_id
        if subj is None or obj is None or subj == obj:
            continue
        a = ctx.graph.resolve(subj) or subj
        b = ctx.graph.resolve(obj) or obj
        g = groups.setdefault((a, b, e.predicate), {"notes": [], "ev": [], "stages": []})
        note = (e.note or "").strip()
        if note and note not in g["notes"]:
            g["notes"].append(note)
        g["ev"].extend(x for x in e.evidence_line_ids if x not in g["ev"])
        if e.stage not in g["stages"]:
            g["stages"].append(e.stage)
    for (a, b, pred), g in groups.items():
        edge_strength = max(
            (e.strength for e in ctx.graph.get_relation(a, b) if e.predicate == pred), default=0.0
        )
        a_name, b_name = ctx.name(a), ctx.name(b)
        role = role_phrase(pred)
        head = f"{a_name}视{b_name}为{role}" if role else f"{a_name}与{b_name}：{pred}"
        text = _fit(head, g["notes"])
        yield RelationDoc(
            doc_id=make_doc_id("story", a, b, PREDICATE_FAMILY.get(pred, pred)),
            text=text,
            operator_id=a,
            target_id=b,
            predicate=pred,
            strength=edge_strength,
            source="story",
            source_path=g["stages"][0],
            evidence_line_ids=g["ev"],
            generated_by="extract",
        )


def _fit(head: str, notes: list[str]) -> str:
    """``head`` plus as many whole notes as fit in MAX_CHARS (the first note clipped if alone)."""
    text = head + "。"
    for note in notes:
        note = note.rstrip("。.") + "。"
        cand = f"{head}：{note}" if text == head + "。" else text + note
        if len(cand) <= MAX_CHARS:
            text = cand
        elif text == head + "。":
            room = MAX_CHARS - len(head) - 2
            if room >= 8:
                text = f"{head}：{note[: room - 1]}…"
            break
        else:
            break
    return text
