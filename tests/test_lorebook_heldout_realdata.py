"""The lorebook's keys on a held-out message set (``data/lorebook_eval.jsonl``: 324 chat
messages written for this measure, never used to pick a key), under SillyTavern's own keyword
rule (tests/support/sillytavern.py) and the lint's emulation of it: every person of the real
inventory and graph keyed as the export keys her, each message scanned as ``User: message``.

Prints the false triggers (a share of all firings) and the reach (people mentioned whose entry
fires). The issue's targets are 1% and 95%; the floors below hold what the rule reaches today
(5.9% and 75%: names that are common words, fan nicknames the data does not know, and
kinship words, which only a chat with her can resolve), so a change that loses ground fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
from support.sillytavern import Rules, Scan, sillytavern_root
from support.tree_world import make_workspace

from arklore.cards.lint import LintEntry, Matchable, fires, lint

pytestmark = pytest.mark.realdata

MAX_FALSE = 0.07
MIN_REACH = 0.74


@pytest.fixture(scope="module")
def ws(real_workspace: Any, real_graph_built: Any) -> Any:
    s = real_workspace.settings
    w = make_workspace(s.home, s.gamedata, s.astr, embedder="hash")
    yield w
    w.close()


def _records() -> list[dict[str, Any]]:
    text = (resources.files("arklore") / "data" / "lorebook_eval.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_keys_on_the_held_out_messages(ws: Any, metrics: Callable[[str], None]) -> None:
    records = _records()
    assert len(records) >= 200
    assert len({m["id"] for r in records for m in r["mentions"]}) >= 30
    maker = ws.cards.keymaker()
    entries = [
        LintEntry(pid, pid, Matchable(tuple(ks.keys)))
        for pid, ks in maker.all().items()
        if not ks.empty
    ]
    rep = lint(entries, records, ws.cards._person_of)
    metrics(rep.line() + " [held-out lorebook_eval.jsonl, keys only]")
    assert rep.false_rate <= MAX_FALSE, [(f.person, f.text) for f in rep.false]
    assert rep.reached / rep.mentioned >= MIN_REACH, rep.line()
    # SillyTavern's own matchKeys fires exactly what the emulation fires
    book = [{"uid": e.person, "key": list(e.match.keys), "keysecondary": []} for e in entries]
    texts = [f"User: {r['text']}" for r in records]
    _, by_st = Rules(sillytavern_root(), scans=[Scan(book, [t], 1) for t in texts]).run()
    for text, st in zip(texts, by_st, strict=True):
        assert set(st) == {e.person for e in entries if fires(e.match, text)}, text
