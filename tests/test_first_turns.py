"""What the first turns of a fresh service pay for: a weak-contact view (a group chat's pair
no index document describes) reads the few stages its edge cites by the primary key, never the
whole corpus; her view of the Doctor builds no weak-contact view it would throw away.

Every name, line and relation here is invented for the tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.lines import line, stage
from support.service_world import (
    AUDREY,
    CHEN,
    S3,
    THERESA,
    VERONICA,
    build_rag,
    graph,
    kb_workspace,
    lid,
    make_kb,
)
from support.store import ingested_store

from arklore.corpus.store import Store
from arklore.graph.io import save_graph
from arklore.graph.model import DOCTOR_ID, Edge
from arklore.names.registry import Registry
from arklore.service.state import ServiceState

N_STAGES, PER_STAGE = 300, 20


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    paths = [f"obt/main/level_many_{i:03d}" for i in range(N_STAGES)]
    stages = [
        stage(
            p,
            [
                line(p, n, "甲" if n % 2 else "乙", f"第{i}幕第{n}句。")
                for n in range(1, PER_STAGE + 1)
            ],
        )
        for i, p in enumerate(paths)
    ]
    path = tmp_path_factory.mktemp("many") / "arklore.sqlite3"
    return ingested_store(path, stages, Registry({}), order={p: i for i, p in enumerate(paths)})


def vm_steps(store: Store, read: Callable[[], Any]) -> int:
    """SQLite virtual-machine steps (in hundreds) that ``read`` costs: rows visited, not time."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    store.conn.set_progress_handler(count, 100)
    try:
        read()
    finally:
        store.conn.set_progress_handler(None, 0)
    return steps


def test_a_few_stages_are_read_by_the_primary_key_without_scanning_the_corpus(big_store: Store):
    few = ["obt/main/level_many_007", "obt/main/level_many_250"]
    lines = list(big_store.spoken_lines_in(few))
    assert lines == [x for x in big_store.spoken_lines() if x.stage_path in few]
    assert {x.stage_path for x in lines} == set(few) and len(lines) == 2 * PER_STAGE
    infos = big_store.stage_infos(few)
    assert infos == [x for x in big_store.stage_infos() if x.stage_path in few]
    # a few stages cost a small part of a pass over every line (and over every stage)
    assert vm_steps(big_store, lambda: list(big_store.spoken_lines_in(few))) * 10 < vm_steps(
        big_store, lambda: list(big_store.spoken_lines())
    )
    assert vm_steps(big_store, lambda: big_store.stage_infos(few)) * 10 < vm_steps(
        big_store, big_store.stage_infos
    )


@pytest.fixture(scope="module")
def doctor_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """陈 with more people than her anchors: her slight edges to 阿米娅 and to the Doctor are
    below the index's threshold (no document; a view is built when one is shown)."""
    home = make_kb(tmp_path_factory.mktemp("doctor") / "home", index=False)
    g = graph()
    imp = {"import": 1}
    for other, pred in ((AUDREY, "近亲"), (THERESA, "合作"), (VERONICA, "同事")):
        g.add_edge(Edge(CHEN, other, pred, 0.8, ["import"], imp, [], "认识很久的人。"))
    g.add_edge(Edge(CHEN, DOCTOR_ID, "合作", 0.5, ["interaction"], {"turns": 2}, [lid(S3, 2)]))
    save_graph(g, home / "relation_graph.json")
    build_rag(home, g)
    return home


def test_her_view_of_the_doctor_builds_no_weak_contact_view(doctor_home: Path):
    with kb_workspace(doctor_home) as ws:
        asked: list[str] = []
        facts = ws.graph.contact_facts

        def contact_facts(edge: Edge, **kw: Any) -> Any:
            asked.append(edge.target)
            return facts(edge, **kw)

        ws.graph.contact_facts = contact_facts  # type: ignore[method-assign]
        turn = ws.chat.turn("陈", "今天天气不错")
        assert turn.block("doctor") is not None
        assert DOCTOR_ID not in asked
        # the same edge still gets its weak-contact view where it is shown
        assert ws.rag.service().get_all_relationships_for(CHEN, [DOCTOR_ID])[0].source == (
            "weak_contact"
        )
        assert asked == [DOCTOR_ID]


def test_after_the_warm_up_a_first_group_turn_reads_no_table_of_every_speaker(
    doctor_home: Path,
):
    """The people table (every corpus speaker) is loaded by the service's warm-up, and a
    weak-contact view reuses the speaker counts read with it."""
    with kb_workspace(doctor_home) as ws:
        state = ServiceState(ws)
        state.warm_up()
        assert state.warm, state.warm_error
        store = ws.corpus.store()
        reads: list[int] = []
        counts = store.speaker_counts

        def speaker_counts() -> dict[str, tuple[int, int]]:
            reads.append(1)
            return counts()

        store.speaker_counts = speaker_counts  # type: ignore[method-assign]
        group = ws.chat.turn("陈", "大家好", participants=["阿米娅"]).block("group")
        assert "weak_contact" in [i["source"] for i in group.items]  # a view was built
        assert reads == []
