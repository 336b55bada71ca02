"""Deterministic evidence gates: the program, not the model, decides what is believed.

Every proposal comes back with a verdict — ``kept`` or ``dropped`` with a machine-readable
``drop_reason`` — and nothing is silently repaired. Each gate is a separate function so it
can be tested (and deliberately broken, see ``bench/check_gate_mutants.py``) on its own:

* gate 1 ``check_evidence``: every ``line_no`` must be a real int naming a line of the stage;
* gate 2 ``evidence_basis``: the stored basis is the weakest ``supports`` of the evidence;
* gate 3 ``check_presence``: ``direct`` needs both parties present near an evidence line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from arklore.core.model import DOCTOR, NICKNAME_TOKEN, Line, LineKind, normalize_speaker
from arklore.core.predicates import (
    BASES,
    BASIS_RANK,
    KINDS,
    OTHER,
    PREDICATE_FAMILY,
    is_predicate,
    weakest,
)
from arklore.extract.relations import PROMPT_VERSION, EdgeProposal, EvidenceProposal

WINDOW = 2
"""Lines either side of an evidence line in which both parties must be present."""

DOCTOR_NAMES = frozenset({DOCTOR, "Dr.", "Dr", "Doctor", "刀客塔", NICKNAME_TOKEN, "{@nickname}"})

HONORIFICS = ("小姐", "先生", "女士", "大人", "阁下", "队长", "老师", "前辈", "姐姐", "哥哥")
"""Stripped from a vocative/addressee candidate that is not itself a known speaker."""

_VOC_AFTER = "，,！!？?。…—~～"
_VOC_BEFORE = '。！!？?…—~～\\s“”"「」『』（）()'
_VOCATIVE = re.compile(
    rf"(?:^|(?<=[{_VOC_BEFORE}]))([^{_VOC_AFTER}\s“”\"「」『』（）()：:]{{1,12}})(?=[{_VOC_AFTER}]|$)"
)
_SALUTATION = re.compile(r"^\s*(?:我?亲爱的|敬爱的|致|给)?\s*([^\s：:，,。！？!?]{1,12})\s*[：:]")
_LETTER_LOOKBACK = 12

SameFn = Callable[[str, str], bool]
ResolveFn = Callable[[str], str | None]


@dataclass(slots=True)
class GatedEvidence:
    line_no: Any  # as the model gave it (may be "12", 3.0, True on a dropped edge)
    supports: str
    note: str = ""
    line_id: str | None = None  # set once gate 1 has mapped line_no to a real line
    addressee: str | None = None  # narration letter: whom it addresses by name


@dataclass(slots=True)
class GatedEdge:
    subject: str
    subject_kind: str
    predicate: str
    object: str
    object_kind: str
    basis_claimed: str
    note: str = ""
    verdict: str = "kept"  # kept | dropped
    drop_reason: str | None = None
    drop_detail: str | None = None
    subject_id: str | None = None
    object_id: str | None = None
    predicate_family: str | None = None
    basis: str | None = None
    basis_overclaimed: bool = False
    presence_ok: bool = False
    presence_downgraded: bool = False
    presence_reason: str | None = None
    narration_addressee: str | None = None
    evidence: list[GatedEvidence] = field(default_factory=list)
    evidence_line_ids: list[str] = field(default_factory=list)
    stage: str = ""
    model: str = ""
    prompt_version: str = PROMPT_VERSION

    @property
    def kept(self) -> bool:
        return self.verdict == "kept"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Drop:
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class Presence:
    ok: bool
    reason: str  # both_speak | vocative | doctor_present | narration_only | apart
    at: int | None = None  # the evidence line_no whose window showed them together


# --- gate 1: evidence by line number -------------------------------------------------


def as_line_no(value: Any) -> int | None:
    """A line number only if it is a real int: bool is an int in Python and is refused,
    so are floats (3.0) and digit strings ("12") — the prompt asks for integers."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def check_evidence(
    evidence: list[EvidenceProposal], by_no: dict[int, Line]
) -> tuple[list[GatedEvidence], Drop | None]:
    """Map each line_no to its line_id; the first bad item drops the whole edge."""
    items = [GatedEvidence(e.line_no, e.supports, e.note or "") for e in evidence]
    if not items:
        return items, Drop("evidence_empty", "no evidence lines")
    for item in items:
        no = as_line_no(item.line_no)
        if no is None:
            kind = type(item.line_no).__name__
            return items, Drop("evidence_line_no_not_int", f"line_no {item.line_no!r} ({kind})")
        if no not in by_no:
            return items, Drop("evidence_out_of_range", f"line_no {no} names no line")
        if item.supports not in BASES:
            return items, Drop("unknown_supports", f"supports {item.supports!r}")
        item.line_id = by_no[no].line_id
    return items, None


# --- gate 2: basis from evidence -----------------------------------------------------


def evidence_basis(supports: list[str]) -> str:
    """The weakest support among the evidence: one reported line makes the edge reported."""
    return weakest(supports)


def overclaimed(claimed: str, basis: str) -> bool:
    """The model claimed a stronger basis than its own evidence carries."""
    return BASIS_RANK[claimed] > BASIS_RANK[basis]


# --- gate 3: presence ----------------------------------------------------------------


def is_doctor(name: str) -> bool:
    return normalize_speaker(name)[0] in DOCTOR_NAMES


def is_narration(line: Line) -> bool:
    """Text nobody speaks (narration, subtitles, speakerless multiline)."""
    return line.kind is not LineKind.CHOICE and not line.speaker


def _known(name: str, speakers: set[str]) -> str | None:
    """The whitelisted form of a candidate name (honorific stripped if needed), or None."""
    name = normalize_speaker(name)[0]
    if name in speakers:
        return name
    for suffix in HONORIFICS:
        if name.endswith(suffix) and name[: -len(suffix)] in speakers:
            return name[: -len(suffix)]
    return None


def vocatives(text: str, speakers: set[str]) -> list[str]:
    """Names a line addresses: a candidate at the start of the text or after sentence
    punctuation, followed by ，！？。…—~ or the end — kept only if it is a known speaker,
    because the pattern alone also matches fragments like "好了，"."""
    found = []
    for match in _VOCATIVE.finditer(text):
        name = _known(match.group(1), speakers)
        if name is not None and name not in found:
            found.append(name)
    return found


def letter_addressee(
    line: Line,
    by_no: dict[int, Line],
    speakers: set[str],
    resolve: ResolveFn,
) -> str | None:
    """For narration evidence: the name a letter is addressed to (``亲爱的X：``/``X：``) on
    this line or earlier in the same run of narration lines, if X is a known name."""
    if not is_narration(line):
        return None
    for no in range(line.line_no, line.line_no - _LETTER_LOOKBACK, -1):
        prev = by_no.get(no)
        if prev is None or not is_narration(prev):
            return None
        match = _SALUTATION.match(prev.text)
        if match:
            name = _known(match.group(1), speakers)
            if name is None and resolve(normalize_speaker(match.group(1))[0]) is not None:
                name = normalize_speaker(match.group(1))[0]
            if name is not None:
                return name
    return None


def default_same_person(resolve: ResolveFn) -> SameFn:
    """Same person if the normalized names are equal or both resolve to the same id."""

    def same(a: str, b: str) -> bool:
        if a == b:
            return True
        ia = resolve(a)
        return ia is not None and ia == resolve(b)

    return same


def _matches(party: str, name: str, same: SameFn) -> bool:
    if not name:
        return False
    if is_doctor(party):
        return is_doctor(name)
    return party == normalize_speaker(name)[0] or same(party, normalize_speaker(name)[0])


def _present(party: str, window: list[Line], same: SameFn) -> bool:
    """The party speaks in the window; the Doctor also by a choice or a Dr.{@nickname} address."""
    for line in window:
        if _matches(party, line.speaker, same):
            return True
        if is_doctor(party):
            if line.kind is LineKind.CHOICE:
                return True
            addressed = line.addresses_doctor or NICKNAME_TOKEN in line.text
            if addressed and not is_narration(line):
                return True
    return False


def _addresses(a: str, b: str, window: list[Line], speakers: set[str], same: SameFn) -> bool:
    """A speaks a line in the window that calls B by name."""
    return any(
        _matches(a, line.speaker, same)
        and any(_matches(b, name, same) for name in vocatives(line.text, speakers))
        for line in window
    )


def check_presence(
    subject: str,
    obj: str,
    evidence_lines: list[Line],
    by_no: dict[int, Line],
    *,
    speakers: set[str],
    same_person: SameFn,
) -> Presence:
    """Are both parties present within ±WINDOW lines of ANY evidence line? Narration-only
    evidence never shows presence (a narrator's word is not an interaction)."""
    if all(is_narration(line) for line in evidence_lines):
        return Presence(False, "narration_only")
    s, o = normalize_speaker(subject)[0], normalize_speaker(obj)[0]
    for ev in evidence_lines:
        window = [
            by_no[n] for n in range(ev.line_no - WINDOW, ev.line_no + WINDOW + 1) if n in by_no
        ]
        if _present(s, window, same_person) and _present(o, window, same_person):
            reason = "doctor_present" if is_doctor(s) or is_doctor(o) else "both_speak"
            return Presence(True, reason, ev.line_no)
        if _addresses(s, o, window, speakers, same_person) or _addresses(
            o, s, window, speakers, same_person
        ):
            return Presence(True, "vocative", ev.line_no)
    return Presence(False, "apart")


# --- all gates -----------------------------------------------------------------------


def _vocabulary_drop(p: EdgeProposal, same: SameFn, resolve: ResolveFn) -> Drop | None:
    s, o = normalize_speaker(p.subject)[0], normalize_speaker(p.object)[0]
    if not s or not o:
        return Drop("empty_name", f"subject {p.subject!r}, object {p.object!r}")
    for side, kind in (("subject_kind", p.subject_kind), ("object_kind", p.object_kind)):
        if kind not in KINDS:
            return Drop("unknown_kind", f"{side} {kind!r}")
    if not is_predicate(p.predicate):
        return Drop("unknown_predicate", f"predicate {p.predicate!r}")
    if p.basis_claimed not in BASES:
        return Drop("unknown_basis_claimed", f"basis_claimed {p.basis_claimed!r}")
    if s == o or (is_doctor(s) and is_doctor(o)) or same(s, o):
        return Drop("self_relation", f"{p.subject!r} and {p.object!r} are one person")
    return None


def gate_one(
    proposal: EdgeProposal,
    by_no: dict[int, Line],
    *,
    speakers: set[str],
    resolve: ResolveFn,
    same_person: SameFn,
) -> GatedEdge:
    """Run every gate on one proposal and return it with its verdict."""
    edge = GatedEdge(
        subject=proposal.subject,
        subject_kind=proposal.subject_kind,
        predicate=proposal.predicate,
        object=proposal.object,
        object_kind=proposal.object_kind,
        basis_claimed=proposal.basis_claimed,
        note=proposal.note or "",
    )
    edge.subject_id = resolve(normalize_speaker(proposal.subject)[0])
    edge.object_id = resolve(normalize_speaker(proposal.object)[0])
    edge.predicate_family = PREDICATE_FAMILY.get(proposal.predicate)
    items, drop = check_evidence(proposal.evidence, by_no)
    edge.evidence = items
    drop = _vocabulary_drop(proposal, same_person, resolve) or drop
    if drop is not None:
        edge.verdict, edge.drop_reason, edge.drop_detail = "dropped", drop.reason, drop.detail
        return edge
    edge.evidence_line_ids = [item.line_id for item in items if item.line_id]
    evidence_lines = [by_no[item.line_no] for item in items]

    edge.basis = evidence_basis([item.supports for item in items])
    edge.basis_overclaimed = overclaimed(edge.basis_claimed, edge.basis)

    presence = check_presence(
        proposal.subject,
        proposal.object,
        evidence_lines,
        by_no,
        speakers=speakers,
        same_person=same_person,
    )
    edge.presence_ok, edge.presence_reason = presence.ok, presence.reason
    if edge.basis == "direct" and not presence.ok:
        edge.basis, edge.presence_downgraded = "reported", True

    for item, line in zip(items, evidence_lines, strict=True):
        item.addressee = letter_addressee(line, by_no, speakers, resolve)
        if item.addressee and edge.narration_addressee is None:
            edge.narration_addressee = item.addressee
    return edge


def gate_edges(
    proposals: Iterable[EdgeProposal],
    lines: list[Line],
    *,
    speakers: set[str],
    resolve: ResolveFn = lambda name: None,
    same_person: SameFn | None = None,
    stage: str | None = None,
    model: str = "",
    prompt_version: str = PROMPT_VERSION,
) -> list[GatedEdge]:
    """Every proposal with its verdict, in order. ``lines`` are the stage's lines (line_no
    outside them is out of range); ``speakers`` is the known-speaker whitelist used to
    validate vocatives and letter addressees; ``same_person`` decides whether a party name
    and a speaker are one person (default: equal names or equal ``resolve`` ids)."""
    by_no = {line.line_no: line for line in lines}
    known = ({normalize_speaker(s)[0] for s in speakers} | {DOCTOR}) - {""}
    same = same_person or default_same_person(resolve)
    stage_path = stage if stage is not None else (lines[0].stage_path if lines else "")
    out = []
    for proposal in proposals:
        edge = gate_one(proposal, by_no, speakers=known, resolve=resolve, same_person=same)
        edge.stage, edge.model, edge.prompt_version = stage_path, model, prompt_version
        out.append(edge)
    return out


def summarize(gated: list[GatedEdge]) -> dict[str, Any]:
    """Counts for the run report: verdicts, drop reasons, bases, and how often ``other`` is
    used (a rising share means the whitelist is missing a predicate)."""
    kept = [e for e in gated if e.kept]
    other = sum(1 for e in kept if e.predicate == OTHER)
    return {
        "total": len(gated),
        "kept": len(kept),
        "dropped": len(gated) - len(kept),
        "drop_reasons": dict(Counter(e.drop_reason for e in gated if not e.kept)),
        "basis": dict(Counter(e.basis for e in kept)),
        "basis_overclaimed": sum(1 for e in kept if e.basis_overclaimed),
        "presence_downgraded": sum(1 for e in kept if e.presence_downgraded),
        "narration_addressee": sum(1 for e in kept if e.narration_addressee),
        "predicates": dict(Counter(e.predicate for e in kept)),
        "other": other,
        "other_share": other / len(kept) if kept else 0.0,
    }
