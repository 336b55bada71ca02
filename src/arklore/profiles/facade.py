"""The profiles layer as the workspace uses it: where her ``.char`` file is, what of it a chat
may inject (:meth:`ProfilesFacade.persona`, the one function the persona command, the HTTP
route and the chat block call), the distillation run, the review queue, and the two writes a
reviewer makes (approve a draft, replace a file), each with its rules in one place.

Files are looked up in the user's folder (``ARKLORE_CHARS_DIR``, read only, wins: files named
by any name, alias or char id, or naming her in an ``- operator:`` header, see
:mod:`arklore.profiles.userdir`) then by char id in ``$ARKLORE_HOME/chars``; an alternate
form without a file of her own uses her base form's (the same person).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arklore.base.files import atomic_write_text
from arklore.core.errors import DataNotFoundError, UsageError
from arklore.core.operators import Operator
from arklore.corpus.order import is_own_record
from arklore.corpus.store import Store
from arklore.graph.facade import GraphFacade
from arklore.graph.model import RelationGraph
from arklore.llm import Estimate
from arklore.llm.access import LLMAccess
from arklore.names.facade import NamesFacade
from arklore.profiles import distill as distill_run
from arklore.profiles import feedback
from arklore.profiles import review as profile_review
from arklore.profiles import sources as profile_sources
from arklore.profiles.archive import Tables, archive_sources
from arklore.profiles.charfile import (
    DRAFT_SUFFIX,
    SECTION_ORDER,
    SUFFIX,
    TIER_B,
    ApproveRefusedError,
    CharProfile,
    InvalidProfileError,
    ProfileFileError,
    allowed_sections,
    approve,
)
from arklore.profiles.draft import utc_now
from arklore.profiles.greeting import Greeting, alternate_greetings, choose_greeting
from arklore.profiles.inputs import TASK_D_SOURCES, OperatorInputs
from arklore.profiles.persona import Persona, persona
from arklore.profiles.quotes import (
    QuoteSource,
    StoryLine,
    VoiceLine,
    normalize_ws,
    voice_index,
    voice_sources,
)
from arklore.profiles.results import load_results
from arklore.profiles.userdir import FileCheck, UserDir, dir_state, map_dir
from arklore.rag.docs import RelationDoc
from arklore.rag.facade import RagFacade

Progress = Callable[[str, int, int], None]

MAX_QUEUE = 2000
"""Entries the service's review list shows at most."""


TABLE_TASKS = ("A", "B", "C")
"""The distill tasks that read the excel tables (archive, characters, voice lines)."""


@dataclass(frozen=True)
class FoundProfile:
    """A profile file found for an operator."""

    path: Path
    profile: CharProfile
    writable: bool  # in $ARKLORE_HOME/chars (False: the user's read-only folder)
    char_id: str  # whose file it is: hers, or her base form's


class ProfileNotFoundError(ApproveRefusedError):
    """No profile file for the operator (tier C)."""


class ProfilesFacade:
    """``.char`` profiles under one home (see the module doc)."""

    def __init__(
        self,
        store: Callable[[], Store],
        names: NamesFacade,
        graph: GraphFacade,
        rag: RagFacade,
        llm: LLMAccess,
        *,
        home_dir: Path,
        user_dir: Path | None,
        excel_root: Callable[[], Path | None],
        errors_path: Path,
        queue_path: Path,
        tier_c_relations: bool = False,
    ) -> None:
        self._store = store
        self.names = names
        self.graph = graph
        self.rag = rag
        self._llm = llm
        self.home_dir = home_dir
        self.user_dir = user_dir
        self._excel_root = excel_root
        self.errors_path = errors_path
        self.queue_path = queue_path
        self.tier_c_relations = tier_c_relations
        self._tables: Tables | None = None
        self._voices: dict[str, str] | None = None
        self._by_form: dict[str, list[VoiceLine]] | None = None
        self._lock = threading.Lock()
        self._personas: dict[tuple[Any, ...], Persona] = {}
        self._user: UserDir | None = None

    def reload(self) -> None:
        self._personas = {}
        self._user = None  # the mapping of the user's files depends on the alias table

    # -- finding files -----------------------------------------------------------------------
    def dirs(self) -> list[tuple[Path, bool]]:
        """(folder, writable), first match wins: the user's folder, then the generated one."""
        out = [(Path(self.user_dir), False)] if self.user_dir is not None else []
        return [*out, (self.home_dir, True)]

    def user_files(self, folder: Path | None = None) -> UserDir | None:
        """The user's folder (or ``folder``) with each ``.char`` file mapped to its operator
        (:func:`~arklore.profiles.userdir.map_dir`); None when there is no such folder. The
        configured folder's mapping is kept until a file in it changes or the names reload."""
        target = Path(folder) if folder is not None else self.user_dir
        if target is None or not Path(target).is_dir():
            return None
        if folder is not None and (
            self.user_dir is None or Path(folder).resolve() != Path(self.user_dir).resolve()
        ):
            return map_dir(Path(folder), self.names.resolve)
        cached = self._user
        if cached is not None and cached.state == dir_state(Path(target)):
            return cached
        mapped = map_dir(Path(target), self.names.resolve)
        with self._lock:
            self._user = mapped
        return mapped

    def _user_file(self, char_id: str) -> FoundProfile | None:
        user = self.user_files()
        f = user.by_id.get(char_id) if user is not None else None
        if f is None or f.profile is None:
            return None
        return FoundProfile(f.path, f.profile, False, char_id)

    def find(self, char_id: str, *, own: bool = False) -> FoundProfile | None:
        """Her profile file: her own, else (unless ``own``) her base form's; None: tier C."""
        family = self.names.family(char_id)
        ids = [char_id] if own else list(dict.fromkeys([char_id, family[0]]))
        for cid in ids:
            mine = self._user_file(cid)
            if mine is not None:
                return mine
            p = self.home_dir / f"{cid}{SUFFIX}"
            if p.is_file():
                return FoundProfile(p, CharProfile.read(p), True, cid)
        return None

    def state(self) -> str:
        """A digest of every profile file's name, size and modification time: what the
        documents built from profiles depend on (a file edited, added or removed changes it)."""
        h = hashlib.sha256()
        for d, _ in self.dirs():
            if d.is_dir():
                for p in sorted(d.glob(f"*{SUFFIX}")):
                    st = p.stat()
                    h.update(f"{d}/{p.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        return h.hexdigest()[:16]

    def all(self) -> list[FoundProfile]:
        """Every profile, one per operator (the user's folder wins), by file name."""
        user = self.user_files()
        out = [
            FoundProfile(f.path, f.profile, False, f.char_id)
            for f in (user.files if user is not None else [])
            if f.used and f.profile is not None and f.char_id is not None
        ]
        seen = {f.char_id for f in out}
        if self.home_dir.is_dir():
            for p in sorted(self.home_dir.glob(f"*{SUFFIX}")):
                prof = CharProfile.read(p)
                if prof.char_id and prof.char_id not in seen:
                    seen.add(prof.char_id)
                    out.append(FoundProfile(p, prof, True, prof.char_id))
        return out

    def check(self, folder: Path | None = None) -> list[FileCheck]:
        """Every ``.char`` file of the user's folder (or ``folder``): the operator it maps
        to and how, its tier, the sections her tier lets a chat use (and those it leaves
        out), headings read in the design's spelling, sections a person added, and the files
        that map to nobody with the closest names. Reads only."""
        target = Path(folder) if folder is not None else self.user_dir
        if target is None:
            raise UsageError("no folder to check", hint="pass a folder, or set ARKLORE_CHARS_DIR")
        if not Path(target).is_dir():
            raise UsageError(
                f"{target} is not a folder", hint="pass the folder of your .char files"
            )
        self.names.aliases()  # no store: one NotBuiltError, not one "maps to nobody" per file
        user = self.user_files(Path(target))
        assert user is not None
        out: list[FileCheck] = []
        for f in user.files:
            prof = f.profile
            check = FileCheck(
                f.path.name,
                f.char_id,
                self.names.display_name(f.char_id) if f.char_id else None,
                f.how,
                prof.tier if prof is not None else None,
                f.used,
                problem=f.problem,
                closest=list(f.closest),
            )
            if prof is not None:
                check.design_headings = [
                    (sec.written_title, sec.title)
                    for sec in prof.sections
                    if sec.written_title != sec.title
                ]
                check.own_sections = [
                    sec.title for sec in prof.sections if sec.title not in SECTION_ORDER
                ]
            if prof is not None and f.char_id is not None:
                p = self._persona_of(f.char_id, f.path, prof)
                check.sections = [sec.title for sec in p.sections]
                check.excluded = list(p.excluded)
                check.persona = p
                if check.used and not any(sec.text.strip() for sec in p.sections):
                    # mapped and read, but a chat would get nothing from it: not "used"
                    check.used = False
                    check.problem = "nothing to inject: " + (
                        f"tier {prof.tier} leaves out every section it has"
                        if p.excluded
                        else "no section with text under a '## ' heading (## 锚, ## 我·性格, "
                        "## 我·身边的人, or one of your own)"
                    )
            out.append(check)
        return out

    def _persona_of(self, cid: str, path: Path, prof: CharProfile) -> Persona:
        """Her persona from this file (a hand-edited B file's quotes checked again)."""
        sources = owners = None
        if prof.tier == TIER_B and prof.hand_edited:
            sources, owners = self._quote_sources(cid, prof)
        return persona(
            cid,
            self.names.display_name(cid),
            (path, prof),
            tier_c_relations=self.tier_c_relations,
            quote_sources=sources,
            owners=owners,
        )

    # -- her own words -----------------------------------------------------------------------
    def _voice_index(self) -> dict[str, list[VoiceLine]]:
        """Every voice line by the form it belongs to (read once)."""
        if self._by_form is None:
            self._by_form = voice_index(self.tables().charword)
        return self._by_form

    def voice_lines(self, char_id: str) -> list[VoiceLine]:
        """Her voice lines (her form's own, else her base form's), in voice index order."""
        index = self._voice_index()
        for cid in dict.fromkeys([char_id, self.names.family(char_id)[0]]):
            if index.get(cid):
                return list(index[cid])
        return []

    def _forms_voices(self, cid: str) -> tuple[list[str], list[list[VoiceLine]]]:
        """Her forms (hers first, then her family's) and their voice lines, in that order."""
        index = self._voice_index()
        forms = list(dict.fromkeys([cid, *self.names.family(cid)]))
        return forms, [index.get(c, []) for c in forms]

    def greeting(
        self, operator: str, knows: Callable[[str], bool] | None = None
    ) -> Greeting | None:
        """Her own greeting to the Doctor (:func:`~arklore.profiles.greeting.choose_greeting`:
        a voice line such as 问候 or 交谈, else her first story line to the Doctor, in her
        own record, or anywhere, one that names nobody else preferred)."""
        cid = self.names.resolve(operator)
        forms, voices = self._forms_voices(cid)
        story: list[StoryLine] = []
        if not any(voices):
            by_op = profile_sources.story_lines(self._store(), forms)
            story = sorted(
                (
                    s
                    for c in forms
                    for s in by_op.get(c, [])
                    if knows is None or knows(s.stage_path)
                ),  # fmt: skip
                key=lambda s: (s.order, s.stage_path, s.line_no),
            )
        family = set(forms)

        def names_other(text: str) -> bool:
            return any(c not in family for c in self.names.mentioned(text))

        return choose_greeting(
            voices,
            story,
            own_record=lambda s: is_own_record(s.stage_path, forms),
            names_other=names_other,
        )

    def alternate_greetings(self, operator: str, chosen: Greeting | None) -> list[Greeting]:
        """Her other voice lines that open a conversation (任命助理, 交谈, 问候…), ``chosen``
        left out (:func:`~arklore.profiles.greeting.alternate_greetings`)."""
        return alternate_greetings(self._forms_voices(self.names.resolve(operator))[1], chosen)

    def require_tables(self, why: str) -> None:
        """DataNotFoundError (exit 2) naming ``ARKLORE_GAMEDATA`` when its excel folder is not
        there: without the archive, character and voice tables a distill writes empty anchors
        and the review queue blames every operator's sources, silently."""
        if self._excel_root() is None:
            raise DataNotFoundError(
                "ARKLORE_GAMEDATA is not set, or has no zh_CN/gamedata/excel folder: "
                f"{why} the archive, character and voice tables there"
            )

    def tables(self) -> Tables:
        """The excel tables profiles read (archive, characters, voice, teams), parsed once."""
        if self._tables is None:
            self._tables = profile_sources.load_tables(self._excel_root())
        return self._tables

    # -- what a chat may inject --------------------------------------------------------------
    def persona(self, operator: str) -> Persona:
        """Exactly the sections a chat may inject for her tier, with their token counts; a
        hand-edited tier-B file's quotes are checked again against their sources. Kept per
        file state, so a chat turn pays for a ``stat`` until the file changes."""
        cid = self.names.resolve(operator)
        found = self.find(cid)
        key: tuple[Any, ...] = (cid, None)
        if found is not None:
            st = found.path.stat()
            key = (cid, str(found.path), st.st_mtime_ns, st.st_size)
        hit = self._personas.get(key)
        if hit is not None:
            return hit
        if found is not None:
            out = self._persona_of(cid, found.path, found.profile)
        else:
            out = persona(
                cid, self.names.display_name(cid), None, tier_c_relations=self.tier_c_relations
            )
        if found is not None:
            out.path = self.relative(found.path)  # never the server's layout
            if found.char_id != cid:
                out.profile_of = found.char_id
        with self._lock:
            if len(self._personas) > 4096:
                self._personas.clear()
            self._personas[key] = out
        return out

    def _quote_sources(
        self, cid: str, prof: CharProfile
    ) -> tuple[dict[str, QuoteSource], set[str]]:
        """The sources of every quote line a tier-B chat may use (语录, 我·性格 and her lines
        in 我·关于博士: voice table, story lines in the store, her archive's sections) and who
        may say the lines that must be hers (any of her forms: an alternate form's file may
        quote her base form)."""
        ids = [
            q.source_id.partition(":")[2]
            for q in prof.verbatim_quotes()
            if q.source_id.startswith("story:")
        ]
        family = self.names.family(cid)
        voices = voice_index(self.tables().charword)
        sources = voice_sources(v for c in family for v in voices.get(c, []))
        sources |= profile_sources.story_line_sources(self._store(), ids)
        for c in family:  # her ## 我·性格 lines from her archive
            sources |= archive_sources(self.tables(), c)
        return sources, set(family)

    # -- distillation ------------------------------------------------------------------------
    def inputs(
        self, operators: Sequence[Operator], *, speech: bool = False, remarks: bool = False
    ) -> list[OperatorInputs]:
        """What the distillation tasks read about each of ``operators``; ``speech``: with her
        way of speaking too (``## 说话方式``: one pass over the corpus, for a run that writes
        profiles); ``remarks``: with what others say of her too (``## 我·性格``: one pass
        over the corpus)."""
        graph = self.graph.current_or_none()
        out = profile_sources.operator_inputs(
            self._store(),
            self.tables(),
            operators,
            graph=graph,
            docs_by_operator=self._relation_docs(operators, graph),
            display=self.names.display_name,
            form_stages=self.names.form_stages,
        )
        store = self._store()
        # the corpus's spoken lines, read once for both passes (~4 s on the real corpus)
        spoken = list(store.spoken_lines()) if speech and remarks else None
        if speech:
            tokenizer = self.rag.tokenizer()
            profile_sources.speech_facts_for(store, out, self.names, tokenizer, spoken)
        if remarks:
            profile_sources.remarks_into(store, out, self.names, spoken)
        return out

    def _relation_docs(
        self, operators: Sequence[Operator], graph: RelationGraph | None
    ) -> dict[str, list[RelationDoc]]:
        """The relation documents of these operators' views (task D's sources), by graph
        node; {} without a graph."""
        if graph is None:
            return {}
        views = {graph.resolve(o.char_id) or o.char_id for o in operators}
        return self.rag.documents(TASK_D_SOURCES, views=views)

    def out_dir(self, out: Path | None) -> Path:
        """Where generated profiles go; never the user's folder."""
        target = Path(out) if out is not None else self.home_dir
        if self.user_dir is not None and target.resolve() == Path(self.user_dir).resolve():
            raise UsageError(
                f"{target} is ARKLORE_CHARS_DIR, the folder of hand-written profiles",
                hint="it is never written to: write to another folder (--out)",
            )
        return target

    @staticmethod
    def tasks(tasks: Sequence[str]) -> list[str]:
        try:
            return distill_run.parse_tasks(tasks)
        except ValueError as exc:
            raise UsageError(str(exc), hint="tasks are A, B, C, D, E or all") from None

    def distill(
        self,
        tasks: Sequence[str] = ("all",),
        operators: Sequence[str] | None = None,
        *,
        out: Path | None = None,
        retry: int | None = None,
        concurrency: int = 8,
        resume: bool = True,
        no_cache: bool = False,
        max_cost: float | None = None,
        generated_at: str | None = None,
        use_llm: bool = True,
        progress: Progress | None = None,
    ) -> distill_run.DistillReport:
        """Run the distillation tasks for ``operators`` (names; None: all) and write their
        profiles (``out``, default ``$ARKLORE_HOME/chars``). A task whose LLM setting
        (``LLM_DISTILL_<X>_*``, else the global one) has a model uses it; the others run
        their rule. Operators with a file in ``ARKLORE_CHARS_DIR`` or a tier-S file are
        skipped. Stops early at the circuit breaker or ``max_cost``; a rerun resumes.
        ``use_llm=False`` runs every task by its rule even with a model configured (the
        build)."""
        letters = self.tasks(tasks)
        self._require_for(letters)
        out_dir = self.out_dir(out)
        inputs = self.inputs(self.names.select(operators), speech=True, remarks=True)
        llm_tasks = [
            t for t in letters
            if use_llm and t in distill_run.TASK_NAMES
            and self._llm.configured(distill_run.TASK_NAMES[t])
        ]  # fmt: skip
        models = {t: self._llm.model(distill_run.TASK_NAMES[t]) for t in llm_tasks}
        protected = {}
        for inp in inputs:
            mine = self._user_file(inp.char_id)
            if mine is not None:
                protected[inp.char_id] = mine.path

        def run(llm: Any) -> distill_run.DistillReport:
            return distill_run.run_distill(
                self._store(),
                inputs,
                letters,
                out_dir=out_dir,
                llm=llm,
                llm_tasks=llm_tasks,
                models=models,
                protected=protected,
                files=self._llm.files,
                errors_path=self.errors_path,
                concurrency=concurrency,
                resume=resume,
                stop_after_unreachable=self._llm.breaker_failures,
                max_cost=max_cost,
                generated_at=generated_at or utc_now(),
                progress=progress,
                secrets=self._llm.secrets(),
            )

        try:
            if not llm_tasks:
                return run(None)
            with self._llm.session(no_cache=no_cache, retry=retry) as llm:
                return run(llm)
        finally:
            self._personas = {}

    def protected_files(self) -> list[tuple[str, str]]:
        """(char id, path) of each operator a file of the user's folder protects from
        distillation: with the names, all the rule-built profiles depend on from outside the
        corpus (the content of those files is read by a turn and the index, not here)."""
        user = self.user_files()
        if user is None:
            return []
        return sorted((cid, str(f.path)) for cid, f in user.by_id.items() if f.profile is not None)

    def refresh_candidates(self) -> int:
        """Task E (relation candidates, read from the graph) of every operator against the
        current graph, without the rest of distillation
        (:func:`~arklore.profiles.distill.refresh_task_e`): what a graph change alters in the
        rule-built profiles. Returns how many results changed."""
        ids = [o.char_id for o in self.names.select(None)]
        return distill_run.refresh_task_e(self._store(), self.graph.current_or_none(), ids)

    def distill_dry_run(
        self, tasks: Sequence[str] = ("all",), operators: Sequence[str] | None = None
    ) -> dict[str, Estimate]:
        """Task letter -> tokens and cost of its requests at its model's prices; sends nothing."""
        letters = self.tasks(tasks)
        self._require_for(letters)
        inputs = self.inputs(self.names.select(operators))
        return distill_run.dry_run(inputs, letters, self._llm.prices)

    def _require_for(self, letters: Sequence[str]) -> None:
        table_tasks = [t for t in letters if t in TABLE_TASKS]
        if table_tasks:
            self.require_tables(f"distill tasks {', '.join(table_tasks)} read")

    # -- review ------------------------------------------------------------------------------
    def review_queue(
        self, *, seed: int = 0, operators: Sequence[str] | None = None
    ) -> profile_review.Queue:
        """The review queue: an entry per operator with results or a profile, and every
        operator some source has nothing for ("no source: ...")."""
        self.require_tables("the review queue compares each operator's profile with")
        ops = self.names.select(operators)
        found = {op.char_id: f for op in ops if (f := self.find(op.char_id, own=True))}
        graph = self.graph.current_or_none()
        return profile_review.build_queue(
            ops,
            self.tables(),
            load_results(self._store()),
            profiles={cid: (f.path, f.profile) for cid, f in found.items()},
            has_story=profile_sources.operators_with_story_lines(self._store()),
            relation_docs=self._relation_docs(ops, graph),
            graph=graph,
            seed=seed,
            display=self.names.display_name,
        )

    def relative(self, path: Path | None) -> str | None:
        """A profile path as shown to a client: relative to its folder's parent, never the
        server's absolute layout (``chars/char_002_amiya.char``, ``user:銀灰.char``)."""
        if path is None:
            return None
        if self.user_dir is not None and path.parent == Path(self.user_dir):
            return f"user:{path.name}"
        try:
            return str(path.relative_to(self.home_dir.parent))
        except ValueError:
            return path.name

    def entries(self) -> list[dict[str, Any]]:
        """One entry per char id with a profile or a draft (the service's list); drafts to
        review first."""
        seen: dict[str, dict[str, Any]] = {}

        def add(cid: str, p: Path, prof: CharProfile | None, writable: bool) -> None:
            seen.setdefault(cid, {"char_id": cid}).update(
                path=self.relative(p),
                writable=writable,
                name=prof.name if prof else None,
                tier=prof.tier if prof else None,
                hand_edited=bool(prof and prof.hand_edited),
                unreadable=prof is None,
            )

        user = self.user_files()
        for f in (user.files if user is not None else [])[: MAX_QUEUE * 2]:
            if f.used and f.char_id is not None:
                add(f.char_id, f.path, f.profile, False)
        if self.home_dir.is_dir():
            for p in sorted(self.home_dir.iterdir())[: MAX_QUEUE * 2]:
                name = p.name
                if name.endswith(SUFFIX + DRAFT_SUFFIX):
                    cid = name[: -len(SUFFIX + DRAFT_SUFFIX)]
                    seen.setdefault(cid, {"char_id": cid}).setdefault(
                        "draft_beside", self.relative(p)
                    )
                    continue
                cid = name[: -len(SUFFIX)]
                if name.endswith(SUFFIX) and "path" not in seen.get(cid, {}):
                    add(cid, p, _read(p), True)
        out = []
        for e in seen.values():
            e.setdefault("path", None)
            e["needs_review"] = e.get("tier") == TIER_B or "draft_beside" in e
            out.append(e)
        out.sort(key=lambda e: (not e["needs_review"], e["char_id"]))
        return out[:MAX_QUEUE]

    def detail(self, char_id: str) -> dict[str, Any]:
        """Her profile (and a draft beside it) with the sections a chat may use and each quote
        beside its source, ``verbatim`` when found there (story lines from the store; voice
        lines from the voice table, ``null`` with a note when the table is not there)."""
        found = self.find(char_id, own=True)
        draft = self.home_dir / f"{char_id}{SUFFIX}{DRAFT_SUFFIX}"
        if found is None and not draft.is_file():
            raise ProfileNotFoundError(
                f"no profile for {char_id}",
                hint=f"run `arklore distill --op {char_id}` first",
                code="no_profile",
            )
        out: dict[str, Any] = {
            "char_id": char_id,
            "path": self.relative(found.path) if found else None,
            "writable": found.writable if found else True,
        }
        voice_table = self.tables().charword
        for key, p in (("profile", found.path if found else None),
                       ("draft", draft if draft.is_file() else None)):  # fmt: skip
            if p is None:
                out[key] = None
                continue
            prof = _read(p)
            if prof is None:
                out[key] = {"path": self.relative(p), "unreadable": True}
                continue
            out[key] = self._detail(prof, p, voice_table)
        return out

    def _detail(self, prof: CharProfile, path: Path, voice_table: Any) -> dict[str, Any]:
        quotes = prof.quotes()
        story_ids = [q.source_id.removeprefix("story:") for q in quotes if q.kind == "story"]
        lines = self._store().lines_by_id(story_ids) if story_ids else {}
        voices = self._voice_texts()
        qs = []
        for q in quotes:
            sid = q.source_id.partition(":")[2]
            note = None
            if q.kind == "story":
                src = lines.get(sid, (None, None))[1]
            elif voice_table is None:
                src, note = None, "voice table not available (set ARKLORE_GAMEDATA)"
            else:
                src = voices.get(sid)
            verbatim = None if note else (
                src is not None and normalize_ws(q.text) in normalize_ws(src)
            )  # fmt: skip
            qs.append({"text": q.text, "source_id": q.source_id, "note": q.note,
                       "source_text": src, "verbatim": verbatim, "unverified": note})  # fmt: skip
        allowed = allowed_sections(prof)
        return {
            "path": self.relative(path),
            "name": prof.name,
            "tier": prof.tier,
            "hand_edited": prof.hand_edited,
            "text": prof.text(),
            "header": prof.header,
            "allowed": [{"title": s.title, "tokens": s.tokens} for s in allowed.sections],
            "excluded": [{"title": t, "why": w} for t, w in allowed.excluded],
            "quotes": qs,
        }

    def _voice_texts(self) -> dict[str, str]:
        """charWordId -> voice text, every operator's (read once)."""
        if self._voices is None:
            self._voices = {
                v.word_id: v.text
                for lines in voice_index(self.tables().charword).values()
                for v in lines
            }
        return self._voices

    # -- the two writes ----------------------------------------------------------------------
    def approve(
        self, operator: str, *, accept_edits: bool = False, char_dir: Path | None = None
    ) -> Path:
        """A reviewer's approval: her tier-B draft becomes tier A (the marker only). Refused
        for a file in the user's folder, a file that is not a B draft, and a draft edited by
        hand since it was generated unless ``accept_edits``."""
        cid = self.names.resolve(operator)
        mine = self._user_file(cid)
        if mine is not None:
            raise ApproveRefusedError(
                f"{mine.path.name} is in ARKLORE_CHARS_DIR, the folder of hand-written profiles",
                hint="that folder is never written to; nothing to approve",
                code="read_only",
            )
        path = self.out_dir(char_dir) / f"{cid}{SUFFIX}"
        if not path.is_file():
            raise ProfileNotFoundError(
                f"{operator}: no profile at {self.relative(path)} (tier C)",
                hint=f"run `arklore distill --op {operator}` first",
                code="no_profile",
            )
        prof = CharProfile.read(path)
        if prof.tier != TIER_B:
            what = "already approved (tier A)" if prof.tier == "A" else "written by a person (S)"
            raise ApproveRefusedError(
                f"{self.relative(path)}: {what}",
                hint="only tier-B drafts ([AUTO-DRAFT]) can be approved",
                code="not_a_draft",
            )
        if prof.hand_edited and not accept_edits:
            raise ApproveRefusedError(
                f"{self.relative(path)} was edited by hand since it was generated (its hash no "
                "longer matches): approving would vouch for edits nobody checked against the "
                "sources",
                hint="review the edits, then approve with --accept-edits (HTTP: accept_edits=true)",
                code="hand_edited",
            )
        atomic_write_text(path, approve(prof.text()))
        self._personas = {}
        return path

    def save(self, operator: str, text: str) -> FoundProfile:
        """Replace her profile text in ``$ARKLORE_HOME/chars`` (never the user's folder)."""
        cid = self.names.resolve(operator)
        found = self.find(cid, own=True)
        if found is not None and not found.writable:
            raise ApproveRefusedError(
                f"{found.path.name} is in ARKLORE_CHARS_DIR (read only)",
                hint="edit that file by hand",
                code="read_only",
            )
        prof = CharProfile.parse(text)
        if prof.title_line is None:
            raise InvalidProfileError("a .char file starts with a '# <name>' title line")
        if prof.char_id not in (None, cid):
            raise InvalidProfileError(f"the header says operator {prof.char_id}, not {cid}")
        target = found.path if found is not None else self.home_dir / f"{cid}{SUFFIX}"
        atomic_write_text(target, text)
        self._personas = {}
        return FoundProfile(target, CharProfile.read(target), True, cid)

    # -- for the relation index --------------------------------------------------------------
    def anchor_documents(
        self, graph: RelationGraph, named: feedback.Named | None = None
    ) -> list[RelationDoc]:
        """The ``char_anchor`` relation documents of every profile whose tier allows them
        (``named``: who a text names for her, for the people of her ``核心经历``)."""
        return feedback.char_anchor_documents(
            [(f.path, f.profile, f.char_id) for f in self.all()], graph, named
        )


def _read(path: Path) -> CharProfile | None:
    try:
        return CharProfile.read(path)
    except ProfileFileError:
        return None
