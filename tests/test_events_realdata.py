"""Appearances, the timeline and memories on the real corpus (no LLM; the stub server plays
the model for the extraction). Real stage files are copied into a tmp tree, never into the
repository."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from support.events_world import chunk_range
from support.llm_stub import Reply, make_llm, stub_env
from support.tree_world import make_workspace
from typer.testing import CliRunner

from arklore.cli.app import app
from arklore.core.model import parse_line_id
from arklore.events import runner
from arklore.events import store as events_db

pytestmark = pytest.mark.realdata

STORY = Path("zh_CN/gamedata/story")
KALTSIT = "char_003_kalts"


def test_timeline_json_orders_main_chapters(real_workspace, monkeypatch, metrics) -> None:
    monkeypatch.setenv("ARKLORE_HOME", str(real_workspace.paths.home))
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, ["timeline", "--json"])
    seconds = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert "release order" in data["note"] and "approximation" in data["note"]
    stages = data["stages"]
    assert len(stages) == real_workspace.counts()["primary_stages"]
    ranks = [s["rank"] for s in stages]
    assert ranks == sorted(ranks)
    chapters = [
        int(m.group(1)) for s in stages if (m := re.fullmatch(r"main_(\d+)", s["event_id"] or ""))
    ]
    runs = [c for i, c in enumerate(chapters) if i == 0 or chapters[i - 1] != c]
    assert runs == list(range(len(runs))) and len(runs) >= 15  # 0, 1, 2, ... each once
    assert stages[0]["event_id"] == "main_0"
    with_summary = sum(bool(s["summary"]) for s in stages)
    metrics(
        f"timeline --json (real corpus, no LLM): {len(stages)} stages, {with_summary} with an "
        f"official summary, main chapters {runs[0]}..{runs[-1]} in order, {seconds:.2f} s in-process"
    )


def test_kaltsit_without_events_gets_appearances_with_summaries(real_workspace, metrics) -> None:
    ws = real_workspace
    t0 = time.perf_counter()
    apps = ws.events.appearances("凯尔希")
    seconds = time.perf_counter() - t0
    assert len(apps) > 100
    assert [a.order_rank for a in apps] == sorted(a.order_rank for a in apps)
    summarized = [a for a in apps if a.summary]
    assert len(summarized) > 0.5 * len(apps)
    # every cited line is a line she speaks or one calling her by a name of hers
    store = ws.corpus.store()
    family = set(ws.names.family(KALTSIT))
    sample = [lid for a in apps[:30] for lid in a.line_ids]
    for lid, (speaker, text) in store.lines_by_id(sample).items():
        assert ws.names.resolve_person(speaker) in family or "凯尔希" in text, (lid, speaker, text)
    # popup lines under her avatar id are hers
    avatar = {ln.stage_path for ln in store.spoken_lines_by(["$avatar_kalts"])}
    assert avatar and avatar <= {a.stage_path for a in apps}

    mem = ws.events.memories("凯尔希")
    assert mem.kind == "appearances" and "no story events extracted" in mem.reason
    assert len(mem.items) == 3 and all(i.kind == "appearance" for i in mem.items)
    assert all(i.line_ids and i.story_name for i in mem.items)  # her records have no code
    assert any(i.stage_code for i in mem.items)
    assert [i.order for i in mem.items] == sorted(i.order for i in mem.items)
    metrics(
        f"appearances 凯尔希: {len(apps)} stages ({len(summarized)} with an official summary) "
        f"in {seconds:.2f} s"
    )


def test_real_name_speakers_count_as_the_operator(real_workspace) -> None:
    ws = real_workspace
    apps = ws.events.appearances("银灰")
    by_path = {a.stage_path: a for a in apps}
    store = ws.corpus.store()
    as_real_name = {ln.stage_path for ln in store.spoken_lines_by(["恩希欧迪斯"])}
    assert as_real_name and as_real_name <= set(by_path)
    assert ws.names.family(ws.names.resolve("银灰"))[0] == "char_172_svrash"


# --- memories on stub-extracted real stages ---------------------------------------------

_LINE = re.compile(r"^\[(\d+)\] (?:〔[^〕]*〕)?(.*)$", re.M)


def _speakers(prompt: str) -> list[str]:
    out = []
    for _no, body in _LINE.findall(prompt):
        if not body.startswith("（"):
            name = body.split("：", 1)[0].replace("（存疑）", "").replace("（选项）", "")
            if name not in out:
                out.append(name)
    return out


def stub_model(body: dict[str, Any]) -> Reply:
    """One event per chunk; a first-person memory for every speaker of the chunk, and one for
    阿米娅 whether or not she is there (absent: the checks must drop it)."""
    prompt = body["messages"][-1]["content"]
    first, last = chunk_range(prompt)
    speakers = _speakers(prompt)
    memories = {s: f"我在这里说过话（第{first}到{last}行）。" for s in speakers}
    memories.setdefault("阿米娅", "我也在场。")
    return Reply.json(
        {
            "events": [
                {
                    "phase": "经过",
                    "summary": "一段剧情。",
                    "actors": speakers,
                    "memories": memories,
                    "time_hint": None,
                    "line_start": first,
                    "line_end": last,
                }
            ]
        }  # fmt: skip
    )


@pytest.mark.slow
def test_kaltsit_memories_on_stub_extracted_stages_are_hers_only(
    real_workspace, gamedata_root: Path, llm_stub, tmp_path: Path
) -> None:
    # her first 8 appearance stages, copied with their summaries into a tmp tree
    chosen = [a.stage_path for a in real_workspace.events.appearances("凯尔希")[:8]]
    src = gamedata_root / STORY
    dest = tmp_path / "data"
    for sp in chosen:
        for rel in (f"{sp}.txt", f"[uc]info/{sp}.txt"):
            if (src / rel).is_file():
                (dest / STORY / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src / rel, dest / STORY / rel)
    (dest / "zh_CN/gamedata/excel").symlink_to(gamedata_root / "zh_CN/gamedata/excel")
    with make_workspace(tmp_path / "home", dest, None, embedder="hash") as ws:
        ws.ingest(sources=("avg",))
        assert sorted(ws.corpus.store().stage_paths()) == sorted(chosen)
        llm_stub.default = stub_model
        llm = make_llm(ws.paths.home, stub_env(llm_stub))
        try:
            report = runner.extract_events(
                ws.corpus.store(), llm, chosen, resolve=ws.names.resolve_person
            )
        finally:
            llm.close()
        assert report.failed == 0 and report.summary["stages_checked"] == len(chosen)
        assert report.summary["dropped_memories"] > 0  # 阿米娅 where she is not

        got = ws.events.memories("凯尔希", "你还记得切城的事吗", k=5)
        assert got.kind == "memories" and len(got.items) == 5
        family = set(ws.names.family(KALTSIT))
        store = ws.corpus.store()
        for item in got.items:
            assert item.kind == "memory" and item.stage_code and item.score is not None
            assert item.stage_path in chosen and item.line_ids
            stage_of = {parse_line_id(i)[0] for i in item.line_ids}
            assert stage_of == {item.stage_path}
            # her memory: the rows say so, and its evidence lines are hers
            rows = [
                r
                for r in events_db.kept_memories(store, family)
                if r.stage_path == item.stage_path and r.text == item.text
            ]
            assert rows and all(r.actor_id in family for r in rows)
            lines = store.lines_by_id(item.line_ids)
            assert any(ws.names.resolve_person(sp) in family for sp, _ in lines.values())
        # nobody else's memory, though every chunk gave one to each speaker
        all_mine = ws.events.memories("凯尔希", k=1000).items
        assert all_mine and all(i.kind == "memory" for i in all_mine)
        n_kept = sum(len(events_db.kept_memories(store, [k])) for k in family)
        assert len(all_mine) == n_kept


@pytest.mark.slow
def test_dry_run_all_real_corpus(real_workspace, metrics) -> None:
    """`extract events --all --dry-run`: the whole corpus, estimated, nothing called."""
    paths = real_workspace.extract.select_stages(all_=True)
    est = real_workspace.events.extract_dry_run(paths)
    assert est.requests >= len(paths) > 1000 and est.input_tokens > 1_000_000
    assert 0 < est.cost_with_cache_usd < est.cost_usd
    metrics(f"extract events --all --dry-run: {len(paths)} stages, {est.line()}")
