"""Deterministic evidence gates: the program, not the model, decides what is believed.

Every proposal comes back with a verdict — ``kept`` or ``dropped`` with a machine-readable
``drop_reason`` — and nothing is silently repaired. Each gate is a separate function so it
can be tested (and deliberately broken, see ``bench/check_gate_mutants.py``) on its own:

* gate 1 ``check_evidence``: every ``line_no`` must be a real int naming a line of the stage;
* gate 2 ``evidence_basis``: the stored basis is the weakest ``supports`` of the evidence;
* gate 3 ``check_presence``: ``direct`` needs both parties present near an evidence line,
  or an evidence line in a letter one of them signed to the other (``presence_reason``
  ``letter``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, cast

from arklore.core.model import DOCTOR, Line, is_doctor, normalize_speaker
from arklore.core.predicates import (
    BASES,
    BASIS_RANK,
    KINDS,
    OTHER,
    PREDICATE_FAMILY,
    is_predicate,
    weakest,
)
from arklore.extract.presence import (
    ResolveFn,
    SameFn,
    check_presence,
    default_same_person,
    find_letter,
    letter_addressee,
)
from arklore.extract.relations import PROMPT_VERSION, EdgeProposal, EvidenceProposal


@dataclass(slots=True)
class GatedEvidence:
    line_no: Any  # as the model gave it (may be "12", 3.0, True on a dropped edge)
    supports: str
    note: str = ""
    line_id: str | None = None  # set once gate 1 has mapped line_no to a real line
    addressee: str | None = None  # narration letter: whom it addresses by name
    writer: str | None = None  # a signed letter: who signs it (its 我; its 你 is the addressee)


class Judged:
    """What every judged item (an edge, an event, a memory) shares: a verdict, ``kept`` or
    ``dropped``, and its record as a plain dict. Mixed into slotted dataclasses."""

    __slots__ = ()
    verdict: str

    @property
    def kept(self) -> bool:
        return self.verdict == "kept"

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast(Any, self))


@dataclass(slots=True)
class GatedEdge(Judged):
    """The one declaration of an extracted relation: the model's proposal fields (those of
    :class:`EdgeProposal`, copied by :func:`judge_proposal`), the gates' verdict and findings,
    and where it came from. The store's columns and the export are derived from these fields."""

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


PROPOSAL_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in fields(GatedEdge)
    if f.name in EdgeProposal.model_fields and f.name != "evidence"
)
"""The fields a kept or dropped edge copies verbatim from the model's proposal."""


@dataclass(frozen=True, slots=True)
class Drop:
    reason: str
    detail: str


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


# --- gate 3: presence (arklore.extract.presence) ------------------------------------


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


def judge_proposal(
    proposal: EdgeProposal,
    by_no: dict[int, Line],
    *,
    speakers: set[str],
    resolve: ResolveFn,
    same_person: SameFn,
) -> GatedEdge:
    """Run every gate on one proposal and return it with its verdict."""
    edge = GatedEdge(**{name: getattr(proposal, name) for name in PROPOSAL_FIELDS})
    edge.note = edge.note or ""
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
        resolve=resolve,
    )
    edge.presence_ok, edge.presence_reason = presence.ok, presence.reason
    if edge.basis == "direct" and not presence.ok:
        edge.basis, edge.presence_downgraded = "reported", True

    for item, line in zip(items, evidence_lines, strict=True):
        letter = find_letter(line, by_no, speakers, resolve)
        if letter is not None:
            item.addressee, item.writer = letter.addressee, letter.writer
        else:
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
        edge = judge_proposal(proposal, by_no, speakers=known, resolve=resolve, same_person=same)
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
