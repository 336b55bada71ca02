"""The distillation run with the local stub server as the model, on an invented home:
gates (fabricated quote, wrong height), per-task models, resume, protected files, failures,
dry run, persona, the review queue, approval and the char_anchor feedback."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from support.distill_fake import Fake
from support.llm_stub import Reply, stub_env
from support.profiles_world import AT, NEW, G, T, make_home, section

from arklore.core.errors import EXIT_FINDINGS, EXIT_OK, EXIT_PARTIAL
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PEOPLE,
    PERSONALITY,
    PHYSICAL,
    QUOTES,
    SPEECH,
    ApproveRefusedError,
    CharProfile,
    approve,
    draft_path,
)
from arklore.profiles.quotes import normalize_ws
from arklore.settings import Settings
from arklore.workspace import Workspace

FABRICATED = "这句话她从来没有说过，是模型编的。"


@pytest.fixture
def setup(tmp_path: Path, llm_stub):
    home, gamedata = make_home(tmp_path)
    fake = Fake()
    llm_stub.default = fake

    def ws(**env: str) -> Workspace:
        base = stub_env(llm_stub, LLM_MAX_RETRIES="1", LLM_DISTILL_C_MODEL="big-model")
        base |= {"ARKLORE_HOME": str(home), "ARKLORE_GAMEDATA": str(gamedata)}
        return Workspace(Settings.from_env(base | env))

    return ws, home, fake, llm_stub


def _voice_texts(gamedata_excel: Path) -> dict[str, str]:
    words = json.loads((gamedata_excel / "charword_table.json").read_text(encoding="utf-8"))
    return {f"voice:{k}": w["voiceText"] for k, w in words["charWords"].items()}


def test_model_run_gates_fabricated_quote_and_wrong_height(setup) -> None:
    ws, home, fake, stub = setup
    fake.inject_fabricated_quote(T, FABRICATED)
    fake.inject_wrong_height(T, "999cm")
    with ws() as w:
        report = w.profiles.distill(["all"], generated_at=AT, concurrency=2)
    assert report.llm_tasks == ["A", "B", "C", "D"]
    assert report.exit_code == EXIT_FINDINGS  # done, with findings to review
    prof = CharProfile.read(home / "chars" / f"{T}.char")
    assert prof.tier == "B" and not prof.hand_edited and prof.header["generated"] == AT
    anchor = section(prof, ANCHOR).bullets()
    assert "身高：163cm" in anchor and not any("999" in b for b in anchor)
    assert any(b.startswith("核心经历：测试员来到罗德岛") for b in anchor)
    assert section(prof, PHYSICAL).bullets() == ["体表可见源石结晶"]  # the rest is the anchor's
    # the fabricated quote is gone, every other quote is verbatim in its cited source
    texts = _voice_texts(home.parent / "gamedata/zh_CN/gamedata/excel")
    quotes = prof.quotes()
    assert quotes and all(FABRICATED not in q.text for q in quotes)
    assert all(normalize_ws(q.text) in normalize_ws(texts[q.source_id]) for q in quotes)
    # both are reported: in the run report, the errors file and the review queue
    assert any("身高: '999cm' -> '163cm'" in f for f in report.findings)
    assert any(FABRICATED in f and "not verbatim" in f for f in report.findings)
    errors = (home / "distill_errors.jsonl").read_text(encoding="utf-8")
    assert "999cm" in errors and FABRICATED in errors
    with ws() as w:
        entry = next(e for e in w.profiles.review_queue().entries if e.char_id == T)
    assert any(FABRICATED in q for q in entry.quotes_removed)
    assert any("'999cm' -> '163cm'" in c for c in entry.corrections)
    # the model-written sections are there, and a B-tier chat gets none of them
    assert section(prof, PERSONALITY).content.startswith("我做事认真")
    assert "博士" in section(prof, ABOUT_DOCTOR).content
    people = section(prof, PEOPLE).bullets()
    assert people[0].startswith("向导（char_901_guide）：我和向导")
    with ws() as w:
        p = w.profiles.persona("测试员")
    # her way of speaking is counted by code (her 20 voice lines and 4 story lines)
    assert [s.title for s in p.sections] == [ANCHOR, PHYSICAL, QUOTES, SPEECH, ABOUT_DOCTOR]
    assert {t for t, _ in p.excluded} == {PERSONALITY, ABOUT_DOCTOR, PEOPLE}
    # of 我·关于博士 a B-tier chat gets her verified lines, never the model's paragraph
    about = next(s for s in p.sections if s.title == ABOUT_DOCTOR).text
    assert about and "刚认识博士的时候" not in about
    assert all(ln.startswith("- 「") for ln in about.split("\n"))
    assert "刚认识博士的时候" in section(prof, ABOUT_DOCTOR).content


def test_each_task_uses_its_own_model_setting(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        w.profiles.distill(["C", "B"], [T], generated_at=AT)
    models = {r.last_user.split("\n")[0]: r.body["model"] for r in stub.requests}
    by_task = {}
    for r in stub.requests:
        kind = "C" if "我·关于博士" in r.body["messages"][0]["content"] else "B"
        by_task[kind] = r.body["model"]
    assert by_task == {"C": "big-model", "B": "stub-model"}, models
    prof = CharProfile.read(home / "chars" / f"{T}.char")
    assert prof.header["model"] == "big-model (C); stub-model (B)"
    assert section(prof, ANCHOR).content == ""  # task A was not asked for


def test_resume_sends_nothing_twice_and_rewrites_nothing(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        first = w.profiles.distill(["all"], generated_at=AT)
    n = len(stub.requests)
    before = {p.name: p.read_bytes() for p in (home / "chars").iterdir()}
    with ws() as w:
        again = w.profiles.distill(["all"], generated_at="2030-01-01T00:00:00Z")
    assert len(stub.requests) == n  # nothing sent again
    assert again.resumed == first.done and again.done == 0
    counts = again.to_dict()  # the shared counts of a task run, and "resumed" as before
    assert counts["resumed"] == counts["skipped"] == first.done and counts["jobs"] == first.jobs
    assert again.writes == {"unchanged": 3}
    assert {p.name: p.read_bytes() for p in (home / "chars").iterdir()} == before


def test_person_files_survive_a_full_regeneration_byte_identical(setup) -> None:
    ws, home, fake, stub = setup
    chars = home / "chars"
    with ws() as w:
        w.profiles.distill(["all"], generated_at=AT)
        # a reviewer approves the tester (A) and then edits it by hand
        w.profiles.approve("测试员")
    t_path = chars / f"{T}.char"
    edited = t_path.read_text(encoding="utf-8").replace("我做事认真", "我做事一丝不苟")
    t_path.write_text(edited, encoding="utf-8")
    assert CharProfile.read(t_path).tier == "A" and CharProfile.read(t_path).hand_edited
    # a person wrote the guide's file
    person = "# 向导\n\n## 我·性格\n\n我熟悉每一座桥。\n"
    (chars / f"{G}.char").write_text(person, encoding="utf-8")
    stub.requests.clear()
    fake.calls.clear()
    with ws() as w:
        report = w.profiles.distill(
            ["all"], resume=False, no_cache=True, generated_at="2031-01-01T00:00:00Z"
        )
    assert t_path.read_text(encoding="utf-8") == edited
    assert (chars / f"{G}.char").read_text(encoding="utf-8") == person
    assert draft_path(t_path).exists()  # the regenerated draft waits beside the edited file
    assert not draft_path(chars / f"{G}.char").exists()
    assert not any(c.endswith(G) for c in fake.calls)  # tier S: nothing asked about her
    assert report.protected == {G: str(chars / f"{G}.char")}
    assert report.writes.get("draft") == 1


def test_failed_task_is_recorded_and_the_rest_is_written(setup) -> None:
    ws, home, fake, stub = setup
    good = Reply.json(
        {"about_doctor": "我一开始并不信任博士，后来慢慢明白了博士的用心，如今我愿意跟随博士。"}
    )
    # task C answers garbage on both attempts (LLM_MAX_RETRIES=1), then sensibly
    stub.script("语音（按解锁顺序）", Reply.malformed(), Reply.malformed(), good)
    with ws() as w:
        report = w.profiles.distill(["all"], [T], generated_at=AT)
    assert report.exit_code == EXIT_PARTIAL and report.statuses["C"] == {"failed": 1}
    assert report.failed == 1 and report.to_dict()["failures"] == [T]  # the job's key
    with ws() as w:
        entry = next(e for e in w.profiles.review_queue().entries if e.char_id == T)
    assert entry.tasks["C"].status == "failed" and "JSON" in entry.tasks["C"].reason
    prof = CharProfile.read(home / "chars" / f"{T}.char")
    # the model failed: her lines to the Doctor by the rule are still written, nothing else
    lines = section(prof, ABOUT_DOCTOR).content.split("\n")
    assert prof.quotes() and [q.text for q in prof.quotes(ABOUT_DOCTOR)] == [
        "如果哪天我找不到回来的路，博士，请记得我最后一次出发时走的是南边。",
        "我想把这片大地上每一条安全的路都画下来，然后交给你，博士。",
    ]
    assert len(lines) == 2
    rows = [orjson.loads(x) for x in (home / "distill_errors.jsonl").read_bytes().splitlines()]
    assert any(r["task"] == "distill_c" and r["reason"].startswith("failed:") for r in rows)
    # a rerun retries only the failed task
    stub.requests.clear()
    with ws() as w:
        again = w.profiles.distill(["all"], [T], generated_at=AT)
    assert len(stub.requests) == 1 and again.exit_code in (EXIT_OK, EXIT_FINDINGS)
    about = section(CharProfile.read(home / "chars" / f"{T}.char"), ABOUT_DOCTOR).content
    assert about.startswith("我一开始并不信任博士") and about.endswith("（信赖提升后交谈3）")


def test_dry_run_sends_nothing(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        parts = w.profiles.distill_dry_run(["all"])
    assert set(parts) == {"A", "B", "C", "D"} and not stub.requests
    assert parts["B"].requests == 3 and parts["A"].requests == 2  # the newcomer has no archive
    assert all(e.input_tokens > 0 and e.cost_usd > 0 for e in parts.values())
    assert not (home / "chars").exists()


def test_no_model_runs_the_rules_and_skips_d(setup, tmp_path: Path) -> None:
    ws, home, fake, stub = setup
    with ws(LLM_BASE_URL="https://api.deepseek.com", LLM_API_KEY="") as w:
        report = w.profiles.distill(["all"], generated_at=AT)
    assert not stub.requests and report.llm_tasks == []
    # C's rule: the tester has voice lines to the Doctor; the guide and the newcomer none
    assert report.statuses["C"] == {"ok": 1, "skipped": 2} and report.statuses["D"] == {
        "skipped": 3
    }
    tester = CharProfile.read(home / "chars" / f"{T}.char")
    assert [q.source_id for q in tester.quotes(ABOUT_DOCTOR)] == [
        "voice:char_900_tester_CN_006", "voice:char_900_tester_CN_009",
    ]  # fmt: skip
    assert report.exit_code == EXIT_OK
    prof = CharProfile.read(home / "chars" / f"{NEW}.char")
    assert [q.kind for q in prof.quotes()] == ["story"] * 6
    assert prof.header["model"] == "none"


def test_persona_tier_c_and_the_opt_in(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        p = w.profiles.persona("岚烟")
    assert p.tier == "C" and p.sections == [] and p.relation_context is False
    assert "ARKLORE_TIER_C_RELATIONS=1" in p.note
    with ws(ARKLORE_TIER_C_RELATIONS="1") as w:
        assert w.profiles.persona(NEW).relation_context is True


def test_review_queue_sample_is_seeded_and_lists_missing_sources(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        w.profiles.distill(["all"], generated_at=AT)
        q1, q2, q3 = (
            w.profiles.review_queue(seed=1),
            w.profiles.review_queue(seed=1),
            w.profiles.review_queue(seed=2),
        )
    e1 = next(e for e in q1.entries if e.char_id == T)
    assert len(e1.relation_sample) == 1  # ceil(10% of her 3 documents)
    assert e1.relation_sample == next(e for e in q2.entries if e.char_id == T).relation_sample
    assert {e.char_id for e in q3.entries} == {T, G, NEW}
    no_source = {cid: gaps for cid, _, gaps in q1.no_source}
    assert no_source[NEW].startswith("no source: handbook_info_table (archive)")
    md = q1.markdown()
    assert "## No source" in md and "岚烟 (char_999_newcomer): no source:" in md
    html = q1.html()
    assert html.startswith("<!DOCTYPE html>") and "<h3>" in html and "<script" not in html


def test_approve_refuses_what_it_should(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        with pytest.raises(ApproveRefusedError, match="no profile"):
            w.profiles.approve("测试员")
        w.profiles.distill(["all"], generated_at=AT)
        path = home / "chars" / f"{T}.char"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("我做事认真", "我做事很认真"), encoding="utf-8")
        with pytest.raises(ApproveRefusedError, match="edited by hand"):
            w.profiles.approve("测试员")
        assert CharProfile.read(path).tier == "B"
        w.profiles.approve("测试员", accept_edits=True)
        assert CharProfile.read(path).tier == "A"
        assert path.read_text(encoding="utf-8") == approve(
            text.replace("我做事认真", "我做事很认真")
        )
        with pytest.raises(ApproveRefusedError, match="already approved"):
            w.profiles.approve(T)


def test_approved_view_feeds_the_index_below_curated_above_evidence_built(setup) -> None:
    ws, home, fake, stub = setup
    with ws(ARKLORE_EMBEDDER="hash") as w:
        w.profiles.distill(["all"], generated_at=AT)
        w.profiles.approve("测试员")
        report = w.build_index(no_llm=True)
        assert report.rejected == 0
        col = w.rag.chroma().get_collection(report.collection, embedding_function=None)
        got = col.get(where={"source": "char_anchor"})
        assert sorted(m["target_id"] for m in got["metadatas"]) == [G, NEW, "npc:灯塔守"]
        assert all(m["operator_id"] == T for m in got["metadatas"])
        # a curated document outranks her approved view; her view outranks an evidence-built one
        rels = w.rag.service().get_all_relationships_for(T, [G, "npc:灯塔守"])
        assert {r.target_id: r.source for r in rels} == {G: "matrix", "npc:灯塔守": "char_anchor"}
        # the guide's draft is tier B: its view is not indexed
        assert not [m for m in got["metadatas"] if m["operator_id"] == G]


def test_persona_rechecks_the_quotes_of_a_hand_edited_draft(setup) -> None:
    ws, home, fake, stub = setup
    with ws() as w:
        w.profiles.distill(["B"], [T], generated_at=AT)
        path = home / "chars" / f"{T}.char"
        prof = CharProfile.read(path)
        first = prof.quotes()[0]
        path.write_text(prof.text().replace(first.text, "一句被人改过的台词。"), encoding="utf-8")
        p = w.profiles.persona(T)
    assert p.hand_edited and p.tier == "B"
    quotes = next(s for s in p.sections if s.title == QUOTES).text
    assert "一句被人改过的台词" not in quotes
    assert all(q.source_id in quotes for q in prof.quotes()[1:])
