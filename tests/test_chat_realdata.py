"""Turn assembly on the real corpus (no profiles, no index: what a fresh install gives)."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing

import pytest
from support.tree_world import make_workspace

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def fresh_install(real_workspace, real_graph_built, tmp_path_factory):
    """A home with copies of the shared home's store and graph only: the profiles and the
    index other tests build there are not in it, so this module's answer does not depend on
    the order the modules run in (it failed when test_fidelity_realdata ran first)."""
    shared = real_workspace.paths
    home = tmp_path_factory.mktemp("fresh-install")
    with (
        closing(sqlite3.connect(shared.db)) as src,
        closing(sqlite3.connect(home / shared.db.relative_to(shared.home))) as dst,
    ):
        src.backup(dst)
    shutil.copy2(shared.graph, home / shared.graph.relative_to(shared.home))
    s = real_workspace.settings
    ws = make_workspace(home, s.gamedata, s.astr)
    yield ws
    ws.close()


def test_a_fresh_install_turn_says_what_is_missing_and_gives_appearances(
    fresh_install, metrics
) -> None:
    ws = fresh_install
    t = ws.chat.turn("恩希欧迪斯", "崖心最近好吗？", participants=["崖心"])
    assert t.operator_name == "银灰"
    persona, rel, mem, group = (t.block(n) for n in ("persona", "relations", "memories", "group"))
    assert persona.empty and "tier C" in persona.reason
    assert rel.empty and "ARKLORE_TIER_C_RELATIONS" in rel.reason
    assert mem.meta["kind"] == "appearances" and mem.stages and mem.tokens <= mem.budget
    assert all(s.path for s in mem.stages) and len(ws.events.appearances("银灰")) >= 10
    # no profile yet (tier C): no relations of the people present either, however the graph
    assert group.empty and "tier C" in group.reason
    metrics(f"real turn 银灰+崖心: {t.total_tokens} tokens, memories {mem.stage_codes()}, "
            f"{t.timings_ms['total']:.0f} ms cold")  # fmt: skip
