"""Alias table: every surface form that names an operator, with precedence between sources.

Input is always a plain list of :class:`~arklore.core.operators.Alias` so any source (registry,
handbook real names, portrait statistics, the user file) can contribute without this module
knowing about it.

Precedence (first wins, see :data:`SOURCE_PRECEDENCE`): ``user`` > ``registry`` >
``alternate_form`` > ``appellation`` > ``handbook`` > ``portrait`` > ``avatar`` (avatar ids
of popup speakers, :mod:`arklore.names.avatars`).  For one surface, only the ids
given by the best-ranked source that knows the surface count; several ids at that rank make the
surface *ambiguous* (never a silent pick).  One exception, because it is the same person: if all
those ids are one base character and its alternate forms (异格), the base id is chosen.

Removal: an alias with ``source == "block"`` removes ``(alias, char_id)`` from every source
(``char_id == "*"`` removes the surface for every operator).  ``data/aliases.toml`` writes these
as ``[[block]]`` entries.

Surfaces are compared after :func:`fold`, a length-preserving normalisation (full-width Latin
letters/digits to half-width, ASCII case-folded, middle-dot variants unified), so offsets in the
folded text are offsets in the original text.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from arklore.core.errors import InputFileError
from arklore.core.operators import Alias, Operator

SOURCE_PRECEDENCE: tuple[str, ...] = (
    "user",
    "registry",
    "alternate_form",
    "appellation",
    "handbook",
    "portrait",
    "avatar",
)
BLOCK_SOURCE = "block"
STRANGER_SOURCE = "stranger"
"""``[[stranger]]`` in the user file: a story speaker label that is somebody else who shares
an operator's name (the troupe master 酒神 of 红丝绒, not the operator form 酒神): its lines are
nobody's, the name still finds the operator in chat."""
_RANK = {s: i for i, s in enumerate(SOURCE_PRECEDENCE)}
_UNKNOWN_RANK = len(SOURCE_PRECEDENCE)

# --- folding --------------------------------------------------------------------------------
_FOLD_MAP: dict[int, int] = {}
for _c in range(0xFF10, 0xFF1A):  # full-width digits
    _FOLD_MAP[_c] = _c - 0xFEE0
for _c in range(0xFF21, 0xFF3B):  # full-width upper -> ascii lower
    _FOLD_MAP[_c] = _c - 0xFEE0 + 32
for _c in range(0xFF41, 0xFF5B):  # full-width lower
    _FOLD_MAP[_c] = _c - 0xFEE0
_FOLD_MAP[0xFF0D] = ord("-")  # －
_FOLD_MAP[0xFF0E] = ord(".")  # ．
_FOLD_MAP[0xFF3F] = ord("_")
for _c in (0x30FB, 0x2022, 0x2027, 0x2219, 0xFF65, 0x22C5):  # ・ • ‧ ∙ ･ ⋅
    _FOLD_MAP[_c] = 0x00B7
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_FOLD_NEEDED = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_FOLD_MAP)) + "]")
# (ASCII upper case is left to str.lower(), which is much faster than translate)


def _fold_one(m: re.Match[str]) -> str:
    return chr(_FOLD_MAP[ord(m.group())])


def fold(text: str) -> str:
    """Length-preserving normalisation used for both alias keys and searched text:
    full-width Latin letters/digits/-/. to ASCII, middle-dot variants to ``·``, lower case."""
    if _FOLD_NEEDED.search(text) is not None:
        # usually a handful of characters in a long text: sub() beats a full translate()
        text = _FOLD_NEEDED.sub(_fold_one, text)
    low = text.lower()
    if len(low) == len(text):
        return low
    # a few characters (e.g. U+0130) lower-case to two: fold ASCII only, keep offsets
    return text.translate(_ASCII_LOWER)


# --- table ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ResolveResult:
    """What a name resolves to."""

    name: str
    ids: tuple[str, ...]  # the deciding ids (one unless ambiguous); empty when unknown
    names: tuple[str, ...]  # canonical (registry) names of ``ids``
    source: str | None  # the source that decided
    ambiguous: bool

    @property
    def char_id(self) -> str | None:
        return self.ids[0] if len(self.ids) == 1 else None


class AliasTable:
    """Surfaces -> operators, with source precedence and user blocks applied."""

    def __init__(self, aliases: Iterable[Alias]) -> None:
        aliases = list(aliases)
        blocks = {(fold(a.alias.strip()), a.char_id) for a in aliases if a.source == BLOCK_SOURCE}
        self._by_key: dict[str, list[Alias]] = {}
        self._base: dict[str, str] = {}
        self._canonical: dict[str, str] = {}
        for a in aliases:
            if a.source in (BLOCK_SOURCE, STRANGER_SOURCE):
                continue
            base = (a.evidence or {}).get("base_id")
            if base:
                self._base[a.char_id] = base
            key = fold(a.alias.strip())
            if not key or (key, a.char_id) in blocks or (key, "*") in blocks:
                continue
            if a.source == "registry" or (
                a.source == "alternate_form" and a.char_id not in self._canonical
            ):
                self._canonical.setdefault(a.char_id, a.alias)
            self._by_key.setdefault(key, []).append(a)
        for lst in self._by_key.values():
            lst.sort(key=lambda a: _RANK.get(a.source, _UNKNOWN_RANK))
        self._decided: dict[str, tuple[tuple[str, ...], str]] = {
            k: self._decide(v) for k, v in self._by_key.items()
        }

    def _decide(self, cands: list[Alias]) -> tuple[tuple[str, ...], str]:
        best = _RANK.get(cands[0].source, _UNKNOWN_RANK)
        ids: list[str] = []
        for a in cands:
            if _RANK.get(a.source, _UNKNOWN_RANK) != best:
                break
            if a.char_id not in ids:
                ids.append(a.char_id)
        if len(ids) > 1:
            bases = {self._base.get(i, i) for i in ids}
            if len(bases) == 1 and next(iter(bases)) in ids:
                ids = [next(iter(bases))]
        return tuple(ids), cands[0].source

    # lookups -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._by_key)

    def surfaces(self) -> list[str]:
        """Folded surfaces known to the table."""
        return list(self._by_key)

    def candidates(self, surface: str) -> list[Alias]:
        """Every alias for ``surface`` (all sources, best first); several ids are possible."""
        return list(self._by_key.get(fold(surface.strip()), ()))

    def decided_ids(self, key: str) -> tuple[str, ...]:
        """Ids the deciding source gives for a folded key (empty when unknown)."""
        hit = self._decided.get(key)
        return hit[0] if hit else ()

    def base_of(self, char_id: str) -> str:
        return self._base.get(char_id, char_id)

    def canonical_name(self, char_id: str) -> str | None:
        return self._canonical.get(char_id)

    def resolve(self, name: str) -> ResolveResult:
        """Resolve a name (any alias, or an operator id) to operator ids."""
        key = fold(name.strip())
        hit = self._decided.get(key)
        if hit is None:
            if name.strip() in self._canonical:
                cid = name.strip()
                return ResolveResult(name, (cid,), (self._canonical[cid],), "id", False)
            return ResolveResult(name, (), (), None, False)
        ids, source = hit
        names = tuple(self._canonical.get(i, i) for i in ids)
        return ResolveResult(name, ids, names, source, len(ids) > 1)


# --- sources --------------------------------------------------------------------------------
_DOTS = "·"


def _variants(name: str) -> list[str]:
    """The name itself, plus the dot-less spelling for names like 维娜·维多利亚."""
    out = [name]
    if _DOTS in fold(name):
        out.append(fold(name).replace(_DOTS, ""))
    return out


def aliases_from_operators(ops: Iterable[Operator]) -> list[Alias]:
    """Registry names, alternate-form names, appellations and real names as aliases.

    Real names belong to the person, so an alternate form's real names point at its base id.
    Every alias of an alternate form carries ``evidence["base_id"]``.
    """
    out: list[Alias] = []
    for op in ops:
        ev = {"base_id": op.base_id} if op.base_id else {}
        if op.name:
            src = "alternate_form" if op.base_id else "registry"
            for v in _variants(op.name):
                out.append(Alias(v, op.char_id, src, dict(ev, table=op.name_source)))
        if op.appellation:
            out.append(Alias(op.appellation, op.char_id, "appellation", dict(ev)))
        for real in op.real_names:
            target = op.base_id or op.char_id
            for v in _variants(real):
                out.append(Alias(v, target, "handbook", {"from": op.char_id}))
    return out


def default_alias_path() -> Path:
    """The packaged, user-editable ``data/aliases.toml``."""
    return Path(str(resources.files("arklore") / "data" / "aliases.toml"))


_ID_RE = re.compile(r"^[a-z]+_[0-9a-z]+_[0-9a-z_]+$")
_ALIAS_KEYS = {"name", "id", "note", "display"}
DISPLAY = "display"
"""``display = true`` on an ``[[alias]]``: the name chat text shows for that operator (see
:meth:`arklore.names.facade.NamesFacade.display_name`)."""
_BLOCK_KEYS = {"name", "id", "note"}
_STRANGER_KEYS = {"name", "note"}


def load_user_aliases(path: str | Path | None = None) -> list[Alias]:
    """Read ``aliases.toml``: ``[[alias]]`` entries (source ``user``), ``[[block]]`` removals
    and ``[[stranger]]`` speaker labels (:data:`STRANGER_SOURCE`).

    Raises :class:`InputFileError` naming the file, the entry and the reason on any problem.
    """
    p = Path(path) if path is not None else default_alias_path()
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InputFileError(str(p), "file", f"cannot read: {e.strerror or e}") from e
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputFileError(str(p), "toml", str(e)) from e
    unknown = set(doc) - {"alias", "block", "stranger"}
    if unknown:
        raise InputFileError(
            str(p), sorted(unknown)[0], "unknown table (use [[alias]], [[block]] or [[stranger]])"
        )
    out: list[Alias] = []
    tables = (("alias", _ALIAS_KEYS), ("block", _BLOCK_KEYS), ("stranger", _STRANGER_KEYS))
    for table, allowed in tables:
        entries = doc.get(table, [])
        if not isinstance(entries, list):
            raise InputFileError(str(p), table, f"must be an array of tables: [[{table}]]")
        for i, entry in enumerate(entries, 1):
            where = f"[[{table}]] #{i}"
            if not isinstance(entry, dict):
                raise InputFileError(str(p), where, "not a table")
            extra = set(entry) - allowed
            if extra:
                raise InputFileError(str(p), f"{where} key {sorted(extra)[0]!r}", "unknown key")
            name = entry.get("name")
            if not isinstance(name, str) or not name.strip():
                raise InputFileError(str(p), f"{where} name", "missing or empty string")
            cid = entry.get("id")
            if table == "stranger":
                cid = "*"  # nobody's
            elif table == "block" and cid is None:
                cid = "*"  # a block without an id blocks the name for everyone
            elif not isinstance(cid, str) or not _ID_RE.match(cid):
                raise InputFileError(str(p), f"{where} ({name}) id", f"not an operator id: {cid!r}")
            note = entry.get("note", "")
            if not isinstance(note, str):
                raise InputFileError(str(p), f"{where} ({name}) note", "must be a string")
            display = entry.get(DISPLAY, False)
            if not isinstance(display, bool):
                raise InputFileError(str(p), f"{where} ({name}) display", "must be true or false")
            if table == "alias":
                ev: dict[str, object] = {"note": note} if note else {}
                if display:
                    ev[DISPLAY] = True
                out.append(Alias(name.strip(), cid, "user", ev))
            else:
                source = BLOCK_SOURCE if table == "block" else STRANGER_SOURCE
                out.append(Alias(name.strip(), cid, source, {"note": note}))
    return out
