"""A game-data root with the excel tables a card reads (its voice lines: ``charword_table``),
for tests that export cards without the real data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_gamedata(root: Path, charwords: dict[str, Any] | None = None) -> Path:
    """``root/zh_CN/gamedata/excel/charword_table.json`` (``{"charWords": charwords}``);
    returns ``root``, what ``ARKLORE_GAMEDATA`` names."""
    excel = root / "zh_CN" / "gamedata" / "excel"
    excel.mkdir(parents=True, exist_ok=True)
    table = {"charWords": charwords or {}}
    (excel / "charword_table.json").write_text(json.dumps(table, ensure_ascii=False), "utf-8")
    return root
