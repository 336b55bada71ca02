"""Where she stands now, from the game's own stage summaries, with no model.

Her archive (档案资料) was written when she came out, mostly 2019-21, and the story went on:
塞雷娅 became 莱茵生命's 总辖, 推进之王 took the 议长's seat in 伦蒂尼姆, 赫拉格 went back to
乌萨斯. The official summary of a stage says such things in one sentence; this module picks
those sentences:

* **candidates** -- the sentences (:func:`~arklore.core.text.sentence_pieces`) of the
  summaries of the stages she is in that tell a story (no game mode's dialogue, no
  how-to-play, no April Fools' joke) and that name her (``names_her``: the names layer's
  mention rules, so 维娜 is 推进之王 and 年 in 一年后 is nobody);
* **when** -- the stage's opening time (:func:`arklore.sources.gamedata.opened`: an event's
  start, a main chapter's show time, so chapter 17 comes after an event of 2019); her own
  operator records (``obt/memory/story_<her key>_*``) have none and are read apart;
* **which** -- among the stages of her latest :data:`RECENT_EVENTS` events (or chapters):
  the latest sentence naming her, the latest that says she took an office (:data:`OFFICE`:
  塞雷娅继任总辖, 维娜主动接过了议长的位置), the latest with a word of place or allegiance
  (:data:`STANDING`: 回到, 加入, 离开…); and the first such sentence of her own records. At
  most :data:`MAX_ITEMS`, latest first, her record last.

Every item keeps its stage, so the block can say where it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from arklore.core.blocks import StageRef, is_story, mode_of
from arklore.core.text import one_line, sentence_pieces
from arklore.corpus.order import is_own_record
from arklore.corpus.store import StageInfo
from arklore.events.appearances import Appearance

MAX_ITEMS = 3
RECENT_EVENTS = 3
"""How many of her latest events (or main chapters) a sentence of standing is looked for in."""
MIN_CHARS = 8
"""A sentence shorter than this says too little alone (塞雷娅与锡人同行。 does)."""

TITLES = (
    "总辖|主任|议长|议员|族长|家主|董事长|会长|首领|领袖|领主|队长|团长|舰长|指挥官|将军|元帅|"
    "国王|女王|皇帝|公爵|大公|执政官|主教|教宗|枢机|市长|局长|处长|部长|主管|负责人|干部|掌门|"
    "监护人|老师|导师"
)
OFFICE = re.compile(
    rf"(?<![不没未])(?<!不会)(?<!没有)(?<!拒绝)(?<!不愿)"
    rf"(?:继任|就任|上任|担任|接任|接过|出任|当选|升任)了?[^。，；！？]{{0,10}}?"
    rf"(?:{TITLES})"
)
"""She took an office (塞雷娅继任总辖, 维娜主动接过了议长的位置): the surest word of where she
stands; not when it is denied, and never 成为, which the summaries use for what others wish
(试图劝说维娜成为…国王). Her name must come before it in its clause (:func:`_hers`)."""
STANDING = re.compile(
    "加入|离开|回到|返回|回归|留在|定居|前往|投身|辞去|卸任|退役|宣告|宣布|归来|重返|故乡|罗德岛"
)
"""Words of allegiance and place (whom she joined or left, where she went): after an office,
what tells most of her present; a title alone does not (塞雷娅与锡人分析总辖目的 is about
somebody else's office)."""


LATEST, OFFICE_TAKEN, PLACE = "latest", "office", "place"


@dataclass(frozen=True, slots=True)
class Standing:
    """One sentence of the game's summary of a stage, about her."""

    ref: StageRef
    text: str
    opened: int | None  # when its event opened (unix seconds); None for her own record
    own_record: bool = False
    why: str = LATEST  # LATEST, OFFICE or PLACE: what made it picked

    def to_dict(self) -> dict[str, object]:
        return {
            "stage": self.ref.to_dict(),
            "text": self.text,
            "opened": self.opened,
            "own_record": self.own_record,
            "why": self.why,
        }


def standing(
    appearances: Iterable[Appearance],
    infos: Mapping[str, StageInfo],
    names_her: Callable[[str], bool],
    family: Collection[str],
    position: Callable[[str], int] | None = None,
) -> list[Standing]:
    """Where she stands now (see the module docstring), latest first, her records last;
    ``position``: a stage's place in the story, which then dates the stages instead of
    their opening time (a chat set at a story point: every stage it knows is placed, and a
    prequel opened last is not her latest)."""
    dated: list[tuple[int, int, str, Standing]] = []
    records: list[Standing] = []
    for app in appearances:
        path = app.stage_path
        if not is_story(path) or mode_of(path) is not None or not app.summary:
            continue
        own = is_own_record(path, family)
        info = infos.get(path)
        opened = info.start_time if info is not None else None
        when = position(path) if position is not None else opened
        for sentence in _about_her(app.summary, names_her):
            item = Standing(app.ref, sentence, None if own else opened, own)
            if own:
                records.append(item)
            elif when is not None:
                dated.append((when, app.order_rank or 0, app.event_id or path, item))
    dated.sort(key=lambda d: (d[0], d[1]), reverse=True)
    recent_events = list(dict.fromkeys(d[2] for d in dated))[:RECENT_EVENTS]
    recent = [d[3] for d in dated if d[2] in recent_events]
    picked: list[Standing] = []
    for why, found in (
        (LATEST, recent[:1]),  # what she did last
        (OFFICE_TAKEN, [r for r in recent if _hers(OFFICE, r.text, names_her)][:1]),
        (PLACE, [r for r in recent if _hers(STANDING, r.text, names_her)][:1]),
    ):
        picked += [replace(f, why=why) for f in found if f.text not in {p.text for p in picked}]
    mine = next(
        (replace(r, why=OFFICE_TAKEN) for r in records if _hers(OFFICE, r.text, names_her)), None
    ) or next((replace(r, why=PLACE) for r in records if _hers(STANDING, r.text, names_her)), None)
    if mine is not None:
        picked = picked[: MAX_ITEMS - 1] + [mine]
    return picked[:MAX_ITEMS]


_CLAUSE = re.compile(r"[，；：、,;:]")


def _hers(words: re.Pattern[str], sentence: str, names_her: Callable[[str], bool]) -> bool:
    """Is one of ``words`` in ``sentence`` said of her: her name before it in its clause
    (塞雷娅继任总辖后 is; 海伦…将继续担任秘书一职 after a comma is Helen's)."""
    for m in words.finditer(sentence):
        starts = [c.end() for c in _CLAUSE.finditer(sentence, 0, m.start())]
        if names_her(sentence[starts[-1] if starts else 0 : m.start()]):
            return True
    return False


def _about_her(summary: str, names_her: Callable[[str], bool]) -> list[str]:
    """The sentences of ``summary`` that name her, each long enough to stand alone."""
    return [s for s in sentence_pieces(one_line(summary)) if len(s) >= MIN_CHARS and names_her(s)]
