"""The one builder of story lines for the tests (and of a stage holding them), filling the
fields the way the story readers do."""

from __future__ import annotations

from types import EllipsisType
from typing import Any

from arklore.core.model import NICKNAME_TOKEN, Branch, Line, LineKind, Source, Stage


def line(
    path: str,
    no: int,
    speaker: str | None,
    text: str,
    *,
    kind: LineKind | None = None,
    speaker_raw: str | None | EllipsisType = ...,
    branch: Branch | None = None,
    uncertain: bool = False,
    addresses_doctor: bool | None = None,
    **kw: Any,
) -> Line:
    """Line ``no`` of stage ``path``: dialogue by ``speaker``, narration when ``speaker`` is
    empty or None; ``kind`` says otherwise (``LineKind.CHOICE`` for the Doctor's options, with
    ``options=`` and ``option_values=``). ``speaker_raw`` defaults to the speaker (None when
    there is none), ``addresses_doctor`` to whether the text holds ``Dr.{@nickname}``; ``kw``
    are the other :class:`Line` fields."""
    return Line(
        path,
        no,
        kind or (LineKind.DIALOGUE if speaker else LineKind.NARRATION),
        text,
        speaker=speaker or "",
        speaker_raw=(speaker or None) if speaker_raw is ... else speaker_raw,
        uncertain=uncertain,
        branch=branch,
        addresses_doctor=NICKNAME_TOKEN in text if addresses_doctor is None else addresses_doctor,
        **kw,
    )


def stage(path: str, lines: list[Line]) -> Stage:
    """An AVG stage at ``path`` holding ``lines`` (its content hash: the path)."""
    return Stage(path, Source.AVG, path + ".txt", content_hash=path, lines=lines)
