"""Her own voice: short scenes of her story lines, retrieved per chat turn (ChatHaruhi's
technique, arXiv 2308.09597, on this corpus), with no model.

**Windows** (built once for every operator, :meth:`ExemplarIndex.build`): in each stage of the
primary corpus she speaks in that tells a story (:func:`arklore.core.blocks.is_story`: no
how-to-play, no April Fools' joke), runs of at most :data:`WINDOW_LINES` consecutive lines
(dialogue, choices, narration, subtitles; stickers left out) around her lines: up to
:data:`LEAD` lines before her line (what she answers), then onwards. A window never mixes alternative choice
branches: two lines of different options of one Decision (``branch`` ``"12:1"`` against
``"12:2"``, nested Decisions followed up to the top) end the window, and so does a scene cut
(:attr:`arklore.core.model.Line.scene`: a new background, a fade to black). A window that
would stop on somebody else's line (the Doctor's choice) with her answer next takes the answer
(one line past :data:`WINDOW_LINES`). Every window holds at
least one line of hers (uncertain speakers such as ``凯尔希？`` are context, never hers). A
choice line keeps the option the window's branch takes (the first when none is taken).

**Retrieval** (:meth:`ExemplarIndex.search`): BM25 over jieba tokens (:mod:`arklore.corpus.
lexical`) among her windows, normalised by the best score, plus boosts: the people the
message names being there (speaking, or named in a line: operators by the mention matcher
at build time, anyone by a speaker name the tokenizer keeps whole), the Doctor being there (a
choice, a line to Dr.{@nickname}; more when she is the one talking to him), and how much of
the window is hers. A window where she says almost nothing (:data:`MIN_HER_TOKENS`) comes
after every window where she says something. One window per stage. The lines are read back
from the corpus tables by their ids when a window is picked: a scene is shown verbatim or not
at all.

Measured against embedding a bounded set of windows per operator with e5-small (64 each, see
the README): on the fidelity eval's voice items lexical passes 18/18 (e5: 15/18), builds every
operator's windows in 12.5 s on 2 quiet cores with two worker processes (``ARKLORE_WORKERS``;
about 20 s in one; e5 would embed 21,728 passages: hours here) and ranks in ~3 ms per turn
without embedding the message.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from arklore.base.workers import spawn_pool
from arklore.core.blocks import is_story
from arklore.core.model import Line, LineKind, is_doctor
from arklore.core.text import render_nickname, topic_words
from arklore.corpus.lexical import BM25, Tokenizer
from arklore.corpus.order import is_own_record
from arklore.corpus.store import StageInfo, Store
from arklore.extract.presence import doctor_signal

VERSION = "5"
"""The windowing rule's version: a change rebuilds the windows (2: a speaker the story marks
uncertain keeps its question mark; 3: only stages that tell her story, never a how-to-play
or an April Fools' joke: :func:`arklore.core.blocks.is_story`; 4: never across a scene cut;
5: her answer to the window's last line is kept)."""

WINDOW_LINES = 6
LEAD = 2
KINDS = frozenset({LineKind.DIALOGUE, LineKind.MULTILINE, LineKind.CHOICE,
                   LineKind.NARRATION, LineKind.SUBTITLE})  # fmt: skip
SPOKEN = frozenset({LineKind.DIALOGUE, LineKind.MULTILINE})

W_NAMED = 1.0
"""Boost for a window with every person the message names (a share of it for some)."""
W_DOCTOR = (0.0, 0.2, 0.4)
"""Boost by the Doctor's presence: absent, present, she talks to him."""
W_HERS = 0.15
"""Boost for a window that is mostly hers."""
W_RECORD = 0.5
"""Small talk: boost for a window of her own operator record (the story written about her)."""
W_CARRIES = 0.3
"""Small talk: boost for the stages where she says most (log scale, 1 for her biggest)."""
MIN_HER_TOKENS = 4
"""Words of her own (the tokenizer's: function words, greetings and punctuation dropped) a
window needs to show how she talks; a window where she only says ``......`` or ``嗯。`` is
picked only when no window of hers above this is left. On the real corpus 378 of 381
operators have at least 3 windows above it."""
MIN_HER_LINES = 3
"""Lines of hers a window needs to show her in a scene rather than others talking around
her (斯卡蒂 with one line while 歌蕾蒂娅 and 凯尔希 talk): a window with fewer, and fewer than
half its lines, comes after every window of hers with as many, before those where she says
almost nothing -- unless it holds a person the message names (asked about 乌尔比安, his
scene with her one line stays)."""
CACHE_OPERATORS = 64
"""Operators whose windows are held in memory (least recently used dropped)."""

Progress = Callable[[str, int, int], None]
Paths = dict[int, dict[int, frozenset[str]]]


@dataclass(frozen=True, slots=True)
class SceneLine:
    """One line of a scene as the store has it (``text`` verbatim, placeholders included)."""

    line_id: str
    kind: str
    speaker: str  # "" for narration; 博士 for the Doctor's choices
    text: str
    hers: bool
    option: str | None = None  # a choice: the option this scene takes

    def shown(self) -> str:
        """What the scene says on this line: the option taken, for a choice."""
        return self.option if self.option is not None else self.text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Scene:
    """A window of hers, read from the store, with why it was chosen."""

    id: int
    base_id: str
    stage_path: str
    order_rank: int | None
    lines: list[SceneLine]
    people: tuple[str, ...]
    doctor: int
    score: float = 0.0
    why: dict[str, float] = field(default_factory=dict)

    @property
    def line_ids(self) -> list[str]:
        return [ln.line_id for ln in self.lines]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stage_path": self.stage_path,
            "score": round(self.score, 4),
            "why": {k: round(v, 4) for k, v in self.why.items()},
            "doctor": self.doctor,
            "people": list(self.people),
            "lines": [ln.to_dict() for ln in self.lines],
        }


class _Window(NamedTuple):
    """A window as held in memory per operator (its lines are read when it is picked)."""

    id: int
    stage_path: str
    order_rank: int | None
    lines: str  # JSON [[line_id, kind, speaker, hers, option]]
    people: tuple[str, ...]
    doctor: int
    hers: int
    size: int


class StageTerms(NamedTuple):
    """A stage as memories rank it: its summary's tokens and the names in its lines."""

    tokens: list[str]
    people: frozenset[str]


@dataclass
class ScenesReport:
    """What a build did."""

    skipped: bool
    windows: int = 0
    operators: int = 0
    stages: int = 0
    seconds: float = 0.0
    built_for: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- windows ---------------------------------------------------------------------------------
def branch_paths(lines: Sequence[Line]) -> Paths:
    """line_no -> {Decision line_no: option values} of every Decision the line sits under,
    nested ones followed up to the top."""
    by_no = {ln.line_no: ln for ln in lines}
    out: Paths = {}
    for ln in lines:
        path: dict[int, frozenset[str]] = {}
        b = ln.branch
        while b is not None and b.decision_line_no not in path and len(path) < 32:
            path[b.decision_line_no] = frozenset(b.values)
            parent = by_no.get(b.decision_line_no)
            b = parent.branch if parent is not None else None
        out[ln.line_no] = path
    return out


def _merge(
    constraint: dict[int, frozenset[str]], path: dict[int, frozenset[str]]
) -> dict[int, frozenset[str]] | None:
    """The window's branch constraint with ``path`` added, None when they are alternatives."""
    out = dict(constraint)
    for d, values in path.items():
        have = out.get(d)
        if have is None:
            out[d] = values
        elif not (have & values):
            return None
        else:
            out[d] = have & values
    return out


def _joined(
    constraint: dict[int, frozenset[str]], ln: Line, scene: int, paths: Paths
) -> dict[int, frozenset[str]] | None:
    """The window's branch constraint with ``ln`` in the window, None when ``ln`` is across a
    scene cut or on an alternative branch."""
    if ln.scene != scene:
        return None
    return _merge(constraint, paths.get(ln.line_no, {}))


def windows(
    lines: Sequence[Line], hers: Callable[[Line], bool], paths: Paths
) -> list[tuple[list[Line], dict[int, frozenset[str]]]]:
    """Her windows in one stage's ``lines`` (see the module doc), each with its branch
    constraint (Decision line_no -> the option values it stays in)."""
    seq = [ln for ln in lines if ln.kind in KINDS and ln.text.strip()]
    out: list[tuple[list[Line], dict[int, frozenset[str]]]] = []
    covered = -1
    for h, line in enumerate(seq):
        if h <= covered or not hers(line):
            continue
        constraint = dict(paths.get(line.line_no, {}))
        start = h
        while start - 1 > covered and h - (start - 1) <= LEAD:
            merged = _joined(constraint, seq[start - 1], line.scene, paths)
            if merged is None:
                break
            constraint, start = merged, start - 1
        end = h
        while end + 1 < len(seq) and end + 1 - start < WINDOW_LINES:
            merged = _joined(constraint, seq[end + 1], line.scene, paths)
            if merged is None:
                break
            constraint, end = merged, end + 1
        # a window that stops on somebody else's line (the Doctor's choice) when her answer
        # comes next takes that answer too: one line past the cap
        if end + 1 < len(seq) and not hers(seq[end]) and hers(seq[end + 1]):
            merged = _joined(constraint, seq[end + 1], line.scene, paths)
            if merged is not None:
                constraint, end = merged, end + 1
        out.append((seq[start : end + 1], constraint))
        covered = end
    return out


def choice_option(line: Line, constraint: dict[int, frozenset[str]]) -> str:
    """The option of a choice line this window takes: the first whose value the window's
    lines stay in, else the first option (the options lead to the same lines)."""
    options = list(line.options) or line.text.split(";")
    taken = constraint.get(line.line_no)
    if taken and line.option_values:
        for opt, value in zip(options, line.option_values, strict=False):
            if value in taken:
                return opt
    return options[0] if options else line.text


# -- the index -------------------------------------------------------------------------------
@dataclass
class _Entry:
    built_for: str
    windows: list[_Window]
    bm25: BM25
    her_tokens: list[list[str]]  # each window's tokens of her lines
    says_little: np.ndarray  # 1 where her lines hold fewer than MIN_HER_TOKENS words
    few: np.ndarray  # 1 where she has fewer than MIN_HER_LINES lines, under half of them
    prior: np.ndarray  # each window's Doctor and her-share boosts
    people: dict[str, list[int]]  # who -> the windows they speak or are named in
    stages: dict[str, list[int]]  # stage -> her windows there


class ExemplarIndex:
    """Her scene windows in the store: build them for every operator, rank hers per turn."""

    def __init__(
        self,
        store: Callable[[], Store],
        state: Callable[[], str],
        tokenizer: Callable[[], Tokenizer],
    ) -> None:
        self._store = store
        self._state = state
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    # -- state -------------------------------------------------------------------------------
    def wanted(self) -> str:
        """What windows built now would be computed from: the rule and the names state."""
        return f"{VERSION}:{self._state()}"

    def built_for(self) -> str | None:
        row = (
            self._store()
            .conn.execute("SELECT value FROM scene_meta WHERE key = 'built_for'")
            .fetchone()
        )
        return row[0] if row else None

    def fresh(self) -> bool:
        return self.built_for() == self.wanted()

    # -- building ----------------------------------------------------------------------------
    def build(
        self,
        *,
        speaker_ids: dict[str, str],
        base_of: Callable[[str], str],
        mentioned: Callable[[str], list[str]],
        force: bool = False,
        progress: Progress | None = None,
        workers: int = 1,
    ) -> ScenesReport:
        """Every operator's windows, computed in memory then replacing the stored ones in one
        short transaction (readers and other writers are not held up meanwhile); skipped
        when they were built from the same names state (unless ``force``). ``speaker_ids``:
        corpus speaker -> operator id; ``base_of``: operator id -> her base form's id;
        ``mentioned``: text -> the operator ids it names (picklable when ``workers`` > 1: the
        stages are then computed in that many processes when there are many of them, with the
        same rows in the same order)."""
        wanted = self.wanted()
        if not force and self.built_for() == wanted:
            return ScenesReport(True, built_for=wanted)
        t0 = time.perf_counter()
        store = self._store()
        person = {sp: base_of(cid) for sp, cid in speaker_ids.items()}
        infos = store.stage_infos()
        spoken_in = {path for path, _, _ in store.speaker_stage_counts(list(person))}
        report = ScenesReport(False, built_for=wanted)
        terms: list[tuple[str, str, str]] = []
        rows: list[tuple[Any, ...]] = []
        work = _StageWork(store.path, self._tokenizer(), person, mentioned, store)
        tasks = [
            (info, info.stage_path in spoken_in and is_story(info.stage_path)) for info in infos
        ]
        # computed first (in worker processes when there are many stages): the write is short
        for n, (term, found) in enumerate(_computed(work, tasks, workers)):
            terms.append(term)
            rows += found
            report.stages += bool(found)
            if progress and n % 20 == 0:
                progress("scenes", n, len(infos))
        with store.transaction() as c:
            c.execute("DELETE FROM scene_windows")
            c.execute("DELETE FROM stage_terms")
            c.executemany("INSERT INTO stage_terms VALUES (?, ?, ?)", terms)
            c.executemany(
                "INSERT INTO scene_windows (base_id, stage_path, first_line, last_line,"
                " order_rank, lines, tokens, her_tokens, people, doctor, hers, size)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            c.execute(
                "INSERT OR REPLACE INTO scene_meta (key, value) VALUES ('built_for', ?)", (wanted,)
            )
        report.windows = len(rows)
        operators = {r[0] for r in rows}
        if progress:
            progress("scenes", len(infos), len(infos))
        self.clear()
        report.operators = len(operators)
        report.seconds = round(time.perf_counter() - t0, 2)
        return report

    # -- reading -----------------------------------------------------------------------------
    def _entry(self, base: str) -> _Entry | None:
        built = self.built_for()
        if built is None:
            return None
        with self._lock:
            entry = self._entries.get(base)
            if entry is not None and entry.built_for == built:
                self._entries.move_to_end(base)
                return entry
        conn = self._store().conn
        rows = conn.execute(
            "SELECT id, stage_path, order_rank, lines, tokens, her_tokens, people, doctor, hers,"
            " size FROM scene_windows WHERE base_id = ?"
            " ORDER BY coalesce(order_rank, 1 << 62), stage_path, first_line",
            (base,),
        ).fetchall()
        wins = [
            _Window(wid, path, rank, lines, tuple(orjson.loads(people)), doctor, hers, size)
            for wid, path, rank, lines, _, _, people, doctor, hers, size in rows
        ]
        prior = np.array(
            [W_DOCTOR[w.doctor] + W_HERS * w.hers / max(1, w.size) for w in wins], dtype=np.float64
        )
        people: dict[str, list[int]] = {}
        stages: dict[str, list[int]] = {}
        for i, w in enumerate(wins):
            stages.setdefault(w.stage_path, []).append(i)
            for p in w.people:
                people.setdefault(p, []).append(i)
        her_tokens = [r[5].split() for r in rows]
        entry = _Entry(
            built,
            wins,
            BM25([r[4].split() for r in rows]),
            her_tokens,
            np.array([len(t) < MIN_HER_TOKENS for t in her_tokens], dtype=np.int8),
            np.array([w.hers < MIN_HER_LINES and 2 * w.hers < w.size for w in wins], dtype=np.int8),
            prior,
            people,
            stages,
        )
        with self._lock:
            self._entries[base] = entry
            while len(self._entries) > CACHE_OPERATORS:
                self._entries.popitem(last=False)
        return entry

    def _scenes(
        self, base: str, picked: Iterable[tuple[_Window, float, dict[str, float]]]
    ) -> list[Scene]:
        """The picked windows with their lines read from the store (a window whose lines the
        store no longer holds is left out: a scene is shown verbatim or not at all)."""
        picked = list(picked)
        specs = [orjson.loads(w.lines) for w, _, _ in picked]
        held = self._store().lines_by_id({x[0] for spec in specs for x in spec})
        out: list[Scene] = []
        for (w, score, why), spec in zip(picked, specs, strict=True):
            if any(x[0] not in held for x in spec):
                continue
            lines = [SceneLine(lid, kind, speaker, held[lid][1], bool(hers), option)
                     for lid, kind, speaker, hers, option in spec]  # fmt: skip
            out.append(Scene(w.id, base, w.stage_path, w.order_rank, lines, w.people, w.doctor,
                             score, why))  # fmt: skip
        return out

    def count(self, family: Sequence[str]) -> int:
        """How many windows she has (0 when none, or when the index was never built)."""
        entry = self._entry(family[0]) if family else None
        return len(entry.windows) if entry else 0

    def search(
        self,
        family: Sequence[str],
        message: str,
        named: Sequence[str] = (),
        k: int = 3,
        knows: Callable[[str], bool] | None = None,
    ) -> list[Scene]:
        """Her ``k`` best windows for ``message`` (one per stage), best first; ``named``: the
        graph nodes the message names (operator base ids, ``npc:<name>``); ``knows``: the
        stages a chat set at a story point knows (the others are never picked)."""
        entry = self._entry(family[0]) if family else None
        if entry is None or not entry.windows or k <= 0:
            return []
        n = len(entry.windows)
        lexical = np.zeros(n)
        words = topic_words(self._tokenizer().query(render_nickname(message)))
        for i, v in entry.bm25.scores(words).items():
            lexical[i] = v
        if lexical.max() > 0:
            lexical /= lexical.max()
        people = [p for p in dict.fromkeys(named) if p not in family]
        shared = np.zeros(n)
        for p in people:
            shared[entry.people.get(p, [])] += W_NAMED / len(people)
        # small talk (no word of a topic, nobody named): her signature scenes
        signature = _signature(entry, family) if not words and not people else np.zeros(n)
        total = lexical + shared + entry.prior + signature
        picked: list[tuple[_Window, float, dict[str, float]]] = []
        stages: set[str] = set()
        tier = 2 * entry.says_little + entry.few * (shared == 0)
        for i in np.lexsort((np.arange(n), -np.round(total, 9), tier)):
            w = entry.windows[i]
            if w.stage_path in stages or (knows is not None and not knows(w.stage_path)):
                continue
            stages.add(w.stage_path)
            why = {
                "lexical": float(lexical[i]),
                "named": float(shared[i]),
                "doctor": W_DOCTOR[w.doctor],
                "hers": float(entry.prior[i] - W_DOCTOR[w.doctor]),
                "signature": float(signature[i]),
            }
            picked.append((w, float(total[i]), why))
            if len(picked) == k:
                break
        return self._scenes(family[0], picked)

    def doctor_stages(self, family: Sequence[str]) -> dict[str, int]:
        """Per stage of hers, the Doctor's presence in her windows there (0 absent, 1
        present, 2 she talks to him), the most of any window."""
        entry = self._entry(family[0]) if family else None
        out: dict[str, int] = {}
        if entry is not None:
            for w in entry.windows:
                out[w.stage_path] = max(out.get(w.stage_path, 0), w.doctor)
        return out

    def her_tokens(self, family: Sequence[str]) -> dict[str, list[str]]:
        """The tokens of her lines by stage (from her windows)."""
        entry = self._entry(family[0]) if family else None
        out: dict[str, list[str]] = {}
        if entry is not None:
            for w, toks in zip(entry.windows, entry.her_tokens, strict=True):
                out.setdefault(w.stage_path, []).extend(toks)
        return out

    def her_lines(
        self, family: Sequence[str], stage_paths: Iterable[str]
    ) -> dict[str, list[SceneLine]]:
        """Her lines in each of ``stage_paths``, in line order, once each, read from the store
        (one query; a line it no longer holds is left out)."""
        entry = self._entry(family[0]) if family else None
        specs: dict[str, dict[str, list[Any]]] = {}
        for path in dict.fromkeys(stage_paths):
            specs[path] = {}
            if entry is None:
                continue
            for i in entry.stages.get(path, []):
                for x in orjson.loads(entry.windows[i].lines):
                    if x[3]:
                        specs[path][x[0]] = x
        held = self._store().lines_by_id({lid for spec in specs.values() for lid in spec})
        return {
            path: [SceneLine(lid, kind, speaker, held[lid][1], True, option)
                   for lid, kind, speaker, _, option in spec.values() if lid in held]
            for path, spec in specs.items()
        }  # fmt: skip

    def stage_terms(self, stage_paths: Iterable[str]) -> dict[str, StageTerms]:
        """Per stage: the tokens of its name and official summary, and the names that speak
        or are written in its lines."""
        paths = sorted(set(stage_paths))
        out: dict[str, StageTerms] = {}
        conn = self._store().conn
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            rows = conn.execute(
                f"SELECT stage_path, tokens, people FROM stage_terms WHERE stage_path IN"
                f" ({','.join('?' * len(chunk))})",
                chunk,
            )
            out.update({p: StageTerms(t.split(), frozenset(orjson.loads(pp))) for p, t, pp in rows})
        return out

    def tokenizer(self) -> Tokenizer:
        return self._tokenizer()


PARALLEL_FROM = 200
"""Stages from which a build computes them in worker processes (fewer: in this process)."""
BATCH = 16
"""Stages per worker task: large enough to amortize the pickling, small enough to balance."""

_Computed = tuple[tuple[str, str, str], list[tuple[Any, ...]]]  # (stage_terms row, window rows)


class _StageWork:
    """What computing a stage's terms and windows needs; pickled into each worker process as
    the path of the store (opened there) and the tokenizer's words."""

    def __init__(
        self,
        db: Path,
        tok: Tokenizer,
        person: dict[str, str],
        mentioned: Callable[[str], list[str]],
        store: Store | None = None,
    ) -> None:
        self.db, self.tok, self.person, self.mentioned = db, tok, person, mentioned
        self._store = store

    def __getstate__(self) -> tuple[Any, ...]:
        return self.db, self.tok, self.person, self.mentioned

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.db, self.tok, self.person, self.mentioned = state
        self._store = None

    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.db, create=False)
        return self._store

    def stage(self, info: StageInfo, windows_too: bool) -> _Computed:
        """A stage's ``stage_terms`` row, and its windows' rows when ``windows_too``."""
        lines = self.store().lines(info.stage_path)
        summary = self.tok.tokens(_stage_text(info.story_name, info.story_info))
        names = {ln.line_no: self.tok.names(ln.text) for ln in lines}  # read once per line
        term = (info.stage_path, " ".join(summary),
                orjson.dumps(_names_in(lines, names)).decode())  # fmt: skip
        if not windows_too:
            return term, []
        rows = _stage_rows(lines, info.order_rank, self.person, self.mentioned, self.tok, names)
        return term, rows


_WORK: _StageWork | None = None  # a worker process's (set by _start_worker)


def _start_worker(work: _StageWork) -> None:
    """A scenes worker (:func:`~arklore.base.workers.spawn_pool`) holds its work."""
    global _WORK
    _WORK = work


def _compute_batch(tasks: list[tuple[StageInfo, bool]]) -> list[_Computed]:
    assert _WORK is not None, "a scenes worker is started with its work"
    return [_WORK.stage(info, windows_too) for info, windows_too in tasks]


def _computed(
    work: _StageWork, tasks: list[tuple[StageInfo, bool]], workers: int
) -> Iterator[_Computed]:
    """Each task's result, in order: in ``workers`` processes (:func:`spawn_pool`) when there
    are many tasks, else here."""
    if workers <= 1 or len(tasks) < PARALLEL_FROM:
        for info, windows_too in tasks:
            yield work.stage(info, windows_too)
        return
    batches = [tasks[i : i + BATCH] for i in range(0, len(tasks), BATCH)]
    with spawn_pool(min(workers, len(batches)), _start_worker, (work,)) as pool:
        try:
            for result in pool.map(_compute_batch, batches):
                yield from result
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def _shown_speaker(ln: Line) -> str:
    """The speaker a scene shows: the story's own label where it marks the speaker uncertain
    (``塔露拉？``: Koschei speaking through her body), never passed off as that person."""
    return ln.speaker_raw.strip() if ln.uncertain and ln.speaker_raw else ln.speaker


def _stage_text(name: str | None, summary: str | None) -> str:
    return "\n".join(x for x in (name, summary) if x)


def _names_in(lines: Iterable[Line], names: dict[int, list[str]]) -> list[str]:
    """Who is in a stage: every speaker, and every name the tokenizer keeps written there
    (``names``: line_no -> the names :meth:`Tokenizer.names` finds in its text)."""
    out: dict[str, None] = {}
    for ln in lines:
        if ln.speaker and ln.kind is not LineKind.CHOICE:
            out[ln.speaker] = None
        for name in names[ln.line_no]:
            out[name] = None
    return list(out)


def _people_named(
    ln: Line, person: dict[str, str], mentioned: Callable[[str], list[str]], names: list[str]
) -> list[str]:
    """Who a line shows: its speaker and the people it names (operators by the mention
    matcher; anyone by a name the tokenizer keeps), as graph nodes (an operator's base id,
    else ``npc:<name>``); the Doctor is not a person here."""
    if ln.kind is LineKind.CHOICE:
        return []
    out: dict[str, None] = {}
    if ln.speaker and not is_doctor(ln.speaker):
        out[person.get(ln.speaker, f"npc:{ln.speaker}")] = None
    out.update(dict.fromkeys(mentioned(ln.text)))
    for name in names:  # the names the tokenizer keeps written in the line
        if not is_doctor(name):
            out[person.get(name, f"npc:{name}")] = None
    return list(out)


def _stage_rows(
    lines: list[Line],
    order_rank: int | None,
    person: dict[str, str],
    mentioned: Callable[[str], list[str]],
    tok: Tokenizer,
    names: dict[int, list[str]],
) -> list[tuple[Any, ...]]:
    """The rows of every operator's windows in one stage (``names``: line_no -> the names the
    tokenizer keeps written in it)."""
    paths = branch_paths(lines)
    bases = sorted(
        {person[ln.speaker] for ln in lines
         if ln.kind in SPOKEN and not ln.uncertain and ln.speaker in person}
    )  # fmt: skip
    tokens: dict[tuple[int, str | None], str] = {}
    named: dict[int, list[str]] = {}
    rows: list[tuple[Any, ...]] = []
    for base in bases:

        def hers(ln: Line, base: str = base) -> bool:
            return ln.kind in SPOKEN and not ln.uncertain and person.get(ln.speaker) == base

        for win, constraint in windows(lines, hers, paths):
            data: list[list[Any]] = []
            toks: list[str] = []
            people: dict[str, None] = {}
            doctor = 0
            for ln in win:
                option = choice_option(ln, constraint) if ln.kind is LineKind.CHOICE else None
                key = (ln.line_no, option)
                if key not in tokens:
                    tokens[key] = " ".join(tok.tokens(render_nickname(option or ln.text)))
                if ln.line_no not in named:
                    named[ln.line_no] = _people_named(ln, person, mentioned, names[ln.line_no])
                is_hers = hers(ln)
                data.append([ln.line_id, str(ln.kind), _shown_speaker(ln), int(is_hers), option])
                toks.append(tokens[key])
                people.update(dict.fromkeys(named[ln.line_no]))
                signal = doctor_signal(ln) or ("speaks" if is_doctor(ln.speaker) else None)
                if signal:
                    doctor = max(doctor, 2 if is_hers and signal == "nickname" else 1)
            people.pop(base, None)
            rows.append((
                base, win[0].stage_path, win[0].line_no, win[-1].line_no, order_rank,
                orjson.dumps(data).decode(), " ".join(t for t in toks if t),
                " ".join(t for d, t in zip(data, toks, strict=True) if d[3] and t),
                orjson.dumps(list(people)).decode(), doctor, sum(d[3] for d in data), len(data),
            ))  # fmt: skip
    return rows


def _signature(entry: _Entry, family: Sequence[str]) -> np.ndarray:
    """Each window's boost for small talk: her own records (:data:`W_RECORD`), then the stages
    where she says most (:data:`W_CARRIES`, log scale): with the Doctor's boost already in the
    prior, her signature scenes."""
    said = {path: sum(entry.windows[i].hers for i in idx) for path, idx in entry.stages.items()}
    most = max((math.log1p(v) for v in said.values()), default=0.0) or 1.0
    return np.array(
        [
            (W_RECORD if is_own_record(w.stage_path, family) else 0.0)
            + W_CARRIES * math.log1p(said[w.stage_path]) / most
            for w in entry.windows
        ],
        dtype=np.float64,
    )
