"""Curated relations confirmed by a person before they are used.

Every relation of a matrix file (:mod:`arklore.graph.matrix`) can carry a person's verdict,
kept in the store (``curated_verdicts``, :mod:`arklore.graph.schema`): ``confirmed`` or
``rejected``, who gave it, when, a note, and the sha256 of the relation's text as the person
saw it (:func:`relation_sha`: from, to, predicate, description, evidence as canonical JSON).

A relation's status (:func:`status_of`):

* ``unconfirmed`` -- no verdict;
* ``confirmed`` / ``rejected`` -- a verdict on the text as it is now;
* ``edited-since-confirmed`` -- a verdict on another text: an edit voids any verdict, the
  relation is unconfirmed again until a person looks at it.

At graph build (:func:`apply_verdicts`) a rejected relation is always left out and reported;
with ``ARKLORE_CONFIRMED_ONLY=1`` every relation that is not confirmed is left out too.
``arklore curate confirm|reject`` and ``POST /v1/curated/confirm|reject`` both call
:meth:`arklore.graph.facade.GraphFacade.curate_verdict`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from arklore.core.errors import CuratedChangedError, UnknownNameError, UsageError
from arklore.core.predicates import PREDICATE_FAMILY, PREDICATE_NAMES
from arklore.corpus.store import Store
from arklore.graph.matrix import Curated

VERDICTS = ("confirmed", "rejected")
STATUSES = ("unconfirmed", "confirmed", "rejected", "edited-since-confirmed")
EDITED = "edited-since-confirmed"
Key = tuple[str, str, str, str]  # (from node, to node, predicate family, matrix file name)
_COLS = "source, target, family, matrix, verdict, by, at, note, sha"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A person's verdict on one curated relation, on the text whose sha it holds."""

    verdict: str  # confirmed | rejected
    by: str
    at: str  # UTC ISO
    note: str
    sha: str


def relation_sha(c: Curated) -> str:
    """sha256 of the relation's text (from, to, predicate, description, evidence, and the
    stage it begins at when it says one)."""
    doc = {"from": c.source, "to": c.target, "predicate": c.predicate,
           "description": c.description or "", "evidence": list(c.evidence_line_ids),
           **({"since": c.since} if c.since else {})}  # fmt: skip
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def key_of(c: Curated) -> Key:
    return (c.source, c.target, PREDICATE_FAMILY[c.predicate], Path(c.path).name)


def load_verdicts(store: Store) -> dict[Key, Verdict]:
    rows = store.conn.execute(f"SELECT {_COLS} FROM curated_verdicts").fetchall()
    return {
        (s, t, f, m): Verdict(v, by, at, note, sha) for s, t, f, m, v, by, at, note, sha in rows
    }


def save_verdict(store: Store, key: Key, verdict: Verdict) -> None:
    """Write (or replace) the verdict on ``key`` in one transaction."""
    with store.transaction() as c:
        c.execute(
            f"INSERT OR REPLACE INTO curated_verdicts ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (*key, verdict.verdict, verdict.by, verdict.at, verdict.note, verdict.sha),
        )


def status_of(c: Curated, verdicts: dict[Key, Verdict]) -> tuple[str, Verdict | None]:
    """The relation's status (see the module doc) and the verdict it has, if any."""
    v = verdicts.get(key_of(c))
    if v is None:
        return "unconfirmed", None
    return (v.verdict if v.sha == relation_sha(c) else EDITED), v


def digest(verdicts: dict[Key, Verdict]) -> list[Any]:
    """What a build depends on in the verdicts (for the build's input digest)."""
    return sorted([*k, v.verdict, v.sha] for k, v in verdicts.items())


def apply_verdicts(
    curated: list[Curated], verdicts: dict[Key, Verdict], *, confirmed_only: bool
) -> tuple[list[Curated], dict[str, Any]]:
    """The matrix relations a build may use: never a rejected one, and with
    ``confirmed_only`` only confirmed ones (import relations are not curated: kept).
    Returns them and the report (counts, and each rejected relation left out)."""
    kept: list[Curated] = []
    rejected: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    left_out = 0
    for c in curated:
        if c.origin != "matrix":
            kept.append(c)
            continue
        status, _ = status_of(c, verdicts)
        counts[status] += 1
        if status == "rejected":
            rejected.append({"from": c.source, "to": c.target, "predicate": c.predicate,
                             "path": c.path, "line": c.line})  # fmt: skip
        elif confirmed_only and status != "confirmed":
            left_out += 1
        else:
            kept.append(c)
    report = {"confirmed_only": confirmed_only, "counts": {s: counts[s] for s in STATUSES},
              "rejected": rejected, "unconfirmed_left_out": left_out}  # fmt: skip
    return kept, report


def listing(
    curated: Iterable[Curated], verdicts: dict[Key, Verdict], name: Callable[[str], str]
) -> dict[str, Any]:
    """Every matrix relation with its status, and the counts per status."""
    rows = []
    for c in curated:
        if c.origin != "matrix":
            continue
        status, v = status_of(c, verdicts)
        rows.append({
            "from": c.source, "to": c.target, "from_name": name(c.source),
            "to_name": name(c.target), "predicate": c.predicate,
            "family": PREDICATE_FAMILY[c.predicate], "matrix": Path(c.path).name, "line": c.line,
            "description": c.description, "evidence": list(c.evidence_line_ids),
            "sha": relation_sha(c), "status": status,
            "verdict": v.verdict if v else None, "by": v.by if v else None,
            "at": v.at if v else None, "note": v.note if v else None,
        })  # fmt: skip
    counts = Counter(r["status"] for r in rows)
    return {"counts": {s: counts[s] for s in STATUSES}, "relations": rows}


def pick(
    curated: Iterable[Curated], source: str, target: str, predicate: str | None, label: str
) -> Curated:
    """The one matrix relation ``source`` -> ``target`` (of ``predicate``'s family when
    given); a one-line error when there is none, or several and no predicate."""
    if predicate is not None and predicate not in PREDICATE_FAMILY:
        raise UsageError(f"unknown predicate {predicate!r}",
                         hint=f"use one of {', '.join(PREDICATE_NAMES)}")  # fmt: skip
    found = [
        c for c in curated
        if c.origin == "matrix" and (c.source, c.target) == (source, target)
        and (predicate is None or PREDICATE_FAMILY[c.predicate] == PREDICATE_FAMILY[predicate])
    ]  # fmt: skip
    if not found:
        raise UnknownNameError(f"no curated relation {label}",
                               hint="`arklore curate status` lists them")  # fmt: skip
    if len(found) > 1:
        preds = ", ".join(c.predicate for c in found)
        raise UsageError(f"several curated relations {label}: {preds}",
                         hint="name one with --predicate (HTTP: predicate)")  # fmt: skip
    return found[0]


def verdict_for(c: Curated, verdict: str, *, by: str, note: str, seen_sha: str | None) -> Verdict:
    """The verdict to store on ``c``; refused when the text changed since the person saw it
    (``seen_sha`` given and not the current sha)."""
    if verdict not in VERDICTS:
        raise UsageError(f"unknown verdict {verdict!r}", hint="confirmed or rejected")
    sha = relation_sha(c)
    if seen_sha is not None and seen_sha != sha:
        raise CuratedChangedError(
            f"the curated relation {c.source} -> {c.target} ({c.predicate}) changed since it "
            "was shown", hint="reload it and review the text as it is now",
        )  # fmt: skip
    at = datetime.now(UTC).isoformat(timespec="seconds")
    return Verdict(verdict, by.strip() or "cli", at, note.strip(), sha)
