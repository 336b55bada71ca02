"""Curated relations checked against the corpus: the lines they cite must still say it.

A ``[[relation]]`` with ``evidence = [line ids]`` passes when

* every id names the line now stored at that position of the primary corpus, with the same
  content hash (``Store.lines(stage)[line_no - 1].line_id == id``): a game update that moved
  or edited the line makes the entry fail until someone re-reads it;
* its ``since`` (when given) names a stored stage;
* both parties appear within +-:data:`WINDOW` lines of at least one evidence line: as the
  speaker (names resolved through the alias table; the Doctor also by a choice line or a
  ``Dr.{@nickname}`` address), addressed by a vocative, or named in the text (the mention
  matcher for operators; the name itself for NPCs and the Doctor).

:func:`check_curated` is pure (reads the store, changes nothing) and returns the failures;
:func:`keep_checked` is what ``build_graph`` calls: failing entries are left out of the graph
and listed in the build report. Entries without evidence are allowed in user files (counted
as ``no_evidence``) but not in the shipped matrix, which must cite evidence for every entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from arklore.core.model import DOCTOR, DOCTOR_NAMES, NICKNAME_TOKEN, Line, LineKind, parse_line_id
from arklore.corpus.store import Store
from arklore.extract.presence import WINDOW, vocatives
from arklore.graph.matrix import Curated
from arklore.graph.model import DOCTOR_ID
from arklore.graph.people import People
from arklore.names.aliases import fold


@dataclass(frozen=True, slots=True)
class CuratedFailure:
    """One rejected entry: where it is written and why it failed."""

    path: str
    line: int
    source: str  # node id of ``from``
    target: str  # node id of ``to``
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "from": self.source,
            "to": self.target,
            "reason": self.reason,
        }


class _Corpus:
    """Cached stage lines and a per-line "who appears here" test."""

    def __init__(self, store: Store, people: People) -> None:
        self.store = store
        self.people = people
        self.npc_names = people.npc_names
        self.known = set(store.speaker_counts()) | set(people.table.surfaces()) | set(DOCTOR_NAMES)
        self._stages: dict[str, list[Line]] = {}

    def lines(self, stage: str) -> list[Line]:
        hit = self._stages.get(stage)
        if hit is None:
            hit = self._stages[stage] = self.store.lines(stage)
        return hit

    def appears(self, party: str, line: Line) -> bool:
        """``party`` speaks ``line``, is addressed by it, or is named in it."""
        people = self.people
        if party == DOCTOR_ID:
            if line.kind is LineKind.CHOICE or line.addresses_doctor:
                return True
            if NICKNAME_TOKEN in line.text or DOCTOR in line.text:
                return True
        if line.speaker and line.kind is not LineKind.CHOICE and people.node(line.speaker) == party:
            return True
        for name in vocatives(line.text, self.known):
            if people.node(name) == party:
                return True
        if party.startswith("npc:"):
            name = self.npc_names.get(party) or party[4:]
            return party != DOCTOR_ID and bool(name) and fold(name) in fold(line.text)
        return any(
            m.char_id is not None and people.base(m.char_id) == party
            for m in people.matcher.find(line.text)
        )


def _check_ids(entry: Curated, corpus: _Corpus) -> tuple[list[Line], str | None]:
    found: list[Line] = []
    for lid in entry.evidence_line_ids:
        try:
            stage, no, _ = parse_line_id(lid)
        except ValueError:
            return found, f"evidence {lid!r} is not a line id"
        lines = corpus.lines(stage)
        if not lines:
            return found, f"evidence {lid}: stage {stage!r} is not in the store"
        if no > len(lines):
            return found, f"evidence {lid}: the stage has only {len(lines)} lines"
        now = lines[no - 1]
        if now.line_id != lid:
            return found, (
                f"evidence {lid}: the line there is now {now.line_id} "
                "(moved or edited by a data update; re-read it and cite the new id)"
            )
        found.append(now)
    return found, None


def _together(entry: Curated, evidence: list[Line], corpus: _Corpus) -> str | None:
    missing: set[str] = set()
    for ev in evidence:
        lines = corpus.lines(ev.stage_path)
        window = lines[max(0, ev.line_no - 1 - WINDOW) : ev.line_no + WINDOW]
        gone = [
            p for p in (entry.source, entry.target) if not any(corpus.appears(p, x) for x in window)
        ]
        if not gone:
            return None
        missing.update(gone)
    return f"{' and '.join(sorted(missing))} not around any evidence line (+-{WINDOW} lines)"


def _failure(entry: Curated, corpus: _Corpus, required: set[str]) -> CuratedFailure | None:
    if entry.since and not corpus.lines(entry.since):
        return CuratedFailure(entry.path, entry.line, entry.source, entry.target,
                              f"since {entry.since!r} is not a stage in the store")  # fmt: skip
    if not entry.evidence_line_ids:
        if entry.path and entry.path in required:
            return CuratedFailure(
                entry.path, entry.line, entry.source, entry.target,
                "no evidence: every entry of the shipped matrix must cite line ids",
            )  # fmt: skip
        return None
    evidence, reason = _check_ids(entry, corpus)
    if reason is None:
        reason = _together(entry, evidence, corpus)
    if reason is None:
        return None
    return CuratedFailure(entry.path, entry.line, entry.source, entry.target, reason)


CheckKey = tuple[str, str, tuple[str, ...], bool, str | None, str | None]
Checks = dict[CheckKey, str | None]
"""What a check found (the reason, None: it passes) by everything it reads of an entry."""


def check_curated(
    entries: Iterable[Curated],
    store: Store,
    people: People,
    *,
    require_evidence: Iterable[str] = (),
    memo: Checks | None = None,
    found: Checks | None = None,
) -> tuple[list[Curated], list[CuratedFailure]]:
    """(the entries that pass, the failures with the first problem found). ``people`` resolves
    names and knows the NPCs (vocatives are trusted only for known speaker names);
    ``require_evidence``: paths of files whose entries must all cite evidence (the shipped
    matrix). ``memo``: what an earlier check of the same corpus and names found, by entry
    (both people, the names of NPCs among them, the evidence ids, whether it must cite
    some); ``found`` gets what this one found, the same way."""
    corpus: _Corpus | None = None
    required = {str(p) for p in require_evidence}
    kept: list[Curated] = []
    failures: list[CuratedFailure] = []
    for entry in entries:
        key: CheckKey = (
            entry.source, entry.target, tuple(entry.evidence_line_ids),
            bool(entry.path) and entry.path in required,
            people.npc_names.get(entry.source), people.npc_names.get(entry.target),
        )  # fmt: skip
        if memo is not None and key in memo:
            reason = memo[key]
        else:
            corpus = corpus or _Corpus(store, people)
            f = _failure(entry, corpus, required)
            reason = f.reason if f is not None else None
        if found is not None:
            found[key] = reason
        if reason is None:
            kept.append(entry)
        else:
            failures.append(CuratedFailure(entry.path, entry.line, entry.source, entry.target,
                                           reason))  # fmt: skip
    return kept, failures


def keep_checked(
    curated: list[Curated],
    store: Store,
    people: People,
    report: dict[str, Any],
    *,
    require_evidence: Iterable[str] = (),
    memo: Checks | None = None,
    found: Checks | None = None,
) -> list[Curated]:
    """``curated`` without the entries that fail :func:`check_curated` (``memo``, ``found``:
    see there); fills ``report["curated_rejected"]`` and ``report["curated"]``
    (with_evidence / no_evidence / rejected)."""
    kept, failures = check_curated(
        curated, store, people, require_evidence=require_evidence, memo=memo, found=found
    )
    report["curated_rejected"] = [f.to_dict() for f in failures]
    report["curated"] = {
        "with_evidence": sum(bool(c.evidence_line_ids) for c in curated),
        "no_evidence": sum(not c.evidence_line_ids for c in curated),
        "rejected": len(failures),
    }
    return kept
