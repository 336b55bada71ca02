"""Extracted story relations (``relation_edges``, verdict ``kept``) merged across stages.

Merge key: (subject node, object node, predicate family). Per key the evidence is a map
``line_id -> basis`` (the strongest basis any proposal gave that line), so evidence lists are
united, never duplicated, and merging the same stage again changes nothing (idempotent); the
supports are counted per distinct evidence line (``direct``/``reported``/``inferred``) and the
stages are a set. Parties: the gate's resolved operator id (folded to the base form), else the
name for ``character`` parties (an NPC id); offices, roles and unnamed speakers are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arklore.core.predicates import BASIS_RANK, PREDICATE_FAMILY
from arklore.corpus.store import Store
from arklore.extract.store import kept_edges
from arklore.graph.people import People


@dataclass(slots=True)
class StoryRelation:
    predicate: str
    evidence: dict[str, str] = field(default_factory=dict)  # line_id -> basis
    stages: set[str] = field(default_factory=set)
    notes: set[str] = field(default_factory=set)

    def counts(self) -> dict[str, int]:
        out = {"direct": 0, "reported": 0, "inferred": 0}
        for b in self.evidence.values():
            out[b] = out.get(b, 0) + 1
        return out


StoryKey = tuple[str, str, str]  # (source node, target node, family)


@dataclass(slots=True)
class ExtractedRow:
    """The fields of one kept ``relation_edges`` row the graph uses."""

    stage_path: str
    subject: str
    subject_kind: str
    subject_id: str | None
    predicate: str
    object: str
    object_kind: str
    object_id: str | None
    basis: str | None
    evidence: list[dict[str, Any]]  # [{line_id, supports, ...}]


def load_rows(store: Store) -> list[ExtractedRow]:
    """Kept extracted edges of every stage, in a fixed order ([] when nothing was extracted)."""
    return [
        ExtractedRow(
            e.stage,
            e.subject,
            e.subject_kind,
            e.subject_id,
            e.predicate,
            e.object,
            e.object_kind,
            e.object_id,
            e.basis,
            [{"line_id": ev.line_id, "supports": ev.supports} for ev in e.evidence],
        )  # fmt: skip
        for e in kept_edges(store)
    ]


def _party(people: People, name: str, kind: str, cid: str | None) -> str | None:
    if cid:
        return people.node(cid) if cid in people.registry else people.node(name)
    if kind != "character":
        return None
    return people.node(name)


def merge(acc: dict[StoryKey, StoryRelation], rows: list[ExtractedRow], people: People) -> int:
    """Merge rows into ``acc`` in place; returns how many rows were skipped (no parties)."""
    skipped = 0
    for r in rows:
        fam = PREDICATE_FAMILY.get(r.predicate)
        a = _party(people, r.subject, r.subject_kind, r.subject_id)
        b = _party(people, r.object, r.object_kind, r.object_id)
        if fam is None or a is None or b is None or a == b:
            skipped += 1
            continue
        rel = acc.get((a, b, fam))
        if rel is None:
            rel = acc[(a, b, fam)] = StoryRelation(r.predicate)
        rel.stages.add(r.stage_path)
        for ev in r.evidence:
            lid = ev.get("line_id")
            basis = ev.get("supports") or r.basis or "inferred"
            if not lid or basis not in BASIS_RANK:
                continue
            old = rel.evidence.get(lid)
            if old is None or BASIS_RANK[basis] > BASIS_RANK[old]:
                rel.evidence[lid] = basis
    return skipped
