"""Operators as the registry knows them; plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROFESSION_NAMES: dict[str, str] = {
    "PIONEER": "先锋",
    "WARRIOR": "近卫",
    "TANK": "重装",
    "SNIPER": "狙击",
    "CASTER": "术师",
    "MEDIC": "医疗",
    "SUPPORT": "辅助",
    "SPECIAL": "特种",
}
"""The game's profession ids (``character_table``/``char_patch_table`` ``profession``) as its
Chinese client names them."""


@dataclass(slots=True)
class Operator:
    char_id: str  # "char_010_chen"
    name: str  # Chinese code name: "陈"
    appellation: str | None = None  # English name: "Ch'en"
    name_source: str = (
        ""  # which table gave the name: character_table | handbook_info | skin_table | ...
    )
    nation_id: str | None = None
    group_id: str | None = None
    team_id: str | None = None
    base_id: str | None = None  # for an alternate form (异格): the base character's id
    alternate_ids: list[str] = field(default_factory=list)  # for a base: its alternate forms
    real_names: list[str] = field(default_factory=list)  # from archives, e.g. 陈晖洁
    profession: str | None = None
    rarity: int | None = None
    # for an alternate form: what linked it to its base, the game's tables (char_meta_table,
    # char_patch_table) or a names rule (same_name, title_prefix: arklore.names.registry)
    linked_by: str | None = None


@dataclass(slots=True)
class Alias:
    """One surface form that names an operator, with where that knowledge came from."""

    alias: str
    char_id: str
    source: str  # registry | appellation | alternate_form | handbook | portrait | avatar | user
    evidence: dict[str, Any] = field(default_factory=dict)  # e.g. {"share": 0.93, "lines": 412}
