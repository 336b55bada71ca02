"""Precision/recall of mention detection on the labelled set ``data/names_eval.jsonl``.

The scored test needs the real name inventory (``realdata``).  Numbers are printed: run with
``-s`` (or ``-rP``, which shows the output of passed tests in the summary) to see them; they are
also in the assertion message when the test fails.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from arklore.core.operators import Operator
from arklore.names.aliases import load_user_aliases
from arklore.names.evaluation import Score, load_eval_set, operators_from_excel, score
from arklore.names.matcher import MentionMatcher, build_matcher
from arklore.names.rules import RuleConfig

MIN_PRECISION = 0.95
MIN_RECALL = 0.90
RECORDS = load_eval_set()
ID_RE = re.compile(r"^char_\d+_[0-9a-z]+$")


def test_eval_set_shape() -> None:
    assert len(RECORDS) >= 150
    assert {r["split"] for r in RECORDS} == {"dev", "heldout"}
    tags = Counter(t for r in RECORDS for t in r["tags"])
    for needed in (
        "single_char_name",
        "single_char_word",
        "nested",
        "real_name",
        "alternate_form",
        "nickname",
        "latin",
        "none",
        "context",
    ):
        assert tags[needed] >= 3, needed
    for r in RECORDS:
        for m in r["mentions"]:
            assert ID_RE.match(m["id"]), m
            assert r["text"][m["start"] : m["end"]] == m["surface"], r


@pytest.fixture(scope="module")
def real_ops(gamedata_root: Path) -> list[Operator]:
    return operators_from_excel(gamedata_root / "zh_CN/gamedata/excel")


@pytest.fixture(scope="module")
def real_matcher(real_ops: list[Operator]) -> MentionMatcher:
    return build_matcher(load_user_aliases(), operators=real_ops)


def _split(name: str) -> list[dict[str, Any]]:
    return [r for r in RECORDS if r["split"] == name]


@pytest.mark.realdata
def test_precision_recall(real_matcher: MentionMatcher, metrics) -> None:
    total = score(real_matcher.find, RECORDS)
    lines = [
        f"names eval: {len(RECORDS)} messages, {real_matcher.n_aliases} aliases, "
        f"{real_matcher.n_stopwords} blocking words",
        total.line("all"),
        score(real_matcher.find, _split("dev")).line("dev"),
        score(real_matcher.find, _split("heldout")).line("heldout"),
    ]
    for tag in sorted({t for r in RECORDS for t in r["tags"]}):
        lines.append(score(real_matcher.find, [r for r in RECORDS if tag in r["tags"]]).line(tag))
    lines += ["errors:", *(f"  {e}" for e in total.errors)]
    report = "\n".join(lines)
    print("\n" + report)
    metrics(lines[0])
    metrics(lines[1])
    assert total.precision >= MIN_PRECISION and total.recall >= MIN_RECALL, report


@pytest.mark.realdata
def test_ablation(real_ops: list[Operator], real_matcher: MentionMatcher) -> None:
    """Each signal switched off in turn; printed so the numbers can be compared."""
    base = score(real_matcher.find, RECORDS)
    rows = [base.line("all signals")]
    results: dict[str, Score] = {}
    for name in RuleConfig.signal_names():
        m = build_matcher(
            load_user_aliases(), operators=real_ops, config=RuleConfig().without(name)
        )
        results[name] = s = score(m.find, RECORDS)
        rows.append(s.line(f"without {name}"))
    naive = build_matcher(
        load_user_aliases(),
        operators=real_ops,
        config=RuleConfig(**{n: False for n in RuleConfig.signal_names()}),
    )
    plain_trie = _accept_all(naive)
    rows.append(score(plain_trie, RECORDS).line("plain trie (no rules)"))
    print(f"\nablation (all {len(RECORDS)} messages):\n" + "\n".join(rows))
    # the stoplist is the signal precision rests on
    assert results["stoplist"].precision < base.precision


def _accept_all(m: MentionMatcher):
    """Every leftmost-longest candidate (Latin still on word boundaries): the naive trie."""
    from arklore.names.aliases import fold
    from arklore.names.matcher import Mention

    def find(text: str, context=None) -> list[Mention]:
        return [
            Mention(ids[0] if len(ids) == 1 else None, text[s:e], s, e, "trie", ids)
            for s, e, _k, ids, _key in m._candidates(fold(text))
        ]

    return find
