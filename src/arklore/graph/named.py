"""Who a chat message names, for one speaker: the one rule every block of a turn shares (her
relations, her memories, her own lines), as graph nodes with the span that named them.

Three kinds of mention, each resolved *for her* (graph node ``node``):

* **operators**, found by the names layer's matcher and handed in as spans; a name several
  operators share keeps the candidates she has a relation with (none: dropped, never a pick);
* **other people of the graph** (魏彦吾, 特蕾西娅): only those she has an edge with, either way
  (anyone else is nobody she knows), by their name as the graph writes it, leftmost-longest and
  never inside an operator's name. A name of one character (九), or one that is also an
  ordinary word (jieba's dictionary, as the names layer classifies it: 大帝, 霜星), counts
  only where the names layer's rules see a person (:func:`arklore.names.rules.decide`: 九最近
  还好吗, 和大帝一起), without its bare-name signal, which was measured on operator names; and
  a kinship or role word (老板, 老师, 父亲 are speaker labels in the script too) is never a
  name: it is hers to resolve, below;
* **kinship and role words** (舅舅, 你姐姐, 两个妹妹, 队长, 殿下: :mod:`arklore.core.kinship`)
  -> the people her relations say they are: a relation of hers whose description's head names
  that term (陈→魏彦吾 "她的舅舅"), or a relation to her whose description names her by the
  inverse term (瑕光→临光 "她的姐姐": 临光's 妹妹) unless her own description of that person
  names a term already (崖心→初雪 "她的姐姐": no 老哥, whatever 初雪 says of her), else, for role words, a directed predicate
  that states it (B 师徒 A: her 老师). A family term is read only from kin or ``other``
  relations, and a term that puts B above her never from A's own directed relation (A 上下级 B
  makes B her subordinate, whatever the description says of A). A word inside or right after
  a name (银老板, 暴行姐姐, 陈的舅舅) belongs to that name; a word saying how people named
  before it are related (年和夕是姐妹) is about them; a word that alone means the speaker's
  own (和家人去看山) counts only with 你/您 (:attr:`arklore.core.kinship.Term.owned`).

Several people for one word (两个妹妹) come in her anchor order. The Doctor (``npc:博士``) is
never one of them: every chat is with him, her view of him has its own block, and a message
that calls him (博士，好久不见) is no question about somebody else (星熊 was given a relation
entry 星熊与博士交集不多 for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from arklore.core.kinship import (
    BIRTH_ORDER,
    BY_NAME,
    ELDER_TERMS,
    KIN_PREDICATES,
    NARROWER,
    RANKED,
    TERMS,
    Term,
    clause_before,
    description_terms,
    find_terms,
    head_forms,
    wanted,
)
from arklore.core.predicates import DIRECTED
from arklore.graph.model import DOCTOR_ID, INTERACTION, Edge, RelationGraph
from arklore.names.aliases import fold
from arklore.names.rules import RuleConfig, classify, decide

Span = tuple[str, int, int]
"""(graph node id, start, end) of one mention in the message."""

MentionFinder = Callable[[str], list[Span]]
"""Text -> operator mentions as (char id, start, end); an ambiguous name: one per candidate."""

NPC_RULES = RuleConfig(bare_rare=False)
"""The names layer's person-context rules for NPC names that are also words (see module doc)."""


def spans_from_mentions(find: Callable[[str], Iterable[Any]]) -> MentionFinder:
    """A :data:`MentionFinder` over a mention matcher's ``find`` (the names layer's): an
    ambiguous surface yields every candidate (the rules below keep those she knows)."""

    def spans(text: str) -> list[Span]:
        out: list[Span] = []
        for m in find(text):
            for cid in (m.char_id,) if m.char_id else m.candidates:
                out.append((cid, m.start, m.end))
        return out

    return spans


def named_spans(
    graph: RelationGraph | None,
    node: str | None,
    family: Sequence[str],
    text: str,
    operator_spans: Iterable[Span],
) -> list[Span]:
    """Who ``text`` names for the operator of ``family`` (her forms) and graph ``node``: the
    one rule every block of a turn shares (:func:`people_named`), her forms left out.
    Without a graph or a node of hers: the operators the names layer resolves (a name several
    operators share is nobody, never a pick)."""
    ops = [s for s in operator_spans if s[0] not in family]
    if graph is None or node is None:
        found: dict[tuple[int, int], list[str]] = {}
        for cid, start, end in ops:
            found.setdefault((start, end), []).append(cid)
        return [(ids[0], s, e) for (s, e), ids in found.items() if len(ids) == 1]
    return [x for x in people_named(graph, node, text, ops) if x[0] not in family]


def people_named(
    graph: RelationGraph, node: str, text: str, operator_spans: Iterable[Span]
) -> list[Span]:
    """Everyone ``text`` names for ``node`` (see the module docstring), her own node left
    out, in text order; a person may come with several spans."""
    node = graph.resolve(node) or node
    near = _neighbours(graph, node)
    spans = _operators(graph, operator_spans, near)
    spans += _npcs(graph, text, spans, near)
    names = [(s, e) for _, s, e in spans]
    for term, start, end in find_terms(text):
        if not _hers(text, start, end, names):
            continue
        spans += [(nid, start, end) for nid in kin_people(graph, node, term, text[start:end])]
    spans.sort(key=lambda s: (s[1], s[2]))
    return [s for s in spans if s[0] not in (node, DOCTOR_ID)]


def _hers(text: str, start: int, end: int, names: list[tuple[int, int]]) -> bool:
    """Is the kinship or role word at ``text[start:end]`` about her people? Not when it is
    part of a name (银老板), follows a name as its title or possession (暴行姐姐, 陈的舅舅),
    or says how people named before it in its clause are related (年和夕是姐妹)."""
    ends = {e for _, e in names}
    if any(s < end and start < e for s, e in names):
        return False
    if start in ends or (start > 0 and text[start - 1] == "的" and start - 1 in ends):
        return False
    clause = clause_before(text, start)
    first = start - len(clause)
    copula = clause.rfind("是")
    return not (copula >= 0 and any(first <= s < first + copula for s, _ in names))


def named_ids(spans: Iterable[Span]) -> list[str]:
    """The people of ``spans``, in order, once each."""
    return list(dict.fromkeys(nid for nid, _, _ in spans))


def _neighbours(graph: RelationGraph, node: str) -> set[str]:
    """Everyone with an edge from or to ``node``."""
    return {e.target for e in graph.out_edges(node)} | {e.source for e in graph.in_edges(node)}


def _operators(graph: RelationGraph, spans: Iterable[Span], near: set[str]) -> list[Span]:
    """Operator spans as graph nodes; an ambiguous span keeps the candidates in ``near``."""
    by_pos: dict[tuple[int, int], list[str]] = {}
    for cid, s, e in spans:
        nid = graph.resolve(cid) or cid
        ids = by_pos.setdefault((s, e), [])
        if nid not in ids:
            ids.append(nid)
    out: list[Span] = []
    for (s, e), ids in by_pos.items():
        if len(ids) > 1:
            ids = [i for i in ids if i in near]
        out += [(i, s, e) for i in ids]
    return out


def _npcs(graph: RelationGraph, text: str, taken: list[Span], near: set[str]) -> list[Span]:
    """People of the graph in ``near`` who are no operator, by name (module doc)."""
    words = term_forms()
    names: dict[str, str] = {}
    for nid in near:
        n = graph.nodes.get(nid)
        if n is not None and n.kind != "operator" and n.name and n.name not in words:
            names.setdefault(n.name, nid)
    hits = sorted(
        ((i, i + len(name), name) for name in names for i in _find_all(text, name)),
        key=lambda h: (h[0], -(h[1] - h[0])),
    )
    used = [(s, e) for _, s, e in taken]
    folded: str | None = None
    out: list[Span] = []
    for s, e, name in hits:
        if any(s < ue and us < e for us, ue in used):
            continue
        key = fold(name)
        if len(name) == 1 or classify(key) != "plain":
            folded = folded if folded is not None else fold(text)
            if decide(folded, s, e, key, (names[name],), -1, -1, frozenset(), NPC_RULES) is None:
                continue
        used.append((s, e))
        out.append((names[name], s, e))
    return out


@cache
def term_forms() -> frozenset[str]:
    """Every kinship and role form: never taken as a person's name."""
    return frozenset(w for t in BY_NAME.values() for w in t.forms)


def _find_all(text: str, word: str) -> Iterable[int]:
    i = text.find(word)
    while i >= 0:
        yield i
        i = text.find(word, i + len(word))


def _fits(term: Term, predicate: str) -> bool:
    """May a relation of ``predicate`` carry ``term`` in its description (module doc)?"""
    if term.kin and predicate not in KIN_PREDICATES:
        return False
    return not (term.above and predicate in DIRECTED)


def kin_people(graph: RelationGraph, node: str, term: Term, word: str = "") -> list[str]:
    """The people a kinship or role word means for ``node`` (module doc), in her anchor order;
    ``word``: the form the message uses, which may pick one by birth order (小妹)."""
    found = _kin_people(graph, node, term)
    called = _called_so(graph, node) if _particular(word, term) else {}
    return _by_word(graph, node, found, word, term, called)


def _particular(word: str, term: Term) -> bool:
    """A form more particular than the term's own name (二哥, 家臣; not 妹妹, not 姐): what her
    descriptions call her people is read for it (:func:`_called_so`)."""
    return bool(word) and word != term.name and len(word) > 1


def _by_word(
    graph: RelationGraph,
    node: str,
    found: list[str],
    word: str,
    term: Term,
    called: Mapping[str, set[str]],
) -> list[str]:
    """``found`` narrowed to those ``word`` means: those her own description calls so, when
    ``word`` is a particular form (二哥, 家臣: ``called``, :func:`_called_so`; a form of rank,
    二姐, means nobody else: :data:`RANKED`); 姐妹 her
    sisters only (:data:`NARROWER`); 小妹 the youngest by birth order (:func:`_by_birth`)."""
    if _particular(word, term):
        said = [p for p in found if p in called.get(word, ())]
        found = said if said or word.startswith(RANKED) else found
    narrower = NARROWER.get(word)
    if narrower:
        some = {p for t in narrower for p in _kin_people(graph, node, BY_NAME[t])}
        found = [p for p in found if p in some]
    return _by_birth(graph, found, word)


def _called_so(graph: RelationGraph, node: str) -> dict[str, set[str]]:
    """For each form the head of a relation from ``node`` uses, the people it calls so, as
    written (重岳's 二弟 is 望; 银灰's 家臣 are 角峰 and 讯使, not his 护卫 锏). Not read for a
    term's own name (妹妹): a description that says 小妹 of one sister and 妹妹 of the other
    makes both her 妹妹."""
    node = graph.resolve(node) or node
    out: dict[str, set[str]] = {}
    for e in graph.out_edges(node):
        if _labelled(e):
            for form in head_forms(e.description):
                out.setdefault(form, set()).add(e.target)
    return out


def _by_birth(graph: RelationGraph, found: list[str], word: str) -> list[str]:
    """``found`` narrowed to the one ``word`` picks by birth order (小妹: the youngest), where
    the graph says who is whose elder and that leaves one; else ``found``."""
    order = BIRTH_ORDER.get(word)
    if order is None or len(found) < 2:
        return found
    elder = {p: set(_elders(graph, p)) & set(found) for p in found}
    if order == "youngest":  # nobody's elder among them
        picked = [p for p in found if not any(p in elder[q] for q in found)]
    else:  # nobody is her elder among them
        picked = [p for p in found if not elder[p]]
    return picked if len(picked) == 1 else found


def _elders(graph: RelationGraph, node: str) -> list[str]:
    return [p for t in ELDER_TERMS for p in _kin_people(graph, node, BY_NAME[t])]


def _kin_people(graph: RelationGraph, node: str, term: Term) -> list[str]:
    node = graph.resolve(node) or node
    names = wanted(term)
    hits: list[str] = []
    for e in graph.out_edges(node):
        if _labelled(e) and any(
            t.name in names and _fits(t, e.predicate) for t in description_terms(e.description)
        ):
            hits.append(e.target)
    own = {
        e.target for e in graph.out_edges(node) if _labelled(e) and description_terms(e.description)
    }
    for e in graph.in_edges(node):
        if (
            e.source not in own
            and _labelled(e)
            and any(
                names.intersection(t.inverse) and _fits(t, e.predicate)
                for t in description_terms(e.description)
            )
        ):
            hits.append(e.source)
    if not hits:
        rules = {p for n in names for p in BY_NAME[n].predicates}
        hits += [e.target for e in graph.out_edges(node) if ("out", e.predicate) in rules]
        hits += [e.source for e in graph.in_edges(node) if ("in", e.predicate) in rules]
    order = {e.target: i for i, e in enumerate(graph.anchors(node))}
    found = list(dict.fromkeys(h for h in hits if h != node))
    return sorted(found, key=lambda n: (order.get(n, len(order)), found.index(n)))


def kin_words(graph: RelationGraph, node: str) -> dict[str, list[tuple[str, Term]]]:
    """For each person of hers, the kinship and role words a message says for that person
    (:func:`kin_people` for every term a message may use: 陈's 舅舅 -> 魏彦吾; 银灰's 妹妹 ->
    初雪 and 崖心), each with its term (whose rules say where the word counts as hers)."""
    out: dict[str, list[tuple[str, Term]]] = {}
    called = _called_so(graph, node)
    for term in TERMS:
        if not term.said:
            continue
        people = [p for p in _kin_people(graph, node, term) if p != DOCTOR_ID]
        for word in dict.fromkeys((*term.forms, *term.words)):
            for p in _by_word(graph, node, people, word, term, called):
                out.setdefault(p, []).append((word, term))
    return out


def _labelled(e: Edge) -> bool:
    """A named relation between two people with a description to read."""
    return e.predicate != INTERACTION and e.source != e.target and bool(e.description)
