"""Curation on a tiny invented corpus: candidates with evidence and context, central
operators, the evidence key of the matrix and the corpus check at graph build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.lines import line, stage
from support.store import ingested_store
from typer.testing import CliRunner

from arklore.core.errors import InputFileError, UnknownNameError
from arklore.core.model import LineKind, make_line_id
from arklore.core.operators import Operator
from arklore.corpus.store import Store
from arklore.graph.build import build_graph
from arklore.graph.curate import candidates, central_operators, search_lines
from arklore.graph.curated_check import check_curated
from arklore.graph.matrix import load_matrix
from arklore.graph.model import DOCTOR_ID
from arklore.graph.people import Admission, People
from arklore.names.build import load_alias_table
from arklore.names.matcher import build_matcher
from arklore.names.registry import Registry

BELL, LEAF, HE = "char_910_shuangl", "char_911_yanye", "char_912_qinghe"
OPS = [Operator(BELL, "霜铃"), Operator(LEAF, "岩叶"), Operator(HE, "青禾")]

S1 = "test/c1"
S1_LINES = [
    ("霜铃", "岩叶，今天的巡逻由你带队。"),
    ("岩叶", "明白，我去准备。"),
    ("", "山口的风很大。"),
    ("青禾", "姐姐，等等我！"),
    ("霜铃", "青禾，跟紧我，别乱跑。"),
    ("青禾", "嗯！"),
    ("霜铃", "这是我的妹妹青禾第一次出任务。"),
    ("博士", "出发"),
]
S2 = "test/c2"
S2_LINES = [("岩叶" if i % 2 else "老船长", f"第{i}句闲话。") for i in range(1, 15)]


def lid(path: str, no: int) -> str:
    lines = S1_LINES if path == S1 else S2_LINES
    speaker, text = lines[no - 1]
    return make_line_id(path, no, speaker, text)


def make_store(path: Path) -> Store:
    stages = [
        stage(sp, [line(sp, i, who, text, kind=LineKind.CHOICE if who == "博士" else None)
                   for i, (who, text) in enumerate(rows, 1)])
        for sp, rows in ((S1, S1_LINES), (S2, S2_LINES))
    ]  # fmt: skip
    return ingested_store(path, stages, Registry({o.char_id: o for o in OPS}))


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = make_store(tmp_path / "arklore.sqlite3")
    registry = Registry({o.char_id: o for o in OPS})
    people = People(
        registry,
        build_matcher(operators=OPS),
        sorted(store.speaker_counts()),
        admission=Admission(min_lines=4),
    )
    yield store, people
    store.close()


# -- candidates ------------------------------------------------------------------------------
def test_candidates_find_a_vocative_and_a_kinship_word_with_context(world) -> None:
    store, people = world
    report = candidates(store, people, "霜铃")
    assert report.node == BELL and report.lines == 3 and report.stages == 1
    by_node = {c.node: c for c in report.candidates}
    he = by_node[HE]
    # 青禾 says 姐姐 with 霜铃 speaking next to her; 霜铃 calls 青禾 by name; 妹妹青禾 names her
    assert he.signals["kin_to"] == 1 and he.signals["vocative_by"] == 1
    assert he.signals["kin_named"] == 1 and he.words == {"姐姐": 1, "妹妹": 1}
    assert {(s.source, s.target, s.predicate) for s in he.suggestions} == {
        (BELL, HE, "近亲"),
        (HE, BELL, "近亲"),
    }
    kin = next(e for e in he.evidence if e.signal == "kin_to")
    assert kin.line_id == lid(S1, 4) and kin.word == "姐姐"
    assert [c.line_id for c in kin.context] == [lid(S1, n) for n in (2, 3, 4, 5, 6)]
    assert [c.focus for c in kin.context] == [False, False, True, False, False]
    # 岩叶 is addressed by name; the kinship word is not attributed to her (she is not near line 4)
    leaf = by_node[LEAF]
    assert leaf.signals == {"vocative_by": 1} and not leaf.suggestions
    assert he.score > leaf.score


def test_candidates_resolve_any_name_and_restrict_to_one_person(world) -> None:
    store, people = world
    only = candidates(store, people, BELL, only="青禾")
    assert [c.node for c in only.candidates] == [HE]
    doc = candidates(store, people, "博士")
    assert doc.node == DOCTOR_ID


def test_unknown_name_is_one_error_with_close_names(world) -> None:
    store, people = world
    with pytest.raises(UnknownNameError) as err:
        candidates(store, people, "霜玲")
    assert "霜铃" in err.value.one_line() and "\n" not in err.value.one_line()


def test_central_operators_sum_every_speaker_name(world) -> None:
    store, _ = world
    # 霜铃 4 lines, 岩叶 1 + 7, 青禾 2; 老船长 is no operator
    table = load_alias_table(store)
    assert central_operators(store, 2, table) == [LEAF, BELL]
    assert central_operators(store, 10, table) == [LEAF, BELL, HE]


def test_search_lines_filters_by_speaker_and_presence(world) -> None:
    store, people = world
    hits = search_lines(store, people, "青禾", speaker="霜铃")
    assert [h.line_id for h in hits] == [lid(S1, 5), lid(S1, 7)]
    assert search_lines(store, people, "闲话", near="霜铃") == []


# -- the matrix evidence key ------------------------------------------------------------------
def _matrix(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "m.toml"
    p.write_text(body, encoding="utf-8")
    return p


def _entry(frm: str, to: str, pred: str, evidence: list[str] | None) -> str:
    ev = f"evidence = {json.dumps(evidence, ensure_ascii=False)}\n" if evidence is not None else ""
    return f'[[relation]]\nfrom = "{frm}"\nto = "{to}"\npredicate = "{pred}"\n{ev}\n'


def _resolver(store: Store, people: People):
    return people.user_node


@pytest.mark.parametrize(
    "evidence, reason",
    [
        ([], "expected 1-3 line ids, got 0"),
        (["a#1:00000000"] * 2 + ["b#1:00000000", "c#1:00000000"], "got 4"),
        (["test/c1#1"], "not a line id"),
        (["test/c1#0:00000000"], "not a line id"),
        (["test/c1#1:ZZZZZZZZ"], "not a line id"),
        (["test/c1#1:00000000", "test/c1#1:00000000"], "given twice"),
    ],
)
def test_matrix_rejects_bad_evidence_with_file_line_and_key(
    world, tmp_path: Path, evidence: list[str], reason: str
) -> None:
    store, people = world
    path = _matrix(
        tmp_path,
        _entry("霜铃", "青禾", "近亲", [lid(S1, 5)]) + _entry("霜铃", "岩叶", "同事", evidence),
    )
    with pytest.raises(InputFileError) as err:
        load_matrix(path, _resolver(store, people))
    msg = err.value.one_line()
    assert (
        str(path) in msg
        and "line 11 [[relation]] #2" in msg
        and "'evidence'" in msg
        and reason in msg
    )


def test_matrix_rejects_evidence_of_the_wrong_type(world, tmp_path: Path) -> None:
    store, people = world
    path = _matrix(
        tmp_path, '[[relation]]\nfrom = "霜铃"\nto = "青禾"\npredicate = "近亲"\nevidence = "x"\n'
    )
    with pytest.raises(InputFileError, match="wrong type"):
        load_matrix(path, _resolver(store, people))
    path.write_text(path.read_text(encoding="utf-8").replace('"x"', "[1]"), encoding="utf-8")
    with pytest.raises(InputFileError, match="expected string"):
        load_matrix(path, _resolver(store, people))


# -- the corpus check ------------------------------------------------------------------------
GOOD = ("霜铃", "青禾", "近亲")
WRONG_ID = ("岩叶", "霜铃", "同事")
STALE = ("青禾", "霜铃", "近亲")
ABSENT = ("青禾", "岩叶", "朋友")
NO_EVIDENCE = ("岩叶", "青禾", "相识")


def _check_matrix(tmp_path: Path) -> Path:
    stale = lid(S1, 4)[:-8] + ("0" * 8 if not lid(S1, 4).endswith("0" * 8) else "1" * 8)
    return _matrix(
        tmp_path,
        _entry(*GOOD, [lid(S1, 5), lid(S1, 7)])
        + _entry(*WRONG_ID, ["test/c1#40:00000000", "test/nowhere#1:00000000"])
        + _entry(*STALE, [stale])
        + _entry(*ABSENT, [lid(S2, 12)])  # 岩叶 speaks there; 青禾 is far away
        + _entry(*NO_EVIDENCE, None),
    )


def test_check_reports_wrong_stale_and_absent_entries_with_file_and_line(world, tmp_path) -> None:
    store, people = world
    path = _check_matrix(tmp_path)
    resolve = _resolver(store, people)
    entries = load_matrix(path, resolve)
    _, fails = check_curated(entries, store, people)
    got = {(f.source, f.target): f for f in fails}
    assert set(got) == {(LEAF, BELL), (HE, BELL), (HE, LEAF)}
    assert all(f.path == str(path) for f in fails)
    assert got[(LEAF, BELL)].line == 7 and "only 8 lines" in got[(LEAF, BELL)].reason
    assert got[(HE, BELL)].line == 13 and f"now {lid(S1, 4)}" in got[(HE, BELL)].reason
    assert got[(HE, LEAF)].line == 19 and HE in got[(HE, LEAF)].reason
    assert "not around any evidence line" in got[(HE, LEAF)].reason
    # the shipped file must cite evidence: the same entries checked as if they were shipped
    _, shipped = check_curated(entries, store, people, require_evidence=[str(path)])
    assert {(f.source, f.target) for f in shipped} == set(got) | {(LEAF, HE)}


def test_build_leaves_failing_entries_out_and_keeps_good_ones_with_evidence(
    world, tmp_path
) -> None:
    store, people = world
    path = _check_matrix(tmp_path)
    g = build_graph(store, people, matrix_paths=[path], excel_root=tmp_path / "no-excel")
    rejected = g.meta["curated_rejected"]
    assert {(r["from"], r["to"]) for r in rejected} == {(LEAF, BELL), (HE, BELL), (HE, LEAF)}
    assert all(r["path"] == str(path) and r["line"] and r["reason"] for r in rejected)
    assert g.meta["curated"] == {"with_evidence": 4, "no_evidence": 1, "rejected": 3}
    (good,) = [e for e in g.get_relation(BELL, HE) if e.predicate == "近亲"]
    assert "matrix" in good.origins
    assert {lid(S1, 5), lid(S1, 7)} <= set(good.evidence_line_ids)
    for a, b, pred in (WRONG_ID, STALE, ABSENT):
        assert pred not in [e.predicate for e in g.get_relation(a, b)]
    # a user entry without evidence is still allowed
    assert "相识" in [e.predicate for e in g.get_relation(LEAF, HE)]


def test_doctor_counts_as_present_through_a_choice_line(world, tmp_path) -> None:
    store, people = world
    path = _matrix(tmp_path, _entry("霜铃", "博士", "战友", [lid(S1, 7)]))
    entries = load_matrix(path, _resolver(store, people))
    assert check_curated(entries, store, people)[1] == []
    far = _matrix(tmp_path, _entry("岩叶", "博士", "战友", [lid(S1, 2)]))
    entries = load_matrix(far, _resolver(store, people))
    (f,) = check_curated(entries, store, people)[1]
    assert DOCTOR_ID in f.reason


# -- CLI -------------------------------------------------------------------------------------
@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world):
    from arklore.cli.app import app

    home = tmp_path / "home"
    monkeypatch.setenv("ARKLORE_HOME", str(home))
    monkeypatch.delenv("ARKLORE_GAMEDATA", raising=False)
    make_store(home / "arklore.sqlite3").close()
    runner = CliRunner()
    return lambda *a: runner.invoke(app, list(a), catch_exceptions=True)


def test_cli_candidates_text_and_json(cli) -> None:
    r = cli("curate", "candidates", "霜铃", "--no-graph", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["node"] == BELL and doc["candidates"][0]["node"] == HE
    r = cli("curate", "candidates", "霜铃", "--no-graph")
    assert r.exit_code == 0 and "青禾 (char_912_qinghe)" in r.stdout and "> 青禾: 姐姐" in r.stdout
    r = cli("curate", "candidates", "霜玲", "--no-graph")
    assert r.exit_code != 0 and isinstance(r.exception, UnknownNameError)


def test_cli_search_text_and_json(cli) -> None:
    r = cli("curate", "search", "青禾", "--speaker", "霜铃", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [h["line_id"] for h in doc] == [lid(S1, 5), lid(S1, 7)]
    assert any(c["focus"] and c["speaker"] == "霜铃" for c in doc[0]["context"])
    r = cli("curate", "search", "青禾", "--speaker", "霜铃")
    assert r.exit_code == 0 and lid(S1, 5) in r.stdout


def test_cli_check_and_build_print_rejections(cli, tmp_path: Path) -> None:
    path = _check_matrix(tmp_path)
    r = cli("curate", "check", "--matrix", str(path), "--central", "3", "--json")
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["relations"] == 5 and len(out["rejected"]) == 3 and out["central_with_2"] == 0
    r = cli("graph", "build", "--matrix", str(path))
    assert r.exit_code == 0, r.output
    assert "3 rejected" in r.stdout and f"{path}:13" in r.stdout.replace("\n", "")


def test_a_since_naming_no_stored_stage_leaves_the_entry_out(world, tmp_path) -> None:
    store, people = world
    good = _entry(*GOOD, [lid(S1, 5)]).replace("evidence", f'since = "{S1}"\nevidence', 1)
    bad = _entry(*GOOD, [lid(S1, 5)]).replace("evidence", 'since = "test/nowhere"\nevidence', 1)
    resolve = _resolver(store, people)
    kept, _ = check_curated(load_matrix(_matrix(tmp_path, good), resolve), store, people)
    assert [c.since for c in kept] == [S1]
    kept, fails = check_curated(load_matrix(_matrix(tmp_path, bad), resolve), store, people)
    assert kept == [] and "since 'test/nowhere' is not a stage" in fails[0].reason
