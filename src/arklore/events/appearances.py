"""Where an operator appears in the story, without any LLM: the stages she speaks in or is
addressed in, with line counts and the game's own summary of each stage.

* **her forms**: the operator and every alternate form of the same person (:func:`family`);
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

from arklore.core.model import DOCTOR, normalize_speaker, parse_line_id
from arklore.core.operators import Operator
from arklore.corpus.store import StageInfo, Store
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"how": self.how}


def family(operators: Iterable[Operator], char_id: str) -> list[str]:
    """The operator's id and the ids of every form of the same person, base first."""
    ops = {op.char_id: op for op in operators}
    op = ops.get(char_id)
    base = op.base_id if op is not None and op.base_id in ops else char_id
    members = [base]
    base_op = ops.get(base)
    for other in [*(base_op.alternate_ids if base_op else []), *sorted(ops)]:
        o = ops.get(other)
        if o is not None and (other == base or o.base_id == base) and other not in members:
            members.append(other)
    if char_id not in members:
        members.append(char_id)
    return members


def whitelist(speakers: Iterable[str]) -> set[str]:
    """The known-speaker whitelist as the checks use it (normalized, with the Doctor)."""
    return ({normalize_speaker(s)[0] for s in speakers} | {DOCTOR}) - {""}


def appearances(
    store: Store,
    family_ids: Iterable[str],
    *,
    speaker_ids: dict[str, str],
    resolve: ResolveFn,
    speakers: set[str],
    infos: list[StageInfo] | None = None,
) -> list[Appearance]:
    """Her appearances in story order. ``speaker_ids``: corpus speaker -> operator id (the
    names layer); ``resolve``: any name -> operator id or None; ``speakers``: the vocative
    whitelist (:func:`whitelist`)."""
    fam = set(family_ids)
    hers = {sp for sp, cid in speaker_ids.items() if cid in fam}

    def who(name: str) -> str | None:
        return resolve(name) or speaker_ids.get(name)

    found: dict[str, Appearance] = {}
    by_path = {i.stage_path: i for i in (infos if infos is not None else store.stage_infos())}

    def slot(path: str) -> Appearance | None:
        app = found.get(path)
        if app is None:
            info = by_path.get(path)
            if info is None:
                return None
            app = found[path] = Appearance(
                path, info.order_rank, info.story_code, info.event_id, info.event_name,
                info.story_name, info.avg_tag, info.story_info,
            )  # fmt: skip
        return app

    for line in store.spoken_lines_by(hers):
        app = slot(line.stage_path)
        if app is None:
            continue
        app.spoken += 1
        app.uncertain += int(line.uncertain)
        app.line_ids.append(line.line_id)
    names = [w for w in speakers if who(w) in fam]
    for line in store.spoken_lines_containing(names):
        if line.speaker in hers:
            continue
        if any(who(n) in fam for n in vocatives(line.text, speakers)):
            app = slot(line.stage_path)
            if app is None:
                continue
            app.addressed += 1
            app.line_ids.append(line.line_id)
    for app in found.values():  # the first lines showing her there, in line order
        app.line_ids = sorted(app.line_ids, key=lambda i: parse_line_id(i)[1])[:EVIDENCE_IDS]
    rank = {p: i for i, p in enumerate(by_path)}
    return sorted(found.values(), key=lambda a: rank[a.stage_path])
