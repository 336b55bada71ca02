"""`arklore demo --json` on the real data (hash embedder: the e5 build time is `make bench`'s):
阿米娅's, 陈's and 银灰's top relations are named, described, and cite stages; none is an
example; a turn naming someone outside her anchors gets an evidence-built view of that person."""

from __future__ import annotations

import json
import sys

import pytest

from arklore.cli.app import main

pytestmark = pytest.mark.realdata


def test_demo_shows_named_relations_with_evidence_for_three_operators(
    real_workspace, gamedata_root, astr_root, monkeypatch, capsys, metrics
) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(real_workspace.paths.home))
    monkeypatch.setenv("ARKLORE_GAMEDATA", str(gamedata_root))
    monkeypatch.setenv("ARKLORE_ASTR", str(astr_root))
    monkeypatch.setenv("ARKLORE_EMBEDDER", "hash")
    monkeypatch.setattr(sys, "argv", ["arklore", "demo", "--json"])
    try:
        main()
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)

    anchors = out["anchors"]
    assert set(anchors) == {"char_002_amiya", "char_010_chen", "char_172_svrash"}
    for op, rels in anchors.items():
        assert len(rels) == 3, op
        for r in rels:
            assert r["predicate"] not in ("interaction", "相识"), (op, r)
            assert 10 <= len(r["text"]) <= 200 and not r["text"].startswith("示例"), (op, r)
            assert r["evidence_line_ids"] and r["stages"], (op, r)
    turn = out["turn"]
    assert turn["contextual"] and turn["tokens"] <= turn["budget"]
    ctx = turn["contextual"][0]
    assert ctx["source"] == "graph_edge" and "称" in ctx["text"] and ctx["evidence_line_ids"]
    metrics(
        "demo: "
        + "; ".join(
            f"{op}: " + ", ".join(f"{r['target']} {r['predicate']} [{r['source']}]" for r in rels)
            for op, rels in anchors.items()
        )
        + f"; graph named edges {out['graph']['counts']['named_edges']}"
    )
