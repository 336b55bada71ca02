"""SillyTavern export on the real corpus: 银灰's card read by the independent reader, and the
lint figure of the lorebook `arklore export lorebook` writes (relations of every operator)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tavern_card
from support.tree_world import make_workspace

from arklore.cards.lint import MAX_FALSE_RATE, Matchable, fires

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def ws(real_workspace, real_graph_built, real_index_built):
    """The shared real home, read with the tier-C opt-in (no profiles were distilled there):
    every operator's relations count. With the relation index built, as `arklore build`
    leaves it: without it every relation is a weak view computed from the corpus (minutes)."""
    s = real_workspace.settings
    w = make_workspace(s.home, s.gamedata, s.astr, embedder="hash", tier_c_relations=True)
    yield w
    w.close()


def test_silverash_card_on_the_real_corpus(ws, tmp_path: Path, metrics) -> None:
    (report,) = ws.cards.export_cards(["银灰"], tmp_path).cards
    card = tavern_card.parse_png_card((tmp_path / "银灰.png").read_bytes())
    assert card["spec"] == "chara_card_v3" and card["data"]["name"] == "银灰"
    entries = card["data"]["character_book"]["entries"]
    for sister in ("初雪", "崖心"):  # his sisters, by name and by what they are to him
        entry = next(e for e in entries if e["comment"].startswith(f"银灰→{sister}"))
        assert fires(Matchable.from_book_entry(entry), f"你和{sister}最近联系了吗？")
        assert fires(Matchable.from_book_entry(entry), "你的两个妹妹最近还好吗？")
    data = json.loads((tmp_path / "银灰.json").read_text(encoding="utf-8"))["data"]
    assert data["first_mes"] and "{@nickname}" not in json.dumps(data, ensure_ascii=False)
    metrics(
        f"real card 银灰: {report.relations} relation and {report.memories} memory entries, "
        f"{(tmp_path / '银灰.png').stat().st_size // 1024} KiB PNG"
    )


def test_the_real_lorebook_lint(ws, tmp_path: Path, metrics) -> None:
    out = tmp_path / "world.json"
    report = ws.cards.export_lorebook(out)
    entries = json.loads(out.read_text(encoding="utf-8"))["entries"]
    assert report.entries == len(entries) > 500 and report.operators > 300
    lint = ws.cards.lint(out)
    metrics(lint.line() + " [real World Info, every operator's relations]")
    assert lint.false_rate <= MAX_FALSE_RATE, [(f.label, f.key, f.text) for f in lint.false]
