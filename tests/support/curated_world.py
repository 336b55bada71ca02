"""A curated matrix for the service world (:mod:`support.service_world`): three invented
relations, each citing a stored line of that world with both people around it. Used through
``ARKLORE_MATRIX`` with ``ARKLORE_MATRIX_REPLACE=1`` (the packaged matrix is not read).
"""

from __future__ import annotations

from pathlib import Path

from support.service_world import S1, S2, lid

RELATIONS: list[dict[str, str | list[str]]] = [
    {"from": "阿米娅", "to": "凯尔希", "predicate": "同事",
     "description": "一起规划巡逻路线的前辈。", "evidence": [lid(S1, 2)]},
    {"from": "陈", "to": "星熊", "predicate": "上下级",
     "description": "近卫局里跟在她身后的部下。", "evidence": [lid(S2, 1)]},
    {"from": "诗怀雅", "to": "陈", "predicate": "竞争",
     "description": "总想和她争功的同僚。", "evidence": [lid(S2, 3)]},
]  # fmt: skip


def write_matrix(path: Path, **descriptions: str) -> Path:
    """The matrix at ``path``; ``descriptions`` replace a relation's text by its index key
    (``r1="..."`` edits the second relation)."""
    out = []
    for i, rel in enumerate(RELATIONS):
        desc = descriptions.get(f"r{i}", rel["description"])
        ev = ", ".join(f'"{e}"' for e in rel["evidence"])
        out.append(f'[[relation]]\nfrom = "{rel["from"]}"\nto = "{rel["to"]}"\n'
                   f'predicate = "{rel["predicate"]}"\ndescription = "{desc}"\nevidence = [{ev}]\n')  # fmt: skip
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def curated_env(matrix: Path) -> dict[str, str]:
    """The settings, as environment variables, that build from ``matrix`` alone."""
    return {"ARKLORE_MATRIX": str(matrix), "ARKLORE_MATRIX_REPLACE": "1"}
