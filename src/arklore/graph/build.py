"""Build the one merged relation graph from every source (see ``arklore.graph``).

Order of work: the user files (matrix, imports) are read and validated first, so a bad file
fails in a second, before the corpus pass, and nothing already built is touched (the caller
saves only a finished graph, atomically). Then the corpus pass (interaction + story mentions),
voice-line mentions, extracted story relations, and finally one edge per
(source, target, predicate family) with its signals and strength.

Edges: for an ordered pair with at least one named relation (matrix, import or story), one
edge per predicate family, and the pair's interaction/mention signals are added to each of
them (they raise strength; they never name a relation). A pair with only interaction/mention
signals gets one ``interaction`` edge if :meth:`PairStats.worth_an_edge`.

Nodes: every operator of the registry (alternate forms folded into their base) plus every
NPC that ends up on an edge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arklore.core.predicates import PREDICATE_FAMILY
from arklore.corpus.store import Store
from arklore.graph import confirm, curated_check, interaction, mentions, story
from arklore.graph.importer import load_import
from arklore.graph.matrix import Curated, default_matrix_path, layer_matrices, load_matrix
from arklore.graph.model import GRAPH_FORMAT, INTERACTION, ORIGINS, Edge, Node, RelationGraph
from arklore.graph.people import People
from arklore.graph.strength import WORTH_DESCRIBING, strength

Progress = Callable[[str, int, int], None]


@dataclass(slots=True)
class _Named:
    predicate: str
    matrix: Curated | None = None
    imported: Curated | None = None
    story: story.StoryRelation | None = None


@dataclass(slots=True)
class _Inputs:
    curated: list[Curated] = field(default_factory=list)
    pairs: interaction.Pairs = field(default_factory=dict)
    story: dict[story.StoryKey, story.StoryRelation] = field(default_factory=dict)
    npc_names: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)


def read_user_files(
    people: People, matrix_paths: Sequence[Path], import_paths: Iterable[Path]
) -> tuple[list[Curated], dict[str, Any]]:
    """Validate the matrices and every import file (raises InputFileError on the first
    problem); the matrices are layered (:func:`layer_matrices`): a later file's view of a pair
    replaces an earlier one's."""
    resolve = people.user_node
    paths = list(matrix_paths) or [default_matrix_path()]
    # the packaged matrix may name people a user's corpus lacks: left out and counted (the
    # real-data tests hold it at none); a user's own file is held to every rule
    unknown: list[str] = []
    shipped = default_matrix_path().resolve()
    layers = [
        load_matrix(p, resolve, unknown=unknown if Path(p).resolve() == shipped else None)
        for p in paths
    ]
    curated, replaced = layer_matrices(layers)
    report: dict[str, object] = {"matrix": {
        "path": Path(paths[-1]).name, "paths": [Path(p).name for p in paths],
        "relations": len(curated), "examples": sum(c.example for c in curated),
        "replaced": replaced, "unknown_people": len(unknown),
    }}  # fmt: skip
    imports: list[dict[str, object]] = []
    for p in import_paths:
        got = load_import(Path(p), resolve)
        curated += got
        imports.append({"path": Path(p).name, "relations": len(got)})
    report["imports"] = imports
    return curated, report


def build_graph(
    store: Store,
    people: People,
    *,
    matrix_paths: Sequence[Path] = (),
    import_paths: Iterable[Path] = (),
    excel_root: Path | None = None,
    confirmed_only: bool = False,
    progress: Progress | None = None,
) -> RelationGraph:
    """The whole graph, no LLM needed (extracted edges are used when the store has them).

    ``people`` resolves names (built from the store's registry, alias table and speakers);
    ``matrix_paths`` (layered, a later file's pair wins) empty = the packaged
    ``data/relationship_matrix.toml``; ``excel_root``
    gives the voice lines (skipped when None). A matrix relation a person rejected is left
    out, and with ``confirmed_only`` every one not confirmed (:mod:`arklore.graph.confirm`).
    """
    store.require_ingested()
    inp = _Inputs()
    inp.curated, inp.report = read_user_files(people, matrix_paths, import_paths)
    inp.curated, inp.report["verdicts"] = confirm.apply_verdicts(
        inp.curated, confirm.load_verdicts(store), confirmed_only=confirmed_only
    )
    inp.curated = curated_check.keep_checked(
        inp.curated, store, people, inp.report, require_evidence=[str(default_matrix_path())]
    )

    lines = interaction.load_spoken(store, people)
    inp.npc_names.update(people.npc_names)
    interaction.scan(
        lines,
        people,
        inp.pairs,
        principal=store.principal_speakers(),
        on_line=mentions.story_mention_hook(people),
        progress=progress,
    )
    voice = mentions.voice_mentions(excel_root, people, inp.pairs)
    rows = story.load_rows(store)
    skipped = story.merge(inp.story, rows, people)
    inp.report.update(
        spoken_lines=len(lines),
        voice_lines=voice,
        extracted_rows=len(rows),
        extracted_skipped=skipped,
    )
    return assemble(people, inp)


def assemble(people: People, inp: _Inputs) -> RelationGraph:
    named: dict[tuple[str, str], dict[str, _Named]] = {}

    def slot(a: str, b: str, pred: str) -> _Named:
        fams = named.setdefault((a, b), {})
        fam = PREDICATE_FAMILY[pred]
        if fam not in fams:
            fams[fam] = _Named(pred)
        return fams[fam]

    for c in inp.curated:
        s = slot(c.source, c.target, c.predicate)
        if c.origin == "matrix":
            s.matrix, s.predicate = c, c.predicate
        else:
            s.imported = c
            if s.matrix is None:
                s.predicate = c.predicate
    for (a, b, _fam), rel in inp.story.items():
        s = slot(a, b, rel.predicate)
        s.story = rel

    edges: list[Edge] = []
    for pair in sorted(set(named) | set(inp.pairs)):
        ps = inp.pairs.get(pair)
        if pair in named:
            for fam in sorted(named[pair]):
                edges.append(_edge(pair, named[pair][fam], ps))
        elif ps is not None and ps.worth_an_edge():
            edges.append(_edge(pair, None, ps))

    nodes: dict[str, Node] = {}
    reg = people.registry
    for cid in people.base_operators():
        op = reg.operators.get(cid)
        nodes[cid] = Node(
            cid, people.operator_name(cid) if op else cid, "operator",
            reg.faction_of(cid) if op else {},
        )  # fmt: skip
    for e in edges:
        for nid in (e.source, e.target):
            if nid not in nodes:
                if nid.startswith("npc:"):
                    nodes[nid] = Node(nid, inp.npc_names.get(nid, nid[4:]), "npc", {})
                else:
                    nodes[nid] = Node(nid, people.operator_name(nid), "operator", {})
    nodes = {k: nodes[k] for k in sorted(nodes)}
    on_edges = {n for e in edges for n in (e.source, e.target)}
    meta = dict(inp.report)
    meta["format"] = GRAPH_FORMAT
    meta["counts"] = {
        "nodes": len(nodes),
        "operator_nodes": sum(n.kind == "operator" for n in nodes.values()),
        "operator_nodes_with_edges": sum(
            n.kind == "operator" and n.id in on_edges for n in nodes.values()
        ),
        "npc_nodes": sum(n.kind == "npc" for n in nodes.values()),
        "edges": len(edges),
        "named_edges": sum(e.predicate != INTERACTION for e in edges),
        "edges_over_threshold": sum(e.strength > WORTH_DESCRIBING for e in edges),
    }
    return RelationGraph(nodes, edges, alternates=people.alternates(), meta=meta)


def _edge(pair: tuple[str, str], n: _Named | None, ps: interaction.PairStats | None) -> Edge:
    signals: dict[str, int] = {}
    used: set[str] = set()
    evidence: set[str] = set()
    stages: set[str] = set()
    description = None
    if n is not None:
        if n.matrix is not None:
            signals["matrix"] = 1
            used.add("matrix")
            description = n.matrix.description
            evidence.update(n.matrix.evidence_line_ids)
        if n.imported is not None:
            signals["import"] = 1
            used.add("import")
            description = description or n.imported.description
            evidence.update(n.imported.evidence_line_ids)
        if n.story is not None:
            for k, v in n.story.counts().items():
                if v:
                    signals[k] = v
            signals["story_stages"] = len(n.story.stages)
            used.add("story")
            evidence.update(n.story.evidence)
            stages.update(n.story.stages)
    if ps is not None:
        signals.update(ps.signals())
        if ps.turns or ps.vocatives or ps.co_stages or ps.own_stories:
            used.add("interaction")
        if ps.mentions or ps.voice_mentions:
            used.add("mention")
        evidence.update(ps.evidence)
        stages.update(ps.stages)
    return Edge(
        source=pair[0],
        target=pair[1],
        predicate=n.predicate if n is not None else INTERACTION,
        strength=strength(signals),
        origins=[s for s in ORIGINS if s in used],
        signals=signals,
        evidence_line_ids=sorted(evidence),
        description=description,
        stages=sorted(stages),
        curated_from=n.matrix.path if n is not None and n.matrix is not None else None,
        since=n.matrix.since if n is not None and n.matrix is not None else "",
    )
