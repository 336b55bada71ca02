"""`arklore build`: every step once, then only what changed; a killed build resumes; the
command prints a summary with what to try next."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support.tree_world import AVG_STAGE_A, STORY, make_workspace, write_tree
from typer.testing import CliRunner

from arklore.build import STEPS, BuildState, run_build
from arklore.cli.app import app
from arklore.core.errors import ArkloreError
from arklore.extract import store as edges_db
from arklore.extract.gates import GatedEdge, GatedEvidence


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    return write_tree(tmp_path / "data")


def matrix_file(home: Path) -> Path:
    """An (empty) curated matrix for the invented world: the packaged one names real people."""
    path = home.parent / "matrix.toml"
    path.write_text(MATRIX, encoding="utf-8")
    return path


MATRIX = "# the invented world's curated relations: none\n"


def build(home: Path, data: tuple[Path, Path], **kw):  # noqa: ANN201
    ws = make_workspace(home, *data, embedder="hash", matrix=matrix_file(home))
    try:
        return run_build(ws, **kw)
    finally:
        ws.close()


def store_extracted_edge(home: Path, data: tuple[Path, Path], *, note: str = "") -> None:
    """What `arklore extract relations` leaves for a build: one kept edge of a test stage."""
    stage = "obt/main/level_test_01_beg"
    ws = make_workspace(home, *data, embedder="hash", matrix=matrix_file(home))
    try:
        store = ws.corpus.open()
        first = store.lines(stage)[0].line_id
        edge = GatedEdge(
            subject="测试员", subject_kind="character", predicate="战友", object="向导",
            object_kind="character", basis_claimed="direct", basis="direct",
            predicate_family="comradeship", stage=stage, evidence_line_ids=[first],
            evidence=[GatedEvidence(1, "direct", line_id=first)], note=note,
        )  # fmt: skip
        edges_db.write_chunk(
            store, stage, 0, [edge], job_key="k", fingerprint="f", model="scripted",
            prompt_version="test", line_span=(1, 2), from_cache=False,
        )  # fmt: skip
    finally:
        ws.close()


def ran(report) -> list[str]:  # noqa: ANN001
    return [s.name for s in report.steps if not s.skipped]


def test_a_first_build_runs_every_step_and_leaves_a_chat_ready(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    home = tmp_path / "home"
    report = build(home, data)
    assert ran(report) == list(STEPS) and report.exit_code == 0
    ws = make_workspace(home, *data, embedder="hash", matrix=matrix_file(home))
    assert ws.rag.built() and ws.graph.exists() and ws.events.indexed()
    assert ws.profiles.all()  # a rule-built profile for the operators with a source
    turn = ws.chat.turn("阿米娅", "你好")
    assert turn.block("persona").meta["tier"] == "B"
    ws.close()


def test_a_second_build_skips_every_step_whose_inputs_did_not_change(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    home = tmp_path / "home"
    build(home, data)
    again = build(home, data)
    assert ran(again) == ["ingest"]  # ingest always looks (unchanged stages are skipped)
    story = data[0] / STORY / "obt/main/level_test_01_beg.txt"
    story.write_text(AVG_STAGE_A.replace("我们走北边", "我们走东边"), encoding="utf-8")
    changed = build(home, data)
    assert ran(changed) == list(STEPS)  # the corpus changed: everything after it is redone
    assert ran(build(home, data, force=True)) == list(STEPS)


def test_a_new_arklore_redoes_the_steps_its_inputs_record(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release may build differently from the same data (a names rule, an anchor field):
    a home built by an older one is rebuilt, not left with the old rules' output."""
    home = tmp_path / "home"
    build(home, data)
    monkeypatch.setattr("arklore.build.__version__", "99.0.0")
    from arklore.events.facade import EventsFacade
    from arklore.rag.exemplars import ExemplarIndex
    from arklore.rag.facade import RagFacade

    worked: list[str] = []

    def spy(real, step: str):  # noqa: ANN001, ANN202
        def run(*a, **k):  # noqa: ANN002, ANN003, ANN202
            out = real(*a, **k)
            if not getattr(out, "skipped", False) and not getattr(out, "unchanged", False):
                worked.append(step)
            return out

        return run

    monkeypatch.setattr(EventsFacade, "index", spy(EventsFacade.index, "appearances"))
    monkeypatch.setattr(ExemplarIndex, "build", spy(ExemplarIndex.build, "exemplars"))
    monkeypatch.setattr(RagFacade, "build", spy(RagFacade.build, "index"))
    assert ran(build(home, data)) == list(STEPS)
    # each step did its work, not only its store's own "current" check, which knows no version
    assert worked == ["appearances", "index", "exemplars"]
    assert ran(build(home, data)) == ["ingest"]


def test_a_new_names_rule_redoes_every_step_built_from_names(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A names rule decides whose lines are whose: the graph, her appearances and her scenes
    built with the old rule would keep lines of somebody else."""
    home = tmp_path / "home"
    build(home, data)
    monkeypatch.setattr("arklore.names.build.NAME_RULES", 99)
    assert ran(build(home, data)) == list(STEPS)
    assert ran(build(home, data)) == ["ingest"]


def test_new_document_rules_redo_the_index_step_alone(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index step records the index's own digest (graph, names, profiles, embedder and
    its document rules), so a change of the rules rebuilds the documents and nothing else."""
    home = tmp_path / "home"
    build(home, data)
    monkeypatch.setattr("arklore.rag.facade.DOCS_VERSION", "docs-test")
    assert ran(build(home, data)) == ["ingest", "index"]
    assert ran(build(home, data)) == ["ingest"]


def test_a_build_killed_after_a_step_resumes_at_the_next(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    from arklore.profiles.facade import ProfilesFacade

    def killed(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(ProfilesFacade, "distill", killed)
    with pytest.raises(KeyboardInterrupt):
        build(home, data)
    state = BuildState(home / "build.json")
    assert set(state.data) == {"graph", "appearances"}  # what finished is recorded
    monkeypatch.undo()
    assert ran(build(home, data)) == ["ingest", "profiles", "index", "exemplars"]


def test_a_replaced_graph_file_is_rebuilt(tmp_path: Path, data: tuple[Path, Path]) -> None:
    home = tmp_path / "home"
    build(home, data)
    (home / "relation_graph.json").unlink()
    assert "graph" in ran(build(home, data))


def test_new_extracted_relations_redo_the_graph_and_what_is_built_from_it(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    """`arklore extract relations` (the LLM) stores kept edges; they are graph inputs, so the
    next build merges them into the graph, and the steps built from the graph follow."""
    home = tmp_path / "home"
    build(home, data)
    store_extracted_edge(home, data)
    assert ran(build(home, data)) == ["ingest", "graph", "profiles", "index"]
    saved = orjson.loads((home / "relation_graph.json").read_bytes())
    assert saved["meta"]["extracted_rows"] == 1
    assert ran(build(home, data)) == ["ingest"]


def test_a_new_note_on_an_extracted_relation_redoes_the_index_not_the_graph(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    """The graph keeps no notes, but the story documents carry them: a re-extraction that
    changes only a note leaves the graph as it is and rebuilds the index."""
    home = tmp_path / "home"
    build(home, data)
    store_extracted_edge(home, data, note="一起守过防线")
    build(home, data)
    store_extracted_edge(home, data, note="在防线上互相掩护")
    assert ran(build(home, data)) == ["ingest", "index"]


def test_the_command_prints_each_step_and_what_to_try_next(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var, value in {"ARKLORE_HOME": str(tmp_path / "home"), "ARKLORE_EMBEDDER": "hash",
                       "ARKLORE_GAMEDATA": str(data[0]), "ARKLORE_ASTR": str(data[1]),
                       "ARKLORE_MATRIX": str(matrix_file(tmp_path / "home"))}.items():  # fmt: skip
        monkeypatch.setenv(var, value)
    r = CliRunner().invoke(app, ["build"])
    assert r.exit_code == 0, r.output
    for step in STEPS:
        assert step in r.stdout
    assert "Try next:" in r.stdout and "arklore turn" in r.stdout
    r = CliRunner().invoke(app, ["build", "--json"])
    out = orjson.loads(r.stdout)
    assert [s["skipped"] for s in out["steps"]] == [False] + [True] * (len(STEPS) - 1)


def test_the_command_needs_the_data_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ARKLORE_GAMEDATA", raising=False)
    monkeypatch.delenv("ARKLORE_ASTR", raising=False)
    r = CliRunner().invoke(app, ["build"])
    assert r.exit_code != 0 and isinstance(r.exception, ArkloreError)
    assert "ARKLORE_GAMEDATA" in r.exception.one_line()
