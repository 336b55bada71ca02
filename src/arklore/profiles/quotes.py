"""Task B without a model: 5-8 verbatim quotes per operator, and the verbatim gate.

Her own words make a model imitate her voice far better than any summary, so a profile
quotes her. Sources, each cited by a source id:

* voice lines, ``charword_table.json`` ``charWords[*]`` that are hers (:func:`voice_owner`:
  alternate forms have their own ids): ``voice:<charWordId>``;
* story lines, dialogue lines of the primary corpus whose speaker resolves to her (the
  speaker table's operator id; an alternate form also uses her base form's lines, it is the
  same person): ``story:<line_id>``;
* for ``## 我·性格`` lines (:mod:`arklore.profiles.temperament`), a section of her archive,
  ``archive:<entry id>/<section title>`` (:func:`arklore.profiles.archive.archive_sources`),
  and a line somebody else says of her, ``story:<line_id>``.

**The rule** (:func:`choose_quotes`, deterministic: same inputs, same quotes in the same
order):

1. A line is a candidate when its text, whitespace-normalized, is between
   :data:`MIN_CHARS` and :data:`MAX_VOICE_CHARS` (voice) / :data:`MAX_STORY_CHARS` (story)
   characters, has at least :data:`MIN_VOICE_CJK` / :data:`MIN_STORY_CJK` Chinese characters
   (story lines are plentiful: a bare exclamation is not her voice), and is not mostly the
   Doctor's name: without ``Dr.{@nickname}`` / ``{@nickname}`` / ``博士`` it must keep
   :data:`MIN_CHARS` characters. Repeated texts count once (the first).
2. Voice lines first. Their categories (``voiceTitle``) form three groups, filled with the
   quotas of :data:`VOICE_QUOTAS`: *talk* (交谈, 信赖提升后交谈, 晋升后交谈: where her
   character shows most), *daily* (任命助理, 干员报到, 问候, 闲置, 精英化晋升, ...) and
   *battle* (行动, 部署, 作战中, ...). 标题 and 戳一下 are never used. Within a group the
   picks are spread evenly over the candidates in ``voiceIndex`` order (see :func:`spread`);
   a group with too few candidates leaves its slots to the next groups. A battle line with
   你/您 in it is said to an enemy, never a quote.
3. When voice gives fewer than :data:`MIN_QUOTES` (the 2021 voice table does not know
   newer operators), story lines fill up to :data:`TARGET_QUOTES`: her stages in story
   order (release order, then path), the picked stages spread evenly over them, and from
   each stage its candidate that reads on its own (not going on from the line before,
   :func:`~arklore.core.text.goes_on`, then not about a 他/她/它 the model cannot see) with
   the most Chinese characters (ties: the earlier line).
4. Quotes come out voice first (voice index order), then story (story order).

**The gate** (:func:`verify_quotes`): a quote is kept only if its text, whitespace-normalized,
occurs in the cited source's text, whitespace-normalized, and (when ``owners`` is given) the
source is hers. Anything else is removed with the reason. It guards model-picked quotes too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arklore.core.text import goes_on

T = TypeVar("T")
VOICE = "voice"
STORY = "story"
ARCHIVE = "archive"

MIN_QUOTES = 5
TARGET_QUOTES = 6
MAX_QUOTES = 8
MIN_CHARS = 8
MIN_VOICE_CJK = 5
MIN_STORY_CJK = 10
MAX_VOICE_CHARS = 90
MAX_STORY_CHARS = 80
DOCTOR_TOKENS = ("Dr.{@nickname}", "{@nickname}", "博士")

TALK, DAILY, BATTLE = "talk", "daily", "battle"
VOICE_QUOTAS: tuple[tuple[str, int], ...] = ((TALK, 4), (DAILY, 2), (BATTLE, 1))
"""Quotes per voice group, in filling order (7 when every group has enough)."""

_GROUP_PREFIXES: tuple[tuple[str, str], ...] = (
    ("信赖提升后交谈", TALK),
    ("晋升后交谈", TALK),
    ("交谈", TALK),
    ("任命助理", DAILY),
    ("干员报到", DAILY),
    ("问候", DAILY),
    ("闲置", DAILY),
    ("观看作战记录", DAILY),
    ("精英化晋升", DAILY),
    ("进驻设施", DAILY),
    ("信赖触摸", DAILY),
    ("编入队伍", BATTLE),
    ("任命队长", BATTLE),
    ("行动", BATTLE),
    ("选中干员", BATTLE),
    ("部署", BATTLE),
    ("作战中", BATTLE),
)
_NEVER = ("标题", "戳一下")


def voice_group(title: str) -> str | None:
    """The group of a voice category; None for categories never quoted (标题, 戳一下)."""
    if title.startswith(_NEVER):
        return None
    if title.endswith("结束行动"):
        return BATTLE
    for prefix, group in _GROUP_PREFIXES:
        if title.startswith(prefix):
            return group
    return DAILY


# -- normalization and the candidate filter ----------------------------------------------


def normalize_ws(text: str) -> str:
    """Collapse every whitespace run (ideographic space and line breaks too) to one space."""
    return " ".join(text.split())


_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


SECOND_PERSON = ("你", "您")


def _to_an_enemy(v: VoiceLine) -> bool:
    """A battle line with 你/您 is said to an enemy (阿's 所有的生命都平等，但你的好像有点例外。);
    quoted in a chat with the Doctor, its 你 is the Doctor."""
    return voice_group(v.title) == BATTLE and any(w in v.text for w in SECOND_PERSON)


_THIRD_PERSON = ("他", "她", "它")


def _points_away(text: str) -> bool:
    """A line about somebody it does not name (他/她/它: 重岳's 可这么重的伤，他将来还要受多少罪):
    her quote shows how she talks, and the model cannot see who that is."""
    return any(w in text for w in _THIRD_PERSON)


def _cjk(text: str) -> int:
    return len(_CJK.findall(text))


def without_doctor(text: str) -> str:
    """``text`` with the Doctor's names taken out (what the line says besides calling him)."""
    for tok in DOCTOR_TOKENS:
        text = text.replace(tok, "")
    return text


def is_candidate(text: str, max_chars: int, min_cjk: int = MIN_VOICE_CJK) -> bool:
    """Rule 1 of the module docstring."""
    t = normalize_ws(text)
    if not MIN_CHARS <= len(t) <= max_chars or _cjk(t) < min_cjk:
        return False
    return len(normalize_ws(without_doctor(t))) >= MIN_CHARS


def spread(n: int, k: int) -> list[int]:
    """k indices spread evenly over range(n), each the middle of its 1/k slice."""
    if k <= 0 or n <= 0:
        return []
    if k >= n:
        return list(range(n))
    return [(2 * i + 1) * n // (2 * k) for i in range(k)]


# -- inputs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VoiceLine:
    word_id: str  # charWordId, e.g. "char_172_svrash_CN_002"
    char_id: str
    title: str  # voiceTitle
    index: int  # voiceIndex
    text: str

    @property
    def source_id(self) -> str:
        return f"{VOICE}:{self.word_id}"


@dataclass(frozen=True, slots=True)
class StoryLine:
    line_id: str
    stage_path: str
    line_no: int
    order: int  # the stage's story order (stages.order_rank; larger = later)
    speaker: str  # the name as written in the script (normalized)
    char_id: str  # the operator the speaker resolves to
    text: str
    stage_label: str = ""  # e.g. "8-1 行动前", for the reviewer

    @property
    def source_id(self) -> str:
        return f"{STORY}:{self.line_id}"


def voice_owner(word: Mapping[str, Any]) -> str | None:
    """The form a voice line belongs to: its ``wordKey`` without a ``#<n>`` voice-set
    suffix, else its ``charId`` (阿米娅's guard form's lines carry the base ``charId`` and
    their own ``wordKey``)."""
    key = word.get("wordKey")
    if isinstance(key, str) and key:
        return key.partition("#")[0]
    cid = word.get("charId")
    return cid if isinstance(cid, str) else None


def voice_index(charword_table: Mapping[str, Any] | None) -> dict[str, list[VoiceLine]]:
    """Every voice line of ``charword_table.json`` (already parsed) by the form it belongs
    to, each list in voiceIndex order: one pass for all operators."""
    words = (charword_table or {}).get("charWords") or {}
    out: dict[str, list[VoiceLine]] = {}
    for key, w in words.items():
        if not isinstance(w, dict):
            continue
        owner, text, idx = voice_owner(w), w.get("voiceText"), w.get("voiceIndex")
        if owner is None or not isinstance(text, str):
            continue
        out.setdefault(owner, []).append(
            VoiceLine(
                str(w.get("charWordId") or key),
                owner,
                str(w.get("voiceTitle") or ""),
                idx if isinstance(idx, int) else 0,
                text,
            )
        )
    for lines in out.values():
        lines.sort(key=lambda v: (v.index, v.word_id))
    return out


def voice_lines_from_table(
    charword_table: Mapping[str, Any] | None, char_id: str
) -> list[VoiceLine]:
    """Her voice lines from ``charword_table.json`` (already parsed), in voiceIndex order."""
    return voice_index(charword_table).get(char_id, [])


# -- the quote and its line in the file --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Quote:
    text: str
    source_id: str  # "voice:<charWordId>" | "story:<line_id>"
    note: str = ""  # voice category or stage, for people

    @property
    def kind(self) -> str:
        return self.source_id.partition(":")[0]

    def line(self) -> str:
        """The ``## 语录`` bullet: ``- 「原文」 —— <source id>（note）``."""
        note = f"（{self.note}）" if self.note else ""
        return f"- 「{normalize_ws(self.text)}」 —— {self.source_id}{note}"

    def said_by(self) -> str:
        """The line as a model reads a quote about her (``## 我·性格``): its words and who
        says them, ``「原文」——赫默`` (the note: the speaker, or the archive section), never
        the source id."""
        who = f"——{self.note}" if self.note else ""
        return f"「{normalize_ws(self.text)}」{who}"


_QUOTE_LINE = re.compile(
    r"^\s*[-*]\s+「(?P<text>.*)」\s*(?:——|--|—)\s*"
    r"(?P<src>(?:voice|story|archive):\S+?)\s*(?:[（(](?P<note>[^）)]*)[）)])?\s*$"
)


def parse_quote_line(line: str) -> Quote | None:
    """A ``## 语录`` bullet back into a :class:`Quote`; None when the line is something else."""
    m = _QUOTE_LINE.match(line)
    if m is None:
        return None
    return Quote(m.group("text"), m.group("src"), (m.group("note") or "").strip())


# -- choosing ----------------------------------------------------------------------------


@dataclass(slots=True)
class QuoteChoice:
    quotes: list[Quote] = field(default_factory=list)
    voice_candidates: int = 0
    story_candidates: int = 0

    @property
    def origin(self) -> str:
        """ "voice", "story", "voice+story" or "none": where the chosen quotes came from."""
        kinds = {q.kind for q in self.quotes}
        if not kinds:
            return "none"
        return "+".join(k for k in (VOICE, STORY) if k in kinds)


def _dedupe(items: Iterable[T], text_of: Callable[[T], str]) -> list[T]:
    seen: set[str] = set()
    out: list[T] = []
    for it in items:
        key = normalize_ws(text_of(it))
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


def choose_voice(
    lines: Sequence[VoiceLine], limit: int = MAX_QUOTES
) -> tuple[list[VoiceLine], int]:
    """Rule 2: (picked voice lines in index order, number of candidates)."""
    cands = _dedupe(
        (
            v
            for v in lines
            if voice_group(v.title)
            and is_candidate(v.text, MAX_VOICE_CHARS)
            and not _to_an_enemy(v)
        ),
        lambda v: v.text,
    )
    groups: dict[str, list[VoiceLine]] = {g: [] for g, _ in VOICE_QUOTAS}
    for v in cands:
        group = voice_group(v.title)
        if group is not None:  # always: the candidate filter above kept grouped lines only
            groups[group].append(v)
    picked: list[VoiceLine] = []
    spare = 0
    for g, quota in VOICE_QUOTAS:
        want = quota + spare
        got = [groups[g][i] for i in spread(len(groups[g]), want)]
        spare = want - len(got)
        picked += got
    if spare:  # a later group ran short: take the earlier groups' unpicked lines
        rest = [v for v in cands if v not in picked]
        picked += rest[:spare]
    picked = picked[:limit]
    picked.sort(key=lambda v: (v.index, v.word_id))
    return picked, len(cands)


def choose_story(lines: Sequence[StoryLine], k: int) -> tuple[list[StoryLine], int]:
    """Rule 3: (k lines spread over her stages in story order, number of candidates)."""
    ordered = sorted(lines, key=lambda s: (s.order, s.stage_path, s.line_no))
    cands = _dedupe(
        (s for s in ordered if is_candidate(s.text, MAX_STORY_CHARS, MIN_STORY_CJK)),
        lambda s: s.text,
    )
    by_stage: dict[str, list[StoryLine]] = {}
    for s in cands:
        by_stage.setdefault(s.stage_path, []).append(s)
    stages = list(by_stage)  # story order (insertion order of the sorted candidates)
    for path in stages:  # best first within a stage: a line that reads on its own first
        by_stage[path].sort(key=lambda s: (goes_on(s.text), _points_away(s.text), -_cjk(s.text),
                                           s.line_no))  # fmt: skip
    picked: list[StoryLine] = []
    rank = 0  # 0: each stage's best line; 1: second best; ...
    while len(picked) < k and len(picked) < len(cands):
        pool = [p for p in stages if len(by_stage[p]) > rank]
        if not pool:
            break
        take = [pool[i] for i in spread(len(pool), k - len(picked))]
        picked += [by_stage[p][rank] for p in take]
        rank += 1
    picked.sort(key=lambda s: (s.order, s.stage_path, s.line_no))
    return picked, len(cands)


def choose_quotes(
    voice: Sequence[VoiceLine],
    story: Sequence[StoryLine] = (),
    *,
    min_quotes: int = MIN_QUOTES,
    target: int = TARGET_QUOTES,
) -> QuoteChoice:
    """The quotes of one operator by the documented rule (module docstring)."""
    vpick, vn = choose_voice(voice)
    quotes = [Quote(normalize_ws(v.text), v.source_id, v.title) for v in vpick]
    sn = 0
    if len(quotes) < min_quotes:
        spick, sn = choose_story(story, target - len(quotes))
        quotes += [Quote(normalize_ws(s.text), s.source_id, s.stage_label) for s in spick]
    return QuoteChoice(quotes, vn, sn)


# -- the verbatim gate -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuoteSource:
    text: str
    owner: str | None = None  # the operator the line belongs to (charId / speaker's id)


@dataclass(frozen=True, slots=True)
class RemovedQuote:
    quote: Quote
    reason: str


@dataclass(slots=True)
class GateResult:
    kept: list[Quote] = field(default_factory=list)
    removed: list[RemovedQuote] = field(default_factory=list)


def voice_sources(lines: Iterable[VoiceLine]) -> dict[str, QuoteSource]:
    return {v.source_id: QuoteSource(v.text, v.char_id) for v in lines}


def story_sources(lines: Iterable[StoryLine]) -> dict[str, QuoteSource]:
    return {s.source_id: QuoteSource(s.text, s.char_id) for s in lines}


def verify_quotes(
    quotes: Iterable[Quote],
    sources: Mapping[str, QuoteSource],
    *,
    owners: set[str] | None = None,
) -> GateResult:
    """Keep a quote only if it occurs (whitespace-normalized) in its cited source, and the
    source belongs to one of ``owners`` when that is given; report the others."""
    out = GateResult()
    for q in quotes:
        src = sources.get(q.source_id)
        needle = normalize_ws(q.text)
        if src is None:
            out.removed.append(RemovedQuote(q, f"cited source {q.source_id} not found"))
        elif not needle:
            out.removed.append(RemovedQuote(q, "empty quote"))
        elif needle not in normalize_ws(src.text):
            out.removed.append(RemovedQuote(q, f"not verbatim in {q.source_id}"))
        elif owners is not None and src.owner not in owners:
            out.removed.append(RemovedQuote(q, f"{q.source_id} is {src.owner or 'nobody'}'s line"))
        else:
            out.kept.append(q)
    return out
