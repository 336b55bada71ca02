"""Names -> graph node ids, behind one class so the rest of the graph code does not depend on
how the alias table / mention matcher are built.

* an operator name, alias, appellation or char id -> the operator's *base* char id (alternate
  forms 异格 are the same person);
* the Doctor under any of its names (博士, Dr.{@nickname}, 刀客塔, ...) -> ``npc:博士``;
* a name several operators share at the deciding alias source -> unresolved (never a silent pick);
* any other name -> ``npc:<folded name>`` (:func:`npc_id`).

:meth:`People.user_node` is the stricter lookup for names in hand-edited files (matrix,
imports): an operator, the Doctor, a speaker of the corpus or an explicit ``npc:<name>``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from arklore.core.model import DOCTOR, DOCTOR_NAMES
from arklore.corpus.store import Store
from arklore.graph.model import DOCTOR_ID
from arklore.names.aliases import AliasTable, fold
from arklore.names.matcher import MentionMatcher
from arklore.names.registry import Registry


def npc_id(name: str) -> str:
    """Stable id of a person without an operator id: ``npc:`` + the folded, trimmed name."""
    name = name.strip()
    return DOCTOR_ID if name in DOCTOR_NAMES else "npc:" + fold(name)


def is_unknown_speaker(name: str) -> bool:
    """``？？？`` and friends: a speaker the script does not name."""
    return not name.strip(" ?？.。…") if name else True


NPC_MIN_LINES = 20
"""Lines an NPC speaks in the whole corpus to become a node (``ARKLORE_NPC_MIN_LINES``). The
design's upstream rule is 30 lines or a 0.04 share; measured on the real corpus
(docs/graph.md, "Who becomes a node"), 20 lines with no share admits the same NPCs of the
curated relations and the eval sets as the upstream rule does, with fewer extras."""
NPC_MIN_SHARE = 0.0
"""Share of one story's spoken lines that also makes an NPC a node (``ARKLORE_NPC_MIN_SHARE``;
0: off; the upstream rule's 0.04)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """Which named NPC speakers become graph nodes: ``min_lines`` in the whole corpus, or
    ``min_share`` (when above 0) of the spoken lines of one story (its event, else its
    stage)."""

    min_lines: int = NPC_MIN_LINES
    min_share: float = NPC_MIN_SHARE

    def admitted(
        self, store: Store, counts: Mapping[str, tuple[int, int]] | None = None
    ) -> set[str]:
        """The speaker names this rule admits (generic roles are refused later); ``counts``:
        the store's speaker counts, when the caller holds them already."""
        counts = store.speaker_counts() if counts is None else counts
        big = {name for name, (n, _) in counts.items() if n >= self.min_lines}
        if self.min_share <= 0:
            return big
        story = {i.stage_path: i.event_id or i.stage_path for i in store.stage_infos()}
        per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        totals: dict[str, int] = defaultdict(int)
        for ln in store.spoken_lines():
            if ln.uncertain:
                continue
            g = story.get(ln.stage_path, ln.stage_path)
            per[ln.speaker][g] += 1
            totals[g] += 1
        return big | {
            name for name, by in per.items()
            if any(n >= self.min_share * totals[g] for g, n in by.items())
        }  # fmt: skip


class People:
    """Resolves names to node ids with the alias table of a mention matcher.

    ``speakers`` (the corpus speaker names) are the NPCs a hand-edited file may name; their
    display names are collected in :attr:`npc_names` (node id -> name as written).
    ``display`` names an operator's node (the names layer's display name: the name the story
    uses when the registry's is Latin, 可露希尔 not Closure); default the registry name.
    ``strangers`` (``[[stranger]]`` labels: 林 is her father there, 医生 several people) are
    nobody as a speaker and as a name a line calls or mentions; a hand-edited file naming
    the operator by it still means her (:meth:`operator`). ``admission``: which named NPC
    speakers become nodes (:class:`Admission`).
    """

    def __init__(
        self,
        registry: Registry,
        matcher: MentionMatcher | Callable[[], MentionMatcher],
        speakers: Iterable[str] = (),
        display: Callable[[str], str] | None = None,
        strangers: Iterable[str] = (),
        admission: Admission | None = None,
        table: AliasTable | None = None,
    ) -> None:
        self.registry = registry
        self.admission = admission or Admission()  # which NPC speakers become nodes
        self.strangers = frozenset(strangers)
        self._display = display
        if isinstance(matcher, MentionMatcher):
            self._matcher: MentionMatcher | None = matcher
            self._make_matcher: Callable[[], MentionMatcher] | None = None
            self.table = matcher.table
        else:  # made on first use (a second on the real corpus): resolving needs the table only
            if table is None:
                raise ValueError("a matcher made on first use needs its alias table")
            self._matcher, self._make_matcher = None, matcher
            self.table = table
        self._cache: dict[str, str | None] = {}
        self.npc_names: dict[str, str] = {}
        for name in speakers:
            nid = self.node(name)
            if nid is not None and nid.startswith("npc:"):
                self.npc_names.setdefault(nid, name.strip())
        self.npc_names[DOCTOR_ID] = DOCTOR

    @property
    def matcher(self) -> MentionMatcher:
        """Finds the names a text mentions (:class:`MentionMatcher`), made on first use."""
        if self._matcher is None:
            assert self._make_matcher is not None
            self._matcher = self._make_matcher()
        return self._matcher

    def base(self, char_id: str) -> str:
        op = self.registry.operators.get(char_id)
        if op is not None and op.base_id and op.base_id in self.registry.operators:
            return op.base_id
        return self.table.base_of(char_id)

    def operator(self, name: str) -> str | None:
        """Base char id for an operator name/alias/id; None when unknown or ambiguous."""
        name = name.strip()
        if name in self.registry.operators:
            return self.base(name)
        r = self.table.resolve(name)
        return self.base(r.ids[0]) if len(r.ids) == 1 else None

    def is_ambiguous(self, name: str) -> bool:
        return self.table.resolve(name.strip()).ambiguous

    def node(self, name: str) -> str | None:
        """Node id for a speaker/person name (cached); None for unknown or ambiguous names."""
        hit = self._cache.get(name, "")
        if hit != "":
            return hit
        out: str | None
        clean = name.strip()
        if not clean or is_unknown_speaker(clean):
            out = None
        elif clean in DOCTOR_NAMES:
            out = DOCTOR_ID
        elif clean.startswith("npc:"):
            out = clean if len(clean) > 4 else None
        elif clean in self.registry.operators:
            out = self.base(clean)
        elif clean in self.strangers:  # somebody else sharing her name: nobody's
            out = None
        else:  # what operator() and is_ambiguous() say, from one lookup (a hot path)
            r = self.table.resolve(clean)
            if len(r.ids) == 1:
                out = self.base(r.ids[0])
            elif r.ambiguous:
                out = None
            else:
                out = npc_id(clean)
        self._cache[name] = out
        return out

    def user_node(self, name: str) -> str | None:
        """A name in a hand-edited file -> node id: an operator, the Doctor, a corpus speaker
        or an explicit ``npc:<name>``; None when unknown or ambiguous."""
        name = name.strip()
        if name.startswith("npc:"):
            nid = npc_id(name[4:]) if len(name) > 4 else None
            if nid is not None:
                self.npc_names.setdefault(nid, name[4:].strip())
            return nid
        if name in DOCTOR_NAMES:
            return DOCTOR_ID
        op = self.operator(name)
        if op is not None:
            return op
        nid = self.node(name)
        return nid if nid in self.npc_names else None

    def operator_name(self, char_id: str) -> str:
        """What a chat calls the operator (``display``), else her registry name."""
        op = self.registry.operators.get(char_id)
        if op is not None and self._display is not None:
            return self._display(char_id)
        return op.name if op else (self.table.canonical_name(char_id) or char_id)

    def alternates(self) -> dict[str, str]:
        return {c: self.base(c) for c in sorted(self.registry.operators) if self.base(c) != c}

    def base_operators(self) -> Iterable[str]:
        return sorted({self.base(c) for c in self.registry.operators})
