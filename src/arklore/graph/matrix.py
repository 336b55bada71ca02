"""RELATIONSHIP_MATRIX: hand-written relations, the highest-weight source of the graph.

The file (default: the packaged ``data/relationship_matrix.toml``; ``arklore graph build
--matrix PATH`` for your own) holds one ``[[relation]]`` table per direction -- A's view of B::

    [[relation]]
    from = "阿米娅"          # operator name / alias / char id, 博士, or "npc:<name>"
    to = "凯尔希"
    predicate = "监护"       # one of arklore.core.predicates.PREDICATE_NAMES
    description = "..."     # optional: how A sees B, in your own words (shown as written)
    evidence = ["obt/main/level_main_01-01_beg#12:abcd1234"]  # optional: 1-3 line ids showing it
    since = "obt/main/level_main_01-03_beg"  # optional: the stage the relation begins at
    example = true          # optional: marks the shipped examples written for this project

Rules (any violation raises :class:`~arklore.core.errors.InputFileError` naming the file, the
line and the key; the previously built graph is left untouched):

* ``from``/``to`` must name a known person: an operator (through the alias table), the
  Doctor, a speaker of the corpus, or an explicit ``npc:<name>`` id; ambiguous names are
  rejected (use the char id);
* ``predicate`` must be a whitelisted predicate; ``from`` and ``to`` must differ;
* one record per (from, to, predicate family): a second one is a duplicate;
* ``evidence`` holds 1-3 well-formed line ids (see the corpus contract); whether they still
  name stored lines with both parties around them is checked at graph build
  (:mod:`arklore.graph.curated_check`), which leaves a failing entry out with the reason;
* ``since`` is a stage path (no ``#``): a chat set at a story point before it does not know
  the relation, one at or after it does, even when some evidence lies later (the description
  is shown, the later lines are not quoted). Without it, a chat set at a point knows the
  relation only when every evidence line is known. Checked at graph build like evidence;
* no other keys, no other top-level tables; every value has the type above.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from arklore.base.userfiles import read_user_text
from arklore.core.errors import InputFileError
from arklore.core.model import parse_line_id
from arklore.core.predicates import PREDICATE_FAMILY, PREDICATE_NAMES

Resolve = Callable[[str], "str | None"]
"""name -> node id, or None when the name is unknown or ambiguous."""


@dataclass(slots=True)
class Curated:
    """One hand-stated directed relation (from the matrix or an import file)."""

    source: str  # node id
    target: str  # node id
    predicate: str
    description: str | None = None
    example: bool = False
    origin: str = "matrix"  # matrix | import
    evidence_line_ids: list[str] = field(default_factory=list)
    path: str = ""  # the file it was read from
    line: int = 0  # line of its [[relation]] header (0 when unknown)
    since: str = ""  # the stage the relation begins at ("" = dated by its evidence)


class UnknownPersonError(InputFileError):
    """A record naming someone this corpus does not know (or cannot tell apart)."""


def default_matrix_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "relationship_matrix.toml"))


_KEYS = {
    "from": str, "to": str, "predicate": str, "description": str, "example": bool,
    "evidence": list, "since": str,
}  # fmt: skip
MAX_EVIDENCE = 3
_REQUIRED = ("from", "to", "predicate")
_HEADER = re.compile(r"^\s*\[\[\s*relation\s*\]\]")


def check_record(
    path: str,
    where: str,
    rec: object,
    resolve: Resolve,
    seen: dict[tuple[str, str, str], str],
    *,
    keys: dict[str, type] = _KEYS,
    origin: str = "matrix",
) -> Curated:
    """Validate one record (shared by the matrix and the import reader)."""
    if not isinstance(rec, dict):
        raise InputFileError(path, where, f"expected a table/object, got {_tname(rec)}")
    for k in sorted(rec):
        if k not in keys:
            raise InputFileError(
                path, f"{where} key {k!r}", f"unknown key (allowed: {', '.join(keys)})"
            )
    for k in _REQUIRED:
        if k not in rec:
            raise InputFileError(path, f"{where} key {k!r}", "missing")
    for k, typ in keys.items():
        if k in rec and not (
            isinstance(rec[k], typ) and not (typ is not bool and isinstance(rec[k], bool))
        ):
            raise InputFileError(
                path,
                f"{where} key {k!r}",
                f"wrong type: expected {typ.__name__}, got {_tname(rec[k])}",
            )
    ids = []
    for k in ("from", "to"):
        name = rec[k].strip()
        if not name:
            raise InputFileError(path, f"{where} key {k!r}", "empty name")
        nid = resolve(name)
        if nid is None:
            raise UnknownPersonError(
                path, f"{where} key {k!r}", f"unknown or ambiguous name {name!r}"
            )
        ids.append(nid)
    pred = rec["predicate"]
    if pred not in PREDICATE_FAMILY:
        raise InputFileError(
            path,
            f"{where} key 'predicate'",
            f"unknown predicate {pred!r} (use one of {', '.join(PREDICATE_NAMES)})",
        )
    if ids[0] == ids[1]:
        raise InputFileError(path, where, f"'from' and 'to' are the same person ({ids[0]})")
    key = (ids[0], ids[1], PREDICATE_FAMILY[pred])
    if key in seen:
        raise InputFileError(
            path, where, f"duplicate relation {ids[0]} -> {ids[1]} ({pred}); first at {seen[key]}"
        )
    evidence = _evidence(path, where, rec["evidence"]) if "evidence" in rec else []
    since = str(rec.get("since", "")).strip()
    if "since" in rec and (not since or "#" in since):
        raise InputFileError(
            path, f"{where} key 'since'", "a stage path (the part of a line id before '#')"
        )
    seen[key] = where
    desc = rec.get("description")
    return Curated(
        ids[0], ids[1], pred, desc.strip() if isinstance(desc, str) and desc.strip() else None,
        bool(rec.get("example", False)), origin, evidence, path, since=since,
    )  # fmt: skip


def _evidence(path: str, where: str, value: list[Any]) -> list[str]:
    """1-3 distinct, well-formed line ids (``<stage_path>#<line_no>:<8 hex>``)."""
    at = f"{where} key 'evidence'"
    if not 1 <= len(value) <= MAX_EVIDENCE:
        raise InputFileError(path, at, f"expected 1-{MAX_EVIDENCE} line ids, got {len(value)}")
    out: list[str] = []
    for v in value:
        if not isinstance(v, str):
            raise InputFileError(path, at, f"wrong type: expected string, got {_tname(v)}")
        try:
            stage, no, digest = parse_line_id(v.strip())
        except ValueError:
            stage, no, digest = "", 0, ""
        if not stage or no < 1 or any(c not in "0123456789abcdef" for c in digest):
            raise InputFileError(path, at, f"not a line id: {v!r} (<stage_path>#<line_no>:<8 hex>)")
        if v.strip() in out:
            raise InputFileError(path, at, f"line id {v!r} given twice")
        out.append(v.strip())
    return out


def _tname(v: object) -> str:
    return {
        dict: "table",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "float",
    }.get(type(v), type(v).__name__)


def load_matrix(path: Path, resolve: Resolve, *, unknown: list[str] | None = None) -> list[Curated]:
    """Read and validate a matrix file (see the module docstring). With ``unknown`` given, a
    record naming a person the corpus does not know is left out and its reason appended
    there instead of raising (the packaged matrix under a user's, on another corpus)."""
    p = str(path)
    text = read_user_text(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # duplicate TOML keys land here, with the line
        raise InputFileError(p, "toml", str(e)) from e
    for k in sorted(doc):
        if k != "relation":
            raise InputFileError(p, f"key {k!r}", "unknown top-level key (use [[relation]] tables)")
    records = doc.get("relation", [])
    if not isinstance(records, list):
        raise InputFileError(p, "key 'relation'", "must be an array of tables: [[relation]]")
    rows = text.splitlines()
    lines = [i for i, ln in enumerate(rows, 1) if _HEADER.match(ln)]
    seen: dict[tuple[str, str, str], str] = {}
    out = []
    for i, rec in enumerate(records):
        line = f"line {lines[i]} " if i < len(lines) else ""
        try:
            c = check_record(p, f"{line}[[relation]] #{i + 1}", rec, resolve, seen)
        except UnknownPersonError as e:
            if unknown is None:
                raise _at_key_line(e, rows, lines, i) from None
            unknown.append(e.message)
            continue
        except InputFileError as e:
            raise _at_key_line(e, rows, lines, i) from None
        c.line = lines[i] if i < len(lines) else 0
        out.append(c)
    return out


def layer_matrices(layers: Sequence[list[Curated]]) -> tuple[list[Curated], int]:
    """The relations of several matrix files, first to last (the packaged one, then the
    user's): a later file that states any view of a directed pair replaces every view of it
    an earlier file stated, so a user corrects a shipped relation by writing the pair again.
    Returns the relations and how many earlier ones were replaced."""
    out: list[Curated] = []
    replaced = 0
    for layer in layers:
        pairs = {(c.source, c.target) for c in layer}
        kept = [c for c in out if (c.source, c.target) not in pairs]
        replaced += len(out) - len(kept)
        out = [*kept, *layer]
    return out, replaced


_KEY_IN_WHERE = re.compile(r"^line \d+ (.*key '(\w+)'.*)$")


def _at_key_line(e: InputFileError, rows: list[str], headers: list[int], i: int) -> InputFileError:
    """The error with the line of the offending key (not of its ``[[relation]]`` header)."""
    m = _KEY_IN_WHERE.match(e.where)
    if m is None or i >= len(headers):
        return e
    end = headers[i + 1] - 1 if i + 1 < len(headers) else len(rows)
    key = re.compile(rf"^\s*\"?{re.escape(m.group(2))}\"?\s*=")
    for no in range(headers[i] + 1, end + 1):
        if key.match(rows[no - 1]):
            return InputFileError(e.path, f"line {no} {m.group(1)}", e.reason)
    return e
