"""Her own first words to the Doctor, for a card's ``first_mes``: a greeting she really says.

The rule (:func:`choose_greeting`, deterministic): her voice lines (``charword_table``, her
form's own lines first, then her base form's) in the order of :data:`GREETING_TITLES` — the
login greeting 问候, then 交谈 1…, 干员报到, 任命助理 — the first that exists and is not empty;
without voice lines, her first story line in story order that speaks to the Doctor (names
``博士`` or the player's placeholder ``{@nickname}``). Never a line that is not hers.
"""

from __future__ import annotations

from collections.abc import Sequence
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


@dataclass(frozen=True)
class Greeting:
    text: str
    source_id: str  # voice:<charWordId> | story:<line_id>
    note: str  # the voice category, or the stage

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "source_id": self.source_id, "note": self.note}


def choose_greeting(
    voices: Sequence[Sequence[VoiceLine]], story: Sequence[StoryLine]
) -> Greeting | None:
    """Her greeting (see the module doc): ``voices`` her forms' voice lines, best form first;
    ``story`` her story lines in story order."""
    for title in GREETING_TITLES:
        for lines in voices:
            for v in lines:
                if v.text.strip() and (v.title == title or v.title.startswith(title)):
                    return Greeting(v.text.strip(), v.source_id, v.title)
    for s in story:
        if any(tok in s.text for tok in DOCTOR_TOKENS):
            return Greeting(s.text.strip(), s.source_id, s.stage_label or s.stage_path)
    return None


__all__ = ["GREETING_TITLES", "Greeting", "choose_greeting"]
