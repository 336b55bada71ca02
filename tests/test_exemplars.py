"""Her own voice (the exemplars block) and memories in her own words, on an invented store.

The stories below are written for these tests (operator names, invented lines): 陈 meets the
NPC 塔露拉 (P1), patrols with 星熊 (P2, where she says most), talks to the Doctor through
nested choices (P3), hears 塔露拉 named by 凯尔希 (P4); 阿米娅 alone in P5; 独行者 says nothing.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.service_world import CHEN, CHEN2, HOSHI, KALTS, OPERATORS

from arklore.chat.blocks.memories import NAME_ONLY
from arklore.chat.fidelity import Item, score, store_line_speaker
from arklore.core.model import Branch, Line, LineKind, Source, Stage
from arklore.core.operators import Operator
from arklore.core.text import render_nickname
from arklore.corpus.lexical import BM25, Tokenizer
from arklore.events.memories import STANCE_CHARS
from arklore.graph.io import save_graph
from arklore.graph.model import Edge, Node, RelationGraph
from arklore.rag.context import Relation, render
from arklore.rag.exemplars import KINDS, WINDOW_LINES, branch_paths, choice_option, windows
from arklore.settings import Settings
from arklore.workspace import Workspace

TALULAH = "npc:塔露拉"
P1, P2, P3, P4, P5 = (f"obt/main/level_voice_0{i}" for i in range(1, 6))


def _d(path: str, no: int, speaker: str, text: str, **kw) -> Line:
    return Line(
        path, no, LineKind.DIALOGUE, text, speaker=speaker, **{"speaker_raw": speaker, **kw}
    )


def _n(path: str, no: int, text: str, **kw) -> Line:
    return Line(path, no, LineKind.NARRATION, text, **kw)


def _c(path: str, no: int, options: list[str], values: list[str], **kw) -> Line:
    return Line(path, no, LineKind.CHOICE, ";".join(options), speaker="博士",
                options=tuple(options), option_values=tuple(values), **kw)  # fmt: skip


LINES = {
    P1: [
        _n(P1, 1, "雪落在切城的屋顶上。"),
        _d(P1, 2, "塔露拉", "晖洁，你终于来了。"),
        _d(P1, 3, "陈", "塔露拉，你欠我一个解释。"),
        _d(P1, 4, "塔露拉", "我什么都不欠你。"),
        _d(P1, 5, "陈", "那就用剑来说话吧。"),
        _n(P1, 6, "两人同时拔出了剑。"),
        _d(P1, 7, "星熊", "陈，冷静一点！"),
        _d(P1, 8, "陈", "星熊，这是我和她之间的事。"),
    ],
    P2: [
        _d(P2, 1, "陈", "星熊，近卫局今天的巡逻安排好了吗？"),
        _d(P2, 2, "星熊", "安排好了，老样子。"),
        _d(P2, 3, "陈", "警察的职责就是守住这座城。"),
        _d(P2, 4, "陈", "我不会让任何人在龙门闹事。"),
        _d(P2, 5, "星熊", "你又一个人扛着所有事。"),
        _d(P2, 6, "陈", "这是我的选择。"),
        _d(P2, 7, "陈", "走吧，去下城区看看。"),
        _d(P2, 8, "陈", "别让诗怀雅抢了先。"),
        _d(P2, 9, "诗怀雅", "我听见了哦。"),
        _d(P2, 10, "陈", "那就快点跟上。"),
    ],
    P3: [
        _d(P3, 1, "陈", "Dr.{@nickname}，你来得正好，帮忙看看这份报告。", addresses_doctor=True),
        _c(P3, 2, ["我来帮忙。", "我只是路过。"], ["1", "2"]),
        _d(P3, 3, "陈", "那就拜托你了，{@nickname}。", branch=Branch(2, ("1",))),
        _d(P3, 4, "陈", "路过？这可不像你。", branch=Branch(2, ("2",))),
        _c(P3, 5, ["继续说", "算了"], ["3", "4"], branch=Branch(2, ("2",))),
        _d(P3, 6, "陈", "我就知道你会问。", branch=Branch(5, ("3",))),
        _d(P3, 7, "陈", "随你吧。", branch=Branch(5, ("4",))),
        _d(P3, 8, "陈", "总之，接下来跟紧我。"),
        _n(P3, 9, "远处传来了警报声。"),
    ],
    P4: [
        _d(P4, 1, "凯尔希", "塔露拉的事情还没有结束。"),
        _d(P4, 2, "陈", "我知道，我会亲自去找她。"),
        _n(P4, 3, "会议室里一片沉默。"),
    ],
    P5: [
        _d(P5, 1, "阿米娅", "博士，今天的文件我整理好了。"),
        _d(P5, 2, "凯尔希", "阿米娅，去休息吧。"),
    ],
}
SUMMARIES = {
    P1: "陈在切城与塔露拉重逢，两人拔剑相向。",
    P2: "陈和星熊在龙门巡逻。",
    P3: "博士来到近卫局帮忙。",
    P4: "凯尔希在会议上提起了整合运动的领袖。",
    P5: "阿米娅整理文件。",
}


def write_store(
    home: Path,
    lines_of: dict[str, list[Line]] = LINES,
    operators: list[Operator] = OPERATORS,
    summaries: dict[str, str] = SUMMARIES,
) -> None:
    from support.store import ingested_store

    from arklore.names.registry import Registry

    stages = [
        Stage(path, Source.AVG, f"{path}.txt", "voice", "声音篇", "MAINLINE", f"V-{rank}",
              "行动前", f"第{rank}幕", summaries.get(path), content_hash=str(rank), lines=lines)
        for rank, (path, lines) in enumerate(lines_of.items(), 1)
    ]  # fmt: skip
    order = {path: rank for rank, path in enumerate(lines_of, 1)}
    registry = Registry({op.char_id: op for op in operators})
    ingested_store(home / "arklore.sqlite3", stages, registry, order=order).close()


def write_graph(home: Path, more: Sequence[Edge] = ()) -> None:
    names = {op.char_id: op.name for op in OPERATORS if op.char_id != CHEN2}
    nodes = {i: Node(i, n, "operator", {}) for i, n in names.items()}
    nodes[TALULAH] = Node(TALULAH, "塔露拉", "npc", {})
    edges = [Edge(CHEN, TALULAH, "近亲", 0.95, ["matrix"], {"matrix": 1}, [], "姐妹。", [P1])]
    edges += more
    save_graph(RelationGraph(nodes, edges, alternates={CHEN2: CHEN}), home / "relation_graph.json")


def make_ws(home: Path, **kw) -> Workspace:
    return Workspace(Settings(home=home, embedder="hash", **kw))


@contextmanager
def small_world(
    tmp_path: Path,
    lines_of: dict[str, list[Line]],
    operators: list[Operator] = OPERATORS,
    summaries: dict[str, str] = SUMMARIES,
    edges: Sequence[Edge] = (),
    **settings: Any,
) -> Iterator[Workspace]:
    """A workspace over a store of just ``lines_of`` (stage summaries: ``summaries``), the
    graph (with ``edges`` besides its own) and her scenes built; ``settings`` for it."""
    home = tmp_path / "home"
    home.mkdir()
    write_store(home, lines_of, operators, summaries)
    write_graph(home, edges)
    with make_ws(home, **settings) as w:
        w.rag.index_exemplars()
        yield w


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h = tmp_path_factory.mktemp("voice") / "home"
    h.mkdir(parents=True)
    write_store(h)
    write_graph(h)
    with make_ws(h) as ws:
        report = ws.rag.index_exemplars()
    assert not report.skipped and report.windows > 0
    return h


@pytest.fixture
def ws(home: Path):
    w = make_ws(home)
    yield w
    w.close()


# -- windows -----------------------------------------------------------------------------------
def _paths(lines: list[Line]) -> dict[int, dict[int, set[str]]]:
    """The test's own reading of the branch markers: every Decision above a line."""
    by_no = {ln.line_no: ln for ln in lines}
    out = {}
    for ln in lines:
        path, b = {}, ln.branch
        while b is not None:
            path[b.decision_line_no] = set(b.values)
            b = by_no[b.decision_line_no].branch
        out[ln.line_no] = path
    return out


def _alternatives(a: dict[int, set[str]], b: dict[int, set[str]]) -> bool:
    return any(d in b and not (vals & b[d]) for d, vals in a.items())


def _check_windows(lines: list[Line], speaker: str) -> list[list[Line]]:
    wins = [w for w, _ in windows(lines, lambda ln: ln.speaker == speaker, branch_paths(lines))]
    seq = [ln.line_no for ln in lines if ln.kind in KINDS and ln.text.strip()]
    paths = _paths(lines)
    for w in wins:
        assert 1 <= len(w) <= WINDOW_LINES + 1
        # past the cap only to end on her answer
        assert len(w) <= WINDOW_LINES or (w[-1].speaker == speaker != w[-2].speaker)
        assert any(ln.speaker == speaker for ln in w), "a window without her line"
        nos = [ln.line_no for ln in w]
        start = seq.index(nos[0])
        assert nos == seq[start : start + len(nos)], "lines not consecutive"
        for i, a in enumerate(w):
            for b in w[i + 1 :]:
                assert not _alternatives(paths[a.line_no], paths[b.line_no]), (a, b)
    return wins


def test_windows_never_mix_branches_and_always_hold_her_line() -> None:
    wins = _check_windows(LINES[P3], "陈")
    covered = {ln.line_no for w in wins for ln in w}
    assert {1, 3, 4, 6, 7, 8} <= covered  # every line of hers is in a window
    # 3 (option 1) and 4 (option 2) are alternatives, so are 6 and 7 (nested under option 2)
    assert not any({3, 4} <= {ln.line_no for ln in w} for w in wins)
    assert not any({6, 7} <= {ln.line_no for ln in w} for w in wins)


def test_windows_never_mix_branches_on_generated_stages() -> None:
    rng = random.Random(18)
    for _ in range(200):
        lines: list[Line] = []
        open_decisions: list[tuple[int, list[str]]] = []
        for no in range(1, 40):
            branch = None
            if open_decisions and rng.random() < 0.7:
                d, values = rng.choice(open_decisions)
                branch = Branch(d, tuple(rng.sample(values, rng.choice([1, 1, 2]))))
            if rng.random() < 0.15:
                values = [str(no * 10 + i) for i in range(rng.choice([2, 3]))]
                lines.append(_c("s", no, [f"选项{v}" for v in values], values, branch=branch))
                open_decisions.append((no, values))
            elif rng.random() < 0.2:
                lines.append(_n("s", no, f"旁白{no}", branch=branch))
            else:
                who = rng.choice(["陈", "星熊", "陈？", "诗怀雅"])
                uncertain = who.endswith("？")
                lines.append(_d("s", no, who.rstrip("？"), f"台词{no}", branch=branch,
                                uncertain=uncertain))  # fmt: skip
            if open_decisions and rng.random() < 0.1:
                open_decisions.pop(0)
        _check_windows(lines, "陈")


def test_a_window_never_crosses_a_scene_cut() -> None:
    """Her line closing one scene and the next scene's talk are no exchange: the window
    around her line stops at the cut, before and after."""
    lines = [
        _d("s", 1, "星熊", "今天就到这里。"),
        _d("s", 2, "陈", "明天见。"),
        _d("s", 3, "诗怀雅", "（第二天）早上好！", scene=1),
        _d("s", 4, "陈", "......你来得真早。", scene=1),
        _d("s", 5, "诗怀雅", "当然。", scene=1),
    ]
    wins = [[ln.line_no for ln in w] for w, _ in windows(lines, lambda ln: ln.speaker == "陈", {})]
    assert wins == [[1, 2], [3, 4, 5]]


def test_a_window_that_would_stop_on_the_doctors_choice_keeps_her_answer() -> None:
    lines = [
        _d("s", 1, "星熊", "你来得正好。"),
        _d("s", 2, "星熊", "那边怎么样？"),
        _d("s", 3, "陈", "一切顺利。"),
        _d("s", 4, "星熊", "那就好。"),
        _d("s", 5, "星熊", "博士也在？"),
        _c("s", 6, ["我相信你。"], ["1"]),
        _d("s", 7, "陈", "不管怎么样，我也相信你一次。"),
        _d("s", 8, "星熊", "走吧。"),
    ]
    wins = [[ln.line_no for ln in w] for w, _ in windows(lines, lambda ln: ln.speaker == "陈", {})]
    assert wins[0] == [1, 2, 3, 4, 5, 6, 7]  # one past WINDOW_LINES, to end on her answer
    assert len(wins[0]) == WINDOW_LINES + 1


def test_a_choice_shows_the_option_its_window_takes() -> None:
    lines = LINES[P3]
    paths = branch_paths(lines)
    for win, constraint in windows(lines, lambda ln: ln.speaker == "陈", paths):
        for ln in win:
            if ln.kind is LineKind.CHOICE:
                opt = choice_option(ln, constraint)
                assert opt in ln.options
                follows = {x.line_no for x in win} & {3, 4}
                if ln.line_no == 2 and follows == {4}:
                    assert opt == "我只是路过。"
                if ln.line_no == 2 and follows == {3}:
                    assert opt == "我来帮忙。"


# -- the block ---------------------------------------------------------------------------------
def test_every_exemplar_line_is_a_stored_line_verbatim_and_hers_are_hers(ws: Workspace) -> None:
    store = ws.corpus.store()
    chen = ws.chat.speaker("陈")
    hers = {sp for sp, cid in ws.names.speaker_ids().items() if cid in chen.family}
    for message in ("你为什么要当警察？", "你还记得塔露拉吗", "你好", "帮忙看看报告"):
        b = ws.chat.exemplars(chen, message, ws.chat.named(chen, message))
        assert not b.empty and 2 <= len(b.items) <= ws.chat.budgets.exemplars_k
        cited = [ln["line_id"] for it in b.items for ln in it["lines"]]
        assert b.line_ids == cited
        assert [s.path for s in b.stages] == [it["stage_path"] for it in b.items]
        held = store.lines_by_id(cited)
        for it in b.items:
            assert any(ln["hers"] for ln in it["lines"])
            for ln in it["lines"]:
                speaker, text = held[ln["line_id"]]
                assert (ln["speaker"], ln["text"]) == (speaker, text)
                assert ln["hers"] == (speaker in hers and ln["kind"] != "choice")
                shown = ln["option"] if ln["kind"] == "choice" else text
                assert ln["kind"] != "choice" or shown in text.split(";")
                assert render_nickname(shown) in b.text


def test_scenes_render_as_a_script_under_their_stage(ws: Workspace) -> None:
    chen = ws.chat.speaker("陈")
    b = ws.chat.exemplars(chen, "你好")  # names nobody: the scene with the Doctor comes first
    assert b.items[0]["stage_path"] == P3 and b.items[0]["doctor"] == 2
    assert b.text.splitlines()[:5] == [
        "【陈在剧情里说过的话（原文）】",
        "〔V-3 行动前 《第3幕》（声音篇）〕",  # the tag: a level's 行动前 and 行动后 are two stages
        "陈：博士，你来得正好，帮忙看看这份报告。",
        "博士：我来帮忙。",
        "陈：那就拜托你了，博士。",
    ]
    assert "（远处传来了警报声。）" in b.text or len(b.items[0]["lines"]) < 6


def test_nickname_never_reaches_a_prompt(home: Path) -> None:
    with make_ws(home, nickname="老王", tier_c_relations=True) as ws:
        t = ws.chat.turn("陈", "你来帮忙看看这份报告吗？")
        ex = t.block("exemplars")
        assert any(it["stage_path"] == P3 for it in ex.items)
        assert "老王" in ex.text
        assert "{@nickname}" not in t.system_prompt and "nickname" not in t.system_prompt
        for b in t.blocks:
            assert "{@nickname}" not in b.text


def test_the_budget_drops_whole_scenes_from_the_weakest(home: Path) -> None:
    with make_ws(home) as ws:
        chen = ws.chat.speaker("陈")
        full = ws.chat.exemplars(chen, "星熊，近卫局的巡逻")
        ranked = [it["stage_path"] for it in full.items]
        assert len(ranked) >= 3 and not full.reason
        third = [m.start() for m in re.finditer("\n〔", full.text)][2]
        budget = ws.chat.counter(full.text[:third])  # the first two scenes fit, not the third
    with make_ws(home, exemplar_token_budget=budget) as ws:
        b = ws.chat.exemplars(ws.chat.speaker("陈"), "星熊，近卫局的巡逻")
    assert [it["stage_path"] for it in b.items] == ranked[:2]
    assert b.tokens <= budget and f"{len(ranked) - 2} scene(s) left out" in b.reason
    for it in full.items[:2]:
        for ln in it["lines"]:
            assert render_nickname(ln["option"] or ln["text"]) in b.text
    assert set(b.line_ids) == {ln["line_id"] for it in full.items[:2] for ln in it["lines"]}


def test_the_people_named_and_the_doctor_lift_a_scene(ws: Workspace) -> None:
    scenes = ws.rag.exemplars(ws.names.family(CHEN), "你还好吗", [TALULAH], k=3)
    assert scenes[0].why["named"] == 1.0 and scenes[0].stage_path in {P1, P4}
    assert TALULAH in scenes[0].people
    plain = ws.rag.exemplars(ws.names.family(CHEN), "你还好吗", [], k=3)
    assert plain[0].stage_path == P3 and plain[0].why["doctor"] > 0  # the Doctor is there
    hoshi = ws.rag.exemplars(ws.names.family(CHEN), "你还好吗", [HOSHI], k=1)
    assert HOSHI in hoshi[0].people


def test_a_scene_where_she_says_almost_nothing_comes_after_one_where_she_talks(
    tmp_path: Path,
) -> None:
    """Exemplars show how she talks: 塔露拉 being named lifts the scene where 陈 only says
    "......", but it still comes after the one where she speaks her mind."""
    silent, talks = "obt/main/level_quiet_01", "obt/main/level_quiet_02"
    with small_world(tmp_path, {
        silent: [_d(silent, 1, "塔露拉", "晖洁，好久不见。"), _d(silent, 2, "陈", "......"),
                 _d(silent, 3, "塔露拉", "你还是老样子。")],
        talks: [_d(talks, 1, "陈", "近卫局的职责就是守住龙门，我不会让任何人在这座城市闹事。"),
                _d(talks, 2, "星熊", "明白。")],
    }) as w:  # fmt: skip
        scenes = w.rag.exemplars(w.names.family(CHEN), "你好", [TALULAH], k=2)
    assert [s.stage_path for s in scenes] == [talks, silent]
    assert scenes[1].why["named"] > scenes[0].why["named"]


def test_a_scene_where_others_talk_around_her_comes_after_one_she_carries(
    tmp_path: Path,
) -> None:
    """A window with one line of hers among others' talk shows them, not her: it comes after
    a window where she speaks three lines, unless the message names someone in it."""
    around, hers = "obt/main/level_around_01", "obt/main/level_around_02"
    with small_world(tmp_path, {
        around: [_d(around, 1, "星熊", "巡逻路线改了，巡逻的人手也要重新排。"),
                 _d(around, 2, "诗怀雅", "巡逻的事我早就安排好了，你们别操心。"),
                 _d(around, 3, "陈", "巡逻照旧，今晚我亲自去下城区看看情况。"),
                 _d(around, 4, "星熊", "巡逻队今晚在下城区集合，别迟到。")],
        hers: [_d(hers, 1, "陈", "今晚的巡逻由我带队。"),
               _d(hers, 2, "陈", "所有人注意安全，遇到感染者先报告。"),
               _d(hers, 3, "陈", "龙门的夜晚从来不太平。")],
    }) as w:  # fmt: skip
        family = w.names.family(CHEN)
        plain = w.rag.exemplars(family, "巡逻", k=2)
        named = w.rag.exemplars(family, "巡逻", [HOSHI], k=2)
    assert [s.stage_path for s in plain] == [hers, around]
    assert plain[1].why["lexical"] > plain[0].why["lexical"]  # the better match, still second
    assert [s.stage_path for s in named] == [around, hers]


def test_a_stage_where_she_is_only_called_by_name_says_she_has_no_line(tmp_path: Path) -> None:
    """Her appearances include stages where she is only called by name: the memories block
    says so instead of letting it read like a scene she took part in."""
    spoke, called = "obt/main/level_called_01", "obt/main/level_called_02"
    with small_world(tmp_path, {
        spoke: [_d(spoke, 1, "陈", "近卫局今天的巡逻由我带队，所有人注意安全。"),
                _d(spoke, 2, "星熊", "明白。")],
        called: [_d(called, 1, "星熊", "陈，你在听吗？"), _d(called, 2, "诗怀雅", "她早就走了。")],
    }, summaries={called: "星熊和诗怀雅在近卫局等人。"}) as w:  # fmt: skip
        b = w.chat.memories(w.chat.speaker("陈"), "巡逻")
    assert {s.path for s in b.stages} == {spoke, called}
    heads = b.text.split("\n")
    at = next(i for i, ln in enumerate(heads) if "第2幕" in ln)  # the called stage's entry
    assert heads[at + 1] == NAME_ONLY
    assert NAME_ONLY not in heads[:at] and "  陈：「近卫局今天的巡逻由我带队" in b.text


def test_memories_show_only_entries_with_something_to_say_and_only_her_story(
    tmp_path: Path,
) -> None:
    """An appearance with neither the game's summary nor a line of hers of substance is left
    out (清道夫's bare 「玛莉娅·临光」关卡中的对话), so is a how-to-play or an April Fools'
    stage however well it matches; 博士 in the message ranks nothing (every chat is with him)."""
    story, bare, dots = "obt/main/level_m_01", "obt/main/level_m_02", "obt/main/level_m_03"
    guide, fools = "activities/act9x/training/t_01", "activities/act7fun/level_act7fun_01_end"
    doctor = "obt/main/level_m_04"
    with small_world(tmp_path, {
        story: [_d(story, 1, "陈", "龙门的雨总是下个不停，我在屋檐下等了一整夜。")],
        bare: [_d(bare, 1, "陈", "走吧。"), _d(bare, 2, "星熊", "好。")],
        dots: [_d(dots, 1, "陈", "还有——"), _d(dots, 2, "陈", "......"), _d(dots, 3, "陈", "你还好吗？")],
        guide: [_d(guide, 1, "陈", "雨天部署近卫干员，可以阻挡雨中的敌人。")],
        fools: [_d(fools, 1, "陈", "雨停了，今天就由我来当罗德岛的老大！")],
        doctor: [_d(doctor, 1, "陈", "博士，资料我放在你桌上了，记得看。")],
    }, summaries={guide: "教官讲解雨天作战。", fools: "愚人节，雨中的罗德岛换了老大。"}) as w:  # fmt: skip
        chen = w.chat.speaker("陈")
        rain = w.chat.memories(chen, "雨", k=5)
        hello = w.chat.memories(chen, "博士，雨停了吗", k=1)
        scenes = w.rag.exemplars(w.names.family(CHEN), "雨", k=9)
    assert {s.stage_path for s in scenes} == {story, bare, dots, doctor}  # her story only
    assert [s.path for s in rain.stages] == [story, doctor]  # bare and dots: nothing to show
    assert [s.path for s in hello.stages] == [story]


def test_small_talk_names_no_topic(tmp_path: Path) -> None:
    """博士来看你了，最近过得好吗 asks about nothing: her memories are the stages she carries
    most, not one where she says 我来看看 (every greeting matched such lines)."""
    big, small = "obt/main/level_t_01", "obt/main/level_t_02"
    with small_world(tmp_path, {
        big: [_d(big, i, "陈", f"龙门的第{i}道防线必须守住，所有人跟我来。") for i in range(1, 7)],
        small: [_d(small, 1, "陈", "我来看看这个。"), _d(small, 2, "陈", "这里最近过得不太平。"),
                _d(small, 3, "陈", "我来看看那边的情况。")],
    }, summaries={big: "陈守卫龙门。", small: "陈从监控来看，情况不妙。"}) as w:  # fmt: skip
        got = w.chat.memories(w.chat.speaker("陈"), "博士来看你了，最近过得好吗？", k=1)
    assert [s.path for s in got.stages] == [big]


def test_a_quoted_line_of_hers_does_not_go_on_from_one_left_out(tmp_path: Path) -> None:
    """然后让那个人的家族从叙拉古除名 ends a hypothetical: quoted alone it says something else,
    so another line of hers that fits is quoted first."""
    stage = "obt/main/level_q_01"
    goes_on = "然后，让那些在雨夜里伤害过我同伴的人，全都从这座城市里消失。"
    with small_world(tmp_path, {
        stage: [_d(stage, 1, "陈", "如果真有人敢在雨夜动手。"), _d(stage, 2, "陈", goes_on),
                _d(stage, 3, "陈", "雨夜的巡逻由我来带。")],
    }, summaries={stage: "陈在雨夜巡逻。"}) as w:  # fmt: skip
        b = w.chat.memories(w.chat.speaker("陈"), "雨夜", k=1)
    (item,) = b.items
    assert goes_on not in [q["text"] for q in item["quotes"]]
    assert item["quotes"][0]["text"] == "如果真有人敢在雨夜动手。"


def test_a_stage_where_she_is_only_called_comes_after_those_where_she_speaks(
    tmp_path: Path,
) -> None:
    """The words of a stage where she is only called by name are about somebody else: it
    never takes a memory slot from a stage where she speaks, however well it matches."""
    one, two, called = (f"obt/main/level_rank_0{i}" for i in (1, 2, 3))
    with small_world(tmp_path, {
        one: [_d(one, 1, "陈", "今天的报告我已经看完了，明天再谈。"), _d(one, 2, "星熊", "好。")],
        two: [_d(two, 1, "陈", "把下城区的地图给我拿过来。"), _d(two, 2, "星熊", "马上。")],
        called: [_d(called, 1, "星熊", "陈，巡逻的路线定了吗？"),
                 _d(called, 2, "诗怀雅", "巡逻的事她早就交给我了。")],
    }, summaries={called: "星熊与诗怀雅商量下城区的巡逻路线，巡逻队整装出发。"}) as w:  # fmt: skip
        b = w.chat.memories(w.chat.speaker("陈"), "巡逻", k=2)
        alone = w.chat.memories(w.chat.speaker("陈"), "巡逻", k=3)
    assert {s.path for s in b.stages} == {one, two} and NAME_ONLY not in b.text
    assert {s.path for s in alone.stages} == {one, two, called}  # room for it: shown, marked


def test_a_stage_where_she_has_a_cameo_comes_after_those_she_carries(tmp_path: Path) -> None:
    """Two lines of hers in a stage about somebody else are not her memory of it, however
    well its summary matches: it comes after the stages where she speaks three lines or
    more, unless the message names someone who is there."""
    cameo, carried = "obt/main/level_cameo_01", "obt/main/level_cameo_02"
    with small_world(tmp_path, {
        cameo: [_d(cameo, 1, "陈", "我要迟到了！"), _d(cameo, 2, "星熊", "巡逻的人都到齐了。"),
                _d(cameo, 3, "陈", "等等我！")],
        carried: [_d(carried, 1, "陈", "今天由我带队，所有人注意安全。"),
                  _d(carried, 2, "陈", "遇到感染者先报告，不许擅自行动。"),
                  _d(carried, 3, "陈", "龙门的夜晚从来不太平。")],
    }, summaries={cameo: "星熊带着巡逻队来到下城区，巡逻的路线临时改变。"}) as w:  # fmt: skip
        plain = w.chat.memories(w.chat.speaker("陈"), "巡逻", k=1)
        named = w.chat.memories(w.chat.speaker("陈"), "星熊和巡逻", k=1)
        both = w.chat.memories(w.chat.speaker("陈"), "巡逻", k=2)
    assert [s.path for s in plain.stages] == [carried]
    assert [s.path for s in named.stages] == [cameo]  # 星熊 is there: the cameo is lifted
    assert {s.path for s in both.stages} == {cameo, carried}


def test_the_heading_names_the_other_labels_her_lines_carry(tmp_path: Path) -> None:
    """A scene writes her under her real name: the heading says so, so that a model knows
    those lines are hers."""
    real = "obt/main/level_real_01"
    with small_world(tmp_path, {
        real: [_d(real, 1, "陈晖洁", "龙门近卫局从不向罪犯低头，这一点你最好记住。"),
               _d(real, 2, "星熊", "明白。")],
    }) as w:  # fmt: skip
        b = w.chat.exemplars(w.chat.speaker("陈"), "你好")
    assert b.text.startswith("【陈在剧情里说过的话（原文；剧情里也写作陈晖洁）】\n")
    assert "陈晖洁：龙门近卫局从不向罪犯低头" in b.text and b.tokens <= b.budget


ONI = [Operator(HOSHI, "星熊", "Hoshiguma", "character_table", real_names=["鬼姐姐"])
       if op.char_id == HOSHI else op for op in OPERATORS]  # fmt: skip
"""The test operators, 星熊 with her young name 鬼姐姐 as a real name."""


def test_the_heading_says_who_the_others_are_where_a_name_does_not(tmp_path: Path) -> None:
    """Scenes call people by names a model may not know (a real name, a popup's avatar id):
    the heading says who they are, the avatar id becomes her name, and her memories name her
    once where her lines carry another label."""
    real = "obt/main/level_real_02"
    with small_world(tmp_path, {
        real: [_d(real, 1, "陈", "鬼姐姐，近卫局今天的巡逻由你带队，所有人注意安全。"),
               _d(real, 2, "鬼姐姐", "明白，我这就去安排所有人手。"),
               _d(real, 3, "$avatar_hsguma", "出发，跟上我的脚步。"),
               _d(real, 4, "$avatar_chen", "我走在最前面，有事就喊我。")],
    }, ONI) as w:  # fmt: skip
        b = w.chat.exemplars(w.chat.speaker("陈"), "巡逻")
        mem = w.chat.memories(w.chat.speaker("星熊"), "巡逻")
    assert b.text.startswith("【陈在剧情里说过的话（原文；鬼姐姐即星熊）】\n")
    assert "\n星熊：出发，跟上我的脚步。" in b.text and "$avatar" not in b.text
    assert "\n陈：我走在最前面，有事就喊我。" in b.text  # her own popup line: her name
    assert "  鬼姐姐（星熊）：「明白，我这就去安排所有人手。」" in mem.text


def test_she_with_no_lines_gets_an_empty_block_with_the_reason(ws: Workspace, home: Path) -> None:
    lonely = ws.chat.exemplars(ws.chat.speaker("独行者"), "你好")
    assert lonely.empty and lonely.reason == "独行者 speaks in no story stage"
    fresh = home.parent / "unbuilt"
    fresh.mkdir()
    write_store(fresh)
    with make_ws(fresh) as unbuilt:
        b = unbuilt.chat.exemplars(unbuilt.chat.speaker("陈"), "你好")
    assert b.empty and "never indexed" in b.reason


def test_the_build_is_skipped_when_its_inputs_are_unchanged(home: Path, tmp_path: Path) -> None:
    with make_ws(home) as ws:
        assert ws.rag.exemplars_built() and ws.rag.index_exemplars().skipped
        assert not ws.rag.index_exemplars(force=True).skipped
    aliases = tmp_path / "aliases.toml"
    aliases.write_text(f'[[alias]]\nname = "晖洁"\nid = "{CHEN}"\nnote = "test"\n', "utf-8")
    with make_ws(home, aliases_file=aliases) as ws:  # the names changed: built again
        assert not ws.rag.exemplars_built()
        assert not ws.rag.index_exemplars().skipped
        assert ws.rag.index_exemplars().skipped
    with make_ws(home) as ws:
        assert not ws.rag.index_exemplars().skipped  # and back


# -- memories in her own words ---------------------------------------------------------------
def test_memories_rank_stages_with_the_named_npc_first_and_carry_her_lines(ws: Workspace) -> None:
    plain = ws.events.memories("陈", None, k=1)
    assert [m.stage_path for m in plain.items] == [P2]  # where she says most
    mem = ws.events.memories("陈", "你还记得塔露拉吗", k=2)
    assert mem.kind == "appearances"
    assert [m.stage_path for m in mem.items] == [P1, P4]  # 塔露拉 speaks in P1, is named in P4
    held = ws.corpus.store().lines_by_id([q["line_id"] for m in mem.items for q in m.quotes])
    for m in mem.items:
        assert 1 <= len(m.quotes) <= 2 and m.summary
        for q in m.quotes:
            assert held[q["line_id"]] == ("陈", q["text"]) and q["line_id"] in m.line_ids
    assert "塔露拉" in mem.items[0].quotes[0]["text"]  # the line that fits the message
    block = ws.chat.memories(ws.chat.speaker("陈"), "你还记得塔露拉吗")
    assert {P1, P4} <= {s.path for s in block.stages}  # shown in story order
    assert "  陈：「塔露拉，你欠我一个解释。」" in block.text


def test_small_talk_gets_at_most_two_signature_stages_and_a_listing_keeps_its_k(
    ws: Workspace,
) -> None:
    """A message naming nobody and no topic gets her two most telling stages; asking for her
    memories with no message (a card's listing) keeps the k it asks for."""
    talk = ws.events.memories("陈", "你好呀，最近怎么样", k=4)
    assert len(talk.items) == 2 and "small talk" in talk.reason
    assert P2 in {m.stage_path for m in talk.items}  # where she says most
    assert len(ws.events.memories("陈", None, k=4).items) == 4


def test_memories_rank_by_the_message_words(ws: Workspace) -> None:
    mem = ws.events.memories("陈", "那份报告你看完了吗", k=1)
    assert [m.stage_path for m in mem.items] == [P3]
    assert mem.items[0].quotes[0]["line_id"].startswith(P3)


def test_every_entry_point_gets_the_same_memories(ws: Workspace) -> None:
    via_events = ws.events.memories("陈", "你还记得塔露拉吗", k=3)
    block = ws.chat.turn("陈", "你还记得塔露拉吗").block("memories")
    assert [s.path for s in block.stages] == [m.stage_path for m in via_events.items]


# -- the fidelity eval's voice check on real blocks ---------------------------------------------
def test_the_voice_check_passes_real_scenes_and_catches_a_line_passed_off_as_hers(
    ws: Workspace,
) -> None:
    item = Item("v", "陈", "近卫局的巡逻安排好了吗？", "voice",
                {"exemplars_min": 2, "stages": [P2], "keywords": []}, "n", ())  # fmt: skip
    ls = store_line_speaker(ws.corpus.store(), ws.names)

    def turn(op: str, msg: str) -> dict[str, Any]:
        return ws.chat.turn(op, msg).to_dict()

    assert score([item], turn, ls).results[0].passed

    def forged(op: str, msg: str) -> dict[str, Any]:
        d = turn(op, msg)
        ex = next(b for b in d["blocks"] if b["name"] == "exemplars")
        for it in ex["items"]:
            for ln in it["lines"]:
                ln["hers"] = True  # someone else's line shown as hers
        return d

    r = score([item], forged, ls).results[0]
    assert not r.passed and "is shown as hers but is not" in r.reason


# -- lexical ------------------------------------------------------------------------------------
def test_the_tokenizer_keeps_story_names_whole_and_drops_function_words() -> None:
    tok = Tokenizer(["塔露拉", "诗怀雅"])
    assert tok.query("你还记得塔露拉吗？") == ["塔露拉"]
    assert "诗怀雅" in tok.tokens("诗怀雅又抢先了。")
    assert tok.tokens("Dr.{@nickname}，你好！123") == ["dr", "nickname"]
    assert Tokenizer().names("塔露拉") == []


def test_bm25_prefers_the_rarer_word() -> None:
    docs = [["巡逻", "近卫局"], ["巡逻", "下城区"], ["巡逻", "龙门"], ["剑"]]
    scores = BM25(docs).scores(["巡逻", "近卫局"])
    assert max(scores, key=lambda i: scores[i]) == 0 and 3 not in scores


def test_a_tight_memories_budget_drops_her_second_lines_before_an_appearance(home: Path) -> None:
    with make_ws(home) as ws:
        full = ws.chat.memories(ws.chat.speaker("陈"), "龙门和近卫局的巡逻")
        assert not full.reason and any(len(it["quotes"]) == 2 for it in full.items)
        second = {it["quotes"][1]["text"] for it in full.items if len(it["quotes"]) == 2}
        lines = [x for x in full.text.splitlines() if not any(f"「{q}」" in x for q in second)]
        budget = ws.chat.counter("\n".join(lines))
    with make_ws(home, memory_token_budget=budget) as ws:
        tight = ws.chat.memories(ws.chat.speaker("陈"), "龙门和近卫局的巡逻")
    assert [s.path for s in tight.stages] == [s.path for s in full.stages]
    assert all(len(it["quotes"]) == 1 for it in tight.items) and not tight.reason
    dropped = {q["line_id"] for it in full.items for q in it["quotes"][1:]}
    assert not dropped & set(tight.line_ids) and tight.tokens <= budget


def test_in_a_group_chat_her_scenes_and_memories_prefer_the_others_present(home: Path) -> None:
    """A message that names nobody still gets the scenes she shares with whoever is in the
    chat: the others present count as named."""
    with make_ws(home, memory_k=1) as ws:
        alone = ws.chat.turn("陈", "你还好吗")
        together = ws.chat.turn("陈", "你还好吗", participants=["凯尔希"])
    assert together.block("exemplars").meta["named"] == [KALTS]
    assert [s.path for s in together.block("memories").stages] == [P4]  # 凯尔希 is in it
    assert together.block("exemplars").items[0]["stage_path"] == P4
    assert alone.block("exemplars").meta["named"] == []
    assert [s.path for s in alone.block("memories").stages] != [P4]


def test_a_speaker_the_story_marks_uncertain_keeps_its_question_mark(tmp_path: Path) -> None:
    """塔露拉？ is the story saying this may not be her (Koschei speaks through her body): the
    scene shows the label as written, never 塔露拉."""
    path = "obt/main/level_unsure_01"
    with small_world(tmp_path, {
        path: [_d(path, 1, "陈", "你到底是谁？塔露拉不会说出这种话，我不会认错她的声音。"),
               _d(path, 2, "塔露拉", "你们是不是被我现在的力量迷惑了？", uncertain=True,
                  speaker_raw="塔露拉？"),
               _d(path, 3, "陈", "不管你是谁，今天都别想从这里离开。")],
    }) as w:  # fmt: skip
        b = w.chat.exemplars(w.chat.speaker("陈"), "塔露拉")
    assert "\n塔露拉？：你们是不是被我现在的力量迷惑了？" in b.text
    assert "\n塔露拉：" not in b.text


def test_a_line_about_her_gives_the_name_the_story_mostly_calls_her_by(tmp_path: Path) -> None:
    """星熊 speaks mostly as 鬼姐姐 here: a block line about her reads 星熊（鬼姐姐）, so the
    model ties the code name to the scenes' speaker; a name that says who she is adds nothing."""
    real = "obt/main/level_real_03"
    partner = Edge(CHEN, HOSHI, "战友", 0.9, ["matrix"], {"matrix": 1}, [], "搭档。", [real])
    with small_world(tmp_path, {
        real: [_d(real, 1, "鬼姐姐", "近卫局今天的巡逻由我带队，所有人注意安全。"),
               _d(real, 2, "陈晖洁", "我走在最前面，有事就喊我。")],
    }, ONI, edges=[partner], tier_c_relations=True) as w:  # fmt: skip
        assert w.names.story_name(HOSHI) == "鬼姐姐"
        assert w.names.named(HOSHI) == "星熊（鬼姐姐）"
        assert w.names.story_name(CHEN) is None  # 陈晖洁 says who she is
        rel = Relation(HOSHI, "星熊", "战友", 0.9, "一起巡逻的搭档。", "graph", None)
        text = render("陈", [rel], [], w.names.named)
        served = w.chat.relation_context(w.chat.speaker("陈"), "你好").text  # as wired
    assert text.splitlines()[1] == "- 星熊（鬼姐姐）：一起巡逻的搭档。"
    assert "\n- 星熊（鬼姐姐）：" in served


def test_a_stage_summary_that_does_not_name_her_says_so(tmp_path: Path) -> None:
    """The game's summary of a stage may tell another thread of it: the entry says the
    summary does not name her, so her lines under it are not read as what it tells; one
    that names her only past the part that fits is shown from the sentence naming her."""
    mine, late, theirs = "obt/main/level_sum_01", "obt/main/level_sum_02", "obt/main/level_sum_04"
    titled = "obt/main/level_sum_03"
    record = f"obt/memory/story_{CHEN.rsplit('_', 1)[-1]}_1_1"  # her own operator record
    with small_world(
        tmp_path,
        {
            mine: [_d(mine, 1, "陈", "近卫局今天的巡逻由我带队，所有人注意安全。")],
            late: [_d(late, 1, "陈", "这里交给我，你们先去下城区巡逻。")],
            titled: [_d(titled, 1, "陈", "沙滩上的巡逻也不能马虎。")],
            theirs: [_d(theirs, 1, "陈", "巡逻车我借走了，记在近卫局账上。")],
            record: [_d(record, 1, "陈", "那天的巡逻，我一个人走完了全程。")],
        },
        summaries={
            mine: "陈带队巡逻下城区。",
            # the name only past the part shown (whole sentences up to 60 characters)
            late: "星熊久违地骑上机车，度过难得的假日。" + "车道很长。" * 10 + "终点站着陈。",
            # her form 假日威龙陈's title names her (耀骑士 for 临光)
            titled: "假日威龙在沙滩上巡逻。",
            theirs: "星熊久违地骑上机车，度过难得的假日。",
            record: "一个人走完的一段巡逻路。",  # her record's summary need not name her
        },
    ) as w:
        text = w.chat.memories(w.chat.speaker("陈"), "巡逻", k=5).text
    assert "：陈带队巡逻下城区。\n" in text
    assert "：……终点站着陈。\n" in text and "车道很长" not in text
    assert "：假日威龙在沙滩上巡逻。\n" in text
    assert "：星熊久违地骑上机车，度过难得的假日。（概要未提到陈）\n" in text
    assert "：一个人走完的一段巡逻路。\n" in text


def test_her_quoted_line_is_one_saying_how_she_stands_over_a_longer_errand(
    tmp_path: Path,
) -> None:
    """A greeting names no topic: under a stage she is quoted where she says how she stands
    (我 and 相信/希望/对不起…), at least STANCE_CHARS long, before a longer errand; a short one
    (我记得的) says too little out of its scene."""
    long_, short = "obt/main/level_stand_01", "obt/main/level_stand_02"
    errand = "补给车下午三点到，东门的仓库还空着，把药品和弹药分开放在左右两边的货架上。"
    stands = "不管别人怎么看你，我都愿意相信你，这一点从来没有变过。"
    assert len(stands) >= STANCE_CHARS > len("我记得的，只是刚刚没反应过来。")
    with small_world(
        tmp_path,
        {
            long_: [_d(long_, 1, "陈", errand), _d(long_, 2, "陈", stands)],
            short: [
                _d(short, 1, "陈", errand),
                _d(short, 2, "陈", "我记得的，只是刚刚没反应过来。"),
            ],
        },
        summaries={long_: "陈在营地整理补给。", short: "陈在营地清点物资。"},
    ) as w:
        items = w.chat.memories(w.chat.speaker("陈"), "你好").items
    quoted = {it["stage_path"]: [q["text"] for q in it["quotes"]] for it in items}
    assert quoted[long_] == [stands]
    assert quoted[short] == [errand]


def test_a_stage_whose_summary_names_her_is_remembered_before_one_that_does_not(
    tmp_path: Path,
) -> None:
    """Two stages alike in her lines and in the message's words: the one whose summary tells
    what she did comes before another thread she has lines in (k=1 shows one of them)."""
    hers, theirs = "obt/main/level_about_02", "obt/main/level_about_01"
    lines = ["近卫局今天的巡逻由我带队，所有人注意安全。", "下城区的巡逻路线我来定。",
             "有情况立刻向我报告。"]  # fmt: skip
    with small_world(
        tmp_path,
        {p: [_d(p, i + 1, "陈", t) for i, t in enumerate(lines)] for p in (theirs, hers)},
        summaries={hers: "陈带着近卫局的小队巡逻下城区。", theirs: "星熊在办公室里处理文件。"},
        memory_k=1,
    ) as w:
        block = w.chat.memories(w.chat.speaker("陈"), "你好")
    assert [s.path for s in block.stages] == [hers]


def _scene_rows(home: Path) -> list[list[tuple[Any, ...]]]:
    with make_ws(home) as w:
        q = w.corpus.store().conn.execute
        return [
            q("SELECT base_id, stage_path, first_line, last_line, order_rank, lines, tokens,"
              " her_tokens, people, doctor, hers, size FROM scene_windows ORDER BY id").fetchall(),
            q("SELECT * FROM stage_terms ORDER BY stage_path").fetchall(),
        ]  # fmt: skip


def test_her_scenes_computed_in_worker_processes_are_those_computed_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scenes step spread over processes (each with its own tokenizer and mention matcher,
    made from the ones it is given) writes the same rows, in the same order, as one process."""
    from arklore.rag import exemplars

    holiday = f"{P1}b"  # her other form named, and 塔露拉 kept whole by the tokenizer
    lines_of = {**LINES, holiday: [
        _d(holiday, 1, "星熊", "假日威龙陈今天休假，塔露拉的消息也没有。"),
        _d(holiday, 2, "陈", "别叫我假日威龙陈。塔露拉的事我自己查。"),
    ]}  # fmt: skip
    monkeypatch.setattr(exemplars, "PARALLEL_FROM", 2)
    monkeypatch.setattr(exemplars, "BATCH", 2)
    rows = []
    for workers in (1, 2):
        home = tmp_path / f"home{workers}"
        home.mkdir()
        write_store(home, lines_of)
        with make_ws(home, workers=workers) as w:
            assert w.rag.index_exemplars().windows > 0
        rows.append(_scene_rows(home))
    one, two = rows
    assert one == two
    assert {r[1] for r in one[0] if r[0] == CHEN} == {P1, P2, P3, P4, holiday}


def test_april_fools_lines_are_hers_only_where_she_speaks_in_no_story(tmp_path: Path) -> None:
    """An operator who speaks only in an April Fools' event (主播U, 断罪者) has those lines
    for her greeting and her way of speaking; one with a story line keeps to her story, and a
    how-to-play line is nobody's."""
    story, guide = "obt/main/level_f_01", "activities/act9x/training/t_01"
    fools = "activities/act4fun/level_act4fun_01_end"
    with small_world(tmp_path, {
        story: [_d(story, 1, "陈", "博士，巡逻的报告我放在你桌上了。")],
        fools: [_d(fools, 1, "陈", "博士，今天由我来当罗德岛的老大！"),
                _d(fools, 2, "星熊", "博士，节目马上开播，别走开哦！")],
        guide: [_d(guide, 1, "星熊", "部署重装干员，可以挡住更多敌人。")],
    }) as w:  # fmt: skip
        chen, hoshi = w.profiles.greeting("陈"), w.profiles.greeting("星熊")
    assert chen is not None and chen.text == "博士，巡逻的报告我放在你桌上了。"
    assert hoshi is not None and hoshi.text == "博士，节目马上开播，别走开哦！"
