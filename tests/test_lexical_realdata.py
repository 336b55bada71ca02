"""The tokenizer's cutter (jieba-rs, ``rjieba``) against Python jieba on real story lines:
the same dictionary must give the same cuts, or every BM25 ranking built on them moves."""

from __future__ import annotations

import jieba
import pytest
import rjieba

from arklore.corpus.store import Store

pytestmark = pytest.mark.realdata

SAMPLE = 20_000  # lines, spread over the whole corpus


def test_rjieba_cuts_real_lines_exactly_as_jieba_does(real_store_path) -> None:
    with Store(real_store_path) as store:
        rows = store.conn.execute("SELECT text FROM lines WHERE text != ''").fetchall()
    texts = [t for (t,) in rows[:: max(1, len(rows) // SAMPLE)]]
    assert len(texts) > SAMPLE // 2
    jieba.setLogLevel(60)
    precise = [t for t in texts if rjieba.cut(t, False) != jieba.lcut(t, HMM=False)]
    search = [
        t
        for t in texts[:5000]
        if rjieba.cut_for_search(t, False) != jieba.lcut_for_search(t, HMM=False)
    ]
    assert precise == [] and search == [], (precise[:3], search[:3])
