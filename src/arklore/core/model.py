"""The corpus model both story readers produce.

Line numbering is a contract the rest of the project relies on: a stage's lines
are its text elements in order (dialogue, narration, subtitle/sticker/multiline
text, popup speech and one line per Decision); stage commands are never counted. ``line_no``
is the 1-based position in that list and

    line_id = "<stage_path>#<line_no>:<first 8 hex of sha1(speaker + '\\n' + text)>"

so an id pins both the position and the content it was taken from.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

DOCTOR = "博士"
"""Speaker name given to choice lines: the player (the Doctor) picks them."""

OPTION_SEP = ";"
"""How a choice line's text separates the options it offers (the scripts' own
``[Decision(options="a;b")]``)."""

NICKNAME_TOKEN = "Dr.{@nickname}"
"""How the scripts write the player's name; kept verbatim in text."""

DOCTOR_NAMES = frozenset({DOCTOR, "Dr.", "Dr", "Doctor", "刀客塔", NICKNAME_TOKEN, "{@nickname}"})
"""Every way the story and the model write the Doctor (the player); one set for all layers."""


@functools.lru_cache(maxsize=1 << 14)  # speaker names: a small set, asked about per line
def is_doctor(name: str | None) -> bool:
    """True when ``name`` (as written, quotes and a trailing ? allowed) is the Doctor."""
    return normalize_speaker(name)[0] in DOCTOR_NAMES


class LineKind(StrEnum):
    DIALOGUE = "dialogue"
    NARRATION = "narration"
    CHOICE = "choice"
    SUBTITLE = "subtitle"
    STICKER = "sticker"
    MULTILINE = "multiline"


class Source(StrEnum):
    AVG = "avg"  # raw AVG .txt scripts from ArknightsGameData
    ASTR = "astr"  # parsed JSON from ArknightsStoryJson


@dataclass(frozen=True, slots=True)
class Branch:
    """The choice branch a line belongs to: the Decision's line_no and the option values
    whose Predicate block holds the line (``("1", "2")`` for ``references="1;2"``)."""

    decision_line_no: int
    values: tuple[str, ...]

    def key(self) -> str:
        return f"{self.decision_line_no}:{';'.join(self.values)}"

    @classmethod
    def from_key(cls, key: str | None) -> Branch | None:
        if not key:
            return None
        no, _, values = key.partition(":")
        return cls(int(no), tuple(v for v in values.split(";") if v))


LINES_VERSION = 2
"""How a story file becomes :class:`Line` s; the stage digest holds it, so a new version reads
every stage again at the next ingest (2: ``scene``)."""


@dataclass(slots=True)
class Line:
    stage_path: str
    line_no: int
    kind: LineKind
    text: str
    speaker: str = ""  # normalized; "" for narration and speakerless text
    speaker_raw: str | None = None  # as written; None when the element names nobody
    uncertain: bool = False  # the name was written with a trailing ?/？
    figure_art: str | None = None  # the portrait on screen: never the speaker
    branch: Branch | None = None
    addresses_doctor: bool = False  # text contains Dr.{@nickname}
    options: tuple[str, ...] = ()  # choice lines: the options offered
    option_values: tuple[str, ...] = ()  # choice lines: their values
    scene: int = 0  # cuts before it in its stage (sources._commands.SceneTracker)

    @property
    def line_id(self) -> str:
        return make_line_id(self.stage_path, self.line_no, self.speaker, self.text)


@dataclass(slots=True)
class Stage:
    stage_path: str  # "obt/main/level_main_01-01_beg": no extension, same in both sources
    source: Source
    source_path: str  # file path relative to the source root, with its extension
    event_id: str | None = None
    event_name: str | None = None
    entry_type: str | None = None
    story_code: str | None = None
    avg_tag: str | None = None
    story_name: str | None = None
    story_info: str | None = None
    story_sort: int | None = None
    start_time: int | None = None  # the event's startTime (unix seconds)
    content_hash: str = ""  # sha1 of the file bytes: unchanged file -> skipped on ingest
    lines: list[Line] = field(default_factory=list)
    #: what the reader found malformed and read around ("line 12: Decision with ..."); the
    #: readers keep only data they can trust from such commands (see sources/_commands.py)
    parse_warnings: list[str] = field(default_factory=list)


def content_hash(speaker: str, text: str) -> str:
    """First 8 hex digits of sha1(speaker + '\\n' + text)."""
    return hashlib.sha1(f"{speaker}\n{text}".encode()).hexdigest()[:8]


def make_line_id(stage_path: str, line_no: int, speaker: str, text: str) -> str:
    return f"{stage_path}#{line_no}:{content_hash(speaker, text)}"


def parse_line_id(line_id: str) -> tuple[str, int, str]:
    """Split a line_id into (stage_path, line_no, hash); raises ValueError if malformed."""
    stage_path, sep, rest = line_id.rpartition("#")
    no, sep2, digest = rest.partition(":")
    if not sep or not sep2 or not no.isdigit() or len(digest) != 8:
        raise ValueError(f"not a line id: {line_id!r}")
    return stage_path, int(no), digest


_QUOTE_PAIRS = (("“", "”"), ('"', '"'), ("「", "」"), ("『", "』"), ("‘", "’"), ("'", "'"))
_SPACES = " \t\u3000\u00a0\r\n"


def normalize_speaker(raw: str | None) -> tuple[str, bool]:
    """Normalize a speaker name as written: trim half/full-width spaces, strip one pair of
    surrounding quotes, strip trailing ?/？ (returned as ``uncertain``)."""
    if raw is None:
        return "", False
    name = raw.strip(_SPACES)
    changed = True
    while changed and name:
        changed = False
        for left, right in _QUOTE_PAIRS:
            if len(name) >= 2 and name.startswith(left) and name.endswith(right):
                name = name[len(left) : -len(right)].strip(_SPACES)
                changed = True
    uncertain = False
    stripped = name
    while stripped and stripped[-1] in "?？":
        stripped = stripped[:-1].rstrip(_SPACES)
        uncertain = True
    # A name made only of question marks ("？？？", a speaker not yet revealed) is still a
    # speaker, not narration: keep it, flagged uncertain.
    return (stripped or name), uncertain


def normalize_text(text: str) -> str:
    """Trim half/full-width whitespace around a line's text; the inside is kept verbatim."""
    return text.strip(_SPACES)
