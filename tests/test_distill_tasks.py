"""The distillation tasks' checks one by one, on invented inputs: response shapes and
lengths (rejected answers are retried by the LLM layer), task A's field check, task B's
verbatim gate and top-up, task D's item gates, and assembly re-checking stored results."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from support.profiles_world import section

from arklore.core.operators import Operator
from arklore.profiles import task_a, task_b, task_c, task_d
from arklore.profiles.assemble import assemble
from arklore.profiles.charfile import ANCHOR, CharProfile
from arklore.profiles.inputs import gather
from arklore.profiles.quotes import StoryLine, voice_lines_from_table
from arklore.profiles.results import FAILED, OK, TaskResult
from arklore.profiles.rules import sentences
from arklore.profiles.sources import load_tables
from arklore.rag.docs import RelationDoc

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
T, G, NEW = "char_900_tester", "char_901_guide", "char_999_newcomer"
AT = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def tables():
    return load_tables(FIXTURES)


def _doc(target: str, doc_id: str, source: str = "matrix", strength: float = 0.9) -> RelationDoc:
    return RelationDoc(doc_id, "测试员把对方当作可以托付后背的朋友。", T, target, "朋友",
                       strength, source, "m.toml")  # fmt: skip


@pytest.fixture
def tester(tables):
    docs = [
        _doc(G, "matrix.t.g.friend"),
        _doc(NEW, "graph_edge.t.new.x", "graph_edge", 0.7),
        _doc("npc:博士", "matrix.t.doctor.x"),
        _doc(G, "story.t.g.friend", "story", 0.8),
    ]
    voice = voice_lines_from_table(tables.charword, T)
    return gather(Operator(T, "测试员"), tables, voice=voice, story=[], relation_docs=docs)


def test_shapes_and_lengths_are_rejected_for_a_retry() -> None:
    with pytest.raises(ValidationError, match="核心经历"):
        task_a.AnchorResponse.model_validate({"core": "太短了"})
    with pytest.raises(ValidationError):
        task_a.AnchorResponse.model_validate({"core": 42})  # no coercion
    with pytest.raises(ValidationError, match="sentences"):
        task_b.VoiceResponse.model_validate(
            {
                "quotes": [{"source": "voice:x", "text": "一"}],
                "personality": "我很认真。我很安静。我很倔强。",
            }  # fmt: skip
        )
    with pytest.raises(ValidationError, match="quotes"):
        task_b.VoiceResponse.model_validate({"quotes": [], "personality": "我做事认真而且固执。"})
    with pytest.raises(ValidationError, match="about_doctor"):
        task_c.DoctorResponse.model_validate({"about_doctor": "我信任博士。"})
    assert sentences("我很认真。「真的！」还有一句") == 3
    assert sentences("……我很认真……") == 1


def test_a_model_fields_are_checked_never_trusted(tester) -> None:
    resp = task_a.AnchorResponse.model_validate(
        {
            "core": "测试员出身测试国，负责巡逻路线的勘察，如今在罗德岛工作。",
            "fields": {"身高": "999cm", "种族": "菲林", "爱好": "画地图", "体重": 50},
        }  # fmt: skip
    )
    r = task_a.apply(tester, resp, model="m")
    facts = dict(r.output["facts"])
    assert facts["身高"] == "163cm" and facts["种族"] == "菲林" and "爱好" not in facts
    assert [f.label for f in tester.anchor.facts] == list(facts)  # source order, all fields
    assert any("身高: '999cm' -> '163cm'" in f for f in r.findings)
    assert any("爱好: '画地图' removed (not a source field)" in f for f in r.findings)
    assert any(f.startswith("anchor field 体重: '50' removed") for f in r.findings)
    assert not any("种族" in f for f in r.findings)  # the right value is not a finding


def test_b_gate_removes_and_tops_up(tester) -> None:
    voice = {v.source_id: v.text for v in tester.voice}
    ids = list(voice)
    resp = task_b.VoiceResponse.model_validate(
        {
            "quotes": [
                {"source": ids[1], "text": voice[ids[1]][:10]},  # a verbatim excerpt: kept
                {"source": ids[1], "text": "她从来没有说过这句话。"},  # fabricated
                {"source": "voice:char_901_guide_CN_001", "text": "别人的台词"},  # not hers
                {"source": "voice:nowhere", "text": "不存在的来源"},
            ],
            "personality": "我做事认真，也不太会说漂亮话。",
        }
    )
    r = task_b.apply(tester, resp, model="m")
    assert r.status == OK
    cited = [q["source_id"] for q in r.output["quotes"]]
    assert cited[0] == ids[1] and len(cited) == 5 and len(set(cited)) == 5
    reasons = " | ".join(r.findings)
    assert "not verbatim" in reasons and "not found" in reasons
    assert "quotes: 4 added by the rule" in reasons


def test_d_items_gated_one_by_one(tester) -> None:
    assert [d.doc_id for d in task_d.docs_for(tester)] == [
        "matrix.t.g.friend",
        "story.t.g.friend",
        "graph_edge.t.new.x",
    ]  # fmt: skip  (curated, extracted, evidence-built; never the Doctor)
    resp = task_d.PeopleResponse.model_validate(
        {
            "people": [
                {
                    "target": G,
                    "view": "向导是我可以托付后背的朋友。",
                    "docs": ["matrix.t.g.friend"],
                },
                {"target": G, "view": "再写一次向导也不行。", "docs": ["matrix.t.g.friend"]},
                {"target": NEW, "view": "岚烟还在学看地图。", "docs": ["matrix.t.g.friend"]},
                {"target": "char_404_ghost", "view": "一个资料里没有的人。", "docs": []},
                {"target": NEW, "view": "短", "docs": ["graph_edge.t.new.x"]},
                {
                    "target": "npc:博士",
                    "view": "博士是我最信任的人。",
                    "docs": ["matrix.t.doctor.x"],
                },
            ]
        }
    )
    r = task_d.apply(tester, resp, model="m")
    assert [p["target"] for p in r.output["people"]] == [G]
    assert len(r.findings) == 5
    assert any("written twice" in f for f in r.findings)
    assert any("not a given document about char_999_newcomer" in f for f in r.findings)
    assert any("'char_404_ghost' is not a person" in f for f in r.findings)
    assert any("'npc:博士' is not a person" in f for f in r.findings)
    empty = task_d.apply(tester, task_d.PeopleResponse(people=[]), model="m")
    assert empty.status == FAILED


def test_assembly_rechecks_stored_results(tester) -> None:
    """A stored result edited behind the program's back (or stale after a data update) is
    checked again: a wrong height is set back, an unverifiable quote left out."""
    a = task_a.rule_result(tester)
    a.output["facts"] = [[lb, "1cm" if lb == "身高" else v] for lb, v in a.output["facts"]]
    b = task_b.rule_result(tester)
    b.output["quotes"].append({"text": "编的。", "source_id": "voice:char_900_tester_CN_002"})
    c = TaskResult("C", T, OK, output={"about_doctor": "太短"})
    built = assemble(tester, {"A": a, "B": b, "C": c}, generated_at=AT)
    assert built.text is not None
    prof = CharProfile.parse(built.text)
    assert "身高：163cm" in section(prof, ANCHOR).bullets()
    assert all(q.text != "编的。" for q in prof.quotes())
    assert any("'1cm' -> '163cm'" in f for f in built.findings)
    assert any("编的" in f for f in built.findings)
    assert any(f.startswith("about_doctor left out") for f in built.findings)


def test_b_candidates_use_story_lines_only_when_voice_is_short(tables, tester) -> None:
    story = [
        StoryLine(
            f"s/{i}#1:0000000{i}",
            f"s/{i}",
            1,
            i,
            "岚烟",
            NEW,
            f"我第{i}次来到这座城市的时候，连一张像样的地图都没有带。",
        )  # fmt: skip
        for i in range(1, 8)
    ]
    newcomer = gather(Operator(NEW, "岚烟"), tables, voice=[], story=story)
    cands = task_b.candidates(newcomer)
    assert [c[0] for c in cands] == [s.source_id for s in story]
    assert all(c[0].startswith("voice:") for c in task_b.candidates(tester))
    assert task_c.build_request(newcomer) is None  # no voice, no archive: nothing to ask
    assert task_a.build_request(newcomer) is None
