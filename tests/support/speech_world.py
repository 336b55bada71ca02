"""An invented corpus for the tests of her way of speaking (``profiles.speech``): one operator,
星砂, who calls the Doctor 船长, says 嘻嘻 and ♪, calls herself 本小姐 and is called 小砂 and
星砂队长; another operator, 悠悠; a few other speakers; and a background of other people's
everyday lines. Every line is written for these tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from arklore.core.model import DOCTOR, Line, LineKind
from arklore.core.operators import Operator
from arklore.corpus.lexical import Tokenizer
from arklore.corpus.store import SpokenLine
from arklore.names.registry import Registry
from arklore.profiles.quotes import StoryLine, VoiceLine
from arklore.profiles.speech import Background, build_background
from support.lines import line, stage
from support.store import ingested_store

SHE, OTHER = "char_950_xsha", "char_951_yoyo"
OPS = [Operator(SHE, "星砂"), Operator(OTHER, "悠悠")]
NAMES = ("星砂", "悠悠", "吾乐", "巡逻队员", "老猎人", "商人", "路人")
SPEAKER_IDS = {"星砂": SHE, "悠悠": OTHER}
NAMES_OF = {SHE: {"星砂"}, OTHER: {"悠悠"}}

# (speaker, text) per stage; "" = the Doctor's choice. Her lines carry the habits under test.
STAGES: dict[str, list[tuple[str, str]]] = {
    "test/speech/s0": [
        ("商人", "星砂，货物清点完了吗？"),
        ("星砂", "嘻嘻，早就清点完了♪"),
        ("巡逻队员", "星砂队长，北边的路线安全。"),
        ("星砂", "居然这么顺利？居然没有遇到沙暴？"),
        ("星砂", "居然，居然，真是居然。"),
        ("星砂", "本小姐出马，当然顺利。"),
        ("悠悠", "小砂，你的水壶落在这里了。"),
        ("星砂", "谢啦，悠悠，嘻嘻。"),
        ("星砂", "吾乐那家伙又睡过头了吧。"),
    ],
    "test/speech/s1": [
        ("巡逻队员", "星砂队长，南边的桥修好了。"),
        ("星砂", "本小姐早就知道会修好的♪"),
        ("星砂", "悠悠，把地图拿过来。"),
        ("悠悠", "小砂，地图在你背包里。"),
        ("星砂", "嘻嘻，原来在这里。"),
        ("星砂", "吾乐，别偷懒了，快起来。"),
        ("星砂", "俺是说，我们该出发了。"),
        ("老猎人", "砂丫头，路上小心。"),
        ("星砂", "知道啦，放心吧♪"),
    ],
    "test/speech/s2": [
        ("巡逻队员", "星砂队长，补给送到了。"),
        ("星砂", "本小姐亲自检查一遍。"),
        ("星砂", "悠悠，帮我记一下数量，悠悠最细心了。"),
        ("星砂", "嘻嘻，一箱都不少♪"),
        ("星砂", "吾乐说过今天会下雨。"),
        ("星砂", "果然，天阴下来了。"),
        ("商人", "星砂，明天还来吗？"),
    ],
    "test/speech/s3": [
        ("悠悠", "小砂，灯塔亮了。"),
        ("星砂", "本小姐看到了，嘻嘻♪"),
        ("星砂", "悠悠，我们回去吧，悠悠。"),
        ("星砂", "吾乐应该已经做好晚饭了。"),
        ("星砂", "俺饿了。"),
        ("星砂", "本小姐今天走了好远的路。"),
    ],
    "test/speech/s4": [
        ("", "去哪儿？;等一下"),
        ("星砂", "船长，这边走，跟紧我。"),
        ("星砂", "船长，您看，那就是灯塔。"),
        ("", "真漂亮。"),
        ("星砂", "船长，您喜欢的话我们常来吧。"),
        ("星砂", "本小姐可以带路，嘻嘻。"),
    ],
}
_PLACES = ("北边", "南边", "河边", "仓库", "集市", "城门", "码头", "山口", "营地", "广场")
_THINGS = ("木箱", "粮食", "绳子", "帐篷", "药品", "马车", "灯油", "布匹", "铁钉", "草料")
_STATES = ("已经送到", "还没有清点", "需要修补", "堆得很满", "被雨淋湿", "刚刚卸下")


def background_lines() -> list[tuple[str, str]]:
    """Everyday lines of people who are nobody in particular, none with her habits."""
    return [("路人", f"{p}的{t}{s}了。") for p in _PLACES for t in _THINGS for s in _STATES]


def lines() -> list[Line]:
    """Every line of the invented corpus, stage by stage, the background last."""
    out: list[Line] = []
    for path, rows in STAGES.items():
        for no, (speaker, text) in enumerate(rows, 1):
            if speaker:
                out.append(line(path, no, speaker, text))
            else:
                options = tuple(text.split(";"))
                out.append(line(path, no, DOCTOR, text, kind=LineKind.CHOICE, options=options))
    bg = background_lines()
    for k in range(0, len(bg), 60):
        path = f"test/speech/bg{k // 60}"
        out += [line(path, i + 1, sp, t) for i, (sp, t) in enumerate(bg[k : k + 60])]
    return out


def spoken(ls: list[Line]) -> Iterator[SpokenLine]:
    """``ls`` as the corpus's spoken lines (what the background reads)."""
    for ln in ls:
        if ln.kind in (LineKind.DIALOGUE, LineKind.CHOICE):
            yield SpokenLine(
                ln.stage_path, ln.line_no, ln.kind.value, ln.speaker, ln.uncertain, ln.text,
                None, ln.line_id, ln.scene,
            )  # fmt: skip


def her_story(ls: list[Line], char_id: str = SHE, speaker: str = "星砂") -> list[StoryLine]:
    return [
        StoryLine(ln.line_id, ln.stage_path, ln.line_no, k, speaker, char_id, ln.text)
        for k, ln in enumerate(ls)
        if ln.speaker == speaker and ln.kind is LineKind.DIALOGUE
    ]


VOICE_TEXTS: tuple[tuple[str, str], ...] = (
    ("任命助理", "船长，今天的航线我已经画好了。"),
    ("交谈1", "船长，要不要一起去看星星？"),
    ("交谈2", "嘻嘻，您又在发呆了吗？"),
    ("交谈3", "船长！您回来啦♪"),
    ("问候", "早上好，船长，您今天也要出海吗？"),
    ("闲置", "……海风好舒服。"),
    ("标题", "测试方舟。"),
)


def voice() -> list[VoiceLine]:
    return [
        VoiceLine(f"{SHE}_CN_{i:03d}", SHE, title, i, text)
        for i, (title, text) in enumerate(VOICE_TEXTS, 1)
    ]


def tokenizer() -> Tokenizer:
    return Tokenizer(NAMES)


def background(ls: list[Line] | None = None, *, names: tuple[str, ...] = NAMES) -> Background:
    """The background of the invented corpus (``names``: the people it knows)."""
    ids = {k: v for k, v in SPEAKER_IDS.items() if k in names}
    return build_background(
        spoken(ls if ls is not None else lines()),
        tokenizer=tokenizer(),
        speaker_ids=ids,
        names_of={c: n for c, n in NAMES_OF.items() if c in ids.values()},
        people=names,
    )


def make_home(root: Path) -> Path:
    """A home whose store holds the invented corpus (星砂 and 悠悠 its operators)."""
    home = root / "home"
    by_stage: dict[str, list[Line]] = {}
    for ln in lines():
        by_stage.setdefault(ln.stage_path, []).append(ln)
    stages = [stage(p, ls) for p, ls in by_stage.items()]
    ingested_store(home / "arklore.sqlite3", stages, Registry({o.char_id: o for o in OPS})).close()
    return home
