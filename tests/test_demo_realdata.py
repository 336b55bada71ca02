"""`arklore demo --json` on the real data (hash embedder: the e5 build time is `make bench`'s):
the build runs every step, then three turns receive what makes each operator herself."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from arklore.build import STEPS
from arklore.cli.app import main

pytestmark = pytest.mark.realdata


def test_demo_builds_then_shows_three_operators_with_their_people(
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

    assert [s["name"] for s in out["build"]["steps"]] == list(STEPS)
    tiers = out["build"]["steps"][STEPS.index("profiles")]["summary"]["tiers"]
    assert tiers.get("B", 0) > 400  # every operator a source has something for
    by_name = {t["operator"]["name"]: _blocks(t) for t in out["turns"]}
    assert set(by_name) == {"阿米娅", "陈", "银灰"}
    for name, blocks in by_name.items():
        assert blocks["persona"]["meta"]["tier"] == "B", name
        rel = blocks["relations"]
        assert not rel["empty"] and rel["sources"]["line_ids"], name
        assert not blocks["memories"]["empty"], name
    chen = by_name["陈"]["relations"]["items"]
    assert "塔露拉" in [r["target_name"] for r in chen]
    gray = by_name["银灰"]["relations"]["items"]
    assert "初雪" in [r["target_name"] for r in gray]
    metrics(
        "demo: "
        + "; ".join(
            f"{n}: " + ", ".join(r["target_name"] for r in blocks["relations"]["items"])
            for n, blocks in by_name.items()
        )
    )


def _blocks(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn's blocks by name (the turn JSON lists them in prompt order)."""
    return {b["name"]: b for b in turn["blocks"]}
