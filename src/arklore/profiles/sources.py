"""The one place profiles read the store and the excel tables (repoint it here, nowhere else).

Everything else in :mod:`arklore.profiles` takes plain values: :class:`~.archive.Tables`,
lists of :class:`~.quotes.StoryLine`, :class:`~arklore.core.operators.Operator` records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from arklore.core.blocks import is_guide, is_story
from arklore.core.operators import Operator
from arklore.core.vocatives import HONORIFICS, is_address
from arklore.corpus.lexical import Tokenizer
from arklore.corpus.store import SpokenLine, Store
from arklore.graph.model import RelationGraph
from arklore.names.build import load_operators as _load_operators
from arklore.names.build import speaker_ids
from arklore.names.facade import NamesFacade
from arklore.names.matcher import MentionMatcher
from arklore.profiles.archive import CHARACTER, CHARWORD, HANDBOOK, TEAM, Tables
from arklore.profiles.inputs import OperatorInputs, gather, voice_unlocks
from arklore.profiles.quotes import QuoteSource, StoryLine, voice_index
from arklore.profiles.speech import build_background, speech_facts
from arklore.profiles.temperament import Remark, has_word
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
    (a how-to-play, an April Fools' joke: :func:`~arklore.core.blocks.is_story`) -- unless
    she speaks in no story stage at all: then her lines of an April Fools' event are hers
    (主播U and 断罪者 speak only there; how they speak is in them). A how-to-play never is."""
    ids = speaker_ids(store)
    if char_ids is not None:
        wanted = set(char_ids)
        ids = {sp: cid for sp, cid in ids.items() if cid in wanted}
    out: dict[str, list[StoryLine]] = {}
    jokes: dict[str, list[StoryLine]] = {}
    for lid, path, no, order, speaker, text, info in store.dialogue_lines(
        list(ids), max_chars=MAX_RAW_CHARS
    ):
        if is_guide(path):
            continue
        cid = ids[speaker]
        label = _label(info.story_code, info.avg_tag, info.story_name)
        line = StoryLine(lid, path, no, order, speaker, cid, text, label)
        (out if is_story(path) else jokes).setdefault(cid, []).append(line)
    for cid, lines in jokes.items():
        out.setdefault(cid, lines)
    for lines in out.values():
        lines.sort(key=lambda s: (s.order, s.stage_path, s.line_no))
    return out


def remarks(
    store: Store,
    matcher: MentionMatcher,
    strangers: frozenset[str] = frozenset(),
    spoken: Iterable[SpokenLine] | None = None,
) -> dict[str, list[Remark]]:
    """What the story's people say of each operator or to her, for ``## 我·性格``
    (:mod:`arklore.profiles.temperament`): every attributed dialogue line of a story stage
    with a temperament word, by the operator it names (the names layer's ``matcher``: an
    ambiguous name names nobody, nor does a ``[[stranger]]`` one) or is said to -- her name
    called (:func:`~arklore.core.vocatives.is_address`), or, for a line with 你 that calls
    nobody, hers the line it answers (:func:`_replying_to`). Never her own lines; keyed by
    the id the matcher resolves (an alternate form's remarks are her base form's too:
    :func:`remarks_for`). One pass over the corpus (8 s on the real one; ``spoken``: its
    spoken lines when a caller has read them already)."""
    ids = speaker_ids(store)
    read = store.spoken_lines() if spoken is None else spoken
    spoken = [ln for ln in read if ln.kind == "dialogue" and is_story(ln.stage_path)]
    found: list[tuple[str, SpokenLine, tuple[str, ...], bool]] = []
    for i, ln in enumerate(spoken):
        if ln.uncertain or not has_word(ln.text):
            continue
        me = ids.get(ln.speaker)
        named: dict[str, list[str]] = {}
        called: set[str] = set()
        for m in matcher.find(ln.text):
            if m.char_id is None or m.char_id == me or m.surface in strangers:
                continue
            if len(m.surface) == 1 and not _name_ends(ln.text, m.end):
                continue  # 芬恩导师 is not 芬
            if is_address(ln.text, m.start, m.end):
                called.add(m.char_id)
            else:
                named.setdefault(m.char_id, []).append(m.surface)
        if "你" in ln.text and not called:
            to = _replying_to(spoken, i)
            if to is not None and ids.get(to.speaker) not in (None, me):
                called.add(ids[to.speaker])
        for cid in sorted(set(named) | called):
            found.append((cid, ln, tuple(dict.fromkeys(named.get(cid, ()))), cid in called))
    infos = {i.stage_path: i for i in store.stage_infos({ln.stage_path for _, ln, _, _ in found})}
    out: dict[str, list[Remark]] = {}
    for cid, ln, names, to_her in found:
        info = infos.get(ln.stage_path)
        label = _label(info.story_code, info.avg_tag, info.story_name) if info else ""
        line = StoryLine(
            ln.line_id, ln.stage_path, ln.line_no, (info.order_rank or 0) if info else 0,
            ln.speaker, ids.get(ln.speaker, ""), ln.text, label,
        )  # fmt: skip
        out.setdefault(cid, []).append(Remark(line, names, to_her))
    return out


_AFTER_NAME = frozenset(
    "的是很也就在说还总都和与跟对把被会要能才却又呢吧啊呀嘛了真这那刚已不没正可太最从再更"
)


def _name_ends(text: str, end: int) -> bool:
    """Does a one-character name end at ``text[end]``: what follows is no more of a name (a
    word that goes on after a name, a title, a mark, the end), not 芬恩导师's 恩?"""
    rest = text[end:]
    if not rest or not ("\u4e00" <= rest[0] <= "\u9fff") or rest[0] in _AFTER_NAME:
        return True
    return rest.startswith(HONORIFICS)


def _replying_to(spoken: Sequence[SpokenLine], i: int) -> SpokenLine | None:
    """The line ``spoken[i]`` answers: the last one before it in its stage by somebody else
    (none when that speaker is uncertain), else, when it opens the stage's talk, the first one
    after it by somebody else."""
    me = spoken[i].speaker
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(spoken) and spoken[j].stage_path == spoken[i].stage_path:
            if spoken[j].speaker != me:
                return None if spoken[j].uncertain else spoken[j]
            j += step
    return None


def remarks_for(op: Operator, by_operator: Mapping[str, Sequence[Remark]]) -> list[Remark]:
    """Her remarks: those about her and, for an alternate form, about her base form (the same
    person), never one she speaks herself."""
    family = {op.char_id, op.base_id} - {None, ""}
    out = [
        r
        for cid in dict.fromkeys([op.char_id, op.base_id])
        if cid
        for r in by_operator.get(cid, ())
    ]
    return [r for r in out if r.line.char_id not in family]


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


def remarks_into(
    store: Store,
    inputs: Sequence[OperatorInputs],
    names: NamesFacade,
    spoken: Iterable[SpokenLine] | None = None,
) -> None:
    """What others say of each of ``inputs`` (:func:`remarks`, :func:`remarks_for`), set as
    ``inp.remarks``: one pass over the corpus, with the names layer's matcher."""
    if not inputs:
        return
    by_operator = remarks(store, names.matcher(), names.strangers(), spoken)
    for inp in inputs:
        inp.remarks = remarks_for(inp.op, by_operator)


def speech_facts_for(
    store: Store,
    inputs: Sequence[OperatorInputs],
    names: NamesFacade,
    tokenizer: Tokenizer,
    spoken: Iterable[SpokenLine] | None = None,
) -> None:
    """Her way of speaking (:mod:`arklore.profiles.speech`) for each of ``inputs``, set as
    ``inp.speech``: one background of the whole corpus (every spoken line, ``spoken`` when a
    caller has read them already, else read here; ~15 s on the real corpus, 4 of them
    reading it), then each operator's facts against it (~3 s for all 452). The names layer
    gives every name each person goes by (a base form's, for her forms too), the alias
    table's and the speaker labels (never an expression, never a form of address), and who a
    speaker is."""
    if not inputs:
        return
    ops = names.operators()
    names_of = {
        o.char_id: names.known_as(names.family(o.char_id))
        for o in ops
        if not o.base_id or o.base_id == o.char_id
    }
    people = [*names.aliases().surfaces(), *store.speaker_counts()]
    bg = build_background(
        store.spoken_lines() if spoken is None else spoken,
        tokenizer=tokenizer,
        speaker_ids=speaker_ids(store),
        names_of=names_of,
        people=people,
        display=names.display_name,
    )
    for inp in inputs:
        forms = [c for c in (inp.char_id, inp.op.base_id) if c]
        base = forms[-1]
        inp.speech = speech_facts(
            inp.voice,
            inp.story,
            bg,
            name=inp.name,
            char_ids=forms,
            names=names_of.get(base) or names.known_as(names.family(inp.char_id)),
            plain={inp.op.name, names.display_name(base)},
            tokenizer=tokenizer,
        )
