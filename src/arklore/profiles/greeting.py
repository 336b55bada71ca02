"""Her own first words to the Doctor, for a card's ``first_mes`` and ``alternate_greetings``:
a greeting she really says.

The rule (:func:`choose_greeting`, deterministic), first that gives a line:

1. her voice lines (``charword_table``, her form's own lines first, then her base form's) in
   the order of :data:`GREETING_TITLES` — the login greeting 问候, then 交谈 1…, 干员报到,
   任命助理 — the first that exists and is not empty;
2. her first story line, in story order, that speaks to the Doctor (names ``博士`` or the
   player's placeholder ``{@nickname}``);
3. her first line in her own operator record (干员密录);
4. her first story line anywhere.

In steps 2-4 a line that names somebody else (``names_other``) or is shorter than
:data:`MIN_OPENING_CHARS` is passed over while another qualifies: an opening that names a
person fires that person's lorebook entry on every first message. Never a line that is not
hers. :func:`alternate_greetings` gives her other greeting-like voice lines
(:data:`ALTERNATE_TITLES`), the chosen one left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arklore.profiles.quotes import DOCTOR_TOKENS, StoryLine, VoiceLine

GREETING_TITLES: tuple[str, ...] = (
    "问候",
    "交谈1",
    "交谈",
    "干员报到",
    "任命助理",
    "信赖提升后交谈1",
)
"""Voice categories tried in order; a title matches itself or, for 交谈, any 交谈 line."""
ALTERNATE_TITLES: tuple[str, ...] = (
    "问候",
    "任命助理",
    "干员报到",
    "交谈",
    "晋升后交谈",
    "信赖提升后交谈",
)
"""Voice categories (prefixes) that open a conversation: a card's alternate greetings."""
MIN_OPENING_CHARS = 6
"""A story line with fewer letters than this (``......嗯。``: punctuation does not count)
opens nothing while a longer one is there."""
_NOT_LETTER = re.compile(r"[\W_]")

VOICE, TO_DOCTOR, RECORD, STORY = "voice", "to_doctor", "record", "story"


@dataclass(frozen=True)
class Greeting:
    text: str
    source_id: str  # voice:<charWordId> | story:<line_id>
    note: str  # the voice category, or the stage
    kind: str = VOICE  # which step of the rule gave it: VOICE, TO_DOCTOR, RECORD, STORY

    def to_dict(self) -> dict[str, str]:
        return {
            "text": self.text,
            "source_id": self.source_id,
            "note": self.note,
            "kind": self.kind,
        }


def _nobody(_: str) -> bool:
    return False


def choose_greeting(
    voices: Sequence[Sequence[VoiceLine]],
    story: Sequence[StoryLine],
    *,
    own_record: Callable[[StoryLine], bool] = lambda s: False,
    names_other: Callable[[str], bool] = _nobody,
) -> Greeting | None:
    """Her greeting (see the module doc): ``voices`` her forms' voice lines, best form first;
    ``story`` her story lines in story order; ``own_record``: is a line in her own operator
    record; ``names_other``: does a text name somebody other than her."""
    for title in GREETING_TITLES:
        for lines in voices:
            for v in lines:
                if v.text.strip() and (v.title == title or v.title.startswith(title)):
                    return Greeting(v.text.strip(), v.source_id, v.title, VOICE)
    steps: tuple[tuple[str, Callable[[StoryLine], bool]], ...] = (
        (TO_DOCTOR, lambda s: any(tok in s.text for tok in DOCTOR_TOKENS)),
        (RECORD, own_record),
        (STORY, lambda s: True),
    )
    for kind, wanted in steps:
        found = [s for s in story if s.text.strip() and wanted(s)]
        best = next(
            (s for s in found if len(_NOT_LETTER.sub("", s.text)) >= MIN_OPENING_CHARS
             and not names_other(s.text)),
            found[0] if found else None,
        )  # fmt: skip
        if best is not None:
            return Greeting(
                best.text.strip(), best.source_id, best.stage_label or best.stage_path, kind
            )
    return None


def alternate_greetings(
    voices: Sequence[Sequence[VoiceLine]], chosen: Greeting | None
) -> list[Greeting]:
    """Her other voice lines that open a conversation (:data:`ALTERNATE_TITLES`, in that
    order), of her best form that has voice lines (another form's words are not hers in this
    form), each text once, ``chosen`` left out."""
    lines = next((ls for ls in voices if ls), [])
    seen = {chosen.text} if chosen is not None else set()
    out: list[Greeting] = []
    for prefix in ALTERNATE_TITLES:
        for v in lines:
            text = v.text.strip()
            if text and text not in seen and v.title.startswith(prefix):
                seen.add(text)
                out.append(Greeting(text, v.source_id, v.title, VOICE))
    return out


__all__ = [
    "ALTERNATE_TITLES",
    "GREETING_TITLES",
    "MIN_OPENING_CHARS",
    "RECORD",
    "STORY",
    "TO_DOCTOR",
    "VOICE",
    "Greeting",
    "alternate_greetings",
    "choose_greeting",
]
