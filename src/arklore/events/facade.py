"""The events layer as the workspace uses it: where each operator appears (one rule for every
entry point), the story timeline, her memories for a chat, the events extraction run, its
review report and diff, and the line ids kept memories cite.

Appearances come from the stored index (every person in one corpus pass, :meth:`index`,
run by ``arklore build``) when it was computed from the current names; otherwise one person's
are computed on demand by the same rule and kept in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Unpack

from arklore.core.blocks import StageRef
from arklore.core.errors import ConfigError, UnknownEventError
from arklore.corpus.levels import labelled
from arklore.corpus.store import StageInfo, Store
from arklore.corpus.story import StoryOrder
from arklore.events import appearances as apps_db
from arklore.events import diff as events_diff
from arklore.events import review as events_review
from arklore.events import runner
from arklore.events import store as events_db
from arklore.events.appearances import Appearance
from arklore.events.memories import Memories, MemoryService
from arklore.events.standing import Standing, standing
from arklore.events.timeline import Timeline, build_timeline
from arklore.extract.events import TASK as EVENTS_TASK
from arklore.extract.facade import ExtractFacade, RunOptions, run_stages
from arklore.graph.facade import GraphFacade
from arklore.graph.named import named_ids
from arklore.llm import Estimate
from arklore.llm.access import LLMAccess
from arklore.llm.runs import Progress
from arklore.names.facade import NamesFacade
from arklore.rag.embedders import Embedder
from arklore.rag.exemplars import ExemplarIndex


class EventsFacade:
    """Appearances, timeline, memories and event extraction (see the module doc)."""

    def __init__(
        self,
        store: Callable[[], Store],
        names: NamesFacade,
        extract: ExtractFacade,
        llm: LLMAccess,
        *,
        embedder: Callable[[], Embedder],
        embed_cache: Path,
        exports: Path,
        graph: GraphFacade,
        scenes: Callable[[], ExemplarIndex] | None = None,
        story: Callable[[], StoryOrder] | None = None,
    ) -> None:
        """``graph``: who a message names (:meth:`GraphFacade.named_spans`, the rule every
        block of a turn shares); ``scenes``: her scene windows (the rag layer's), for her
        lines in memories; ``story``: the story order (the corpus layer's) a chat set at a
        point lists her memories in and finds her latest stage by."""
        self._store = store
        self._story = story
        self._scenes = scenes
        self.graph = graph
        self.names = names
        self.extract_layer = extract
        self._llm = llm
        self._embedder = embedder
        self.embed_cache = embed_cache
        self.exports = exports
        self._lock = threading.Lock()
        self._memories: MemoryService | None = None
        self.reload()

    def reload(self) -> None:
        self._held: dict[tuple[str, ...], tuple[str, list[Appearance]]] = {}
        self._infos: tuple[str, dict[str, StageInfo]] | None = None
        self._whitelist: set[str] | None = None

    def close(self) -> None:
        if self._memories is not None:
            self._memories.close()
            self._memories = None

    # -- appearances -------------------------------------------------------------------------
    def state(self) -> str:
        """The names state appearances depend on (:meth:`NamesFacade.state`)."""
        return self.names.state()

    def _infos_by_path(self) -> dict[str, StageInfo]:
        state = self.state()
        if self._infos is None or self._infos[0] != state:
            self._infos = (state, {i.stage_path: i for i in self._store().stage_infos()})
        return self._infos[1]

    def _speakers(self) -> set[str]:
        if self._whitelist is None:
            self._whitelist = apps_db.whitelist(self.extract_layer.speaker_whitelist())
        return self._whitelist

    def stage_titles(self) -> list[str]:
        """Every event name and story name of the primary stages, once each, sorted (what a
        lorebook keys her memories by)."""
        infos = self._infos_by_path().values()
        names = {n.strip() for i in infos for n in (i.event_name, i.story_name) if n and n.strip()}
        return sorted(names)

    def stage_refs(self, paths: Iterable[str]) -> list[StageRef]:
        """Stages as a chat block cites them: path, story code, name and event."""
        infos = self._infos_by_path()
        out = []
        for p in dict.fromkeys(paths):
            info = infos.get(p)
            out.append(apps_db.stage_ref(info) if info is not None else StageRef(p))
        return out

    def index(self, progress: Progress | None = None) -> int:
        """Compute every person's appearances in one corpus pass and store them (the build
        step); returns how many people appear."""
        names = self.names
        found = apps_db.scan_all(
            self._store(),
            speaker_ids=names.speaker_ids(),
            resolve=lambda n: names.aliases().resolve(n).char_id,
            speakers=self._speakers(),
            base_of=lambda c: names.family(c)[0],
            progress=(lambda d, t: progress("appearances", d, t)) if progress else None,
        )
        apps_db.save_index(self._store(), found, self.state())
        self._held = {}
        return len(found)

    def indexed(self) -> bool:
        """Whether the stored appearances were computed from the current names."""
        return apps_db.index_built_for(self._store()) == self.state()

    def appearances_of(self, family: Sequence[str]) -> list[Appearance]:
        """The stages one person (``family``: her ids, base first) speaks in or is addressed
        in, in story order, with line counts and the official summaries; no LLM."""
        key = tuple(dict.fromkeys(family))
        state = self.state()
        held = self._held.get(key)
        if held is not None and held[0] == state:
            return list(held[1])
        store = self._store()
        if apps_db.index_built_for(store) == state:
            found = apps_db.load_index(store, key[0], self._infos_by_path())
        else:
            found = apps_db.appearances(
                store,
                key,
                speaker_ids=self.names.speaker_ids(),
                resolve=lambda n: self.names.aliases().resolve(n).char_id,
                speakers=self._speakers(),
                infos=list(self._infos_by_path().values()),
            )
        with self._lock:
            self._held[key] = (state, found)
        return list(found)

    def appearances(self, operator: str) -> list[Appearance]:
        """Her appearances (any name or id; all her forms)."""
        return self.appearances_of(self.names.family(self.names.resolve(operator)))

    # -- timeline ----------------------------------------------------------------------------
    def timeline(
        self, *, operator: str | None = None, event: str | None = None, limit: int | None = None
    ) -> Timeline:
        """Stages in story order (release order, an approximation of in-world time), with
        their extracted events in line order; with ``operator``, only the stages she appears
        in and her events; with ``event``, only that event's stages; the first ``limit``."""
        store = self._store()
        paths = None
        if event is not None:
            if event not in store.event_ids():
                raise UnknownEventError(f"no event {event!r} in the store")
            paths = self.extract_layer.select_stages(event=event)
        every = store.stage_infos()
        infos = every if paths is None else store.stage_infos(paths)
        apps = None
        family: list[str] = []
        char_id = None
        if operator is not None:
            char_id = self.names.resolve(operator)
            family = self.names.family(char_id)
            apps = self.appearances_of(family)
            hers = {a.stage_path for a in apps}
            infos = [i for i in infos if i.stage_path in hers]
        infos = infos[:limit] if limit is not None else infos
        infos = labelled(infos, every)  # a level's dialogue with that level's code and name
        checked = set(events_db.checked_stages(store))
        events = {i.stage_path: events_db.load_events(store, i.stage_path)
                  for i in infos if i.stage_path in checked}  # fmt: skip
        return build_timeline(
            infos, events, appearances=apps, operator=char_id, family_ids=family, event=event
        )

    # -- memories ----------------------------------------------------------------------------
    def memory_service(self) -> MemoryService:
        if self._memories is None:
            self._memories = MemoryService(
                self._store,
                self._embedder,
                self.embed_cache,
                self.appearances_of,
                family=self.names.family,
                scenes=self._scenes,
                story=self._story,
            )
        return self._memories

    def memories(
        self,
        operator: str,
        query: str | None = None,
        k: int = 3,
        named: Sequence[str] | None = None,
        knows: Callable[[str], bool] | None = None,
    ) -> Memories:
        """Her own first-person memories (all her forms share them) ranked by similarity to
        ``query`` (story order without one); with no memory of hers extracted, her
        appearances, marked as such, ranked by the query and the people it names, each with
        her own lines there. One call per chat turn, the same for every entry point;
        ``named`` (graph nodes) when the caller already knows them, else found by the one
        rule; ``knows``: the stages a chat set at a story point knows."""
        char_id = self.names.resolve(operator)
        family = self.names.family(char_id)
        if named is None:
            named = self.named(char_id, query or "")
        return self.memory_service().memories(
            char_id, family, query, k, named=named, known_as=self.names.known_as(family),
            knows=knows,
        )  # fmt: skip

    def named(self, char_id: str, text: str) -> list[str]:
        """The people ``text`` names for her (graph nodes), by the one rule of a turn."""
        if not text.strip():
            return []
        return named_ids(self.graph.named_spans(char_id, text))

    def standing(self, operator: str, knows: Callable[[str], bool] | None = None) -> list[Standing]:
        """Where she stands now, from the game's summaries of her latest stages and of her
        own records (:mod:`arklore.events.standing`); ``knows``: the stages a chat set at a
        story point knows (her latest stage is then the latest one it knows)."""
        char_id = self.names.resolve(operator)
        family = self.names.family(char_id)
        forms = set(family)

        def names_her(text: str) -> bool:
            return any(
                (m.char_id in forms) if m.char_id else bool(forms.intersection(m.candidates))
                for m in self.names.find_mentions(text)
            )

        apps = self.appearances_of(family)
        position = None
        if knows is not None:
            apps = [a for a in apps if knows(a.stage_path)]
            if self._story is not None:  # at a point, "latest" is in story order
                position = self._story().moment
        return standing(apps, self._infos_by_path(), names_her, family, position)

    def has_memories(self, char_id: str) -> bool:
        return self.memory_service().has_memories(self.names.family(char_id))

    # -- extraction --------------------------------------------------------------------------
    def extract(
        self, stage_paths: list[str], *, embed: bool = True, **options: Unpack[RunOptions]
    ) -> runner.RunReport:
        """Extract, check, store and export the story events of ``stage_paths`` (see
        :func:`arklore.extract.facade.run_stages`); ``embed`` embeds the kept memories for
        chat right away (else on an operator's first query)."""
        report = run_stages(
            self._store(),
            self._llm,
            runner.extract_events,
            stage_paths,
            resolve=self.names.resolve_person,
            export=(runner.export_stages, self.exports),
            options=options,
        )
        progress = options.get("progress")
        if embed:
            if progress:
                progress("embed memories", 0, 1)
            report.embedded_memories = self.memory_service().embed_stages(stage_paths)
            if progress:
                progress("embed memories", 1, 1)
        return report

    def extract_dry_run(self, stage_paths: list[str], progress: Progress | None = None) -> Estimate:
        return runner.dry_run(self._store(), stage_paths, self._llm.prices(EVENTS_TASK), progress)

    def review(self, stage: str, *, html: bool = False) -> str:
        """Every extracted event of a stage with its memories, verdicts and lines."""
        path = self.extract_layer.stage(stage)
        store = self._store()
        if not events_db.has_events(store, path):
            raise ConfigError(
                f"no events extracted for {path}",
                hint=f"run `arklore extract events {path}` first",
            )
        render = events_review.render_html if html else events_review.render_text
        return render(path, events_db.load_events(store, path), store.lines(path))

    def diff(self, run_a: str, run_b: str) -> events_diff.RunDiff:
        """Two extractions compared by line-range overlap (a RUN: an export folder, one
        export file, or ``@store``)."""
        return events_diff.diff_runs(self._run(run_a), self._run(run_b))

    def _run(self, spec: str) -> events_diff.Run:
        if spec == events_diff.STORE_RUN:
            store = self._store()
            loaded = {
                sp: events_db.load_events(store, sp) for sp in events_db.checked_stages(store)
            }
            models = sorted({m for evs in loaded.values() for e in evs for m in e.model.split(",")})
            stages = {sp: events_diff.spans_of_events(evs) for sp, evs in loaded.items()}
            versions = sorted({e.prompt_version for evs in loaded.values() for e in evs})
            return events_diff.Run(spec, stages, [m for m in models if m], versions)
        return events_diff.load_run_files(spec, events_diff.run_files(spec))

    def citations(self) -> Iterator[tuple[str, str]]:
        """(line id, label) for the evidence of every kept memory."""
        return events_db.cited_line_ids(self._store())
