"""Where an operator appears in the story, without any LLM: the stages she speaks in or is
addressed in, with line counts and the game's own summary of each stage.

* **her forms**: the operator and every alternate form of the same person (the names layer's
  ``family``), counted as one person keyed by her base form's id;
* **speaks**: a dialogue or choice line whose speaker the names layer resolves to one of her
  forms (``names.build.speaker_ids``: code names, real names like 恩希欧迪斯, portrait-backed
  labels, popup avatar ids like ``$avatar_kalts``), uncertain speakers (``凯尔希？``) included
  and counted apart;
* **addressed**: a spoken line (not hers) that calls her by name, by the one vocative rule of
  :func:`arklore.extract.presence.vocatives` (names on the known-speaker whitelist only).

Only the lines that contain one of her names are read for vocatives (one scan of the store),
so one operator takes about a second on the whole corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from arklore.core.blocks import StageRef
from arklore.core.model import DOCTOR, normalize_speaker, parse_line_id
from arklore.corpus.store import SpokenLine, StageInfo, Store
from arklore.extract.presence import vocatives

EVIDENCE_IDS = 3
"""Line ids kept per appearance (the first lines showing her there)."""

ResolveFn = Callable[[str], str | None]


@dataclass
class Appearance:
    stage_path: str
    order_rank: int | None
    stage_code: str | None
    event_id: str | None
    event_name: str | None
    story_name: str | None
    avg_tag: str | None
    summary: str | None  # the game's official stage summary ([uc]info / story review table)
    spoken: int = 0  # lines she speaks (uncertain ones included)
    uncertain: int = 0  # of those, lines whose speaker name was written with a trailing ?
    addressed: int = 0  # lines of others that call her by name
    line_ids: list[str] = field(default_factory=list)

    @property
    def how(self) -> str:
        return "speaks" if self.spoken else "addressed"

    @property
    def ref(self) -> StageRef:
        return StageRef(
            self.stage_path, self.stage_code, self.story_name, self.event_name, self.avg_tag
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"how": self.how}


def stage_ref(info: StageInfo) -> StageRef:
    """A stage as a chat block cites it."""
    return StageRef(
        info.stage_path, info.story_code, info.story_name, info.event_name, info.avg_tag
    )


def whitelist(speakers: Iterable[str]) -> set[str]:
    """The known-speaker whitelist as the checks use it (normalized, with the Doctor)."""
    return ({normalize_speaker(s)[0] for s in speakers} | {DOCTOR}) - {""}


class _Scan:
    """The one appearance rule, applied line by line: a spoken line counts for its speaker's
    person, and as *addressed* for every other person it calls by name."""

    def __init__(
        self,
        speaker_ids: dict[str, str],
        resolve: ResolveFn,
        speakers: set[str],
        base_of: Callable[[str], str],
        by_path: dict[str, StageInfo],
    ) -> None:
        self.speaker_ids = speaker_ids
        self.resolve = resolve
        self.speakers = speakers
        self.base_of = base_of
        self.by_path = by_path
        self.found: dict[str, dict[str, Appearance]] = {}
        self._who: dict[str, str | None] = {}

    def person(self, name: str) -> str | None:
        """The person (base id) a name is, None for NPCs and unknown names (cached)."""
        if name not in self._who:
            cid = self.resolve(name) or self.speaker_ids.get(name)
            self._who[name] = self.base_of(cid) if cid is not None else None
        return self._who[name]

    def _slot(self, base: str, path: str) -> Appearance | None:
        stages = self.found.setdefault(base, {})
        app = stages.get(path)
        if app is None:
            info = self.by_path.get(path)
            if info is None:
                return None
            app = stages[path] = Appearance(
                path, info.order_rank, info.story_code, info.event_id, info.event_name,
                info.story_name, info.avg_tag, info.story_info,
            )  # fmt: skip
        return app

    def line(self, line: SpokenLine, only: set[str] | None = None) -> None:
        """Count ``line`` for the people it shows (``only``: just these people)."""
        speaker = self.person(line.speaker) if line.speaker else None
        if speaker is not None and (only is None or speaker in only):
            app = self._slot(speaker, line.stage_path)
            if app is not None:
                app.spoken += 1
                app.uncertain += int(line.uncertain)
                app.line_ids.append(line.line_id)
        called = {self.person(n) for n in vocatives(line.text, self.speakers)} - {None, speaker}
        for base in called:
            assert base is not None
            if only is not None and base not in only:
                continue
            app = self._slot(base, line.stage_path)
            if app is not None:
                app.addressed += 1
                app.line_ids.append(line.line_id)

    def result(self) -> dict[str, list[Appearance]]:
        """Each person's appearances in story order, each keeping its first lines."""
        rank = {p: i for i, p in enumerate(self.by_path)}
        out = {}
        for base, stages in self.found.items():
            for app in stages.values():
                app.line_ids = sorted(app.line_ids, key=lambda i: parse_line_id(i)[1])[
                    :EVIDENCE_IDS
                ]
            out[base] = sorted(stages.values(), key=lambda a: rank[a.stage_path])
        return out


def appearances(
    store: Store,
    family_ids: Iterable[str],
    *,
    speaker_ids: dict[str, str],
    resolve: ResolveFn,
    speakers: set[str],
    infos: list[StageInfo] | None = None,
) -> list[Appearance]:
    """Her appearances in story order, reading only the lines that can show her: hers, and
    those containing one of her names. ``speaker_ids``: corpus speaker -> operator id (the
    names layer); ``resolve``: any name -> operator id or None; ``speakers``: the vocative
    whitelist (:func:`whitelist`)."""
    fam = list(dict.fromkeys(family_ids))
    if not fam:
        return []
    base = fam[0]
    members = set(fam)
    scan = _Scan(
        speaker_ids, resolve, speakers, lambda c: base if c in members else c,
        {i.stage_path: i for i in (infos if infos is not None else store.stage_infos())},
    )  # fmt: skip
    hers = {sp for sp, cid in speaker_ids.items() if cid in members}
    seen: set[str] = set()
    for line in store.spoken_lines_by(hers):
        seen.add(line.line_id)
        scan.line(line, {base})
    names = [w for w in speakers if scan.person(w) == base]
    for line in store.spoken_lines_containing(names):
        if line.line_id not in seen:
            scan.line(line, {base})
    return scan.result().get(base, [])


def scan_all(
    store: Store,
    *,
    speaker_ids: dict[str, str],
    resolve: ResolveFn,
    speakers: set[str],
    base_of: Callable[[str], str],
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, list[Appearance]]:
    """Every person's appearances (keyed by her base id) in one pass over the corpus, by the
    same rule as :func:`appearances`."""
    scan = _Scan(
        speaker_ids, resolve, speakers, base_of, {i.stage_path: i for i in store.stage_infos()}
    )
    lines = list(store.spoken_lines())
    for i, line in enumerate(lines):
        scan.line(line)
        if progress and i % 20_000 == 0:
            progress(i, len(lines))
    if progress:
        progress(len(lines), len(lines))
    return scan.result()


# -- the stored index ----------------------------------------------------------------------
def save_index(store: Store, index: dict[str, list[Appearance]], built_for: str) -> None:
    """Replace the stored appearances of every person, in one transaction."""
    rows = [
        (base, a.stage_path, a.spoken, a.uncertain, a.addressed, orjson.dumps(a.line_ids).decode())
        for base, apps in index.items()
        for a in apps
    ]
    with store.transaction() as c:
        c.execute("DELETE FROM appearances")
        c.executemany("INSERT INTO appearances VALUES (?,?,?,?,?,?)", rows)
        c.execute(
            "INSERT OR REPLACE INTO appearances_meta (key, value) VALUES ('built_for', ?)",
            (built_for,),
        )


def index_built_for(store: Store) -> str | None:
    """The names state the stored index was computed from (None: never built)."""
    row = store.conn.execute(
        "SELECT value FROM appearances_meta WHERE key = 'built_for'"
    ).fetchone()
    return row[0] if row else None


def load_index(store: Store, base_id: str, infos: dict[str, StageInfo]) -> list[Appearance]:
    """One person's stored appearances in story order (``infos`` in story order)."""
    rows = store.conn.execute(
        "SELECT stage_path, spoken, uncertain, addressed, line_ids FROM appearances"
        " WHERE base_id = ?",
        (base_id,),
    ).fetchall()
    rank = {p: i for i, p in enumerate(infos)}
    out = []
    for path, spoken, uncertain, addressed, ids in rows:
        info = infos.get(path)
        if info is None:
            continue
        out.append(
            Appearance(
                path,
                info.order_rank,
                *info.labels(),
                spoken,
                uncertain,
                addressed,
                orjson.loads(ids),
            )  # fmt: skip
        )
    out.sort(key=lambda a: rank[a.stage_path])
    return out
