"""Import a relation export: relations a user copied by hand from a wiki relation page
(e.g. PRTS 关系网) into a small JSON file.

Format (UTF-8 JSON, one object)::

    {
      "format": "arklore-relation-import/1",
      "source": "PRTS 关系网, 阿米娅 page, copied 2026-12-01",
      "relations": [
        {"from": "阿米娅", "to": "凯尔希", "predicate": "监护", "label": "监护人"},
        {"from": "char_003_kalts", "to": "阿米娅", "predicate": "监护", "mutual": false},
        {"from": "能天使", "to": "德克萨斯", "predicate": "同事", "mutual": true}
      ]
    }

* ``format`` (required) must be exactly ``"arklore-relation-import/1"``; ``source``
  (optional string) says where the relations were copied from.
* ``relations`` (required array): each item has ``from`` and ``to`` (an operator name, alias,
  appellation or char id, resolved through the alias table; 博士; a corpus speaker; or an
  explicit ``npc:<name>``), ``predicate`` (one of ``arklore.core.predicates.PREDICATE_NAMES``:
  map the wiki's wording to the nearest one and keep the wording in ``label``), optional
  ``label`` (string, shown as the edge description unless the matrix has one) and optional
  ``mutual`` (boolean, default false: true adds the reverse direction with the same predicate).
* A directed (from, to, predicate family) may appear once; duplicate object keys are errors.

Any problem raises :class:`~arklore.core.errors.InputFileError` with the file, the line and the
item and key (``line 12 relations[3] key 'from'``) and the reason; nothing already built is touched. Imported
relations have source ``import`` and weigh less than the matrix (see ``strength.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from arklore.base.userfiles import read_user_text
from arklore.core.errors import InputFileError
from arklore.graph.matrix import Curated, Resolve, check_record

FORMAT = "arklore-relation-import/1"
_TOP = {"format", "source", "relations"}
_KEYS = {"from": str, "to": str, "predicate": str, "label": str, "mutual": bool}


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _item_offsets(text: str, key: str = "relations") -> list[int]:
    """Offsets of the items of the top-level array ``key`` (for line numbers in errors)."""
    depth = 0
    i, n = 0, len(text)
    last_str = None
    in_array = False
    offsets: list[int] = []
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            last_str = text[i + 1 : j]
            if in_array and depth == 2:
                offsets.append(i)
            i = j + 1
            continue
        if c in "{[":
            if c == "[" and depth == 1 and last_str == key:
                in_array = True
            elif in_array and depth == 2:
                offsets.append(i)
            depth += 1
        elif c in "}]":
            depth -= 1
            if in_array and depth == 1:
                in_array = False
        elif in_array and depth == 2 and not c.isspace() and c != ",":
            offsets.append(i)
            while i + 1 < n and text[i + 1] not in ",]" and not text[i + 1].isspace():
                i += 1
        i += 1
    return offsets


def load_import(path: Path, resolve: Resolve) -> list[Curated]:
    """Read and validate one import file (see the module docstring)."""
    p = str(path)
    text = read_user_text(path)
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as e:
        key = str(e)
        hits = [i for i in range(len(text)) if text.startswith(f'"{key}"', i)]
        line = f"line {_line_of(text, hits[1])} " if len(hits) > 1 else ""
        raise InputFileError(p, f"{line}key {key!r}", "duplicate key in one object") from None
    except json.JSONDecodeError as e:
        raise InputFileError(
            p, f"line {e.lineno} column {e.colno}", f"not valid JSON: {e.msg}"
        ) from None
    if not isinstance(doc, dict):
        raise InputFileError(p, "top level", "expected a JSON object")
    for k in sorted(doc):
        if k not in _TOP:
            raise InputFileError(
                p, f"key {k!r}", f"unknown key (allowed: {', '.join(sorted(_TOP))})"
            )
    if doc.get("format") != FORMAT:
        raise InputFileError(p, "key 'format'", f"must be {FORMAT!r}, got {doc.get('format')!r}")
    if "source" in doc and not isinstance(doc["source"], str):
        raise InputFileError(p, "key 'source'", "wrong type: expected string")
    rels = doc.get("relations")
    if not isinstance(rels, list):
        raise InputFileError(p, "key 'relations'", "missing or not an array")
    offsets = _item_offsets(text)
    seen: dict[tuple[str, str, str], str] = {}
    out: list[Curated] = []
    for i, rec in enumerate(rels):
        line = f"line {_line_of(text, offsets[i])} " if i < len(offsets) else ""
        where = f"{line}relations[{i}]"
        c = check_record(p, where, rec, resolve, seen, keys=_KEYS, origin="import")
        c.description = rec.get("label") or None
        out.append(c)
        if rec.get("mutual"):
            back = {"from": rec["to"], "to": rec["from"], "predicate": rec["predicate"]}
            r = check_record(
                p, where + " (mutual)", back, resolve, seen, keys=_KEYS, origin="import"
            )
            r.description = c.description
            out.append(r)
    return out
