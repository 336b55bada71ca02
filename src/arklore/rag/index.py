"""The ChromaDB index: ``arklore rag build`` and opening the live collection.

Build = full replacement, crash-safe (a build whose documents and embedder are exactly
those of the live collection keeps it and writes nothing; ``--force`` rebuilds anyway):
documents go into a *new* collection ``relation_rag__<build id>``; only when it is complete and
counted does the pointer readers follow (``rag/active.json`` under ARKLORE_HOME) get replaced
atomically. The collection it replaced is kept as ``previous`` (one step of rollback); every
older one, and the leftovers of killed builds, are deleted together with the segment folders
Chroma leaves behind on disk after a delete. A build killed at any point leaves the
pointer naming the previous, complete collection; leftovers are removed by the next build.
A file lock (``rag/build.lock``) keeps two builds from writing at once.

Client: embedded ``PersistentClient`` under ``rag/chroma`` (telemetry off), or a Chroma server
(``HttpClient``) when a host is given (settings ``CHROMA_HOST``/``CHROMA_PORT``).

Every function takes ``root``, the index's folder (``$ARKLORE_HOME/rag``).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from filelock import FileLock, Timeout

from arklore.base.files import atomic_write_bytes, file_fingerprint, read_cached, write_cached
from arklore.core.errors import ArkloreError, ConfigError, NotBuiltError
from arklore.graph.evidence import PairFacts
from arklore.graph.model import RelationGraph
from arklore.rag.ahead import embed_in_workers
from arklore.rag.docs import DocMemo, RelationDoc, SourceContext, collect_documents
from arklore.rag.embedders import Embedder, EmbeddingCache, embed_cached
from arklore.rag.validate import Rejected, validate, write_rejects

COLLECTION_PREFIX = "relation_rag"
POINTER_FILE = "active.json"
LIVE_FILE = "live_docs.pickle"
"""What the live collection holds, as a digest per document, kept with the collection's name
and content hash: a patch compares the new documents with it instead of reading every
document back from Chroma."""
EMBED_CACHE_FILE = "embed_cache.sqlite3"  # document vectors by (embedder, text hash)
ADD_BATCH = 500
PATCH_HNSW = {"batch_size": 1, "sync_threshold": 1}
"""The vector index settings of a collection once it is patched: Chroma writes its HNSW index
to disk after this many changes (default 1000), and every process that opens the collection
applies again the changes written since (2-3 s for 800 of them), so each one-edit build would
pay for the edits before it. At 1 a patch leaves nothing to apply again; writing the index
(a few MB) after each write call costs no more than Chroma's own batching."""


class RagIndexError(ArkloreError):
    """The relation index is missing, unreadable, or was built with another embedder."""

    default_hint = "run `arklore rag build`"


class RagIndexMissingError(RagIndexError, NotBuiltError):
    """No relation index under the home (``arklore build`` makes it)."""

    default_hint = NotBuiltError.default_hint


class ChromaUnreachableError(RagIndexError):
    """``CHROMA_HOST`` names a Chroma server that does not answer."""

    default_hint = (
        "start the Chroma server (`chroma run`), or unset CHROMA_HOST to use the embedded index"
    )


class RagBuildBusyError(ArkloreError):
    default_hint = "another `arklore rag build` is running; wait for it and try again"


def pointer_path(root: Path) -> Path:
    return Path(root) / POINTER_FILE


def make_client(root: Path, host: str | None = None, port: int = 8000) -> Any:
    """The embedded Chroma under ``root/chroma``, or a Chroma server at ``host:port``."""
    import chromadb  # heavy import: only commands that touch the index pay for it
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if host:
        try:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        except Exception as exc:  # noqa: BLE001 - chromadb raises ValueError and httpx errors
            raise ChromaUnreachableError(
                f"the Chroma server {host}:{port} (CHROMA_HOST/CHROMA_PORT) does not answer: "
                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from exc
    path = Path(root) / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


REBUILD = "run `arklore build`"
"""What makes a stale index current again (:func:`stale_reason`)."""


def stale_reason(root: Path, graph_path: Path, ptr: dict[str, Any] | None = None) -> str | None:
    """Why the live index under ``root`` no longer matches the graph saved at ``graph_path``,
    or None when it does (or when there is no graph or no index to compare); the fix is
    :data:`REBUILD`. Reads the pointer and the graph's size and time; hashes the graph only
    when those changed."""
    ptr = ptr if ptr is not None else read_pointer(root)
    if ptr is None or not graph_path.is_file():
        return None
    built = ptr.get("graph")
    if not built:
        return "the index does not record which graph it was built from"
    now = graph_path.stat()
    if (now.st_size, now.st_mtime_ns) == (built.get("size"), built.get("mtime_ns")):
        return None
    if file_fingerprint(graph_path)["sha256"] == built.get("sha256"):
        return None
    return "the relation graph changed since the index was built"


def read_pointer(root: Path) -> dict[str, Any] | None:
    try:
        pointer: dict[str, Any] = orjson.loads(pointer_path(root).read_bytes())
        return pointer
    except FileNotFoundError:
        return None
    except orjson.JSONDecodeError as exc:  # cannot happen with atomic writes, but say so
        raise RagIndexError(f"{pointer_path(root)} is unreadable: {exc}") from exc


def _write_pointer(root: Path, data: dict[str, Any]) -> None:
    atomic_write_bytes(pointer_path(root), orjson.dumps(data, option=orjson.OPT_INDENT_2))


def content_hash(docs: list[RelationDoc], emb: Embedder) -> str:
    h = hashlib.sha256(f"{emb.name}\n{emb.version}\n".encode())
    for d in sorted(docs, key=lambda d: d.doc_id):
        h.update(orjson.dumps([d.doc_id, d.text, d.metadata()], option=orjson.OPT_SORT_KEYS))
    return h.hexdigest()


@dataclass
class BuildReport:
    collection: str = ""
    unchanged: bool = False  # same documents and embedder as the live collection: kept
    documents: int = 0
    rejected: int = 0
    embedded: int = 0
    cached: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    generated_by: dict[str, int] = field(default_factory=dict)
    gate_reasons: dict[str, int] = field(default_factory=dict)  # LLM answers not used, why
    removed_collections: list[str] = field(default_factory=list)
    embedder: str = ""
    embedder_version: str = ""
    content_hash: str = ""
    seconds: float = 0.0
    errors_path: str = ""
    reject_reasons: dict[str, int] = field(default_factory=dict)
    patched: dict[str, int] | None = None  # the live collection patched in place: how
    described: int = 0  # evidence-built texts made (the others were the last build's)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per stage, in order: ``lock``, ``collect`` (documents from every source),
    ``validate``, ``hash``, ``client`` (waiting for Chroma's import and client, made on a side
    thread while the rest runs; ``client_thread`` is how long that thread took), ``cache_read``,
    ``embed``, ``cache_write``, ``upsert`` (collection created and filled), ``verify``
    (count), ``switch`` (pointer), ``prune``. An unchanged build stops after ``client``."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


Progress = Callable[[str, int, int], None]


class _Stages:
    """Wall seconds per named stage of a build (added up when a stage repeats)."""

    def __init__(self, into: dict[str, float]) -> None:
        self.d = into

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t)

    def add(self, name: str, seconds: float) -> None:
        self.d[name] = round(self.d.get(name, 0.0) + seconds, 4)


class _ClientThread:
    """The Chroma client made on a side thread (``import chromadb`` alone takes about a
    second), so that it overlaps document collection and embedding."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._client: Any = None
        self._error: BaseException | None = None
        self.seconds = 0.0
        self._thread = threading.Thread(target=self._run, name="chroma-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t = time.perf_counter()
        try:
            self._client = self._factory()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            self._error = exc
        self.seconds = time.perf_counter() - t

    def get(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._client


def build_index(
    root: Path,
    graph: RelationGraph,
    *,
    embedder: Embedder,
    rejects_path: Path,
    graph_path: str = "graph",
    graph_fingerprint: dict[str, Any] | None = None,
    store: Any = None,
    describer: Any = None,
    facts: Mapping[tuple[str, str], PairFacts] | None = None,
    sources: list[str] | None = None,
    extra_documents: list[RelationDoc] | None = None,
    force: bool = False,
    patch: bool = False,
    memo: DocMemo | None = None,
    lock_timeout: float = 600.0,
    progress: Progress | None = None,
    client: Any = None,
    client_factory: Callable[[], Any] | None = None,
    inputs: str | None = None,
    workers: int = 1,
    _after_add: Callable[[int], None] | None = None,
) -> BuildReport:
    """Collect, validate, embed and index every relation document; switch atomically.

    When the documents and the embedder are exactly those of the live collection (same
    content hash) nothing is written and the live collection stays, unless ``force``.
    Without ``client``, the client from ``client_factory`` (default: the embedded one under
    ``root``) is made on a side thread while the documents are collected and embedded.
    The report's ``timings`` holds the seconds of each stage; ``inputs`` (a digest of what the
    documents were made from) is recorded in the pointer for the next build to compare. ``facts``
    (:func:`arklore.graph.evidence.pair_facts` of :func:`~arklore.rag.docs.fact_pairs`) feed
    the evidence-built descriptions; without them only the template remains; ``memo``: the
    texts of the last build (:class:`~arklore.rag.docs.DocMemo`), so only the changed ones are
    made. ``workers``: processes that embed the texts the cache lacks when there are many
    (:func:`~arklore.rag.ahead.embed_in_workers`); with 1 this process embeds them.

    ``patch``: when the live collection was built with this embedder, bring it to the new
    documents in place -- delete the ids that are gone, upsert the documents whose text or
    metadata changed (embedded through the cache: only changed texts are embedded) -- instead
    of filling a new collection. The pointer is marked ``patching`` first and rewritten
    when the collection holds exactly the new documents; a build that finds the mark (one
    killed while patching) builds a new collection. Without ``patch`` (``arklore rag build``)
    every build fills a new collection, kept as ``previous`` for one step of rollback.
    """
    t0 = time.perf_counter()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    stage = _Stages(timings)
    maker = None
    factory = client_factory or (lambda: make_client(root))
    if client is None and not patch:
        maker = _ClientThread(factory)
    elif client is None:  # a patch embeds a few texts: e5's threads would wait on the import's
        client = _LazyClient(factory)
    lock = FileLock(str(root / "build.lock"))
    try:
        with stage("lock"):
            lock.acquire(timeout=lock_timeout)
    except Timeout as exc:
        raise RagBuildBusyError(
            f"could not take {lock.lock_file} within {lock_timeout:g}s"
        ) from exc
    try:
        emb = embedder
        with stage("collect"):
            ctx = SourceContext(
                graph=graph,
                graph_path=graph_path,
                store=store,
                extra=list(extra_documents or []),
                facts=facts if facts is not None else {},
                memo=memo,
            )
            if describer is not None:
                ctx.describer = describer
            docs = collect_documents(ctx, sources)
        with stage("validate"):
            ok, bad = validate(docs, graph)
            run_id = uuid.uuid4().hex[:12]
            report = BuildReport(embedder=emb.name, embedder_version=emb.version)
            report.timings = timings
            report.errors_path = str(write_rejects(rejects_path, bad, run_id=run_id))
            report.rejected = len(bad)
            for r in bad:
                key = (
                    r.reason.split(" ")[0]
                    if r.reason.startswith(("length", "invalid", "duplicate"))
                    else r.reason
                )
                report.reject_reasons[key] = report.reject_reasons.get(key, 0) + 1
            _count(report, ok)

        with stage("hash"):
            report.content_hash = content_hash(ok, emb)
        old = read_pointer(root)
        old_name: str | None = old.get("collection") if old else None
        if not force and old and old_name and old.get("content_hash") == report.content_hash:
            with stage("client"):
                client = _client(client, maker, stage)
            try:
                live_count = client.get_collection(old_name, embedding_function=None).count()
            except Exception:  # noqa: BLE001 - missing collection: rebuild below
                live_count = -1
            if live_count == len(ok):
                report.collection, report.unchanged, report.cached = old_name, True, len(ok)
                with stage("prune"):
                    _prune(root, client, {old_name, old.get("previous")}, report)
                if old.get("graph") != graph_fingerprint or old.get("inputs") != inputs:
                    _write_pointer(root, old | {"graph": graph_fingerprint, "inputs": inputs})
                report.seconds = round(time.perf_counter() - t0, 3)
                return report

        if progress:
            progress("embed", 0, len(ok))
        texts = [d.text for d in ok]
        t = time.perf_counter()
        in_workers = embed_in_workers(
            emb, texts, root / EMBED_CACHE_FILE, workers=workers, progress=progress
        )
        if in_workers:
            stage.add("embed_workers", time.perf_counter() - t)
        cache = EmbeddingCache(root / EMBED_CACHE_FILE)
        try:
            vecs, report.embedded = embed_cached(emb, texts, cache, timings=timings)
            report.embedded += in_workers
            report.cached = len(ok) - report.embedded
            if progress:
                progress("embed", len(ok), len(ok))
        finally:
            cache.close()

        with stage("client"):
            client = _client(client, maker, stage)
        if patch and old and old_name and _patchable(old, emb):
            with stage("patch"):
                done = _patch(root, client, old, ok, vecs, report, graph_fingerprint, inputs)
            if done:
                report.seconds = round(time.perf_counter() - t0, 3)
                return report
        with stage("upsert"):
            new_name = f"{COLLECTION_PREFIX}__{time.strftime('%Y%m%dT%H%M%S')}_{run_id[:6]}"
            meta = {
                "embedder": emb.name,
                "embedder_version": emb.version,
                "dim": emb.dim,
                "doc_count": len(ok),
                "content_hash": report.content_hash,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "hnsw:space": "cosine",
            }
            col = client.create_collection(new_name, metadata=meta, embedding_function=None)
            for i in range(0, len(ok), ADD_BATCH):
                part = ok[i : i + ADD_BATCH]
                col.add(
                    ids=[d.doc_id for d in part],
                    documents=[d.text for d in part],
                    metadatas=[d.metadata() for d in part],
                    embeddings=vecs[i : i + ADD_BATCH],
                )
                if progress:
                    progress("index", i + len(part), len(ok))
                if _after_add:
                    _after_add(i + len(part))
        with stage("verify"):
            n = col.count()
        if n != len(ok):
            raise RagIndexError(
                f"new collection {new_name} holds {n} documents, expected {len(ok)}"
            )
        with stage("switch"):
            pointer = {k: v for k, v in meta.items() if k != "hnsw:space"}
            pointer |= {"collection": new_name, "previous": old_name, "graph": graph_fingerprint,
                        "inputs": inputs}  # fmt: skip
            _write_pointer(root, pointer)
            _keep_live(root, new_name, report.content_hash, ok)
        report.collection = new_name
        with stage("prune"), contextlib.suppress(Exception):  # the next build removes the rest
            _prune(root, client, {new_name, old_name}, report)
        report.seconds = round(time.perf_counter() - t0, 3)
        return report
    finally:
        lock.release()


def _patchable(old: dict[str, Any], emb: Embedder) -> bool:
    return (
        not old.get("patching")
        and old.get("embedder") == emb.name
        and old.get("embedder_version") == emb.version
    )


def _patch(
    root: Path,
    client: Any,
    old: dict[str, Any],
    ok: list[RelationDoc],
    vecs: Any,
    report: BuildReport,
    graph_fingerprint: dict[str, Any] | None,
    inputs: str | None,
) -> bool:
    """The live collection brought to ``ok`` in place (see :func:`build_index`); False when
    it cannot be read (a new collection is built instead)."""
    name = str(old["collection"])
    kept = read_cached(root / LIVE_FILE, f"{name}:{old.get('content_hash')}", dict)
    try:
        col = client.get_collection(name, embedding_function=None)
        if kept is None:  # not kept by the build that made it: read back
            live = col.get(include=["documents", "metadatas"])
            kept = {
                did: _doc_digest(text, meta)
                for did, text, meta in zip(
                    live["ids"], live["documents"], live["metadatas"], strict=True
                )
            }
    except Exception:  # noqa: BLE001 - missing or unreadable: a new collection instead
        return False
    with contextlib.suppress(Exception):  # only speed depends on it: never fail a build
        hnsw = (col.configuration_json or {}).get("hnsw") or {}
        if any(hnsw.get(k) != v for k, v in PATCH_HNSW.items()):
            col.modify(configuration={"hnsw": dict(PATCH_HNSW)})
    want = {d.doc_id for d in ok}
    gone = sorted(did for did in kept if did not in want)
    changed = [
        i for i, d in enumerate(ok) if kept.get(d.doc_id) != _doc_digest(d.text, d.metadata())
    ]
    _write_pointer(root, old | {"patching": True})
    if gone:
        col.delete(ids=gone)
    for start in range(0, len(changed), ADD_BATCH):
        part = changed[start : start + ADD_BATCH]
        col.upsert(
            ids=[ok[i].doc_id for i in part],
            documents=[ok[i].text for i in part],
            metadatas=[ok[i].metadata() for i in part],
            embeddings=vecs[part],
        )
    n = col.count()
    if n != len(ok):
        raise RagIndexError(
            f"collection {name} holds {n} documents after patching, expected {len(ok)}"
        )
    pointer = {k: v for k, v in old.items() if k != "patching"}
    pointer |= {"doc_count": len(ok), "content_hash": report.content_hash,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "graph": graph_fingerprint,
                "inputs": inputs}  # fmt: skip
    _write_pointer(root, pointer)
    _keep_live(root, name, report.content_hash, ok)
    report.collection = name
    report.patched = {"upserted": len(changed), "deleted": len(gone)}
    return True


def _doc_digest(text: str, metadata: Mapping[str, Any] | None) -> str:
    return hashlib.sha1(orjson.dumps([text, metadata], option=orjson.OPT_SORT_KEYS)).hexdigest()


def _keep_live(root: Path, name: str, content_hash: str, docs: list[RelationDoc]) -> None:
    """:data:`LIVE_FILE` for the collection ``name`` now holding ``docs``."""
    digests = {d.doc_id: _doc_digest(d.text, d.metadata()) for d in docs}
    write_cached(root / LIVE_FILE, f"{name}:{content_hash}", digests)


class _LazyClient:
    """The Chroma client made in this thread when first asked for (:func:`_client`)."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory


def _client(client: Any, maker: _ClientThread | None, stage: _Stages) -> Any:
    if isinstance(client, _LazyClient):
        t = time.perf_counter()
        made = client.factory()
        stage.add("client_thread", time.perf_counter() - t)
        return made
    if client is not None or maker is None:
        return client
    got = maker.get()
    stage.add("client_thread", maker.seconds)
    return got


def _prune(root: Path, client: Any, keep: set[str | None], report: BuildReport) -> None:
    """Delete every index collection not in ``keep`` (older ones, leftovers of killed builds),
    then the segment folders Chroma leaves on disk for deleted collections."""
    for name in _collection_names(client):
        if name.startswith(COLLECTION_PREFIX + "__") and name not in keep:
            client.delete_collection(name)
            report.removed_collections.append(name)
    _remove_orphan_segments(root)


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _remove_orphan_segments(root: Path) -> list[str]:
    """Segment folders under ``root/chroma`` that no segment of the embedded Chroma refers to
    (Chroma 1.x keeps a deleted collection's vector folder on disk). Only folders named like a
    segment id are considered; nothing is removed when Chroma's catalogue cannot be read."""
    chroma = Path(root) / "chroma"
    catalogue = chroma / "chroma.sqlite3"
    if not catalogue.is_file():
        return []
    try:
        conn = sqlite3.connect(f"file:{catalogue}?mode=ro", uri=True, timeout=30)
        try:
            live = {row[0] for row in conn.execute("SELECT id FROM segments")}
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    removed = []
    for d in chroma.iterdir():
        if d.is_dir() and _UUID.match(d.name) and d.name not in live:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d.name)
    return removed


def disk_bytes(root: Path) -> int:
    """Bytes the index folder takes on disk (collections, embedding cache)."""
    return sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file())


def _count(report: BuildReport, ok: list[RelationDoc]) -> None:
    report.documents = len(ok)
    for d in ok:
        report.by_source[d.source] = report.by_source.get(d.source, 0) + 1
        report.generated_by[d.generated_by] = report.generated_by.get(d.generated_by, 0) + 1
        if d.gate_reason:
            key = d.gate_reason.split(":")[0].split(" ")[0]
            report.gate_reasons[key] = report.gate_reasons.get(key, 0) + 1


def _collection_names(client: Any) -> list[str]:
    out = []
    for c in client.list_collections():
        out.append(c if isinstance(c, str) else c.name)
    return out


def open_active(root: Path, emb: Embedder, client: Any = None) -> tuple[Any, dict[str, Any]]:
    """The live collection and its pointer record; checks the embedder matches."""
    ptr = read_pointer(root)
    if ptr is None:
        raise RagIndexMissingError("no relation index (rag)", root.parent)
    if ptr.get("embedder") != emb.name or ptr.get("embedder_version") != emb.version:
        raise ConfigError(
            f"the relation index was built with embedder {ptr.get('embedder')} "
            f"({ptr.get('embedder_version')}), but {emb.name} ({emb.version}) is configured: "
            "rebuild it before querying",
            hint="rebuild it with `arklore rag build`, or set ARKLORE_EMBEDDER to the one it was built with",
        )
    col = _pointed_collection(root, ptr, client)
    cm = col.metadata or {}
    if cm.get("embedder") != emb.name or cm.get("embedder_version") != emb.version:
        raise ConfigError(
            f"collection {col.name} was built with {cm.get('embedder')} ({cm.get('embedder_version')}), "
            f"not {emb.name} ({emb.version}): rebuild it before querying",
            hint="rebuild it with `arklore rag build`",
        )
    return col, ptr


def _pointed_collection(root: Path, ptr: dict[str, Any], client: Any = None) -> Any:
    """The collection the pointer names (RagIndexError when it is gone)."""
    client = client or make_client(root)
    try:
        return client.get_collection(ptr["collection"], embedding_function=None)
    except Exception as exc:  # noqa: BLE001 - chroma raises several types for "not found"
        raise RagIndexError(
            f"collection {ptr['collection']} named by {pointer_path(root)} is missing: {exc}"
        ) from exc


def live_documents(root: Path, client: Any = None) -> list[RelationDoc]:
    """Every document of the live collection, read without an embedder (nothing is queried:
    for checks such as ``verify-anchors``); [] when no index was built."""
    ptr = read_pointer(root)
    if ptr is None:
        return []
    col = _pointed_collection(root, ptr, client)
    got = col.get(include=["documents", "metadatas"])
    return [
        RelationDoc.from_chroma(did, text, meta)
        for did, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
    ]


def doc_citations(
    docs: list[RelationDoc], name: Callable[[str], str], kind: str = "rag"
) -> list[tuple[str, str]]:
    """``(line_id, "rag: A -> B (predicate, source, doc id)")`` for every document's evidence,
    for ``arklore verify-anchors``."""
    out = []
    for d in docs:
        label = (
            f"{kind}: {name(d.operator_id)} -> {name(d.target_id)} "
            f"({d.predicate}, {d.source}, {d.doc_id})"
        )
        out += [(line_id, label) for line_id in d.evidence_line_ids]
    return out


__all__ = [
    "BuildReport",
    "ChromaUnreachableError",
    "REBUILD",
    "RagBuildBusyError",
    "RagIndexError",
    "RagIndexMissingError",
    "Rejected",
    "build_index",
    "content_hash",
    "disk_bytes",
    "doc_citations",
    "live_documents",
    "make_client",
    "open_active",
    "pointer_path",
    "read_pointer",
    "stale_reason",
]
