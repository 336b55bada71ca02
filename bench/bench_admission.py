"""Which named NPC speakers become graph nodes: today's rule (20 lines in the corpus) against
the design's upstream rule (30 lines, or a 0.04 share of one story's spoken lines) and their
mixes, on the real corpus (issue 40, item 6).

For each rule: the nodes it admits; how many of the NPCs the gold sets name it admits (the
curated matrix's NPC endpoints, the fidelity set's expected relations, the names set's
mentions: a person a chat must know); and how many admitted names read as a one-scene label
(矿工B, 邻居A, 清瘦的男性: a trailing letter or number, or a 的-phrase), the noise a node
costs (every node is scanned, described and indexed).

    python -m bench bench_admission     # env: ARKLORE_HOME (an ingested real corpus), ARKLORE_*
"""

from __future__ import annotations

import re
import tomllib

import orjson

from arklore.core.errors import ArkloreError
from arklore.core.model import DOCTOR_NAMES
from arklore.graph.interaction import is_generic_role
from arklore.graph.matrix import default_matrix_path
from arklore.graph.people import Admission
from arklore.settings import Settings
from arklore.workspace import Workspace

LABEL = re.compile(r"的|[A-Za-z0-9Ａ-Ｚ]$|[甲乙丙丁]$")
"""A name that reads as a one-scene label rather than a person."""


RULES = (
    ("20 lines (default)", Admission(20)),
    ("30 lines", Admission(30)),
    ("30 lines or 0.04 share (upstream)", Admission(30, 0.04)),
    ("20 lines or 0.04 share", Admission(20, 0.04)),
)
"""The rules compared: the graph's own :class:`~arklore.graph.people.Admission`, as set by
``ARKLORE_NPC_MIN_LINES`` and ``ARKLORE_NPC_MIN_SHARE``."""


def main() -> None:
    with Workspace(Settings.from_env()) as ws:
        store = ws.corpus.store()
        counts = store.speaker_counts()

        def operator(name: str) -> bool:
            try:
                return not ws.names.resolve(name).startswith("npc:")
            except ArkloreError:
                return False

        npcs = {s for s in counts if s.strip() and s.strip() not in DOCTOR_NAMES
                and not is_generic_role(s) and not operator(s)}  # fmt: skip
        admitted = {name: rule.admitted(store, counts) & npcs for name, rule in RULES}
        gold = _gold(npcs)
    print(f"{len(npcs)} named NPC speakers (not operators, the Doctor or generic roles); "
          f"{len(gold)} named by the gold sets")  # fmt: skip
    print(f"{'rule':<36} {'nodes':>6} {'gold':>7} {'label-like':>11}")
    for name, got in admitted.items():
        labels = sum(bool(LABEL.search(s)) for s in got)
        print(f"{name:<36} {len(got):>6} {len(gold & got):>3}/{len(gold):<3} "
              f"{labels:>5} ({labels / len(got):.0%})")  # fmt: skip
    missed = sorted(gold - set().union(*admitted.values()))
    print("gold no rule admits: " + ", ".join(f"{g} ({counts[g][0]} lines)" for g in missed))
    by = list(admitted.values())
    only_share = by[2] - by[1]  # the upstream rule's share beyond its 30 lines
    dropped = by[0] - by[2]  # today's 20 lines that the upstream rule leaves out
    for what, names in (("admitted only by the share", only_share),
                        ("dropped going from 20 to 30 lines", dropped)):  # fmt: skip
        labels = sum(bool(LABEL.search(s)) for s in names)
        print(f"{what}: {len(names)}, {labels} label-like; e.g. {', '.join(sorted(names)[:8])}")


def _gold(npcs: set[str]) -> set[str]:
    """The NPCs a chat must know: the curated matrix's endpoints, the fidelity set's expected
    relations, the names set's mentions by name (held-out sets are not read)."""
    from importlib import resources

    data = resources.files("arklore") / "data"
    matrix = tomllib.loads(default_matrix_path().read_text(encoding="utf-8"))["relation"]
    names = {x for r in matrix for x in (r["from"], r["to"])}
    for ln in (data / "fidelity_eval.jsonl").read_text(encoding="utf-8").splitlines():
        names.update((orjson.loads(ln).get("expect") or {}).get("relation", []))
    texts = [orjson.loads(ln)["text"] for ln in
             (data / "names_eval.jsonl").read_text(encoding="utf-8").splitlines()]  # fmt: skip
    names.update(s for s in npcs if len(s) >= 2 and any(s in t for t in texts))
    return names & npcs


if __name__ == "__main__":
    main()
