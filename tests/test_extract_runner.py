"""The relation-extraction run against the local stub server: gating, storing, resume,
cache, failures, export and the CLI. Stories are invented (tests/support/tree_world.py) except in
the ``realdata`` tests, which copy real stage files into a tmp tree (never into the repo)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.llm_stub import Reply, StubServer, llm_files, make_llm, stub_env
from support.tree_world import make_workspace, write_tree
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.errors import ConfigError
from arklore.corpus.anchors import verify_anchors
from arklore.corpus.ingest import ingest
from arklore.corpus.order import chapter_event
from arklore.corpus.store import Store
from arklore.extract import runner
from arklore.extract import store as edges_db
from arklore.llm import Prices
from arklore.sources.roots import DataRoots
from arklore.workspace import open_store

STAGE = "obt/main/level_test_01_beg"
STORY = Path("zh_CN/gamedata/story")

_LINE = re.compile(r"^\[(\d+)\] (?:〔[^〕]*〕)?(.*)$", re.M)
_STAGE = re.compile(r"^关卡：(\S+?)(?:（|$)", re.M)


def chunk_lines_of(prompt: str) -> list[tuple[int, str]]:
    """(line_no, speaker) of every line the prompt shows ('' for narration)."""
    out = []
    for no, body in _LINE.findall(prompt):
        speaker = "" if body.startswith("（") else body.split("：", 1)[0]
        out.append((int(no), speaker.replace("（存疑）", "").replace("（选项）", "")))
    return out


def digest(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)


class Responder:
    """Answers plausible edges citing real line numbers of the requested chunk, and injects
    faults by a hash of the prompt: 429s, timeouts, malformed JSON (transient: the next
    attempt succeeds) and, for ``permanent`` prompts, malformed JSON forever."""

    def __init__(self, *, faults: bool = True, bad_edge: str = "some", permanent: int = 0) -> None:
        self.faults, self.bad_edge, self.permanent = faults, bad_edge, permanent
        self.attempts: dict[str, int] = {}
        self.lock = threading.Lock()

    def edges(self, prompt: str) -> list[dict[str, Any]]:
        lines = chunk_lines_of(prompt)
        edges = []
        for (n1, s1), (_n2, s2) in zip(lines, lines[1:], strict=False):
            if s1 and s2 and s1 != s2:
                edges.append(
                    {
                        "subject": s1,
                        "subject_kind": "character",
                        "predicate": "相识",
                        "object": s2,
                        "object_kind": "character",
                        "basis_claimed": "direct",
                        "evidence": [{"line_no": n1, "supports": "direct", "note": "对话"}],
                        "note": "",
                    }
                )
                break
        if self.bad_edge == "all" or (self.bad_edge == "some" and digest(prompt) % 3 == 0):
            edges.append(
                {
                    "subject": "甲",
                    "subject_kind": "character",
                    "predicate": "朋友",
                    "object": "乙",
                    "object_kind": "character",
                    "basis_claimed": "reported",
                    "evidence": [{"line_no": 99999, "supports": "reported", "note": ""}],
                }
            )
        return edges

    def is_permanent(self, prompt: str) -> bool:
        return self.permanent > 0 and digest(prompt) % self.permanent == 1

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        with self.lock:
            n = self.attempts[prompt] = self.attempts.get(prompt, 0) + 1
        if self.is_permanent(prompt):
            return Reply.malformed()
        if self.faults and n == 1:
            kind = digest(prompt) % 4
            if kind == 0:
                return Reply.rate_limited()
            if kind == 1:
                return Reply.slow(1.0)  # longer than LLM_TIMEOUT
            if kind == 2:
                return Reply.malformed()
        return Reply.json({"edges": self.edges(prompt)})


def fast_env(stub: StubServer) -> dict[str, str]:
    return stub_env(stub, LLM_TIMEOUT="0.3", LLM_MAX_RETRIES="2")


def dump(store: Store) -> list[tuple[Any, ...]]:
    return store.conn.execute(
        "SELECT * FROM relation_edges ORDER BY stage_path, chunk, idx"
    ).fetchall()


def run(
    store: Store, home: Path, stub: StubServer, paths: list[str], **kw: Any
) -> runner.RunReport:
    llm = make_llm(home, fast_env(stub), no_cache=kw.pop("no_cache", False))
    try:
        return runner.extract_relations(store, llm, paths, **kw)
    finally:
        llm.close()


# --- invented corpus -----------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    home: Path
    roots: DataRoots


@pytest.fixture
def small(tmp_path: Path) -> Iterator[tuple[Env, Store]]:
    gamedata, astr = write_tree(tmp_path / "data")
    with make_workspace(tmp_path / "home", gamedata, astr) as ws:
        ws.ingest()
    store = open_store(tmp_path / "home" / "arklore.sqlite3")
    yield Env(tmp_path / "home", DataRoots(gamedata, astr)), store
    store.close()


def test_run_gates_stores_and_resolves(small, llm_stub: StubServer) -> None:
    settings, store = small
    llm_stub.default = Responder(faults=False, bad_edge="all")
    ids = {"测试员": "char_900_tester", "向导": "char_901_guide"}
    report = run(store, settings.home, llm_stub, [STAGE], resolve=ids.get)
    assert (report.jobs, report.done, report.failed) == (1, 1, 0)
    edges = edges_db.load_edges(store, STAGE)
    kept = [e for e in edges if e.kept]
    dropped = [e for e in edges if not e.kept]
    assert len(kept) == 1 and len(dropped) == 1
    k = kept[0]
    assert (k.subject, k.object, k.subject_id, k.object_id) == (
        "测试员",
        "向导",
        "char_900_tester",
        "char_901_guide",
    )
    assert k.basis == "direct" and k.presence_ok and not k.presence_downgraded
    assert k.evidence[0].line_id == store.lines(STAGE)[0].line_id
    assert k.evidence_line_ids == [store.lines(STAGE)[0].line_id]
    assert (k.stage, k.model) == (STAGE, "stub-model")
    assert dropped[0].drop_reason == "evidence_out_of_range" and dropped[0].subject_id is None
    assert report.dropped == 1 and report.drop_reasons() == {"evidence_out_of_range": 1}
    assert report.stages[0].kept == 1 and "cost $" in report.cost_line


def test_rerun_replaces_rows_and_costs_nothing(small, llm_stub: StubServer) -> None:
    settings, store = small
    llm_stub.default = Responder(faults=False)
    paths = store.stage_paths()
    run(store, settings.home, llm_stub, paths)
    before, n_requests = dump(store), len(llm_stub.requests)
    again = run(store, settings.home, llm_stub, paths)
    assert again.skipped == again.jobs and again.done == 0
    forced = run(store, settings.home, llm_stub, paths, resume=False)
    assert forced.done == forced.cached == forced.jobs
    assert "cost $0.0000" in forced.cost_line
    assert len(llm_stub.requests) == n_requests
    assert dump(store) == before


def test_store_deleted_edges_are_redone_despite_llm_progress(small, llm_stub: StubServer) -> None:
    """Resume trusts the store: rows lost with the store are redone (from the cache)."""
    settings, store = small
    llm_stub.default = Responder(faults=False)
    run(store, settings.home, llm_stub, [STAGE])
    before = dump(store)
    store.conn.execute("DELETE FROM relation_edges")
    store.conn.execute("DELETE FROM relation_chunks")
    report = run(store, settings.home, llm_stub, [STAGE])
    assert report.done == report.cached == 1 and dump(store) == before


def test_kept_evidence_is_an_anchor(small, llm_stub: StubServer) -> None:
    settings, store = small
    llm_stub.default = Responder(faults=False, bad_edge="all")
    run(store, settings.home, llm_stub, [STAGE])
    anchors = verify_anchors(settings.roots, store, citations=edges_db.cited_line_ids(store))
    plain = store.conn.execute("SELECT count(*) FROM lines").fetchone()[0]
    assert anchors.ok and anchors.anchors == plain  # evidence ids are among the line ids
    rows = store.conn.execute(
        "SELECT j.value FROM relation_edges e, json_each(e.evidence_line_ids) j"
    ).fetchall()
    assert len(rows) == 1


def test_select_stages(small) -> None:
    _, store = small
    assert runner.select_stages(store, [STAGE + ".txt"]) == [STAGE]
    assert runner.select_stages(store, all_=True) == store.stage_paths()
    with pytest.raises(ConfigError, match="unknown stage") as exc:
        runner.select_stages(store, ["obt/main/level_test_01_bge"])
    assert STAGE in exc.value.hint
    assert runner.select_stages(store, event="test_1") == [STAGE]  # event id from ASTR
    with pytest.raises(ConfigError, match="event"):
        runner.select_stages(store, event="test_2")
    with pytest.raises(ConfigError, match="no stages selected"):
        runner.select_stages(store, [])


def test_a_stage_is_named_by_its_code_its_event_or_a_chapter_as_players_say_it(small) -> None:
    _, store = small
    # the ASTR copy carries the metadata the raw script lacks: either source's counts
    for said in ("T-1", "t-1", "测试篇", "测试", "test_1"):
        assert runner.select_stages(store, [said]) == [STAGE], said
    with pytest.raises(ConfigError, match="unknown stage") as exc:
        runner.select_stages(store, ["T-2"])
    assert "T-1" in exc.value.hint  # the closest code, not only the closest path
    assert [chapter_event(s) for s in ("第十一章", "第11章", "序章", "第二十章", "第章")] == [
        "main_11", "main_11", "main_0", "main_20", None,
    ]  # fmt: skip


def test_export_is_flat_atomic_and_complete(small, llm_stub: StubServer, tmp_path: Path) -> None:
    settings, store = small
    llm_stub.default = Responder(faults=False, bad_edge="all")
    run(store, settings.home, llm_stub, [STAGE])
    path = runner.export_stage(store, STAGE, tmp_path / "out")
    assert path.name == "story_relations_obt__main__level_test_01_beg.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["stage"] == STAGE and doc["summary"]["kept"] == 1
    assert len(doc["edges"]) == 1 and len(doc["dropped"]) == 1
    edge = doc["edges"][0]
    for key in (
        "basis",
        "basis_claimed",
        "basis_overclaimed",
        "presence_ok",
        "presence_downgraded",
        "evidence_line_ids",
        "stage",
        "model",
        "prompt_version",
        "subject_id",
        "object_id",
    ):
        assert key in edge
    assert set(edge["evidence"][0]) >= {"line_id", "line_no", "supports", "note"}
    assert doc["dropped"][0]["drop_reason"] == "evidence_out_of_range"
    assert [p.name for p in (tmp_path / "out").iterdir()] == [path.name]  # no temp leftovers


def test_dry_run_calls_nothing(small, llm_stub: StubServer) -> None:
    _, store = small
    est = runner.dry_run(store, store.stage_paths(), Prices())
    assert est.requests == 2 and est.input_tokens > 0 and est.cost_usd > 0
    assert llm_stub.requests == []


# --- CLI -----------------------------------------------------------------------------


@pytest.fixture
def cli_env(small: tuple[Env, Store], llm_stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Env:
    settings, _ = small
    monkeypatch.setenv("ARKLORE_HOME", str(settings.home))
    for k, v in fast_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    return settings


def test_cli_exits_5_on_gate_drops_and_exports(cli_env: Env, llm_stub: StubServer) -> None:
    llm_stub.default = Responder(faults=False, bad_edge="all")
    res = CliRunner().invoke(app, ["extract", "relations", STAGE, "--json"])
    assert res.exit_code == 5, res.output
    data = json.loads(res.stdout)
    assert data["summary"]["drop_reasons"] == {"evidence_out_of_range": 1}
    assert Path(data["exports"][0]).is_file()
    assert data["exports"][0].startswith(str(cli_env.home / "exports" / "relations"))
    res = CliRunner().invoke(app, ["extract", "relations", STAGE])
    assert res.exit_code == 5
    assert "evidence_out_of_range: 1" in res.stdout and "cost $0.0000" in res.stdout


def test_cli_exits_0_when_nothing_dropped(
    cli_env: Env, llm_stub: StubServer, tmp_path: Path
) -> None:
    llm_stub.default = Responder(faults=False, bad_edge="none")
    out = tmp_path / "exp"
    res = CliRunner().invoke(
        app, ["extract", "relations", "--all", "--out", str(out), "--retry", "1"]
    )
    assert res.exit_code == 0, res.output
    assert len(list(out.glob("story_relations_*.json"))) == 2


def test_cli_dry_run_and_config_errors(cli_env: Env, llm_stub: StubServer) -> None:
    res = CliRunner().invoke(app, ["extract", "relations", "--all", "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["stages"] == 2 and data["input_tokens"] > 0 and data["cost_usd"] > 0
    res = CliRunner().invoke(app, ["extract", "relations", "--all", "--dry-run"])
    assert "input tokens" in res.stdout
    assert llm_stub.requests == []
    res = CliRunner().invoke(app, ["extract", "relations", "nope/stage"])
    assert isinstance(res.exception, ConfigError) and res.exception.exit_code == 2


# --- failures a script must be able to trust -------------------------------------------


@pytest.fixture
def many(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_stub: StubServer) -> Path:
    """14 invented stages ingested into a home the CLI uses (ARKLORE_HOME)."""
    roots = _generated_tree(tmp_path / "data")
    with make_workspace(tmp_path / "home", roots.gamedata, roots.astr) as ws:
        ws.ingest()
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    for k, v in fast_env(llm_stub).items():
        monkeypatch.setenv(k, v)
    return tmp_path / "home"


def test_a_dead_endpoint_trips_the_breaker_with_one_line_and_exit_4(
    many: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("LLM_BREAKER_FAILURES", "3")
    res = CliRunner().invoke(
        app,
        ["extract", "relations", "--all", "--concurrency", "1", "--json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 4, res.output
    data = json.loads(res.stdout)
    assert data["failed"] == 3 and data["not_started"] == data["jobs"] - 3 == 11
    assert data["exports"] == []  # no stage has results
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("stopped:")]
    assert "3 requests in a row could not reach the endpoint" in line and "LLM_BASE_URL" in line
    assert "Traceback" not in res.output
    # every attempt is on the cost line: 3 jobs x (1 + 2 retries), all failed
    assert "LLM: 9 requests (0 cached, 9 failed)" in res.stderr


def test_a_bad_key_trips_the_breaker_without_retrying(
    many: Path, llm_stub: StubServer, monkeypatch
):
    monkeypatch.setenv("LLM_BREAKER_FAILURES", "2")
    llm_stub.default = lambda body: Reply.unauthorized()
    res = CliRunner().invoke(app, ["extract", "relations", "--all", "--concurrency", "1"])
    assert res.exit_code == 4 and len(llm_stub.requests) == 2  # permanent: no retries


def test_some_failed_chunks_exit_3_and_a_rerun_retries_them(many: Path, llm_stub: StubServer):
    ok = Responder(faults=False, bad_edge="none")
    llm_stub.default = lambda body: (
        Reply.server_error() if "level_gen_03" in body["messages"][-1]["content"] else ok(body)
    )
    res = CliRunner().invoke(app, ["extract", "relations", "--all", "--json"])
    assert res.exit_code == 3, res.output
    data = json.loads(res.stdout)
    assert data["failed"] == 1 and data["failures"] == ["obt/main/level_gen_03_beg#c0"]
    assert len(data["exports"]) == 13  # the failed stage has no results to export
    llm_stub.default = ok
    res = CliRunner().invoke(app, ["extract", "relations", "--all", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["done"] == 1


def test_max_cost_stops_before_the_limit_and_a_resume_finishes(
    many: Path, llm_stub: StubServer, monkeypatch, tmp_path: Path
) -> None:
    # 300 USD per million input tokens, 300 billed per request (fewer than the prompt has by
    # arklore's conservative count, as with a real tokenizer): ~0.09 USD a chunk
    monkeypatch.setenv("LLM_PRICE_INPUT_MISS", "300")
    monkeypatch.setenv("LLM_PRICE_INPUT_HIT", "300")
    responder = Responder(faults=False, bad_edge="none")
    usage = {"prompt_tokens": 300, "completion_tokens": 10, "prompt_cache_miss_tokens": 300}

    def billed(body):
        reply = responder(body)
        reply.usage = usage
        return reply

    llm_stub.default = billed
    res = CliRunner().invoke(
        app, ["extract", "relations", "--all", "--max-cost", "0.5", "--concurrency", "2", "--json"]
    )
    assert res.exit_code == 4, res.output
    first = json.loads(res.stdout)
    assert 0 < first["done"] < 14 and first["not_started"] > 0
    assert "stopped before passing --max-cost $0.5:" in res.stderr
    cost = re.search(r"cost \$([0-9.]+)", res.stderr)
    assert cost is not None, res.stderr
    spent = float(cost.group(1))
    assert spent <= 0.5
    res = CliRunner().invoke(app, ["extract", "relations", "--all", "--max-cost", "100", "--json"])
    assert res.exit_code == 0, res.output
    second = json.loads(res.stdout)
    assert second["skipped"] == first["done"] and second["done"] == 14 - first["done"]
    with open_store(many / "arklore.sqlite3") as store:
        resumed = dump(store)
    # the same chunks run without a limit give the same rows
    fresh = tmp_path / "fresh"
    shutil.copytree(many, fresh)
    with open_store(fresh / "arklore.sqlite3") as store:
        store.conn.execute("DELETE FROM relation_edges")
        store.conn.execute("DELETE FROM relation_chunks")
        run(store, fresh, llm_stub, store.stage_paths())
        assert dump(store) == resumed


def test_dry_run_models_the_prefix_cache(small) -> None:
    _, store = small
    est = runner.dry_run(store, store.stage_paths(), Prices(input_hit=0.1, input_miss=1.0))
    # every request repeats the system prompt: from the second on it is read from the cache
    assert est.requests == 2 and 0 < est.cached_input_tokens < est.input_tokens
    assert est.cached_input_tokens % 64 == 0
    assert est.cost_with_cache_usd < est.cost_usd
    assert "with the provider's prefix cache" in est.line()


# --- real data: 20 stages, faults, rerun, kill and resume ------------------------------


def _real_tree(gamedata_root: Path, dest: Path) -> list[str]:
    """Copy 20 real stage files (18 short, 2 long ones that need several chunks) into a tmp
    tree; link the excel tables (read only) for operators and stage metadata."""
    src = gamedata_root / STORY / "obt/main"
    files = sorted(src.glob("level_main_*.txt"))
    chosen = files[:18] + sorted(files[18:], key=lambda p: -p.stat().st_size)[:2]
    story = dest / STORY / "obt/main"
    story.mkdir(parents=True)
    for f in chosen:
        shutil.copyfile(f, story / f.name)
    (dest / "zh_CN/gamedata/excel").symlink_to(gamedata_root / "zh_CN/gamedata/excel")
    return sorted(f"obt/main/{f.stem}" for f in chosen)


@pytest.fixture(scope="module")
def real_store(gamedata_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real20")
    paths = _real_tree(gamedata_root, root / "gamedata")
    db = root / "seed" / "arklore.sqlite3"
    with open_store(db) as store:
        ingest(DataRoots(root / "gamedata", None), store, sources=("avg",))
        assert store.stage_paths() == paths
    return db


def _copy_store(seed: Path, home: Path) -> Store:
    home.mkdir(parents=True)
    shutil.copyfile(seed, home / "arklore.sqlite3")
    return open_store(home / "arklore.sqlite3")


@pytest.mark.realdata
def test_real_20_stages_with_faults_rerun_and_resume(
    real_store: Path, llm_stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    responder = Responder(faults=True, permanent=11)
    llm_stub.default = responder
    home = tmp_path / "run"
    store = _copy_store(real_store, home)
    paths = store.stage_paths()
    assert len(paths) == 20
    jobs = [j for sp in paths for j in runner.stage_jobs(store, sp, store.lines(sp))]
    assert len(jobs) > 20  # the long stages split into chunks
    prompts = {j.key: j.request.messages[-1]["content"] for j in jobs}
    permanent = {k for k, p in prompts.items() if responder.is_permanent(p)}
    assert permanent and len(permanent) < len(jobs)

    first = run(store, home, llm_stub, paths)
    assert first.jobs == len(jobs) and first.done == len(jobs) - len(permanent)
    assert set(first.failures) == permanent and first.failed == len(permanent)
    logged = [json.loads(x) for x in llm_files(home).errors.read_text().splitlines()]
    assert sorted(r["key"] for r in logged) == sorted(permanent)  # each failure once
    kinds = {digest(p) % 4 for k, p in prompts.items() if k not in permanent}
    assert kinds >= {0, 1, 2}  # 429, timeout and malformed JSON were all injected
    _assert_no_duplicates(store, responder, prompts)
    assert first.dropped > 0 and first.drop_reasons() == {"evidence_out_of_range": first.dropped}

    responder.permanent = 0  # the endpoint recovers: a resume asks only for what failed
    n = len(llm_stub.requests)
    second = run(store, home, llm_stub, paths)
    assert second.skipped == len(jobs) - len(permanent) and second.failed == 0
    assert len(llm_stub.requests) - n >= len(permanent)
    _assert_no_duplicates(store, responder, prompts)
    complete = dump(store)

    n = len(llm_stub.requests)
    third = run(store, home, llm_stub, paths, resume=False)
    assert third.cached == len(jobs) and "cost $0.0000" in third.cost_line
    assert len(llm_stub.requests) == n and dump(store) == complete
    store.close()

    # killed halfway (Ctrl-C while storing the 8th chunk), then resumed
    home2 = tmp_path / "killed"
    killed = _copy_store(real_store, home2)
    real_write = edges_db.write_chunk
    calls = {"n": 0}

    def dying_write(*a: Any, **kw: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 8:
            raise KeyboardInterrupt
        real_write(*a, **kw)

    monkeypatch.setattr(edges_db, "write_chunk", dying_write)
    with pytest.raises(KeyboardInterrupt):
        run(killed, home2, llm_stub, paths, concurrency=3)
    assert killed.conn.execute("SELECT count(*) FROM relation_chunks").fetchone()[0] == 7
    monkeypatch.setattr(edges_db, "write_chunk", real_write)
    resumed = run(killed, home2, llm_stub, paths)
    assert resumed.skipped == 7 and resumed.done == len(jobs) - 7 and resumed.failed == 0
    assert dump(killed) == complete
    killed.close()


def _assert_no_duplicates(store: Store, responder: Responder, prompts: dict[str, str]) -> None:
    rows = store.conn.execute(
        "SELECT c.job_key, c.edges, (SELECT count(*) FROM relation_edges e"
        " WHERE e.stage_path = c.stage_path AND e.chunk = c.chunk) FROM relation_chunks c"
    ).fetchall()
    for key, n_edges, n_rows in rows:
        assert n_edges == n_rows == len(responder.edges(prompts[key])), key
    total = store.conn.execute("SELECT count(*) FROM relation_edges").fetchone()[0]
    assert total == sum(r[2] for r in rows)


@pytest.mark.realdata
def test_dry_run_all_real_corpus(real_store_path: Path, tmp_path: Path) -> None:
    """`--dry-run --all` over the whole corpus: a positive estimate, no calls."""
    with open_store(real_store_path) as store:
        paths = runner.select_stages(store, all_=True)
        est = runner.dry_run(store, paths, Prices())
    assert len(paths) > 1000 and est.requests >= len(paths)
    assert est.input_tokens > 1_000_000 and est.cost_usd > 0
    assert not (tmp_path / "home" / "llm_cache.sqlite3").exists()


# --- SIGKILL mid-run, then resume ------------------------------------------------------

KILL_SCRIPT = """
import sys
from arklore.cli.app import main
sys.argv = ["arklore", "extract", "relations", "--all", "--concurrency", "2", "--json"]
main()
"""


def _generated_tree(root: Path, n: int = 12) -> DataRoots:
    """The invented tree plus ``n`` short invented stages (two speakers talking)."""
    gamedata, astr = write_tree(root)
    story = gamedata / STORY / "obt/main"
    for i in range(n):
        text = "".join(f'[name="{"甲乙丙丁"[(i + k) % 4]}"]  第{i}段第{k}句。\n' for k in range(6))
        (story / f"level_gen_{i:02d}_beg.txt").write_text(text, encoding="utf-8")
    return DataRoots(gamedata, astr)


@pytest.mark.slow  # a subprocess killed mid-run: seconds
def test_sigkilled_cli_run_resumes_to_the_uninterrupted_result(
    llm_stub: StubServer, tmp_path: Path
) -> None:
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    roots = _generated_tree(tmp_path / "data")
    seed = tmp_path / "seed.sqlite3"
    with open_store(seed) as store:
        ingest(roots, store)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    responder = Responder(faults=False, bad_edge="none")
    llm_stub.default = lambda body: Reply.slow(0.05, responder(body))
    ref = _copy_store(seed, tmp_path / "ref")
    run(ref, tmp_path / "ref", llm_stub, ref.stage_paths())
    expected = dump(ref)
    assert len(ref.stage_paths()) == 14 and len(expected) >= 12
    ref.close()

    home = tmp_path / "killed"
    _copy_store(seed, home).close()
    env = {**os.environ, **fast_env(llm_stub), "ARKLORE_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT], env=env, stdout=subprocess.PIPE)
    db = home / "arklore.sqlite3"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            n = sqlite3.connect(db).execute("SELECT count(*) FROM relation_chunks").fetchone()[0]
        except sqlite3.OperationalError:
            n = 0
        if n >= 4:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open_store(db) as store:
        stored = store.conn.execute("SELECT count(*) FROM relation_chunks").fetchone()[0]
    assert 4 <= stored < 14, "the child was not killed midway"

    out = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["skipped"] >= stored and report["failed"] == 0
    assert "LLM:" in out.stderr  # the cost line
    with open_store(db) as store:
        assert dump(store) == expected
