"""Task B: voice -> 5-8 representative verbatim quotes (``## 语录``) and 1-2 sentences of
personality in her own voice (``## 我·性格``).

The model picks quotes from the candidates it is shown, each cited by its source id: her
voice lines (``voice:<charWordId>``) and, for operators the older voice table does not know
(fewer than :data:`~arklore.profiles.quotes.MIN_QUOTES` voice candidates), her own story
lines (``story:<line_id>``, spread over her stages). Every quote passes the verbatim gate
(:func:`~arklore.profiles.quotes.verify_quotes`): a quote not found, after whitespace
normalization, in the source it cites, or citing a line that is not hers, is removed and
reported. When fewer than MIN_QUOTES survive, the documented rule
(:func:`~arklore.profiles.quotes.choose_quotes`) tops them up, and that is reported too.
With no model, B is the rule alone (:func:`rule_result`): the quotes, and ``## 我·性格`` as
a few verbatim sentences about her temperament from her archive and others' lines of her,
each with its source id (:func:`personality_lines`, :mod:`arklore.profiles.temperament`);
the model's personality, when it wrote one, is used before them.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import field_validator

from arklore.llm import ChatRequest
from arklore.llm.shape import Shape
from arklore.profiles import temperament
from arklore.profiles.archive import archive_sections, gaps_line, her_names
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.quotes import (
    MAX_QUOTES,
    MAX_VOICE_CHARS,
    MIN_QUOTES,
    Quote,
    RemovedQuote,
    choose_quotes,
    choose_story,
    choose_voice,
    normalize_ws,
    verify_quotes,
    voice_group,
)
from arklore.profiles.results import FAILED, OK, SKIPPED, TaskResult
from arklore.profiles.rules import check_text

LETTER = "B"
TASK = "distill_b"
PROMPT_VERSION = "distill-b-v2"
MAX_TOKENS = 1200
EXPECTED_OUTPUT_TOKENS = 500
MAX_VOICE_CANDIDATES = 60
MAX_STORY_CANDIDATES = 40
PERSONALITY_MIN, PERSONALITY_MAX = 8, 120
PERSONALITY_LINES = "personality_lines"
"""The result key of the rule's ``## 我·性格`` lines (quote dicts): the section when the model
wrote no personality (:func:`personality_lines`)."""

SYSTEM_PROMPT = f"""你是角色台词编辑。你会读到一名干员的台词候选，每条以 [来源编号] 开头，后面是场合和原文。
请完成两件事：
1. quotes：从候选中挑 {MIN_QUOTES}–{MAX_QUOTES} 条最能体现这名干员的说话方式和性格的台词，尽量覆盖不同场合，\
不要挑意思相近的。text 必须逐字照抄候选原文（可以只取其中连续的一段，但不得改动、增删任何字或标点），\
source 写这条台词的来源编号，照抄方括号里的内容。
2. personality：用干员自己的口吻（第一人称“我”）写 1–2 句话概括自己的性格，{PERSONALITY_MAX} 字以内，\
不要照抄台词，不要编造候选中看不出的经历。
只输出 JSON，形如：{{"quotes": [{{"source": "voice:xxx", "text": "……"}}], "personality": "……"}}"""


class PickedQuote(Shape):
    source: str
    text: str


class VoiceResponse(Shape):
    quotes: list[PickedQuote]
    personality: str

    @field_validator("quotes")
    @classmethod
    def _quotes(cls, v: list[PickedQuote]) -> list[PickedQuote]:
        if not 1 <= len(v) <= 2 * MAX_QUOTES:
            raise ValueError(f"quotes: {len(v)} items, not 1-{2 * MAX_QUOTES}")
        return v

    @field_validator("personality")
    @classmethod
    def _personality(cls, v: str) -> str:
        return check_text(
            v,
            "personality",
            min_chars=PERSONALITY_MIN,
            max_chars=PERSONALITY_MAX,
            min_cjk=5,
            max_sentences=2,
        )


def candidates(inp: OperatorInputs) -> list[tuple[str, str, str]]:
    """(source id, occasion, text) shown to the model: her voice lines (not 标题/戳一下, at
    most twice the quote length), and her story lines when voice is short."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for v in inp.voice:
        t = normalize_ws(v.text)
        if voice_group(v.title) is None or not t or len(t) > 2 * MAX_VOICE_CHARS or t in seen:
            continue
        seen.add(t)
        out.append((v.source_id, v.title, t))
    out = out[:MAX_VOICE_CANDIDATES]
    _, n_voice = choose_voice(inp.voice)
    if n_voice < MIN_QUOTES and inp.story:
        picked, _ = choose_story(inp.story, MAX_STORY_CANDIDATES)
        out += [(s.source_id, s.stage_label or s.stage_path, normalize_ws(s.text)) for s in picked]
    return out


def build_request(inp: OperatorInputs) -> ChatRequest | None:
    cands = candidates(inp)
    if not cands:
        return None
    listed = "\n".join(f"[{sid}]（{note}）{text}" for sid, note, text in cands)
    body = f"台词候选：\n{listed}\n\n请按要求输出 JSON。"
    return inp.request(TASK, SYSTEM_PROMPT, body, VoiceResponse, MAX_TOKENS, PROMPT_VERSION)


def _quote_dicts(quotes: list[Quote]) -> list[dict[str, str]]:
    return [{"text": q.text, "source_id": q.source_id, "note": q.note} for q in quotes]


def _removed(gate_removed: Iterable[RemovedQuote]) -> list[str]:
    return [f"quote 「{r.quote.text}」 {r.quote.source_id}: {r.reason}" for r in gate_removed]


def _origin(quotes: list[Quote]) -> str:
    kinds = {q.kind for q in quotes}
    return "+".join(k for k in ("voice", "story") if k in kinds) or "none"


def personality_lines(inp: OperatorInputs) -> list[Quote]:
    """``## 我·性格`` without a model: verbatim sentences about her temperament from her
    archive and others' lines of her, topped up by one of her own words of herself when they
    give few (:mod:`arklore.profiles.temperament`), through the verbatim gate against their
    sources."""
    names = her_names(inp.char_id, inp.tables, inp.anchor)
    sections = archive_sections(inp.tables.handbook_info, inp.char_id)
    chosen = temperament.choose(
        temperament.archive_candidates(sections, names),
        temperament.story_candidates(inp.remarks),
        temperament.self_candidates([*inp.voice, *inp.story]),
    )
    return verify_quotes(chosen, inp.personality_sources()).kept


def _traits(lines: list[dict[str, str]]) -> str:
    n = len(lines)
    return f"personality: {n or 'no'} line{'s' if n > 1 else ''} by the rule"


def rule_result(inp: OperatorInputs, *, reason: str = "", status: str | None = None) -> TaskResult:
    """Quotes by the documented rule, through the verbatim gate, and ``## 我·性格`` lines by
    :func:`personality_lines` (no model)."""
    choice = choose_quotes(inp.voice, inp.story)
    gate = verify_quotes(choice.quotes, inp.quote_sources(), owners=inp.owners)
    findings = _removed(gate.removed)
    lines = _quote_dicts(personality_lines(inp))
    out = {
        "quotes": _quote_dicts(gate.kept), "personality": None, "origin": _origin(gate.kept),
        PERSONALITY_LINES: lines,
    }  # fmt: skip
    n = len(gate.kept)
    if choice.quotes and not n:
        return TaskResult(
            LETTER, inp.char_id, status or FAILED,
            reason or "every chosen quote failed the verbatim gate",
            output=out if lines else {}, findings=findings,
        )  # fmt: skip
    if not n:
        if lines:
            why = reason or f"no quote; {_traits(lines)}"
            return TaskResult(LETTER, inp.char_id, status or OK, why, output=out)
        voice_story = gaps_line([g for g in inp.gaps if g.what in ("voice", "story lines")])
        return TaskResult(
            LETTER, inp.char_id, status or SKIPPED,
            reason or voice_story or "no line passed the candidate rule",
        )  # fmt: skip
    few = "" if n >= MIN_QUOTES else ": few candidates"
    why = reason or f"{n} quotes by the rule ({out['origin']}){few}; {_traits(lines)}"
    return TaskResult(LETTER, inp.char_id, status or OK, why, output=out, findings=findings)


def no_request_result(inp: OperatorInputs) -> TaskResult:
    return rule_result(inp)


def failed_result(inp: OperatorInputs, error: str) -> TaskResult:
    """The model gave up: the rule's quotes are still written, the failure recorded."""
    r = rule_result(inp)
    if r.status == OK:
        r.reason = f"model failed ({error}); {r.reason}"
    r.status = FAILED
    return r


def apply(inp: OperatorInputs, parsed: VoiceResponse, *, model: str) -> TaskResult:
    """The model's picks through the verbatim gate, topped up by the rule when short."""
    notes = {sid: note for sid, note, _ in candidates(inp)}
    picked: list[Quote] = []
    seen: set[tuple[str, str]] = set()
    for pick in parsed.quotes:
        sid, text = pick.source.strip().strip("[]"), normalize_ws(pick.text).strip('「」“”"')
        if (sid, text) in seen:
            continue
        seen.add((sid, text))
        picked.append(Quote(text, sid, notes.get(sid, "")))
    gate = verify_quotes(picked, inp.quote_sources(), owners=inp.owners)
    findings = _removed(gate.removed)
    kept = gate.kept[:MAX_QUOTES]
    topped = 0
    if len(kept) < MIN_QUOTES:
        rule = verify_quotes(
            choose_quotes(inp.voice, inp.story).quotes, inp.quote_sources(), owners=inp.owners
        ).kept
        cited = {q.source_id for q in kept}
        for q in rule:
            if len(kept) >= MIN_QUOTES:
                break
            if q.source_id not in cited:
                kept.append(q)
                cited.add(q.source_id)
                topped += 1
        if topped:
            findings.append(f"quotes: {topped} added by the rule (the model's picks were short)")
    out = {
        "quotes": _quote_dicts(kept), "personality": parsed.personality, "origin": _origin(kept),
        PERSONALITY_LINES: _quote_dicts(personality_lines(inp)),
    }  # fmt: skip
    reason = f"{len(kept)} quotes picked by {model or 'the model'} ({out['origin']})"
    if gate.removed:
        reason += f", {len(gate.removed)} removed by the verbatim gate"
    if topped:
        reason += f", {topped} by the rule"
    status = OK if kept else FAILED
    if not kept:
        reason = "every quote the model picked failed the verbatim gate, and the rule had none"
    return TaskResult(
        LETTER, inp.char_id, status, reason, output=out, findings=findings, model=model
    )
