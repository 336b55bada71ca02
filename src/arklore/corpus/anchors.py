"""`arklore verify-anchors`: find stored line ids whose text moved or changed.

Evidence everywhere in arklore points at ``line_id``s. After a data update, a stage
may have gained a line in the middle (everything after it shifts), had a line edited
in place, or lost its tail. This re-reads the sources and reports every stored id
whose stage no longer holds that text at that position, with what is there now.

Anchors come from the ``lines`` table (what was ingested) and from whatever later layers
cite, passed in as ``(line_id, referrer)`` pairs (relation evidence, curated relations, the
graph, the relation index): each drift names what it would break.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from arklore.core.errors import ArkloreError
from arklore.core.model import Line, Source, content_hash, parse_line_id
from arklore.corpus.store import Store
from arklore.sources import astr, avg
from arklore.sources.roots import DataRoots

Citation = tuple[str, str]
"""(line_id, referrer): a line id some later layer cites, and a label of what cites it."""


class DriftKind:
    CHANGED = "changed"  # another text now stands at this position (in-place edit)
    MOVED = "moved"  # the text is still in the stage, at another position (insertion/removal)
    OUT_OF_RANGE = "out_of_range"  # the stage is now shorter than this position (truncation)
    STAGE_MISSING = "stage_missing"  # the stage's file is gone
    UNREADABLE = "unreadable"  # the stage's file no longer parses


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
class AnchorReport:
    anchors: int = 0
    stages_checked: int = 0
    stages_reparsed: int = 0
    drifts: list[Drift] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.drifts

    def by_kind(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for d in self.drifts:
            out[d.kind] += 1
        return dict(out)

    def to_dict(self) -> dict:
        return {
            "anchors": self.anchors,
            "stages_checked": self.stages_checked,
            "stages_reparsed": self.stages_reparsed,
            "drifted": len(self.drifts),
            "by_kind": self.by_kind(),
            "drifts": [asdict(d) for d in self.drifts],
        }


def _readers(roots: DataRoots) -> dict[str, tuple[Path | None, Callable[..., object]]]:
    def root(fn: Callable[[], Path]) -> Path | None:
        try:
            return fn()
        except ArkloreError:
            return None

    return {
        Source.AVG: (root(roots.avg_story_root), avg.read_avg_stage),
        Source.ASTR: (root(roots.astr_story_root), astr.read_astr_stage),
    }


def verify_anchors(
    roots: DataRoots,
    store: Store,
    *,
    citations: Iterable[Citation] = (),
    full: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> AnchorReport:
    """Check every stored anchor against the current source files.

    A stage whose file bytes equal what was ingested cannot have drifted, so it is only
    re-parsed with ``full=True`` (useful after a parser change).
    """
    store.require_ingested()
    report = AnchorReport()
    # (source, stage_path) -> {line_no: (digest, {line_id: [referrers]})}
    wanted: dict[tuple[str, str], dict[int, dict[str, set[str]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for source, line_id in store.conn.execute("SELECT source, line_id FROM lines"):
        stage_path, line_no, _ = parse_line_id(line_id)
        wanted[(source, stage_path)][line_no].setdefault(line_id, set()).add("lines")
    for line_id, referrer in citations:
        try:
            stage_path, line_no, _ = parse_line_id(line_id)
        except ValueError:
            continue
        source = store.primary_source(stage_path) or Source.AVG
        wanted[(source, stage_path)][line_no].setdefault(line_id, set()).add(referrer)
    report.anchors = sum(len(ids) for stage in wanted.values() for ids in stage.values())

    stored = {
        (s, p): (sp, h)
        for s, p, sp, h in store.conn.execute(
            "SELECT source, stage_path, source_path, content_hash FROM stages"
        )
    }
    readers = _readers(roots)
    for i, ((source, stage_path), positions) in enumerate(sorted(wanted.items()), 1):
        report.stages_checked += 1
        if progress:
            progress("verify anchors", i, len(wanted))
        source_path, ingested_hash = stored.get((source, stage_path), (None, None))
        root, read = readers[Source(source)]
        file = root / source_path if root is not None and source_path else None
        if file is None or not file.is_file():
            _report_all(
                report, source, stage_path, positions, DriftKind.STAGE_MISSING, "file not found"
            )
            continue
        data = file.read_bytes()
        if not full and hashlib.sha1(data).hexdigest() == ingested_hash:
            continue
        report.stages_reparsed += 1
        try:
            lines: list[Line] = read(root, file, data).lines  # type: ignore[attr-defined]
        except ArkloreError as exc:
            _report_all(report, source, stage_path, positions, DriftKind.UNREADABLE, exc.message)
            continue
        _compare(report, source, stage_path, positions, lines)
    return report


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
