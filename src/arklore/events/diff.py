"""``arklore events diff RUN_A RUN_B``: two extractions of the same stages compared by
line-range overlap.

A **run** is one extraction's output, named by where it lives:

* an export folder (``arklore extract events ... --out runs/flash-v1``): every
  ``story_events_*.json`` in it;
* one exported ``story_events_<stage>.json`` file;
* ``@store``: the events the store holds now (the last extraction of each stage).

The API has no seed, so another model or prompt version cuts the same story differently
(one stage was seen split into 19, 28 and 27 events by three runs). Events of the two runs
are linked when their line ranges share at least half of the shorter one (and at least one
line), which ignores the shared boundary line two neighbouring events often have. Each
connected group of linked events is then one of: **matched** (1 ↔ 1), **split** (1 in A ↔ n
in B), **merged** (n in A ↔ 1 in B), **reshaped** (n ↔ m), **missing** (an A event with no B
counterpart) or **new** (a B event with no A counterpart).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from arklore.core.errors import InputFileError, UsageError
from arklore.events.checks import CheckedEvent

STORE_RUN = "@store"
MIN_SHARE = 0.5


@dataclass(frozen=True)
class Span:
    idx: int
    start: int
    end: int
    summary: str

    @property
    def size(self) -> int:
        return self.end - self.start + 1


@dataclass
class Run:
    label: str
    stages: dict[str, list[Span]]
    models: list[str] = field(default_factory=list)
    prompt_versions: list[str] = field(default_factory=list)


def spans_of_events(events: Iterable[CheckedEvent]) -> list[Span]:
    return [
        Span(e.idx, e.line_start, e.line_end, e.summary)
        for e in events
        if e.kept and e.line_start is not None and e.line_end is not None
    ]


def _spans_of_doc(doc: dict[str, Any], where: str) -> list[Span]:
    try:
        return [
            Span(int(e["idx"]), int(e["line_start"]), int(e["line_end"]), str(e.get("summary", "")))
            for e in doc["events"]
            if e.get("line_start") is not None and e.get("line_end") is not None
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputFileError(where, "events", f"not a story_events export ({exc})") from None


def load_run_files(label: str, files: list[Path]) -> Run:
    run = Run(label, {})
    models: set[str] = set()
    versions: set[str] = set()
    for f in files:
        try:
            doc = orjson.loads(f.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InputFileError(str(f), "file", f"cannot read it as JSON ({exc})") from None
        if not isinstance(doc, dict) or "stage" not in doc:
            raise InputFileError(str(f), "stage", "not a story_events export")
        run.stages[str(doc["stage"])] = _spans_of_doc(doc, str(f))
        models.update(doc.get("models") or [])
        if doc.get("prompt_version"):
            versions.add(str(doc["prompt_version"]))
    run.models, run.prompt_versions = sorted(models), sorted(versions)
    return run


def run_files(spec: str) -> list[Path]:
    """The export files a RUN names (a folder or one file)."""
    path = Path(spec)
    if path.is_dir():
        files = sorted(path.glob("story_events_*.json"))
        if not files:
            raise UsageError(
                f"no story_events_*.json in {path}",
                hint="a RUN is an export folder of `arklore extract events --out DIR`, "
                "one story_events_<stage>.json, or @store",
            )
        return files
    if path.is_file():
        return [path]
    raise UsageError(
        f"no run at {spec!r}",
        hint="a RUN is an export folder of `arklore extract events --out DIR`, "
        "one story_events_<stage>.json, or @store",
    )


def linked(a: Span, b: Span, min_share: float = MIN_SHARE) -> bool:
    """Do two events cover the same happening: they share at least ``min_share`` of the
    shorter one's lines (and at least one line)?"""
    inter = min(a.end, b.end) - max(a.start, b.start) + 1
    return inter >= max(1, math.ceil(min_share * min(a.size, b.size)))


@dataclass
class Group:
    kind: str  # matched | split | merged | reshaped | missing | new
    a: list[Span]
    b: list[Span]


@dataclass
class StageDiff:
    stage: str
    a_events: int
    b_events: int
    groups: list[Group]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for g in self.groups:
            out[g.kind] += 1
        return out


KINDS = ("matched", "split", "merged", "reshaped", "missing", "new")


@dataclass
class RunDiff:
    a: str
    b: str
    a_models: list[str]
    b_models: list[str]
    a_prompt_versions: list[str]
    b_prompt_versions: list[str]
    stages: list[StageDiff]
    only_in_a: list[str]
    only_in_b: list[str]
    min_share: float = MIN_SHARE

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for s in self.stages:
            for k, v in s.counts().items():
                out[k] += v
        return out

    def to_dict(self) -> dict[str, Any]:
        a_events = sum(s.a_events for s in self.stages)
        b_events = sum(s.b_events for s in self.stages)
        counts = self.counts()
        return {
            "a": self.a,
            "b": self.b,
            "a_models": self.a_models,
            "b_models": self.b_models,
            "a_prompt_versions": self.a_prompt_versions,
            "b_prompt_versions": self.b_prompt_versions,
            "min_share": self.min_share,
            "stages_compared": len(self.stages),
            "a_events": a_events,
            "b_events": b_events,
            "counts": counts,
            "matched_share": counts["matched"] / max(a_events, b_events, 1),
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "stages": [
                {"stage": s.stage, "a_events": s.a_events, "b_events": s.b_events,
                 "counts": s.counts(), "groups": [asdict(g) for g in s.groups]}
                for s in self.stages
            ],
        }  # fmt: skip


def diff_stage(stage: str, a: list[Span], b: list[Span], min_share: float = MIN_SHARE) -> StageDiff:
    """Group the two runs' events of one stage by line-range overlap."""
    nodes = [("a", s) for s in a] + [("b", s) for s in b]
    parent = list(range(len(nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, sa in enumerate(a):
        for j, sb in enumerate(b):
            if linked(sa, sb, min_share):
                parent[find(len(a) + j)] = find(i)
    comps: dict[int, list[int]] = {}
    for i in range(len(nodes)):
        comps.setdefault(find(i), []).append(i)
    groups = []
    for members in comps.values():
        ga = [nodes[i][1] for i in members if nodes[i][0] == "a"]
        gb = [nodes[i][1] for i in members if nodes[i][0] == "b"]
        if not gb:
            kind = "missing"
        elif not ga:
            kind = "new"
        elif len(ga) == 1 and len(gb) == 1:
            kind = "matched"
        elif len(ga) == 1:
            kind = "split"
        elif len(gb) == 1:
            kind = "merged"
        else:
            kind = "reshaped"
        groups.append(Group(kind, ga, gb))
    groups.sort(key=lambda g: min(s.start for s in g.a + g.b))
    return StageDiff(stage, len(a), len(b), groups)


def diff_runs(a: Run, b: Run, min_share: float = MIN_SHARE) -> RunDiff:
    """Compare the stages both runs extracted; list the stages only one of them has."""
    common = sorted(set(a.stages) & set(b.stages))
    return RunDiff(
        a.label,
        b.label,
        a.models,
        b.models,
        a.prompt_versions,
        b.prompt_versions,
        [diff_stage(s, a.stages[s], b.stages[s], min_share) for s in common],
        sorted(set(a.stages) - set(b.stages)),
        sorted(set(b.stages) - set(a.stages)),
        min_share,
    )


def render_text(d: RunDiff) -> str:
    data = d.to_dict()
    c = data["counts"]
    out = [
        f"A: {d.a} ({', '.join(d.a_models) or '?'}; {', '.join(d.a_prompt_versions) or '?'})",
        f"B: {d.b} ({', '.join(d.b_models) or '?'}; {', '.join(d.b_prompt_versions) or '?'})",
        f"{data['stages_compared']} stages compared: {data['a_events']} events in A, "
        f"{data['b_events']} in B",
        f"matched {c['matched']}, split {c['split']}, merged {c['merged']}, reshaped "
        f"{c['reshaped']}, missing in B {c['missing']}, new in B {c['new']} "
        f"(matched share {data['matched_share']:.0%})",
    ]
    if d.only_in_a or d.only_in_b:
        out.append(f"stages only in A: {len(d.only_in_a)}, only in B: {len(d.only_in_b)}")
    for s in d.stages:
        if all(g.kind == "matched" for g in s.groups):
            continue
        out.append("")
        out.append(f"{s.stage}: A {s.a_events} events, B {s.b_events}")
        for g in s.groups:
            if g.kind == "matched":
                continue
            ra = ", ".join(f"{x.start}-{x.end}" for x in g.a) or "-"
            rb = ", ".join(f"{x.start}-{x.end}" for x in g.b) or "-"
            out.append(f"  {g.kind:<9} A[{ra}]  B[{rb}]")
    return "\n".join(out)
