"""Relation text from what the corpus proves (no model): the ``evidence`` describer.

Built from :class:`arklore.graph.evidence.PairFacts` -- how A calls B, in how many stages
both speak, the events where they talk most, who answers whom more -- so two relations
read alike only when the story treats them alike. No game text is quoted except the
vocative form itself (a name with its title). Also renders the exchanges a model is shown
for the LLM describer (:mod:`arklore.rag.describe`), capped in tokens.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _count(n: int) -> str:
    return f"（{n}次）"


def vocative_clause(a: str, b: str, f: PairFacts, *, most: int = 2) -> str:
    """``阿米娅称凯尔希为“凯尔希医生”（61次）、“凯尔希”（9次）`` ('' when A never does)."""
    forms = f.forms[:most]
    if not forms:
        return ""
    said = "、".join(f"“{form}”{_count(n)}" for form, n in forms)
    return f"{a}称{b}为{said}"


def _says_more(a: str, b: str, f: PairFacts) -> str:
    """Who carries the scenes they share: ``同场时阿米娅说得更多（120句对80句）``."""
    if f.a_lines + f.b_lines < 4:
        return ""
    counts = f"（{f.a_lines}句对{f.b_lines}句）"
    if f.a_lines >= 1.5 * f.b_lines:
        return f"同场时{a}说得更多{counts}"
    if f.b_lines >= 1.5 * f.a_lines:
        return f"同场时{b}说得更多{counts}"
    return f"同场时两人台词相当{counts}"


def _scenes(a: str, b: str, f: PairFacts, *, named: bool) -> str:
    """Shared stages and where they talk most; names the pair unless a clause before did."""
    who = "两人" if named else f"{a}与{b}"
    parts: list[str] = []
    if f.shared_stages:
        parts.append(f"{who}在{f.shared_stages}段剧情中同场")
    if f.turns:
        top = "".join(f"「{name}」" for name, _ in f.events[:2])
        where = f"在{top}中交谈最多" if top else "有过交谈"
        parts.append(
            f"{where}（共{f.turns}轮对话）" if parts else f"{who}{where}（共{f.turns}轮对话）"
        )
    return "，".join(parts)


def evidence_description(edge: Edge, a: str, b: str, f: PairFacts | None) -> str | None:
    """A's view of B from the facts (10-200 characters), or None when the corpus proves
    nothing about the pair (the caller falls back to the template)."""
    s = edge.signals or {}
    mentions = int(s.get("mentions", 0) or 0)
    voice = int(s.get("voice_mentions", 0) or 0)
    sentences: list[str] = []
    if f is not None and f.has_any():
        first = vocative_clause(a, b, f)
        if not first and f.vocatives_back:
            first = f"{b}曾直呼{a}的名字（{f.vocatives_back}次），{a}却没有这样叫过{b}"
        scenes = _scenes(a, b, f, named=bool(first))
        more = _says_more(a, b, f)
        if first:
            sentences.append(first)
        tail = "，".join(x for x in (scenes, more) if x)
        if tail:
            sentences.append(tail)
    if not sentences and (mentions or voice):
        said = []
        if mentions:
            said.append(f"在剧情台词中提到{b}{mentions}次")
        if voice:
            said.append(f"在语音中提到过{b}")
        sentences.append(f"{a}" + "，".join(said))
    if not sentences:
        return None
    if edge.predicate != INTERACTION:
        sentences.insert(0, relation_sentence(edge.predicate, a, b))
    return fit_sentences(sentences)


def evidence_ids(edge: Edge, f: PairFacts | None) -> list[str]:
    """The representative exchange first, then the edge's own evidence; capped."""
    out = list(f.representative()) if f is not None else []
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
