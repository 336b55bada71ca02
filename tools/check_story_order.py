#!/usr/bin/env python3
"""Check src/arklore/data/story_order.toml against the game's story_review_table.json.

Usage:
    python3 tools/check_story_order.py [--order FILE] [--gamedata DIR] [--db SQLITE] [--list]

--gamedata defaults to $ARKLORE_GAMEDATA, else ../shared/arknights/gamedata next to the project.
--db (optional) is a built arklore store, opened read-only, used to check that every `ref`
names a real stage (and line), and to note side stories placed after a main chapter that was
released later than they were. --list prints every placement with the main chapters it
resolves between.

Checks: every group exists and has the right kind (main: MAINLINE, place: ACTIVITY or
MINI_ACTIVITY, record: NONE); the main chapters are all listed, once, in order; no group is
placed twice; every after/before names an existing group (a reference to a group that is itself
not placed is allowed, it means "relative to that group's release-order fallback", and is
reported); the ordering graph (main chain + after/before edges) is acyclic, which also gives
after < before; fields and confidence values are valid; reasons contain no long runs of game
text. Exit status 1 on any error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIDENCE = ("high", "medium", "low")
PLACE_KEYS = {"group", "after", "before", "reason", "ref", "confidence"}
# a short name is fine, a sentence of game text is not
CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]{13,}")


def as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError(f"expected a string or a list of strings, got {value!r}")


def main_index(group: str) -> int | None:
    m = re.fullmatch(r"main_(\d+)", group)
    return int(m.group(1)) if m else None


def find_cycle(stuck: set[str], succ: dict[str, set[str]]) -> list[str]:
    """One cycle among the nodes a topological sort could not order."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(succ.get(n, ())):
            if m not in stuck:
                continue
            if state.get(m) == 1:
                return path[path.index(m) :] + [m]
            if m not in state and (found := visit(m)):
                return found
        state[n] = 2
        path.pop()
        return None

    for start in sorted(stuck):
        if start not in state and (found := visit(start)):
            return found
    return sorted(stuck)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--order", default=str(ROOT / "src/arklore/data/story_order.toml"))
    ap.add_argument(
        "--gamedata",
        default=os.environ.get("ARKLORE_GAMEDATA")
        or str(ROOT.parent / "shared/arknights/gamedata"),
    )
    ap.add_argument("--db", help="arklore.sqlite3 to verify refs (opened read-only)")
    ap.add_argument("--list", action="store_true", help="print the resolved placements")
    args = ap.parse_args()

    table_path = Path(args.gamedata) / "zh_CN/gamedata/excel/story_review_table.json"
    table = json.loads(table_path.read_text(encoding="utf-8"))
    with open(args.order, "rb") as f:
        order = tomllib.load(f)

    errors: list[str] = []
    notes: list[str] = []
    kind = {gid: g.get("entryType") for gid, g in table.items()}

    # ---- main chapters
    mains = [m.get("id") for m in order.get("main", [])]
    expected = sorted(
        (g for g, k in kind.items() if k == "MAINLINE"), key=lambda g: main_index(g) or 0
    )
    if mains != expected:
        errors.append(
            f"[[main]] must list every MAINLINE group once, in order: {expected}, got {mains}"
        )
    for m in order.get("main", []):
        if set(m) - {"id", "name"}:
            errors.append(f"[[main]] {m.get('id')}: unknown keys {sorted(set(m) - {'id', 'name'})}")

    # ---- placements and records
    placed: dict[str, dict] = {}
    section_of: dict[str, str] = {}
    entries = [("place", e) for e in order.get("place", [])] + [
        ("record", e) for e in order.get("record", [])
    ]
    records_cfg = order.get("records", {})
    if records_cfg.get("default") != "backstory":
        errors.append('[records] default must be "backstory"')

    for section, e in entries:
        g = e.get("group")
        where = f"[[{section}]] {g}"
        if not isinstance(g, str):
            errors.append(f"[[{section}]] without a group: {e}")
            continue
        if set(e) - PLACE_KEYS:
            errors.append(f"{where}: unknown keys {sorted(set(e) - PLACE_KEYS)}")
        if g not in kind:
            errors.append(f"{where}: no such story group")
            continue
        want = ("ACTIVITY", "MINI_ACTIVITY") if section == "place" else ("NONE",)
        if kind[g] not in want:
            errors.append(f"{where}: entryType {kind[g]} does not belong in [[{section}]]")
        if g in placed or g in mains:
            errors.append(f"{where}: placed twice (also in [[{section_of.get(g, 'main')}]])")
            continue
        try:
            after, before = as_list(e.get("after")), as_list(e.get("before"))
        except TypeError as exc:
            errors.append(f"{where}: {exc}")
            continue
        if not after and not before:
            errors.append(f'{where}: needs `after` (or `before = "main_0"` for a prequel)')
        if not after and before != ["main_0"]:
            errors.append(
                f'{where}: without `after` only a prequel (`before = "main_0"`) is allowed'
            )
        if section == "record" and not after:
            errors.append(
                f"{where}: a listed record needs `after` (unlisted records use the default)"
            )
        for ref in after + before:
            if ref == g:
                errors.append(f"{where}: refers to itself")
            elif ref not in kind:
                errors.append(f"{where}: after/before {ref!r} is no story group")
        if e.get("confidence") not in CONFIDENCE:
            errors.append(
                f"{where}: confidence must be one of {CONFIDENCE}, got {e.get('confidence')!r}"
            )
        reason = e.get("reason")
        if not isinstance(reason, str) or len(reason.strip()) < 10:
            errors.append(f"{where}: needs a reason")
        elif CJK_RUN.search(reason):
            errors.append(f"{where}: the reason quotes a long run of game text; paraphrase it")
        ref = e.get("ref")
        if ref is not None and not isinstance(ref, str):
            errors.append(f"{where}: ref must be a string")
        placed[g] = {**e, "section": section, "after": after, "before": before}
        section_of[g] = section

    # references to groups that are not placed themselves
    for g, e in placed.items():
        for ref in e["after"] + e["before"]:
            if ref in kind and kind[ref] != "MAINLINE" and ref not in placed:
                notes.append(
                    f"{g}: refers to {ref}, which is not placed (relative to its release-order fallback)"
                )

    # ---- ordering graph: main chain + after/before edges; must be acyclic
    succ: dict[str, set[str]] = defaultdict(set)
    nodes: set[str] = set(mains)
    for a, b in zip(mains, mains[1:], strict=False):
        succ[a].add(b)
    for g, e in placed.items():
        nodes.add(g)
        for ref in e["after"]:
            if ref in kind:
                succ[ref].add(g)
                nodes.add(ref)
        for ref in e["before"]:
            if ref in kind:
                succ[g].add(ref)
                nodes.add(ref)
    indeg = Counter()
    for a in list(succ):
        for b in succ[a]:
            indeg[b] += 1
    queue = [n for n in nodes if indeg[n] == 0]
    topo: list[str] = []
    while queue:
        n = queue.pop()
        topo.append(n)
        for b in succ[n]:
            indeg[b] -= 1
            if indeg[b] == 0:
                queue.append(b)
    if len(topo) != len(nodes):
        stuck = {n for n in nodes if n not in set(topo)}
        errors.append(
            "the after/before constraints contain a cycle (or contradict the main order): "
            + " -> ".join(find_cycle(stuck, succ))
        )

    # ---- resolve each placement between main chapters (lower: latest main before it,
    # upper: earliest main after it), for --list and the anchored count
    pred: dict[str, set[str]] = defaultdict(set)
    for a, bs in succ.items():
        for b in bs:
            pred[b].add(a)

    def reach(start: str, edges: dict[str, set[str]]) -> set[str]:
        seen, stack = set(), [start]
        while stack:
            for nxt in edges.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    resolved = {}
    if len(topo) == len(nodes):
        for g in placed:
            lows = [main_index(x) for x in reach(g, pred) if main_index(x) is not None]
            highs = [main_index(x) for x in reach(g, succ) if main_index(x) is not None]
            resolved[g] = (max(lows) if lows else None, min(highs) if highs else None)

    # ---- refs against the store
    ref_checked = 0
    if args.db:
        con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        for g, e in placed.items():
            ref = e.get("ref")
            if not isinstance(ref, str):
                continue
            stage, _, line = ref.partition("#")
            if not con.execute(
                "SELECT 1 FROM stages WHERE stage_path = ? LIMIT 1", (stage,)
            ).fetchone():
                errors.append(f"{g}: ref stage {stage!r} is not in the store")
            elif (
                line
                and not con.execute(
                    "SELECT 1 FROM lines WHERE stage_path = ? AND line_no = ? LIMIT 1",
                    (stage, int(line)),
                ).fetchone()
            ):
                errors.append(f"{g}: ref line {ref!r} is not in the store")
            ref_checked += 1
        # release sanity: a side story is rarely set after a main chapter released later than it
        released = {
            e: t
            for e, t in con.execute(
                "SELECT event_id, min(start_time) FROM stages WHERE start_time > 0 GROUP BY event_id"
            )
        }
        for g, e in placed.items():
            if e["section"] != "place" or g not in released:
                continue
            for ref in e["after"]:
                lo = main_index(ref)
                # main_0..main_7 carry the 2020-06 re-release time in the store, not the 2019 one
                if lo is not None and lo >= 8 and ref in released and released[ref] > released[g]:
                    notes.append(
                        f"{g}: placed after {ref}, which was released later than it (check the cue)"
                    )
        con.close()

    # ---- report
    if args.list:
        for g in sorted(
            placed,
            key=lambda x: (
                resolved.get(x, (None,))[0] if resolved.get(x, (None,))[0] is not None else -1,
                x,
            ),
        ):
            lo, hi = resolved.get(g, (None, None))
            span = (
                f"after main_{lo}"
                if lo is not None
                else "unanchored"
                if placed[g]["after"]
                else "prequel"
            )
            if hi is not None:
                span += f", before main_{hi}"
            print(f"  {g:<24} {placed[g]['confidence']:<6} {span}   [{table[g]['name']}]")
        print()

    def count(kind_name: str) -> tuple[int, int]:
        ids = [g for g, k in kind.items() if k == kind_name]
        n = sum(1 for g in ids if g in placed)
        return n, len(ids) - n

    act_p, act_n = count("ACTIVITY")
    mini_p, mini_n = count("MINI_ACTIVITY")
    rec_p, rec_n = count("NONE")
    conf_place = Counter(e["confidence"] for e in placed.values() if e["section"] == "place")
    conf_rec = Counter(e["confidence"] for e in placed.values() if e["section"] == "record")
    anchored = sum(
        1 for g, (lo, _) in resolved.items() if lo is not None or placed[g]["before"] == ["main_0"]
    )
    print(f"story order: {args.order}")
    print(f"main chapters:            {len(mains)}")
    print(f"activities placed:        {act_p} (not placed {act_n})")
    print(f"mini activities placed:   {mini_p} (not placed {mini_n})")
    print(
        f"records listed:           {rec_p} of {rec_p + rec_n} (the rest: default {records_cfg.get('default')!r})"
    )
    print("confidence (side stories): " + ", ".join(f"{c} {conf_place[c]}" for c in CONFIDENCE))
    print("confidence (records):      " + ", ".join(f"{c} {conf_rec[c]}" for c in CONFIDENCE))
    print(
        f"anchored to a main chapter: {anchored} of {len(placed)} placements "
        f"(the rest only relative to an unplaced group)"
    )
    if args.db:
        print(f"refs checked against the store: {ref_checked}")
    for n in notes:
        print(f"note: {n}")
    for e in errors:
        print(f"ERROR: {e}", file=sys.stderr)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
