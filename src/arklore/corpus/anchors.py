"""`arklore verify-anchors`: find stored line ids whose text moved or changed.

Evidence everywhere in arklore points at ``line_id``s. After a data update, a stage
may have gained a line in the middle (everything after it shifts), had a line edited
in place, or lost its tail. This re-reads the sources and reports every stored id
whose stage no longer holds that text at that position, with what is there now.

Anchors come from the ``lines`` table (what was ingested) and from whatever later layers
cite, passed in as ``(line_id, referrer)`` pairs (relation evidence, curated relations, the
graph, the relation index): each drift names what it would break.  A referrer reads
``"<kind>: <what>"`` -- ``"graph: 阿米娅 -> 凯尔希 (同事, matrix+interaction)"`` -- and the report
counts, per kind, the citations and line ids checked and those that drifted
(:func:`citing_kind`).  This layer knows nothing of the kinds: the caller gathers the pairs.

A cited id that the store does not hold (the matrix names a line that was never ingested, or
was ingested with another text) is checked against its stage file even when that file did not
change since ingest; an id that does not parse is reported as ``invalid_id``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arklore.core.errors import ArkloreError, DataNotFoundError
from arklore.core.model import Line, Source, Stage, content_hash, parse_line_id
from arklore.corpus.store import Store
from arklore.sources import astr, avg
from arklore.sources.roots import DataRoots
from arklore.sources.speakers import stage_digest

Citation = tuple[str, str]
"""(line_id, referrer): a line id some later layer cites, and a label of what cites it."""

STORED = "lines"
"""The referrer of every line the store holds (its own anchors)."""


def citing_kind(referrer: str) -> str:
    """The kind of a referrer label: the text before its first ``": "`` (all of it if none)."""
    return referrer.split(": ", 1)[0]


class DriftKind:
    CHANGED = "changed"  # another text now stands at this position (in-place edit)
    MOVED = "moved"  # the text is still in the stage, at another position (insertion/removal)
    OUT_OF_RANGE = "out_of_range"  # the stage is now shorter than this position (truncation)
    STAGE_MISSING = "stage_missing"  # the stage's file is gone
    UNREADABLE = "unreadable"  # the stage's file no longer parses
    INVALID_ID = "invalid_id"  # a cited id that is not a line id at all


@dataclass
class Drift:
    line_id: str
    source: str
    stage_path: str
    line_no: int
    kind: str
    referenced_by: list[str]
    now_line_nos: list[int] = field(default_factory=list)  # MOVED: where the text is now
    now_text: str | None = None  # CHANGED: what stands at the position now
    detail: str = ""


@dataclass
class CitedCounts:
    """What one kind of referrer cites: pairs, distinct line ids, and how many drifted."""

    citations: int = 0  # (line_id, referrer) pairs
    line_ids: int = 0  # distinct line ids
    drifted: int = 0  # distinct line ids that drifted
    referrers_hit: int = 0  # distinct referrers (relations, memories, ...) citing a drifted line


@dataclass
class AnchorReport:
    anchors: int = 0
    stages_checked: int = 0
    stages_reparsed: int = 0
    drifts: list[Drift] = field(default_factory=list)
    cited: dict[str, CitedCounts] = field(default_factory=dict)  # referrer kind -> counts
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the caller could not check

    @property
    def ok(self) -> bool:
        return not self.drifts

    def by_kind(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for d in self.drifts:
            out[d.kind] += 1
        return dict(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "anchors": self.anchors,
            "stages_checked": self.stages_checked,
            "stages_reparsed": self.stages_reparsed,
            "drifted": len(self.drifts),
            "by_kind": self.by_kind(),
            "cited": {k: asdict(c) for k, c in self.cited.items()},
            "seconds": self.seconds,
            "notes": self.notes,
            "drifts": [asdict(d) for d in self.drifts],
        }


StageReader = Callable[[Path, Path, bytes | None], Stage]


def _readers(roots: DataRoots, sources: Iterable[str]) -> dict[str, tuple[Path, StageReader]]:
    """The story folder and reader of each source the store holds; DataNotFoundError (exit 2,
    naming the variable) when its checkout is not set: without it every line would look
    vanished."""
    known: dict[str, tuple[Callable[[], Path], StageReader]] = {
        Source.AVG: (roots.avg_story_root, avg.read_avg_stage),
        Source.ASTR: (roots.astr_story_root, astr.read_astr_stage),
    }
    out = {}
    for source in sorted(set(sources)):
        root, read = known[Source(source)]
        try:
            out[source] = (root(), read)
        except DataNotFoundError as exc:
            raise DataNotFoundError(
                f"{exc.message}: verify-anchors compares the stored {source} lines with its files"
            ) from None
    return out


def verify_anchors(
    roots: DataRoots,
    store: Store,
    *,
    citations: Iterable[Citation] = (),
    kinds: Iterable[str] = (),
    full: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> AnchorReport:
    """Check every stored anchor and every cited line id against the current source files.

    A stage whose file bytes equal what was ingested cannot have drifted, so it is only
    re-parsed with ``full=True`` (useful after a parser change) or when a cited id is not one
    the store holds.  ``kinds`` are referrer kinds to count even when nothing of theirs is
    cited (so a report says "graph: 0" rather than leaving the graph out).
    """
    t0 = time.perf_counter()
    store.require_ingested()
    report = AnchorReport()
    # (source, stage_path) -> {line_no: {line_id: {referrers}}}
    wanted: dict[tuple[str, str], dict[int, dict[str, set[str]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    stored_ids: set[str] = set()
    for source, line_id in store.conn.execute("SELECT source, line_id FROM lines"):
        stage_path, line_no, _ = parse_line_id(line_id)
        wanted[(source, stage_path)][line_no].setdefault(line_id, set()).add(STORED)
        stored_ids.add(line_id)
    by_kind: dict[str, dict[str, set[str]]] = {k: {} for k in kinds}  # kind -> id -> refs
    pairs: dict[str, int] = defaultdict(int)
    force: set[tuple[str, str]] = set()  # stages holding a cited id the store does not
    invalid: dict[str, set[str]] = defaultdict(set)
    primary: dict[str, str] = {}
    for line_id, referrer in citations:
        kind = citing_kind(referrer)
        pairs[kind] += 1
        by_kind.setdefault(kind, {}).setdefault(line_id, set()).add(referrer)
        try:
            stage_path, line_no, _ = parse_line_id(line_id)
        except ValueError:
            invalid[line_id].add(referrer)
            continue
        source = primary.get(stage_path)
        if source is None:  # one query per stage, not per citation (18k citations: 9 s)
            source = primary[stage_path] = store.primary_source(stage_path) or Source.AVG
        wanted[(source, stage_path)][line_no].setdefault(line_id, set()).add(referrer)
        if line_id not in stored_ids:
            force.add((source, stage_path))
    report.anchors = sum(len(ids) for stage in wanted.values() for ids in stage.values())
    report.anchors += len(invalid)
    for line_id, refs in sorted(invalid.items()):
        report.drifts.append(
            Drift(line_id, "", "", 0, DriftKind.INVALID_ID, sorted(refs), detail="not a line id")
        )

    stored = {
        (s, p): (sp, h)
        for s, p, sp, h in store.conn.execute(
            "SELECT source, stage_path, source_path, content_hash FROM stages"
        )
    }
    readers = _readers(roots, (source for source, _ in wanted))
    for i, ((source, stage_path), positions) in enumerate(sorted(wanted.items()), 1):
        report.stages_checked += 1
        if progress:
            progress("verify anchors", i, len(wanted))
        source_path, ingested_hash = stored.get((source, stage_path), (None, None))
        root, read = readers[source]
        file = root / source_path if source_path else None
        if file is None or not file.is_file():
            detail = "file not found" if source_path else "stage not in the store"
            _report_all(report, source, stage_path, positions, DriftKind.STAGE_MISSING, detail)
            continue
        data = file.read_bytes()
        unchanged = stage_digest(data, stage_path) == ingested_hash
        if unchanged and not full and (source, stage_path) not in force:
            continue
        report.stages_reparsed += 1
        try:
            lines = read(root, file, data).lines
        except ArkloreError as exc:
            _report_all(report, source, stage_path, positions, DriftKind.UNREADABLE, exc.message)
            continue
        _compare(report, source, stage_path, positions, lines)
    _count_cited(report, by_kind, pairs)
    report.seconds = round(time.perf_counter() - t0, 2)
    return report


def _count_cited(
    report: AnchorReport, by_kind: dict[str, dict[str, set[str]]], pairs: dict[str, int]
) -> None:
    drifted = {d.line_id for d in report.drifts}
    for kind in by_kind:  # the order of `kinds`, then first seen
        ids = by_kind[kind]
        hit = [line_id for line_id in ids if line_id in drifted]
        report.cited[kind] = CitedCounts(
            citations=pairs.get(kind, 0),
            line_ids=len(ids),
            drifted=len(hit),
            referrers_hit=len({r for line_id in hit for r in ids[line_id]}),
        )


def _compare(
    report: AnchorReport,
    source: str,
    stage_path: str,
    positions: dict[int, dict[str, set[str]]],
    lines: list[Line],
) -> None:
    now_by_hash: dict[str, list[int]] = defaultdict(list)
    for ln in lines:
        now_by_hash[content_hash(ln.speaker, ln.text)].append(ln.line_no)
    for line_no in sorted(positions):
        for line_id, refs in positions[line_no].items():
            digest = line_id.rsplit(":", 1)[1]
            if (
                line_no <= len(lines)
                and content_hash(lines[line_no - 1].speaker, lines[line_no - 1].text) == digest
            ):
                continue
            elsewhere = now_by_hash.get(digest, [])
            if elsewhere:
                kind, now_text = DriftKind.MOVED, None
            elif line_no > len(lines):
                kind, now_text = DriftKind.OUT_OF_RANGE, None
            else:
                kind, now_text = DriftKind.CHANGED, lines[line_no - 1].text
            report.drifts.append(
                Drift(
                    line_id,
                    source,
                    stage_path,
                    line_no,
                    kind,
                    sorted(refs),
                    list(elsewhere),
                    now_text,
                    detail=f"stage now has {len(lines)} lines",
                )
            )


def _report_all(
    report: AnchorReport,
    source: str,
    stage_path: str,
    positions: dict[int, dict[str, set[str]]],
    kind: str,
    detail: str,
) -> None:
    for line_no in sorted(positions):
        for line_id, refs in positions[line_no].items():
            report.drifts.append(
                Drift(line_id, source, stage_path, line_no, kind, sorted(refs), detail=detail)
            )
