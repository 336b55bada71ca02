"""The distillation run: tasks A-E over operators -> checked results -> ``.char`` files.

Per task and operator (see the task modules :mod:`~arklore.profiles.task_a` ... ``task_e``):

1. An operator whose profile is tier S (written by a person, in the output folder or the
   registered ``ARKLORE_CHARS_DIR``) is skipped, every task recorded as skipped.
2. A task with a model configured becomes one LLM job (task names ``distill_a`` ...
   ``distill_d``, each with its own ``LLM_DISTILL_<X>_MODEL`` / ``_BASE_URL`` / ``_API_KEY``);
   with ``resume`` a job whose stored result came from the very same request and model is
   not sent again. A task without a model runs its documented rule (A: the structured anchor;
   B: quotes by the rule; E: always the rule) or is recorded as skipped (C, D).
3. Jobs run through the shared task runner, :func:`arklore.llm.runs.run_task` (bounded
   concurrency, retries, circuit breaker, ``max_cost``). Each answer is checked by its task
   (shape and lengths first: a bad answer is retried, up to ``--retry`` times, then the task
   fails for her and is recorded; then the item gates: verbatim quotes, anchor fields equal
   to the source, people her documents are about) and stored in ``distill_results`` in its
   own transaction.
4. Every selected operator's profile is then assembled from her stored results
   (:mod:`~arklore.profiles.assemble`, which checks everything again) and written through the
   protective writer: atomically, never over a tier-S or hand-edited file (the draft goes
   beside it). A killed run leaves whole files or none, and its stored results: a rerun
   resumes and writes the same files as an uninterrupted run.

Failures and gate findings are appended to the errors file (``distill_errors.jsonl``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from arklore.corpus.store import Store
from arklore.graph.model import RelationGraph
from arklore.llm import ChatModel, ChatResult, Estimate, Job, LLMFiles, Prices, estimate
from arklore.llm.errorlog import ErrorLog
from arklore.llm.runs import Progress, TaskRunReport, TaskSpec, run_task
from arklore.profiles import task_a, task_b, task_c, task_d, task_e
from arklore.profiles.assemble import assemble
from arklore.profiles.charfile import SUFFIX, CharProfile, write_profile
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.results import FAILED, SKIPPED, TASKS, TaskResult, load_results, reusable
from arklore.profiles.results import save_results as _save

LLM_TASKS: dict[str, ModuleType] = {"A": task_a, "B": task_b, "C": task_c, "D": task_d}
TASK_NAMES: dict[str, str] = {k: m.TASK for k, m in LLM_TASKS.items()}
"""Task letter -> the LLM task name whose settings it uses (``LLM_DISTILL_A_MODEL``...)."""


PROTECTED = "tier S profile"
"""How the reason of every task skipped for a tier-S profile begins."""


def parse_tasks(spec: Iterable[str]) -> list[str]:
    """``A``, ``b``, ``all``, ``A,C`` -> the task letters in order; ValueError when unknown
    or when none is named (``--task ""``)."""
    out: set[str] = set()
    for raw in spec:
        for part in str(raw).replace(",", " ").split():
            p = part.strip().upper()
            if p == "ALL":
                out.update(TASKS)
            elif p in TASKS:
                out.add(p)
            else:
                raise ValueError(f"unknown task {part!r}")
    if not out:
        raise ValueError("no task named")
    return [t for t in TASKS if t in out]


def char_path(char_dir: Path, char_id: str) -> Path:
    return Path(char_dir) / f"{char_id}{SUFFIX}"


@dataclass
class DistillReport(TaskRunReport):
    """The shared counts of a task run (``jobs``: task x operator requests; ``skipped``,
    also given as ``resumed``: results reused from an earlier run) and the distillation's own:
    per task the results by status, the files written, the gate findings."""

    operators: int = 0
    tasks: list[str] = field(default_factory=list)
    llm_tasks: list[str] = field(default_factory=list)  # tasks run with a model
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)  # task -> status -> n
    writes: dict[str, int] = field(default_factory=dict)  # written | unchanged | draft | none
    files: dict[str, str] = field(default_factory=dict)  # char id -> path written (or draft)
    protected: dict[str, str] = field(default_factory=dict)  # char id -> tier-S file skipped
    findings: list[str] = field(default_factory=list)  # "<char_id> <task>: ..." (current results)
    generated_at: str = ""

    @property
    def resumed(self) -> int:
        """Results reused from an earlier run (the shared ``skipped``)."""
        return self.skipped

    @property
    def finding_count(self) -> int:
        return len(self.findings)

    @property
    def partial(self) -> bool:
        """Jobs failed in this run, or a task whose stored result is failed (an answer that
        did not pass its shape check, a failure of an earlier run)."""
        return super().partial or any(s.get(FAILED) for s in self.statuses.values())

    def to_dict(self) -> dict[str, Any]:
        return self.counts() | {
            "resumed": self.resumed,
            "operators": self.operators,
            "tasks": self.tasks,
            "llm_tasks": self.llm_tasks,
            "statuses": self.statuses,
            "writes": self.writes,
            "files": self.files,
            "protected": self.protected,
            "findings": self.findings,
            "generated_at": self.generated_at,
        }


def _record(errors: ErrorLog | None, r: TaskResult, run_id: str) -> None:
    if errors is None:
        return
    task = TASK_NAMES.get(r.task, f"distill_{r.task.lower()}")
    if r.status == FAILED:
        errors.record(
            key=r.char_id, task=task, reason=f"failed: {r.reason}", attempts=0, run_id=run_id,
            model=r.model,
        )  # fmt: skip
    for f in r.findings:
        errors.record(
            key=r.char_id, task=task, reason=f"finding: {f}", attempts=0, run_id=run_id,
            model=r.model,
        )  # fmt: skip


def run_distill(
    store: Store,
    inputs: Sequence[OperatorInputs],
    tasks: Sequence[str],
    *,
    out_dir: Path,
    llm: ChatModel | None = None,
    llm_tasks: Iterable[str] = (),
    models: Mapping[str, str] | None = None,
    protected: Mapping[str, Path] | None = None,
    files: LLMFiles | None = None,
    errors_path: Path | None = None,
    concurrency: int = 8,
    resume: bool = True,
    stop_after_unreachable: int = 5,
    max_cost: float | None = None,
    generated_at: str,
    progress: Progress | None = None,
    secrets: Sequence[str] = (),
) -> DistillReport:
    """Run ``tasks`` for every operator of ``inputs`` and write their profiles to
    ``out_dir`` (see the module docstring). ``llm_tasks``: the letters that have a model
    (``llm`` answers them); ``models``: letter -> the configured model name, what resume
    compares; ``protected``: char id -> her tier-S file found elsewhere (never written)."""
    tasks = [t for t in TASKS if t in set(tasks)]
    with_llm = [t for t in tasks if t in set(llm_tasks) and t in LLM_TASKS] if llm else []
    models = dict(models or {})
    report = DistillReport(operators=len(inputs), tasks=tasks, llm_tasks=with_llm)
    report.generated_at = generated_at
    errors = ErrorLog(errors_path, secrets) if errors_path is not None else None
    run_id = llm.run_id if llm is not None else f"distill-{int(time.time())}"
    out_dir = Path(out_dir)
    _sweep_temp_files(out_dir)
    stored = load_results(store, [i.char_id for i in inputs])
    protected = dict(protected or {})
    for inp in inputs:
        path = char_path(out_dir, inp.char_id)
        if inp.char_id not in protected and path.exists():
            prof = CharProfile.read(path)
            if prof.tier == "S":
                protected[inp.char_id] = path

    results: list[TaskResult] = []
    jobs: list[Job] = []
    for inp in inputs:
        if inp.char_id in protected:
            report.protected[inp.char_id] = str(protected[inp.char_id])
            why = f"{PROTECTED} ({protected[inp.char_id]}): never regenerated"
            results += [TaskResult(t, inp.char_id, SKIPPED, why) for t in tasks]
            continue
        for t in tasks:
            if t == "E":
                results.append(task_e.rule_result(inp))
                continue
            mod = LLM_TASKS[t]
            if t not in with_llm:
                results.append(mod.rule_result(inp))
                continue
            req = mod.build_request(inp)
            if req is None:
                results.append(mod.no_request_result(inp))
                continue
            jobs.append(Job(req, context=(t, inp)))
    _save(store, results)
    for r in results:
        _record(errors, r, run_id)

    if llm is not None:
        spec = _model_tasks(store, jobs, report, stored, models, errors, run_id)
        run_task(
            spec, llm, resume=resume, files=files, concurrency=concurrency, progress=progress,
            stop_after_unreachable=stop_after_unreachable, max_cost=max_cost,
        )  # fmt: skip
    report.errors_file = str(errors_path or "")

    # assemble and write every operator that is not protected
    final = load_results(store, [i.char_id for i in inputs])
    writes: Counter[str] = Counter()
    for n, inp in enumerate(inputs, 1):
        mine = final.get(inp.char_id, {})
        for t in tasks:
            got = mine.get(t)
            if got is not None:
                report.statuses.setdefault(t, {}).setdefault(got.status, 0)
                report.statuses[t][got.status] += 1
                report.findings += [f"{inp.char_id} {t}: {f}" for f in got.findings]
        if inp.char_id in protected:
            continue
        built = assemble(inp, mine, generated_at=generated_at)
        for f in built.findings:
            report.findings.append(f"{inp.char_id} assembly: {f}")
            if errors is not None:
                errors.record(key=inp.char_id, task="distill", reason=f"finding: {f}",
                              attempts=0, run_id=run_id)  # fmt: skip
        if built.text is None:
            writes["none"] += 1
            continue
        res = write_profile(char_path(out_dir, inp.char_id), built.text)
        writes[res.action] += 1
        report.files[inp.char_id] = str(res.path)
        if progress:
            progress("write profiles", n, len(inputs))
    report.writes = dict(writes)
    return report


def refresh_task_e(store: Store, graph: RelationGraph | None, char_ids: Sequence[str]) -> int:
    """Task E again for ``char_ids`` against ``graph``, storing the results that changed;
    returns how many. Task E reads the graph and nothing else, and no ``.char`` section
    comes from it: after a graph change with the same operators, names and protected
    profiles, this leaves the store as a whole :func:`run_distill` would (an operator whose
    tasks were skipped for her tier-S profile keeps that result)."""
    stored = load_results(store, char_ids)
    changed: list[TaskResult] = []
    for cid in char_ids:
        old = stored.get(cid, {}).get(task_e.LETTER)
        if old is not None and old.status == SKIPPED and old.reason.startswith(PROTECTED):
            continue
        new = task_e.result_for(graph, cid)
        if old is None or (old.status, old.reason, old.output) != (
            new.status, new.reason, new.output
        ):  # fmt: skip
            changed.append(new)
    _save(store, changed)
    return len(changed)


def _model_tasks(
    store: Store,
    jobs: list[Job],
    report: DistillReport,
    stored: Mapping[str, Mapping[str, TaskResult]],
    models: Mapping[str, str],
    errors: ErrorLog | None,
    run_id: str,
) -> TaskSpec:
    """The run of the model's tasks: a result stored from the very same request and model
    is reused; each answer is checked by its task and stored at once; a job given up on
    stores its task's failed result."""

    def model_of(letter: str, result: ChatResult | None = None) -> str:
        return models.get(letter, "") or (result.model if result else "")

    def reused(job: Job) -> bool:
        letter, inp = job.context
        have = stored.get(inp.char_id, {}).get(letter)
        return reusable(have, job.request.fingerprint(), model_of(letter))

    def keep(r: TaskResult) -> None:
        _save(store, [r])
        _record(errors, r, run_id)

    def handler(job: Job, result: ChatResult) -> str:
        letter, inp = job.context
        r = LLM_TASKS[letter].apply(inp, result.parsed, model=model_of(letter, result))
        r.model = model_of(letter, result)
        r.fingerprint = job.request.fingerprint()
        keep(r)
        return f"{letter}:{inp.char_id}:{r.status}"

    def on_failed(job: Job, why: str) -> None:
        letter, inp = job.context
        r = LLM_TASKS[letter].failed_result(inp, why)
        r.model = model_of(letter)
        keep(r)

    return TaskSpec("distill", jobs, handler, report, stored=reused, on_failed=on_failed)


def _sweep_temp_files(out_dir: Path) -> None:
    """Temporary files a killed write left behind (``.<name>.char.*.tmp``): never a profile."""
    if out_dir.is_dir():
        for p in out_dir.glob(f".*{SUFFIX}*.tmp"):
            p.unlink(missing_ok=True)


def dry_run(
    inputs: Sequence[OperatorInputs],
    tasks: Sequence[str],
    prices: Callable[[str], Prices],
) -> dict[str, Estimate]:
    """Task letter -> the tokens and cost of its requests for ``inputs``; nothing is sent."""
    out: dict[str, Estimate] = {}
    for t in tasks:
        mod = LLM_TASKS.get(t)
        if mod is None:
            continue
        reqs = [r for inp in inputs if (r := mod.build_request(inp)) is not None]
        out[t] = estimate(
            reqs, expected_output_tokens=mod.EXPECTED_OUTPUT_TOKENS, prices=prices(mod.TASK)
        )
    return out


def total_estimate(parts: Mapping[str, Estimate]) -> Estimate:
    vals = list(parts.values())
    return Estimate(
        requests=sum(e.requests for e in vals),
        input_tokens=sum(e.input_tokens for e in vals),
        output_tokens=sum(e.output_tokens for e in vals),
        cost_usd=sum(e.cost_usd for e in vals),
        cached_input_tokens=sum(e.cached_input_tokens for e in vals),
        cost_with_cache_usd=sum(e.cost_with_cache_usd for e in vals),
        input_chars=sum(e.input_chars for e in vals),
    )
