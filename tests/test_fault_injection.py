"""Fault injection: the real `arklore` command, one subprocess per failing scenario.

Every scenario builds its own ARKLORE_HOME and data checkouts (the invented tree of
``support.tree_world``), injects one fault, runs the command and checks the contract of
``arklore.core.errors``: (a) the documented exit code, (b) one line on stderr naming the
cause and what to do, (c) no traceback anywhere, (d) nothing lost -- every file that was under
ARKLORE_HOME before (store, relation_graph.json, index) and the user files are byte-identical
afterwards, except the few a scenario's run may legitimately write, whose contents that
matter are compared instead (the rows a partial ingest keeps, the extractions stored before
an LLM run stopped).

The subprocesses are slow to start (the CLI imports a lot), so the scenarios selected for a
run are prepared one after the other in this process, then run a few at a time in parallel
(module fixture ``outcomes``); each test then judges its own outcome. Progress bars are
drawn only on a terminal, and the subprocess's stderr is a pipe, so stderr holds nothing but
messages; the default 80-column width is kept on purpose (a message must not wrap).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.llm_stub import TEST_KEY, Reply, StubServer
from support.tree_world import EXCEL, STORY, astr_file, make_workspace, write_tree

from arklore.core.errors import (
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_STOPPED,
)
from arklore.settings import LLMSettings
from arklore.workspace import Workspace

_ENTRY = Path(sys.executable).with_name("arklore")
CLI = (
    [str(_ENTRY)]
    if _ENTRY.exists()
    else [sys.executable, "-c", "from arklore.cli.app import main; main()"]
)
# ~20 subprocesses that each import the whole CLI: part of `make test`, not the fast loop
# one pytest-xdist worker takes the whole module: its fixture runs every selected scenario
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fault_injection")]
PARALLEL = 4
TIMEOUT = 180

MATRIX = """\
[[relation]]
from = "阿米娅"
to = "陈"
predicate = "战友"
description = "一起出过很多次任务，彼此信得过。"
"""

# files that come and go while a command runs and say nothing about the data
VOLATILE = ("-wal", "-shm", ".lock")
# stderr lines that are not messages: the LLM cost summary of a batch run (retries and skipped
# requests are logged only with --verbose)
NOT_MESSAGES = re.compile(r"^LLM: \d+ requests")


# -- one scenario's world ----------------------------------------------------------------------


@dataclass
class Case:
    """The folders of one scenario, the environment of its run and its run's outcome."""

    root: Path
    gamedata: Path
    astr: Path
    env: dict[str, str]
    stdin: str | None = None
    stub: StubServer | None = None
    before: dict[str, str] = field(default_factory=dict)
    kept: object = None  # what ``Scenario.kept`` read before the run
    seeded: list[str] = field(default_factory=list)  # stages extracted before the fault
    proc: subprocess.CompletedProcess[str] | None = None
    seconds: float = 0.0
    error: BaseException | None = None

    @property
    def home(self) -> Path:
        return Path(self.env["ARKLORE_HOME"])

    @property
    def db(self) -> Path:
        return self.home / "arklore.sqlite3"

    @property
    def user(self) -> Path:
        """A folder of user files (matrix, aliases) outside ARKLORE_HOME."""
        return self.root / "user"

    def workspace(self, **kw: Any) -> Workspace:
        return make_workspace(self.home, self.gamedata, self.astr, embedder="hash", **kw)


def _base_env(root: Path, gamedata: Path, astr: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ARKLORE_", "LLM_", "CHROMA_"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "columns", "lines")
    }
    return env | {
        "ARKLORE_HOME": str(root / "home"),
        "ARKLORE_GAMEDATA": str(gamedata),
        "ARKLORE_ASTR": str(astr),
        "ARKLORE_EMBEDDER": "hash",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PYTHONUNBUFFERED": "1",
    }


def build(case: Case, upto: str) -> None:
    """The state before the fault: ``store`` (ingested), ``graph`` (+ relation_graph.json from a
    user matrix), ``index`` (+ the relation index, hash embedder)."""
    case.user.mkdir(exist_ok=True)
    (case.user / "matrix.toml").write_text(MATRIX, encoding="utf-8")
    with case.workspace() as ws:
        report = ws.ingest()
        assert not report.errors, report.errors
        if upto in ("graph", "index"):
            ws.graph.build(matrix=case.user / "matrix.toml")
        if upto == "index":
            ws.build_index(no_llm=True)


def snapshot(*roots: Path) -> dict[str, str]:
    """sha256 of every file under ``roots`` (the volatile SQLite/lock side files left out)."""
    out: dict[str, str] = {}
    for root in roots:
        if root.is_file():
            out[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
            continue
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*")):
            if p.is_file() and not p.name.endswith(VOLATILE):
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute(sql).fetchall()


def stub_for(case: Case, reply: Callable[[dict[str, Any]], Reply], **env: str) -> StubServer:
    """A stub OpenAI server answering every request with ``reply``; the run's LLM_* point at it."""
    stub = StubServer().start()
    stub.default = reply
    case.stub = stub
    case.env |= {
        "LLM_BASE_URL": stub.url,
        "LLM_MODEL": "stub-model",
        "LLM_API_KEY": TEST_KEY,
        "LLM_TIMEOUT": "2",
        "LLM_MAX_RETRIES": "1",
        "LLM_BACKOFF_INITIAL": "0.01",
        "LLM_BACKOFF_MAX": "0.02",
        "LLM_BREAKER_FAILURES": "2",
        **env,
    }
    return stub


# -- the scenarios -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    id: str
    args: tuple[str, ...]
    code: int
    says: tuple[str, ...]  # substrings of the one stderr line: the cause and what to do
    upto: str | None = "store"  # state built before the fault (see build)
    inject: Callable[[Case], None] | None = None
    # files under ARKLORE_HOME the run may rewrite (their kept content is checked by ``kept``)
    may_change: tuple[str, ...] = ()
    kept: Callable[[Case], object] | None = None  # read before and after: must be equal
    stdout: str | None = None  # "empty" | "json": what --json leaves on stdout
    root_cannot: bool = False  # root ignores file modes: skip when run as root
    more_stages: int = 0  # extra invented stages (LLM runs: enough requests to trip the breaker)

    def __str__(self) -> str:
        return self.id


def _tier_c_opt_in(case: Case) -> None:
    case.env["ARKLORE_TIER_C_RELATIONS"] = "1"


def _bad_table(case: Case) -> None:
    (case.gamedata / EXCEL / "character_table.json").write_text('{"char_002_amiya": {"name": ')


def _no_gamedata(case: Case) -> None:
    case.env["ARKLORE_GAMEDATA"] = str(case.root / "no-such-checkout")


def _moved_data(case: Case) -> None:
    other = case.root / "data-copy"
    shutil.copytree(case.gamedata.parent, other)
    case.env["ARKLORE_GAMEDATA"] = str(other / case.gamedata.name)


def _sql(db: Path, sql: str) -> None:
    """Run one write and fold the WAL back into the file (so the file holds all the data)."""
    c = sqlite3.connect(db, isolation_level=None)
    try:
        c.execute(sql)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        c.close()


def _unfinished_ingest(case: Case) -> None:
    _sql(case.db, "UPDATE ingest_runs SET finished_at = NULL")


def _corrupt_store(case: Case) -> None:
    data = case.db.read_bytes()
    case.db.write_bytes(b"not a database, just bytes " * 8 + data[4096:])


def _bad_matrix(case: Case) -> None:
    bad = MATRIX.replace('to = "陈"', 'to = "谁也不认识的人"')
    (case.user / "matrix.toml").write_text(bad, encoding="utf-8")


def _broken_toml_matrix(case: Case) -> None:
    (case.user / "matrix.toml").write_text('[[relation]\nfrom = "阿米娅', encoding="utf-8")


def _bad_aliases(case: Case) -> None:
    (case.user / "aliases.toml").write_text('[[alias]\nname = "x', encoding="utf-8")
    case.env["ARKLORE_ALIASES"] = str(case.user / "aliases.toml")


def _broken_story(case: Case) -> None:
    astr_file(case.astr).write_text('{"storyList": [', encoding="utf-8")


def _home_under_a_file(case: Case) -> None:
    blocker = case.root / "a-file"
    blocker.write_text("not a folder")
    case.env["ARKLORE_HOME"] = str(blocker / "home")


def _read_only_home(case: Case) -> None:
    case.home.chmod(0o555)


def _long_message(case: Case) -> None:
    case.env["ARKLORE_MAX_MESSAGE_CHARS"] = "20"
    case.stdin = "博士，" * 40


def _refused(case: Case) -> None:
    case.env |= {
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "LLM_API_KEY": TEST_KEY,
        "LLM_MAX_RETRIES": "0",
        "LLM_BREAKER_FAILURES": "2",
    }


def _seeded(then: Callable[[Case], object]) -> Callable[[Case], None]:
    """Store the relations of the first stage from an earlier (good) run, then ``then``: the
    failing run must keep them."""

    def inject(case: Case) -> None:
        stub = stub_for(case, lambda body: Reply.json({"edges": []}))
        llm = LLMSettings(
            base_url=stub.url, model="stub-model", api_key=TEST_KEY, timeout=2, max_retries=0
        )
        with case.workspace(llm=llm) as ws:
            case.seeded = ws.extract.select_stages(None, all_=True)[:1]
            report = ws.extract.relations(case.seeded, concurrency=1)
            assert report.failed == 0 and report.done >= 1, report.to_dict()
        stub.stop()
        case.stub = None
        then(case)

    return inject


def _seeded_relations(case: Case) -> list[tuple[Any, ...]]:
    (stage,) = case.seeded
    kept = rows(case.db, f"SELECT * FROM relation_chunks WHERE stage_path = '{stage}' ORDER BY 2")
    assert kept, "nothing was seeded"
    return kept


def _kept_astr_stage(case: Case) -> list[tuple[Any, ...]]:
    return rows(
        case.db,
        "SELECT l.* FROM lines l JOIN stages s USING (source, stage_path)"
        " WHERE s.source = 'astr' ORDER BY 1, 2, 3",
    )


def _tables_kept(case: Case) -> list[tuple[Any, ...]]:
    return rows(case.db, "SELECT * FROM stages ORDER BY 1, 2") + rows(
        case.db, "SELECT * FROM lines ORDER BY 1, 2, 3"
    )


LLM_WRITES = (
    "arklore.sqlite3", "llm_cache.sqlite3", "llm_ledger.sqlite3", "llm_state.sqlite3",
    "llm_errors.jsonl",
)  # fmt: skip

SCENARIOS = [
    Scenario(
        "malformed-operator-table", ("ingest",), EXIT_ERROR,
        ("character_table.json", "not valid JSON", "arklore build"), inject=_bad_table,
    ),
    Scenario(
        "missing-data-root", ("ingest", "--json"), EXIT_CONFIG,
        ("no-such-checkout", "ARKLORE_GAMEDATA"), inject=_no_gamedata, stdout="empty",
    ),
    Scenario(
        "invalid-env-setting", ("context", "阿米娅", "你好"), EXIT_CONFIG,
        ("ARKLORE_RAG_TOKEN_BUDGET='abc'", "fix or unset ARKLORE_RAG_TOKEN_BUDGET"),
        upto="index", inject=lambda c: c.env.update(ARKLORE_RAG_TOKEN_BUDGET="abc"),
    ),
    Scenario(
        "store-from-other-data", ("graph", "build", "--matrix", "{user}/matrix.toml"), EXIT_ERROR,
        ("{gamedata}", "{root}/data-copy/gamedata", "--data-changed"), upto="graph",
        inject=_moved_data,
    ),
    Scenario(
        "incomplete-ingest", ("stats", "--json"), EXIT_ERROR,
        ("did not finish", "run `arklore ingest` again"), inject=_unfinished_ingest,
        stdout="empty",
    ),
    Scenario(
        "corrupted-store", ("stats",), EXIT_ERROR,
        ("arklore.sqlite3", "not a database", "move"), upto="graph", inject=_corrupt_store,
    ),
    Scenario(
        "malformed-user-matrix", ("graph", "build", "--matrix", "{user}/matrix.toml"), EXIT_ERROR,
        ("matrix.toml", "line 3 [[relation]] #1", "谁也不认识的人", "fix the file"),
        upto="graph", inject=_bad_matrix,
    ),
    Scenario(
        "matrix-not-toml", ("graph", "build", "--matrix", "{user}/matrix.toml", "--json"),
        EXIT_ERROR, ("matrix.toml", "toml", "fix the file"), upto="graph",
        inject=_broken_toml_matrix, stdout="empty",
    ),
    Scenario(
        "malformed-alias-file", ("ingest",), EXIT_ERROR,
        ("aliases.toml", "fix the file"), inject=_bad_aliases,
    ),
    Scenario(
        "story-file-broken-on-reingest", ("ingest",), EXIT_PARTIAL,
        ("1 files did not parse", "keep the version ingested before", "arklore ingest"),
        inject=_broken_story, may_change=("arklore.sqlite3",), kept=_kept_astr_stage,
    ),
    Scenario(
        "home-is-not-a-folder", ("ingest",), EXIT_ERROR,
        ("a-file", "ARKLORE_HOME"), upto=None, inject=_home_under_a_file,
    ),
    Scenario(
        "read-only-home", ("graph", "build", "--matrix", "{user}/matrix.toml"), EXIT_ERROR,
        ("home", "ARKLORE_HOME"), upto="graph", inject=_read_only_home, root_cannot=True,
    ),
    Scenario(
        "unknown-operator", ("context", "谁也不是", "你好", "--json"), EXIT_ERROR,
        ("'谁也不是'", "check the spelling"), upto="index", stdout="empty",
    ),
    Scenario(
        "name-with-brackets", ("context", "[/x][bold]", "你好"), EXIT_ERROR,
        ("'[/x][bold]'", "check the spelling"), upto="index",
    ),
    Scenario(
        "message-too-long", ("context", "阿米娅", "-"), EXIT_ERROR,
        ("longer than the limit of 20 characters", "send a shorter message", "ARKLORE_MAX_MESSAGE_CHARS"), upto="index",
        inject=_long_message,
    ),
    Scenario(
        "context-before-graph-build", ("context", "阿米娅", "你好"), EXIT_ERROR,
        ("no relation graph", "arklore build"),
    ),
    Scenario(  # (an operator with a profile, or the opt-in: else tier C says so first)
        "context-before-rag-build", ("context", "阿米娅", "陈最近好吗"), EXIT_OK,
        ("no relation index", "arklore build"), upto="graph", inject=_tier_c_opt_in,
    ),
    Scenario(
        "rag-status-before-build", ("rag", "status", "--json"), EXIT_ERROR,
        ("no relation index", "arklore build"), upto="graph", stdout="empty",
    ),
    Scenario(
        "llm-endpoint-refused", ("extract", "relations", "--all", "--concurrency", "1"),
        EXIT_STOPPED, ("stopped:", "LLM_BASE_URL", "run it again"), inject=_seeded(_refused),
        may_change=LLM_WRITES, kept=_seeded_relations, more_stages=3,
    ),
    Scenario(
        "llm-401", ("extract", "relations", "--all", "--concurrency", "1", "--json"),
        EXIT_STOPPED, ("stopped:", "401", "LLM_API_KEY"), stdout="json",
        inject=_seeded(lambda c: stub_for(c, lambda body: Reply.unauthorized())),
        may_change=LLM_WRITES, kept=_seeded_relations, more_stages=3,
    ),
    Scenario(
        "llm-broken-json", ("extract", "relations", "--all", "--concurrency", "1"),
        EXIT_PARTIAL, ("requests failed", "llm_errors.jsonl", "run the command again"),
        inject=_seeded(lambda c: stub_for(c, lambda body: Reply.malformed())),
        may_change=LLM_WRITES, kept=_seeded_relations, more_stages=3,
    ),
    Scenario(
        "llm-max-cost", ("extract", "relations", "--all", "--max-cost", "0.000001"),
        EXIT_STOPPED, ("stopped:", "--max-cost", "higher --max-cost"),
        inject=_seeded(lambda c: stub_for(c, lambda body: Reply.json({"edges": []}))),
        may_change=LLM_WRITES, kept=_seeded_relations, more_stages=3,
    ),
]  # fmt: skip


# -- running them --------------------------------------------------------------------------------


def _fill(s: str, case: Case) -> str:
    return s.format(root=case.root, user=case.user, gamedata=case.gamedata, home=case.home)


def _prepare(sc: Scenario, root: Path) -> Case:
    gamedata, astr = write_tree(root / "data")
    for i in range(sc.more_stages):
        text = "".join(f'[name="{"甲乙丙"[(i + k) % 3]}"]  第{i}段第{k}句。\n' for k in range(4))
        (gamedata / STORY / "obt/main" / f"level_gen_{i:02d}_beg.txt").write_text(text, "utf-8")
    case = Case(root, gamedata, astr, _base_env(root, gamedata, astr))
    case.user.mkdir()
    if sc.upto:
        build(case, sc.upto)
    if sc.inject:
        sc.inject(case)
    case.before = snapshot(case.home, case.user)
    if sc.kept:
        case.kept = sc.kept(case)
    return case


def _run(sc: Scenario, case: Case) -> None:
    t0 = time.monotonic()
    case.proc = subprocess.run(
        [*CLI, *(_fill(a, case) for a in sc.args)], env=case.env, input=case.stdin,
        capture_output=True, text=True, timeout=TIMEOUT, cwd=case.root,
    )  # fmt: skip
    case.seconds = time.monotonic() - t0


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory) -> Iterator[dict[str, Case]]:
    """Every selected scenario prepared, then run ``PARALLEL`` at a time."""
    selected = [
        item.callspec.params["sc"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    ]
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    cases: dict[str, Case] = {}
    for sc in selected:
        if sc.root_cannot and as_root:
            continue
        try:
            cases[sc.id] = _prepare(sc, tmp_path_factory.mktemp(sc.id))
        except BaseException as exc:  # reported by the scenario's own test
            cases[sc.id] = Case(Path(), Path(), Path(), {}, error=exc)
    runnable = [(sc, cases[sc.id]) for sc in selected if sc.id in cases and not cases[sc.id].error]
    with ThreadPoolExecutor(PARALLEL) as pool:
        for f in [pool.submit(_run, sc, case) for sc, case in runnable]:
            f.result()
    yield cases
    for case in cases.values():
        if case.stub is not None:
            case.stub.stop()
        if case.root.name and (case.root / "home").exists():
            (case.root / "home").chmod(0o755)


@pytest.mark.parametrize("sc", SCENARIOS, ids=str)
def test_fault_is_reported_and_loses_nothing(sc: Scenario, outcomes: dict[str, Case]) -> None:
    if sc.id not in outcomes:
        pytest.skip("root ignores file modes")
    case = outcomes[sc.id]
    if case.error is not None:
        raise case.error
    proc = case.proc
    assert proc is not None
    shown = f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    # (c) no traceback, anywhere
    assert "Traceback" not in proc.stdout + proc.stderr, shown
    # (a) the documented exit code
    assert proc.returncode == sc.code, shown
    # (b) one line on stderr, naming the cause and what to do
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not NOT_MESSAGES.match(ln)]
    assert len(lines) == 1, shown
    for part in sc.says:
        assert _fill(part, case) in lines[0], f"{part!r} not in the message\n{shown}"
    if sc.stdout == "empty":
        assert proc.stdout == "", shown
    elif sc.stdout == "json":
        json.loads(proc.stdout)
    # (d) nothing lost
    after = snapshot(case.home, case.user)
    changed = sorted(
        p for p, digest in case.before.items()
        if after.get(p) != digest and Path(p).name not in sc.may_change
    )  # fmt: skip
    assert not changed, f"changed or removed by the failed run: {changed}\n{shown}"
    if sc.kept:
        assert sc.kept(case) == case.kept, "the data kept before the run changed"
