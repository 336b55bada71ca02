"""Story order: where every stage happens in Terra's chronology, and the story point a chat is
set at (nothing later reaches it).

The release order the tables give (:mod:`arklore.corpus.order`) puts prequels, operator
records and side stories in the wrong place. The story order is built from:

* the **main chapters**, in sequence (``[[main]]`` of the curated file);
* the **curated placements** (``data/story_order.toml``, written by hand, each with its reason
  and the line or stage where the story dates itself): a side story happens *after* one or
  more points (main chapters or other stories); several after one point keep release order;
* **operator records**: backstory (known at every point) unless the file places one later;
* the **fallback**: a story the file does not place comes after the last main chapter, in
  release order, flagged ``fallback`` -- a chat set at a point before the end never sees it
  (a spoiler costs more than a memory a chat lacks). ``arklore timeline --check`` lists them.

A stage belongs to the story group of its event (any source's metadata), else of the main
chapter its path names (a level's in-battle dialogue: at its chapter's end), else of its
``activities/<id>/`` folder, else to the fallback.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from importlib import resources
from pathlib import Path
from typing import Any

from arklore.core.blocks import stage_of
from arklore.core.errors import InputFileError, StoryPointError
from arklore.corpus.order import main_chapter

MAIN, CURATED, BACKSTORY, FALLBACK = "main", "curated", "backstory", "fallback"
HOW: tuple[str, ...] = (MAIN, CURATED, BACKSTORY, FALLBACK)
"""How a stage's place in the story is known, firmest first."""

_RECORD_GROUP = re.compile(r"^story_.+_set_\d+$")
_ACTIVITY = re.compile(r"^activities/([^/]+)/")
_IN_LEVEL = re.compile(r"^obt/(?:tutorial|guide)/level/main_(\d+)-")
"""A main level's in-battle dialogue (``obt/tutorial/level/main_08-17``): its chapter."""
_KEYS = {"group", "after", "before", "reason", "ref", "confidence"}

Key = tuple[int, ...]


def default_order_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "story_order.toml"))


@dataclass(frozen=True, slots=True)
class Placement:
    """One story group placed by hand: it happens after every point of ``after``."""

    group: str
    after: tuple[str, ...]
    before: tuple[str, ...] = ()
    reason: str = ""
    ref: str = ""
    confidence: str = ""


@dataclass(frozen=True)
class CuratedOrder:
    """The curated file, read and checked (:func:`load_order`)."""

    mains: tuple[str, ...]
    places: tuple[Placement, ...]
    records_default: str = BACKSTORY
    path: str = ""


def load_order(path: Path | None = None) -> CuratedOrder:
    """Read the curated story order; InputFileError naming the file and the entry when it is
    malformed, places a group twice or names a point nowhere defined."""
    path = path or default_order_path()
    p = str(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise InputFileError(p, "file", str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise InputFileError(p, "toml", str(e)) from None
    mains = tuple(str(m.get("id", "")) for m in doc.get("main", []) if isinstance(m, dict))
    if not mains or not all(mains):
        raise InputFileError(p, "[[main]]", "every main chapter needs an id")
    places: list[Placement] = []
    seen = set(mains)
    for table in ("place", "record"):
        for i, rec in enumerate(doc.get(table, []), 1):
            where = f"[[{table}]] #{i}"
            if not isinstance(rec, dict) or not isinstance(rec.get("group"), str):
                raise InputFileError(p, where, "needs a group id")
            unknown = set(rec) - _KEYS
            if unknown:
                raise InputFileError(p, where, f"unknown keys {sorted(unknown)}")
            group = rec["group"]
            if group in seen:
                raise InputFileError(p, where, f"{group} is placed twice")
            seen.add(group)
            places.append(
                Placement(
                    group,
                    _points(rec.get("after"), p, where),
                    _points(rec.get("before"), p, where),
                    str(rec.get("reason", "")),
                    str(rec.get("ref", "")),
                    str(rec.get("confidence", "")),
                )
            )
    default = str((doc.get("records") or {}).get("default", BACKSTORY))
    return CuratedOrder(mains, tuple(places), default, p)


def _points(value: Any, path: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise InputFileError(path, where, "after/before: a point id or a list of them")
    return tuple(items)


@dataclass(frozen=True, slots=True)
class StageRow:
    """What the order needs of a stored stage."""

    stage_path: str
    event_id: str | None  # any source's
    release: int  # the release-order rank (:func:`arklore.corpus.order.order_rank`)


@dataclass(frozen=True, slots=True)
class StoryPoint:
    """Where a chat is set: nothing placed after ``position`` reaches it."""

    query: str  # as the user said it
    label: str  # the story group's name (and code) it resolved to
    group: str
    position: int
    stages: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "label": self.label, "group": self.group,
                "position": self.position}  # fmt: skip


@dataclass(frozen=True)
class StoryView:
    """The story as a chat set at ``point`` knows it: what every layer asks of a stage or a
    line before it hands it to the turn."""

    order: StoryOrder
    point: StoryPoint

    def knows(self, stage_path: str) -> bool:
        return self.order.allows(self.point, stage_path)

    def knows_lines(self, line_ids: Iterable[str]) -> bool:
        """Are all these lines (line ids or ``story:`` source ids) at or before the point?"""
        return all(self.knows(stage_of(x.removeprefix("story:"))) for x in line_ids)

    def to_dict(self) -> dict[str, Any]:
        return self.point.to_dict()


@dataclass
class StoryOrder:
    """Every stage's position in the story (see the module docstring)."""

    positions: dict[str, int]
    groups: dict[str, str]  # stage -> its story group
    how: dict[str, str]  # group -> MAIN | CURATED | BACKSTORY | FALLBACK
    placements: dict[str, Placement] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # group -> its name
    release: dict[str, int] = field(default_factory=dict)  # group -> its place by release
    _starts: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def position(self, stage_path: str) -> int | None:
        return self.positions.get(stage_path)

    def allows(self, point: StoryPoint | None, stage_path: str) -> bool:
        """Does a chat set at ``point`` know ``stage_path``? (no point: everything; a stage
        the order does not hold: no, when a point is set)."""
        if point is None:
            return True
        at = self.positions.get(stage_path)
        return at is not None and at <= point.position

    def moment(self, stage_path: str, *, before_its_story: bool = False) -> int:
        """A sort key, in story order, for something told in ``stage_path`` (after every
        stage when the order does not hold it); ``before_its_story``: the text dates it
        before its story began (a flashback, :func:`arklore.events.memories.told_as_past`),
        so it sorts with its story group's first stage."""
        at = self.positions.get(stage_path)
        if at is None:
            return len(self.positions)
        if before_its_story:
            if self._starts is None:
                self._starts = self._first_positions()
            return self._starts.get(self.groups.get(stage_path, ""), at)
        return at

    def fallback_groups(self) -> list[str]:
        """The story groups placed by release order only, in story order."""
        first = self._first_positions()
        return sorted((g for g, h in self.how.items() if h == FALLBACK), key=first.__getitem__)

    def _first_positions(self) -> dict[str, int]:
        first: dict[str, int] = {}
        for stage, group in self.groups.items():
            at = self.positions[stage]
            first[group] = min(first.get(group, at), at)
        return first

    def group_sequence(self) -> list[str]:
        """Every story group, in story order."""
        first = self._first_positions()
        return sorted(first, key=first.__getitem__)

    def rows(self) -> list[dict[str, Any]]:
        """Every story group in story order, with its place by release beside it, how its
        place is known and why (what ``arklore timeline --order`` shows)."""
        out = []
        for i, group in enumerate(self.group_sequence(), 1):
            p = self.placements.get(group)
            out.append({
                "story": i, "release": self.release.get(group, 0) + 1, "group": group,
                "name": self.names.get(group, group), "how": self.how[group],
                "after": list(p.after) if p else [], "reason": p.reason if p else "",
                "confidence": p.confidence if p else "",
            })  # fmt: skip
        return out

    def counts(self) -> dict[str, int]:
        """Story groups per way they are placed (:data:`HOW`)."""
        out = dict.fromkeys(HOW, 0)
        for group in set(self.groups.values()):
            out[self.how[group]] += 1
        return out


def group_of(row: StageRow, known: set[str]) -> str:
    """The story group of a stage (see the module docstring)."""
    if row.event_id:
        return row.event_id
    chapter = main_chapter(row.stage_path)
    if chapter is None and (m := _IN_LEVEL.match(row.stage_path)) is not None:
        chapter = int(m.group(1))
    if chapter is not None:
        return f"main_{chapter}"
    m = _ACTIVITY.match(row.stage_path)
    if m is not None and m.group(1) in known:
        return m.group(1)
    return f"other:{m.group(1) if m else row.stage_path.rsplit('/', 1)[0]}"


def build_order(
    rows: Sequence[StageRow], curated: CuratedOrder, names: dict[str, str] | None = None
) -> StoryOrder:
    """Every stage's position from the curated order, the records rule and the fallback."""
    known = {r.event_id for r in rows if r.event_id}
    groups = {r.stage_path: group_of(r, known) for r in rows}
    release: dict[str, int] = {}  # group -> its first stage's release rank
    for r in rows:
        g = groups[r.stage_path]
        release[g] = min(release.get(g, r.release), r.release)
    rank = {g: i for i, g in enumerate(sorted(release, key=lambda g: (release[g], g)))}
    placed = {p.group: p for p in curated.places}
    mains = {m: i for i, m in enumerate(curated.mains)}
    how: dict[str, str] = {}
    keys: dict[str, Key] = {}

    def key(group: str, trail: tuple[str, ...] = ()) -> Key:
        if group in keys:
            return keys[group]
        if group in trail:  # a loop in the file: the group falls back
            return _fallback(group)
        if group in mains:
            how[group] = MAIN
            k: Key = (mains[group],)
        elif group in placed and placed[group].after:
            how[group] = CURATED
            anchor = max(key(a, (*trail, group)) for a in placed[group].after)
            k = (*anchor, 1, rank.get(group, 0))
        elif group in placed or (_RECORD_GROUP.match(group) and curated.records_default
                                 == BACKSTORY):  # fmt: skip
            # a prequel (before main_0, after nothing) or a record's backstory
            how[group] = BACKSTORY if group not in placed else CURATED
            k = (-1, rank.get(group, 0))
        else:
            return _fallback(group)
        keys[group] = k
        return k

    def _fallback(group: str) -> Key:
        how[group] = FALLBACK
        keys[group] = (len(mains), rank.get(group, 0))
        return keys[group]

    for g in release:
        key(g)
    order = sorted(rows, key=lambda r: (keys[groups[r.stage_path]], 0, r.release, r.stage_path))
    return StoryOrder(
        {r.stage_path: i for i, r in enumerate(order)},
        groups,
        {g: how[g] for g in release},
        placed,
        dict(names or {}),
        rank,
    )


def resolve_point(
    order: StoryOrder,
    query: str,
    stages: Iterable[str],
    candidates: Callable[[], Sequence[str]] = tuple,
) -> StoryPoint:
    """The story point ``query`` names, from the stages it matched (a stage code, an event
    name or id, a stage path: :meth:`Store.find_stages`): the end of its one story group. A
    query matching stages of several groups is ambiguous, one matching none unknown: a
    StoryPointError listing the closest (``candidates``: the names it could have meant, read
    only then)."""
    found = [s for s in stages if s in order.positions]
    groups = list(dict.fromkeys(order.groups[s] for s in found))
    if not groups:
        near = get_close_matches(query, list(candidates()), n=5, cutoff=0.4)
        raise StoryPointError(
            f"no story point is called {query!r}",
            hint=(f"did you mean {', '.join(near)}?" if near else "give a stage code (R8-1, "
                  "CW-ST-1), an event or chapter name (孤星, 第十一章) or a stage path"),
        )  # fmt: skip
    if len(groups) > 1:
        shown = ", ".join(f"{order.names.get(g, g)} ({g})" for g in groups[:6])
        raise StoryPointError(
            f"{query!r} names stages of several stories: {shown}",
            hint="name the story too, or give the stage path",
        )
    group = groups[0]
    name = order.names.get(group, group)
    return StoryPoint(
        query,
        name if query in (name, group) else f"{name}（{query}）",
        group,
        max(order.positions[s] for s in found),
        tuple(found),
    )
