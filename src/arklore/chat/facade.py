"""The chat layer as the workspace uses it: who a chat is with (the names layer's resolver plus
the app's manifest), and one builder per block of a turn's system prompt, each rendering what
its layer decides:

* **persona**: the profiles layer's :meth:`~arklore.profiles.facade.ProfilesFacade.persona`;
* **doctor**: her view of the Doctor, every turn (:mod:`arklore.chat.doctor`): her profile's
  ``## 我·关于博士`` as her tier allows it, and her relation to the Doctor;
* **relations**: the relation index's context, under the one tier-C rule
  (:meth:`ChatFacade.relation_context`, also what ``arklore context`` and the HTTP route give);
* **memories**: the events layer's :meth:`~arklore.events.facade.EventsFacade.memories`;
* **group**: each present operator's relations with the others.

The CLI, the HTTP service and the Python API all call :meth:`ChatFacade.turn`. Every block
renders the script's player placeholder (``{@nickname}``) as the ``nickname`` setting: none
reaches a prompt.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from arklore.chat.doctor import doctor_block
from arklore.chat.manifest import Manifest, load_manifest
from arklore.chat.persona import persona_block
from arklore.chat.turn import Speaker, Turn, check_history, preamble
from arklore.core.blocks import (
    BLOCK_ORDER,
    EXEMPLARS,
    GROUP,
    MEMORIES,
    RELATIONS,
    Block,
    StageRef,
    empty_block,
    fit_lines,
    fitted_block,
    stage_of,
    unique,
)
from arklore.core.errors import ArkloreError, UnknownNameError
from arklore.core.model import DOCTOR as DOCTOR_NAME
from arklore.core.text import check_message, render_nickname
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.events.facade import EventsFacade
from arklore.events.memories import Memories, MemoryItem, about_her, summary_shown
from arklore.graph.facade import GraphFacade
from arklore.graph.model import DOCTOR_ID
from arklore.graph.named import Span, named_ids
from arklore.names.facade import NamesFacade
from arklore.profiles.charfile import ABOUT_DOCTOR, TIER_C
from arklore.profiles.facade import ProfilesFacade
from arklore.profiles.persona import OPT_IN_VAR, Persona
from arklore.profiles.userdir import FileCheck
from arklore.rag.context import Relation, RelationContext
from arklore.rag.exemplars import Scene
from arklore.rag.facade import RagFacade
from arklore.settings import Settings

PERSONA_CACHE = 2048
"""Persona blocks kept in memory (one per operator, file state and budget; cleared when full)."""

SUMMARY_CHARS = 60
"""Characters of the official summary shown per appearance in the memories block."""

NO_EVENTS = "no story events extracted yet: her appearances (stages she is in) stand in"


@dataclass(frozen=True)
class Budgets:
    """Tokens per block per turn and items per block: the settings' ``ARKLORE_*_TOKEN_BUDGET``,
    ``ARKLORE_MEMORY_K`` and ``ARKLORE_EXEMPLARS_K``, whose defaults are the numbers' one home."""

    persona: int
    relations: int
    memories: int
    group: int
    memories_k: int
    doctor: int
    exemplars: int
    exemplars_k: int

    @classmethod
    def from_settings(cls, st: Settings) -> Budgets:
        return cls(
            persona=st.persona_token_budget,
            relations=st.rag_token_budget,
            memories=st.memory_token_budget,
            group=st.group_token_budget,
            memories_k=st.memory_k,
            doctor=st.doctor_token_budget,
            exemplars=st.exemplar_token_budget,
            exemplars_k=st.exemplars_k,
        )


NAME_ONLY = "  （这一段里没有本人的台词，只是被人叫到名字）"
"""Under an appearance where she has no line (:meth:`ChatFacade._appearance_text`)."""
NOT_IN_SUMMARY = "（概要未提到{name}）"
"""After a stage summary that names none of her names (:meth:`ChatFacade._appearance_text`):
it tells another thread of the stage (15% of the entries shown over 80 real operators, once
a summary naming her ranks a stage higher: :data:`arklore.events.memories.W_ABOUT`)."""


class ChatFacade:
    """Resolution and block builders over the lower layers' facades (see the module doc)."""

    def __init__(
        self,
        *,
        names: NamesFacade,
        graph: GraphFacade,
        rag: RagFacade,
        events: EventsFacade,
        profiles: ProfilesFacade,
        manifest_path: Path | None = None,
        budgets: Budgets | None = None,
        max_message_chars: int = 8000,
        tier_c_relations: bool = False,
        nickname: str = "博士",
        counter: TokenCounter = count_tokens,
    ) -> None:
        self.nickname = nickname  # what {@nickname} becomes in anything a chat receives
        self.names = names
        self.graph = graph
        self.rag = rag
        self.events = events
        self.profiles = profiles
        self.manifest_path = manifest_path
        self.budgets = budgets or Budgets.from_settings(Settings())  # the defaults
        self.max_message_chars = max_message_chars
        self.tier_c_relations = tier_c_relations
        self.counter = counter
        self._lock = threading.Lock()
        self._manifest: Manifest | None = None
        self._persona_cache: dict[tuple[str, int, frozenset[str]], tuple[Persona, Block]] = {}

    def reload(self) -> None:
        self._manifest = None
        self._persona_cache = {}

    # -- who ---------------------------------------------------------------------------------
    def manifest(self) -> Manifest | None:
        if self.manifest_path is None:
            return None
        if self._manifest is None:
            self._manifest = load_manifest(
                self.manifest_path, self.names.resolve, self.names.family
            )
        return self._manifest

    def speaker(self, name: str, *, check_manifest: bool = True) -> Speaker:
        """Any name the alias table knows (or an id) -> the operator; UnknownOperatorError with
        the closest names, AmbiguousNameError, or OperatorNotAvailableError (manifest)."""
        cid = self.names.resolve(name)
        sp_name = self.names.display_name(cid)
        if check_manifest:
            m = self.manifest()
            if m is not None:
                m.check(cid, sp_name)
        node: str | None
        try:
            node = self.graph.current().resolve(cid)
        except ArkloreError:
            node = None
        return Speaker(cid, sp_name, tuple(self.names.family(cid)), node)

    def operator_info(self, sp: Speaker) -> dict[str, Any]:
        """The names layer's record of her, with her graph node, tier and availability."""
        info = self.names.record(sp.char_id)
        info["graph_node"] = sp.node_id
        info["tier"] = self.profiles.persona(sp.char_id).tier
        m = self.manifest()
        info["available"] = m is None or m.allows(sp.char_id)
        return info

    # -- persona -----------------------------------------------------------------------------
    def persona(
        self, sp: Speaker, budget: int | None = None, skip_quotes: Iterable[str] = ()
    ) -> Block:
        """Her persona block (kept per persona, budget and ``skip_quotes``: the source ids of
        quotes another block of the turn injects already)."""
        budget = budget or self.budgets.persona
        p = self.profiles.persona(sp.char_id)
        skip = frozenset(skip_quotes)
        key = (sp.char_id, budget, skip)
        hit = self._persona_cache.get(key)
        if hit is not None and hit[0] is p:  # the profiles layer keeps one per file state
            return copy.deepcopy(hit[1])
        block = persona_block(
            p, budget=budget, counter=self.counter, nickname=self.nickname,
            leave_out=(ABOUT_DOCTOR,), skip_quotes=skip,  # the doctor block's
        )  # fmt: skip
        with self._lock:
            if len(self._persona_cache) >= PERSONA_CACHE:
                self._persona_cache.clear()
            self._persona_cache[key] = (p, block)
        return copy.deepcopy(block)

    def chars_check(self, folder: Path | None = None) -> list[FileCheck]:
        """``arklore chars check``: the profiles layer's check of the user's ``.char`` files
        (or ``folder``), with the sections the persona block injects within its budget."""
        checks = self.profiles.check(folder)
        for c in checks:
            if c.persona is not None and c.persona.sections:
                block = persona_block(c.persona, budget=self.budgets.persona, counter=self.counter)
                c.injected = [it["title"] for it in block.items]
                c.left_out = block.reason
        return checks

    # -- relations ---------------------------------------------------------------------------
    def relation_context(
        self,
        sp: Speaker,
        message: str,
        exclude: Iterable[str] = (),
        budget: int | None = None,
        spans: list[Span] | None = None,
    ) -> RelationContext:
        """Her relation context for ``message``: anchors plus her view of the people it names
        (``spans``: :meth:`named_spans`, found here when not given).
        The one tier-C rule: with no profile (tier C) a chat gets no relation context either,
        unless the user opted in; then the context is empty with the reason as a warning."""
        budget = budget or self.budgets.relations
        check_message(message, self.max_message_chars)
        self.graph.current()  # no graph built: that is the first thing to fix (one-line error)
        if not self.tier_c_relations and self.profiles.persona(sp.char_id).tier == TIER_C:
            return RelationContext(
                "", [], [], 0, budget,
                warnings=[f"no profile for {sp.name} (tier C): no relation context either "
                          f"(the design's rule; {OPT_IN_VAR}=1 opts in)"],
            )  # fmt: skip
        if sp.node_id is None:
            raise UnknownNameError(f"{sp.name} ({sp.char_id}) is not in the relation graph")
        if spans is None:
            spans = self.named_spans(sp, message)
        # the player's name rendered before the block is fitted: a long nickname needs room
        return self.rag.context(
            sp.node_id, message, exclude, budget=budget, spans=spans,
            prefer=self.names.form_stages(sp.char_id), name=sp.name,
            shown=lambda text: render_nickname(text, self.nickname),
        )  # fmt: skip

    def _relations(self, sp: Speaker, message: str, exclude: list[str], spans: list[Span]) -> Block:
        """A turn's relations block: her relation context, or empty with the reason."""
        budget = self.budgets.relations
        try:
            ctx = self.relation_context(sp, message, exclude, spans=spans)
        except ArkloreError as exc:
            return empty_block(RELATIONS, budget, exc.one_line())
        if not ctx.text and ctx.warnings and not ctx.anchors:
            return empty_block(RELATIONS, budget, ctx.warnings[0])
        return self.relation_block(sp, ctx, excluded=bool(exclude))

    def relation_block(self, sp: Speaker, ctx: RelationContext, *, excluded: bool = False) -> Block:
        rels = [("anchor", r) for r in ctx.anchors] + [("contextual", r) for r in ctx.contextual]
        reason = ""
        if not ctx.text:
            graph = self.graph.current()
            if not graph.get_top_anchor_relations(sp.node_id or sp.char_id, 1):
                reason = f"{sp.name} has no relations in the graph"
            elif excluded:
                reason = (
                    "every relation was left out: already recalled (l3_targets), present "
                    "in the group, or the Doctor (the doctor block's)"
                )
            else:
                reason = f"no relation fits the budget of {ctx.budget} tokens"
        line_ids = unique(lid for _, r in rels for lid in r.evidence_line_ids)
        return Block(
            RELATIONS,
            ctx.text,
            ctx.tokens,
            ctx.budget,
            reason,
            line_ids=line_ids,
            stages=self.stage_refs(stage_of(x) for x in line_ids),
            items=[{"kind": kind, **r.to_dict()} for kind, r in rels],
            meta={
                "anchors": len(ctx.anchors),
                "contextual": len(ctx.contextual),
                "embedded": ctx.embedded,
                "timings_ms": ctx.timings_ms,
                "warnings": list(ctx.warnings),
            },
        )

    def group(self, people: Sequence[Speaker], budget: int | None = None) -> Block:
        """Each person's relations with the others present (strongest kept within budget)."""
        budget = budget or self.budgets.group
        if len(people) < 2:
            return empty_block(GROUP, budget, "not a group chat (fewer than two operators)")
        try:
            rag = self.rag.service()
            rows: list[tuple[Speaker, Relation]] = []
            for p in people:
                if p.node_id is None:
                    continue
                others = [q.node_id for q in people if q.node_id and q.node_id != p.node_id]
                rows += [(p, r) for r in rag.get_all_relationships_for(p.node_id, others)]
        except ArkloreError as exc:
            return empty_block(GROUP, budget, exc.one_line())
        if not rows:
            return empty_block(GROUP, budget, "no relations between the operators present")
        lines = [
            f"- {p.name}→{self.names.named(r.target_id, r.target_name)}："
            f"{render_nickname(r.text, self.nickname)}"
            for p, r in rows
        ]

        def weakest(kept: list[int]) -> int:
            return min(kept, key=lambda i: (rows[i][1].strength, -i))

        header = "【在场者之间的关系】"
        text, kept = fit_lines(header, lines, budget, self.counter, drop_order=weakest)
        kept_rows = [rows[i] for i in kept]
        line_ids = unique(lid for _, r in kept_rows for lid in r.evidence_line_ids)
        return fitted_block(
            GROUP,
            text,
            budget,
            self.counter,
            noun="relation",
            total=len(rows),
            kept=len(kept),
            line_ids=line_ids,
            stages=self.stage_refs(stage_of(x) for x in line_ids),
            items=[
                {"from_id": p.char_id, "from_name": p.name, **r.to_dict()} for p, r in kept_rows
            ],
            meta={"present": [p.char_id for p in people]},
        )

    # -- her view of the Doctor -------------------------------------------------------------
    def doctor(self, sp: Speaker, budget: int | None = None) -> Block:
        """How she stands with the Doctor, in her own words: every turn gets it (the chat is
        with the Doctor), apart from her other relations (:mod:`arklore.chat.doctor`)."""
        budget = budget or self.budgets.doctor
        p = self.profiles.persona(sp.char_id)
        allowed = self.tier_c_relations or p.tier != TIER_C  # the one tier-C rule
        return doctor_block(
            p, self.doctor_relation(sp) if allowed else None, budget=budget,
            relation_allowed=allowed, nickname=self.nickname, counter=self.counter,
        )  # fmt: skip

    def doctor_relation(self, sp: Speaker) -> Relation | None:
        """Her relation to the Doctor as the relation index describes it (the document that
        speaks for the pair); None without a graph node, an index or such a document."""
        if sp.node_id is None:
            return None
        try:
            rels = self.rag.service().get_all_relationships_for(sp.node_id, [DOCTOR_ID])
        except ArkloreError:
            return None
        return next((r for r in rels if r.doc_id is not None), None)

    # -- her own lines -----------------------------------------------------------------------
    def exemplars(self, sp: Speaker, message: str, named: Sequence[str] = ()) -> Block:
        """A few scenes of her own story lines that fit the message, verbatim, as a short
        script (how she talks): the rag layer picks them (preferring the people ``named`` and
        the Doctor); the weakest scenes are left out whole to fit the budget."""
        budget = self.budgets.exemplars
        try:
            scenes = self.rag.exemplars(sp.family, message, named, self.budgets.exemplars_k)
            if not scenes:
                if not self.rag.exemplars_built():
                    why = "her scenes were never indexed (run `arklore build`)"
                else:
                    why = f"{sp.name} speaks in no story stage"
                return empty_block(EXEMPLARS, budget, why)
        except ArkloreError as exc:
            return empty_block(EXEMPLARS, budget, exc.one_line())
        refs = {r.path: r for r in self.stage_refs(s.stage_path for s in scenes)}
        parts = [self._scene_text(refs[s.stage_path], s) for s in scenes]

        def weakest(kept: list[int]) -> int:
            return max(kept)  # scenes come best first

        header = self._scenes_header(sp, scenes)
        text, kept = fit_lines(header, parts, budget, self.counter, drop_order=weakest)
        picked = [scenes[i] for i in kept]
        # no longer than ``header``, so it still fits; the same when no scene was left out
        shown = header if len(picked) == len(scenes) else self._scenes_header(sp, picked)
        if text and shown != header:
            text = "\n".join([shown, *(parts[i] for i in kept)])
        return fitted_block(
            EXEMPLARS,
            text,
            budget,
            self.counter,
            noun="scene",
            total=len(scenes),
            kept=len(kept),
            line_ids=unique(x for s in picked for x in s.line_ids),
            stages=[refs[s.stage_path] for s in picked],
            items=[s.to_dict() | {"stage": refs[s.stage_path].to_dict()} for s in picked],
            meta={"scenes": len(picked), "named": list(named)},
        )

    def _scene_text(self, ref: StageRef, scene: Scene) -> str:
        """One scene as a short script under its stage label: ``名字：台词``, narration in
        （）, the Doctor's choices as 博士：…; the player's placeholder rendered."""
        out = [f"〔{ref.heading()}〕"]
        for ln in scene.lines:
            said = render_nickname(ln.shown(), self.nickname)
            if ln.kind == "choice":
                out.append(f"{DOCTOR_NAME}：{said}")
            elif ln.speaker:
                out.append(f"{self._label(ln.speaker)}：{said}")
            else:
                out.append(f"（{said}）")
        return "\n".join(out)

    def _label(self, label: str, told: set[str] | None = None) -> str:
        """A speaker label as a block shows it: a popup's avatar id as the person's name; with
        ``told``, a label that does not say who it is is followed by who, the first time in
        ``told``'s scope (``恩希欧迪斯（银灰）：``)."""
        who = self.names.who_is(label)
        if who is not None and label.startswith("$"):
            return who
        shown = render_nickname(label, self.nickname)
        if who is None or told is None or label in told:
            return shown
        told.add(label)
        return f"{shown}（{who}）"

    def _scenes_header(self, sp: Speaker, scenes: Sequence[Scene]) -> str:
        """The exemplars heading; it names the other labels her lines carry in these scenes
        (恩希欧迪斯 for 银灰, 玛嘉烈 for 临光), so a model knows those lines are hers, and who
        the others are where a label or a name in a line does not say it (恩雅即初雪)."""
        lines = [ln for s in scenes for ln in s.lines]
        aka = unique(
            ln.speaker
            for ln in lines
            if ln.hers and ln.speaker != sp.name and not ln.speaker.startswith("$")
        )  # an avatar id is shown as her name (:meth:`_label`), never as another of hers
        also = f"；剧情里也写作{'、'.join(aka)}" if aka else ""
        others = self.names.glossary(
            [ln.speaker for ln in lines if ln.speaker and not ln.hers],
            [ln.text for ln in lines],
            skip=sp.family,
        )
        known = "、".join(f"{a}即{b}" for a, b in others if not a.startswith("$"))
        return f"【{sp.name}在剧情里说过的话（原文{also}{'；' + known if known else ''}）】"

    # -- who the message names ---------------------------------------------------------------
    def named(self, sp: Speaker, message: str) -> list[str]:
        """The people ``message`` names, as graph nodes, in order, without her: the one rule
        the relations, memories and exemplars blocks share (:meth:`named_spans`)."""
        return named_ids(self.named_spans(sp, message))

    def named_spans(self, sp: Speaker, message: str) -> list[Span]:
        """Who ``message`` names for her, with where (:func:`arklore.graph.named.people_named`):
        operators by any alias (an ambiguous name: the candidates she has a relation with),
        people of her graph by their name, and kinship and role words resolved to the people
        her relations name (陈「舅舅…」-> 魏彦吾). Without a graph node for her: the operators
        the names layer resolves."""
        ops = [s for s in self.rag.operator_spans(message) if s[0] not in sp.family]
        graph = self.graph.current_or_none()
        if graph is None or sp.node_id is None:
            found: dict[tuple[int, int], list[str]] = {}
            for cid, start, end in ops:
                found.setdefault((start, end), []).append(cid)
            return [(ids[0], s, e) for (s, e), ids in found.items() if len(ids) == 1]
        return [
            x for x in self.graph.people_named(sp.node_id, message, ops) if x[0] not in sp.family
        ]

    # -- memories ----------------------------------------------------------------------------
    def memories(
        self,
        sp: Speaker,
        query: str,
        k: int | None = None,
        named: Sequence[str] | None = None,
    ) -> Block:
        """Her memories for ``query`` as the memories block: extracted first-person memories,
        else her appearances (the events layer decides which and in what order; ``named``:
        the people the query names, when the turn already knows them)."""
        budget = self.budgets.memories
        try:
            mem = self.events.memories(
                sp.char_id, query or None, k or self.budgets.memories_k, named=named
            )
        except ArkloreError as exc:
            return empty_block(MEMORIES, budget, exc.one_line())
        return self.memories_block(sp, mem)

    def memories_block(self, sp: Speaker, memories: Memories) -> Block:
        """``memories`` rendered within the memories budget, each item citing its stage."""
        budget = self.budgets.memories
        items = memories.items
        kind = memories.kind
        if not items:
            return empty_block(MEMORIES, budget, memories.reason or "no memories", kind=kind)

        def weakest(kept: list[int]) -> int:  # the lowest-ranked entry (the latest without a query)
            return min(kept, key=lambda i: (items[i].score or 0.0, -i))

        if kind == "memories":
            header = f"【{sp.name}的记忆】"
            lines = [
                render_nickname(f"- 在{m.ref.label()}里：{m.text}", self.nickname) for m in items
            ]
            text, kept = fit_lines(header, lines, budget, self.counter, drop_order=weakest)
        else:  # fewer of her lines per appearance before fewer appearances
            header = f"【{sp.name}的出场记录（按发布顺序）】"
            hers = self.names.known_as(sp.family)  # her display name among them
            best: tuple[list[MemoryItem], str, list[int]] | None = None
            for n in range(max(len(m.quotes) for m in items), -1, -1):
                shown = [_with_quotes(m, n) for m in items]
                lines = [self._appearance_text(m, sp, hers) for m in shown]
                text, kept = fit_lines(header, lines, budget, self.counter, drop_order=weakest)
                if best is None or len(kept) > len(best[2]):
                    best = (shown, text, kept)
                if len(kept) == len(items):
                    break
            assert best is not None
            items, text, kept = best
        picked = [items[i] for i in kept]
        meta: dict[str, Any] = {"kind": kind, "query": memories.query}
        if kind != "memories":
            meta["note"] = NO_EVENTS
        noun = "memory" if kind == "memories" else "appearance"
        return fitted_block(
            MEMORIES,
            text,
            budget,
            self.counter,
            noun=noun,
            total=len(items),
            kept=len(kept),
            line_ids=unique(x for m in picked for x in m.line_ids),
            stages=[m.ref for m in picked],
            items=[m.to_dict() for m in picked],
            meta=meta,
        )

    def _appearance_text(self, m: MemoryItem, sp: Speaker, hers: frozenset[str]) -> str:
        """An appearance: where, the game's summary, then her own lines there (verbatim), or
        that she has none there: a stage where she is only called by name (or talked about
        in a way that reads like it) must not read as one she took part in. A summary that
        names none of her names, outside her own records, says so (:data:`NOT_IN_SUMMARY`):
        it tells another thread of the stage, which a model must not take for what she did."""
        told: set[str] = set()
        quotes = [
            f"  {self._label(q['speaker'], told)}：「{render_nickname(q['text'], self.nickname)}」"
            for q in m.quotes
        ]
        if m.kind == "appearance" and not m.spoken:
            quotes.append(NAME_ONLY)
        summary = summary_shown(m.summary or "", hers, SUMMARY_CHARS)  # the part it shows
        about = about_her(m.stage_path, summary, hers, sp.family)
        aside = NOT_IN_SUMMARY.format(name=sp.name) if summary and not about else ""
        head = render_nickname(_appearance_head(m, summary) + aside, self.nickname)
        return "\n".join([head, *quotes])

    # -- the turn ----------------------------------------------------------------------------
    def turn(
        self,
        operator: str,
        message: str,
        history: Iterable[Mapping[str, Any]] = (),
        participants: Iterable[str] = (),
        l3_targets: Iterable[str] = (),
    ) -> Turn:
        """The system-prompt blocks for one turn with ``operator`` (see :mod:`.turn`).

        Raises a one-line ArkloreError for an unknown, ambiguous or unavailable operator or
        participant and for a message (or history item) over the size limit; a block that
        cannot be filled is empty with its reason instead."""
        t0 = time.perf_counter()
        check_message(message, self.max_message_chars)
        check_history(history, self.max_message_chars)
        sp = self.speaker(operator)
        present = [sp]
        for name in participants:
            p = self.speaker(name)
            if all(p.char_id != q.char_id for q in present):
                present.append(p)
        timings: dict[str, float] = {}

        def timed(name: str, fn: Callable[..., Block], *args: Any, **kw: Any) -> Block:
            t = time.perf_counter()
            b = fn(*args, **kw)
            timings[name] = round((time.perf_counter() - t) * 1000, 3)
            return b

        t = time.perf_counter()
        spans = self.named_spans(sp, message)
        named = named_ids(spans)
        timings["named"] = round((time.perf_counter() - t) * 1000, 3)
        doctor = timed("doctor", self.doctor, sp)
        in_doctor = [str(it["source_id"]) for it in doctor.items if it.get("source_id")]
        persona = timed("persona", self.persona, sp, None, in_doctor)
        exclude = list(l3_targets) + [p.node_id or p.char_id for p in present[1:]]
        if doctor.meta.get("relation"):  # each person once: the doctor block has her view
            exclude.append(DOCTOR_ID)
        relations = timed("relations", self._relations, sp, message, exclude, spans)
        # in a group chat the others present count as named: the scenes they share with her
        with_them = list(dict.fromkeys([*named, *(p.node_id or p.char_id for p in present[1:])]))
        memories = timed("memories", self.memories, sp, message, named=with_them)
        group = timed("group", self.group, present)
        exemplars = timed("exemplars", self.exemplars, sp, message, with_them)
        blocks = sorted(
            [persona, doctor, relations, memories, group, exemplars],
            key=lambda b: BLOCK_ORDER.index(b.name),
        )
        system = "\n\n".join([preamble(sp, present)] + [b.text for b in blocks if b.text])
        timings["total"] = round((time.perf_counter() - t0) * 1000, 3)
        return Turn(
            sp.char_id,
            sp.name,
            message,
            [p.char_id for p in present],
            blocks,
            system,
            self.counter(system),
            timings,
        )

    # -- stages ------------------------------------------------------------------------------
    def stage_refs(self, paths: Iterable[str]) -> list[StageRef]:
        return self.events.stage_refs(unique(paths))


def _with_quotes(m: MemoryItem, n: int) -> MemoryItem:
    """The appearance with at most ``n`` of her lines (and only their ids among the quotes')."""
    if len(m.quotes) <= n:
        return m
    dropped = {q["line_id"] for q in m.quotes[n:]}
    return replace(m, quotes=m.quotes[:n], line_ids=[x for x in m.line_ids if x not in dropped])


def _appearance_head(m: MemoryItem, summary: str) -> str:
    """Where, and the game's ``summary`` of the stage as the entry shows it."""
    head = m.ref.heading()
    return f"- {head}" + (f"：{summary}" if summary else "")
