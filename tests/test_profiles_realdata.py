"""Profiles on the real data (no model): the structured anchor equals the archive, every
quote is verbatim in its cited source, the writer produces tier-B files, and counts over all
operators. Skips without ARKLORE_GAMEDATA / ARKLORE_ASTR."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from arklore.profiles.archive import (
    BASIC,
    CHARACTER,
    DOSSIER,
    DOSSIER_MAX,
    ELISION,
    HANDBOOK,
    OBJECTIVE,
    OBJECTIVE_MAX,
    archive_sections,
)
from arklore.profiles.charfile import (
    ABOUT_DOCTOR,
    ANCHOR,
    PERSONALITY,
    PHYSICAL,
    QUOTES,
    TIER_B,
    CharProfile,
    allowed_sections,
)
from arklore.profiles.draft import draft_all, draft_profile, write_draft
from arklore.profiles.quotes import MAX_QUOTES, MIN_QUOTES, normalize_ws, voice_owner
from arklore.profiles.sources import (
    lines_for,
    load_operators,
    load_tables,
    story_line_sources,
    story_lines,
)
from arklore.settings import Settings
from arklore.workspace import open_store

pytestmark = pytest.mark.realdata

THREE = {"char_172_svrash": "银灰", "char_002_amiya": "阿米娅", "char_003_kalts": "凯尔希"}
AT = "2026-01-01T00:00:00Z"
_FIELD = re.compile(
    r"^handbookDict\.(\w+)\.storyTextAudio\[(\d+)\]\.stories\[(\d+)\]\.storyText【(.+)】$"
)


@pytest.fixture(scope="module")
def real(real_store_path: Path, gamedata_root: Path):
    tables = load_tables(gamedata_root / "zh_CN/gamedata/excel")
    with open_store(real_store_path) as store:
        ops = {o.char_id: o for o in load_operators(store)}
        lines = story_lines(store)
    return tables, ops, lines


def _source_value(raw: str, label: str) -> str:
    """The value of the first 【label】 of a raw archive text: the rest of its line, else the
    next non-empty line (read independently of the code under test)."""
    rest = raw[raw.index(f"【{label}】") + len(label) + 2 :].replace("\r", "")
    first, _, after = rest.partition("\n")
    if first.strip():
        return first.strip()
    return next(ln.strip() for ln in after.split("\n") if ln.strip())


@pytest.mark.parametrize("char_id", sorted(THREE))
def test_structured_anchor_equals_the_archive(real, char_id: str) -> None:
    tables, ops, lines = real
    d = draft_profile(
        ops[char_id], tables, story_lines=lines_for(ops[char_id], lines), generated_at=AT
    )
    a = d.anchor
    assert {"代号", "性别", "种族", "身高", "出身地", "生日", "战斗经验", "矿石病感染情况"} <= {
        f.label for f in a.facts
    }
    assert a.value("代号") == THREE[char_id]
    book = tables.handbook_info["handbookDict"]
    for f in a.facts:
        if f.table == HANDBOOK and f.label == OBJECTIVE:  # whole sentences from its start
            m = re.match(
                r"^handbookDict\.(\w+)\.storyTextAudio\[(\d+)\]\.stories\[(\d+)\]", f.field
            )
            assert m is not None, f.field
            sec = book[m.group(1)]["storyTextAudio"][int(m.group(2))]
            raw = " ".join(sec["stories"][int(m.group(3))]["storyText"].split()).replace(" ", "")
            assert sec["storyTitle"] == OBJECTIVE and raw.startswith(f.value.replace(" ", ""))
            assert f.value.endswith(("。", "！", "？")) and len(f.value) <= OBJECTIVE_MAX
        elif f.table == HANDBOOK and f.label in DOSSIER:  # whole sentences of its passage
            m = re.match(
                r"^handbookDict\.(\w+)\.storyTextAudio\[(\d+)\]\.stories\[(\d+)\]", f.field
            )
            assert m is not None, f.field
            sec = book[m.group(1)]["storyTextAudio"][int(m.group(2))]
            raw = "".join(sec["stories"][int(m.group(3))]["storyText"].split())
            assert sec["storyTitle"] == f.label
            assert all("".join(part.split()) in raw for part in f.value.split(ELISION)), f
            assert THREE[char_id] in f.value and len(f.value) <= DOSSIER_MAX
            assert not any(x in f.value for x in "我你您")
        elif f.table == HANDBOOK:
            fm = _FIELD.match(f.field)
            assert fm is not None, f.field
            entry, i, j, label = fm.groups()
            sec = book[entry]["storyTextAudio"][int(i)]
            assert sec["storyTitle"] in (BASIC, "临床诊断分析")
            assert label == f.label
            assert f.value == _source_value(sec["stories"][int(j)]["storyText"], label), f
        else:
            assert f.table == CHARACTER
            row = tables.character[char_id]
            km = re.match(r"^\w+\.(\w+)=(\w+) ", f.field)
            assert km is not None, f.field
            key, tid = km.groups()
            assert row[key] == tid and tables.handbook_team[tid]["powerName"] == f.value
    assert a.gaps == [] and d.entry is not None and d.entry.tasks["A"].status == "ok"


@pytest.mark.parametrize("char_id", sorted(THREE))
def test_quotes_occur_verbatim_in_their_sources(real, real_store_path: Path, char_id: str) -> None:
    tables, ops, lines = real
    d = draft_profile(
        ops[char_id], tables, story_lines=lines_for(ops[char_id], lines), generated_at=AT
    )
    quotes = d.gate.kept
    assert MIN_QUOTES <= len(quotes) <= MAX_QUOTES and d.gate.removed == []
    words = tables.charword["charWords"]
    with open_store(real_store_path) as store:
        for q in quotes:
            kind, _, sid = q.source_id.partition(":")
            if kind == "voice":
                w = words[sid]
                assert voice_owner(w) == char_id
                assert normalize_ws(q.text) in normalize_ws(w["voiceText"])
            else:
                text, cid = store.conn.execute(
                    "SELECT l.text, s.char_id FROM primary_lines l JOIN speakers s"
                    " ON s.name = l.speaker WHERE l.line_id = ?",
                    (sid,),
                ).fetchone()
                assert cid == char_id and normalize_ws(q.text) in normalize_ws(text)
    # the quote lines of the file carry the same ids
    assert d.text is not None
    prof = CharProfile.parse(d.text)
    assert [q.source_id for q in prof.quotes()] == [q.source_id for q in quotes]


@pytest.mark.parametrize("char_id", sorted(THREE))
def test_writer_produces_a_tier_b_file(real, tmp_path: Path, char_id: str) -> None:
    tables, ops, lines = real
    d = draft_profile(
        ops[char_id], tables, story_lines=lines_for(ops[char_id], lines), generated_at=AT
    )
    res = write_draft(d, tmp_path)
    assert res is not None and res.action == "written"
    prof = CharProfile.read(tmp_path / f"{char_id}.char")
    assert prof.text() == d.text and prof.tier == TIER_B and not prof.hand_edited
    assert prof.char_id == char_id and prof.name == THREE[char_id]
    allowed = allowed_sections(prof)
    # her lines to the Doctor (task C's rule) and the rule's 我·性格 lines are verified
    # verbatim lines: usable at tier B; 物理标签 only says what the anchor does not
    tags = [PHYSICAL] if d.anchor.physical_tags() else []
    traits = [PERSONALITY] if prof.quotes(PERSONALITY) else []
    assert allowed.titles() == [ANCHOR, *tags, QUOTES, *traits, ABOUT_DOCTOR]
    assert {t for t, _ in allowed.excluded} == {"我·身边的人"}
    assert prof.quotes(ABOUT_DOCTOR) and all(
        q.kind in ("voice", "story") for q in prof.quotes(ABOUT_DOCTOR)
    )
    assert all(s.tokens > 0 for s in allowed.sections)
    # what the persona block injects fits its default budget whole; 我·关于博士 is the doctor
    # block's, whose budget its rule writes within
    persona_part = sum(s.tokens for s in allowed.sections if s.title != ABOUT_DOCTOR)
    assert persona_part < Settings().persona_token_budget
    # rewriting the same draft changes nothing
    again = write_draft(d, tmp_path)
    assert again is not None and again.action == "unchanged"


@pytest.mark.slow
def test_all_operators_counts(real, real_store_path: Path, real_graph_built, metrics) -> None:
    tables, ops, lines = real
    graph = real_graph_built
    with open_store(real_store_path) as store:
        doctor_stages = frozenset(store.doctor_stages())
    drafts = draft_all(
        ops.values(), tables, lines, graph=graph, generated_at=AT, doctor_stages=doctor_stages
    )
    assert len(drafts) == len(ops)
    doctor = {d.char_id: CharProfile.parse(d.text).quotes(ABOUT_DOCTOR) for d in drafts if d.text}
    with open_store(real_store_path) as store:
        ids = [
            q.source_id.partition(":")[2] for d in drafts for q in d.gate.kept if q.kind == "story"
        ]
        ids += [q.source_id.partition(":")[2] for qs in doctor.values() for q in qs]
        sources = story_line_sources(store, ids)
    # every line of 我·关于博士 (task C's rule) is verbatim in a line or voice line of hers
    voices = {
        f"voice:{k}": (w.get("voiceText") or "", voice_owner(w))
        for k, w in (tables.charword or {}).get("charWords", {}).items()
    }
    for cid, qs in doctor.items():
        owners = {cid, ops[cid].base_id}
        for q in qs:
            text, owner = (
                (sources[q.source_id].text, sources[q.source_id].owner)
                if q.kind == "story"
                else voices[q.source_id]
            )
            assert owner in owners and normalize_ws(q.text) in normalize_ws(text), (cid, q)
    # every story quote is verbatim in a line its speaker resolves to her (or her base form)
    for d in drafts:
        owners = {d.char_id, ops[d.char_id].base_id}
        for q in d.gate.kept:
            if q.kind == "story":
                src = sources[q.source_id]
                assert src.owner in owners and normalize_ws(q.text) in normalize_ws(src.text)
    # an anchor for every operator whose archive has a 基础档案, and for no other
    has_basic = {
        cid
        for cid in ops
        if any(
            s.get("storyTitle") == BASIC for _, _, s in archive_sections(tables.handbook_info, cid)
        )
    }
    anchored = {
        d.char_id
        for d in drafts
        if d.anchor.facts and any(f.table == HANDBOOK for f in d.anchor.facts)
    }
    assert anchored == has_basic
    # never silently skipped: no file means the entry says which sources were missing
    for d in drafts:
        if d.text is None:
            assert (
                d.entry is not None
                and d.entry.gaps.startswith("no source: ")
                and d.entry.tier == "C"
            )
    origin = Counter(d.choice.origin for d in drafts)
    gap_kinds = Counter(str(g) for d in drafts for g in d.gaps)
    with_cands = sum(1 for d in drafts if d.candidates)
    metrics(
        f"profiles: {len(drafts)} operators; structured anchor {len(anchored)}; "
        f"files (tier B) {sum(d.text is not None for d in drafts)}, tier C {sum(d.text is None for d in drafts)}"
    )
    metrics(
        "profiles quotes by origin: "
        + ", ".join(f"{k} {v}" for k, v in sorted(origin.items()))
        + f"; quotes kept {sum(len(d.gate.kept) for d in drafts)}, removed by the gate "
        f"{sum(len(d.gate.removed) for d in drafts)}"
    )
    metrics(
        f"profiles with 'no source' gaps: {sum(1 for d in drafts if d.gaps)} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(gap_kinds.items()))
        + f"); with relation candidates from mentions: {with_cands}"
    )
    with_doctor = {cid for cid, qs in doctor.items() if qs}
    story_doctor = {cid for cid, qs in doctor.items() if any(q.kind == "story" for q in qs)}
    metrics(
        f"profiles with 我·关于博士 lines (task C's rule): {len(with_doctor)}, with a story line "
        f"to the Doctor {len(story_doctor)}; lines {sum(len(qs) for qs in doctor.values())}"
    )
    assert len(anchored) >= 300 and origin["voice"] >= 200 and origin["story"] >= 100
    assert len(with_doctor) >= 270 and len(story_doctor) >= 160


@pytest.mark.slow
def test_an_alternate_form_speaks_from_the_stages_that_show_her_in_it(
    real_workspace, real_graph_built
) -> None:
    """缄默德克萨斯: the distillation's story lines (quotes, lines to the Doctor) are her base
    form's lines in the stages that show her as 缄默德克萨斯, not chapter 3 of 2019."""
    ws = real_workspace
    form = ws.names.resolve("缄默德克萨斯")
    op = next(o for o in ws.names.operators() if o.char_id == form)
    (inp,) = ws.profiles.inputs([op])
    stages = ws.names.form_stages(form)
    assert len(inp.story) >= 20 and {s.stage_path for s in inp.story} <= stages
