"""Task C: voice lines across trust levels + archives -> ``## 我·关于博士``.

**The rule** (no model, always run): her own lines to and about the Doctor, verbatim, each
with its source id (:func:`arklore.profiles.doctor.choose_doctor_lines`: voice lines in unlock
order with the trust-unlocked ones last, her story lines addressed to the Doctor), through
the verbatim gate. They are stored as ``quotes`` and written as quote bullets, so a tier-B
draft may give them to a chat like its verified 语录.

**With a model**: the model reads her voice lines in the order the game unlocks them
(initial, promotion, trust ≥ n) and her archive sections with the trust each needs, and
writes, in her own voice, how her attitude to the Doctor changes as trust grows (battle
lines and the sections whose fields are copied by code are left out). The paragraph goes
before the rule's lines; it is model-written text, so only tiers A and S give it to a chat.
A failed request still writes the rule's lines.
"""

from __future__ import annotations

from pydantic import field_validator

from arklore.llm import ChatRequest
from arklore.llm.shape import Shape
from arklore.profiles.archive import gaps_line
from arklore.profiles.doctor import choose_doctor_lines
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.quotes import BATTLE, Quote, normalize_ws, verify_quotes, voice_group
from arklore.profiles.results import FAILED, OK, SKIPPED, TaskResult
from arklore.profiles.rules import check_text
from arklore.profiles.task_a import SKIP_SECTIONS

LETTER = "C"
TASK = "distill_c"
PROMPT_VERSION = "distill-c-v2"
MAX_TOKENS = 800
EXPECTED_OUTPUT_TOKENS = 350
ABOUT_MIN, ABOUT_MAX = 30, 300
MAX_ARCHIVE_CHARS = 6000

SYSTEM_PROMPT = f"""你是角色设定编辑。你会读到一名干员按解锁顺序排列的语音台词（〔初始〕、〔精英化n〕、\
〔信赖≥n〕表示解锁条件），以及这名干员的档案资料（同样标注了解锁所需的信赖）。
请用干员自己的口吻（第一人称“我”，称对方为“博士”）写“我·关于博士”：3–5 句话，写出随着信赖提升，\
干员对博士的态度怎样变化——初识时、熟悉以后、信赖很高时。{ABOUT_MAX} 字以内，写成一段，不要分行。
只依据给出的台词和档案，不要编造其中没有的事件；台词里的 Dr.{{@nickname}} 指博士。
只输出 JSON，形如：{{"about_doctor": "……"}}"""


class DoctorResponse(Shape):
    about_doctor: str

    @field_validator("about_doctor")
    @classmethod
    def _text(cls, v: str) -> str:
        return check_text(
            v, "about_doctor", min_chars=ABOUT_MIN, max_chars=ABOUT_MAX, min_cjk=20,
            max_sentences=6,
        )  # fmt: skip


def build_request(inp: OperatorInputs) -> ChatRequest | None:
    voice = [
        (inp.voice_unlock.get(v.word_id, ("〔初始〕", 0)), v)
        for v in inp.voice
        if voice_group(v.title) not in (None, BATTLE) and normalize_ws(v.text)
    ]
    voice.sort(key=lambda x: (x[0][1], x[1].index))
    archive = sorted((s for s in inp.archive if s.title not in SKIP_SECTIONS), key=lambda s: s.rank)
    if not voice and not archive:
        return None
    lines = [f"{label}{v.title}：{normalize_ws(v.text)}" for (label, _), v in voice]
    arch = "\n".join(f"{s.unlock}【{s.title}】{normalize_ws(s.text)}" for s in archive)
    body = ""
    if lines:
        body += "语音（按解锁顺序）：\n" + "\n".join(lines) + "\n"
    if arch:
        body += "\n档案资料（按解锁所需信赖）：\n" + arch[:MAX_ARCHIVE_CHARS] + "\n"
    body += "\n请按要求输出 JSON。"
    return inp.request(TASK, SYSTEM_PROMPT, body, DoctorResponse, MAX_TOKENS, PROMPT_VERSION)


def rule_quotes(inp: OperatorInputs) -> tuple[list[Quote], list[str]]:
    """Her lines to and about the Doctor by the rule, through the verbatim gate: (kept,
    findings for the removed ones)."""
    choice = choose_doctor_lines(
        inp.voice, inp.voice_unlock, inp.story, doctor_stages=inp.doctor_stages
    )
    gate = verify_quotes(choice.quotes, inp.quote_sources(), owners=inp.owners)
    findings = [f"line 「{r.quote.text}」 {r.quote.source_id}: {r.reason}" for r in gate.removed]
    return gate.kept, findings


def quote_dicts(quotes: list[Quote]) -> list[dict[str, str]]:
    return [{"text": q.text, "source_id": q.source_id, "note": q.note} for q in quotes]


def _origin(quotes: list[Quote]) -> str:
    kinds = {q.kind for q in quotes}
    return "+".join(k for k in ("voice", "story") if k in kinds) or "none"


def rule_result(inp: OperatorInputs, *, about: str | None = None, model: str = "") -> TaskResult:
    """Her lines to and about the Doctor (no model; ``about``: a model's paragraph to keep
    before them)."""
    kept, findings = rule_quotes(inp)
    out = {"about_doctor": about, "quotes": quote_dicts(kept), "origin": _origin(kept)}
    if about:
        why = f"written by {model or 'the model'}; {len(kept)} lines of hers by the rule"
        return TaskResult(LETTER, inp.char_id, OK, why, output=out, findings=findings,
                          model=model)  # fmt: skip
    if not kept:
        gaps = gaps_line([g for g in inp.gaps if g.what in ("voice", "story lines")])
        why = "no line of hers speaks to or about the Doctor"
        if findings:
            return TaskResult(LETTER, inp.char_id, FAILED,
                              "every line chosen failed the verbatim gate", findings=findings)  # fmt: skip
        return TaskResult(LETTER, inp.char_id, SKIPPED, f"{why} ({gaps})" if gaps else why,
                          output=out)  # fmt: skip
    why = f"{len(kept)} lines of hers to the Doctor by the rule ({out['origin']}); the view in her words: needs a model"
    return TaskResult(LETTER, inp.char_id, OK, why, output=out, findings=findings)


def no_request_result(inp: OperatorInputs) -> TaskResult:
    """No voice line or archive text for the model: the rule alone (her story lines)."""
    return rule_result(inp)


def failed_result(inp: OperatorInputs, error: str) -> TaskResult:
    """The model gave up: the rule's lines are still written, the failure recorded."""
    r = rule_result(inp)
    r.reason = f"model failed ({error}); {r.reason}"
    r.status = FAILED
    return r


def apply(inp: OperatorInputs, parsed: DoctorResponse, *, model: str) -> TaskResult:
    return rule_result(inp, about=parsed.about_doctor, model=model)
