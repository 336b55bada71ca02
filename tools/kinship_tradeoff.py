"""How her card's book can key a kinship word that means several of her people, measured on
the lorebook's development sets in a chat with her (as ``test_the_keys_in_a_chat_with_her``).

你姐姐 said to 夕 is 年, 令 or 黍; the message rarely says which, and the sets' writers label
such messages differently (some the one they had in mind, some all of them). Four ways to key
the word, each printed with its false triggers (a share of all firings) and the reach (her
people mentioned whose entry fires):

- ``all``: the word keys everyone it means (what the export does);
- ``none``: where it means several, it keys nobody;
- ``first``: where it means several, only the first of them in her book;
- ``plural``: everyone after a plural (你的妹妹们, 你那两个妹妹, 兄弟姐妹), else the first.

The tenth set is left out: its writer's operator table predates 令 and 黍, so its labels of
a word that means several of her people name only those the table held.

The issue's targets are at most 1% false and at least 95% reach. Never run on the held-out set
(``lorebook_eval.jsonl``): it picks nothing, but it is kept for the suite's measure alone.

Usage: ``.venv/bin/python tools/kinship_tradeoff.py [--json]`` with ``ARKLORE_HOME`` a built
home and the data checkouts set as for ``arklore build``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from arklore.cards.lint import Matchable, fires
from arklore.core.errors import ArkloreError
from arklore.settings import Settings
from arklore.workspace import Workspace

SETS = tuple(f"lorebook_dev{n}.jsonl" for n in ("", 2, 3, 4, 5, 6, 7, 8, 9))
PLURAL = re.compile("们|們|两个|兩個|几个|幾個|俩|倆|兄弟姐妹|姐妹|兄妹|姐弟|兄弟|都")
POLICIES = ("all", "none", "first", "plural")


@dataclass
class Tally:
    fired: int = 0
    false: int = 0
    mentioned: int = 0
    reached: int = 0

    def add(self, got: set[str], there: set[str], keyed: set[str]) -> None:
        self.fired += len(got)
        self.false += len(got - there)
        self.mentioned += len(there & keyed)
        self.reached += len(there & keyed & got)

    def line(self, name: str) -> str:
        return (
            f"{name:7} false {self.false}/{self.fired} ({self.false / self.fired:.1%})  "
            f"reach {self.reached}/{self.mentioned} ({self.reached / self.mentioned:.1%})"
        )


def _split(entry: Any, names: set[str]) -> tuple[Matchable, Matchable]:
    """Her entry on one person as its name keys and its kinship keys."""
    keys = tuple(entry.keys)
    return Matchable(tuple(k for k in keys if k in names)), Matchable(
        tuple(k for k in keys if k not in names)
    )


def measure(ws: Workspace, sets: tuple[str, ...] = SETS) -> dict[str, Tally]:
    """Each policy's tally over every message of ``sets`` written to an operator."""
    name_keys = {pid: set(ks.keys) for pid, ks in ws.cards.keymaker().all().items()}
    tallies = {p: Tally() for p in POLICIES}
    books: dict[str, list[tuple[str, Matchable, Matchable]]] = {}
    for name in sets:
        text = (resources.files("arklore") / "data" / name).read_text("utf-8")
        for r in (json.loads(line) for line in text.splitlines() if line.strip()):
            her = r.get("chat_with")
            if not her:
                continue
            if her not in books:
                books[her] = [
                    (p, *_split(e, name_keys.get(p, set())))
                    for e in ws.cards.relation_entries(her)
                    if not (p := e.meta["person"]).startswith("npc:")
                ]
            msg = r["text"]
            there = {ws.cards._person_of(m["id"]) for m in r["mentions"]}
            keyed = {p for p, _, _ in books[her]}
            by_name = {p for p, nm, _ in books[her] if nm.keys and fires(nm, msg)}
            by_kin = [
                p for p, _, kn in books[her] if kn.keys and fires(kn, msg) and p not in by_name
            ]
            several = len(by_kin) > 1
            first = by_name | set(by_kin[:1])
            got = {
                "all": by_name | set(by_kin),
                "none": by_name | (set() if several else set(by_kin)),
                "first": first,
                "plural": by_name | set(by_kin) if PLURAL.search(msg) else first,
            }
            for p in POLICIES:
                tallies[p].add(got[p], there, keyed)
    return tallies


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args(argv)
    try:
        with Workspace(Settings.from_env()) as ws:
            tallies = measure(ws)
    except ArkloreError as exc:
        print(f"kinship_tradeoff: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({p: asdict(t) for p, t in tallies.items()}))
    else:
        for p, t in tallies.items():
            print(t.line(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
