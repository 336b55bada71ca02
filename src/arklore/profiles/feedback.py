"""Task D fed back to the relation index: ``## 我·身边的人`` as ``char_anchor`` documents.

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
from collections.abc import Iterable
from pathlib import Path

from arklore.graph.model import INTERACTION, RelationGraph
from arklore.profiles.charfile import PEOPLE, CharProfile, allowed_sections
from arklore.rag.docs import MAX_CHARS, RelationDoc, make_doc_id

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


def char_anchor_documents(
    profiles: Iterable[tuple[Path, CharProfile, str | None]], graph: RelationGraph
) -> list[RelationDoc]:
    """The ``char_anchor`` documents of every profile whose tier allows ``## 我·身边的人``
    (path, profile, and whose it is: None for the profile's own ``operator``/file name).
    Base forms first: an alternate form adds only people her base profile does not cover."""
    docs: list[RelationDoc] = []
    seen: set[tuple[str, str]] = set()
    items = []
    for path, prof, owner in profiles:
        cid = owner or prof.char_id
        node = graph.resolve(cid) if cid else None
        if node is not None:
            items.append((node != cid, cid, node, path, prof))
    for _alt, _cid, node, path, prof in sorted(items, key=lambda x: (x[0], x[1])):
        people = prof.section(PEOPLE)
        if people is None or PEOPLE not in allowed_sections(prof).titles():
            continue
        me = graph.nodes[node].name if node in graph.nodes else prof.name
        for name, tid, view in parse_people(people.content):
            target = (graph.resolve(tid) if tid else None) or graph.resolve(name)
            if target is None or target == node or (node, target) in seen:
                continue
            seen.add((node, target))
            edges = graph.get_relation(node, target)
            named = [e for e in edges if e.predicate != INTERACTION] or edges
            best = named[0] if named else None
            tname = graph.nodes[target].name if target in graph.nodes else name
            text = f"{me}眼中的{tname}：{view}"[:MAX_CHARS]
            docs.append(
                RelationDoc(
                    doc_id=make_doc_id(SOURCE, node, target, "view"),
                    text=text,
                    operator_id=node,
                    target_id=target,
                    predicate=best.predicate if best else INTERACTION,
                    strength=float(best.strength) if best else 0.0,
                    source=SOURCE,
                    source_path=str(path),
                    evidence_line_ids=list(best.evidence_line_ids) if best else [],
                    generated_by="profile",
                )
            )
    return docs
