"""Where an operator appears in the story, computed from the store with no LLM: the stand-in
for her memories until story events are extracted, and the timeline.

An appearance is a stage of the primary corpus where one of her speaker names (all her forms:
the names layer's speaker ids) has dialogue lines, with the game's own metadata: story code,
name, event and the official summary (``[uc]info``). Story order is the store's ``order_rank``
(release order, an approximation of in-world time), then the stage path.

For a chat turn (:meth:`Appearances.block`) the appearances relevant to the message come first:
stages where the people the message names speak too, then her biggest stages (most lines);
the picks are shown in story order, each citable by stage code.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arklore.core.blocks import MEMORIES, Block, StageRef, empty_block, fit_lines
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.corpus.store import StageInfo, Store
from arklore.names.build import speaker_ids

SUMMARY_CHARS = 60
"""Characters of the official summary shown per appearance in a chat block."""

BLOCK_CACHE = 4096
"""Appearance blocks kept in memory (cleared when full)."""

NO_EVENTS = "no story events extracted yet: her appearances (stages she speaks in) stand in"


@dataclass(frozen=True, slots=True)
class Appearance:
    stage: StageRef
    lines: int  # her dialogue lines in the stage
    order: int  # story order rank (release order)
    avg_tag: str | None
    summary: str | None  # the game's summary of the stage

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.stage.to_dict(),
            "avg_tag": self.avg_tag,
            "lines": self.lines,
            "order": self.order,
            "summary": self.summary,
        }


def stage_ref(info: StageInfo) -> StageRef:
    return StageRef(info.stage_path, info.story_code, info.story_name, info.event_name)


class Appearances:
    """Appearances per operator over one store; thread-safe, cached until dropped."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._speakers: dict[str, list[str]] | None = None
        self._cache: dict[tuple[str, ...], dict[str, int]] = {}
        self._info: dict[str, StageInfo | None] = {}
        self._blocks: dict[tuple[Any, ...], Block] = {}
        self._by_speaker: dict[str, dict[str, int]] | None = None

    def speakers_of(self, char_ids: Iterable[str]) -> list[str]:
        """Speaker names that resolve to any of ``char_ids``."""
        if self._speakers is None:
            inv: dict[str, list[str]] = {}
            for sp, cid in speaker_ids(self.store).items():
                inv.setdefault(cid, []).append(sp)
            self._speakers = inv
        return sorted({sp for c in char_ids for sp in self._speakers.get(c, ())})

    def preload(self) -> None:
        """Read every speaker's stages and every stage's metadata in two queries (a server's
        warm-up: seconds once, instead of a query per operator on her first turn)."""
        by_speaker: dict[str, dict[str, int]] = {}
        for path, sp, n in self.store.all_speaker_stage_counts():
            by_speaker.setdefault(sp, {})[path] = n
        infos = {i.stage_path: i for i in self.store.stage_infos()}
        with self._lock:
            self._by_speaker = by_speaker
            self._info.update(infos)

    def stage_lines(self, char_ids: Sequence[str]) -> dict[str, int]:
        """stage_path -> dialogue lines of any of ``char_ids`` (one person's forms)."""
        key = tuple(sorted(set(char_ids)))
        hit = self._cache.get(key)
        if hit is None:
            counts: dict[str, int] = {}
            speakers = self.speakers_of(key)
            if speakers and self._by_speaker is not None:
                for sp in speakers:
                    for path, n in self._by_speaker.get(sp, {}).items():
                        counts[path] = counts.get(path, 0) + n
            elif speakers:
                for path, _sp, n in self.store.speaker_stage_counts(speakers):
                    counts[path] = counts.get(path, 0) + n
            with self._lock:
                self._cache[key] = hit = counts
        return hit

    def info(self, path: str) -> StageInfo | None:
        if path not in self._info:
            self._info[path] = self.store.stage_info(path)
        return self._info[path]

    def of(self, char_ids: Sequence[str]) -> list[Appearance]:
        """Her appearances in story order."""
        out = []
        for path, n in self.stage_lines(char_ids).items():
            info = self.info(path)
            if info is None:
                continue
            out.append(
                Appearance(stage_ref(info), n, info.order_rank or 0, info.avg_tag, info.story_info)
            )
        out.sort(key=lambda a: (a.order, a.stage.path))
        return out

    def block(
        self,
        char_ids: Sequence[str],
        name: str,
        *,
        k: int,
        budget: int,
        others: Sequence[Sequence[str]] = (),
        counter: TokenCounter = count_tokens,
    ) -> Block:
        """The memories block made of appearances: the ``k`` most relevant (stages shared with
        ``others``, the people the message names, each given as her forms; then most lines),
        shown in story order, within ``budget`` tokens. Kept per arguments (the store only
        changes with an ingest, after which the workspace makes a new instance)."""
        key = (tuple(char_ids), name, k, budget, tuple(tuple(o) for o in others), counter)
        hit = self._blocks.get(key)
        if hit is None:
            hit = self._block(char_ids, name, k=k, budget=budget, others=others, counter=counter)
            with self._lock:
                if len(self._blocks) >= BLOCK_CACHE:
                    self._blocks.clear()
                self._blocks[key] = hit
        return copy.deepcopy(hit)

    def _block(
        self,
        char_ids: Sequence[str],
        name: str,
        *,
        k: int,
        budget: int,
        others: Sequence[Sequence[str]],
        counter: TokenCounter,
    ) -> Block:
        apps = self.of(char_ids)
        if not apps:
            return empty_block(
                MEMORIES, budget, f"no story lines of {name} in the corpus", kind="appearances"
            )
        shared: dict[str, int] = {}
        for person in others:
            for path in self.stage_lines(person):
                shared[path] = shared.get(path, 0) + 1
        ranked = sorted(apps, key=lambda a: (-shared.get(a.stage.path, 0), -a.lines, a.order))
        picked = sorted(ranked[:k], key=lambda a: (a.order, a.stage.path))
        header = f"【{name}的出场记录（按发布顺序）】"
        text, kept = fit_lines(header, [_line(a) for a in picked], budget, counter)
        kept_apps = [picked[i] for i in kept]
        reason = ""
        if not text:
            reason = f"not even one appearance fits the memories budget of {budget} tokens"
        elif len(kept_apps) < len(picked):
            reason = f"{len(picked) - len(kept_apps)} appearance(s) left out to fit {budget} tokens"
        return Block(
            MEMORIES,
            text,
            counter(text) if text else 0,
            budget,
            reason,
            stages=[a.stage for a in kept_apps],
            items=[
                {**a.to_dict(), "shared_with_named": shared.get(a.stage.path, 0)} for a in kept_apps
            ],
            meta={"kind": "appearances", "note": NO_EVENTS, "appearances_total": len(apps)},
        )


def _line(a: Appearance) -> str:
    where = " ".join(x for x in (a.stage.code, a.avg_tag) if x)
    title = f"《{a.stage.name}》" if a.stage.name else a.stage.path
    event = f"（{a.stage.event}）" if a.stage.event else ""
    summary = (a.summary or "").strip().replace("\n", " ")
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1] + "…"
    head = " ".join(x for x in (where, title + event) if x)
    return f"- {head}" + (f"：{summary}" if summary else "")
