"""The operator registry: every ``char_*`` id the tables know, with its Chinese name.

Why several tables: ``character_table`` here is a 2021 snapshot and ``handbook_info_table`` a
2024 one, while ``skin_table`` is current; an operator released later is only in skin_table
(whose ``displaySkin.modelName`` is the English appellation, not the Chinese name). The
Chinese name is taken from, best first (``Operator.name_source``):

1. ``character_table``   ``name``
2. ``char_patch_table``  ``patchChars[id].name`` (the 升变 patch forms of Amiya)
3. ``astr_chardict``     ASTR's ``zh_CN/chardict.json``, only when its path is passed
4. ``handbook_info``     the ``【代号】`` line of the 基础档案 archive text
5. ``skin_table``        ``displaySkin.modelName``: the English appellation, used as a last resort

ASTR's dictionary comes before the handbook because for an alternate form (异格) the handbook
gives the base's code name (``char_1013_chen2`` -> 陈), not the form's display name
(假日威龙陈); the code name is kept in ``code_names`` and offered as an alias.

Alternate forms are linked by ``char_meta_table.spCharGroups`` (group key = the base, the
other members its forms) and by ``char_patch_table.infos`` (``default`` = the base, the other
``tmplIds`` its patch forms). Two rules link forms the tables leave apart (``linked_by``,
:func:`same_person_links`; ``arklore names audit`` lists each with its evidence):

* **same name**: operators with exactly the same name are one person -- the events ship the
  ace operators again under new ids (Sharp ``char_508_aguard`` and ``char_609_acguad``, Pith,
  Touch, Stormeye, Mechanist...), and 暮落's second form carries her name. The base is the one
  the oldest table names (:data:`NAME_SOURCES` order), then the earliest id number. Without
  this rule the name is ambiguous and her story lines belong to nobody (288 lines as Sharp).
* **title prefix**: an operator named ``<title>·<name>``, where ``<name>`` is the name of
  exactly one person and ``<title>`` is nobody's name, is a form of that person
  (领主·Sharp -> Sharp).

The archives have no real-name field (the 基础档案 tags are 代号/性别/出身地/...), so
``real_names`` stays empty: real names the archives give in prose (客观履历 opening with the
name, 本名……) are proposed by ``arklore names audit`` and settled in ``data/aliases.toml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from arklore.core.errors import AmbiguousNameError, MalformedSourceError, UnknownNameError
from arklore.core.operators import Alias, Operator
from arklore.sources.gamedata import read_table

SRC_CHARACTER = "character_table"
SRC_PATCH = "char_patch_table"
SRC_CHARDICT = "astr_chardict"
SRC_HANDBOOK = "handbook_info"
SRC_SKIN = "skin_table"
NAME_SOURCES = (SRC_CHARACTER, SRC_PATCH, SRC_CHARDICT, SRC_HANDBOOK, SRC_SKIN)

_CODE_NAME = re.compile(r"【代号】[ \t\u3000]*([^\r\n]+)")
_TITLE_SEP = re.compile("[·・•‧∙･⋅]")
_BASIC_ARCHIVE = "基础档案"


@dataclass(slots=True)
class Registry:
    """Operators by id, with name lookup; plain data once built."""

    operators: dict[str, Operator] = field(default_factory=dict)
    team_names: dict[str, str] = field(default_factory=dict)  # nation/group/team id -> 名称
    npcs: dict[str, str] = field(default_factory=dict)  # npc_* id -> name: not operators
    code_names: dict[str, str] = field(default_factory=dict)  # char id -> 代号 when != name
    # char id -> names her archive gives in prose (:func:`archive_names`), for the audit
    archive_names: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # optional tables missing or unreadable
    _by_name: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index()

    def _index(self) -> None:
        self._by_name = {}
        for op in self.operators.values():
            for key in {_key(op.name), _key(op.appellation)} - {""}:
                self._by_name.setdefault(key, []).append(op.char_id)

    def __iter__(self) -> Iterator[Operator]:
        return iter(self.operators.values())

    def __len__(self) -> int:
        return len(self.operators)

    def __contains__(self, char_id: object) -> bool:
        return char_id in self.operators

    def get(self, char_id: str) -> Operator:
        try:
            return self.operators[char_id]
        except KeyError:
            raise UnknownNameError(f"no operator with id {char_id!r}") from None

    def by_name(self, name: str) -> list[Operator]:
        """Operators whose name or appellation is exactly ``name`` (Latin case-insensitive)."""
        return [self.operators[c] for c in self._by_name.get(_key(name), [])]

    def resolve(self, query: str) -> Operator:
        """An id, name or appellation -> one operator.

        A name shared only by a base and its own alternate forms (``Ch'en``) resolves to the
        base: in the story it is the same person.
        """
        query = query.strip()
        if query in self.operators:
            return self.operators[query]
        found = self.by_name(query)
        if not found:
            raise UnknownNameError(f"no operator named {query!r}")
        if len(found) == 1:
            return found[0]
        roots = {op.base_id or op.char_id for op in found}
        if len(roots) == 1 and (root := roots.pop()) in self.operators:
            return self.operators[root]
        raise AmbiguousNameError(query, sorted(op.char_id for op in found))

    def family(self, char_id: str) -> list[str]:
        """The base id followed by its alternate forms, for any member of the family."""
        op = self.get(char_id)
        base = self.operators.get(op.base_id or "", op)
        return [base.char_id, *base.alternate_ids]

    def faction_of(self, char_id: str) -> dict[str, str]:
        """``{"nation": 名称, "group": ..., "team": ...}`` for the ids the tables give."""
        op = self.get(char_id)
        out = {}
        for kind, pid in (("nation", op.nation_id), ("group", op.group_id), ("team", op.team_id)):
            if pid:
                out[kind] = self.team_names.get(pid, pid)
        return out

    def aliases(self) -> list[Alias]:
        """Surface forms for the alias table: names, appellations and handbook code names."""
        out = []
        for op in self:
            out.append(Alias(op.name, op.char_id, "registry", {"table": op.name_source}))
            if op.appellation and op.appellation != op.name:
                out.append(Alias(op.appellation, op.char_id, "appellation"))
            code = self.code_names.get(op.char_id)
            if code:
                out.append(Alias(code, op.char_id, "handbook", {"field": "代号"}))
        return out

    def to_rows(self) -> list[dict[str, Any]]:
        """One JSON-able dict per operator (the Operator fields), sorted by id."""
        return [asdict(self.operators[c]) for c in sorted(self.operators)]

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]], **extra: Any) -> Registry:
        """Inverse of :meth:`to_rows`; ``extra`` may carry team_names, npcs, code_names."""
        ops = {}
        for row in rows:
            op = Operator(**row)
            op.alternate_ids = list(op.alternate_ids)
            op.real_names = list(op.real_names)
            ops[op.char_id] = op
        return cls(operators=ops, **extra)

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-able: operators plus the id -> name side tables."""
        return {
            "operators": self.to_rows(),
            "team_names": dict(self.team_names),
            "npcs": dict(self.npcs),
            "code_names": dict(self.code_names),
            "archive_names": dict(self.archive_names),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Registry:
        return cls.from_rows(
            data.get("operators", []),
            team_names=dict(data.get("team_names", {})),
            npcs=dict(data.get("npcs", {})),
            code_names=dict(data.get("code_names", {})),
            archive_names=dict(data.get("archive_names", {})),
        )


REQUIRED_TABLES = ("character_table", "skin_table")
"""Without these the registry would silently lose most operators: missing or unreadable is an
error naming the file."""
OPTIONAL_TABLES = (
    "char_patch_table",
    "char_meta_table",
    "handbook_info_table",
    "handbook_team_table",
)
"""Without these some names, forms or factions are missing: a warning in the ingest summary."""


def build_registry(excel_root: Path, chardict: Path | None = None) -> Registry:
    """Build the registry from the excel tables (and ASTR's chardict.json when given).

    Raises MalformedSourceError naming the file when a required table is missing or cannot be
    read; an optional table (or the chardict) that is missing or unreadable becomes a line in
    ``Registry.warnings``.
    """
    warnings: list[str] = []

    def table(name: str) -> dict[str, Any]:
        required = name in REQUIRED_TABLES
        try:
            data = read_table(excel_root, name)
        except MalformedSourceError as exc:
            if required:
                raise MalformedSourceError(exc.path, exc.reason, hint=_REQUIRED_HINT) from None
            warnings.append(f"{name}.json skipped: {exc.reason}")
            return {}
        if data is None:
            if required:
                raise MalformedSourceError(
                    str(excel_root / f"{name}.json"), "missing", hint=_REQUIRED_HINT
                )
            warnings.append(f"{name}.json not found")
            return {}
        return data

    chars = table("character_table").copy()
    patch = table("char_patch_table")
    skins = table("skin_table")
    meta = table("char_meta_table")
    handbook = table("handbook_info_table")
    teams = table("handbook_team_table")

    patch_chars: dict[str, dict[str, Any]] = patch.get("patchChars") or {}
    book: dict[str, dict[str, Any]] = handbook.get("handbookDict") or {}
    skin_names = _skin_model_names(skins)
    codes = {cid: c for cid, e in book.items() if (c := _code_name(e))}
    astr: dict[str, str] = {}
    if chardict is not None:
        try:
            astr = _read_chardict(chardict)
        except MalformedSourceError as exc:
            warnings.append(f"{chardict.name} skipped: {exc.reason}")
    groups: dict[str, list[str]] = meta.get("spCharGroups") or {}

    ids: set[str] = set(chars) | set(patch_chars) | set(skin_names) | set(book) | set(groups)
    ids |= {c for members in groups.values() for c in members}
    ids = {c for c in ids if c.startswith("char_")}

    ops: dict[str, Operator] = {}
    for cid in sorted(ids):
        row = chars.get(cid) or patch_chars.get(cid) or {}
        name, source = _pick_name(cid, chars, patch_chars, astr, codes, skin_names)
        if not name:
            continue
        power = row.get("mainPower") or {}
        ops[cid] = Operator(
            char_id=cid,
            name=name,
            appellation=row.get("appellation") or skin_names.get(cid),
            name_source=source,
            nation_id=row.get("nationId") or power.get("nationId"),
            group_id=row.get("groupId") or power.get("groupId"),
            team_id=row.get("teamId") or power.get("teamId"),
            profession=row.get("profession"),
            rarity=_stars(row.get("rarity")),
        )
    _link_alternates(ops, groups, patch.get("infos") or {})
    for link in same_person_links(ops):
        _link(ops, link.base_id, link.char_id, link.rule)
    code_names = {c: n for c, n in codes.items() if c in ops and n != ops[c].name}
    team_names = {k: v["powerName"] for k, v in teams.items() if isinstance(v, dict)}
    npcs = {k: v.get("name") or "" for k, v in (handbook.get("npcDict") or {}).items()}
    names = {c: found for c in ops if (found := archive_names(book.get(c)))}
    return Registry(
        ops, team_names=team_names, npcs=npcs, code_names=code_names, warnings=warnings,
        archive_names=names,
    )  # fmt: skip


_REQUIRED_HINT = (
    "the operator registry needs this table: restore it (e.g. re-clone the data, `make data`) "
    "and run `arklore build` again"
)


def _pick_name(
    cid: str,
    chars: dict[str, dict[str, Any]],
    patch_chars: dict[str, dict[str, Any]],
    astr: dict[str, str],
    codes: dict[str, str],
    skin_names: dict[str, str],
) -> tuple[str, str]:
    for source, value in (
        (SRC_CHARACTER, (chars.get(cid) or {}).get("name")),
        (SRC_PATCH, (patch_chars.get(cid) or {}).get("name")),
        (SRC_CHARDICT, astr.get(cid)),
        (SRC_HANDBOOK, codes.get(cid)),
        (SRC_SKIN, skin_names.get(cid)),
    ):
        if value and value.strip():
            return value.strip(), source
    return "", ""


def _link_alternates(
    ops: dict[str, Operator], groups: dict[str, list[str]], patch_infos: dict[str, dict[str, Any]]
) -> None:
    """spCharGroups: key = base; char_patch_table.infos: ``default`` = base."""
    families: list[tuple[str, list[str], str]] = [
        (k, list(v), "char_meta_table") for k, v in groups.items()
    ]
    families += [
        (v.get("default") or k, list(v.get("tmplIds") or []), "char_patch_table")
        for k, v in patch_infos.items()
    ]
    for base, members, table in families:
        if base not in ops:
            continue
        for alt in members:
            if alt == base or alt not in ops:
                continue
            ops[alt].base_id = base
            ops[alt].linked_by = table
            if alt not in ops[base].alternate_ids:
                ops[base].alternate_ids.append(alt)


_OBJECTIVE = "客观履历"
_NAME = r"([^\s，,。；;：:“”\"'（）()、！!？?【】]{2,16})"
_OPENING = re.compile(r"^\s*" + _NAME + r"[，,]")
_REAL_NAME = re.compile(r"本名" + _NAME)


def archive_names(entry: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Names an operator's archive gives in prose, with where and how often: the name her
    客观履历 opens with (``玛莉娅·临光，来自卡西米尔的……``; when the opening is her code name
    followed by a name, ``鞭刃佐菲娅，……``, that name) and any ``本名……``; for a full name also
    its given name (the part before ``·``). ``mentions`` counts the name in her whole archive.
    Candidates only: roles open some archives too (企鹅物流员工，……), so the audit proposes one
    only when the corpus backs it (:mod:`arklore.names.audit`)."""
    sections = [
        (str(sec.get("storyTitle") or ""), st["storyText"])
        for sec in (entry or {}).get("storyTextAudio") or []
        if isinstance(sec, dict)
        for st in sec.get("stories") or []
        if isinstance(st, dict) and isinstance(st.get("storyText"), str)
    ]
    whole = "\n".join(t for _, t in sections)
    code = _code_name(entry or {}) or ""
    found: dict[str, dict[str, Any]] = {}
    for title, text in sections:
        hits = [(m.group(1), "本名") for m in _REAL_NAME.finditer(text)]
        if title == _OBJECTIVE and (m := _OPENING.match(text)):
            opening = m.group(1)
            if not (code and opening.startswith(code)):
                hits.insert(0, (opening, "opening"))
            elif 2 <= len(rest := opening[len(code) :]) <= 8 and not _TITLE_SEP.match(rest):
                hits.insert(0, (rest, "opening, after her code name"))
        for name, how in hits:
            for form in dict.fromkeys([name, _TITLE_SEP.split(name)[0]]):
                if len(form) >= 2 and form not in found:
                    found[form] = {"name": form, "full": name, "section": title, "how": how,
                                   "mentions": whole.count(form)}  # fmt: skip
    return list(found.values())


SAME_NAME = "same_name"
TITLE_PREFIX = "title_prefix"
_ID_NUMBER = re.compile(r"^char_(\d+)_")


@dataclass(frozen=True, slots=True)
class Link:
    """One form linked to a base by a names rule, with what shows it."""

    char_id: str
    base_id: str
    rule: str  # SAME_NAME | TITLE_PREFIX
    evidence: str  # for people: "both named Sharp (character_table, astr_chardict)"


def _root(ops: dict[str, Operator], cid: str) -> str:
    return ops[cid].base_id or cid


def _base_rank(op: Operator) -> tuple[int, int, str]:
    src = NAME_SOURCES.index(op.name_source) if op.name_source in NAME_SOURCES else 99
    m = _ID_NUMBER.match(op.char_id)
    return src, int(m.group(1)) if m else 1 << 30, op.char_id


def same_person_links(ops: dict[str, Operator]) -> list[Link]:
    """The links the two names rules (module docstring) make between people the game's
    tables leave apart, in a stable order. Operators already in one family are left alone,
    so applying the links again adds nothing."""
    out: list[Link] = []
    by_name: dict[str, list[str]] = {}
    for cid in sorted(ops):
        by_name.setdefault(ops[cid].name, []).append(cid)
    roots_of = {name: sorted({_root(ops, c) for c in ids}) for name, ids in by_name.items()}
    merged: dict[str, str] = {}  # root -> the base it joins
    for name, roots in sorted(roots_of.items()):
        if len(roots) < 2:
            continue
        base = min(roots, key=lambda c: _base_rank(ops[c]))
        tables = ", ".join(sorted({ops[c].name_source for c in roots}))
        for r in roots:
            if r != base:
                merged[r] = base
                out.append(Link(r, base, SAME_NAME, f"both named {name} ({tables})"))
    names = set(by_name)
    for cid in sorted(ops):
        op = ops[cid]
        if op.base_id or op.alternate_ids or cid in merged:
            continue
        parts = _TITLE_SEP.split(op.name)
        if len(parts) != 2 or not parts[0].strip() or parts[0].strip() in names:
            continue
        roots = sorted({merged.get(r, r) for r in roots_of.get(parts[1].strip(), [])})
        if len(roots) != 1 or roots[0] == cid:
            continue
        out.append(Link(cid, roots[0], TITLE_PREFIX,
                        f"{op.name} = title {parts[0].strip()} + {parts[1].strip()}"))  # fmt: skip
    return out


def _link(ops: dict[str, Operator], base: str, form: str, rule: str) -> None:
    """``form`` (and any forms of its own) become alternate forms of ``base``."""
    moved = [form, *ops[form].alternate_ids]
    ops[form].alternate_ids = []
    for cid in moved:
        ops[cid].base_id = base
        if cid == form:
            ops[cid].linked_by = rule
        if cid not in ops[base].alternate_ids:
            ops[base].alternate_ids.append(cid)


def _skin_model_names(skins: dict[str, Any]) -> dict[str, str]:
    """char id -> modelName of its default skin (``#1``/build-in), else of any skin."""
    default = {cid: m.get("0") for cid, m in (skins.get("buildinEvolveMap") or {}).items()}
    out: dict[str, str] = {}
    for sid, skin in (skins.get("charSkins") or {}).items():
        cid = skin.get("charId") or ""
        model = ((skin.get("displaySkin") or {}).get("modelName") or "").strip()
        if not model:
            continue
        if cid not in out or sid == default.get(cid) or sid == f"{cid}#1":
            out[cid] = model
    return out


def _code_name(entry: dict[str, Any]) -> str | None:
    for section in entry.get("storyTextAudio") or []:
        if section.get("storyTitle") != _BASIC_ARCHIVE:
            continue
        for story in section.get("stories") or []:
            m = _CODE_NAME.search(story.get("storyText") or "")
            if m and m.group(1).strip():
                return m.group(1).strip()
    return None


def _read_chardict(path: Path) -> dict[str, str]:
    """ASTR chardict.json ``{"chen": {"name": "陈", "id": "010"}}`` -> ``{"char_010_chen": "陈"}``."""
    if not path.is_file():
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise MalformedSourceError(str(path), f"not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MalformedSourceError(str(path), "expected a JSON object")
    return {
        f"char_{v['id']}_{k}": v["name"]
        for k, v in data.items()
        if isinstance(v, dict) and v.get("id") and v.get("name")
    }


def _stars(rarity: Any) -> int | None:
    """Star count 1-6: the 2021 table stores 0-5, newer ones ``TIER_6``."""
    if isinstance(rarity, int) and not isinstance(rarity, bool):
        return rarity + 1
    if isinstance(rarity, str) and rarity.startswith("TIER_") and rarity[5:].isdigit():
        return int(rarity[5:])
    return None


def _key(name: str | None) -> str:
    return (name or "").strip().casefold()
