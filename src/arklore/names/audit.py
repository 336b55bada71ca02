"""`arklore names audit`: which speakers are operators, and which might be but have no alias.

Every speaker with at least ``BIG_SPEAKER_LINES`` lines is listed as an operator (with the
id and the source that decided) or as an NPC. Speakers without an id are *suspects* for a
human to decide when one of these holds:

* ``portrait``: their portraits lean to one operator (share >= ``SUSPECT_SHARE`` over at
  least ``SUSPECT_LINES`` lines) without reaching the alias thresholds;
* ``contains_name``: the label contains an operator's name of two or more characters
  (审判官艾丽妮 style titles);
* ``ambiguous``: the name resolves to several operators.

A suspect is settled by an entry in ``data/aliases.toml`` (``[[alias]]`` or ``[[block]]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import ahocorasick

from arklore.core.operators import Alias
from arklore.corpus.store import Store
from arklore.names.build import load_alias_table, load_operators, portrait_stats, speaker_ids

BIG_SPEAKER_LINES = 200
SUSPECT_SHARE = 0.4
SUSPECT_LINES = 10


@dataclass
class Suspect:
    speaker: str
    lines: int
    reasons: list[str]
    candidates: list[str] = field(default_factory=list)


def audit(store: Store, user_aliases: Sequence[Alias] = ()) -> dict:
    table = load_alias_table(store, user_aliases)
    ops = load_operators(store)
    auto = ahocorasick.Automaton()
    for op in ops:
        if len(op.name) >= 2:
            auto.add_word(op.name, (op.name, op.char_id))
    auto.make_automaton()
    portrait = portrait_stats(store)
    ids = speaker_ids(store)
    big, suspects = [], []
    for name, n, *_ in store.speaker_rows():
        cid = ids.get(name)
        res = table.resolve(name)
        if n >= BIG_SPEAKER_LINES:
            big.append(
                {
                    "speaker": name,
                    "lines": n,
                    "status": "operator" if cid else "npc",
                    "char_id": cid,
                    "decided_by": res.source if res.char_id else ("portrait" if cid else None),
                }
            )
        if cid:
            continue
        reasons, cands = [], []
        if res.ambiguous:
            reasons.append("ambiguous")
            cands += list(res.ids)
        p = portrait.get(name)
        if p and not p[3] and p[1] >= SUSPECT_SHARE and p[2] >= SUSPECT_LINES:
            reasons.append(f"portrait {p[0]} share={p[1]} lines={p[2]}")
            cands.append(p[0])
        inner = {cid2 for _, (nm, cid2) in auto.iter(name) if nm != name}
        if inner:
            reasons.append("contains_name")
            cands += sorted(inner)
        if reasons:
            suspects.append(Suspect(name, n, reasons, sorted(set(cands))))
    return {
        "thresholds": {
            "big_speaker_lines": BIG_SPEAKER_LINES,
            "suspect_share": SUSPECT_SHARE,
            "suspect_lines": SUSPECT_LINES,
        },
        "big_speakers": big,
        "big_speakers_operators": sum(1 for b in big if b["status"] == "operator"),
        "big_speakers_npcs": sum(1 for b in big if b["status"] == "npc"),
        "suspects": [asdict(s) for s in suspects],
    }
