"""Her view of the Doctor with no model: her own lines to and about the Doctor
(``## 我·关于博士``, task C's rule).

The chat is always with the Doctor, so how she stands with the Doctor is worth a few lines
every turn; her own words say it better than any summary, and the game wrote many of them
for exactly that: the trust-unlocked voice lines are what she tells the Doctor once she
trusts them. Sources, each cited like a quote (:mod:`arklore.profiles.quotes`):

* **voice lines** (``voice:<charWordId>``), when trust-unlocked (``unlockType`` FAVOR:
  信赖提升后交谈, spoken to the Doctor whether or not they name them) or when they name the
  Doctor (:data:`DOCTOR_WORDS`); 标题 and 戳一下 never;
* **story lines** (``story:<line_id>``): her dialogue lines that *address* the Doctor -- they
  call him (``博士`` or the script's player placeholder ``Dr.{@nickname}``) on his own between
  pauses (``是的，博士，……``) or in address position (:func:`arklore.core.vocatives.addressed`:
  ``博士，……``, ``……，博士？``); the placeholder inside a sentence is not a call (陈's
  除了你和Dr.{@nickname}，其他人…… is said to 阿米娅) -- and, ranked below them, lines that
  *speak of* the Doctor (any of :data:`DOCTOR_WORDS`) in a stage where the corpus shows the
  Doctor present (a choice, a line spoken as 博士, a placeholder line:
  :meth:`arklore.corpus.store.Store.doctor_stages`), so that 博士 is the player and not
  somebody's title (赫默博士), and with no 你/您 in it: such a line speaks to somebody else
  (凯尔希 to 嘉维尔 既然你主动提出…付出一次博士…的假期, 歌蕾蒂娅 to 斯卡蒂 你留下来，保护博士的安全),
  and a chat reads every 你 in the section as the Doctor (:func:`speaks_of_doctor`). On the
  real corpus the placeholder alone finds lines for 36 operators, the vocative for 121,
  speaking of the Doctor for 42 more: most of the story calls the player 博士.

**The rule** (:func:`choose_doctor_lines`, deterministic):

1. Candidates pass the quote filter (:func:`arklore.profiles.quotes.is_candidate`: length,
   Chinese characters, not mostly the Doctor's name), voice lines up to
   :data:`MAX_VOICE_CHARS` (every trust line of the 2021 table fits), story lines up to
   :data:`~arklore.profiles.quotes.MAX_STORY_CHARS`; both with at least
   :data:`~arklore.profiles.quotes.MIN_VOICE_CJK` Chinese characters (a short line to the
   Doctor still says how she speaks to them: 来得刚好，Dr.{@nickname}。), a story line with
   :data:`STORY_MIN_SUBSTANCE` characters of substance besides his names (no bare greeting).
   Repeated texts count once.
2. The most telling first, until :data:`SECTION_TOKENS` (counted on the lines as a chat
   receives them) or the caps are reached: the trust lines, deepest trust first,
   interleaved with her story lines (one per stage, ranked by :func:`story_score`: lines that
   address the Doctor first, then those speaking of herself, to the Doctor, with the
   placeholder, with a word of how she stands with him (:data:`arklore.core.text.STANCE`),
   then length), then the other voice lines that name the Doctor (talk categories before
   daily ones before battle ones, longer first). A line that does not fit is skipped and the
   next one tried.
3. The section lists them in unlock order with the trust-unlocked lines last: the voice
   lines available from the start and after promotion (voice index order), then the story
   lines (story order), then the trust lines (by the trust they need). A chat that must cut
   drops from the first.

Every line passes the verbatim gate (:func:`arklore.profiles.quotes.verify_quotes`) before it
is stored, at assembly, and (for a hand-edited tier-B file) again when a chat reads it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from arklore.core.model import DOCTOR_NAMES
from arklore.core.text import STANCE, substance
from arklore.core.tokens import count_tokens
from arklore.core.vocatives import HONORIFICS, PAUSE, SENTENCE_END, addressed
from arklore.profiles.quotes import (
    BATTLE,
    MAX_STORY_CHARS,
    MIN_VOICE_CJK,
    SECOND_PERSON,
    TALK,
    Quote,
    StoryLine,
    VoiceLine,
    is_candidate,
    normalize_ws,
    voice_group,
    without_doctor,
)

DOCTOR_WORDS: tuple[str, ...] = ("{@nickname}", "博士", "Dr.", "刀客塔", "Doctor")
"""A voice line that contains one of these names the Doctor."""
PLACEHOLDER = "{@nickname}"

STORY_MIN_SUBSTANCE = 4
"""Distinct characters of substance (:func:`arklore.core.text.substance`) a story line needs
besides the Doctor's names: 「......博士，阿米娅。」 or 「博士，你那边......」 is a greeting or a
line cut off, not how she stands with him; 「呜呜呜，头好痛，博士。」 says something."""
MAX_VOICE_CHARS = 110
MAX_TRUST = 3
MAX_STORY = 3
MAX_OTHER_VOICE = 2
SECTION_TOKENS = 220
"""Tokens of the section's lines at most (the doctor block's default budget is 300: room for
its header and her relation to the Doctor)."""

TRUST_NOTE = re.compile(r"〔信赖≥(\d+)〕")
"""How a line's note says it is trust-unlocked (the voice table's FAVOR unlock)."""

_FIRST_PERSON = ("我",)


def names_doctor(text: str) -> bool:
    """Does ``text`` name the Doctor (any of :data:`DOCTOR_WORDS`)?"""
    return any(w in text for w in DOCTOR_WORDS)


def _doctor_word(word: str) -> str | None:
    return word if word in DOCTOR_NAMES else None


_PAUSE = re.escape("".join(sorted(PAUSE | SENTENCE_END | set("；;")))) + r"\s"
"""What may stand either side of a call: the vocative rule's pauses and sentence ends."""
_ANY_NAME = frozenset(n.lower() for n in DOCTOR_NAMES)
"""A line that calls the Doctor holds one of his names (as the call is case-blind): a cheap test
before the rules."""
_NAME = r"(?:Dr\.\{@nickname\}|(?<!Dr\.)\{@nickname\}(?:博士)?|博士|刀客塔)"
_ALONE = f"(?:^|(?<=[{_PAUSE}「（(）)])){_NAME}(?=[{_PAUSE}」）)]|$)"
_WHO_HE_IS = f"[你您]就?是[^{_PAUSE}]*{_NAME}"
_CALL = re.compile(f"{_ALONE}|{_WHO_HE_IS}", re.IGNORECASE)  # W writes {@Nickname}
"""The Doctor's name standing alone between pauses: a call (``那么走吧，Dr.{@nickname}，别让…``,
``交给你了，{@nickname}博士。``), where the vocative rule knows only a sentence's first and
last words; or telling him who he is (``你就是罗德岛的那位Dr.{@nickname}？``)."""


def addresses_doctor(text: str) -> bool:
    """A story line that speaks to the Doctor: one of the Doctor's names (the player
    placeholder included) called on its own or in address position. The placeholder alone is
    not enough: 「除了你和Dr.{@nickname}，其他人……」 speaks to somebody else of the Doctor."""
    low = text.lower()
    if not any(w in low for w in _ANY_NAME):  # most story lines: no need for the rules
        return False
    return bool(_CALL.search(text)) or bool(addressed(text, _doctor_word))


_PHRASE = re.compile(
    f"(?:^|(?<=[{_PAUSE}「（(）)]))([^{_PAUSE}「」（）()]{{1,8}})(?=[{_PAUSE}」）)]|$)"
)
_CLAUSE = re.compile("[我你您他她它是的了个这那]")
"""A phrase with one of these is a clause (我是医生), not somebody called (凯尔希医生)."""


def calls_another(text: str) -> bool:
    """Somebody besides the Doctor is called by a title on his own between pauses (煌's
    说得好，博士！长官，你当然需要我们…, 夜莺's 您好，砾小姐，博士。): a 你/您 in the line may
    be that person, not the Doctor."""
    for m in _PHRASE.finditer(text):
        word = m.group(1)
        if word.endswith(HONORIFICS) and not names_doctor(word) and not _CLAUSE.search(word):
            return True
    return False


def speaks_of_doctor(text: str) -> bool:
    """A story line that speaks *of* the Doctor to somebody else: it names the Doctor, does not
    address the Doctor, and has no 你/您 (which would be the one it does address)."""
    return (
        names_doctor(text)
        and not addresses_doctor(text)
        and not any(w in text for w in SECOND_PERSON)
    )


def story_score(line: StoryLine) -> tuple[bool, int, int]:
    """How telling a story line about the Doctor is: (it addresses the Doctor, she speaks of
    herself + to someone + the placeholder + a word of :data:`~arklore.core.text.STANCE`,
    Chinese characters). Higher is better."""
    t = line.text
    score = (
        any(w in t for w in _FIRST_PERSON)
        + any(w in t for w in SECOND_PERSON)
        + (PLACEHOLDER in t)
        + any(w in t for w in STANCE)
    )
    return addresses_doctor(t), score, _cjk(t)


_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


def _cjk(text: str) -> int:
    return len(_CJK.findall(text))


def trust_of(quote: Quote) -> int | None:
    """The trust a line's note says it needs (``〔信赖≥100〕``), None when not trust-unlocked."""
    m = TRUST_NOTE.search(quote.note)
    return int(m.group(1)) if m else None


def quote_tokens(text: str) -> int:
    """Tokens of one line as a chat receives it (``- 「…」``)."""
    return count_tokens(f"- 「{normalize_ws(text)}」")


@dataclass(slots=True)
class DoctorChoice:
    quotes: list[Quote] = field(default_factory=list)  # in section order
    voice_candidates: int = 0
    story_candidates: int = 0

    @property
    def origin(self) -> str:
        kinds = {q.kind for q in self.quotes}
        return "+".join(k for k in ("voice", "story") if k in kinds) or "none"


_GROUP_RANK = {TALK: 0, BATTLE: 2}


def _voice_quote(v: VoiceLine, unlock: tuple[str, int]) -> Quote:
    label, _ = unlock
    note = v.title + (label if label != "〔初始〕" else "")
    return Quote(normalize_ws(v.text), v.source_id, note)


def choose_doctor_lines(
    voice: Sequence[VoiceLine],
    unlocks: Mapping[str, tuple[str, int]],
    story: Sequence[StoryLine] = (),
    *,
    doctor_stages: Collection[str] = frozenset(),
    budget: int = SECTION_TOKENS,
) -> DoctorChoice:
    """Her lines to and about the Doctor by the rule of the module docstring
    (``doctor_stages``: the stages where the corpus shows the Doctor present)."""
    seen: set[str] = set()
    trust: list[tuple[int, VoiceLine]] = []
    other: list[VoiceLine] = []
    for v in voice:
        text = normalize_ws(v.text)
        group = voice_group(v.title)
        if group is None or text in seen or not is_candidate(text, MAX_VOICE_CHARS, MIN_VOICE_CJK):
            continue
        label, rank = unlocks.get(v.word_id, ("〔初始〕", 0))
        if label.startswith("〔信赖"):
            trust.append((rank, v))
        elif names_doctor(text):
            other.append(v)
        else:
            continue
        seen.add(text)
    by_stage: dict[str, StoryLine] = {}
    n_story = 0
    for s in story:
        text = normalize_ws(s.text)
        if text in seen or not (
            addresses_doctor(s.text) or (s.stage_path in doctor_stages and speaks_of_doctor(s.text))
        ):
            continue
        if calls_another(text) and any(w in text for w in SECOND_PERSON):
            continue  # her 你 may be the other one she calls
        if not is_candidate(text, MAX_STORY_CHARS, MIN_VOICE_CJK) or (
            substance(without_doctor(text)) < STORY_MIN_SUBSTANCE
        ):
            continue
        seen.add(text)
        n_story += 1
        best = by_stage.get(s.stage_path)
        if best is None or _story_key(s) < _story_key(best):
            by_stage[s.stage_path] = s
    stories = sorted(by_stage.values(), key=_story_key)

    trust.sort(key=lambda x: (-x[0], x[1].index, x[1].word_id))  # deepest first
    other.sort(key=lambda v: (_GROUP_RANK.get(voice_group(v.title) or "", 1), -_cjk(v.text),
                              v.index, v.word_id))  # fmt: skip
    order: list[VoiceLine | StoryLine] = []
    for i in range(max(MAX_TRUST, MAX_STORY)):
        order += [trust[i][1]] if i < min(MAX_TRUST, len(trust)) else []
        order += [stories[i]] if i < min(MAX_STORY, len(stories)) else []
    order += other[:MAX_OTHER_VOICE]

    picked: list[VoiceLine | StoryLine] = []
    used = 0
    for line in order:
        cost = quote_tokens(line.text)
        if used + cost <= budget:
            picked.append(line)
            used += cost

    def unlock(v: VoiceLine) -> tuple[str, int]:
        return unlocks.get(v.word_id, ("〔初始〕", 0))

    trust_ids = {v.word_id for _, v in trust}
    voice_picked = [x for x in picked if isinstance(x, VoiceLine)]
    firsts = sorted((v for v in voice_picked if v.word_id not in trust_ids),
                    key=lambda v: (v.index, v.word_id))  # fmt: skip
    lasts = sorted((v for v in voice_picked if v.word_id in trust_ids),
                   key=lambda v: (unlock(v)[1], v.index, v.word_id))  # fmt: skip
    middle = sorted((s for s in picked if isinstance(s, StoryLine)),
                    key=lambda s: (s.order, s.stage_path, s.line_no))  # fmt: skip
    quotes = [_voice_quote(v, unlock(v)) for v in firsts]
    quotes += [Quote(normalize_ws(s.text), s.source_id, s.stage_label) for s in middle]
    quotes += [_voice_quote(v, unlock(v)) for v in lasts]
    return DoctorChoice(quotes, len(trust) + len(other), n_story)


def _story_key(s: StoryLine) -> tuple[int, int, int, int, str, int]:
    addressed_, score, cjk = story_score(s)
    return (-addressed_, -score, -cjk, s.order, s.stage_path, s.line_no)
