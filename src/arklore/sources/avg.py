"""Reader for the raw AVG story scripts (``<gamedata>/zh_CN/gamedata/story/**.txt``).

What counts as a line was decided by matching ArknightsStoryJson (ASTR) on the stages
both sources hold, since ASTR records what the game shows:

- ``[name="X"]  text`` (also ``[name="X", avatarId=..., isAvatarRight=...]``) is dialogue;
  a bare line is narration; an attribute-only tag without ``name``
  (``[isAvatarRight="TRUE"]text``) is narration too. An empty or blank name is narration.
- ``[Decision(options="a;b", values="1;2")]`` is one choice line spoken by the Doctor.
- ``[multiline(name=...)]text`` is a multiline line; ``[Subtitle(text=...)]`` and
  ``[Sticker(text=...)]`` are lines only when they carry text.
- ``[Narration]``, ``[Title]``, ``[Dialog(...)]`` and ``[VoiceWithin(...)]`` followed by
  text (detective/chat files that ASTR does not hold) are speakerless narration.
- ``[PopupDialog(dialogHead="$avatar_nearl", ...)]text`` (speech in battles, tutorials and
  activity mini-games; ASTR holds none of these stages) is a dialogue line whose speaker is
  the avatar id as written, flagged ``uncertain``: the script names a portrait, not a person.
  The reader does not resolve it (sources know no registry); the names layer maps avatar ids
  to operators at alias rebuild (``names/avatars.py``). A popup without ``dialogHead`` is
  narration. Its ``figure_art`` is None: the Character portraits are not what it shows.
- Every other tag is a stage command, and text after it on the same line is dropped, as
  ASTR does: ``[HEADER(...)] title``, ``[Blocker(...)]d``, ``[charslot(...)]。``,
  ``[Div] Part.02``, ``[Tutorial(...)]`` hints (gameplay help, not story).
- Command names and attribute keys are case-insensitive; attribute values may be quoted
  (any of ``;,=]`` inside) or bare; spaces around ``=`` are allowed. Inside quotes only
  ``\\"`` is an escape: ``\\n`` in a Sticker/Subtitle text stays as written, as in ASTR.
- A line ending in ``\\`` continues on the next line (tutorial tags span lines). Lines
  starting with ``//`` are comments. Empty lines are nothing. BOM and CRLF are accepted.
- A tag whose quote never closes, or whose ``]`` is missing on a ``name``/text tag, makes
  the file malformed. A missing ``]`` after a complete ``Command(...)`` is tolerated
  (``[spellsticker(...)`` in main 17-17), with a parse warning.
- Parse warnings (``Stage.parse_warnings``, ``line N: what``): a tag that is neither a
  ``Command(...)`` nor readable attributes (``[Dialog(head="x", ]]]] [[[ ...``, ``[]``,
  ``[[character(...)]]``) is dropped with the text after it, as a command's text is; an
  attribute tag naming no speaker attribute (``[Delay=2]``, ``[fadetime=1.5]text``) changes
  nothing (its text stays narration) but is reported; malformed Decision/Predicate commands:
  see ``_commands``. The data kept is what can be trusted: no line and no branch is made
  from a tag that cannot be read.
- Choices and branches: see ``_commands.BranchTracker``; a bare ``[Predicate]`` ends the
  options (ASTR fills in every value there).
- Portraits (ASTR's rules, 99.3% agreement): only dialogue lines get ``figure_art``.
  ``Character(name)`` shows name; with ``name2`` the focus picks one (``focus=2`` ->
  name2) and no focus keeps the previous portrait. ``charslot(slot, name, focus)`` fills a
  slot; ``focus`` picks a slot (``"none"``/unknown slot: nobody); a name without focus
  takes over only from the same slot or an empty stage. ``[Dialog]`` clears it.
- Where ASTR is wrong we differ on purpose: it shows ``[]`` and ``[[character(...)]]`` as
  narration, cuts ``[Subtitle(text="", ...)]`` at the first quote, and reads
  ``[name=""]  ...“X”...`` with the name taken from the text.
- Paths: ``stage_path`` is lower-cased (the raw tree is all lower case; ASTR writes
  ``obt/Roguelike/RO1``), ``[uc]info`` (stage summaries) and ``avg_segment_report.txt``
  (a tooling report, not a script) are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from arklore.core.errors import MalformedSourceError
from arklore.core.model import Line, Source, Stage
from arklore.sources._commands import (
    Element,
    build_lines,
    parse_source,
    read_source,
    stage_path_for,
    stage_path_of,
    story_files,
)
from arklore.sources.speakers import stage_digest

# stage_path_for and stage_path_of are re-exported: each reader module offers the same calls
# (iter_*_files or *_files, stage_path_for or stage_path_of, read_*_stage) to corpus ingest
# and crosscheck.
__all__ = [
    "avg_files",
    "iter_avg_files",
    "parse_attrs",
    "parse_avg",
    "read_avg_stage",
    "stage_path_for",
    "stage_path_of",
]

SKIP_DIRS = frozenset({"[uc]info"})
SKIP_FILES = frozenset({"avg_segment_report.txt"})
TEXT_COMMANDS = frozenset({"narration", "title", "dialog", "voicewithin"})

_READ_ATTRS = frozenset(
    {
        "character",
        "charslot",
        "decision",
        "predicate",
        "subtitle",
        "sticker",
        "multiline",
        "popupdialog",
        "background",
        "blocker",
    }
)
_QUOTED = r'"(?:\\"|[^"])*"'
_SIMPLE_NAME = re.compile(r'\[\s*name\s*=\s*"([^"\\]*)"\s*\](.*)', re.I | re.S)
_TAG = re.compile(rf'\[((?:{_QUOTED}|[^"\]])*)\]', re.S)
_UNCLOSED_QUOTE = re.compile(rf'\[(?:{_QUOTED}|[^"\]])*"(?:\\"|[^"])*$', re.S)
_CALL = re.compile(r"\s*([A-Za-z_][\w.]*)\s*(?:\((.*)\))?\s*", re.S)
_ATTR = re.compile(
    r'\s*(?:([A-Za-z_][\w.]*)\s*=\s*(?:"((?:\\"|[^"])*)"|([^,]*))|[^,]*)\s*(?:,|$)', re.S
)


def iter_avg_files(story_root: Path) -> Iterator[Path]:
    """Every story script under ``story_root``, sorted, without the non-script files."""
    return (story_root / rel for rel in avg_files(story_root))


def avg_files(story_root: Path) -> list[str]:
    """:func:`iter_avg_files` as paths under ``story_root`` (``obt/main/x.txt``)."""
    return [
        rel for rel in story_files(story_root, ".txt")
        if rel.split("/", 1)[0] not in SKIP_DIRS and rel.rsplit("/", 1)[-1] not in SKIP_FILES
    ]  # fmt: skip


def read_avg_stage(story_root: Path, file: Path, data: bytes | None = None) -> Stage:
    """Read and parse one script; metadata is filled later from the excel tables."""
    rel, data = read_source(story_root, file, data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MalformedSourceError(rel, f"not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    stage_path = stage_path_for(story_root, file)
    lines, warnings = parse_source(parse_avg, text, stage_path, rel)
    return Stage(
        stage_path=stage_path,
        source=Source.AVG,
        source_path=rel,
        content_hash=stage_digest(data, stage_path),
        lines=lines,
        parse_warnings=warnings,
    )


def parse_avg(text: str, stage_path: str, *, warnings: list[str] | None = None) -> list[Line]:
    """The lines of one script (pure); raises MalformedSourceError on a broken tag.
    ``warnings`` receives what was malformed but could be read around (see above)."""
    return build_lines(
        _elements(text, stage_path, warnings), stage_path, track_figures=True, warnings=warnings
    )


def _physical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, stripped line), joining ``\\``-continued lines."""
    pending, start = "", 0
    for number, raw in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        line = raw.strip()
        if line.endswith("\\") and (pending or line.startswith("[")):
            pending, start = pending + line[:-1] + " ", start or number
            continue
        if pending:
            line, number, pending, start = pending + line, start, "", 0
        yield number, line.strip()
    if pending:
        yield start, pending.strip()


def _elements(text: str, stage_path: str, warnings: list[str] | None = None) -> Iterator[Element]:
    problems: list[str] = []
    for number, line in _physical_lines(text):
        if not line or line.startswith("//"):
            continue
        if not line.startswith("["):
            yield Element("name", {"content": line})
            continue
        try:
            element = _tag_element(line, problems)
        except ValueError as exc:
            raise MalformedSourceError(stage_path, f"line {number}: {exc}") from None
        if problems:
            if warnings is not None:
                warnings.extend(f"line {number}: {p}" for p in problems)
            problems.clear()
        if element is not None:
            element.where = f"line {number}"
            yield element


#: attributes of a ``[name="X", avatarId=..., isAvatarRight=...]`` tag
_SPEECH_ATTRS = frozenset({"name", "avatarid", "isavatarright"})


def _tag_element(line: str, problems: list[str] | None = None) -> Element | None:
    """One ``[...]rest`` line as an element; ValueError when the tag is broken, and what is
    malformed but readable around appended to ``problems``."""
    simple = _SIMPLE_NAME.match(line)
    if simple:  # the common case, [name="X"]  text
        return Element("name", {"name": simple.group(1), "content": simple.group(2)})
    tag = _TAG.match(line)
    if tag is None and _UNCLOSED_QUOTE.match(line):
        raise ValueError(f"unterminated quote in {line[:40]!r}")
    inner = tag.group(1) if tag else line[1:]
    rest = line[tag.end() :] if tag else ""
    call = _CALL.fullmatch(inner)
    if call and (call.group(2) is not None or "=" not in inner):
        if tag is None and call.group(2) is None:
            raise ValueError(f"unterminated tag {line[:40]!r}")
        if tag is None and problems is not None:
            problems.append(f"tag not closed by ']': {line[:40]!r}")
        prop = call.group(1).lower()
        if prop in TEXT_COMMANDS and rest.strip():
            return Element("name", {"content": rest})
        # only the commands the line builder reads need their attributes parsed
        attrs = parse_attrs(call.group(2) or "") if prop in _READ_ATTRS else {}
        if prop in ("multiline", "popupdialog"):
            attrs["content"] = rest
        return Element(prop, attrs)
    if tag is None:
        raise ValueError(f"unterminated tag {line[:40]!r}")
    attrs = parse_attrs(inner)  # [name="X", avatarId=...]: a dialogue line
    if not attrs or _has_strays(inner):  # "[]", "[[character(...)]]", a broken call
        if problems is not None:
            problems.append(f"unreadable tag, dropped with its text: {line[: tag.end()][:40]!r}")
        return None
    if problems is not None and _SPEECH_ATTRS.isdisjoint(attrs):
        problems.append(f"tag neither a command nor a name tag: {line[: tag.end()][:40]!r}")
    attrs["content"] = rest
    return Element("name", attrs)


def _has_strays(src: str) -> bool:
    """Does an attribute list hold words that are not ``key=value`` (a broken command)?"""
    return any(m.group(1) is None and m.group(0).strip(" \t,") for m in _ATTR.finditer(src))


def parse_attrs(src: str) -> dict[str, str]:
    """``key="v", k2 = 3`` -> ``{"key": "v", "k2": "3"}`` (keys lower-cased; inside quotes
    only ``\\"`` is an escape, so ``\\n`` stays as written, as ASTR keeps it)."""
    attrs: dict[str, str] = {}
    for match in _ATTR.finditer(src):
        key, quoted, bare = match.groups()
        if key is None:
            continue  # a stray word, e.g. the leftovers of "[[character(...)]]"
        value = quoted.replace('\\"', '"') if quoted is not None else (bare or "").strip()
        attrs[key.lower()] = value
    return attrs
