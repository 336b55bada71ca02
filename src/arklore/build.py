"""``arklore build``: everything a chat needs from the data, with no LLM, as one resumable job.

Steps, in order (each a facade call the single-step commands make too):

==============  ================================================================  ==============
step            what                                                              skipped when
==============  ================================================================  ==============
``ingest``      both story sources -> the store, names (unchanged stages skip)    never (cheap)
``graph``       the relation graph (corpus, curated matrix, imports)              same inputs
``appearances`` every operator's stages, one corpus pass                         same names
``profiles``    a rule-built ``.char`` per operator (tasks A, B, C, E; no model)  same inputs
``index``       the relation index (evidence-built texts, embedded)               same inputs
``exemplars``   scene windows of each operator's own lines (her voice per turn)   same names
==============  ================================================================  ==============

"Same names" is the names layer's state: the corpus, the user alias file and what the names
tables were computed with (registry, names rules); every step after ingest depends on it.
Each finished step records the fingerprint of its inputs (and of the arklore version that ran
it: a new release may build differently from the same data) in ``$ARKLORE_HOME/build.json``
(written atomically after every step), so a build that was killed resumes at the first step
whose inputs changed or that never finished; ``force`` runs every step again.

While it runs, the home is marked incomplete (:mod:`arklore.base.buildmark`: the steps this
build finished so far); the mark is removed when every step is done. Turns on a home left
incomplete (killed, Ctrl-C, an error) carry a warning naming the missing steps, and exports
refuse it unless told otherwise.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from arklore import __version__
from arklore.base.buildmark import BUILD_STEPS, BuildMark
from arklore.base.files import atomic_write_bytes, file_sha
from arklore.workspace import Workspace

Progress = Callable[[str, int, int], None]

STEPS: tuple[str, ...] = BUILD_STEPS
RULE_TASKS = ("A", "B", "C", "E")
"""The profile tasks with a rule (no model): anchor, quotes, her view of the Doctor, relation
candidates. Task D (her key people in her words) needs a model; ``arklore distill`` runs it."""

TRY_NEXT = (
    'arklore turn 陈 "你还记得塔露拉吗"',
    'arklore turn 阿米娅 "你好"',
    "arklore chat 银灰",
    "arklore serve    # then open http://127.0.0.1:8000/",
    "arklore eval fidelity",
)


@dataclass
class StepResult:
    name: str
    skipped: bool = False
    seconds: float = 0.0
    summary: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "skipped": self.skipped, "seconds": round(self.seconds, 2),
                "summary": self.summary}  # fmt: skip


@dataclass
class BuildReport:
    steps: list[StepResult] = field(default_factory=list)
    seconds: float = 0.0
    exit_code: int = 0  # a step's own exit code when it finished with items to review
    ahead: dict[str, Any] | None = None
    """The relation documents' texts embedded in worker processes from the end of the graph
    step to the index step: ``documents_seconds`` (making the documents, here, between the
    two steps: in no step's time), ``overlapped`` (the steps that ran meanwhile) and the
    workers' report (:class:`~arklore.rag.ahead.AheadReport`); None when not started."""

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": [s.to_dict() for s in self.steps],
            "seconds": round(self.seconds, 2),
            "exit_code": self.exit_code,
            "ahead": _rounded(self.ahead),
            "try_next": list(TRY_NEXT),
        }


class BuildState:
    """``build.json``: per step, the fingerprint of the inputs it last finished with."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, dict[str, Any]] = {}
        if path.is_file():
            try:
                loaded = orjson.loads(path.read_bytes())
                self.data = loaded if isinstance(loaded, dict) else {}
            except orjson.JSONDecodeError:
                self.data = {}  # a damaged state only costs a full build

    def done(self, step: str, inputs: str) -> bool:
        return (self.data.get(step) or {}).get("inputs") == inputs

    def record(self, step: str, inputs: str, summary: dict[str, Any]) -> None:
        self.data[step] = {"inputs": inputs, "summary": summary, "at": time.time()}
        atomic_write_bytes(self.path, orjson.dumps(self.data, option=orjson.OPT_INDENT_2))

    def forget(self, steps: Iterator[str] | tuple[str, ...]) -> None:
        for s in steps:
            self.data.pop(s, None)


def _rounded(d: dict[str, Any] | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in d.items()}


def _digest(*parts: object) -> str:
    return hashlib.sha256(orjson.dumps(parts, default=str)).hexdigest()[:16]


def run_build(
    ws: Workspace, *, force: bool = False, progress: Progress | None = None
) -> BuildReport:
    """Run every step (see the module doc); returns what each did and how long it took."""
    t_all = time.perf_counter()
    state = BuildState(ws.paths.home / "build.json")
    if force:
        state.forget(STEPS)
    report = BuildReport()
    mark = BuildMark(ws.paths.home)
    mark.start()  # the home is incomplete until every step below is done

    def run(name: str, inputs: str | None, fn: Callable[[], dict[str, Any]]) -> None:
        t = time.perf_counter()
        if inputs is not None:  # a new arklore may build differently from the same inputs
            inputs = _digest(__version__, inputs)
        if inputs is not None and state.done(name, inputs):
            summary = dict(state.data[name].get("summary") or {})
            report.steps.append(StepResult(name, True, time.perf_counter() - t, summary))
            mark.step_done(name)
            return
        summary = fn()
        if inputs is not None:
            state.record(name, inputs, summary)
        report.steps.append(StepResult(name, False, time.perf_counter() - t, summary))
        mark.step_done(name)

    def ingest() -> dict[str, Any]:
        rep = ws.ingest(progress=progress)
        if rep.errors:
            report.exit_code = max(report.exit_code, 3)
        return {"counts": rep.counts, "changed": rep.changed, "errors": len(rep.errors)}

    run("ingest", None, ingest)
    names = ws.names.state()  # the corpus, the user alias file and the names rules

    def graph() -> dict[str, Any]:
        built = ws.graph.build(progress=progress)
        return {"counts": built.graph.meta.get("counts", {}), "sha256": file_sha(ws.paths.graph),
                "corpus_pass": built.report["corpus_pass"]}  # fmt: skip

    graph_inputs = ws.graph.inputs()  # names, matrix, imports, extracted relations
    if file_sha(ws.paths.graph) != (state.data.get("graph") or {}).get("summary", {}).get("sha256"):
        state.forget(("graph",))  # the graph file was replaced or removed since
    run("graph", graph_inputs, graph)
    graph_sha = file_sha(ws.paths.graph)

    # The relation documents are made from the graph: when the index will be built again,
    # they are made now and their texts embedded in worker processes while the steps below
    # run here (the index step waits for them and finds the vectors in its cache).
    ahead = None
    if not report.step("graph").skipped or force or not ws.rag.built():
        t = time.perf_counter()
        ahead = ws.rag.embed_ahead(progress=progress)
        if ahead is not None:
            report.ahead = {"after": "graph", "documents_seconds": time.perf_counter() - t}
    try:
        # A step that runs does its work even when its own store says it is current: its inputs
        # here include the arklore version, which the store's own check does not know.
        def appearances() -> dict[str, Any]:
            return {"people": ws.events.index(progress=progress)}

        run("appearances", names, appearances)

        # The rule-built profiles read the names, the corpus and which operators a user file
        # protects; only task E (relation candidates, kept in the store) reads the graph. So a
        # graph change alone (a matrix, import or verdict edit) refreshes task E, not every file.
        rules = _digest(__version__, names, ws.profiles.protected_files(), RULE_TASKS)

        def profiles() -> dict[str, Any]:
            last = (state.data.get("profiles") or {}).get("summary") or {}
            if last.get("rules") == rules and ws.paths.chars.is_dir():
                return {**last, "candidates_refreshed": ws.profiles.refresh_candidates()}
            rep = ws.profiles.distill(list(RULE_TASKS), use_llm=False, progress=progress)
            tiers: dict[str, int] = {}
            for f in ws.profiles.all():
                tiers[f.profile.tier] = tiers.get(f.profile.tier, 0) + 1
            return {"operators": rep.operators, "writes": rep.writes, "tiers": tiers,
                    "statuses": rep.statuses, "rules": rules}  # fmt: skip

        profile_inputs = _digest(rules, graph_sha)
        run("profiles", profile_inputs, profiles)

        def index() -> dict[str, Any]:
            embedded_ahead = 0
            if ahead is not None and report.ahead is not None:
                done = ahead.wait(progress)  # the texts embedded while the steps above ran
                report.ahead |= done.to_dict() | {
                    "overlapped": [
                        s.name for s in report.steps if s.name not in ("ingest", "graph")
                    ]
                }
                embedded_ahead = done.embedded
            # the live collection is patched in place (only changed documents are written),
            # but with ``force``, which fills a new one
            rep = ws.build_index(no_llm=True, force=True, patch=not force, progress=progress)
            return {"documents": rep.documents, "embedded": rep.embedded,
                    "embedded_ahead": embedded_ahead, "cached": rep.cached,
                    "unchanged": rep.unchanged, "embedder": rep.embedder,
                    "by_source": rep.by_source, "patched": rep.patched, "described": rep.described,
                    "timings": rep.timings}  # fmt: skip

        # the index's own digest: graph, names, profiles (every .char folder), embedder and its
        # document rules
        index_inputs = ws.index_inputs(no_llm=True)
        if not ws.rag.built():
            state.forget(("index",))
        run("index", index_inputs, index)

        def exemplars() -> dict[str, Any]:
            rep = ws.rag.index_exemplars(progress=progress, force=True)
            return {"windows": rep.windows, "operators": rep.operators, "stages": rep.stages}

        if not ws.rag.exemplars_built():
            state.forget(("exemplars",))
        run("exemplars", names, exemplars)
        mark.finish()
    finally:
        if ahead is not None:
            ahead.close()  # stopped by Ctrl-C or an error: its finished batches stay

    report.seconds = time.perf_counter() - t_all
    return report
