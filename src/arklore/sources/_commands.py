"""What both story readers share: one element model and one way to turn elements into lines.

Each reader turns its file into a list of :class:`Element` shaped like an ASTR element
(``prop`` lower-cased, attribute keys lower-cased, dialogue/narration as prop ``name``
with the text in ``content``). :func:`build_lines` then decides what is a line, numbers
it, and tracks the choice branch and, for the raw scripts, the portrait on screen.
Sharing this step is what makes both readers give the same lines for the same stage.

Parse warnings (``build_lines(..., warnings=[...])``, kept on ``Stage.parse_warnings``):
malformed choice commands are reported, each naming where it stands (``line 12`` in a raw
script, ``storyList[12]`` in ASTR), and only the data that can be trusted is kept:

- a Decision with no options, or with as many options as values not matching: the choice
  line is kept as written (text, options, values); only an option that has a value opens a
  branch, and a value without an option opens none;
- a Predicate naming a value no Decision before it offers: the value is dropped from the
  block's branch; a Predicate left naming nothing puts its block back on the path of the
  innermost Decision (never on an invented ``<decision>:<value>`` branch); one before any
  Decision changes nothing.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from arklore.core.errors import MalformedSourceError
from arklore.core.model import (
    DOCTOR,
    NICKNAME_TOKEN,
    OPTION_SEP,
    Branch,
    Line,
    LineKind,
    normalize_speaker,
    normalize_text,
)
from arklore.sources.speakers import speakers

T = TypeVar("T")


def stage_path_for(story_root: Path, file: Path) -> str:
    """The key both sources share: no extension, lower-cased (``obt/main/level_main_01-01_beg``)."""
    return stage_path_of(file.relative_to(story_root).as_posix())


def stage_path_of(rel: str) -> str:
    """:func:`stage_path_for` of the file at ``rel`` under the story root (``obt/main/x.txt``)."""
    return posixpath.splitext(rel)[0].lower()


def story_files(story_root: Path, suffix: str) -> list[str]:
    """The path under ``story_root`` (``obt/main/x.txt``) of every file whose name ends with
    ``suffix``, in any folder below it (symbolic links to folders are not followed), sorted as
    their parts sort. Strings, not paths: an ingest with nothing changed lists every file."""
    root = str(story_root)
    out: list[str] = []
    for folder, _, names in os.walk(root):
        under = folder[len(root) + 1 :].replace(os.sep, "/")
        prefix = f"{under}/" if under else ""
        out += [prefix + name for name in names if name.endswith(suffix)]
    out.sort(key=lambda rel: rel.split("/"))
    return out


def read_source(story_root: Path, file: Path, data: bytes | None) -> tuple[str, bytes]:
    """(the file's path under the story root, its bytes); callers that already read the file
    (to hash it) pass its bytes."""
    rel = file.relative_to(story_root).as_posix()
    return rel, file.read_bytes() if data is None else data


def parse_source(
    parse: Callable[..., list[Line]], content: T, stage_path: str, rel: str
) -> tuple[list[Line], list[str]]:
    """(lines, parse warnings) of one stage; a MalformedSourceError names the file, not just
    the stage."""
    warnings: list[str] = []
    try:
        lines = parse(content, stage_path, warnings=warnings)
    except MalformedSourceError as exc:
        raise MalformedSourceError(rel, exc.reason) from None
    return lines, warnings


@dataclass(slots=True)
class Element:
    """One command or text element of a stage, in ASTR's shape."""

    prop: str  # lower-cased command name; "name" for dialogue and narration
    attrs: dict[str, Any] = field(default_factory=dict)  # keys lower-cased
    figure_art: str | None = None  # ASTR only: the portrait ASTR recorded for the line
    where: str = ""  # where it stands in its file, for warnings: "line 12", "storyList[12]"


def attr_str(attrs: dict[str, Any], key: str) -> str | None:
    """An attribute as text (ASTR stores numbers as floats: 1.0 -> "1")."""
    value = attrs.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def split_list(value: str | None) -> tuple[str, ...]:
    """``"a; b;c"`` -> ``("a", "b", "c")``; empty items dropped."""
    if not value:
        return ()
    return tuple(item.strip() for item in value.split(";") if item.strip())


def _aligned(value: str | None) -> tuple[str, ...]:
    """``"a;;b"`` -> ``("a", "", "b")``: empty items kept so options line up with values."""
    return (
        tuple(item.strip() for item in value.split(OPTION_SEP)) if value and value.strip() else ()
    )


def decision_lists(attrs: dict[str, Any]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(text, options, values) of a Decision: ``options="a;b", values="1;2"``, or the numbered
    form of the sandbox scripts ``option1="a", value1="1.1", option2=...`` (text ``a;b``)."""
    text = attr_str(attrs, "options")
    raw_values = attr_str(attrs, "values")
    if text is None and raw_values is None and ("option1" in attrs or "value1" in attrs):
        n = 1
        while f"option{n + 1}" in attrs or f"value{n + 1}" in attrs:
            n += 1
        options = tuple((attr_str(attrs, f"option{i}") or "").strip() for i in range(1, n + 1))
        values = tuple((attr_str(attrs, f"value{i}") or "").strip() for i in range(1, n + 1))
        return OPTION_SEP.join(options), options, values
    return text or "", _aligned(text), _aligned(raw_values)


#: the kinds of parse warning, by the words each message starts with (see :func:`warning_kind`)
WARNING_KINDS: dict[str, str] = {
    "Decision without options": "decision_no_options",
    "Decision with ": "decision_options_values_mismatch",
    "Predicate references ": "predicate_unknown_option",
    "unreadable tag": "unreadable_tag",
    "tag neither a command nor a name tag": "attribute_tag_without_speaker",
    "tag not closed by": "tag_not_closed",
}


def warning_kind(warning: str) -> str:
    """The kind of a parse warning (``line 12: Decision with ...`` -> ``decision_...``)."""
    for message in (warning, warning.partition(": ")[2]):  # with or without its location
        for start, kind in WARNING_KINDS.items():
            if message.startswith(start):
                return kind
    return "other"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class FigureTracker:
    """The portrait in focus, from `Character(name, name2, focus)` and `charslot(slot, name,
    focus)` commands; follows how ASTR fills ``figure_art`` (see avg.py's docstring)."""

    def __init__(self) -> None:
        self.current: str | None = None
        self._slot: str | None = None  # the charslot slot ``current`` comes from
        self._slots: dict[str, str] = {}

    def on_command(self, prop: str, attrs: dict[str, Any]) -> None:
        if prop == "character":
            self._on_character(attrs)
        elif prop == "charslot":
            self._on_charslot(attrs)
        elif prop == "dialog":
            self._set(None)

    def _set(self, name: str | None, slot: str | None = None) -> None:
        self.current, self._slot = name, slot

    def _on_character(self, attrs: dict[str, Any]) -> None:
        name, name2 = attr_str(attrs, "name"), attr_str(attrs, "name2")
        focus = _number(attrs.get("focus"))
        if name2 and focus is None:
            return  # two portraits, none in focus: ASTR keeps the previous one
        self._set(name2 if focus == 2 and name2 else name)

    def _on_charslot(self, attrs: dict[str, Any]) -> None:
        if not attrs:  # clears the stage; ASTR keeps the portrait in focus
            self._slots.clear()
            return
        slot = (attr_str(attrs, "slot") or "m").lower()
        name = attr_str(attrs, "name")
        focus = attr_str(attrs, "focus")
        if name:
            self._slots[slot] = name
            if self.current is None or self._slot in (None, slot):
                self._set(name, slot)
        elif not focus and not ({"action", "posto", "posfrom"} & attrs.keys()):
            self._slots.pop(slot, None)
            self._set(None)
        if focus:  # "l"/"m"/"r"; "none" or "n" (no such slot): nobody in focus
            self._set(self._slots.get(focus.lower()), focus.lower())


class SceneTracker:
    """Which scene of the stage a line is in: a cut comes with a new background picture or a
    fade to black (``Background`` with another ``image``, ``Blocker`` to opaque black); a run
    of such commands with no line between them is one cut. A CG (``Image``), a flash of
    colour or the same background shown again is not a cut."""

    def __init__(self) -> None:
        self.scene = 0
        self._background: str | None = None
        self._cut = False

    def on_command(self, prop: str, attrs: dict[str, Any]) -> None:
        if prop == "background":
            image = attr_str(attrs, "image") or None
            if image != self._background:
                self._background, self._cut = image, True
        elif prop == "blocker" and _to_black(attrs):
            self._cut = True

    def next_line(self, first: bool) -> int:
        """The scene of the next line (``first``: the stage has no line yet)."""
        if self._cut and not first:
            self.scene += 1
        self._cut = False
        return self.scene


def _to_black(attrs: dict[str, Any]) -> bool:
    """A ``Blocker`` that fades the screen to opaque black (colour channels default to 0)."""
    a = _number(attrs.get("a"))
    return (
        a is not None and a >= 1 and all((_number(attrs.get(c)) or 0) == 0 for c in ("r", "g", "b"))
    )


@dataclass(slots=True)
class _Frame:
    line_no: int
    values: frozenset[str]
    refs: tuple[str, ...] | None = None  # the Predicate block we are in, if any
    closed: bool = False  # a Predicate named every value: back on the enclosing path
    # values of decisions nested under this one -> the options of this one they sit under
    nested: dict[str, frozenset[str]] = field(default_factory=dict)

    def reached(self, refs: frozenset[str]) -> frozenset[str]:
        """The options of this decision that a Predicate naming ``refs`` shows its block
        to, directly or through the values of decisions nested under an option."""
        out = set(refs & self.values)
        for value in refs:
            out |= self.nested.get(value, frozenset())
        return frozenset(out)


class BranchTracker:
    """Which Predicate block the next line sits in.

    The engine shows a Predicate block when the last choice made is in its references, so
    a Predicate belongs to the innermost open Decision whose values it names (the values
    of a nested decision count for the option they sit under). A Predicate reaching every
    option of its decision closes it: the lines after it are on the enclosing path again
    (a later Predicate naming its values reopens it, as the engine still remembers the
    choice). A new Decision reusing the values of the innermost one ends that one first.
    """

    def __init__(self) -> None:
        self._stack: list[_Frame] = []
        #: decisions ended by a Decision reusing their values inside one of their blocks, with
        #: their depth, latest last: a later Predicate naming another option goes back to them
        self._ended: list[tuple[int, _Frame]] = []
        self._offered: set[str] = set()  # every value a Decision of the stage has offered

    @property
    def current(self) -> Branch | None:
        for frame in reversed(self._stack):
            if frame.refs is not None and not frame.closed:
                return Branch(frame.line_no, frame.refs)
        return None

    def on_decision(self, line_no: int, values: tuple[str, ...]) -> Branch | None:
        """Open a decision; returns the branch the Decision line itself belongs to."""
        value_set = frozenset(values)
        self._offered |= value_set
        while self._stack and (self._stack[-1].closed or self._stack[-1].values & value_set):
            frame = self._stack.pop()
            if frame.refs is not None and not frame.closed:  # the new one is in its block
                self._ended.append((len(self._stack), frame))
        branch = self.current
        for frame in self._stack:
            if frame.refs is not None and not frame.closed:
                under = frozenset(frame.refs) & frame.values
                for value in value_set:
                    frame.nested[value] = under
        self._stack.append(_Frame(line_no, value_set))
        return branch

    def on_predicate(self, references: tuple[str, ...]) -> str | None:
        """Enter a Predicate block; returns a warning when it names values no Decision offers.

        A Predicate naming no open decision goes back to the latest decision that a Decision
        reusing its values ended, if that one offers them (a one-option Decision inside an
        option's block, then the Predicate of the next option); else its block is put back
        on the innermost decision's own path rather than on a branch no option opens.
        """
        if not references:  # a bare [Predicate] ends the options (ASTR reads it so too)
            if not self._stack:
                return None
            references = tuple(sorted(self._stack[-1].values))
        named = ";".join(references)
        if not self._stack:
            return f"Predicate references {named} before any Decision: no branch"
        unknown = [r for r in references if r not in self._offered]
        references = tuple(r for r in references if r in self._offered)
        refs = frozenset(references)
        depth = self._depth(refs)
        if depth is None and refs:
            depth = self._reopen(refs)
        if depth is None:  # names no option at all: back on the innermost decision's path
            self._stack[-1].refs, self._stack[-1].closed = None, True
            return f"Predicate references {named}, which no open Decision offers: no branch"
        warning = None
        if unknown:
            warning = (
                f"Predicate references {';'.join(unknown)}, which no Decision offers: "
                "left out of its branch"
            )
        del self._stack[depth + 1 :]
        frame = self._stack[depth]
        if frame.reached(refs) >= frame.values:
            frame.closed, frame.refs = True, None
            # the block may also be where the enclosing decisions meet again
            for outer in reversed(self._stack[:depth]):
                if outer.closed or outer.refs is None or not outer.reached(refs) >= outer.values:
                    break
                outer.closed, outer.refs = True, None
        else:
            frame.refs, frame.closed = references, False
        return warning

    def _depth(self, refs: frozenset[str]) -> int | None:
        """The innermost open decision a Predicate naming ``refs`` belongs to."""
        for d in range(len(self._stack) - 1, -1, -1):
            if self._stack[d].reached(refs):
                return d
        return None

    def _reopen(self, refs: frozenset[str]) -> int | None:
        """Put back the latest ended decision that offers ``refs``; its depth, or None."""
        for i in range(len(self._ended) - 1, -1, -1):
            depth, frame = self._ended[i]
            if frame.reached(refs) and depth <= len(self._stack):
                del self._ended[i]
                del self._stack[depth:]
                self._stack.append(frame)
                return depth
        return None


def build_lines(
    elements: Iterable[Element],
    stage_path: str,
    *,
    track_figures: bool,
    warnings: list[str] | None = None,
) -> list[Line]:
    """Number the text elements of a stage and attach speaker, branch and portrait.

    ``track_figures``: derive ``figure_art`` from the portrait commands (raw scripts)
    instead of taking the element's own ``figure_art`` (ASTR). ``warnings``: a list that
    receives the malformed choice commands (see the module docstring). The speaker table
    (:mod:`arklore.sources.speakers`) decides who speaks where the label says otherwise: a
    choice in a stage whose player is somebody else is that person's dialogue line, and a
    label several people use is told apart by the picture on screen.
    """
    lines: list[Line] = []
    branches = BranchTracker()
    figures = FigureTracker() if track_figures else None
    scenes = SceneTracker()
    table = speakers()
    player = table.player(stage_path)  # who the choices speak as, when not the Doctor

    def warn(element: Element, message: str) -> None:
        if warnings is not None:
            warnings.append(f"{element.where}: {message}" if element.where else message)

    for element in elements:
        prop, attrs = element.prop, element.attrs
        scenes.on_command(prop, attrs)
        if prop == "predicate":
            problem = branches.on_predicate(split_list(attr_str(attrs, "references")))
            if problem:
                warn(element, problem)
            continue
        if prop == "decision":
            line_no = len(lines) + 1
            text, options, values = decision_lists(attrs)
            if not options:
                warn(element, "Decision without options")
            elif len(options) != len(values):
                warn(
                    element,
                    f"Decision with {_plural(len(options), 'option')} and "
                    f"{_plural(len(values), 'value')}: only options with a value open a branch",
                )
            opened = tuple(v for v, _option in zip(values, options, strict=False) if v)
            branch = branches.on_decision(line_no, opened)
            text = normalize_text(text)
            if player is not None and options:  # the player is somebody else here
                said = normalize_text(_joined(options))
                lines.append(
                    Line(stage_path, line_no, LineKind.DIALOGUE, said, speaker=player,
                         speaker_raw=None, branch=branch,
                         addresses_doctor=NICKNAME_TOKEN in said,
                         scene=scenes.next_line(not lines))
                )  # fmt: skip
                continue
            lines.append(
                Line(
                    stage_path,
                    line_no,
                    LineKind.CHOICE,
                    text,
                    speaker=DOCTOR,
                    speaker_raw=None,
                    branch=branch,
                    addresses_doctor=NICKNAME_TOKEN in text,
                    options=options,
                    option_values=values,
                    scene=scenes.next_line(not lines),
                )
            )
            continue
        if figures is not None:
            figures.on_command(prop, attrs)
        made = text_of(prop, attrs)
        if made is None:
            continue
        kind, text, speaker_raw = made
        speaker, uncertain = normalize_speaker(speaker_raw)
        figure = None  # ASTR gives a portrait to named lines only
        if prop == "popupdialog":  # named by an avatar id: a portrait, not a written name
            uncertain = uncertain or bool(speaker)
        elif kind is LineKind.DIALOGUE:
            figure = figures.current if figures is not None else element.figure_art
            speaker = table.by_picture(speaker, figure) or speaker
        lines.append(
            Line(
                stage_path,
                len(lines) + 1,
                kind,
                text,
                speaker=speaker,
                speaker_raw=speaker_raw,
                uncertain=uncertain,
                figure_art=figure,
                branch=branches.current,
                addresses_doctor=NICKNAME_TOKEN in text,
                scene=scenes.next_line(not lines),
            )
        )
    return lines


def _joined(options: Sequence[str]) -> str:
    """A stage's options as one line, where they continue one another: a dash that ends one
    option and opens the next is written once (……数十载——莱塔尼亚……)."""
    out = ""
    for option in options:
        if out.endswith("——") and option.startswith("——"):
            option = option[2:]
        out += option
    return out


def text_of(prop: str, attrs: dict[str, Any]) -> tuple[LineKind, str, str | None] | None:
    """(kind, text, raw speaker) when the element shows text, None for a stage command."""
    if prop == "name":
        return _speech(attrs, "name")
    if prop == "multiline":
        text = normalize_text(attr_str(attrs, "content") or "")
        return (LineKind.MULTILINE, text, attr_str(attrs, "name")) if text else None
    if prop == "popupdialog":  # speech in battle/tutorial popups: the avatar id as speaker
        return _speech(attrs, "dialoghead")
    if prop in ("subtitle", "sticker"):
        text = normalize_text(attr_str(attrs, "text") or "")
        kind = LineKind.SUBTITLE if prop == "subtitle" else LineKind.STICKER
        return (kind, text, None) if text else None
    return None


def _speech(attrs: dict[str, Any], speaker_key: str) -> tuple[LineKind, str, str | None] | None:
    """Dialogue when ``speaker_key`` names someone, narration when it is absent or blank."""
    text = normalize_text(attr_str(attrs, "content") or "")
    raw = attr_str(attrs, speaker_key)
    if raw is not None and not raw.strip(" \t\u3000"):
        raw = None
    kind = LineKind.DIALOGUE if raw is not None else LineKind.NARRATION
    return (kind, text, raw) if text else None
