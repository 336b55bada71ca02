"""`arklore build` after an edit of one curated relation or one user `.char`: only what depends
on it is built again (the graph keeps its corpus pass and the edges of the other pairs, the
profiles step refreshes the graph's relation candidates alone, the index embeds only the
documents whose text changed), and the home ends exactly as a build from nothing with the same
inputs would leave it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.tree_world import (
    PATROL_SCRIPT,
    PATROL_STAGE,
    STORY,
    make_workspace,
    write_tree_with_patrol,
)

from arklore.build import run_build
from arklore.profiles.results import load_results
from arklore.rag.index import LIVE_FILE, live_documents

STAGE, SCRIPT = PATROL_STAGE, PATROL_SCRIPT


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    """The invented tree, and one more stage where three operators talk (so their views
    get index documents)."""
    return write_tree_with_patrol(tmp_path / "data")


def evidence(data: tuple[Path, Path], tmp_path: Path) -> list[str]:
    """The line ids of the invented stage (read from an ingest)."""
    ws = make_workspace(tmp_path / "probe", *data, embedder="hash")
    try:
        ws.ingest()
        return [ln.line_id for ln in ws.corpus.open().lines(STAGE)]
    finally:
        ws.close()


Relation = tuple[str, str, str, str, str]
"""from, to, predicate, description, the line id it cites."""


def write_matrix(path: Path, *relations: Relation) -> Path:
    """A user matrix of these relations."""
    path.write_text(
        "\n".join(
            f'[[relation]]\nfrom = "{a}"\nto = "{b}"\npredicate = "{p}"\n'
            f'description = "{d}"\nevidence = ["{line}"]\n'
            for a, b, p, d, line in relations
        ),
        encoding="utf-8",
    )
    return path


def build(
    home: Path, data: tuple[Path, Path], matrix: Path, force: bool = False, **kw: Any
) -> dict[str, Any]:
    """One `arklore build` (the invented world's matrix alone); its steps by name."""
    ws = make_workspace(home, *data, embedder="hash", matrix=matrix, matrix_replace=True, **kw)
    try:
        return {s.name: s for s in run_build(ws, force=force).steps}
    finally:
        ws.close()


def home_state(home: Path, data: tuple[Path, Path], matrix: Path, **kw: Any) -> dict[str, Any]:
    """What a build leaves that a chat reads: the graph's nodes and edges, the live index's
    documents (id, text, metadata), the generated profiles and every stored task result; the
    home's own path and the time a profile was generated left out."""
    graph = orjson.loads((home / "relation_graph.json").read_bytes())
    ws = make_workspace(home, *data, embedder="hash", matrix=matrix, matrix_replace=True, **kw)
    try:
        docs = sorted(
            (d.doc_id, d.text, orjson.dumps(d.metadata(), option=orjson.OPT_SORT_KEYS).decode())
            for d in live_documents(home / "rag", ws.rag.chroma())
        )
        docs = [(i, t, meta.replace(str(home), "<home>")) for i, t, meta in docs]
        results = {
            (cid, t): (r.status, r.reason, r.output, r.findings)
            for cid, per in load_results(ws.corpus.open()).items()
            for t, r in per.items()
        }
    finally:
        ws.close()
    chars = {
        p.name: re.sub(r"(?m)^- generated: .*$", "", p.read_text(encoding="utf-8"))
        for p in sorted((home / "chars").glob("*"))
    }
    return {"nodes": graph["nodes"], "edges": graph["edges"], "docs": docs,
            "results": results, "chars": chars}  # fmt: skip


def built_from_nothing(
    tmp_path: Path, data: tuple[Path, Path], matrix: Path, **kw: Any
) -> dict[str, Any]:
    """:func:`home_state` of a home built from nothing on the same inputs (the reference an
    edited home must equal)."""
    scratch = tmp_path / "scratch"
    build(scratch, data, matrix, **kw)
    return home_state(scratch, data, matrix, **kw)


def built_with_one_relation(
    tmp_path: Path, data: tuple[Path, Path]
) -> tuple[Path, Path, list[str]]:
    """A home built with a user matrix holding one relation (阿米娅's view of 陈): the home,
    the matrix file and the evidence lines of the invented stage."""
    lines = evidence(data, tmp_path)
    matrix = write_matrix(tmp_path / "matrix.toml", ("阿米娅", "陈", "战友", "同伴。", lines[1]))
    home = tmp_path / "home"
    build(home, data, matrix)
    return home, matrix, lines


def test_a_matrix_edit_is_built_from_the_kept_corpus_pass_and_equals_a_build_from_nothing(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    lines = evidence(data, tmp_path)
    first = ("阿米娅", "陈", "战友", "一起巡逻的同伴。", lines[1])
    matrix = write_matrix(tmp_path / "matrix.toml", first)
    home = tmp_path / "home"
    build(home, data, matrix)
    before = home_state(home, data, matrix)

    edited = ("阿米娅", "陈", "战友", "一起巡逻多年的同伴，路线总由她来定。", lines[1])
    added = ("阿米娅", "推进之王", "同事", "出发前总要通知到的前辈。", lines[2])
    write_matrix(matrix, edited, added)
    steps = build(home, data, matrix)
    assert not steps["graph"].skipped and steps["graph"].summary["corpus_pass"] is False
    assert "candidates_refreshed" in steps["profiles"].summary  # no profile written again
    index = steps["index"].summary  # the live collection gets the edited and the added one
    assert index["embedded"] == 2 and index["patched"] == {"upserted": 2, "deleted": 0}

    after = home_state(home, data, matrix)
    assert after == built_from_nothing(tmp_path, data, matrix)
    for part in ("edges", "docs", "results"):  # the edit reached the graph, index and task E
        assert after[part] != before[part], part


def test_a_removed_relation_leaves_the_graph_and_index_of_a_build_without_it(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    lines = evidence(data, tmp_path)
    one = ("阿米娅", "陈", "战友", "一起巡逻的同伴。", lines[1])
    two = ("陈", "阿米娅", "朋友", "总在出发前和她商量路线的朋友。", lines[1])
    matrix = write_matrix(tmp_path / "matrix.toml", one, two)
    home = tmp_path / "home"
    build(home, data, matrix)
    write_matrix(matrix, one)
    steps = build(home, data, matrix)
    assert steps["graph"].summary["corpus_pass"] is False
    # 陈's written view is gone; her view from the story is described again (and embedded)
    assert steps["index"].summary["patched"] == {"upserted": 1, "deleted": 1}

    assert home_state(home, data, matrix) == built_from_nothing(tmp_path, data, matrix)


def user_char(view: str) -> str:
    """阿米娅's profile as a person wrote it (no generated header: tier S) with her view of 陈."""
    return (
        f"# 阿米娅\n\n## 锚\n\n- 代号：阿米娅\n\n## 我·身边的人\n\n- 陈（char_010_chen）：{view}\n"
    )


def test_a_user_char_edit_redoes_the_index_alone_and_equals_a_build_from_nothing(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    lines = evidence(data, tmp_path)
    matrix = write_matrix(tmp_path / "matrix.toml", ("阿米娅", "陈", "战友", "同伴。", lines[1]))
    chars = tmp_path / "mine"
    chars.mkdir()
    mine = chars / "char_002_amiya.char"
    mine.write_text(user_char("一起巡逻的同伴，总是替大家着想。"), encoding="utf-8")
    home = tmp_path / "home"
    build(home, data, matrix, chars_dir=chars)

    mine.write_text(user_char("今晚带队的是她，我只管跟紧她的脚步。"), encoding="utf-8")
    steps = build(home, data, matrix, chars_dir=chars)
    assert [n for n, s in steps.items() if not s.skipped] == ["ingest", "index"]

    assert home_state(home, data, matrix, chars_dir=chars) == built_from_nothing(
        tmp_path, data, matrix, chars_dir=chars
    )


def test_a_story_edit_walks_the_corpus_again(tmp_path: Path, data: tuple[Path, Path]) -> None:
    """The kept corpus pass belongs to one corpus and names: an edited line is counted."""
    home, matrix, lines = built_with_one_relation(tmp_path, data)
    story = data[0] / STORY / f"{STAGE}.txt"
    story.write_text(SCRIPT.replace("好，一起出发。", "好，推进之王，一起出发。"), encoding="utf-8")
    assert build(home, data, matrix)["graph"].summary["corpus_pass"] is True
    assert home_state(home, data, matrix) == built_from_nothing(tmp_path, data, matrix)


def test_a_build_killed_while_patching_the_index_fills_a_new_collection(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    """The pointer is marked while the live collection is patched; a build that finds the
    mark (the last one was killed half-way) does not trust that collection."""
    home, matrix, lines = built_with_one_relation(tmp_path, data)
    pointer = home / "rag" / "active.json"
    killed = orjson.loads(pointer.read_bytes()) | {"patching": True}
    pointer.write_bytes(orjson.dumps(killed))
    write_matrix(matrix, ("阿米娅", "陈", "战友", "一起巡逻的同伴。", lines[1]))
    assert build(home, data, matrix)["index"].summary["patched"] is None
    now = orjson.loads(pointer.read_bytes())
    assert "patching" not in now and now["collection"] != killed["collection"]
    forced = build(home, data, matrix, force=True)["index"].summary  # --force: a new one too
    assert forced["patched"] is None
    assert orjson.loads(pointer.read_bytes())["collection"] != now["collection"]
    assert home_state(home, data, matrix) == built_from_nothing(tmp_path, data, matrix)


def test_an_edited_citation_is_checked_again_against_the_corpus(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    """The graph step keeps what it found checking each curated entry, by the entry's
    people and line ids: a citation edited to a line that is not there is refused again."""
    home, matrix, lines = built_with_one_relation(tmp_path, data)
    stale = lines[1].rsplit(":", 1)[0] + ":00000000"  # the line as a data update left it
    write_matrix(matrix, ("阿米娅", "陈", "战友", "同伴。", stale))
    assert build(home, data, matrix)["graph"].summary["corpus_pass"] is False
    graph = orjson.loads((home / "relation_graph.json").read_bytes())
    assert [r["to"] for r in graph["meta"]["curated_rejected"]] == ["char_010_chen"]
    assert home_state(home, data, matrix) == built_from_nothing(tmp_path, data, matrix)


def test_new_document_rules_describe_every_edge_again_and_embed_only_changed_texts(
    tmp_path: Path, data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts kept from the last build belong to its document rules: new rules make
    every text again, and the embedding cache (by text) embeds only those that changed."""
    lines = evidence(data, tmp_path)
    matrix = write_matrix(tmp_path / "matrix.toml", ("阿米娅", "陈", "战友", "同伴。", lines[1]))
    home = tmp_path / "home"
    first = build(home, data, matrix)["index"].summary
    monkeypatch.setattr("arklore.rag.facade.DOCS_VERSION", "docs-test")
    again = build(home, data, matrix)["index"].summary
    assert again["described"] == first["described"] == first["documents"] > 0
    assert again["embedded"] == 0 and again["patched"] == {"upserted": 0, "deleted": 0}


def test_a_patch_compares_with_what_the_live_collection_was_built_with(
    tmp_path: Path, data: tuple[Path, Path]
) -> None:
    """The index keeps a digest per document of the live collection (LIVE_FILE), so a patch
    reads nothing back from Chroma; without the file it reads the collection back, and it
    does too when the file belongs to another state of the collection."""
    home, matrix, lines = built_with_one_relation(tmp_path, data)
    live = home / "rag" / LIVE_FILE
    first = live.read_bytes()
    write_matrix(matrix, ("阿米娅", "陈", "战友", "一起巡逻的同伴。", lines[1]))
    assert build(home, data, matrix)["index"].summary["patched"] == {"upserted": 1, "deleted": 0}
    assert live.read_bytes() != first
    assert home_state(home, data, matrix) == built_from_nothing(tmp_path, data, matrix)

    live.write_bytes(first)  # the first build's: the collection has moved on since
    write_matrix(matrix, ("阿米娅", "陈", "战友", "同伴。", lines[1]))  # back to the first text
    assert build(home, data, matrix)["index"].summary["patched"] == {"upserted": 1, "deleted": 0}
    live.unlink()
    write_matrix(matrix, ("阿米娅", "陈", "战友", "多年的同伴。", lines[1]))
    assert build(home, data, matrix)["index"].summary["patched"] == {"upserted": 1, "deleted": 0}
    assert live.is_file()
    assert home_state(home, data, matrix) == built_from_nothing(tmp_path / "again", data, matrix)
