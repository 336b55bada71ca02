"""One operator's ``.char`` text from her stored task results, checked once more.

Assembly is the last gate before a file is written: the anchor's structured fields are
compared with the source again (a stored value that no longer equals it, say after a data
update, is replaced and reported), every quote goes through the verbatim gate again against
the current sources, and every model-written text through its length rules. What fails is
left out and reported (:attr:`Assembled.findings`); nothing unchecked reaches the file.
The rendering is deterministic: the same results and ``generated_at`` give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from arklore.profiles.archive import (
    CHARWORD,
    HANDBOOK,
    STORY,
    Anchor,
    Fact,
    structured_fields_equal_source,
)
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PEOPLE,
    PERSONALITY,
    PHYSICAL,
    QUOTES,
    SPEECH,
    TIER_B,
    render_profile,
)
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.quotes import ARCHIVE, Quote, verify_quotes
from arklore.profiles.results import TaskResult
from arklore.profiles.rules import check_text
from arklore.profiles.speech import render_section
from arklore.profiles.task_b import (
    PERSONALITY_LINES,
    PERSONALITY_MAX,
    PERSONALITY_MIN,
    personality_lines,
)
from arklore.profiles.task_c import ABOUT_MAX, ABOUT_MIN, rule_quotes
from arklore.profiles.task_d import VIEW_MAX, VIEW_MIN

RELATION_DOCS = "relation_docs"


@dataclass(slots=True)
class Assembled:
    char_id: str
    name: str
    text: str | None  # None: no section has anything (tier C, no file)
    sections: list[tuple[str, str]] = field(default_factory=list)
    quotes: list[Quote] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # removed or replaced at assembly
    models: str | None = None


def _models(results: Mapping[str, TaskResult]) -> str | None:
    by_model: dict[str, list[str]] = {}
    for task, r in sorted(results.items()):
        if r.model:
            by_model.setdefault(r.model, []).append(task)
    if not by_model:
        return None
    return "; ".join(f"{m} ({', '.join(ts)})" for m, ts in sorted(by_model.items()))


def _anchor(inp: OperatorInputs, a: TaskResult | None, findings: list[str]) -> Anchor | None:
    facts = (a.output.get("facts") if a is not None else None) or []
    if not facts:
        return None
    written = Anchor(
        inp.char_id, facts=[Fact(str(lb), str(v), "", "") for lb, v in facts], core=None
    )
    fixed, corrections = structured_fields_equal_source(written, inp.tables)
    findings += [f"anchor field {c} (at assembly)" for c in corrections]
    core = a.output.get("core") if a is not None else None
    if core:
        try:
            fixed.core = check_text(str(core), "核心经历", min_chars=10, max_chars=400)
        except ValueError as exc:
            findings.append(f"核心经历 left out: {exc}")
    return fixed


def _text(value: object, what: str, lo: int, hi: int, findings: list[str]) -> str:
    if not value:
        return ""
    try:
        return check_text(str(value), what, min_chars=lo, max_chars=hi)
    except ValueError as exc:
        findings.append(f"{what} left out: {exc}")
        return ""


def _doctor_lines(inp: OperatorInputs, c: TaskResult | None, findings: list[str]) -> list[Quote]:
    """Task C's lines of hers to the Doctor, through the verbatim gate again (a result stored
    before the rule existed has none: the rule runs now)."""
    if c is None:
        return []
    if "quotes" not in c.output:
        kept, removed = rule_quotes(inp)
        findings += [f"{f} (at assembly)" for f in removed]
        return kept
    quotes = [Quote(q["text"], q["source_id"], q.get("note", "")) for q in c.output["quotes"]]
    gate = verify_quotes(quotes, inp.quote_sources(), owners=inp.owners)
    findings += [
        f"line 「{r.quote.text}」 {r.quote.source_id}: {r.reason} (at assembly)"
        for r in gate.removed
    ]
    return gate.kept


def _with_archive_titles(sources: list[str], cited: list[str]) -> list[str]:
    """``sources`` with the archive sections ``cited`` (``archive:<entry>/<title>``) named on
    their entry's ``handbook_info_table`` line (a new line for an entry it lacks)."""
    out = list(sources)
    for sid in cited:
        kind, _, rest = sid.partition(":")
        if kind != ARCHIVE or "/" not in rest:
            continue
        entry, _, title = rest.partition("/")
        head = f"{HANDBOOK}: {entry} ("
        i = next((i for i, s in enumerate(out) if s.startswith(head)), None)
        if i is None:
            out.append(f"{head}{title})")
        elif title not in out[i][len(head) : -1].split(", "):
            out[i] = f"{out[i][:-1]}, {title})"
    return out


def _personality_lines(
    inp: OperatorInputs, b: TaskResult | None, findings: list[str]
) -> list[Quote]:
    """The rule's ``## 我·性格`` lines (the section when the model wrote no personality),
    through the verbatim gate again (a result stored before the rule existed has none: the
    rule runs now)."""
    if b is None:
        return []
    if PERSONALITY_LINES not in b.output:
        return personality_lines(inp)
    lines = [
        Quote(q["text"], q["source_id"], q.get("note", "")) for q in b.output[PERSONALITY_LINES]
    ]
    gate = verify_quotes(lines, inp.personality_sources())
    findings += [
        f"personality line 「{r.quote.text}」 {r.quote.source_id}: {r.reason} (at assembly)"
        for r in gate.removed
    ]
    return gate.kept


def assemble(
    inp: OperatorInputs, results: Mapping[str, TaskResult], *, generated_at: str
) -> Assembled:
    """The tier-B text of her profile from ``results`` (task letter -> stored result)."""
    out = Assembled(inp.char_id, inp.name, None, models=_models(results))
    findings = out.findings
    anchor = _anchor(inp, results.get("A"), findings)
    b = results.get("B")
    quotes = [
        Quote(q["text"], q["source_id"], q.get("note", ""))
        for q in ((b.output.get("quotes") if b is not None else None) or [])
    ]
    gate = verify_quotes(quotes, inp.quote_sources(), owners=inp.owners)
    findings += [
        f"quote 「{r.quote.text}」 {r.quote.source_id}: {r.reason} (at assembly)"
        for r in gate.removed
    ]
    out.quotes = gate.kept
    personality = _text(
        b.output.get("personality") if b is not None else None,
        "personality", PERSONALITY_MIN, PERSONALITY_MAX, findings,
    )  # fmt: skip
    traits = [] if personality else _personality_lines(inp, b, findings)
    personality = personality or "\n".join(q.line() for q in traits)
    c = results.get("C")
    about = _text(
        c.output.get("about_doctor") if c is not None else None,
        "about_doctor", ABOUT_MIN, ABOUT_MAX, findings,
    )  # fmt: skip
    doctor_lines = _doctor_lines(inp, c, findings)
    lines = "\n".join(q.line() for q in doctor_lines)
    about_doctor = "\n\n".join(x for x in (about, lines) if x)  # her paragraph, then her words
    d = results.get("D")
    people = []
    cited_docs: list[str] = []
    for p in (d.output.get("people") if d is not None else None) or []:
        view = _text(p.get("view"), "view", VIEW_MIN, VIEW_MAX, findings)
        if view:
            people.append(f"- {p.get('name') or p['target']}（{p['target']}）：{view}")
            cited_docs += [x for x in p.get("docs", []) if x not in cited_docs]

    out.sections = [
        (ANCHOR, anchor.render() if anchor else ""),
        (PHYSICAL, "\n".join(f"- {t}" for t in anchor.physical_tags()) if anchor else ""),
        (QUOTES, "\n".join(q.line() for q in gate.kept)),
        (SPEECH, render_section(inp.speech)),
        (PERSONALITY, personality),
        (ABOUT_DOCTOR, about_doctor),
        (PEOPLE, "\n".join(people)),
    ]
    if not any(body for _, body in out.sections):
        return out
    sources = list(anchor.sources) if anchor else []
    cited = list(
        dict.fromkeys([*(q.source_id for q in [*gate.kept, *doctor_lines, *traits]),
                       *(s for f in inp.speech for s in f.sources)])
    )  # fmt: skip
    sources = _with_archive_titles(sources, [q.source_id for q in traits])
    voice_ids = [s.partition(":")[2] for s in cited if s.startswith("voice:")]
    story_ids = [s.partition(":")[2] for s in cited if s.startswith("story:")]
    if voice_ids:
        sources.append(f"{CHARWORD}: {', '.join(voice_ids)}")
    if story_ids:
        sources.append(f"{STORY}: {', '.join(story_ids)}")
    if cited_docs:
        sources.append(f"{RELATION_DOCS}: {', '.join(cited_docs)}")
    out.text = render_profile(
        name=inp.name,
        char_id=inp.char_id,
        generated_at=generated_at,
        sections=out.sections,
        sources=sources,
        model=out.models,
        tier=TIER_B,
    )
    return out
