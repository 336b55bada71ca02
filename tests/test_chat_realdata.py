"""Turn assembly on the real corpus (no profiles, no index: what a fresh install gives)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.realdata


def test_a_fresh_install_turn_says_what_is_missing_and_gives_appearances(
    real_workspace, real_graph_built, metrics
) -> None:
    ws = real_workspace
    t = ws.chat.turn("恩希欧迪斯", "崖心最近好吗？", participants=["崖心"])
    assert t.operator_name == "银灰"
    persona, rel, mem, group = (t.block(n) for n in ("persona", "relations", "memories", "group"))
    assert persona.empty and "tier C" in persona.reason
    assert rel.empty and "ARKLORE_TIER_C_RELATIONS" in rel.reason
    assert mem.meta["kind"] == "appearances" and mem.stages and mem.tokens <= mem.budget
    assert all(s.path for s in mem.stages) and len(ws.events.appearances("银灰")) >= 10
    assert not group.empty and "银灰→崖心" in group.text  # the graph is there, the index is not
    metrics(f"real turn 银灰+崖心: {t.total_tokens} tokens, memories {mem.stage_codes()}, "
            f"{t.timings_ms['total']:.0f} ms cold")  # fmt: skip
