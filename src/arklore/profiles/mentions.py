"""Task E without a model: people she names, as candidates for her relations.

The relation graph already counts, per ordered pair, how often A names B in her story lines
(``mentions``) and voice lines (``voice_mentions``) -- see :mod:`arklore.graph.mentions`.
:func:`candidates_from_graph` reads those counts from a built
:class:`~arklore.graph.model.RelationGraph`; nothing is counted twice. Without a graph,
:func:`count_mentions` runs the graph's own story-mention hook over the lines it is given
(same matcher, same rules: an ambiguous name names nobody, oneself does not count, one count
per line and person), except that a name opening the line as a vocative is counted too (the
graph counts those as vocatives instead).

A candidate is evidence of contact, not a relation: the model (or a person) names it later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arklore.graph.interaction import PairStats, ScanLine
from arklore.graph.mentions import story_mention_hook
from arklore.graph.model import INTERACTION, Edge, RelationGraph
from arklore.graph.people import People


@dataclass(frozen=True, slots=True)
class RelationCandidate:
    target: str  # node id (operator base char id)
    name: str
    mentions: int  # story lines of hers naming the target
    voice_mentions: int  # voice lines of hers naming the target
    predicates: tuple[str, ...] = ()  # named relations the graph already has for the pair
    strength: float = 0.0
    evidence: tuple[str, ...] = ()  # story line ids

    @property
    def total(self) -> int:
        return self.mentions + self.voice_mentions

    def __str__(self) -> str:
        named = [p for p in self.predicates if p != INTERACTION]
        rel = f", graph: {'/'.join(named)}" if named else ""
        return (
            f"{self.name} ({self.target}): {self.mentions} story + "
            f"{self.voice_mentions} voice mentions{rel}"
        )


def _sorted(cands: Iterable[RelationCandidate], limit: int | None) -> list[RelationCandidate]:
    out = sorted(cands, key=lambda c: (-c.total, c.target))
    return out[:limit] if limit is not None else out


def candidates_from_graph(
    graph: RelationGraph, char_id: str, *, limit: int | None = None
) -> list[RelationCandidate]:
    """Her out-edges with mention signals, most mentioned first (an alternate-form id reads
    her base node: the graph folds forms)."""
    by_target: dict[str, list[Edge]] = {}
    for e in graph.out_edges(char_id):
        if e.signals.get("mentions") or e.signals.get("voice_mentions"):
            by_target.setdefault(e.target, []).append(e)
    cands = []
    for target, edges in by_target.items():
        node = graph.nodes.get(target)
        sig = edges[0].signals  # the pair's mention counts are the same on each of its edges
        cands.append(
            RelationCandidate(
                target,
                node.name if node else target,
                int(sig.get("mentions", 0)),
                int(sig.get("voice_mentions", 0)),
                tuple(sorted({e.predicate for e in edges})),
                max(e.strength for e in edges),
                tuple(sorted({x for e in edges for x in e.evidence_line_ids}))[:3],
            )
        )
    return _sorted(cands, limit)


def count_mentions(
    char_id: str,
    people: People,
    *,
    voice_texts: Iterable[str] = (),
    story: Iterable[tuple[str, str]] = (),
    limit: int | None = None,
) -> list[RelationCandidate]:
    """Mentions in the given voice texts and (line_id, text) story lines, counted with the
    graph's hook (``people``: :class:`arklore.graph.people.People`)."""
    me = people.base(char_id)
    hook = story_mention_hook(people)
    story_pairs: dict[tuple[str, str], PairStats] = {}
    voice_pairs: dict[tuple[str, str], PairStats] = {}
    for i, text in enumerate(voice_texts):
        hook(ScanLine("", i, me, text, None, "", True), [], voice_pairs)
    for line_id, text in story:
        hook(ScanLine("", 0, me, text, None, line_id, True), [], story_pairs)
    targets = {b for (_a, b) in story_pairs} | {b for (_a, b) in voice_pairs}
    cands = []
    for t in targets:
        s = story_pairs.get((me, t), PairStats())
        v = voice_pairs.get((me, t), PairStats())
        cands.append(
            RelationCandidate(
                t, people.operator_name(t), s.mentions, v.mentions, evidence=tuple(s.evidence)
            )
        )
    return _sorted(cands, limit)
