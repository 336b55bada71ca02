"""Relation text from what the corpus proves (no model): the ``evidence`` describer.

Built from :class:`arklore.graph.evidence.PairFacts`, for a role-play model to use: how A
addresses B, one representative exchange of theirs quoted verbatim (at most two lines, the
player's placeholder rendered), and the event where they talk most. The numbers (how often
each form, turns, shared stages, who says more) go to the document's metadata
(:func:`fact_counts`), never its text: "A称B为…（N次）…（a句对b句）" told a model nothing it
could act on. Also renders the exchanges a model is shown for the LLM describer
(:mod:`arklore.rag.describe`), capped in tokens.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.core.model import OPTION_SEP
from arklore.core.predicates import OTHER
from arklore.core.text import render_nickname, stance, substance
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.graph.evidence import PairFacts
from arklore.graph.interaction import ScanLine
from arklore.graph.model import INTERACTION, Edge

MIN_CHARS, MAX_CHARS = 10, 200
"""Length bounds of every relation document (:mod:`arklore.rag.docs` uses these)."""
EVIDENCE_IDS_CAP = 6
"""Line ids a document keeps: the representative exchange first, then the edge's own."""


# role B plays for A, by predicate; directed predicates (subject -> object) split by side.
_ROLE_UNDIRECTED = {
    "近亲": "至亲",
    "远亲": "远亲",
    "恋人": "恋人",
    "同事": "同事",
    "战友": "并肩作战的战友",
    "合作": "合作伙伴",
    "朋友": "朋友",
    "竞争": "竞争对手",
    "敌对": "敌人",
}
# A is the subject of the directed predicate: the role B plays for A
_ROLE_AS_SUBJECT = {
    "监护": "自己抚养照看的人",
    "师徒": "自己的学生",
    "上下级": "自己的下属",
    "主仆": "自己的侍从",
    "委托": "受自己委托办事的人",
    "恩人": "受过自己恩惠的人",
}


def role_phrase(predicate: str) -> str | None:
    """How A sees B for edge ``A -> B`` with ``predicate`` (None: no role to name)."""
    return _ROLE_UNDIRECTED.get(predicate) or _ROLE_AS_SUBJECT.get(predicate)


def relation_sentence(predicate: str, a: str, b: str) -> str:
    """The predicate as a clause of A's view: ``A视B为并肩作战的战友``, ``A与B彼此相识``."""
    role = role_phrase(predicate)
    if role:
        return f"{a}视{b}为{role}"
    if predicate == "相识":
        return f"{a}与{b}彼此相识"
    if predicate == INTERACTION:
        return f"{a}与{b}在故事中常有交集"
    if predicate == OTHER:
        return f"{a}与{b}关系匪浅"
    return f"{a}与{b}的关系：{predicate}"


def fit_sentences(sentences: list[str]) -> str:
    """The sentences joined with 。, the last ones dropped until it fits ``MAX_CHARS`` (the
    first one cut when alone)."""
    kept = list(sentences)
    text = "。".join(kept) + "。"
    while len(text) > MAX_CHARS and len(kept) > 1:
        kept.pop()
        text = "。".join(kept) + "。"
    return text[:MAX_CHARS]


SECOND_FORM_MIN = 2
"""Times A must use a form besides the most used one for it to be shown: said once, it is an
aside (斑点's one mocking 月见夜哥哥, echoing 泡普卡), not how A addresses B."""


def address_clause(f: PairFacts, *, most: int = 2, name: str = "") -> str:
    """How A calls B, the forms as written, most used first: ``“凯尔希医生”“凯尔希”`` ('' when
    A never calls B by name, or only by ``name``, B's name as the text already writes it:
    ``芬称米格鲁为“米格鲁”`` says nothing). How often goes to the document's metadata
    (:func:`fact_counts`)."""
    shown = [form for i, (form, n) in enumerate(f.forms[:most]) if i == 0 or n >= SECOND_FORM_MIN]
    said = [render_nickname(form) for form in shown]
    if all(x == name for x in said):
        return ""
    return "".join(f"“{x}”" for x in said)


def vocative_clause(a: str, b: str, f: PairFacts, *, most: int = 2) -> str:
    """``阿米娅称凯尔希为“凯尔希医生”“凯尔希”`` ('' when A never does, or only as ``b``)."""
    said = address_clause(f, most=most, name=b)
    return f"{a}称{b}为{said}" if said else ""


EXCHANGE_MIN = 6
"""Distinct characters of substance (letters, digits, CJK) an exchange shown in a document
needs."""
LINE_MIN = 2
"""... and each line of it: a bare ``……？`` or a pant (``哈……哈……``) is left out of the
exchange (her line alone is quoted), never shown as what the other said."""
LINE_RICH = 5
"""A line with this many distinct characters of substance besides the pair's names is a
sentence, not a cry or a name called out (``斯卡蒂——``, ``......Mon3tr。``): exchanges where her
own line is one are quoted first (the other's answer may be short: ``客气。``)."""
LINE_SOFT = 45
"""Characters a quoted line should not exceed: a long speech crowds the relations block, so
it is quoted only when the pair has no exchange of shorter lines."""
_ASIDE = re.compile(r"^[（(][^（()）]*[）)]$")
"""A line that is all in brackets: a stage direction (``（在书架间缓缓走动）``, ``（轻微的
鼾声）``) or a thought, said to nobody; never quoted as what one said to the other."""

FEW_STAGES, FEW_TURNS = 5, 10
"""A pair that shares fewer stages and turns than these has little contact (``交集不多``);
one that shares more is not called so, however seldom A says B's name (斯卡蒂 calls her
captain 乌尔比安 队长, in 19 shared stages)."""


def little_contact(f: PairFacts | None) -> bool:
    """Whether the corpus shows little contact between the pair (:data:`FEW_STAGES`)."""
    return f is None or (f.shared_stages < FEW_STAGES and f.turns < FEW_TURNS)


def _said(ln: ScanLine) -> str:
    return _said_text(ln.text)


@functools.lru_cache(maxsize=1 << 16)  # a line is shown many times over its pair's candidates
def _said_text(text: str) -> str:
    return render_nickname(" ".join(text.split()))


def render_exchange(lines: list[ScanLine], name: Callable[[str | None], str]) -> str:
    """An exchange as a document shows it: ``陈：「……」星熊：「……」`` (verbatim, the player's
    placeholder rendered as 博士)."""
    return "".join(f"{name(ln.node)}：「{_said(ln)}」" for ln in lines)


def _said_for_sure(ln: ScanLine) -> bool:
    """A dialogue line, or the Doctor's choice when it offers one option only."""
    return ln.dialogue or OPTION_SEP not in ln.text


def _exchange_candidates(f: PairFacts) -> list[list[ScanLine]]:
    """Exchanges that show the pair, best first: A calling B by name with the line around it
    (B's answer, else what B said before), in the stages where they talk most; then the other
    turns between them by stage rank, those A opens first (her view: what she says to B);
    then A's lines calling B alone; within each, an exchange of both where A says how she
    stands (:func:`arklore.core.text.stance`) before the stage ranks (a blind judge preferred
    the texts for 28 of 30 pairs). An exchange A opens with a line that answers somebody
    else (:attr:`~arklore.graph.evidence.PairFacts.answering`) and does not call B comes after
    all of those: shown as A then B, it reads as said to B. A line that says nothing
    (:data:`LINE_MIN`) is dropped from its exchange, and so is a line of A's that calls only
    somebody else by name (:attr:`~arklore.graph.evidence.PairFacts.to_others`: 乌尔比安's 别这么
    着急，歌蕾蒂娅 after 斯卡蒂's 队长？！ is not his view of her; B's such line stays, it is what
    A answers, and a blind judge preferred the texts with it), and the Doctor's choice: its
    options are what the player may pick, not what he said (灰喉 was shown 博士：「所以你更要做些
    什么了。;......;那你现在参与行动，真的好吗？」), unless it offers one. An exchange left with B
    alone is no view of A's."""
    rank = {stage: i for i, (stage, _) in enumerate(f.stage_turns)}
    far = len(rank)
    voc = {id(ln) for ln in f.vocative_lines}
    out: list[tuple[tuple[bool, int, bool, int, int], list[ScanLine]]] = []
    for i, (prev, cur) in enumerate(f.exchanges):
        lines = [
            ln
            for ln in (prev, cur)
            if _said_for_sure(ln)
            and not (ln.node == f.source and ln.line_id in f.to_others)
            and substance(_said(ln)) >= LINE_MIN
            and not _ASIDE.match(_said(ln))
        ]
        if not lines or (len(lines) == 1 and lines[0].node != f.source):
            continue
        calls = any(id(ln) in voc for ln in lines)
        kind = 0 if calls else 1 if lines[0].node == f.source else 2
        aside = prev.node == f.source and prev.line_id in f.answering and id(prev) not in voc
        flat = len(lines) < 2 or not any(ln.node == f.source and stance(_said(ln)) for ln in lines)
        out.append(((aside, kind, flat, rank.get(prev.stage_path, far), i), lines))
    for i, ln in enumerate(f.vocative_lines):
        if not _ASIDE.match(_said(ln)):
            out.append(((False, 3, True, rank.get(ln.stage_path, far), i), [ln]))
    out.sort(key=lambda x: x[0])
    return [lines for _, lines in out]


def pick_exchange(
    f: PairFacts | None,
    name: Callable[[str | None], str],
    room: int,
    cited: Collection[str] = (),
) -> list[ScanLine]:
    """The one exchange (<= 2 lines) a document quotes: the best of
    :func:`_exchange_candidates` whose rendering fits ``room`` characters and says something
    (:data:`EXCHANGE_MIN`): exchanges of lines of at most :data:`LINE_SOFT` characters where
    she says a whole sentence (:data:`LINE_RICH`) first, then any short one, then any; []
    when none fits. Exchanges with a line of ``cited`` (the evidence a curator chose for the
    pair) come before all others, in the same order among themselves."""
    if f is None or room <= 0:
        return []
    candidates = _exchange_candidates(f)
    if cited:
        candidates.sort(key=lambda lines: not any(ln.line_id in cited for ln in lines))
    found: list[ScanLine] | None = None
    short: list[ScanLine] | None = None
    names = sorted(  # longest first, for _unnamed
        {n for n in (name(f.source), name(f.target), *(x for x, _ in f.forms)) if n},
        key=len,
        reverse=True,
    )
    for lines in candidates:  # in order: the first rich one ends the search
        shown = render_exchange(lines, name)
        if len(shown) > room or substance(shown) < EXCHANGE_MIN:
            continue
        found = found or lines
        if all(len(_said(ln)) <= LINE_SOFT for ln in lines):
            short = short or lines
            if any(
                ln.node == f.source and substance(_unnamed(_said(ln), names)) >= LINE_RICH
                for ln in lines
            ):
                return lines
    return short or found or []


def _unnamed(text: str, names: Sequence[str]) -> str:
    """``text`` without the pair's ``names`` (longest first, so a name inside a longer one
    goes with it): what a line says besides calling somebody (凯尔希's ......Mon3tr。 says
    nothing)."""
    for n in names:
        text = text.replace(n, "")
    return text


def fact_counts(edge: Edge, f: PairFacts | None) -> dict[str, Any]:
    """The numbers behind a document, for its metadata (never its text): how often each form
    is used, turns, shared stages, who says more, the events where they talk most."""
    s = edge.signals or {}
    out: dict[str, Any] = {k: int(s[k]) for k in ("mentions", "voice_mentions") if s.get(k)}
    if f is not None and f.has_any():
        out |= {
            "forms": [[form, n] for form, n in f.forms],
            "vocatives_back": f.vocatives_back,
            "turns": f.turns,
            "shared_stages": f.shared_stages,
            "lines": [f.a_lines, f.b_lines],
            "events": [[ev, n] for ev, n in f.events[:3]],
        }
    return out


@dataclass(slots=True)
class PairText:
    """A document's text with the line ids of the exchange it quotes (lead ids first)."""

    text: str
    line_ids: list[str] = field(default_factory=list)


def evidence_text(
    edge: Edge,
    a: str,
    b: str,
    f: PairFacts | None,
    name: Callable[[str | None], str] | None = None,
    *,
    weak: bool = False,
    unit: str | None = None,
) -> PairText | None:
    """A's view of B from what the corpus proves (10-200 characters), for a model to use:
    how A addresses B (the predicate's role first when the relation is named), one verbatim
    exchange of theirs (<= 2 lines), then the event where they talk most when it fits; no
    counts (they go to :func:`fact_counts`). ``weak``: a pair below the describing threshold,
    said so (``交集不多``). ``unit``: the team or group both belong to, said first
    (``两人同属彩虹小队``). ``name`` names a line's speaker (node id -> name; default: A and B).
    None when the corpus proves nothing about the pair (the caller falls back to the
    template)."""
    name = name or (lambda nid: a if nid == edge.source else b if nid == edge.target else "？")
    s = edge.signals or {}
    has_facts = f is not None and f.has_any()
    forms = address_clause(f, name=b) if f is not None else ""
    first = f"两人同属{unit}。" if unit else ""
    parts: list[str] = []
    if edge.predicate != INTERACTION:
        lead = relation_sentence(edge.predicate, a, b) + ("，但两人交集不多" if weak else "")
        lead += f"，称{b}为{forms}" if forms else ""
    elif weak:
        lead = f"{a}与{b}交集不多" + (f"，称{b}为{forms}" if forms else "")
    else:
        lead = f"{a}称{b}为{forms}" if forms else ""
    if lead:
        parts.append(lead + "。")
    room = MAX_CHARS - len(first) - sum(map(len, parts))
    lines = pick_exchange(f, name, room) if has_facts else []
    if lines:
        parts.append(render_exchange(lines, name))
    if not lines and not forms:
        if not has_facts and not (s.get("mentions") or s.get("voice_mentions")):
            return None
        said = [x for x, k in (("剧情中", "mentions"), ("语音中", "voice_mentions")) if s.get(k)]
        if said:  # a mention is no relationship: said so, never left to read as one
            contact = "两人只有寥寥几句往来" if f is not None and f.turns else "两人没有直接往来"
            parts.append(f"{a}只在{'和'.join(said)}提到过{b}，{contact}。")
        elif not parts:
            parts.append(f"{a}与{b}同场过，却少有交谈。")
    if f is not None and f.events:
        verb = "同场" if parts[-1].endswith(("少有交谈。", "没有直接往来。")) else "交谈"
        where = f"两人多在「{f.events[0][0]}」中{verb}。"
        if len(first) + sum(map(len, parts)) + len(where) <= MAX_CHARS:
            parts.append(where)
    text = first + "".join(parts)
    if len(text) < MIN_CHARS or len(text) > MAX_CHARS:
        return None
    return PairText(text, [ln.line_id for ln in lines])


def curated_text(
    description: str,
    edge: Edge,
    f: PairFacts | None,
    name: Callable[[str | None], str],
) -> PairText:
    """A curated description (the matrix, written in our words) with one verbatim exchange of
    the pair after it when one fits :data:`MAX_CHARS`, those with a line the entry cites
    first (its curator's lines, not the story's evidence the edge also holds: 煌 on 行箸 is
    the sister she finds in OR-8, not their cooking lesson in OR-3): the sentence says what
    she feels, the exchange shows how she says it to them."""
    room = MAX_CHARS - len(description)
    cited = edge.curated_evidence or edge.evidence_line_ids
    lines = pick_exchange(f, name, room, set(cited))
    return PairText(description + render_exchange(lines, name), [ln.line_id for ln in lines])


def evidence_description(edge: Edge, a: str, b: str, f: PairFacts | None) -> str | None:
    """:func:`evidence_text`'s text alone."""
    got = evidence_text(edge, a, b, f)
    return got.text if got is not None else None


def evidence_ids(edge: Edge, f: PairFacts | None, lead: list[str] | None = None) -> list[str]:
    """The quoted exchange first (``lead``; else the pair's representative one), then the
    edge's own evidence; capped."""
    out = list(lead) if lead else (list(f.representative()) if f is not None else [])
    for lid in edge.evidence_line_ids:
        if lid not in out:
            out.append(lid)
    return out[:EVIDENCE_IDS_CAP]


# -- exchanges shown to a model -----------------------------------------------------------
def _windows(f: PairFacts, max_lines: int) -> list[list[ScanLine]]:
    """Chains of consecutive turns (same stage, each turn starting where the last ended),
    at most ``max_lines`` lines each, in story-file order."""
    out: list[list[ScanLine]] = []
    for prev, cur in f.exchanges:
        last = out[-1] if out else None
        if last is not None and last[-1] is prev and len(last) < max_lines:
            last.append(cur)
        else:
            out.append([prev, cur])
    return out


def _speaker(ln: ScanLine, name: Callable[[str], str]) -> str:
    """The speaker's display name: exchanges pair attributed lines, so a node is expected."""
    return name(ln.node) if ln.node is not None else "？"


def pick_exchanges(
    f: PairFacts | None,
    name: Callable[[str], str],
    *,
    budget: int = 700,
    max_windows: int = 4,
    max_lines: int = 6,
    counter: TokenCounter = count_tokens,
) -> list[list[str]]:
    """A few exchanges between the two as rendered lines ``[line_id] 名字：台词``: windows
    with A calling B by name first, then one from each stage where they talk most; whole
    windows only, within ``budget`` tokens (the first window clipped to fit when alone)."""
    if f is None or not f.exchanges:
        return []
    wins = _windows(f, max_lines)
    voc = {id(ln) for ln in f.vocative_lines}
    rank = {stage: i for i, (stage, _) in enumerate(f.stage_turns)}
    order = sorted(
        range(len(wins)),
        key=lambda i: (
            not any(id(ln) in voc for ln in wins[i]),
            rank.get(wins[i][0].stage_path, 1 << 30),
            -len(wins[i]),
            i,
        ),
    )
    chosen: list[list[str]] = []
    stages: set[str] = set()
    used = 0
    for i in order:
        w = wins[i]
        if w[0].stage_path in stages:
            continue
        lines = [f"[{ln.line_id}] {_speaker(ln, name)}：{ln.text}" for ln in w]
        cost = counter("\n".join(lines))
        if used + cost > budget:
            if chosen:
                continue
            while lines and counter("\n".join(lines)) > budget:
                lines.pop()
            if not lines:
                break
            cost = counter("\n".join(lines))
        chosen.append(lines)
        stages.add(w[0].stage_path)
        used += cost
        if len(chosen) >= max_windows:
            break
    return chosen
