"""What her people in a word-name key cost SillyTavern: one World Info scan, in node.

    python -m bench bench_lorebook_scan        # env: ARKLORE_HOME (built), ARKLORE_GAMEDATA

A name that is a word keys her where it is joined to one of her people (夜莺和闪灵:
:meth:`arklore.cards.keys.KeyMaker.partner_names`), which makes those keys longer. This runs
every regex key of the real inventory's lorebook, as SillyTavern tests them (``new RegExp``
per key per scan, V8 caching the compiled pattern), over one chat of 60 development-set
messages (``博士: …`` lines), with the keys built with and without her people: each set in
a fresh node process (one process holding both sets measured the second up to 3.5x slower,
V8's caches of compiled patterns, not the keys), the two in turn, three rounds, the best of
five scans. Printed: ms per scan and the ratio.
Needs node and a workspace whose graph is built (``arklore build``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from arklore.cards.keys import KeyMaker

ROUNDS = 3

JS = r"""
const fs = require('fs');
const req = JSON.parse(fs.readFileSync(process.argv.at(-1), 'utf8'));
const keys = req.keys.map(k => { const m = k.match(/^\/(.*)\/([a-z]*)$/s); return [m[1], m[2]]; });
const scan = () => { let n = 0; for (const [p, f] of keys) if (new RegExp(p, f).test(req.chat)) n++; return n; };
const fired = scan();  // warm: V8 compiles each pattern once
let best = Infinity;
for (let round = 0; round < 5; round++) {
  const t0 = process.hrtime.bigint(); scan();
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
}
console.log(JSON.stringify({best, fired}));
"""


def chat(lines: int = 60) -> str:
    """The first ``lines`` messages of the fifth development set, as SillyTavern's buffer."""
    text = resources.files("arklore.data").joinpath("lorebook_dev5.jsonl").read_text("utf-8")
    msgs = [json.loads(line)["text"] for line in text.splitlines() if line.strip()]
    return "\n".join(f"博士: {m}" for m in msgs[:lines])


def regex_keys(maker: KeyMaker) -> list[str]:
    return [k for ks in maker.all().values() for k in ks.keys if k.startswith("/")]


def main() -> None:
    from arklore.settings import Settings
    from arklore.workspace import Workspace

    if shutil.which("node") is None:
        print("node is missing: install nodejs (apt-get install nodejs)")
        return
    ws = Workspace(Settings.from_env())  # a benchmark is an entry point: it reads the environment
    try:
        if ws.graph.current_or_none() is None:
            print("no graph under ARKLORE_HOME: run `arklore build` first")
            return
        joined = ws.cards.keymaker()
        alone = KeyMaker(ws.cards.people(), ws.events.stage_titles())
        sets = [regex_keys(alone), regex_keys(joined)]
    finally:
        ws.close()
    text = chat()
    best, fired = [float("inf"), float("inf")], [0, 0]
    with tempfile.TemporaryDirectory(prefix="bench-lorebook-") as tmp:
        for _ in range(ROUNDS):  # one fresh node per set and round, the two sets in turn
            for i, keys in enumerate(sets):
                req = Path(tmp) / "req.json"
                req.write_text(json.dumps({"keys": keys, "chat": text}, ensure_ascii=False))
                done = subprocess.run(
                    ["node", "-e", JS, str(req)], capture_output=True, text=True, check=False
                )
                if done.returncode != 0:
                    print(f"node failed: {done.stderr.strip()[-500:]}")
                    return
                out = json.loads(done.stdout)
                best[i], fired[i] = min(best[i], out["best"]), out["fired"]
    a, b = best
    fa, fb = fired
    size = [sum(map(len, s)) for s in sets]
    print(f"{len(sets[1])} regex keys over a {len(text)}-character chat (node; best of "
          f"{ROUNDS} processes x 5 scans each)")  # fmt: skip
    print(f"  without her people: {a:7.1f} ms per scan, {size[0]:,} key characters, {fa} fire")
    print(f"  with her people:    {b:7.1f} ms per scan, {size[1]:,} key characters, {fb} fire")
    print(f"  ratio {b / a:.2f}x the keys without her people")


if __name__ == "__main__":
    main()
