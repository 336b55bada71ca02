"""Texts embedded ahead: the relation documents' vectors made in worker processes while the
build's other steps run, written to the embedding cache the index step then reads.

``arklore build`` from nothing spends most of its time embedding the relation documents, and
the steps between the graph and the index (appearances, profiles) run on one core. The
documents are made from the graph alone (and the corpus facts), so once the graph exists
their texts can be embedded on the cores those steps leave idle. :class:`EmbedAhead` hands
batches of the texts the cache lacks to ``workers`` spawned processes (one engine thread
each: on the same cores, processes run a batch without the engine's threads waiting for each
other at every layer); each writes its vectors into the cache as its batch finishes. The
index step waits for them (:meth:`EmbedAhead.wait`) and then finds its texts cached.

The cache is keyed by (embedder, version, text hash), and e5's vector of a text does not
depend on its batch nor on the engine's threads, so an index built this way holds exactly the
vectors a sequential build makes. Stopping (Ctrl-C, an error) keeps whatever batches
finished, valid entries of the cache; nothing else is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arklore.base.workers import spawn_pool
from arklore.rag.embedders import (
    EMBED_BATCH,
    Embedder,
    EmbeddingCache,
    make_embedder,
    text_hash,
)

Progress = Callable[[str, int, int], None]

AHEAD_EMBEDDERS = ("e5-small", "hash")
"""Embedders cheap to load once per worker (bge would load its model and torch in each)."""
AHEAD_MIN_TEXTS = 128
"""Fewer texts to embed than this are left to the index step (an edit's few changed texts:
starting worker processes and loading the model in each would cost more)."""


@dataclass
class AheadReport:
    """What the workers did: ``texts`` (unique, not cached when they started), ``embedded``
    (written by them), ``workers``, ``seconds`` (from their start to the last batch),
    ``waited`` (how long the index step waited for them) and ``error`` (a failed worker: the
    index step embeds what is missing itself)."""

    texts: int = 0
    embedded: int = 0
    workers: int = 0
    seconds: float = 0.0
    waited: float = 0.0
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # rounded where the build report is written


class EmbedAhead:
    """The uncached ``texts`` embedded by ``workers`` processes into the cache at
    ``cache_path`` (see the module doc); started on construction."""

    def __init__(
        self,
        emb: Embedder,
        texts: list[str],
        cache_path: Path,
        *,
        workers: int,
        batch: int = EMBED_BATCH,
        min_texts: int = 1,
    ) -> None:
        self._t0 = time.perf_counter()
        cache = EmbeddingCache(cache_path)
        try:
            unique = {text_hash(t): t for t in texts}
            have = cache.get_many(emb, list(unique))
        finally:
            cache.close()
        todo = [t for h, t in unique.items() if h not in have]
        if len(todo) < min_texts:
            todo = []  # too few to be worth the workers: the index step embeds them
        batches = [todo[i : i + batch] for i in range(0, len(todo), batch)]
        self.report = AheadReport(texts=len(todo), workers=min(workers, len(batches)))
        self._batches = batches
        self._futures: list[Future[int]] = []
        self._pool: ProcessPoolExecutor | None = None
        self._done_at: float | None = None
        if batches:
            self._pool = spawn_pool(self.report.workers, _start, (emb.name, str(cache_path)))
            self._futures = [self._pool.submit(_embed, part) for part in batches]
            for f in self._futures:
                f.add_done_callback(self._finished)

    @property
    def started(self) -> bool:
        """Whether workers were started (there were at least ``min_texts`` to embed)."""
        return bool(self._futures)

    def _finished(self, _: Future[int]) -> None:
        self._done_at = time.perf_counter()  # the last call is the last batch's

    def wait(self, progress: Progress | None = None) -> AheadReport:
        """Block until every batch is in the cache (or a worker failed: recorded in the
        report, not raised; the index step embeds what is missing). ``progress`` is told
        the texts embedded so far as batches finish."""
        t = time.perf_counter()
        if progress:
            done = sum(
                len(b) for b, f in zip(self._batches, self._futures, strict=True) if f.done()
            )
            progress("embed", done, self.report.texts)
            pending = {
                f: len(b) for b, f in zip(self._batches, self._futures, strict=True) if not f.done()
            }
            for f in as_completed(pending):
                done += pending[f]
                progress("embed", done, self.report.texts)
        wait(self._futures)
        for f in self._futures:
            if f.cancelled():
                continue
            exc = f.exception()
            if exc is not None:
                self.report.error = self.report.error or f"{type(exc).__name__}: {exc}"
            else:
                self.report.embedded += f.result()
        self.report.waited = time.perf_counter() - t
        self.report.seconds = (self._done_at or time.perf_counter()) - self._t0
        self.close()
        return self.report

    def close(self) -> None:
        """Stop the workers: batches not started are dropped, a running one finishes."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


_EMB: Embedder | None = None  # a worker process's (set by _start)
_CACHE: EmbeddingCache | None = None


def _start(embedder: str, cache_path: str) -> None:
    """A worker (:func:`~arklore.base.workers.spawn_pool`): its embedder on one engine
    thread, and the cache it writes."""
    global _EMB, _CACHE
    _EMB = make_embedder(embedder, e5_threads_setting=1)
    _CACHE = EmbeddingCache(Path(cache_path))


def _embed(texts: list[str]) -> int:
    assert _EMB is not None and _CACHE is not None, "a worker is started with its embedder"
    vecs = _EMB.embed_documents(texts)
    _CACHE.put_many(_EMB, [(text_hash(t), v) for t, v in zip(texts, vecs, strict=True)])
    return len(texts)


def embed_in_workers(
    emb: Embedder,
    texts: list[str],
    cache_path: Path,
    *,
    workers: int,
    progress: Progress | None = None,
) -> int:
    """The texts the cache lacks embedded now by ``workers`` one-thread processes, when
    there are at least :data:`AHEAD_MIN_TEXTS` of them and the embedder is cheap to load in
    each; returns how many they embedded (0: nothing started, the caller embeds). The
    index build's own embedding: on two cores two one-thread processes ran a cold index
    faster than one process on two engine threads, whose threads wait for each other at every
    layer (worst on a busy machine)."""
    if workers < 2 or emb.name not in AHEAD_EMBEDDERS:
        return 0
    ahead = EmbedAhead(emb, texts, cache_path, workers=workers, min_texts=AHEAD_MIN_TEXTS)
    try:
        return ahead.wait(progress).embedded if ahead.started else 0
    finally:
        ahead.close()
