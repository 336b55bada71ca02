"""A newcomer's first build and a rebuild, as ratios against baselines measured in the same run
(the speed issue's table). Each row prints its figure, its baseline, the ratio, the goal and
PASS/FAIL:

1. ``arklore rag build`` with nothing changed, against ``arklore --help`` (a CLI start);
   goal <= 3x; and its reported time against the wall time it took.
2. A cold relation index (no embedding cache), against embedding the same texts with e5 on
   one thread in a fresh process; goal <= 0.5x.
3. ``arklore build`` from nothing (what ``make demo`` runs: ingest, graph, appearances,
   profiles, the relation index, her scenes); goal <= 120 s on a quiet machine.
4. The ingest step of that build, against reading and parsing the same files; goal <= 1.5x.
5. A chat turn over a realistic mix (the names eval's 274 chat messages to 10 operators, warm),
   p95 against one query embedding's p95 on the same messages; goal <= 1.5x.
6. One curated description edited in a user matrix (``ARKLORE_MATRIX``, layered over the
   shipped one), then ``arklore build``: the median wall time of three edits; goal <= 5 s.

    python -m bench bench_speed     # env: ARKLORE_GAMEDATA, ARKLORE_ASTR (the real data)

Everything is built in a temporary ARKLORE_HOME with the default embedder (e5-small).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from arklore.graph.matrix import default_matrix_path
from arklore.names.evaluation import load_eval_set
from arklore.settings import Settings
from arklore.sources.roots import DataRoots
from arklore.workspace import Workspace
from bench.bench_e5_threads import embed
from bench.bench_ingest import read_and_parse

ARKLORE = str(Path(sys.executable).with_name("arklore"))
OPERATORS = ("阿米娅", "陈", "银灰", "凯尔希", "W", "能天使", "德克萨斯", "临光", "史尔特尔", "夕")


def wall(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t
    if proc.returncode not in (0, 5):
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr[-400:]}")
    return seconds, proc.stdout


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def row(name: str, figure: str, base: str, ratio: float, goal: float, unit: str = "x") -> None:
    verdict = "PASS" if ratio <= goal else "FAIL"
    shown = f"{ratio:.2f}{unit}" if unit == "x" else f"{ratio:.0f}{unit}"
    print(f"{name:<38} {figure:>14} {base:>14} {shown:>8}  goal <= {goal:g}{unit}  {verdict}")


def main() -> None:
    settings = Settings.from_env()
    roots = DataRoots(settings.gamedata, settings.astr)
    roots.require_gamedata()
    roots.require_astr()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "ARKLORE_HOME": str(home), "ARKLORE_EMBEDDER": "e5-small"}
        build_s, out = wall([ARKLORE, "build", "--json"], env)
        report = json.loads(out)
        steps = {s["name"]: s["seconds"] for s in report["steps"]}
        print("build steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items()))

        t = time.perf_counter()
        read_and_parse(roots)
        parse_s = time.perf_counter() - t

        help_s = statistics.median(wall([ARKLORE, "--help"], env)[0] for _ in range(5))
        runs = [wall([ARKLORE, "rag", "build", "--json"], env) for _ in range(3)]
        unchanged_s = statistics.median(w for w, _ in runs)
        reported = statistics.median(json.loads(o)["seconds"] for _, o in runs)

        with Workspace(settings.model_copy(update={"home": home})) as ws:
            from arklore.rag.index import live_documents

            texts = [d.text for d in live_documents(home / "rag", ws.rag.chroma())]
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps([texts, []], ensure_ascii=False), encoding="utf-8")
        e5_one_s, _, _ = embed(texts_file, 1, Path(tmp))
        shutil.rmtree(home / "rag")
        cold_s, _ = wall([ARKLORE, "rag", "build", "--json"], env)

        turns, queries = turn_latencies(settings.model_copy(update={"home": home}))
        edits, edit_steps = matrix_edits(env, Path(tmp))

    print(f"\n{'row':<38} {'measured':>14} {'baseline':>14} {'ratio':>8}")
    row("1 rag build, nothing changed", f"{unchanged_s:.2f} s", f"{help_s:.2f} s CLI",
        unchanged_s / help_s, 3.0)  # fmt: skip
    print(f"{'  its reported time / wall':<38} {reported:>12.2f} s {unchanged_s:>12.2f} s "
          f"{reported / unchanged_s:>7.2f}x")  # fmt: skip
    row(f"2 cold relation index ({len(texts)} docs)", f"{cold_s:.1f} s",
        f"{e5_one_s:.1f} s e5x1", cold_s / e5_one_s, 0.5)  # fmt: skip
    row("3 arklore build from nothing", f"{build_s:.0f} s", "-", build_s, 120, " s")
    row("4 ingest step", f"{steps['ingest']:.1f} s", f"{parse_s:.1f} s parse",
        steps["ingest"] / parse_s, 1.5)  # fmt: skip
    row(f"5 turn p95 ({len(turns)} turns)", f"{p95(turns):.1f} ms", f"{p95(queries):.1f} ms emb",
        p95(turns) / p95(queries), 1.5)  # fmt: skip
    print(
        f"  turn p50 {statistics.median(turns):.1f} ms; one query embedding p50 "
        f"{statistics.median(queries):.1f} ms"
    )
    edit_s = statistics.median(edits)
    row("6 matrix edit, then arklore build", f"{edit_s:.1f} s", "-", edit_s, 5, " s")
    print(f"  edits: {', '.join(f'{x:.1f} s' for x in edits)}; steps of the last: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in edit_steps.items()))  # fmt: skip


def matrix_edits(
    env: dict[str, str], tmp: Path, n: int = 3
) -> tuple[list[float], dict[str, float]]:
    """``arklore build`` after one curated description is edited, ``n`` times: a user matrix
    restating the shipped matrix's first relation is brought in by one build (not timed),
    then its description is edited before each timed build. Returns the wall times and the
    seconds of the last build's steps that ran."""
    first = tomllib.loads(default_matrix_path().read_text(encoding="utf-8"))["relation"][0]
    matrix = tmp / "user_matrix.toml"
    env = {**env, "ARKLORE_MATRIX": str(matrix)}

    def write(description: str) -> None:
        rel = {k: v for k, v in first.items() if k != "description"}
        lines = [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in rel.items()]
        text = "[[relation]]\n" + "\n".join(lines)
        matrix.write_text(f'{text}\ndescription = "{description}"\n', encoding="utf-8")

    write(f"{first['description']}（用户版）")
    wall([ARKLORE, "build", "--json"], env)
    times: list[float] = []
    steps: dict[str, float] = {}
    for i in range(n):
        write(f"{first['description']}（第{i + 1}次修改）")
        seconds, out = wall([ARKLORE, "build", "--json"], env)
        times.append(seconds)
        steps = {s["name"]: s["seconds"] for s in json.loads(out)["steps"] if not s["skipped"]}
    return times, steps


def turn_latencies(settings: Settings) -> tuple[list[float], list[float]]:
    """Warm turns (one turn per operator first, as a server's steady state) over the names
    eval's messages, and one query embedding of each message, in ms."""
    messages = [item["text"] for item in load_eval_set()]
    turns: list[float] = []
    queries: list[float] = []
    with Workspace(settings) as ws:
        for op in OPERATORS:
            ws.chat.turn(op, "你好")
        emb = ws.rag.embedder()
        for text in messages:
            t = time.perf_counter()
            emb.embed_query(text)
            queries.append((time.perf_counter() - t) * 1000)
        for op in OPERATORS:
            for text in messages:
                t = time.perf_counter()
                ws.chat.turn(op, text)
                turns.append((time.perf_counter() - t) * 1000)
    return turns, queries


if __name__ == "__main__":
    main()
