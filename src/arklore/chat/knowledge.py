"""What a chat turn reads, behind one object the workspace builds: name resolution with the
manifest, and one builder per block (persona, relations, group). The memories block comes from
one function the workspace passes in (``Workspace.memories``), so the events subsystem can
replace it without touching this layer.

Handles are given as zero-argument callables (the workspace's cached getters), so a workspace
reload after a rebuild is picked up on the next turn.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from arklore.chat.appearances import Appearances
from arklore.chat.manifest import Manifest, load_manifest
from arklore.chat.persona import find_profile_path, persona_block
from arklore.core.blocks import (
    GROUP,
    MEMORIES,
    RELATIONS,
    Block,
    StageRef,
    empty_block,
    fit_lines,
    stage_of,
    unique,
)
from arklore.core.errors import AmbiguousNameError, ArkloreError, UnknownNameError
from arklore.core.tokens import TokenCounter, count_tokens
from arklore.corpus.store import Store
from arklore.events.memories import Memories
from arklore.names.aliases import AliasTable
from arklore.names.registry import Registry
from arklore.profiles.charfile import TIER_C, CharProfile, allowed_sections
from arklore.rag.context import Relation, RelationContext, RelationRAG

PERSONA_CACHE = 2048
"""Persona blocks kept in memory (one per operator and budget; cleared when full)."""

MemoriesFn = Callable[[str, str, int], Block]
"""(operator, query, k) -> the memories block: ``Workspace.memories``."""


@dataclass(frozen=True)
class Budgets:
    """Tokens per block per turn (settings ``ARKLORE_*_TOKEN_BUDGET``) and memories per turn."""

    persona: int = 1200
    relations: int = 800
    memories: int = 300
    group: int = 400
    memories_k: int = 3


@dataclass(frozen=True, slots=True)
class Speaker:
    """An operator of a chat, resolved: her id, name, every form, and her graph node."""

    char_id: str
    name: str
    family: tuple[str, ...]  # her base id first, then alternate forms
    node_id: str | None  # her node in the relation graph (base id), None without a graph


class UnknownOperatorError(UnknownNameError):
    """No operator has this name; carries the closest names the alias table knows."""

    def __init__(self, name: str, closest: list[str]) -> None:
        hint = ("did you mean " + ", ".join(closest) + "?") if closest else None
        super().__init__(f"no operator is called {name!r}", hint=hint)
        self.name = name
        self.closest = closest


class ChatKnowledge:
    """Resolution and block builders over the workspace's handles (see the module doc)."""

    def __init__(
        self,
        *,
        store: Callable[[], Store],
        aliases: Callable[[], AliasTable],
        registry: Callable[[], Registry],
        rag: Callable[[], RelationRAG],
        find_targets: Callable[[str], list[str]],
        memories: MemoriesFn,
        profile_dirs: Sequence[Path],
        manifest_path: Path | None = None,
        budgets: Budgets = Budgets(),
        max_message_chars: int = 8000,
        tier_c_relations: bool = False,
        counter: TokenCounter = count_tokens,
    ) -> None:
        self._store = store
        self._aliases = aliases
        self._registry = registry
        self._rag = rag
        self.find_targets = find_targets  # message -> char ids it names (resolved only)
        self._memories = memories
        self.profile_dirs = [Path(d) for d in profile_dirs]
        self.manifest_path = manifest_path
        self.budgets = budgets
        self.max_message_chars = max_message_chars
        self.tier_c_relations = tier_c_relations
        self.counter = counter
        self._lock = threading.Lock()
        self._manifest: Manifest | None = None
        self._appearances: Appearances | None = None
        self._display: list[str] | None = None
        self._names_of: dict[str, list[str]] | None = None
        self._persona_cache: dict[tuple[Any, ...], Block] = {}

    # -- names -------------------------------------------------------------------------------
    def manifest(self) -> Manifest | None:
        if self.manifest_path is None:
            return None
        if self._manifest is None:
            self._manifest = load_manifest(self.manifest_path, self._resolve_id, self.family)
        return self._manifest

    def _resolve_id(self, name: str) -> str:
        table = self._aliases()
        res = table.resolve(name)
        if res.ambiguous:
            raise AmbiguousNameError(name, list(res.ids))
        if res.char_id is None:
            raise UnknownOperatorError(name, self.closest(name))
        return res.char_id

    def closest(self, name: str, n: int = 5) -> list[str]:
        """Operator names closest to ``name`` (registry names and appellations)."""
        if self._display is None:
            names: set[str] = set()
            for op in self._registry():
                names.add(op.name)
                if op.appellation:
                    names.add(op.appellation)
            self._display = sorted(names)
        name = name.strip()[:64]
        if not name:
            return []
        near = get_close_matches(name, self._display, n=n, cutoff=0.4)
        if len(near) < n:  # names that contain the query, or that it contains
            near += [x for x in self._display if (name in x or x in name) and x not in near][
                : n - len(near)
            ]
        return near

    def registry(self) -> Registry:
        return self._registry()

    def aliases_of(self, char_ids: Iterable[str]) -> list[str]:
        """Every (folded) name the alias table resolves to one of ``char_ids``."""
        if self._names_of is None:
            table = self._aliases()
            inv: dict[str, list[str]] = {}
            for key in table.surfaces():
                ids = table.decided_ids(key)
                if len(ids) == 1:
                    inv.setdefault(ids[0], []).append(key)
            self._names_of = inv
        return sorted({a for c in char_ids for a in self._names_of.get(c, ())})

    def family(self, char_id: str) -> list[str]:
        reg = self._registry()
        return reg.family(char_id) if char_id in reg else [char_id]

    def name_of(self, char_id: str) -> str:
        reg = self._registry()
        if char_id in reg:
            return reg.get(char_id).name
        return self._aliases().canonical_name(char_id) or char_id

    def speaker(self, name: str, *, check_manifest: bool = True) -> Speaker:
        """Any name the alias table knows (or an id) -> the operator; UnknownOperatorError with
        the closest names, AmbiguousNameError, or OperatorNotAvailableError (manifest)."""
        cid = self._resolve_id(name)
        sp_name = self.name_of(cid)
        if check_manifest:
            m = self.manifest()
            if m is not None:
                m.check(cid, sp_name)
        node: str | None
        try:
            node = self._rag().graph.resolve(cid)
        except ArkloreError:
            node = None
        return Speaker(cid, sp_name, tuple(self.family(cid)), node)

    def operator_info(self, sp: Speaker) -> dict[str, Any]:
        reg = self._registry()
        op = reg.get(sp.char_id) if sp.char_id in reg else None
        info: dict[str, Any] = {
            "id": sp.char_id,
            "name": sp.name,
            "forms": list(sp.family),
            "graph_node": sp.node_id,
            "aliases": self.aliases_of(sp.family),
        }
        if op is not None:
            info.update(
                appellation=op.appellation,
                base_id=op.base_id,
                real_names=list(op.real_names),
                profession=op.profession,
                rarity=op.rarity,
                faction=reg.faction_of(sp.char_id),
            )
        m = self.manifest()
        info["available"] = m is None or m.allows(sp.char_id)
        return info

    # -- persona -----------------------------------------------------------------------------
    def profile(self, sp: Speaker) -> CharProfile | None:
        ids = [sp.char_id] + [c for c in sp.family[:1] if c != sp.char_id]
        path = find_profile_path(ids, self.profile_dirs)
        return CharProfile.read(path) if path is not None else None

    def tier(self, sp: Speaker) -> str:
        return allowed_sections(self.profile(sp)).tier

    def persona(self, sp: Speaker, budget: int | None = None) -> Block:
        """Her persona block; kept per (file, modification time, size, budget), so a turn
        only pays for a ``stat`` until the file changes."""
        budget = budget or self.budgets.persona
        ids = [sp.char_id] + [c for c in sp.family[:1] if c != sp.char_id]
        path = find_profile_path(ids, self.profile_dirs)
        key: tuple[Any, ...] | None = None
        if path is not None:
            try:
                st = path.stat()
                key = (sp.char_id, str(path), st.st_mtime_ns, st.st_size, budget)
            except OSError:
                key = None
            hit = self._persona_cache.get(key) if key else None
            if hit is not None:
                return copy.deepcopy(hit)
        prof = CharProfile.read(path) if path is not None else None
        block = persona_block(prof, sp.name, budget=budget, counter=self.counter)
        if prof is not None and prof.char_id not in (None, sp.char_id):
            block.meta["profile_of"] = prof.char_id  # her base form's profile
        if key is not None:
            with self._lock:
                if len(self._persona_cache) >= PERSONA_CACHE:
                    self._persona_cache.clear()
                self._persona_cache[key] = copy.deepcopy(block)
        return block

    # -- relations ---------------------------------------------------------------------------
    def relation_context(
        self, sp: Speaker, message: str, exclude: Iterable[str] = (), budget: int | None = None
    ) -> RelationContext:
        if sp.node_id is None:
            raise UnknownNameError(f"{sp.name} ({sp.char_id}) is not in the relation graph")
        return self._rag().build_context(
            sp.node_id, message, list(exclude), budget=budget or self.budgets.relations
        )

    def relations(
        self,
        sp: Speaker,
        message: str,
        exclude: Iterable[str] = (),
        *,
        tier: str | None = None,
        budget: int | None = None,
    ) -> Block:
        budget = budget or self.budgets.relations
        if tier == TIER_C and not self.tier_c_relations:
            return empty_block(
                RELATIONS, budget,
                f"no profile for {sp.name} (tier C): no relation context either (the design's "
                "rule; ARKLORE_TIER_C_RELATIONS=1 opts in)",
            )  # fmt: skip
        try:
            if sp.node_id is None:
                self._rag().graph  # noqa: B018  (raises when no graph was built)
                return empty_block(RELATIONS, budget, f"{sp.name} is not in the relation graph")
            ctx = self.relation_context(sp, message, exclude, budget)
        except ArkloreError as exc:
            return empty_block(RELATIONS, budget, exc.one_line())
        return self.relation_block(sp, ctx, excluded=bool(list(exclude)))

    def relation_block(self, sp: Speaker, ctx: RelationContext, *, excluded: bool = False) -> Block:
        rels = [("anchor", r) for r in ctx.anchors] + [("contextual", r) for r in ctx.contextual]
        reason = ""
        if not ctx.text:
            graph = self._rag().graph
            if not graph.get_top_anchor_relations(sp.node_id or sp.char_id, 1):
                reason = f"{sp.name} has no relations in the graph"
            elif excluded:
                reason = "every relation was left out: already recalled (l3_targets) or present in the group"
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
            },
        )

    def group(self, people: Sequence[Speaker], budget: int | None = None) -> Block:
        """Each person's relations with the others present (strongest kept within budget)."""
        budget = budget or self.budgets.group
        if len(people) < 2:
            return empty_block(GROUP, budget, "not a group chat (fewer than two operators)")
        try:
            rag = self._rag()
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
        lines = [f"- {p.name}→{r.target_name}：{r.text}" for p, r in rows]

        def weakest(kept: list[int]) -> int:
            return min(kept, key=lambda i: (rows[i][1].strength, -i))

        header = "【在场者之间的关系】"
        text, kept = fit_lines(header, lines, budget, self.counter, drop_order=weakest)
        reason = ""
        if not text:
            reason = f"not even one relation fits the group budget of {budget} tokens"
        elif len(kept) < len(rows):
            reason = f"{len(rows) - len(kept)} weaker relation(s) left out to fit {budget} tokens"
        kept_rows = [rows[i] for i in kept]
        line_ids = unique(lid for _, r in kept_rows for lid in r.evidence_line_ids)
        return Block(
            GROUP,
            text,
            self.counter(text) if text else 0,
            budget,
            reason,
            line_ids=line_ids,
            stages=self.stage_refs(stage_of(x) for x in line_ids),
            items=[
                {"from_id": p.char_id, "from_name": p.name, **r.to_dict()} for p, r in kept_rows
            ],
            meta={"present": [p.char_id for p in people]},
        )

    # -- memories ----------------------------------------------------------------------------
    def memories(self, sp: Speaker, query: str, k: int | None = None) -> Block:
        """The memories block, from the function the workspace passed (see the module doc)."""
        try:
            return self._memories(sp.char_id, query, k or self.budgets.memories_k)
        except ArkloreError as exc:
            return empty_block(MEMORIES, self.budgets.memories, exc.one_line())

    def memories_block(self, sp: Speaker, memories: Memories) -> Block:
        """Her extracted first-person memories (``Workspace.memories``) as the memories block,
        each citing its stage, within the memories budget."""
        items = [m for m in memories.items if m.kind == "memory"]
        if not items:
            return empty_block(MEMORIES, self.budgets.memories, memories.reason or "no memories")
        lines = [
            f"- 在{StageRef(m.stage_path, m.stage_code, m.story_name, m.event_name).label()}里："
            f"{m.text}"
            for m in items
        ]
        text, kept = fit_lines(f"【{sp.name}的记忆】", lines, self.budgets.memories, self.counter)
        picked = [items[i] for i in kept]
        reason = ""
        if not text:
            reason = (
                f"not even one memory fits the memories budget of {self.budgets.memories} tokens"
            )
        elif len(picked) < len(items):
            reason = f"{len(items) - len(picked)} memories left out to fit the budget"
        return Block(
            MEMORIES,
            text,
            self.counter(text) if text else 0,
            self.budgets.memories,
            reason,
            line_ids=unique(x for m in picked for x in m.line_ids),
            stages=self.stage_refs(m.stage_path for m in picked),
            items=[m.to_dict() for m in picked],
            meta={"kind": "memories", "query": memories.query},
        )

    def appearances(self) -> Appearances:
        with self._lock:
            if self._appearances is None:
                self._appearances = Appearances(self._store())
            return self._appearances

    def appearances_block(self, sp: Speaker, query: str, k: int) -> Block:
        """Her appearances as the memories block (no events extracted yet)."""
        named = [c for c in self.find_targets(query) if c not in sp.family] if query else []
        others = [self.family(c) for c in unique(named)]
        return self.appearances().block(
            sp.family, sp.name, k=k, budget=self.budgets.memories, others=others,
            counter=self.counter,
        )  # fmt: skip

    # -- stages ------------------------------------------------------------------------------
    def stage_refs(self, paths: Iterable[str]) -> list[StageRef]:
        out = []
        apps = self.appearances()
        for p in unique(paths):
            info = apps.info(p)
            out.append(
                StageRef(p, info.story_code, info.story_name, info.event_name)
                if info is not None
                else StageRef(p)
            )
        return out
