"""Cross-check of the two story sources, stage by stage and field by field.

The raw scripts and ASTR come from the same game text through different parsers and at
different dates, so on a stage both hold they should agree line for line. Lines are
aligned with difflib on whitespace-free text (one inserted line does not shift the rest
into disagreement), then judged per field, never as one blended score:

- text: compared = aligned pairs + lines only one side has; agreeing = aligned pairs
  whose whitespace-free text is equal.
- speaker, kind, branch, figure_art: compared over aligned pairs whose text agrees
  (figure_art is secondary: it never makes a stage disagree).

Each disagreeing stage gets its first differing line and a category meant to tell a
game edit from a parser bug: ``edit`` (a few contiguous runs of changed, inserted or
removed lines) or ``parser-suspect`` (systematic speaker/kind mismatches, many scattered
runs, or most of the stage differing).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arklore.core.errors import MalformedSourceError
from arklore.core.model import Line
from arklore.corpus.store import Store
from arklore.sources import astr, avg

FIELDS = ("text", "speaker", "kind", "branch", "figure_art")
_WS = re.compile(r"\s+")

# classification thresholds: beyond these a diff looks like a parser problem, not an edit
MAX_EDIT_RUNS = 5
MAX_FIELD_MISMATCHES = 2
MAX_EDIT_SHARE = 0.2


@dataclass(slots=True)
class FieldStats:
    compared: int = 0
    agreeing: int = 0

    @property
    def share(self) -> float:
        return self.agreeing / self.compared if self.compared else 1.0

    def add(self, other: FieldStats) -> None:
        self.compared += other.compared
        self.agreeing += other.agreeing

    def to_dict(self) -> dict[str, Any]:
        return {"compared": self.compared, "agreeing": self.agreeing, "share": self.share}


@dataclass(slots=True)
class LineDiff:
    """The first place two sources differ; a None line_no means the line is missing there."""

    fields: tuple[str, ...]
    avg_line_no: int | None
    astr_line_no: int | None
    avg_text: str | None
    astr_text: str | None
    avg_speaker: str | None
    astr_speaker: str | None
    avg_kind: str | None = None
    astr_kind: str | None = None


@dataclass(slots=True)
class StageComparison:
    stage_path: str
    avg_lines: int
    astr_lines: int
    fields: dict[str, FieldStats]
    only_avg: int = 0  # lines the raw script has and ASTR lacks
    only_astr: int = 0
    runs: int = 0  # contiguous blocks of text differences
    first_diff: LineDiff | None = None
    category: str = "agree"  # agree | edit | parser-suspect
    reasons: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return self.category == "agree"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["fields"] = {name: stats.to_dict() for name, stats in self.fields.items()}
        return out


@dataclass(slots=True)
class CrosscheckReport:
    stages_compared: int = 0
    only_in_avg: list[str] = field(default_factory=list)
    only_in_astr: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # source path -> reason
    fields: dict[str, FieldStats] = field(default_factory=lambda: {f: FieldStats() for f in FIELDS})
    disagreeing: list[StageComparison] = field(default_factory=list)

    def categories(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for stage in self.disagreeing:
            counts[stage.category] = counts.get(stage.category, 0) + 1
        return counts

    def below(self, min_agreement: float) -> dict[str, float]:
        """The fields whose line agreement (share of the lines compared) is under
        ``min_agreement`` (0..1), with their share: what ``--min-agreement`` reports."""
        return {
            name: stats.share for name, stats in self.fields.items() if stats.share < min_agreement
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages_compared": self.stages_compared,
            "stages_agreeing": self.stages_compared - len(self.disagreeing),
            "categories": self.categories(),
            "fields": {name: stats.to_dict() for name, stats in self.fields.items()},
            "only_in_avg": self.only_in_avg,
            "only_in_astr": self.only_in_astr,
            "errors": self.errors,
            "disagreeing": [stage.to_dict() for stage in self.disagreeing],
        }

    def summary(self) -> str:
        parts = [
            f"{self.stages_compared} stages in both sources, "
            f"{self.stages_compared - len(self.disagreeing)} agree fully"
        ]
        for name, stats in self.fields.items():
            parts.append(
                f"{name}: {stats.agreeing:,}/{stats.compared:,} lines agree ({stats.share:.2%})"
            )
        cats = ", ".join(f"{n} {c}" for c, n in sorted(self.categories().items()))
        if cats:
            parts.append(f"disagreeing stages: {cats}")
        parts.append(
            f"only in raw scripts: {len(self.only_in_avg)} stages, "
            f"only in ASTR: {len(self.only_in_astr)}"
        )
        if self.errors:
            parts.append(f"unreadable files: {len(self.errors)}")
        return "\n".join(parts)


def _key(line: Line) -> str:
    return _WS.sub("", line.text)


def compare_stage(avg_lines: list[Line], astr_lines: list[Line]) -> StageComparison:
    """Align the two line lists of one stage and judge text, speaker, kind, figure_art."""
    stage_path = (avg_lines or astr_lines)[0].stage_path if (avg_lines or astr_lines) else ""
    stats = {name: FieldStats() for name in FIELDS}
    cmp = StageComparison(stage_path, len(avg_lines), len(astr_lines), stats)
    a_keys, b_keys = [_key(x) for x in avg_lines], [_key(x) for x in astr_lines]
    opcodes: Sequence[tuple[str, int, int, int, int]]
    if a_keys == b_keys:
        opcodes = [("equal", 0, len(a_keys), 0, len(b_keys))]
    else:
        matcher = difflib.SequenceMatcher(None, a_keys, b_keys, autojunk=False)
        opcodes = matcher.get_opcodes()
    field_mismatch = {"speaker": 0, "kind": 0, "branch": 0}
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal":
            cmp.runs += 1
        paired = min(i2 - i1, j2 - j1)
        for a, b in zip(avg_lines[i1 : i1 + paired], astr_lines[j1 : j1 + paired], strict=True):
            stats["text"].compared += 1
            if tag != "equal":
                _note(cmp, ("text",), a, b)
                continue
            stats["text"].agreeing += 1
            differing = []
            for name, left, right in (
                ("speaker", a.speaker, b.speaker),
                ("kind", a.kind, b.kind),
                ("branch", a.branch, b.branch),
                ("figure_art", a.figure_art, b.figure_art),
            ):
                stats[name].compared += 1
                if left == right:
                    stats[name].agreeing += 1
                elif name != "figure_art":
                    differing.append(name)
                    field_mismatch[name] += 1
            if differing:
                _note(cmp, tuple(differing), a, b)
        for a in avg_lines[i1 + paired : i2]:
            cmp.only_avg += 1
            stats["text"].compared += 1
            _note(cmp, ("text",), a, None)
        for b in astr_lines[j1 + paired : j2]:
            cmp.only_astr += 1
            stats["text"].compared += 1
            _note(cmp, ("text",), None, b)
    _classify(cmp, field_mismatch)
    return cmp


def _note(cmp: StageComparison, fields: tuple[str, ...], a: Line | None, b: Line | None) -> None:
    if cmp.first_diff is not None:
        return
    cmp.first_diff = LineDiff(
        fields,
        a.line_no if a else None,
        b.line_no if b else None,
        a.text if a else None,
        b.text if b else None,
        a.speaker if a else None,
        b.speaker if b else None,
        str(a.kind) if a else None,
        str(b.kind) if b else None,
    )


def _classify(cmp: StageComparison, field_mismatch: dict[str, int]) -> None:
    if cmp.first_diff is None:
        return
    text = cmp.fields["text"]
    reasons = []
    for name, count in field_mismatch.items():
        if count > MAX_FIELD_MISMATCHES:
            reasons.append(f"{count} {name} mismatches on lines whose text agrees")
    if cmp.runs > MAX_EDIT_RUNS:
        reasons.append(f"{cmp.runs} scattered runs of text differences")
    if text.compared and 1 - text.share > MAX_EDIT_SHARE:
        reasons.append(f"{1 - text.share:.0%} of lines differ in text")
    if reasons:
        cmp.category = "parser-suspect"
    else:
        cmp.category = "edit"
        reasons.append(f"{cmp.runs} run(s): {cmp.only_avg} raw-only, {cmp.only_astr} ASTR-only")
    cmp.reasons = reasons


def _stage_files(
    root: Path,
    files: Callable[[Path], Iterator[Path]],
    path_for: Callable[[Path, Path], str],
) -> dict[str, Path]:
    return {path_for(root, f): f for f in files(root)}


def crosscheck(
    avg_story_root: Path,
    astr_story_root: Path,
    progress: Callable[[int, int], None] | None = None,
) -> CrosscheckReport:
    """Compare every stage present in both sources, re-reading the files;
    ``progress(done, total)`` per stage."""
    raw = _stage_files(avg_story_root, avg.iter_avg_files, avg.stage_path_for)
    parsed = _stage_files(astr_story_root, astr.iter_astr_files, astr.stage_path_for)

    def load(stage_path: str) -> tuple[list[Line], list[Line]]:
        a = avg.read_avg_stage(avg_story_root, raw[stage_path])
        b = astr.read_astr_stage(astr_story_root, parsed[stage_path])
        return a.lines, b.lines

    return _compare_all(set(raw), set(parsed), load, progress)


def crosscheck_store(
    store: Store, progress: Callable[[int, int], None] | None = None
) -> CrosscheckReport:
    """The same comparison on what ``arklore ingest`` stored: no re-parsing, seconds not minutes."""
    return _compare_all(
        set(store.stage_paths("avg")),
        set(store.stage_paths("astr")),
        lambda p: (store.lines(p, "avg"), store.lines(p, "astr")),
        progress,
    )


def _compare_all(
    raw: set[str],
    parsed: set[str],
    load: Callable[[str], tuple[list[Line], list[Line]]],
    progress: Callable[[int, int], None] | None,
) -> CrosscheckReport:
    report = CrosscheckReport(
        only_in_avg=sorted(raw - parsed),
        only_in_astr=sorted(parsed - raw),
    )
    common = sorted(raw & parsed)
    for done, stage_path in enumerate(common, 1):
        try:
            a_lines, b_lines = load(stage_path)
        except MalformedSourceError as exc:
            report.errors[exc.path] = exc.reason
            continue
        cmp = compare_stage(a_lines, b_lines)
        cmp.stage_path = stage_path
        report.stages_compared += 1
        for name, stats in cmp.fields.items():
            report.fields[name].add(stats)
        if not cmp.agrees:
            report.disagreeing.append(cmp)
        if progress is not None:
            progress(done, len(common))
    return report
