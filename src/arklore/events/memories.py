"""Memories for chat: what an operator remembers of the story, as herself.

:meth:`MemoryService.memories` returns **her** memories only — every form of the same person
shares them — that passed the checks (present in the event, first person), each with its
text, stage code, event name and evidence line ids; the objective event summary is never
handed out as a memory. With a query they are ranked by embedding similarity (story order
breaks ties); without one they come in story order. When no memory of hers was extracted
(no events at all, or none of hers), her **appearances** are returned instead, marked
``kind="appearance"`` and carrying the game's official stage summary, so a chat still
knows where she was. Appearances are ranked by the message: the lexical relevance (BM25 over
jieba tokens) of the stage's summary and of her own lines there, and whether the people the
message names are in that stage (an operator appearing there, anyone else speaking or named in
its lines); each carries one or two of her own lines there that fit the message best, verbatim
with their ids (from her scene windows, :mod:`arklore.rag.exemplars`).

Vectors: a memory's passage is embedded once and kept in the embedding cache shared with the
relation index (``rag/embed_cache.sqlite3``, keyed by embedder and text hash); per operator
the vectors are held in memory as one matrix and a query is one matrix-vector product. There
are at most a few thousand memories per operator, so a brute-force product takes well under
a millisecond, and a separate Chroma collection would add a second copy of the store's rows
to keep in step (the store stays the only truth; the in-memory matrix is rebuilt when the
store's events change, checked by one tiny query per call).
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from arklore.core.blocks import StageRef, is_story
from arklore.core.text import (
    goes_on,
    one_line,
    render_nickname,
    sentence_pieces,
    shorten,
    stance,
    substance,
    topic_words,
)
from arklore.corpus.lexical import BM25
from arklore.corpus.order import is_own_record
from arklore.corpus.store import Store
from arklore.corpus.story import StoryOrder
from arklore.events import store as events_db
from arklore.events.appearances import Appearance
from arklore.rag.embedders import Embedder, EmbeddingCache, QueryCache, embed_cached
from arklore.rag.exemplars import MIN_HER_LINES, ExemplarIndex, SceneLine

ORDER_STRIDE = 10_000
"""``order`` = stage ``order_rank`` * ORDER_STRIDE + first line: one sortable story-order key."""

W_NAMED = 1.0
"""Weight of the people the message names being in a stage (all of them), against the
lexical relevance (1 for the best stage)."""
W_PROMINENT = 0.2
"""Weight of how much she is in a stage (her lines and lines calling her, log scale)."""
W_ABOUT = 0.5
"""Weight of a stage being about her (:func:`about_her`): it tells what she did, not another
thread she has a line in (40% of the appearances shown over 80 operators were such threads)."""
SMALL_TALK_K = 2
"""Appearances a message of small talk gets at most (nobody named, no word of a topic): her two
most telling stages say who she is; the rest of the budget is the other blocks'."""
W_RECORD = 1.0
"""Small talk (nobody named, no word of a topic): weight of a stage being her own record, the
story written about her."""
W_WITH_DOCTOR = 0.5
"""Small talk: weight of the Doctor being in a stage (half when present, all when she talks
to him): every chat is with him."""
W_PROMINENT_TALK = 1.0
"""Small talk: weight of how much she is in a stage (log scale), the stages she carries."""
ELLIPSIS = "……"
"""Marks a summary shown from a later sentence (:func:`summary_shown`)."""
QUOTES = 2
"""Her own lines an appearance carries at most (the second only when it fits the message)."""
SPARE = 3
"""Appearances ranked per one shown, so that one with nothing to show can give way."""
QUOTE_MIN = 6
"""Distinct characters of substance (letters, digits, CJK) a quoted line of hers needs:
``还有——``, ``......让我过去！让我......`` or ``你还好吗？`` quote nothing out of their scene."""
QUOTE_CHARS = 80
"""Her lines longer than this are quoted only when no shorter one of hers is there."""
STANCE_CHARS = 24
"""A line of hers saying how she stands is quoted first only from this length: shorter ones
(我记得的，只是刚刚没反应过来) say too little out of their scene."""
RECALL_CACHE = 64
"""Operators whose stage documents are held in memory."""


@dataclass(frozen=True)
class MemoryItem:
    """One memory (her own, first person) or, failing those, one appearance (a stage she is
    in, with the game's official summary: not her words)."""

    text: str
    stage_path: str
    stage_code: str | None
    event_name: str | None
    line_ids: list[str]
    kind: str  # "memory" | "appearance"
    score: float | None  # similarity to the query (None without a query)
    order: int  # story order key (release order: sort by it for a timeline)
    story_name: str | None = None
    time_hint: str | None = None
    avg_tag: str | None = None  # appearances: 行动前, 行动后…
    summary: str | None = None  # appearances: the game's summary of the stage
    spoken: int = 0  # appearances: her lines there
    addressed: int = 0  # appearances: lines calling her there
    shared: int = 0  # appearances: how many of the people the query names are there too
    quotes: list[dict[str, str]] = field(default_factory=list)  # appearances: her lines there

    @property
    def ref(self) -> StageRef:
        return StageRef(
            self.stage_path, self.stage_code, self.story_name, self.event_name, self.avg_tag
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Memories:
    """What :meth:`MemoryService.memories` returns."""

    items: list[MemoryItem]
    kind: str  # "memories" | "appearances"
    reason: str  # why it is empty, or why appearances are shown
    operator: str = ""  # the resolved operator id
    operator_ids: list[str] = field(default_factory=list)  # her forms
    query: str | None = None
    held_back: int = 0  # her memories (or stages) after the story point
    story_order: bool = False  # listed in the project's story order (else release order)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "operator_ids": self.operator_ids,
            "query": self.query,
            "kind": self.kind,
            "reason": self.reason,
            "items": [i.to_dict() for i in self.items],
        }


def order_key(order_rank: int | None, line: int | None) -> int:
    return (order_rank if order_rank is not None else ORDER_STRIDE * 100) * ORDER_STRIDE + (
        line or 0
    )


_PAST = re.compile(
    r"(?:[0-9０-９]+|[一二三四五六七八九十两几数多]+)\s*年(?:以)?前|小时候|儿时|幼时|年少时|很久以前|从前"
)
"""A time hint that dates a memory years back: it happened before the story telling it."""


def told_as_past(time_hint: str | None) -> bool:
    """Does the (verbatim) time hint put the memory before the story it is told in
    (三年前, 小时候, 很久以前)? Hints within the story (两周后, 那天夜里) keep its place."""
    return bool(time_hint and _PAST.search(time_hint))


def in_story_order(
    rows: Sequence[events_db.MemoryRow], order: StoryOrder
) -> list[events_db.MemoryRow]:
    """``rows`` in the project's story order (not release order): by the stage each is told
    in, a memory its time hint dates before its story (:func:`told_as_past`) with that
    story's first stage; then by line."""

    def key(r: events_db.MemoryRow) -> tuple[int, bool, str, int]:
        past = told_as_past(r.time_hint)
        return (order.moment(r.stage_path, before_its_story=past), not past, r.stage_path,
                r.line_start)  # fmt: skip

    return sorted(rows, key=key)


def memory_passage(row: events_db.MemoryRow) -> str:
    """What is embedded for a memory: where it happened, then her words."""
    where = "·".join(p for p in (row.event_name, row.story_name) if p)
    return f"{where}：{row.text}" if where else row.text


def appearance_text(app: Appearance) -> str:
    """An appearance as a chat sees it: where, and the game's own summary of the stage."""
    where = app.ref.heading()
    summary = " ".join((app.summary or "").split())
    return f"{where}：{summary}" if summary else where


@dataclass
class _Entry:
    revision: tuple[int, float]
    rows: list[events_db.MemoryRow]
    vectors: np.ndarray | None = None  # filled on the first query


class MemoryService:
    """Her memories (or appearances) for a chat turn; one per workspace, thread-safe."""

    def __init__(
        self,
        store: Callable[[], Store],
        embedder: Callable[[], Embedder],
        cache_path: Path,
        appearances: Callable[[Sequence[str]], list[Appearance]],
        *,
        family: Callable[[str], list[str]] | None = None,
        scenes: Callable[[], ExemplarIndex] | None = None,
        story: Callable[[], StoryOrder] | None = None,
    ) -> None:
        """``family``: an operator id -> her forms, base first; ``scenes``: her scene windows
        (her lines per stage and each stage's summary tokens and people), when built;
        ``story``: the story order a chat set at a point lists her memories in (release
        order otherwise)."""
        self._story = story
        self._store = store
        self._embedder = embedder
        self._cache_path = cache_path
        self._appearances = appearances
        self._family = family or (lambda c: [c])
        self._scenes = scenes
        self._recall: OrderedDict[tuple[str, ...], _Recall] = OrderedDict()
        self._entries: dict[tuple[str, ...], _Entry] = {}
        self._qcache = QueryCache()
        self._lock = threading.Lock()
        self._cache: EmbeddingCache | None = None

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    # -- data --------------------------------------------------------------------------
    def _entry(self, family: tuple[str, ...]) -> _Entry:
        store = self._store()
        rev = events_db.revision(store)
        entry = self._entries.get(family)
        if entry is None or entry.revision != rev:
            rows = [r for r in events_db.kept_memories(store, family) if r.person == "first"]
            entry = self._entries[family] = _Entry(rev, rows)
        return entry

    @staticmethod
    def _in_order(
        picked: Collection[int], apps: Sequence[Appearance], story: StoryOrder | None
    ) -> list[int]:
        """The picked appearances as the block lists them: in the story's order at a story
        point, else in release order (the order ``apps`` come in)."""
        if story is None:
            return sorted(picked)
        return sorted(picked, key=lambda i: (story.moment(apps[i].stage_path), i))

    def has_memories(self, family: Sequence[str]) -> bool:
        """Whether any first-person memory of hers was kept (nothing ranked or embedded)."""
        with self._lock:
            return bool(self._entry(tuple(dict.fromkeys(family))).rows)

    def _vectors(self, texts: list[str]) -> np.ndarray:
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_path)
        vecs, _ = embed_cached(self._embedder(), texts, self._cache)
        return vecs

    def _rank(
        self, vectors: np.ndarray, orders: list[int], query: str, k: int
    ) -> list[tuple[int, float]]:
        """(position, score) of the k best by similarity, story order breaking ties (scores
        equal to 6 decimals count as ties)."""
        q = self._qcache.get(self._embedder(), query)
        scores = vectors @ q
        ranked = np.lexsort((np.asarray(orders, dtype=np.int64), -np.round(scores, 6)))[:k]
        return [(int(i), float(scores[i])) for i in ranked]

    def embed_stages(self, stage_paths: Sequence[str]) -> int:
        """Embed the kept first-person memories of these stages into the embedding cache now
        (after an extraction), so a chat's first question about her does not wait for it.
        Returns how many passages were embedded (the rest were cached)."""
        rows = events_db.stage_memories(self._store(), stage_paths)
        texts = [memory_passage(r) for r in rows if r.person == "first"]
        if not texts:
            return 0
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_path)
        return embed_cached(self._embedder(), texts, self._cache)[1]

    # -- the call a chat makes ---------------------------------------------------------
    def _index(self) -> ExemplarIndex | None:
        """Her scene windows once built (the lines quoted are read from the store, so an index
        older than the names still quotes only stored lines), else None."""
        idx = self._scenes() if self._scenes is not None else None
        return idx if idx is not None and idx.built_for() is not None else None

    def _recall_for(self, fam: tuple[str, ...], apps: list[Appearance]) -> _Recall | None:
        """Her stages as lexical documents (summary + her lines there), held per operator."""
        idx = self._index()
        if idx is None:
            return None
        built = idx.built_for() or ""
        paths = tuple(a.stage_path for a in apps)
        hit = self._recall.get(fam)
        if hit is not None and hit.built_for == built and hit.paths == paths:
            self._recall.move_to_end(fam)
            return hit
        terms = idx.stage_terms(paths)
        her = idx.her_tokens(fam)
        docs = [list(terms[p].tokens if p in terms else []) + her.get(p, []) for p in paths]
        people = [terms[p].people if p in terms else frozenset() for p in paths]
        rec = _Recall(built, paths, BM25(docs), people, idx)
        self._recall[fam] = rec
        while len(self._recall) > RECALL_CACHE:
            self._recall.popitem(last=False)
        return rec

    def _present(
        self, apps: list[Appearance], named: Sequence[str], rec: _Recall | None
    ) -> list[list[str]]:
        """For each of her appearances, which of the ``named`` people are in that stage: an
        operator (her id) when she appears there, anyone else (``npc:<name>``) when that
        name speaks or is written in its lines (known only once her scenes are built)."""
        out: list[list[str]] = [[] for _ in apps]
        pos = {a.stage_path: i for i, a in enumerate(apps)}
        for node in named:
            if node.startswith("npc:"):
                name = node[4:]
                if rec is not None:
                    for i, people in enumerate(rec.people):
                        if name in people:
                            out[i].append(node)
                continue
            for a in self._appearances(self._family(node)):
                at = pos.get(a.stage_path)
                if at is not None:
                    out[at].append(node)
        return out

    def memories(
        self,
        operator: str,
        family: Sequence[str],
        query: str | None = None,
        k: int = 3,
        named: Sequence[str] = (),
        known_as: Collection[str] = (),
        knows: Callable[[str], bool] | None = None,
    ) -> Memories:
        """Her memories ranked for ``query`` (story order without one), else her
        appearances ranked by the query and the ``named`` people (graph nodes: operator ids,
        ``npc:<name>``) and whether the game's summary names her (``known_as``: every name
        she goes by), each with her own lines there that fit it; ``family`` is every id of
        her forms; ``knows``: the stages a chat set at a story point knows (the others are
        held back, and counted)."""
        fam = tuple(dict.fromkeys(family))
        query = query if query and query.strip() else None
        k = max(0, int(k))
        # at a story point every stage it knows is placed in the story, so "in order" is the
        # story's; without one, release order (a story the order cannot place comes last)
        story = self._story() if knows is not None and self._story is not None else None
        base = Memories([], "memories", "", operator, list(fam), query,
                        story_order=story is not None)  # fmt: skip
        with self._lock:
            entry = self._entry(fam)
            rows = entry.rows
            seen = [knows is None or knows(r.stage_path) for r in rows]
            base.held_back = seen.count(False)
            picked: Sequence[tuple[int, float | None]]
            if rows:
                if query is None:
                    if story is not None:  # the same rows, in the story's order
                        rows = in_story_order(rows, story)
                        seen = [knows is None or knows(r.stage_path) for r in rows]
                    picked = [(i, None) for i in range(len(rows)) if seen[i]][:k]
                else:
                    if entry.vectors is None:
                        entry.vectors = self._vectors([memory_passage(r) for r in rows])
                    orders = [order_key(r.order_rank, r.line_start) for r in rows]
                    by_score = self._rank(entry.vectors, orders, query, len(rows))
                    picked = [(i, score) for i, score in by_score if seen[i]][:k]
                base.items = [_memory_item(rows[i], score) for i, score in picked]
                base.reason = f"{len(rows)} memories of hers" + (
                    " ranked by similarity to the query"
                    if query
                    else " in story order"
                    if story is not None
                    else " in release order"
                )
                return base
            n_stages, _ = events_db.revision(self._store())
            every = self._appearances(fam)
            apps = [a for a in every if is_story(a.stage_path)]
            if knows is not None:
                base.held_back = sum(1 for a in apps if not knows(a.stage_path))
                apps = [a for a in apps if knows(a.stage_path)]
            base.kind = "appearances"
            if n_stages == 0:
                why = "no story events extracted yet"
            else:
                why = f"no memory of hers among the events of {n_stages} extracted stages"
            if not apps:
                where = "only in how-to-play or April Fools' stages" if every else "in no stage"
                base.reason = f"{why}, and she appears {where}"
                return base
            people = [n for n in dict.fromkeys(named) if n not in fam]
            rec = self._recall_for(fam, apps)
            present = self._present(apps, people, rec)
            q = (
                topic_words(rec.index.tokenizer().query(render_nickname(query)))
                if rec and query
                else []
            )
            lexical = rec.bm25.scores(q) if rec is not None else {}
            top = max(lexical.values(), default=0.0)
            most = max(math.log1p(a.spoken + a.addressed) for a in apps) or 1.0
            about = [about_her(a.stage_path, a.summary, known_as, fam) for a in apps]
            # a message of small talk (no query: a listing, as a card's, keeps its k)
            small_talk = query is not None and not q and not people
            if small_talk:  # her signature stages: her records, with the Doctor, her own
                k = min(k, SMALL_TALK_K)
                doctor = rec.index.doctor_stages(fam) if rec is not None else {}
                scores = [
                    W_PROMINENT_TALK * math.log1p(a.spoken + a.addressed) / most
                    + (W_RECORD if is_own_record(a.stage_path, fam) else 0.0)
                    + W_WITH_DOCTOR * doctor.get(a.stage_path, 0) / 2
                    + (W_ABOUT if about[i] else 0.0)
                    for i, a in enumerate(apps)
                ]
            else:
                scores = [
                    (lexical.get(i, 0.0) / top if top > 0 else 0.0)
                    + (W_NAMED * len(present[i]) / len(people) if people else 0.0)
                    + W_PROMINENT * math.log1p(a.spoken + a.addressed) / most
                    + (W_ABOUT if about[i] else 0.0)
                    for i, a in enumerate(apps)
                ]
            # a stage where she has no line (only called by name) comes after every stage
            # where she speaks, whatever its score: its words are about somebody else; a
            # cameo (fewer than MIN_HER_LINES lines) after the stages she carries, unless a
            # person the message names is there; a stage whose summary is about somebody else
            # after those about her, unless the message's words or people are there
            ranked = sorted(
                range(len(apps)),
                key=lambda i: (
                    not apps[i].spoken,
                    _cameo(apps[i], present[i]),
                    not (about[i] or lexical.get(i, 0.0) > 0 or present[i]),
                    -scores[i],
                    i,
                ),
            )[: k * SPARE]
            hers = rec.index.her_lines(fam, [apps[i].stage_path for i in ranked]) if rec else {}
            items: dict[int, MemoryItem] = {}
            for i in ranked:  # an entry with neither a summary nor a line of hers says nothing
                if len(items) == k:
                    break
                quotes = _quotes(hers.get(apps[i].stage_path, []), q, rec, people) if rec else []
                if quotes or (apps[i].summary or "").strip():
                    score = round(scores[i], 4) if query else None
                    items[i] = _appearance_item(apps[i], len(present[i]), score, quotes)
            base.items = [items[i] for i in self._in_order(items, apps, story)]
            ranked_by = (
                "small talk: her own records, the stages with the Doctor and those where she "
                "speaks most first"
                if small_talk
                else "ranked by the query's words in each stage's summary and her lines there, "
                "and by the people it names being there"
            )
            base.reason = (
                f"{why}: showing the stages she appears in ({len(apps)}), {ranked_by}, those "
                "where she speaks and whose summary is about her first; with the game's "
                "summaries and her own lines"
                + ("" if rec is not None else " (her lines once her scenes are built)")
            )
            return base


def names_her(summary: str | None, names: Collection[str]) -> bool:
    """Whether a stage summary names her by any of ``names`` (every name she goes by)."""
    return summary is not None and any(n in summary for n in names if n)


def about_her(stage_path: str, summary: str | None, names: Collection[str],
              family: Iterable[str]) -> bool:  # fmt: skip
    """Does the game's summary of a stage tell what she did: it names her, or the stage is her
    own operator record, whose summary need not (星极's 《启明》: 一段短暂失明后重见天日的故事)."""
    return is_own_record(stage_path, family) or names_her(summary, names)


def summary_shown(summary: str, names: Collection[str], max_chars: int) -> str:
    """The game's summary of a stage within ``max_chars``, from its start, or, when she is
    named only past what fits, from the sentence that first names her, marked ``……``: 50 of
    855 entries shown over 80 operators named her only after their first 60 characters."""
    short = shorten(summary, max_chars)
    if names_her(short, names) or not names_her(summary, names):
        return short
    pieces = sentence_pieces(one_line(summary))
    at = next(i for i, p in enumerate(pieces) if names_her(p, names))
    return ELLIPSIS + shorten("".join(pieces[at:]), max_chars - len(ELLIPSIS))


def _cameo(app: Appearance, present: Sequence[str]) -> bool:
    """A stage where she says fewer than :data:`~arklore.rag.exemplars.MIN_HER_LINES` lines and
    nobody the message names is there: 刻俄柏's two lines in 15-3, whose summary is about
    somebody else, are not how she came to Rhodes."""
    return app.spoken < MIN_HER_LINES and not present


@dataclass
class _Recall:
    """Her appearance stages as documents for one names state."""

    built_for: str
    paths: tuple[str, ...]
    bm25: BM25
    people: list[frozenset[str]]  # the names in each stage
    index: ExemplarIndex


def _quotes(
    lines: Sequence[SceneLine], query: Sequence[str], rec: _Recall, named: Sequence[str]
) -> list[dict[str, str]]:
    """One or two of her lines that fit the query best: its words (weighted by how rare
    they are among her stages) and the names of the people it names; then one where she
    says how she stands (:func:`arklore.core.text.stance`); then a line of some substance.
    The second only when it fits the query too."""
    if not lines:
        return []
    names = [n[4:] for n in named if n.startswith("npc:")]
    lines = [ln for ln in lines if substance(ln.text) >= QUOTE_MIN]
    if not lines:
        return []
    lines = [ln for ln in lines if not goes_on(ln.text)] or lines
    short = [ln for ln in lines if len(ln.text) <= QUOTE_CHARS] or list(lines)
    idf = {t: rec.bm25.idf(t) for t in query}

    def fit(ln: SceneLine) -> float:  # the query's words written in the line (no tokenizing)
        return sum(w for t, w in idf.items() if t in ln.text) + sum(
            1.0 for n in names if n in ln.text
        )

    def telling(ln: SceneLine) -> bool:  # says how she stands, and says enough to stand alone
        return len(ln.text) >= STANCE_CHARS and stance(ln.text)

    fits = {ln.line_id: fit(ln) for ln in short}
    ranked = sorted(short, key=lambda ln: (-fits[ln.line_id], -telling(ln), -min(len(ln.text), 40)))
    picked = [ranked[0]] + [ln for ln in ranked[1:QUOTES] if fits[ln.line_id] > 0]
    order = {ln.line_id: i for i, ln in enumerate(lines)}
    picked.sort(key=lambda ln: order[ln.line_id])
    return [{"line_id": ln.line_id, "speaker": ln.speaker, "text": ln.text} for ln in picked]


def _memory_item(r: events_db.MemoryRow, score: float | None) -> MemoryItem:
    return MemoryItem(
        text=r.text,
        stage_path=r.stage_path,
        stage_code=r.stage_code,
        event_name=r.event_name,
        line_ids=list(r.evidence_line_ids),
        kind="memory",
        score=score,
        order=order_key(r.order_rank, r.line_start),
        story_name=r.story_name,
        time_hint=r.time_hint,
    )


def _appearance_item(
    a: Appearance, shared: int, score: float | None, quotes: list[dict[str, str]]
) -> MemoryItem:
    return MemoryItem(
        text=appearance_text(a),
        stage_path=a.stage_path,
        stage_code=a.stage_code,
        event_name=a.event_name,
        line_ids=list(dict.fromkeys([q["line_id"] for q in quotes] + list(a.line_ids))),
        kind="appearance",
        score=score,
        order=order_key(a.order_rank, 0),
        story_name=a.story_name,
        avg_tag=a.avg_tag,
        summary=a.summary,
        spoken=a.spoken,
        addressed=a.addressed,
        shared=shared,
        quotes=quotes,
    )
