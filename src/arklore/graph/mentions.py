"""Mentions, no LLM ("task E"): which operators each person names, in voice lines and story.

* **voice_mentions** -- ``charword_table.json`` (``charWords[*].charId`` / ``voiceText``):
  operator A's voice lines that name operator B. Alternate forms count for their base.
* **mentions** -- story dialogue lines of speaker A that name operator B. A name used to
  address someone (a vocative) is counted as a vocative (interaction), not again as a mention.

Detection is :class:`arklore.names.matcher.MentionMatcher` (alias table + word rules); an
ambiguous surface (several operators) names nobody, and so does a ``[[stranger]]`` name (林
is also her father, 医生 a word: :attr:`People.strangers`). Mentions of oneself are ignored. Only
operators can be mentioned (NPC names are not in the alias table). Evidence: the first
:data:`~arklore.graph.interaction.EVIDENCE_CAP` story line ids per pair; voice lines have no
line ids and only count.

Used to find graph edges that are missing: a pair with many mentions and no named relation is
listed by ``arklore graph show`` as an ``interaction`` edge with ``mention`` among its sources.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arklore.core.vocatives import address_spans
from arklore.graph.interaction import EVIDENCE_CAP, Pairs, PairStats, ScanLine
from arklore.graph.people import People
from arklore.sources.gamedata import read_table


def _get(pairs: Pairs, a: str, b: str) -> PairStats:
    st = pairs.get((a, b))
    if st is None:
        st = pairs[(a, b)] = PairStats()
    return st


def story_mention_hook(people: People) -> Callable[[ScanLine, list[str], Pairs], None]:
    """A ``scan(on_line=...)`` callback counting story mentions into the pairs."""
    find = people.matcher.find
    base = people.base
    strangers = people.strangers

    def on_line(ln: ScanLine, addressees: list[str], pairs: Pairs) -> None:
        src = ln.node
        if src is None:  # scan calls this for attributed lines only
            return
        seen: set[str] = set()
        spans = list(address_spans(ln.text)) if addressees else []
        for m in find(ln.text):
            if m.char_id is None or m.surface in strangers:  # 林先生 is her father
                continue
            tgt = base(m.char_id)
            if tgt == src or tgt in seen:
                continue
            if tgt in addressees and any(s <= m.start and m.end <= e for s, e in spans):
                continue  # counted as a vocative
            seen.add(tgt)
            st = _get(pairs, src, tgt)
            st.mentions += 1
            if len(st.evidence) < EVIDENCE_CAP:
                st.evidence.append(ln.line_id)

    return on_line


def voice_mentions(excel_root: Path | None, people: People, pairs: Pairs) -> int:
    """Add charword_table mentions into ``pairs``; returns the number of voice lines read."""
    if excel_root is None:
        return 0
    table = read_table(excel_root, "charword_table") or {}
    words = table.get("charWords") or {}
    n = 0
    for key in sorted(words):
        w = words[key]
        if not isinstance(w, dict):
            continue
        cid, text = w.get("charId"), w.get("voiceText")
        if not isinstance(cid, str) or not isinstance(text, str) or cid not in people.registry:
            continue
        n += 1
        src = people.base(cid)
        seen: set[str] = set()
        for m in people.matcher.find(text):
            if m.char_id is None or m.surface in people.strangers:
                continue
            tgt = people.base(m.char_id)
            if tgt == src or tgt in seen:
                continue
            seen.add(tgt)
            _get(pairs, src, tgt).voice_mentions += 1
    return n
