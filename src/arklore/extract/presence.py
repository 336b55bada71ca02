"""Who is present around some lines of a stage: the one implementation every check uses
(relation gate 3, curated relations at graph build, story-event actors).

A person is *present* in a run of lines when she

* **speaks** one of them (her name, or a name that resolves to the same operator);
* is **addressed** by name in one of them (:mod:`arklore.core.vocatives`, the word kept only
  when it is on the known-speaker whitelist, so fragments like ``好了，`` never count);
* is the Doctor and a line is a **choice** (the player picks it) or a spoken line that
  addresses ``Dr.{@nickname}``;
* **wrote or receives a letter** the line is part of (:func:`find_letter`): a run of
  narration lines opening with a salutation to a known name (``亲爱的X：``) and closed by a
  signature naming a known person (``——Y``, ``你的Y``, ``Y敬上``, a line holding only ``Y``).
  In a letter 我 is its writer and 你 its addressee, so the two are present to each other
  there, nobody else.

Narration never makes anyone present by itself: a narrator's word is not an interaction (a
letter's lines are narration the story shows as written by one person to another).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from arklore.core.model import NICKNAME_TOKEN, Line, LineKind, is_doctor, normalize_speaker
from arklore.core.vocatives import addressed, strip_honorific

WINDOW = 2
"""Lines either side of an evidence line in which both parties of a relation must be present."""

_SALUTATION = re.compile(r"^\s*(?:我?亲爱的|敬爱的|致|给)?\s*([^\s：:，,。！？!?]{1,12})\s*[：:]")
_SALUTATION_LINE = re.compile(_SALUTATION.pattern + r"\s*$")
"""A line holding only a salutation, to a known name or not: a letter begins there."""
_LETTER_LOOKBACK = 12
_LETTER_SPAN = 40
"""The most lines a letter runs over, salutation to signature (the longest real one: 24)."""
_DASHES = re.compile(r"^\s*[—―-]*\s*")
_SIGNATURE_TAIL = re.compile(r"(?:\s+[\d.\-/年月日]+)?\s*(?:敬上|谨上|上|笔)?\s*[。.！!…]*\s*$")
_NOT_A_SIGNATURE = re.compile(r"[，,。！？!?：:；;“”\"《》]")
_SIGNATURE_MAX = 16

SameFn = Callable[[str, str], bool]
ResolveFn = Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class Presence:
    ok: bool
    reason: str  # both_speak | vocative | doctor_present | letter | narration_only | apart
    at: int | None = None  # the evidence line_no whose window showed them together


def is_narration(line: Line) -> bool:
    """Text nobody speaks (narration, subtitles, speakerless multiline)."""
    return line.kind is not LineKind.CHOICE and not line.speaker


def known_name(word: str, speakers: set[str]) -> str | None:
    """The whitelisted form of a candidate name (quotes/trailing ? and one honorific
    stripped when needed), or None."""
    return strip_honorific(normalize_speaker(word)[0], speakers.__contains__)


_NORMALIZED_AWAY = frozenset(" \t\u3000\u00a0\r\n\"'“”‘’「」『』?？")
"""Characters :func:`normalize_speaker` may strip from a word."""


def vocatives(text: str, speakers: set[str]) -> list[str]:
    """Names a line addresses (:func:`arklore.core.vocatives.addressed`), kept only when they
    are known speakers: the position rule alone also matches fragments like ``好了，``."""

    def lookup(word: str) -> str | None:
        # known_name() only ever accepts a prefix of the (normalized) word: when the word has
        # nothing to normalize and no prefix of it is whitelisted, skip the honorific search
        if _NORMALIZED_AWAY.isdisjoint(word) and not any(
            word[:k] in speakers for k in range(1, len(word) + 1)
        ):
            return None
        return known_name(word, speakers)

    return addressed(text, lookup)


def _known(word: str, speakers: set[str], resolve: ResolveFn) -> str | None:
    """``word`` as a known name: whitelisted (:func:`known_name`), or resolved to an operator;
    a full name ``X·Y`` also by its given name ``X``."""
    word = normalize_speaker(word)[0]
    if not word:
        return None
    name = known_name(word, speakers)
    if name is None and resolve(word) is not None:
        name = word
    if name is None and "·" in word:
        return _known(word.split("·", 1)[0], speakers, resolve)
    return name


def salutation(text: str, speakers: set[str], resolve: ResolveFn) -> str | None:
    """The known name a letter's salutation (``亲爱的X：``, ``致X：``, ``X：``) addresses."""
    match = _SALUTATION.match(text)
    return _known(match.group(1), speakers, resolve) if match else None


def signature(text: str, speakers: set[str], resolve: ResolveFn) -> str | None:
    """The known person a letter's closing line names as its writer: ``——X`` (a date may
    follow), ``你的X``, ``故友X敬上``, or a line holding only ``X``; None for any line that
    reads as a sentence."""
    body = _SIGNATURE_TAIL.sub("", _DASHES.sub("", text.replace("\\n", "\n")))
    body = body.strip()
    if not body or len(body) > _SIGNATURE_MAX or _NOT_A_SIGNATURE.search(body):
        return None
    if (name := _known(body, speakers, resolve)) is not None:
        return name
    # the name closes the line: 你的X, 故友X (the longest known tail of two characters or more)
    for k in range(1, len(body) - 1):
        if (name := _known(body[k:], speakers, resolve)) is not None:
            return name
    return None


@dataclass(frozen=True, slots=True)
class Letter:
    """A letter in the story: narration lines ``start`` (the salutation) to ``end`` (the
    signature). Its 我 is ``writer``, its 你 is ``addressee``."""

    start: int
    end: int
    addressee: str
    writer: str


def find_letter(
    line: Line, by_no: dict[int, Line], speakers: set[str], resolve: ResolveFn
) -> Letter | None:
    """The letter ``line`` is part of: the nearest salutation at or before it and the first
    signature after that salutation, at or after the line, all in one run of narration lines
    (at most :data:`_LETTER_SPAN` long) with no other salutation between, the writer not the
    addressee; else None."""
    if not is_narration(line):
        return None
    start = addressee = None
    for no in range(line.line_no, line.line_no - _LETTER_SPAN, -1):
        prev = by_no.get(no)
        if prev is None or not is_narration(prev):
            return None
        if (addressee := salutation(prev.text, speakers, resolve)) is not None:
            start = no
            break
        if _SALUTATION_LINE.match(prev.text):
            return None  # a letter to someone not known by that name (阁下：)
    if start is None or addressee is None:
        return None
    for no in range(start + 1, start + _LETTER_SPAN):
        nxt = by_no.get(no)
        if nxt is None or not is_narration(nxt) or _SALUTATION_LINE.match(nxt.text):
            return None  # the letter ends unsigned (another one may begin)
        writer = signature(nxt.text, speakers, resolve)
        if writer is not None:
            if no < line.line_no or writer == addressee:
                return None  # the line follows the letter; a name, not a signature
            return Letter(start, no, addressee, writer)
    return None


def letter_addressee(
    line: Line, by_no: dict[int, Line], speakers: set[str], resolve: ResolveFn
) -> str | None:
    """For narration evidence: the name a letter is addressed to (``亲爱的X：``/``X：``) on
    this line or earlier in the same run of narration lines, if X is a known name."""
    if not is_narration(line):
        return None
    for no in range(line.line_no, line.line_no - _LETTER_LOOKBACK, -1):
        prev = by_no.get(no)
        if prev is None or not is_narration(prev):
            return None
        if (name := salutation(prev.text, speakers, resolve)) is not None:
            return name
    return None


def default_same_person(resolve: ResolveFn) -> SameFn:
    """Same person if the normalized names are equal or both resolve to the same id."""

    def same(a: str, b: str) -> bool:
        if a == b:
            return True
        ia = resolve(a)
        return ia is not None and ia == resolve(b)

    return same


def is_party(party: str, name: str, same: SameFn) -> bool:
    """Is ``name`` (a speaker or an addressed name) the person ``party``?"""
    if not name:
        return False
    if is_doctor(party):
        return is_doctor(name)
    name = normalize_speaker(name)[0]
    return party == name or same(party, name)


def doctor_signal(line: Line) -> str | None:
    """How a line shows the Doctor present when no line is spoken under her name: ``choice``
    (the player picks it) or ``nickname`` (a spoken line addressing Dr.{@nickname}); None."""
    if line.kind is LineKind.CHOICE:
        return "choice"
    if (line.addresses_doctor or NICKNAME_TOKEN in line.text) and not is_narration(line):
        return "nickname"
    return None


def speaks_in(party: str, lines: Iterable[Line], same: SameFn) -> bool:
    """The party speaks one of the lines; the Doctor also by a choice or a spoken line that
    addresses Dr.{@nickname}."""
    doctor = is_doctor(party)
    for line in lines:
        if is_party(party, line.speaker, same):
            return True
        if doctor and doctor_signal(line) is not None:
            return True
    return False


def addressed_in(
    party: str,
    lines: Iterable[Line],
    speakers: set[str],
    same: SameFn,
    *,
    by: str | None = None,
) -> bool:
    """Some line (spoken by ``by``, when given) calls the party by name."""
    return any(
        (by is None or is_party(by, line.speaker, same))
        and any(is_party(party, name, same) for name in vocatives(line.text, speakers))
        for line in lines
        if line.speaker
    )


def presence_in(party: str, lines: list[Line], speakers: set[str], same: SameFn) -> str | None:
    """Why the party is present in ``lines`` (``speaks`` | ``doctor`` | ``addressed``), or None."""
    if speaks_in(party, lines, same):
        return "doctor" if is_doctor(party) else "speaks"
    if addressed_in(party, lines, speakers, same):
        return "addressed"
    return None


PRESENCE_RANK = ("speaks", "choice", "nickname", "addressed")
"""How a party can be present in some lines, strongest first (see :func:`presence_evidence`)."""


def presence_evidence(
    party: str,
    lines: Iterable[Line],
    speakers: set[str],
    same: SameFn,
    *,
    addressed_cache: dict[int, list[str]] | None = None,
) -> list[tuple[Line, str]]:
    """Every line that shows the party present, with how (``speaks`` | ``choice`` |
    ``nickname`` | ``addressed``): the same rules as :func:`presence_in`, line by line, for
    checks that need the lines themselves (story-event actors cite them as evidence).
    ``addressed_cache`` (line_no -> vocatives) saves recomputing the vocatives of a line for
    every party."""
    doctor = is_doctor(party)
    out: list[tuple[Line, str]] = []
    for line in lines:
        if doctor and (signal := doctor_signal(line)) is not None:
            out.append((line, signal))  # a choice line is spoken by 博士: say it is a choice
            continue
        if is_party(party, line.speaker, same):
            out.append((line, "speaks"))
            continue
        if not line.speaker:
            continue
        if addressed_cache is not None:
            names = addressed_cache.get(line.line_no)
            if names is None:
                names = addressed_cache[line.line_no] = vocatives(line.text, speakers)
        else:
            names = vocatives(line.text, speakers)
        if any(is_party(party, name, same) for name in names):
            out.append((line, "addressed"))
    return out


def strongest(evidence: Iterable[tuple[Line, str]]) -> str | None:
    """The strongest way of being present among ``evidence`` (:data:`PRESENCE_RANK`)."""
    hows = {how for _, how in evidence}
    return next((how for how in PRESENCE_RANK if how in hows), None)


def window(by_no: dict[int, Line], line_no: int, size: int = WINDOW) -> list[Line]:
    """The lines within ``size`` of ``line_no`` that exist."""
    return [by_no[n] for n in range(line_no - size, line_no + size + 1) if n in by_no]


def check_presence(
    subject: str,
    obj: str,
    evidence_lines: list[Line],
    by_no: dict[int, Line],
    *,
    speakers: set[str],
    same_person: SameFn,
    resolve: ResolveFn | None = None,
) -> Presence:
    """Are both parties present within ±WINDOW lines of ANY evidence line (both speak, or one
    calls the other by name), or is an evidence line part of a letter one of them wrote to
    the other (:func:`find_letter`, read when ``resolve`` is given)? Other narration never
    shows presence."""
    s, o = normalize_speaker(subject)[0], normalize_speaker(obj)[0]
    if resolve is not None:
        for ev in evidence_lines:
            letter = find_letter(ev, by_no, speakers, resolve)
            if letter is not None and letter_pair(letter, s, o, same_person):
                return Presence(True, "letter", ev.line_no)
    if all(is_narration(line) for line in evidence_lines):
        return Presence(False, "narration_only")
    for ev in evidence_lines:
        lines = window(by_no, ev.line_no)
        if speaks_in(s, lines, same_person) and speaks_in(o, lines, same_person):
            reason = "doctor_present" if is_doctor(s) or is_doctor(o) else "both_speak"
            return Presence(True, reason, ev.line_no)
        if addressed_in(o, lines, speakers, same_person, by=s) or addressed_in(
            s, lines, speakers, same_person, by=o
        ):
            return Presence(True, "vocative", ev.line_no)
    return Presence(False, "apart")


def letter_pair(letter: Letter, a: str, b: str, same: SameFn) -> bool:
    """Are ``a`` and ``b`` the letter's writer and addressee, in either order?"""
    w, r = letter.writer, letter.addressee
    return (is_party(a, w, same) and is_party(b, r, same)) or (
        is_party(a, r, same) and is_party(b, w, same)
    )
