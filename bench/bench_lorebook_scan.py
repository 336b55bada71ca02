"""What her people in a word-name key, and names in both scripts, cost SillyTavern: one World
Info scan, in node.

    python -m bench bench_lorebook_scan        # env: ARKLORE_HOME (built), ARKLORE_GAMEDATA

A name that is a word keys her where it is joined to one of her people (夜莺和闪灵:
:meth:`arklore.cards.keys.KeyMaker.partner_names`), which makes those keys longer. This runs
every regex key of the real inventory's lorebook, as SillyTavern tests them (``new RegExp``
per key per scan, V8 caching the compiled pattern), over one chat of 60 development-set
messages (``博士: …`` lines), with the keys built with and without her people: each set in
a fresh node process (one process holding both sets measured the second up to 3.5x slower,
V8's caches of compiled patterns, not the keys), the two in turn, three rounds, the best of
five scans. A third set adds the traditional script to every name (``[银銀]灰``:
:func:`arklore.cards.keys.both_scripts`), to the words that hold a name (夕陽 as 夕阳) and to
the words of the game anywhere on her line (:func:`arklore.cards.keys.game_talk`), as the
export keys them; the first two are built simplified only. Printed: ms per scan and the ratios to the first set.
Needs node and a workspace whose graph is built (``arklore build``)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from arklore.cards import keys as keys_module
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


@contextlib.contextmanager
def simplified_only() -> Iterator[None]:
    """Keys built as before traditional script was keyed: each name and the words of the
    game in simplified only."""
    saved = keys_module.both_scripts, keys_module.traditional, keys_module._GAME
    keys_module.both_scripts = keys_module._js_escape
    keys_module.traditional = lambda text: text
    keys_module._GAME = keys_module.game_talk(None)
    try:
        yield
    finally:
        keys_module.both_scripts, keys_module.traditional, keys_module._GAME = saved


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
        people, titles = ws.cards.people(), ws.events.stage_titles()
        bonds = ws.cards.bonds(people)
        with simplified_only():
            alone = regex_keys(KeyMaker(people, titles))
            joined = regex_keys(KeyMaker(people, titles, bonds))
        both = regex_keys(KeyMaker(people, titles, bonds))
        sets = [alone, joined, both]
    finally:
        ws.close()
    text = chat()
    best, fired = [float("inf")] * len(sets), [0] * len(sets)
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
    print(f"{len(sets[-1])} regex keys over a {len(text)}-character chat (node; best of "
          f"{ROUNDS} processes x 5 scans each)")  # fmt: skip
    labels = ("without her people", "with her people", "and in both scripts")
    for label, ms, n, keys in zip(labels, best, fired, sets, strict=True):
        print(f"  {label:<20} {ms:7.1f} ms per scan ({ms / best[0]:.2f}x), "
              f"{sum(map(len, keys)):,} key characters, {n} fire")  # fmt: skip


if __name__ == "__main__":
    main()
