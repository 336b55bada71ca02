"""The one place profiles read the store and the excel tables (repoint it here, nowhere else).

Everything else in :mod:`arklore.profiles` takes plain values: :class:`~.archive.Tables`,
lists of :class:`~.quotes.StoryLine`, :class:`~arklore.core.operators.Operator` records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from arklore.core.blocks import is_story
from arklore.core.operators import Operator
from arklore.corpus.store import Store
from arklore.graph.model import RelationGraph
from arklore.names.build import load_operators as _load_operators
from arklore.names.build import speaker_ids
from arklore.profiles.archive import CHARACTER, CHARWORD, HANDBOOK, TEAM, Tables
from arklore.profiles.inputs import OperatorInputs, gather, voice_unlocks
from arklore.profiles.quotes import QuoteSource, StoryLine, voice_index
from arklore.rag.docs import RelationDoc
from arklore.sources.gamedata import read_table

MAX_RAW_CHARS = 400
"""Story lines longer than this (raw) are never quote candidates; not loaded."""


def load_tables(excel_root: Path | None) -> Tables:
    """The four tables profiles read; a missing file (or no excel root) is ``None``."""
    if excel_root is None:
        return Tables()
    return Tables(
        handbook_info=read_table(excel_root, HANDBOOK),
        character=read_table(excel_root, CHARACTER),
        charword=read_table(excel_root, CHARWORD),
        handbook_team=read_table(excel_root, TEAM),
    )


def load_operators(store: Store) -> list[Operator]:
    """Every operator of the registry the store holds, by char id."""
    return _load_operators(store)


def _label(code: str | None, tag: str | None, name: str | None) -> str:
    return " ".join(p for p in (code, name, tag) if p)


def story_lines(store: Store, char_ids: Iterable[str] | None = None) -> dict[str, list[StoryLine]]:
    """Dialogue lines of the primary corpus whose speaker resolves to an operator (the names
    layer's speaker ids), by that operator, in story order. Lines whose speaker is written
    with a question mark (uncertain) are left out, and those of a stage that is not her story
    (a how-to-play, an April Fools' joke: :func:`~arklore.core.blocks.is_story`)."""
    ids = speaker_ids(store)
    if char_ids is not None:
        wanted = set(char_ids)
        ids = {sp: cid for sp, cid in ids.items() if cid in wanted}
    out: dict[str, list[StoryLine]] = {}
    for lid, path, no, order, speaker, text, info in store.dialogue_lines(
        list(ids), max_chars=MAX_RAW_CHARS
    ):
        if not is_story(path):
            continue
        cid = ids[speaker]
        label = _label(info.story_code, info.avg_tag, info.story_name)
        out.setdefault(cid, []).append(StoryLine(lid, path, no, order, speaker, cid, text, label))
    for lines in out.values():
        lines.sort(key=lambda s: (s.order, s.stage_path, s.line_no))
    return out


FORM_LINES_MIN = 20
"""Base-form lines an alternate form needs in the stages that show her in that form to quote
those alone (:func:`lines_for`)."""


def lines_for(
    op: Operator,
    by_operator: Mapping[str, Sequence[StoryLine]],
    form_stages: frozenset[str] = frozenset(),
) -> list[StoryLine]:
    """Her story lines: her own, and for an alternate form also her base form's (the same
    person, and newer forms rarely speak under their own name) -- only those in the stages
    that show her in this form (``form_stages``) when there are :data:`FORM_LINES_MIN` of
    them: 缄默德克萨斯 speaks in 叙拉古人, not in 2019's chapter 3."""
    out = list(by_operator.get(op.char_id, ()))
    if op.base_id and op.base_id != op.char_id:
        seen = {s.line_id for s in out}
        base = [s for s in by_operator.get(op.base_id, ()) if s.line_id not in seen]
        in_form = [s for s in base if s.stage_path in form_stages]
        out += in_form if len(in_form) >= FORM_LINES_MIN else base
    return out


def story_line_sources(store: Store, line_ids: Iterable[str]) -> dict[str, QuoteSource]:
    """``story:<line_id>`` -> the line's text and its speaker's operator, for the verbatim
    gate; ids the primary corpus no longer holds are simply absent."""
    ids = speaker_ids(store)
    return {
        f"story:{lid}": QuoteSource(text, ids.get(speaker))
        for lid, (speaker, text) in store.lines_by_id(line_ids).items()
    }


def operators_with_story_lines(store: Store) -> set[str]:
    """Operators some attributed dialogue line of the corpus is spoken by (cheap: speakers)."""
    counts = store.speaker_counts()
    return {cid for sp, cid in speaker_ids(store).items() if counts.get(sp)}


def operator_inputs(
    store: Store,
    tables: Tables,
    operators: Sequence[Operator],
    *,
    graph: RelationGraph | None = None,
    docs_by_operator: Mapping[str, Sequence[RelationDoc]] | None = None,
    display: Callable[[str], str] | None = None,
    form_stages: Callable[[str], frozenset[str]] | None = None,
) -> list[OperatorInputs]:
    """Every input of the distillation tasks for ``operators`` (in the order given): one
    pass over the voice table and one query for their story lines (and their base forms'),
    one for the stages the Doctor is in. ``display``: what a chat calls an operator (the names
    layer's display name), used in her profile's title and the tasks' prompts;
    ``form_stages``: the stages that show an alternate form (:func:`lines_for`)."""
    wanted = {o.char_id for o in operators} | {o.base_id for o in operators if o.base_id}
    lines = story_lines(store, wanted)
    voices = voice_index(tables.charword)
    unlocks = voice_unlocks(tables.charword)
    doctor_stages = frozenset(store.doctor_stages())
    docs = docs_by_operator or {}
    out = []
    for op in operators:
        mine = lines_for(op, lines, form_stages(op.char_id) if form_stages else frozenset())
        node = graph.resolve(op.char_id) if graph is not None else None
        inp = gather(
            op,
            tables,
            voice=voices.get(op.char_id, []),
            story=mine,
            unlocks=unlocks,
            relation_docs=docs.get(node or op.char_id, ()),
            graph=graph,
            doctor_stages=doctor_stages,
        )
        if display is not None:
            inp.display_name = display(op.char_id)
        out.append(inp)
    return out
