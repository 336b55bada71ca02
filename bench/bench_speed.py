"""A newcomer's first build and a rebuild, as ratios against baselines measured in the same run
(the speed issue's table). Each row prints its figure, its baseline, the ratio, the goal and
PASS/FAIL:

1. ``arklore rag build`` with nothing changed, against ``arklore --help`` (a CLI start);
   goal <= 3x; and its reported time against the wall time it took.
2. A cold relation index (no embedding cache), against embedding the same texts with e5 on
   one thread in a fresh process; goal <= 0.5x.
3. ``arklore build`` from nothing (what ``make demo`` runs: ingest, graph, appearances,
   profiles, the relation index, her scenes); goal <= 120 s on a quiet machine. Printed with
   its steps' times and what ran beside them (the relation documents embedded ahead in worker
   processes while appearances and profiles run).
4. The ingest step of that build, against reading and parsing the same files; goal <= 1.5x.
5. A chat turn over a realistic mix (the names eval's 274 chat messages to 10 operators, warm),
   p95 against one query embedding's p95 on the same messages; goal <= 1.5x.
6. One curated description edited in a user matrix (``ARKLORE_MATRIX``, layered over the
   shipped one), then ``arklore build``: the median wall time of three edits; goal <= 5 s.
7. The first group turn of 4 operators (:data:`GROUPS`, pairs no index document describes
   among them) on a freshly started ``arklore serve``, right after ``/readyz``; goal <= 300 ms.
8. Memory: the peak RSS of ``arklore build`` (its largest process, ``ru_maxrss`` of the
   children) and of one ``arklore serve`` (the server process and its turn worker, ``VmHWM``)
   after warm turns. No goal: a figure to watch.

    python -m bench bench_speed     # env: ARKLORE_GAMEDATA, ARKLORE_ASTR (the real data)
    python -m bench bench_speed --rows 6 --home ~/.arklore   # row 6 alone, on a copy of a home

Everything is built in a temporary ARKLORE_HOME with the default embedder (e5-small).
``--rows`` runs only the rows named (``6`` or ``1,6``...): the build from nothing still runs
first, unless ``--home`` names a built home, which is copied and edited in its copy (it must
have been built with e5-small); with ``--home``, only row 6 can run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from arklore.graph.matrix import default_matrix_path
from arklore.names.evaluation import load_eval_set
from arklore.settings import Settings
from arklore.sources.roots import DataRoots
from arklore.workspace import Workspace
from bench.bench_e5_threads import embed
from bench.bench_ingest import read_and_parse

ARKLORE = str(Path(sys.executable).with_name("arklore"))
OPERATORS = ("阿米娅", "陈", "银灰", "凯尔希", "W", "能天使", "德克萨斯", "临光", "史尔特尔", "夕")
GROUPS = (("临光", "瑕光", "煌", "夜莺"), ("德克萨斯", "拉普兰德", "能天使", "空"))
"""Groups of 4 whose first turn builds weak-contact views (pairs below the index's threshold)."""
GROUP_MESSAGE = "大家好，今天一起出任务吧"


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


ROWS = frozenset(range(1, 9))


def options(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="", help="the rows to run, comma-separated (default all)")
    ap.add_argument("--home", type=Path, help="a built home to copy for row 6 (no build)")
    # ``python -m bench bench_speed`` leaves the module name in sys.argv: ignore positionals
    args, extra = ap.parse_known_args(argv)
    if any(a.startswith("-") for a in extra):
        ap.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        args.rows = frozenset(int(r) for r in args.rows.split(",") if r.strip()) or ROWS
    except ValueError:
        ap.error(f"--rows takes row numbers 1-8, comma-separated, not {args.rows!r}")
    if not args.rows <= ROWS:
        ap.error(f"--rows takes row numbers 1-8, not {sorted(args.rows - ROWS)}")
    if args.home is not None and args.rows != {6}:
        ap.error("--home runs row 6 alone: add --rows 6")
    if args.home is not None and not (args.home / "build.json").is_file():
        ap.error(f"--home {args.home} is not a built home (no build.json)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = options(argv)
    rows: frozenset[int] = args.rows
    settings = Settings.from_env()
    roots = DataRoots(settings.gamedata, settings.astr)
    roots.require_gamedata()
    roots.require_astr()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "ARKLORE_HOME": str(home), "ARKLORE_EMBEDDER": "e5-small"}
        if args.home is not None:
            shutil.copytree(args.home, home, symlinks=True)
            edits, edit_steps = matrix_edits(env, Path(tmp))
            edit_row(edits, edit_steps)
            return
        build_s, out = wall([ARKLORE, "build", "--json"], env)
        build_rss = children_peak_rss_mb()
        report = json.loads(out)
        steps = {s["name"]: s["seconds"] for s in report["steps"]}
        print("build steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items()))
        if ahead := report.get("ahead"):
            print(
                f"  embedded ahead: documents made in {ahead['documents_seconds']:.1f} s after "
                f"the graph, {ahead['embedded']:,} texts in {ahead['workers']} worker processes "
                f"over {ahead['seconds']:.1f} s (beside {', '.join(ahead['overlapped'])}); "
                f"the index step waited {ahead['waited']:.1f} s for them"
            )
        print(f"\n{'row':<38} {'measured':>14} {'baseline':>14} {'ratio':>8}")
        if 1 in rows:
            help_s = statistics.median(wall([ARKLORE, "--help"], env)[0] for _ in range(5))
            runs = [wall([ARKLORE, "rag", "build", "--json"], env) for _ in range(3)]
            unchanged_s = statistics.median(w for w, _ in runs)
            reported = statistics.median(json.loads(o)["seconds"] for _, o in runs)
            row("1 rag build, nothing changed", f"{unchanged_s:.2f} s", f"{help_s:.2f} s CLI",
                unchanged_s / help_s, 3.0)  # fmt: skip
            print(f"{'  its reported time / wall':<38} {reported:>12.2f} s {unchanged_s:>12.2f} s "
                  f"{reported / unchanged_s:>7.2f}x")  # fmt: skip
        if 5 in rows:  # before row 2, which removes the index
            turns, queries = turn_latencies(settings.model_copy(update={"home": home}))
        if 6 in rows:
            edits, edit_steps = matrix_edits(env, Path(tmp))
        if 7 in rows or 8 in rows:
            served = first_turns_and_memory(env)
        if 2 in rows:
            with Workspace(settings.model_copy(update={"home": home})) as ws:
                from arklore.rag.index import live_documents

                texts = [d.text for d in live_documents(home / "rag", ws.rag.chroma())]
            texts_file = Path(tmp) / "texts.json"
            texts_file.write_text(json.dumps([texts, []], ensure_ascii=False), encoding="utf-8")
            e5_one_s, _, _ = embed(texts_file, 1, Path(tmp))
            shutil.rmtree(home / "rag")
            cold_s, _ = wall([ARKLORE, "rag", "build", "--json"], env)
            row(f"2 cold relation index ({len(texts)} docs)", f"{cold_s:.1f} s",
                f"{e5_one_s:.1f} s e5x1", cold_s / e5_one_s, 0.5)  # fmt: skip
        if 3 in rows:
            row("3 arklore build from nothing", f"{build_s:.0f} s", "-", build_s, 120, " s")
        if 4 in rows:
            t = time.perf_counter()
            read_and_parse(roots)
            parse_s = time.perf_counter() - t
            row("4 ingest step", f"{steps['ingest']:.1f} s", f"{parse_s:.1f} s parse",
                steps["ingest"] / parse_s, 1.5)  # fmt: skip
    if 5 in rows:
        row(f"5 turn p95 ({len(turns)} turns)", f"{p95(turns):.1f} ms",
            f"{p95(queries):.1f} ms emb", p95(turns) / p95(queries), 1.5)  # fmt: skip
        print(
            f"  turn p50 {statistics.median(turns):.1f} ms; one query embedding p50 "
            f"{statistics.median(queries):.1f} ms"
        )
    if 6 in rows:
        edit_row(edits, edit_steps)
    if 7 in rows or 8 in rows:
        served_rows(served, build_rss)


def edit_row(edits: list[float], edit_steps: dict[str, float]) -> None:
    """Row 6 (see the module doc)."""
    edit_s = statistics.median(edits)
    steps = dict(edit_steps)
    cpu = steps.pop("cpu", 0.0)
    row("6 matrix edit, then arklore build", f"{edit_s:.1f} s", "-", edit_s, 5, " s")
    print(f"  edits: {', '.join(f'{x:.2f} s' for x in edits)} (spread "
          f"{max(edits) - min(edits):.2f} s; CPU of a build, median, {cpu:.2f} s: what a "
          f"busy machine inflates least); steps of the last: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in steps.items()))  # fmt: skip


def matrix_edits(
    env: dict[str, str], tmp: Path, n: int = 3
) -> tuple[list[float], dict[str, float]]:
    """``arklore build`` after one curated description is edited, ``n`` times: a user matrix
    restating the shipped matrix's first relation is brought in by one build (not timed),
    then its description is edited before each timed build. Returns the wall times and the
    seconds of the last build's steps that ran, with ``cpu``: the CPU seconds (user and
    system) of each build, what a busy machine inflates least."""
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
    cpu: list[float] = []
    steps: dict[str, float] = {}
    for i in range(n):
        write(f"{first['description']}（第{i + 1}次修改）")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, out = wall([ARKLORE, "build", "--json"], env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(seconds)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        steps = {s["name"]: s["seconds"] for s in json.loads(out)["steps"] if not s["skipped"]}
    return times, steps | {"cpu": statistics.median(cpu)}


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


# -- rows 6 and 7: a freshly started server, and memory -----------------------------------------
def children_peak_rss_mb() -> float:
    """The peak resident memory of the largest child process waited for so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _proc_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _cpu_ms(pids: list[int]) -> float:
    """CPU time (user + system) the processes ``pids`` have used, in ms (10 ms ticks)."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def _workers(pid: int) -> list[int]:
    """The turn worker processes of the server ``pid`` (not multiprocessing's tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [
        int(c) for c in children
        if b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()
    ]  # fmt: skip


def first_turns_and_memory(env: dict[str, str]) -> dict[str, Any]:
    """``arklore serve`` (one process and its turn worker) started on the built home: each
    group's first turn (ms) right after ``/readyz``, then warm turns (every operator of
    :data:`OPERATORS` on a few messages), then the processes' peak RSS (MiB)."""
    import httpx

    from bench.bench_service import _free_port
    from bench.serving import stop, wait_ready

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    senv = {k: v for k, v in env.items() if not k.startswith(("PROMETHEUS_", "LLM_"))}
    senv["NO_PROXY"] = "127.0.0.1"
    server = subprocess.Popen(
        [ARKLORE, "serve", "--port", str(port), "--log-level", "warning"], env=senv
    )
    out: dict[str, Any] = {"groups": []}
    try:
        out["ready_s"] = wait_ready(base, server, "arklore serve")
        pids = [server.pid, *_workers(server.pid)]
        with httpx.Client(base_url=base, timeout=60) as client:
            for group in GROUPS:
                body = {"operator": group[0], "participants": list(group[1:]),
                        "message": GROUP_MESSAGE}  # fmt: skip
                cpu = _cpu_ms(pids)
                t = time.perf_counter()
                r = client.post("/v1/turn", json=body)
                ms = (time.perf_counter() - t) * 1000
                cpu = _cpu_ms(pids) - cpu
                if r.status_code != 200:
                    raise SystemExit(f"group turn {group}: {r.status_code} {r.text[:300]}")
                block = r.json()["timings_ms"].get("group", 0.0)
                out["groups"].append((group, ms, block, cpu))
            for op in OPERATORS:
                for msg in ("你好", "博士今天怎么样？", f"{OPERATORS[0]}和{OPERATORS[1]}在吗？"):
                    client.post("/v1/turn", json={"operator": op, "message": msg})
        out["server_mb"] = _proc_kb(server.pid, "VmHWM") / 1024
        out["workers_mb"] = [_proc_kb(pid, "VmHWM") / 1024 for pid in _workers(server.pid)]
    finally:
        stop([server])
    return out


def served_rows(served: dict[str, Any], build_rss: float) -> None:
    """Rows 6 and 7 (see the module doc)."""
    groups = served["groups"]
    worst = max(ms for _, ms, _, _ in groups)
    row("7 first group turn (4 operators)", f"{worst:.0f} ms", "-", worst, 300, " ms")
    for group, ms, block, cpu in groups:
        print(f"  {'、'.join(group)}: {ms:.0f} ms (group block {block:.0f} ms; CPU of the "
              f"server and its turn worker {cpu:.0f} ms: what a busy machine inflates least)")  # fmt: skip
    print(f"  the server was ready in {served['ready_s']:.1f} s (/readyz waits for its warm-up)")
    workers = ", ".join(f"{mb:.0f}" for mb in served["workers_mb"]) or "none"
    print(f"8 peak RSS: arklore build {build_rss:.0f} MiB (its largest process); arklore serve "
          f"{served['server_mb']:.0f} MiB + turn worker {workers} MiB after warm turns")  # fmt: skip


if __name__ == "__main__":
    main()
