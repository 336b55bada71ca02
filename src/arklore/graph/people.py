"""Names -> graph node ids, behind one small class so the rest of the graph code does not
depend on how the alias table / mention matcher are built.

* an operator name, alias, appellation or char id -> the operator's *base* char id (alternate
  forms 异格 are the same person);
* the Doctor under any of its names (博士, Dr.{@nickname}, 刀客塔, ...) -> ``npc:博士``;
* a name several operators share at the deciding alias source -> unresolved (never a silent pick);
* any other name -> ``npc:<folded name>`` (:func:`npc_id`).
"""

from __future__ import annotations

from collections.abc import Iterable

from arklore.core.model import DOCTOR, NICKNAME_TOKEN
from arklore.corpus.store import Store
from arklore.graph.model import DOCTOR_ID
from arklore.names.aliases import fold
from arklore.names.registry import Registry

DOCTOR_NAMES = frozenset(
    {DOCTOR, "Dr.", "Dr", "Doctor", "刀客塔", NICKNAME_TOKEN, "{@nickname}", "Dr.{@nickname}"}
)


def npc_id(name: str) -> str:
    """Stable id of a person without an operator id: ``npc:`` + the folded, trimmed name."""
    name = name.strip()
    return DOCTOR_ID if name in DOCTOR_NAMES else "npc:" + fold(name)


def is_unknown_speaker(name: str) -> bool:
    """``？？？`` and friends: a speaker the script does not name."""
    return not name.strip(" ?？.。…") if name else True


def registry_from_store(store: Store, team_names: dict[str, str] | None = None) -> Registry:
    from arklore.names.build import load_operators

    ops = load_operators(store)
    return Registry({op.char_id: op for op in ops}, team_names=dict(team_names or {}))


class People:
    """Resolves names to node ids with the alias table of a mention matcher."""

    def __init__(self, registry: Registry, matcher) -> None:
        self.registry = registry
        self.matcher = matcher  # arklore.names.matcher.MentionMatcher
        self.table = matcher.table
        self._cache: dict[str, str | None] = {}

    @classmethod
    def from_store(cls, store: Store, registry: Registry) -> People:
        """The store's alias table (registry, portrait statistics, the user file): the same
        names ``arklore names`` resolves."""
        from arklore.names.build import store_matcher

        return cls(registry, store_matcher(store))

    @classmethod
    def build(cls, registry: Registry, *, user_aliases: bool = True) -> People:
        """From a bare registry (no store), e.g. for tests."""
        from arklore.names.matcher import build_matcher

        return cls(registry, build_matcher(operators=list(registry), user_aliases=user_aliases))

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
        else:
            out = self.operator(clean)
            if out is None and not self.is_ambiguous(clean):
                out = npc_id(clean)
        self._cache[name] = out
        return out

    def operator_name(self, char_id: str) -> str:
        op = self.registry.operators.get(char_id)
        return op.name if op else (self.table.canonical_name(char_id) or char_id)

    def alternates(self) -> dict[str, str]:
        return {c: self.base(c) for c in sorted(self.registry.operators) if self.base(c) != c}

    def base_operators(self) -> Iterable[str]:
        return sorted({self.base(c) for c in self.registry.operators})
