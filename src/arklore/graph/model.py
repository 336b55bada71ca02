"""The relation graph as plain data: nodes, directed edges and in-memory indexes (no I/O).

Node ids: an operator's base char id (alternate forms 异格 are folded into their base, it is
the same person), ``npc:<folded name>`` for anyone else, and ``npc:博士`` for the Doctor (see
:data:`DOCTOR_ID`). An edge is one directed relation ``source -> target`` (A's view of B) with
one predicate: a :mod:`arklore.core.predicates` name, or ``"interaction"`` when only
interaction/mention signals exist for the pair.

Queries are served from indexes built once (lazily) from the edge list:

* :meth:`RelationGraph.get_relation` -- dict lookup on ``(a, b)``: O(1);
* :meth:`RelationGraph.get_top_anchor_relations` -- a's anchors (:meth:`RelationGraph.anchors`)
  sorted once per node (O(degree log degree) on first use), then a slice: O(k) per call;
* :meth:`RelationGraph.neighbors` -- a scan of a's out-edges: O(degree).

Query arguments may be a node id, an alternate-form id, or a node name (exact).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from arklore.core.kinship import description_bond
from arklore.core.predicates import OTHER, bond_rank

GRAPH_FORMAT = "arklore-relation-graph/2"
"""The ``format`` of relation_graph.json (and of the build report's ``meta``)."""

INTERACTION = "interaction"
"""Predicate of an edge backed only by interaction statistics and mentions."""

DOCTOR_ID = "npc:博士"
"""The Doctor (the player) is an NPC node with this fixed id."""

ORIGINS: tuple[str, ...] = ("matrix", "import", "story", "interaction", "mention")
"""Where an edge's evidence came from, strongest first (the order ``Edge.origins`` is written in)."""

FACTION_KINDS: tuple[str, ...] = ("nation", "group", "team")


@dataclass(slots=True)
class Node:
    id: str  # operator char id, or "npc:<normalized name>" for people without one
    name: str
    kind: str  # "operator" | "npc"
    faction: dict[str, str] = field(default_factory=dict)  # nation/group/team -> name


@dataclass(slots=True)
class Edge:
    source: str  # whose view (A)
    target: str  # about whom (B)
    predicate: str  # a core.predicates name, or "interaction"
    strength: float  # [0, 1], see arklore.graph.strength
    origins: list[str]  # "matrix" | "import" | "story" | "interaction" | "mention"
    signals: dict[str, int]  # the numbers that produced strength (arklore.graph.strength.SIGNALS)
    evidence_line_ids: list[str]
    description: str | None = None  # matrix text as written (else the import label), else None
    stages: list[str] = field(default_factory=list)
    curated_from: str | None = None  # the matrix file its curated relation was read from
    since: str = ""  # its curated relation's first stage (see arklore.graph.matrix)
    curated_evidence: list[str] = field(default_factory=list)  # the lines its curator cited

    def __reduce__(self) -> tuple[type[Edge], tuple[Any, ...]]:
        """Pickled as its fields, in order: the graph build keeps about 18,000 edges for the
        next build, and a slots dataclass's own state (a list built field by field, set back
        field by field) makes writing and reading them back a third slower."""
        return (Edge, _edge_fields(self))


_edge_fields = operator.attrgetter(*(f.name for f in fields(Edge)))


FORM_ANCHORS = 2
"""Anchor slots the stages of one of her forms may claim (see
:meth:`RelationGraph.get_top_anchor_relations`)."""
FORM_MIN_STAGES = 2
"""Stages of that form a person must share with her to claim one."""


def _rank_key(e: Edge) -> tuple[float, str, str]:
    return (-e.strength, e.target, e.predicate)


STANDINGS: tuple[str, ...] = ("curated", "imported", "story_direct", "story", "contact")
"""How an edge's relation is known, strongest first: a person wrote it in the matrix, a
relation import states it, extracted story evidence with a direct line, other extracted
evidence, contact statistics only. The strength formula keeps these apart (curated >= 0.97,
direct < 0.9, ...); within one of them strengths differ by how much the two share the stage,
which says nothing about the kind of bond."""


def standing(e: Edge) -> int:
    """The index in :data:`STANDINGS` of how ``e``'s relation is known."""
    if "matrix" in e.origins:
        return 0
    if "import" in e.origins:
        return 1
    if "story" in e.origins:
        return 2 if (e.signals or {}).get("direct") else 3
    return 4


ANCHOR_MIN_TURNS = 3
"""Exchanges (turns) a contact-only relation needs to be an anchor, when neither calls the
other by name: 夜莺 and 凯尔希 traded one line in 恶兆湍流 and she named her once in a voice
line, which is no bond of hers."""
NO_BOND = frozenset({"相识"})
"""Predicates that say two people know each other and no more: a written 相识 stays in the
index for a message that names the person, and is an anchor only when the story shows more
than acquaintance (:data:`ACQUAINT_MIN_TURNS`, or her own record): 阿米娅→塑心, a musician she
met in one story (18 exchanges), took an anchor slot from people who shaped her, while 假日威龙
陈's holiday is spent beside 林 (321)."""
ACQUAINT_MIN_TURNS = 50
"""Exchanges that make a written 相识 one of her anchors."""


def mention_only(e: Edge) -> bool:
    """Is ``e`` known only from her naming the other (in the story or a voice line) or from
    sharing a stage, with fewer than :data:`ANCHOR_MIN_TURNS` exchanges and no vocative: no
    relationship to speak of, whatever its strength."""
    if standing(e) < len(STANDINGS) - 1:  # written, imported or extracted from the story
        return False
    s = e.signals or {}
    if s.get("vocatives") or s.get("own_stories"):  # she calls them, or her story is theirs
        return False
    return int(s.get("turns", 0) or 0) < ANCHOR_MIN_TURNS


def defines(e: Edge) -> bool:
    """May ``e`` be one of her anchors (the bonds a chat shows whatever the message)? Not a
    mere acquaintance (:data:`NO_BOND`, unless the story shows more), not a relation known
    only from mentions (:func:`mention_only`)."""
    if e.predicate in NO_BOND:
        s = e.signals or {}
        return int(s.get("turns", 0) or 0) >= ACQUAINT_MIN_TURNS or bool(s.get("own_stories"))
    return not mention_only(e)


def bond(e: Edge) -> int:
    """The kind of bond ``e`` names (:data:`arklore.core.predicates.BOND_ORDER`, kin first): its
    predicate's, or for ``other`` the closest kind its description's head names (她敬称为殿下的
    旧主: a superior)."""
    if e.predicate == OTHER:
        named = description_bond(e.description)
        if named is not None:
            return named
    return bond_rank(e.predicate)


def evidence_volume(e: Edge) -> int:
    """Story evidence lines, turns, vocatives, shared stages and mentions behind ``e``."""
    s = e.signals or {}
    keys = ("direct", "reported", "inferred", "turns", "vocatives", "co_stages", "mentions",
            "voice_mentions", "own_stories")  # fmt: skip
    return int(sum(s.get(k, 0) or 0 for k in keys))


AnchorKey = tuple[int, int, float, int, str, str, str]
"""What :func:`anchor_key` sorts by: (standing, bond, -strength, -evidence volume, name,
predicate, target id)."""


def anchor_key(e: Edge, target_name: str) -> AnchorKey:
    """The anchor order: how the relation is known (:func:`standing`), then the kind of bond
    (:func:`bond`), then the evidence (strength, then its volume), then the person's name;
    never the id text (``char_…`` would always beat ``npc:…``)."""
    return (standing(e), bond(e), -e.strength, -evidence_volume(e), target_name, e.predicate,
            e.target)  # fmt: skip


class RelationGraph:
    """Nodes and directed edges with O(1) pair lookup and cached per-node rankings."""

    def __init__(
        self,
        nodes: dict[str, Node] | None = None,
        edges: Iterable[Edge] = (),
        *,
        alternates: dict[str, str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.nodes: dict[str, Node] = dict(nodes or {})
        self.alternates: dict[str, str] = dict(alternates or {})  # alternate id -> base id
        self.meta: dict[str, Any] = dict(meta or {})  # build report; saved and loaded verbatim
        self._edges: list[Edge] = list(edges)
        self._pair: dict[tuple[str, str], list[Edge]] | None = None
        self._out: dict[str, list[Edge]] | None = None
        self._in: dict[str, list[Edge]] | None = None
        self._ranked: dict[str, list[Edge]] = {}
        self._anchors: dict[str, list[Edge]] = {}
        self._names: dict[str, str] | None = None
        self._factions: dict[tuple[str, str], list[str]] | None = None

    # -- building ----------------------------------------------------------------------
    def add_edge(self, edge: Edge) -> None:
        self._edges.append(edge)
        self._invalidate()

    def _invalidate(self) -> None:
        self._pair = self._out = self._in = self._names = self._factions = None
        self._ranked = {}
        self._anchors = {}

    def _index(
        self,
    ) -> tuple[dict[tuple[str, str], list[Edge]], dict[str, list[Edge]], dict[str, list[Edge]]]:
        """(edges by (source, target), by source, by target), built on first use."""
        if self._pair is not None and self._out is not None and self._in is not None:
            return self._pair, self._out, self._in
        pair: dict[tuple[str, str], list[Edge]] = {}
        out: dict[str, list[Edge]] = {}
        into: dict[str, list[Edge]] = {}
        for e in self._edges:
            into.setdefault(e.target, []).append(e)
            key = (e.source, e.target)
            lst = pair.get(key)
            if lst is None:
                pair[key] = [e]
            else:
                lst.append(e)
            lst = out.get(e.source)
            if lst is None:
                out[e.source] = [e]
            else:
                lst.append(e)
        self._pair, self._out, self._in = pair, out, into
        return pair, out, into

    # -- lookups -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._edges)

    def edges(self) -> Iterator[Edge]:
        return iter(self._edges)

    def node_name(self, node_id: str) -> str:
        """A node's display name (an id the graph lacks: the id, without ``npc:``)."""
        node = self.nodes.get(node_id)
        return node.name if node else node_id.removeprefix("npc:")

    def resolve(self, who: str) -> str | None:
        """A node id, alternate-form id or exact node name -> node id (None when unknown)."""
        if who in self.nodes:
            return who
        if who in self.alternates:
            return self.alternates[who]
        if self._names is None:
            names: dict[str, str] = {}
            for nid in sorted(self.nodes, key=lambda i: (self.nodes[i].kind != "operator", i)):
                names.setdefault(self.nodes[nid].name, nid)
            self._names = names
        return self._names.get(who.strip())

    def _id(self, who: str) -> str:
        return self.resolve(who) or who

    def out_edges(self, a: str) -> list[Edge]:
        return self._index()[1].get(self._id(a), [])

    def in_edges(self, b: str) -> list[Edge]:
        """Every edge ``x -> b`` (the others' views of b), in edge order."""
        return self._index()[2].get(self._id(b), [])

    def get_relation(self, a: str, b: str) -> list[Edge]:
        """Every edge ``a -> b`` (one per predicate), strongest first; [] when none."""
        found = self._index()[0].get((self._id(a), self._id(b)))
        if not found:
            return []
        return sorted(found, key=_rank_key) if len(found) > 1 else list(found)

    def ranked(self, a: str) -> list[Edge]:
        """a's anchors: the strongest out-edge per target, strength descending (ties: target
        id, then predicate). Sorted on first use, cached until the graph changes."""
        a = self._id(a)
        hit = self._ranked.get(a)
        if hit is None:
            seen: set[str] = set()
            hit = []
            for e in sorted(self.out_edges(a), key=_rank_key):
                if e.target not in seen:
                    seen.add(e.target)
                    hit.append(e)
            self._ranked[a] = hit
        return hit

    def anchors(self, a: str) -> list[Edge]:
        """a's relations in anchor order (:func:`anchor_key`: how each is known, the kind of
        bond, the evidence), the first edge per target. Sorted on first use, cached until the
        graph changes."""
        a = self._id(a)
        hit = self._anchors.get(a)
        if hit is None:
            nodes = self.nodes

            def key(e: Edge) -> AnchorKey:
                node = nodes.get(e.target)
                return anchor_key(e, node.name if node else e.target)

            seen: set[str] = set()
            hit = []
            for e in sorted(self.out_edges(a), key=key):
                if e.target not in seen:
                    seen.add(e.target)
                    hit.append(e)
            self._anchors[a] = hit
        return hit

    def get_top_anchor_relations(
        self, a: str, k: int = 3, *, skip: Iterable[str] = (), prefer: Collection[str] = ()
    ) -> list[Edge]:
        """a's first ``k`` anchors (:meth:`anchors`) that define her (:func:`defines`),
        people in ``skip`` left out.

        ``prefer``: the stages of one of her forms (假日威龙陈's holiday). Up to
        :data:`FORM_ANCHORS` of the last anchors give way to the people she shares most of
        those stages with (at least :data:`FORM_MIN_STAGES`), so the form's own story keeps
        its people (林 for the holiday) while the first anchors, her kin, stay: the first one
        always does."""
        if k <= 0:
            return []
        left = set(skip)
        ranked = [e for e in self.anchors(a) if e.target not in left and defines(e)]
        out = ranked[:k]
        if not prefer:
            return out
        stages = frozenset(prefer)
        shared = {e.target: len(stages.intersection(e.stages)) for e in ranked}
        picks = sorted(
            (e for e in ranked if shared[e.target] >= FORM_MIN_STAGES),
            key=lambda e: -shared[e.target],  # stable: anchor order among equals
        )[: min(FORM_ANCHORS, k - 1)]  # the first anchor always stays
        new = [e for e in picks if e not in out]
        return [*out[: k - len(new)], *new]

    def neighbors(
        self,
        a: str,
        *,
        predicate: str | None = None,
        min_strength: float = 0.0,
        origin: str | None = None,
    ) -> list[Edge]:
        """a's out-edges passing the filters, strongest first."""
        out = [
            e
            for e in self.out_edges(a)
            if (predicate is None or e.predicate == predicate)
            and e.strength >= min_strength
            and (origin is None or origin in e.origins)
        ]
        out.sort(key=_rank_key)
        return out

    def shared_unit(self, a: str, b: str) -> str | None:
        """The team, else the group, that a and b both belong to (彩虹小队, 企鹅物流), from
        the registry's factions; never the nation (a whole country says nothing of them)."""
        na, nb = self.nodes.get(self._id(a)), self.nodes.get(self._id(b))
        if na is None or nb is None:
            return None
        for kind in ("team", "group"):
            unit = na.faction.get(kind)
            if unit and unit == nb.faction.get(kind):
                return unit
        return None

    def get_faction(self, a: str) -> dict[str, list[str]]:
        """Other operator nodes sharing a's nation / group / team (by name), ids sorted;
        a kind is absent when a has none."""
        if self._factions is None:
            idx: dict[tuple[str, str], list[str]] = {}
            for nid in sorted(self.nodes):
                for kind, name in self.nodes[nid].faction.items():
                    idx.setdefault((kind, name), []).append(nid)
            self._factions = idx
        node = self.nodes.get(self._id(a))
        if node is None:
            return {}
        return {
            kind: [m for m in self._factions.get((kind, name), []) if m != node.id]
            for kind, name in sorted(node.faction.items())
        }
