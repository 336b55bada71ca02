"""The distillation run: tasks A-E over operators -> checked results -> ``.char`` files.

Per task and operator (see the task modules :mod:`~arklore.profiles.task_a` ... ``task_e``):

1. An operator whose profile is tier S (written by a person, in the output folder or the
   registered ``ARKLORE_CHARS_DIR``) is skipped, every task recorded as skipped.
2. A task with a model configured becomes one LLM job (task names ``distill_a`` ...
   ``distill_d``, each with its own ``LLM_DISTILL_<X>_MODEL`` / ``_BASE_URL`` / ``_API_KEY``);
   with ``resume`` a job whose stored result came from the very same request and model is
   not sent again. A task without a model runs its documented rule (A: the structured anchor;
   B: quotes by the rule; E: always the rule) or is recorded as skipped (C, D).
3. Jobs run through :func:`arklore.llm.run_jobs` (bounded concurrency, retries, circuit
   breaker, ``max_cost``). Each answer is checked by its task (shape and lengths first: a
   bad answer is retried, up to ``--retry`` times, then the task fails for her and is
   recorded; then the item gates: verbatim quotes, anchor fields equal to the source, people
   her documents are about) and stored in ``distill_results`` in its own transaction.
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

from arklore.core.errors import EXIT_FINDINGS, EXIT_OK, EXIT_PARTIAL, RunStoppedError
from arklore.corpus.store import Store
from arklore.llm import ChatModel, ChatResult, Estimate, Job, LLMFiles, Prices, estimate, run_jobs
from arklore.llm.errorlog import ErrorLog
from arklore.llm.jobs import JobsSummary, JobStore
from arklore.profiles import task_a, task_b, task_c, task_d, task_e
from arklore.profiles.assemble import assemble
from arklore.profiles.charfile import SUFFIX, CharProfile, write_profile
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.results import FAILED, SKIPPED, TASKS, TaskResult, load_results, reusable
from arklore.profiles.results import save_results as _save

LLM_TASKS: dict[str, ModuleType] = {"A": task_a, "B": task_b, "C": task_c, "D": task_d}
TASK_NAMES: dict[str, str] = {k: m.TASK for k, m in LLM_TASKS.items()}
"""Task letter -> the LLM task name whose settings it uses (``LLM_DISTILL_A_MODEL``...)."""

Progress = Callable[[str, int, int], None]


def parse_tasks(spec: Iterable[str]) -> list[str]:
    """``A``, ``b``, ``all``, ``A,C`` -> the task letters in order; ValueError when unknown."""
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
    return [t for t in TASKS if t in out]


def char_path(char_dir: Path, char_id: str) -> Path:
    return Path(char_dir) / f"{char_id}{SUFFIX}"


@dataclass
class DistillReport:
    operators: int = 0
    tasks: list[str] = field(default_factory=list)
    llm_tasks: list[str] = field(default_factory=list)  # tasks run with a model
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)  # task -> status -> n
    jobs: int = 0
    done: int = 0
    cached: int = 0
    resumed: int = 0  # results reused from an earlier run
    failed: int = 0
    not_started: int = 0
    stopped: RunStoppedError | None = None
    writes: dict[str, int] = field(default_factory=dict)  # written | unchanged | draft | none
    files: dict[str, str] = field(default_factory=dict)  # char id -> path written (or draft)
    protected: dict[str, str] = field(default_factory=dict)  # char id -> tier-S file skipped
    findings: list[str] = field(default_factory=list)  # "<char_id> <task>: ..." (current results)
    cost_line: str = ""
    errors_file: str = ""
    generated_at: str = ""

    @property
    def exit_code(self) -> int:
        """Stopped (4) > failed tasks (3) > gate findings (5) > ok (0)."""
        if self.stopped is not None:
            return self.stopped.exit_code
        if self.failed or any(s.get(FAILED) for s in self.statuses.values()):
            return EXIT_PARTIAL
        return EXIT_FINDINGS if self.findings else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in vars(self).items() if k != "stopped"}
        d["stopped"] = self.stopped.one_line() if self.stopped else None
        d["exit_code"] = self.exit_code
        return d


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
    report.errors_file = str(errors_path or "")
    run_id = getattr(llm, "run_id", "") or f"distill-{int(time.time())}"
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
    by_key: dict[tuple[str, str], OperatorInputs] = {}
    for inp in inputs:
        if inp.char_id in protected:
            report.protected[inp.char_id] = str(protected[inp.char_id])
            why = f"tier S profile ({protected[inp.char_id]}): never regenerated"
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
            fp, model = req.fingerprint(), models.get(t, "")
            if resume and reusable(stored.get(inp.char_id, {}).get(t), fp, model):
                report.resumed += 1
                continue
            jobs.append(Job(req, context=(t, inp)))
            by_key[(req.task, req.key)] = inp
    _save(store, results)
    for r in results:
        _record(errors, r, run_id)
    report.jobs = len(jobs) + report.resumed

    if jobs and llm is not None:
        _run_jobs(store, llm, jobs, report, models, files, errors, run_id, progress,
                  concurrency=concurrency, stop_after_unreachable=stop_after_unreachable,
                  max_cost=max_cost)  # fmt: skip

    # assemble and write every operator that is not protected
    final = load_results(store, [i.char_id for i in inputs])
    writes: Counter[str] = Counter()
    for n, inp in enumerate(inputs, 1):
        mine = final.get(inp.char_id, {})
        for t in tasks:
            r = mine.get(t)
            if r is not None:
                report.statuses.setdefault(t, {}).setdefault(r.status, 0)
                report.statuses[t][r.status] += 1
                report.findings += [f"{inp.char_id} {t}: {f}" for f in r.findings]
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
    cost_line = getattr(llm, "format_cost_line", None)
    report.cost_line = cost_line() if cost_line else ""
    return report


def _run_jobs(
    store: Store,
    llm: ChatModel,
    jobs: list[Job],
    report: DistillReport,
    models: Mapping[str, str],
    files: LLMFiles | None,
    errors: ErrorLog | None,
    run_id: str,
    progress: Progress | None,
    *,
    concurrency: int,
    stop_after_unreachable: int,
    max_cost: float | None,
) -> None:
    done: set[tuple[str, str]] = set()

    def handler(job: Job, result: ChatResult) -> str:
        letter, inp = job.context
        mod = LLM_TASKS[letter]
        r = mod.apply(inp, result.parsed, model=models.get(letter, "") or result.model)
        r.model = models.get(letter, "") or result.model
        r.fingerprint = job.request.fingerprint()
        _save(store, [r])
        _record(errors, r, run_id)
        done.add((job.task, job.key))
        return f"{letter}:{inp.char_id}:{r.status}"

    def on_progress(s: JobsSummary) -> None:
        if progress:
            progress("distill", report.resumed + s.finished, report.jobs)

    t0 = time.time()
    files = files or getattr(llm, "files", None)
    summary = run_jobs(
        jobs,
        llm,
        handler=handler,
        concurrency=concurrency,
        resume=False,  # decided above from the stored results
        progress=on_progress,
        files=files,
        stop_after_unreachable=stop_after_unreachable,
        max_cost=max_cost,
    )
    report.done, report.cached, report.failed = summary.done, summary.cached, summary.failed
    report.stopped, report.not_started = summary.stopped, summary.not_started
    if not summary.failed or files is None:
        return
    js = JobStore(files.state)
    failed: list[TaskResult] = []
    try:
        for job in jobs:
            if (job.task, job.key) in done:
                continue
            row = js.db.query(
                "SELECT status, fingerprint, error, updated FROM llm_jobs"
                " WHERE task = ? AND key = ?",
                (job.task, job.key),
            )
            if not row:
                continue
            status, fp, error, updated = row[0]
            if status != "failed" or fp != job.request.fingerprint() or updated < t0:
                continue  # not sent in this run (stopped early)
            letter, inp = job.context
            r = LLM_TASKS[letter].failed_result(inp, str(error or "failed"))
            r.model = models.get(letter, "")
            failed.append(r)
    finally:
        js.close()
    _save(store, failed)
    for r in failed:
        _record(errors, r, run_id)


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
