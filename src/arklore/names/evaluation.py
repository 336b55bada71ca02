"""Scoring mention detection against the labelled set ``data/names_eval.jsonl``.

Each line: ``{"text", "mentions": [{"id", "surface", "start", "end"}], "tags", "split",
"context"?}``; ``split`` is ``dev`` (rules were developed looking at it) or ``heldout`` (written
beforehand, only scored).  A predicted mention is a true positive when the same operator id is
labelled in the same message (multiset; an ambiguous prediction with no id is a false positive).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from arklore.core.operators import Operator
from arklore.names.registry import build_registry


def eval_set_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "names_eval.jsonl"))


def load_eval_set(path: str | Path | None = None) -> list[dict[str, Any]]:
    p = Path(path) if path is not None else eval_set_path()
    return [json.loads(ln) for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def line(self, label: str) -> str:
        return (
            f"{label:<22} P={self.precision:.3f} R={self.recall:.3f} "
            f"(tp={self.tp} fp={self.fp} fn={self.fn})"
        )


def score(
    find: Callable[[str, Any], Iterable[Any]],
    records: Iterable[dict[str, Any]],
) -> Score:
    """Score ``find(text, context) -> mentions`` (objects with ``char_id``) on ``records``."""
    s = Score()
    for rec in records:
        gold = Counter(m["id"] for m in rec["mentions"])
        pred_list = list(find(rec["text"], rec.get("context")))
        pred = Counter(m.char_id for m in pred_list)
        tp = sum(min(c, gold[k]) for k, c in pred.items() if k is not None)
        fp = sum(pred.values()) - tp
        fn = sum(gold.values()) - tp
        s.tp, s.fp, s.fn = s.tp + tp, s.fp + fp, s.fn + fn
        if fp or fn:
            got = [f"{m.surface}:{m.char_id}:{m.how}" for m in pred_list]
            want = [f"{m['surface']}:{m['id']}" for m in rec["mentions"]]
            s.errors.append(f"{rec['text']!r} want={want} got={got}")
    return s


# --- a name inventory from the excel tables, for tests and the benchmark ----------------------
_CODE = re.compile(r"【代号】[ \t\u3000]*([^\r\n]+)")


def operators_from_excel(excel_root: str | Path) -> list[Operator]:
    """Real operators: :func:`arklore.names.registry.build_registry` when it works, else a
    minimal reader (character_table names, handbook 代号 for later operators, skin_table
    English names as appellations, char_meta_table alternate-form groups)."""
    root = Path(excel_root)
    try:
        registered = list(build_registry(root))
        if registered:
            return registered
    except Exception:  # noqa: BLE001 - fall back to the minimal reader below
        pass

    def table(name: str) -> dict[str, Any]:
        p = root / f"{name}.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}

    chars = table("character_table")
    skins = (table("skin_table").get("charSkins") or {}).values()
    book = table("handbook_info_table").get("handbookDict") or {}
    groups = table("char_meta_table").get("spCharGroups") or {}
    base_of = {m: b for b, ms in groups.items() for m in ms if m != b}
    english: dict[str, str] = {}
    for s in skins:
        cid, model = s.get("charId", ""), (s.get("displaySkin") or {}).get("modelName")
        if cid.startswith("char_") and model and cid not in english:
            english[cid] = model
    ops: dict[str, Operator] = {}
    for cid, row in chars.items():
        if cid.startswith("char_") and row.get("name"):
            ops[cid] = Operator(cid, row["name"], row.get("appellation"), "character_table")
    for cid, entry in book.items():
        if cid in ops or not cid.startswith("char_") or cid in base_of:
            continue  # an alternate form's 代号 is its base's name
        for part in entry.get("storyTextAudio") or []:
            m = _CODE.search(((part.get("stories") or [{}])[0]).get("storyText") or "")
            if m:
                ops[cid] = Operator(cid, m.group(1).strip(), None, "handbook_info")
                break
    for cid, op in ops.items():
        op.appellation = op.appellation or english.get(cid)
        if cid in base_of:
            op.base_id = base_of[cid]
    for b, ms in groups.items():
        if b in ops:
            ops[b].alternate_ids = [m for m in ms if m != b]
    return list(ops.values())
