"""Prove the safety-gate tests bite: break each gate on purpose and check its tests then
fail (and pass unbroken).

Gates covered: the three evidence gates of relation extraction and the letters gate 3 reads
(tests/test_extract_gates.py; with ``--real`` and the real data present, ARKLORE_GAMEDATA and
ARKLORE_ASTR, each of their mutants again on the hand-checked real stages alone,
tests/test_extract_gates_realdata.py, a run that ingests the corpus once, rows
``<mutant>@realdata``),
RAG document validation before indexing and only an operator's view described
(tests/test_rag_docs.py), the chat-context token budget with the anchors beyond the first
three dropped first (tests/test_rag_context.py), the all-or-nothing stage write of ingest
(tests/test_ingest.py), anchor drift detection (tests/test_anchors.py), the profile gates
(the verbatim quote gate, the structured-field check against the archive, the writer that never
overwrites a tier-S or hand-edited file, the tier rule of what a chat may use:
tests/test_profiles_*.py and tests/test_distill.py) and the story-event checks (presence, first
person, time hints, chunk merging, line ranges, name normalization, choice branches:
tests/test_events_checks.py), the relation-description gate (length, no invented third person:
tests/test_rag_describe.py), extracted notes kept out of document text
(tests/test_rag_evidence.py, tests/test_rag_docs.py) and verify-anchors' citations of the
matrix, graph and index (tests/test_verify_citations.py), the approval's hand-edit check on
every entry point (tests/test_parity.py) and the tier-C rule outside a turn
(tests/test_rag_cli.py), and her scenes: windows never mixing choice branches, lines shown
verbatim, the player's placeholder rendered (tests/test_exemplars.py).

Run: ``.venv/bin/python bench/check_gate_mutants.py`` — prints mutant -> failed tests and
exits non-zero if any mutant survives (or hangs). Time limits are measured, not fixed: the
unbroken run (every gate test) is the baseline, bounded only by pytest's own per-test
timeout, and a mutant run (a subset of those tests) may take :data:`SLACK` times as long,
so a slow or loaded machine slows the limit with the runs. ``--no-baseline`` (what the test
suite runs: it runs those tests unbroken itself) skips the unbroken run; a mutant's test that
runs past pytest's per-test timeout then counts as hung. Each run is a subprocess
``pytest <the gate's tests> -p bench.check_gate_mutants`` with ARKLORE_GATE_MUTANT set;
imported as that plugin, this module patches the gate before the test modules are collected
(so names the tests import are the broken ones too).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENV = "ARKLORE_GATE_MUTANT"
#: a mutant run may take this many times the unbroken run of every gate test (it runs a
#: subset of them); longer means the mutant made a test hang, which does not count as caught
SLACK = 3.0


def _basis_max(gates: Any) -> None:
    from arklore.core.predicates import BASIS_RANK

    gates.evidence_basis = lambda supports: max(supports, key=BASIS_RANK.__getitem__)


def _presence_always_ok(gates: Any) -> None:
    from arklore.extract.presence import Presence

    gates.check_presence = lambda *a, **k: Presence(True, "mutant")


def _presence_always_down(gates: Any) -> None:
    from arklore.extract.presence import Presence

    gates.check_presence = lambda *a, **k: Presence(False, "mutant")


def _gate1_accepts_bool_float(gates: Any) -> None:
    original = gates.as_line_no
    gates.as_line_no = lambda v: int(v) if isinstance(v, bool | float) else original(v)


def _gate1_accepts_digit_strings(gates: Any) -> None:
    original = gates.as_line_no
    gates.as_line_no = lambda v: int(v) if isinstance(v, str) and v.isdigit() else original(v)


def _gate1_no_range_check(gates: Any) -> None:
    original = gates.check_evidence

    def unchecked(evidence, by_no):  # noqa: ANN001, ANN202
        items, drop = original(evidence, by_no)
        return items, None if drop is not None and drop.reason == "evidence_out_of_range" else drop

    gates.check_evidence = unchecked


def _letters_unread(_: Any) -> None:
    from arklore.extract import presence

    presence.find_letter = lambda line, by_no, speakers, resolve: None


def _letter_makes_anyone_present(_: Any) -> None:
    from arklore.extract import presence

    presence.letter_pair = lambda letter, a, b, same: True


def _rag_validation_disabled(_: Any) -> None:
    from arklore.rag import validate

    validate.check = lambda doc, graph: None


def _rag_budget_ignored(_: Any) -> None:
    from arklore.rag import context

    context.fit_budget = lambda name, a, c, budget, count, **kw: (a, c, context.render(name, a, c))


def _rag_budget_keeps_extra_anchors(_: Any) -> None:
    from arklore.rag import context

    original = context.fit_budget
    context.fit_budget = lambda name, a, c, budget, count, **kw: original(
        name, a, c, budget, count, **(kw | {"core": len(a)})
    )


def _npc_views_described(_: Any) -> None:
    from arklore.rag.docs import SourceContext

    SourceContext.speaks_in_chat = lambda self, node_id: True  # type: ignore[method-assign]


def _rag_budget_drops_anchors_first(_: Any) -> None:
    from arklore.rag import context

    def fit(name, anchors, contextual, budget, count, **kw):  # noqa: ANN001, ANN202
        anchors, contextual = list(anchors), list(contextual)
        while True:
            text = context.render(name, anchors, contextual)
            if not text or count(text) <= budget:
                return anchors, contextual, text
            (anchors or contextual).pop()

    context.fit_budget = fit


def _ingest_without_rollback(_: Any) -> None:
    from contextlib import contextmanager

    from arklore.corpus.store import Store

    @contextmanager
    def transaction(self):  # noqa: ANN001, ANN202
        if self.conn.in_transaction:
            yield self.conn
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")  # commits half-written work on a crash

    Store.transaction = transaction


def _anchor_drift_blind(_: Any) -> None:
    from arklore.corpus import anchors

    anchors._compare = lambda *a, **k: None


def _verbatim_gate_disabled(_: Any) -> None:
    from arklore.profiles import quotes

    quotes.verify_quotes = lambda qs, sources, owners=None: quotes.GateResult(kept=list(qs))


def _anchor_check_blind(_: Any) -> None:
    from arklore.profiles import archive

    archive.structured_fields_equal_source = lambda anchor, tables: (anchor, [])


def _writer_overwrites_everything(_: Any) -> None:
    from arklore.base.files import atomic_write_text
    from arklore.profiles import charfile

    def write(path, text, *, replace_approved=False):  # noqa: ANN001, ANN202
        atomic_write_text(path, text)
        return charfile.WriteResult("written", Path(path), "mutant")

    charfile.write_profile = write


def _tier_b_shows_everything(_: Any) -> None:
    from arklore.profiles import charfile

    charfile.B_ALLOWED = charfile.SECTION_ORDER


def _event_presence_disabled(_: Any) -> None:
    from arklore.events import checks

    checks.strongest = lambda evidence: "speaks"  # everyone named is "present"


def _event_first_person_disabled(_: Any) -> None:
    from arklore.events import checks

    checks.first_person = lambda text: True


def _event_time_hint_unchecked(_: Any) -> None:
    from arklore.events import checks

    checks.check_time_hint = lambda hint, lines: (
        (hint, "ok") if hint and hint.strip() else (None, "none")
    )


def _event_chunks_not_merged(_: Any) -> None:
    from arklore.events import checks

    checks.merge_overlapping = lambda drafts: sorted(
        drafts, key=lambda d: (d.line_start is None, d.line_start or 0, d.chunk, d.idx)
    )


def _event_range_coerced(_: Any) -> None:
    from arklore.events import checks

    original = checks.check_range

    def coerce(start, end, first, last):  # noqa: ANN001, ANN202
        with contextlib.suppress(TypeError, ValueError):
            start, end = int(start), int(end)
        return original(start, end, first, last)

    checks.check_range = coerce


def _event_range_not_clamped(_: Any) -> None:
    from arklore.events import checks

    original = checks.check_range

    def unclamped(start, end, first, last):  # noqa: ANN001, ANN202
        s, e, flags, drop = original(start, end, first, last)
        if drop is None and "clamped" in flags:
            return start, end, [f for f in flags if f != "clamped"], None
        return s, e, flags, drop

    checks.check_range = unclamped


def _event_names_not_normalized(_: Any) -> None:
    from arklore.events import checks

    checks.actor_name = lambda written: written.strip()


def _event_branches_ignored(_: Any) -> None:
    from arklore.events import checks

    original = checks.branch_info
    checks.branch_info = lambda lines: (original(lines)[0], [])


def _description_person_unchecked(_: Any) -> None:
    from arklore.rag import describe
    from arklore.rag.docs import MAX_CHARS, MIN_CHARS

    describe.gate = lambda text, it, shown, find: (
        None if MIN_CHARS <= len(text) <= MAX_CHARS else f"length {len(text)}"
    )


def _description_length_unchecked(_: Any) -> None:
    from arklore.rag import describe

    original = describe.gate
    describe.gate = lambda text, it, shown, find: (
        None if (why := original(text, it, shown, find)) and why.startswith("length") else why
    )


def _story_notes_as_fact(_: Any) -> None:
    from arklore.rag import docs

    original = docs.story_documents

    def with_notes(ctx):  # noqa: ANN001, ANN202
        for d in original(ctx):
            if d.notes:
                d.text = f"{d.text}{'；'.join(d.notes)}"[: docs.MAX_CHARS]
            yield d

    docs._SOURCES["story"] = with_notes


def _citations_ignored(_: Any) -> None:
    from arklore.graph import facade as graph_facade
    from arklore.rag import facade as rag_facade

    graph_facade.graph_citations = lambda graph, kind="graph": iter(())
    graph_facade.curated_citations = lambda curated, kind, name: iter(())
    rag_facade.doc_citations = lambda docs, name: iter(())


def _approve_ignores_hand_edits(_: Any) -> None:
    from arklore.profiles.facade import ProfilesFacade

    original = ProfilesFacade.approve

    def approve(self, operator, *, accept_edits=False, char_dir=None):  # noqa: ANN001, ANN202
        return original(self, operator, accept_edits=True, char_dir=char_dir)

    ProfilesFacade.approve = approve  # type: ignore[method-assign]


def _tier_c_rule_only_in_the_turn(_: Any) -> None:
    from arklore.chat.facade import ChatFacade

    ChatFacade.relation_context = lambda self, sp, message, exclude=(), budget=None, spans=None: (
        self.rag.context(
            sp.node_id, message, exclude, budget=budget or self.budgets.relations, spans=spans
        )
    )


def _text_rule_disabled(_: Any) -> None:
    import re as re_

    from arklore.core import text

    text._BAD_CHAR = re_.compile(r"(?!)")  # matches nothing: every character is "text"


def _body_limit_disabled(_: Any) -> None:
    from arklore.service import guard

    async def passthrough(self, scope, receive, send):  # noqa: ANN001, ANN202
        await self.app(scope, receive, send)

    guard.BodyLimitMiddleware.__call__ = passthrough  # type: ignore[method-assign]


def _scene_branches_mixed(_: Any) -> None:
    from arklore.rag import exemplars

    def merge(constraint, path):  # noqa: ANN001, ANN202
        return {**constraint, **path}

    exemplars._merge = merge


def _scene_not_verbatim(_: Any) -> None:
    from arklore.rag import exemplars

    original = exemplars.ExemplarIndex._scenes

    def scenes(self, base, picked):  # noqa: ANN001, ANN202
        out = original(self, base, picked)
        for sc in out:
            sc.lines = [replace(ln, text=ln.text.rstrip("。")) for ln in sc.lines]
        return out

    exemplars.ExemplarIndex._scenes = scenes


def _nickname_unrendered(_: Any) -> None:
    from arklore.chat import context

    context.render_nickname = lambda text, nickname="博士": text  # every block's Layers.shown


EXTRACT = "tests/test_extract_gates.py"
EVENTS = "tests/test_events_checks.py"
RAG_DOCS = "tests/test_rag_docs.py"
RAG_CONTEXT = "tests/test_rag_context.py"
INGEST = "tests/test_ingest.py"
ANCHORS = "tests/test_anchors.py"
DISTILL = "tests/test_distill.py"
DESCRIBE = "tests/test_rag_describe.py"
EVIDENCE = "tests/test_rag_evidence.py"
CITATIONS = "tests/test_verify_citations.py"
TASKS = "tests/test_distill_tasks.py"
PARITY = "tests/test_parity.py"
SCENES = "tests/test_exemplars.py"
HOSTILE = "tests/test_hostile_input.py"
BODY_LIMIT = f"{HOSTILE}::test_a_body_over_the_limit_is_refused_whether_its_length_is_said_or_not"

# mutant -> (the tests that must catch it, the patch)
MUTANTS: dict[str, tuple[str, Callable[[Any], None]]] = {
    "basis_max_not_min": (EXTRACT, _basis_max),
    "presence_disabled": (EXTRACT, _presence_always_ok),
    "presence_always_downgrades": (EXTRACT, _presence_always_down),
    "gate1_accepts_bool_float": (EXTRACT, _gate1_accepts_bool_float),
    "gate1_accepts_digit_strings": (EXTRACT, _gate1_accepts_digit_strings),
    "gate1_no_range_check": (EXTRACT, _gate1_no_range_check),
    "letters_unread": (EXTRACT, _letters_unread),
    "letter_makes_anyone_present": (EXTRACT, _letter_makes_anyone_present),
    "rag_validation_disabled": (RAG_DOCS, _rag_validation_disabled),
    "rag_budget_ignored": (RAG_CONTEXT, _rag_budget_ignored),
    "rag_budget_drops_anchors_first": (RAG_CONTEXT, _rag_budget_drops_anchors_first),
    "rag_budget_keeps_extra_anchors": (RAG_CONTEXT, _rag_budget_keeps_extra_anchors),
    "npc_views_described": (RAG_DOCS, _npc_views_described),
    "ingest_without_rollback": (INGEST, _ingest_without_rollback),
    "anchor_drift_blind": (ANCHORS, _anchor_drift_blind),
    "verbatim_gate_disabled": (
        ("tests/test_profiles_quotes.py", DISTILL, TASKS),
        _verbatim_gate_disabled,
    ),
    "anchor_check_blind": (("tests/test_profiles_archive.py", DISTILL, TASKS), _anchor_check_blind),
    "writer_overwrites_everything": (
        ("tests/test_profiles_charfile.py", DISTILL),
        _writer_overwrites_everything,
    ),
    "tier_b_shows_everything": (
        ("tests/test_profiles_charfile.py", DISTILL),
        _tier_b_shows_everything,
    ),
    "event_presence_disabled": (EVENTS, _event_presence_disabled),
    "event_first_person_disabled": (EVENTS, _event_first_person_disabled),
    "event_time_hint_unchecked": (EVENTS, _event_time_hint_unchecked),
    "event_chunks_not_merged": (EVENTS, _event_chunks_not_merged),
    "event_range_coerced": (EVENTS, _event_range_coerced),
    "event_range_not_clamped": (EVENTS, _event_range_not_clamped),
    "event_names_not_normalized": (EVENTS, _event_names_not_normalized),
    "event_branches_ignored": (EVENTS, _event_branches_ignored),
    "description_person_unchecked": (DESCRIBE, _description_person_unchecked),
    "description_length_unchecked": (DESCRIBE, _description_length_unchecked),
    "story_notes_as_fact": ((EVIDENCE, RAG_DOCS), _story_notes_as_fact),
    "citations_ignored": (CITATIONS, _citations_ignored),
    "approve_ignores_hand_edits": ((PARITY, DISTILL), _approve_ignores_hand_edits),
    "tier_c_rule_only_in_the_turn": ("tests/test_rag_cli.py", _tier_c_rule_only_in_the_turn),
    "scene_branches_mixed": (SCENES, _scene_branches_mixed),
    "scene_not_verbatim": (SCENES, _scene_not_verbatim),
    "nickname_unrendered": (SCENES, _nickname_unrendered),
    "text_rule_disabled": (HOSTILE, _text_rule_disabled),
    "body_limit_disabled": (BODY_LIMIT, _body_limit_disabled),
}


REAL_EXTRACT = "tests/test_extract_gates_realdata.py"
REAL = "@realdata"
"""Suffix of a mutant's run on :data:`REAL_EXTRACT` alone (the gates on real stages)."""
REAL_MUTANTS: tuple[str, ...] = tuple(m for m, (tests, _) in MUTANTS.items() if tests == EXTRACT)
"""The relation-gate mutants: with the real data present, each must also turn a case of
:data:`REAL_EXTRACT` red on its own."""
STORY = Path("zh_CN/gamedata/story")


def real_data_present() -> bool:
    """ARKLORE_GAMEDATA and ARKLORE_ASTR name the real data (as tests/conftest.py reads them)."""
    return all(
        (value := os.environ.get(var)) and (Path(value) / STORY).is_dir()
        for var in ("ARKLORE_GAMEDATA", "ARKLORE_ASTR")
    )


def _files(tests: str | tuple[str, ...]) -> list[str]:
    return [tests] if isinstance(tests, str) else list(tests)


ALL_TESTS = sorted({f.split("::")[0] for tests, _ in MUTANTS.values() for f in _files(tests)})


def _apply_from_env() -> None:
    name = os.environ.get(ENV)
    if not name:
        return
    from arklore.extract import gates

    MUTANTS[name][1](gates)


_apply_from_env()  # runs when pytest loads this module as a plugin


def run(
    mutant: str | None, limit: float | None = None, *, real: bool = False
) -> tuple[int | None, int, int, float]:
    """(returncode, failed, passed, seconds) of the gate tests under one mutant (None:
    unbroken); returncode None when the run took longer than ``limit`` seconds. ``real``:
    the real-data cases (:data:`REAL_EXTRACT`) instead, every one of them (most of such a run
    is the one ingest of the corpus its tests share)."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if mutant:
        env[ENV] = mutant
    tests = _files(MUTANTS[mutant][0]) if mutant else ALL_TESTS
    if real:
        tests = [REAL_EXTRACT]
    cmd = [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider"]
    if mutant and not real:
        cmd.append("-x")  # one failing test catches the mutant: the rest need not run
    marks = "realdata" if real else "not realdata"
    cmd += ["-m", marks, "-p", "bench.check_gate_mutants", "-o", "addopts="]
    # plugins no gate test needs cost ~2.5 s a start (33 starts): schemathesis, and the
    # hypothesis and anyio integrations (hypothesis's @given works without its plugin)
    cmd += ["-p", "no:schemathesis", "-p", "no:hypothesispytest", "-p", "no:anyio"]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, 0, 0, time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    if _TIMED_OUT.search(proc.stdout):  # a test hung past pytest's own per-test timeout
        return None, 0, 0, seconds
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    failed = int(m.group(1)) if (m := re.search(r"(\d+) failed", tail)) else 0
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", tail)) else 0
    return proc.returncode, failed, passed, seconds


_TIMED_OUT = re.compile(r"Timeout >\d")
"""How pytest-timeout fails a test that ran past its per-test limit."""


def check(
    baseline: bool = True, real: bool | None = None
) -> tuple[list[tuple[str, int, int, str]], float | None]:
    """(rows (mutant, failed, passed, verdict), the limit of a mutant run in seconds): the
    unbroken run passes ("ok", else "BROKEN"), every mutant fails its tests within the limit
    measured from the unbroken run ("ok", else "SURVIVED" or "HUNG"). Without ``baseline``
    (the test suite, which runs the same tests unbroken anyway) there is no unbroken run and
    no limit but pytest's per-test timeout, past which a test of a mutant counts as hung.
    ``real`` (default: when :func:`real_data_present`; the command line asks ``--real``):
    every relation-gate mutant is also
    run on the real-data cases alone (rows ``<mutant>@realdata``), limited by their own
    unbroken run (``(unbroken)@realdata``)."""
    if real is None:
        real = real_data_present()
    rows: list[tuple[str, int, int, str]] = []
    limit: float | None = None
    real_limit: float | None = None
    if baseline:
        code, failed, passed, seconds = run(None)
        rows.append(("(unbroken)", failed, passed, "ok" if code == 0 and failed == 0 else "BROKEN"))
        limit = SLACK * seconds
        if real:
            code, failed, passed, seconds = run(None, real=True)
            ok = code == 0 and failed == 0 and passed > 0
            rows.append((f"(unbroken){REAL}", failed, passed, "ok" if ok else "BROKEN"))
            real_limit = SLACK * seconds

    def one(job: str) -> tuple[str, int, int, str]:
        mutant, on_real = job.removesuffix(REAL), job.endswith(REAL)
        if on_real:
            code, failed, passed, _ = run(mutant, real_limit, real=True)
        else:
            code, failed, passed, _ = run(mutant, limit)
        verdict = "HUNG" if code is None else "ok" if code == 1 and failed > 0 else "SURVIVED"
        return job, failed, passed, verdict

    jobs = [*MUTANTS, *(f"{m}{REAL}" for m in REAL_MUTANTS if real)]
    # the runs are independent subprocesses: one per core at a time (each a subset of the
    # unbroken run, so SLACK x that run still bounds one slowed by its neighbours)
    with ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, 4)) as pool:
        rows += list(pool.map(one, jobs))
    return rows, limit


def main(argv: list[str] | None = None) -> int:
    """``--no-baseline``: skip the unbroken run (the suite runs the gate tests itself);
    ``--real``: also the relation-gate mutants on the real-data cases (the data must be
    present; each mutant re-ingests the corpus: ~6 min on 2 cores, so the suite leaves it out)."""
    args = sys.argv[1:] if argv is None else argv
    real = "--real" in args
    if real and not real_data_present():
        print("--real needs ARKLORE_GAMEDATA and ARKLORE_ASTR set to the real data")
        return 2
    rows, limit = check("--no-baseline" not in args, real=real)
    if limit is not None:
        print(f"a mutant run may take {limit:.0f} s ({SLACK:g} x the unbroken run)")
    else:
        print("no unbroken run (its tests pass in the suite); a test may take pytest's timeout")
    print(f"{'mutant':<32} {'tests':<64} {'failed':>6} {'passed':>6}  verdict")
    for name, failed, passed, verdict in rows:
        files = [REAL_EXTRACT] if name.endswith(REAL) else _files(MUTANTS.get(name, ((),))[0])
        tests = "+".join(f.removeprefix("tests/") for f in files) or "all of them"
        print(f"{name:<32} {tests:<64} {failed:>6} {passed:>6}  {verdict}")
    return 0 if all(verdict == "ok" for *_, verdict in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
