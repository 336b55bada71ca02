"""Edge strength in [0, 1] from an edge's signals: documented, deterministic, monotone.

Signals (``Edge.signals``; a key is written only when non-zero):

=================  =================================================================
``matrix``         1 when the hand-written relationship matrix states the relation
``import``         1 when an imported relation export (wiki) states it
``direct``         distinct story evidence lines with basis ``direct`` (LLM-extracted, gated)
``reported``       ... with basis ``reported``
``inferred``       ... with basis ``inferred``
``story_stages``   stages those evidence lines come from (shown, not used by the formula)
``turns``          adjacent dialogue turns between the two (same for both directions)
``vocatives``      source's lines that open by calling target by name ("凯尔希，...")
``co_stages``      stages where both are principal speakers or both speak >= 5 lines
``mentions``       source's story lines that name target (operators only)
``voice_mentions`` source's voice lines (charword_table) that name target
``own_stories``    source's own operator records where target speaks (the people of her story)
=================  =================================================================

Each signal family gives a contribution ``c`` below its own ceiling, and the contributions
combine as independent pieces of evidence (noisy-OR)::

    sat(x, h)   = x / (x + h)                     # 0 at x=0, 1/2 at x=h, -> 1
    c_matrix    = 0.97 * matrix
    c_import    = 0.80 * import
    c_direct    = 0.90 * sat(direct, 1)
    c_reported  = 0.75 * sat(reported, 2)
    c_inferred  = 0.50 * sat(inferred, 3)
    c_own       = 0.75 * sat(own_stories, 1)
    c_interact  = 0.70 * (1 - (1 - sat(turns, 40)) * (1 - sat(vocatives, 5))
                             * (1 - sat(co_stages, 8)) * (1 - sat(mentions + 2 * voice_mentions, 10)))
    strength    = 1 - prod(1 - c)      rounded to 4 decimals

So curated relations score >= 0.97 on their own, direct story evidence alone stays below 0.9,
reported below 0.75 and interaction/mentions alone below 0.70 (curated > direct > reported >
interaction), and every signal can only raise the strength. ``strength > 0.6``
(:data:`WORTH_DESCRIBING`) therefore keeps every curated relation, story relations with two or
more direct lines (or direct plus reported), and only the pairs that interact a lot: on the
real corpus without any LLM about 1,100 of ~23,500 edges, e.g. 40 turns + 8 shared stages + 10
mentions gives 0.6125. The half-points were chosen on that corpus so that an interaction-only
edge needs sustained contact (tens of turns, several stages) to pass.
"""

from __future__ import annotations

from collections.abc import Mapping

WORTH_DESCRIBING = 0.6
"""The design's threshold for an edge worth describing to the role-play model."""

CEILING = {
    "matrix": 0.97,
    "import": 0.80,
    "direct": 0.90,
    "reported": 0.75,
    "inferred": 0.50,
    "own": 0.75,
    "interaction": 0.70,
}
HALF = {
    "direct": 1.0,
    "reported": 2.0,
    "inferred": 3.0,
    "own_stories": 1.0,
    "turns": 40.0,
    "vocatives": 5.0,
    "co_stages": 8.0,
    "mentions": 10.0,
}
VOICE_MENTION_WEIGHT = 2
ROUND = 4

SIGNALS: tuple[str, ...] = (
    "matrix",
    "import",
    "direct",
    "reported",
    "inferred",
    "story_stages",
    "turns",
    "vocatives",
    "co_stages",
    "mentions",
    "voice_mentions",
    "own_stories",
)


def _sat(x: float, half: float) -> float:
    return x / (x + half) if x > 0 else 0.0


def contributions(signals: Mapping[str, float]) -> dict[str, float]:
    """The per-family contributions ``c`` of the formula (for display and tests)."""
    g = signals.get
    mention_units = g("mentions", 0) + VOICE_MENTION_WEIGHT * g("voice_mentions", 0)
    interact = 1.0
    for x, h in (
        (g("turns", 0), HALF["turns"]),
        (g("vocatives", 0), HALF["vocatives"]),
        (g("co_stages", 0), HALF["co_stages"]),
        (mention_units, HALF["mentions"]),
    ):
        interact *= 1.0 - _sat(x, h)
    return {
        "matrix": CEILING["matrix"] if g("matrix", 0) else 0.0,
        "import": CEILING["import"] if g("import", 0) else 0.0,
        "direct": CEILING["direct"] * _sat(g("direct", 0), HALF["direct"]),
        "reported": CEILING["reported"] * _sat(g("reported", 0), HALF["reported"]),
        "inferred": CEILING["inferred"] * _sat(g("inferred", 0), HALF["inferred"]),
        "own": CEILING["own"] * _sat(g("own_stories", 0), HALF["own_stories"]),
        "interaction": CEILING["interaction"] * (1.0 - interact),
    }


def strength(signals: Mapping[str, float]) -> float:
    """The documented formula above, rounded to 4 decimals."""
    rest = 1.0
    for c in contributions(signals).values():
        rest *= 1.0 - c
    return round(min(1.0, max(0.0, 1.0 - rest)), ROUND)
