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


@dataclass(slots=True)
class CorpusPart:
    """What the corpus says about the pairs, whatever the curated files say: interaction and
    mention signals (``pairs``), the extracted story relations (``story``) and the counts of
    what was read (``report``). It depends on the corpus, the names and the voice table only,
    so a build after a matrix or import edit reuses it (:class:`arklore.graph.facade.
    GraphFacade` keeps it on disk) and redoes only the curated part, in a second."""

    pairs: interaction.Pairs
    story: dict[story.StoryKey, story.StoryRelation]
    report: dict[str, Any]


def corpus_part(
    store: Store, people: People, *, excel_root: Path | None = None,
    progress: Progress | None = None,
) -> CorpusPart:  # fmt: skip
    """The corpus pass (interaction + story mentions), voice-line mentions and the extracted
    story relations: the slow part of a build (tens of seconds on the real corpus)."""
    pairs: interaction.Pairs = {}
    lines = interaction.load_spoken(store, people)
    interaction.scan(
        lines,
        people,
        pairs,
        principal=store.principal_speakers(),
        on_line=mentions.story_mention_hook(people),
        progress=progress,
    )
    voice = mentions.voice_mentions(excel_root, people, pairs)
    rows = story.load_rows(store)
    relations: dict[story.StoryKey, story.StoryRelation] = {}
    skipped = story.merge(relations, rows, people)
    report = {"spoken_lines": len(lines), "voice_lines": voice, "extracted_rows": len(rows),
              "extracted_skipped": skipped}  # fmt: skip
    return CorpusPart(pairs, relations, report)


def build(
    store: Store,
    people: People,
    *,
    matrix_paths: Sequence[Path] = (),
    import_paths: Iterable[Path] = (),
    excel_root: Path | None = None,
    confirmed_only: bool = False,
    progress: Progress | None = None,
    corpus: Callable[[], CorpusPart] | None = None,
    previous: Kept | None = None,
) -> Built:
    """The whole graph, no LLM needed (extracted edges are used when the store has them).

    ``people`` resolves names (built from the store's registry, alias table and speakers);
    ``matrix_paths`` (layered, a later file's pair wins) empty = the packaged
    ``data/relationship_matrix.toml``; ``excel_root``
    gives the voice lines (skipped when None). A matrix relation a person rejected is left
    out, and with ``confirmed_only`` every one not confirmed (:mod:`arklore.graph.confirm`).
    ``corpus``: gives the corpus part (:class:`CorpusPart`; default: :func:`corpus_part`,
    called after the user files passed, so a bad file fails first); ``previous``: what the
    last build kept (:attr:`Built.kept`): when ``corpus`` gave the very part it was made
    from, the edges of every pair whose named relations did not change are taken from it and
    only the changed pairs are assembled again (:func:`assemble`), and only the curated
    entries it did not check are checked against the corpus.
    """
    store.require_ingested()
    inp = _Inputs()
    inp.curated, inp.report = read_user_files(people, matrix_paths, import_paths)
    inp.curated, inp.report["verdicts"] = confirm.apply_verdicts(
        inp.curated, confirm.load_verdicts(store), confirmed_only=confirmed_only
    )
    # the names the user files gave their NPCs are known by now; the corpus pass adds none
    inp.npc_names.update(people.npc_names)
    part = corpus() if corpus is not None else corpus_part(
        store, people, excel_root=excel_root, progress=progress
    )  # fmt: skip
    same = previous if previous is not None and previous.part is part else None
    checks: curated_check.Checks = {}
    inp.curated = curated_check.keep_checked(
        inp.curated, store, people, inp.report, require_evidence=[str(default_matrix_path())],
        memo=same.checks if same is not None else None, found=checks,
    )  # fmt: skip
    inp.pairs, inp.story = part.pairs, part.story
    inp.report.update(part.report)
    graph, kept = assemble(people, inp, same)
    kept.part, kept.checks = part, checks
    return Built(graph, kept)


def build_graph(store: Store, people: People, **kw: Any) -> RelationGraph:
    """:func:`build` without what a next build may reuse: the graph."""
    return build(store, people, **kw).graph


@dataclass(slots=True)
class Kept:
    """What a build keeps for the next one: each pair's named relations (by predicate
    family), its edges, and the corpus part they were made with."""

    named: dict[tuple[str, str], dict[str, _Named]]
    edges: dict[tuple[str, str], list[Edge]]
    part: CorpusPart | None = None
    checks: curated_check.Checks = field(default_factory=dict)  # the curated checks' findings


@dataclass(slots=True)
class Built:
    """A graph and what a next build may reuse (:attr:`kept`)."""

    graph: RelationGraph
    kept: Kept


def assemble(
    people: People, inp: _Inputs, previous: Kept | None = None
) -> tuple[RelationGraph, Kept]:
    """The graph from its inputs. With ``previous`` (assembled from the same corpus part),
    a pair whose named relations are equal to the ones it had there keeps its edges: they
    are made from nothing else (:func:`_edge`), so only the pairs a matrix, import or verdict
    edit changed are made again."""
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
    by_pair: dict[tuple[str, str], list[Edge]] = {}
    for pair in sorted(set(named) | set(inp.pairs)):
        if previous is not None and previous.named.get(pair) == named.get(pair):
            mine = previous.edges.get(pair, [])
        else:
            ps = inp.pairs.get(pair)
            mine = []
            if pair in named:
                mine = [_edge(pair, named[pair][fam], ps) for fam in sorted(named[pair])]
            elif ps is not None and ps.worth_an_edge():
                mine = [_edge(pair, None, ps)]
        if mine:
            by_pair[pair] = mine
            edges += mine

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
    graph = RelationGraph(nodes, edges, alternates=people.alternates(), meta=meta)
    return graph, Kept(named, by_pair)


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
        curated_evidence=(
            list(n.matrix.evidence_line_ids) if n is not None and n.matrix is not None else []
        ),
    )
