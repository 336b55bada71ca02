"""Task D fed back to the relation index: ``## 我·身边的人`` as ``char_anchor`` documents.

A person's own file needs no model for this either: the people her ``核心经历`` (the
``- 核心经历：`` field of ``## 锚``, or a ``## 核心经历`` section) names, found by the one rule
of who a text names (:func:`arklore.graph.named.named_spans`), become documents too, each
with the sentences that name that person (:func:`core_documents`), for anyone her
``## 我·身边的人`` does not already give a view of.

Only profiles whose tier lets a chat use the section feed the index (S: a person wrote it,
A: a reviewer approved it); a B draft's 我-sections are unreviewed and stay out. Each bullet
``- 名字（id）：view`` (the id may be left out: the name is resolved through the graph) becomes
one document of her view of that person, with the predicate, strength and evidence of the
strongest graph edge between them (``interaction`` / 0 when the graph has none). The index
ranks ``char_anchor`` below curated, extracted and LLM-described relations and above the
evidence-built ones (:func:`arklore.rag.docs.doc_rank`): a summary never outranks what it
summarizes, but says more than counts of turns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from arklore.core.text import sentence_pieces
from arklore.graph.model import INTERACTION, Edge, RelationGraph
from arklore.graph.named import Span, named_ids
from arklore.profiles.charfile import ANCHOR, PEOPLE, TIER_A, TIER_S, CharProfile, allowed_sections
from arklore.rag.docs import MAX_CHARS, RelationDoc, make_doc_id

CORE = "核心经历"
Named = Callable[[str, str], list[Span]]
"""(her char id, a text) -> who the text names for her (``GraphFacade.named_spans``)."""

SOURCE = "char_anchor"
_BULLET = re.compile(
    r"^(?P<name>[^（(：:]+?)\s*(?:[（(](?P<id>[^）)]+)[）)])?\s*[：:]\s*(?P<view>.+)$"
)


def parse_people(body: str) -> list[tuple[str, str | None, str]]:
    """(name, id or None, view) per ``- 名字（id）：view`` bullet of a ``## 我·身边的人`` body."""
    out = []
    for ln in body.replace("\r\n", "\n").split("\n"):
        m = re.match(r"^[-*][ \t]+(.*)$", ln.strip())
        if m is None:
            continue
        b = _BULLET.match(m.group(1).strip())
        if b is not None:
            out.append((b.group("name").strip(), b.group("id"), b.group("view").strip()))
    return out


def core_text(prof: CharProfile) -> str:
    """Her ``核心经历``: the ``## 锚`` field and a ``## 核心经历`` section, as written."""
    parts = []
    anchor = prof.section(ANCHOR)
    for b in anchor.bullets() if anchor is not None else []:
        field, sep, value = b.replace(":", "：", 1).partition("：")
        if sep and field.strip() == CORE and value.strip():
            parts.append(value.strip())
    own = prof.section(CORE)
    if own is not None and own.content.strip():
        parts.append(own.content.strip())
    return "\n".join(parts)


def char_anchor_documents(
    profiles: Iterable[tuple[Path, CharProfile, str | None]],
    graph: RelationGraph,
    named: Named | None = None,
) -> list[RelationDoc]:
    """The ``char_anchor`` documents of every profile whose tier allows ``## 我·身边的人``
    (path, profile, and whose it is: None for the profile's own ``operator``/file name), then,
    with ``named``, those of her ``核心经历`` (:func:`core_documents`). Base forms first: an
    alternate form adds only people her base profile does not cover."""
    docs: list[RelationDoc] = []
    seen: set[tuple[str, str]] = set()
    items = []
    for path, prof, owner in profiles:
        cid = owner or prof.char_id
        node = graph.resolve(cid) if cid else None
        if node is not None and cid is not None:
            items.append((node != cid, cid, node, path, prof))
    items.sort(key=lambda x: (x[0], x[1]))
    for _alt, _cid, node, path, prof in items:
        people = prof.section(PEOPLE)
        # an empty section names nobody: her tier's rules (costly to read) are not needed
        if people is None or not people.content.strip():
            continue
        if PEOPLE not in allowed_sections(prof).titles():
            continue
        me = graph.nodes[node].name if node in graph.nodes else prof.name
        for name, tid, view in parse_people(people.content):
            target = (graph.resolve(tid) if tid else None) or graph.resolve(name)
            if target is None or target == node or (node, target) in seen:
                continue
            seen.add((node, target))
            tname = graph.nodes[target].name if target in graph.nodes else name
            docs.append(_doc(graph, node, target, f"{me}眼中的{tname}：{view}", "view", path))
    if named is not None:
        for _alt, cid, node, path, prof in items:
            docs += core_documents(graph, cid, node, path, prof, named, seen)
    return docs


def core_documents(
    graph: RelationGraph,
    cid: str,
    node: str,
    path: Path,
    prof: CharProfile,
    named: Named,
    seen: set[tuple[str, str]],
) -> list[RelationDoc]:
    """One document per person her ``核心经历`` names (tiers S and A: a person wrote or
    approved it), holding the sentences that name that person; ``seen`` pairs are left out
    (her ``## 我·身边的人`` view says more) and the new ones added to it."""
    if prof.tier not in (TIER_S, TIER_A):
        return []
    core = core_text(prof)
    if not core:
        return []
    me = graph.nodes[node].name if node in graph.nodes else prof.name
    said: dict[str, list[str]] = {}
    for sentence in sentence_pieces(core):
        for target in named_ids(named(cid, sentence)):
            if target != node and target in graph.nodes and (node, target) not in seen:
                said.setdefault(target, []).append(sentence)
    out = []
    for target, sentences in said.items():
        seen.add((node, target))
        text = f"{me}的核心经历里的{graph.nodes[target].name}：{''.join(sentences)}"
        out.append(_doc(graph, node, target, text, "core", path))
    return out


def _doc(
    graph: RelationGraph, node: str, target: str, text: str, kind: str, path: Path
) -> RelationDoc:
    """Her view of ``target`` as a document, with the predicate, strength and evidence of the
    strongest edge between them (``interaction`` / 0 when the graph has none)."""
    best = _best_edge(graph, node, target)
    return RelationDoc(
        doc_id=make_doc_id(SOURCE, node, target, kind),
        text=text[:MAX_CHARS],
        operator_id=node,
        target_id=target,
        predicate=best.predicate if best else INTERACTION,
        strength=float(best.strength) if best else 0.0,
        source=SOURCE,
        source_path=str(path),
        evidence_line_ids=list(best.evidence_line_ids) if best else [],
        generated_by="profile",
    )


def _best_edge(graph: RelationGraph, node: str, target: str) -> Edge | None:
    edges = graph.get_relation(node, target)
    named = [e for e in edges if e.predicate != INTERACTION] or edges
    return named[0] if named else None
