"""Check arklore's exports against a running SillyTavern server, through its own HTTP API.

The test suite runs SillyTavern's rules (keyword matching, the example parser, the card
reader) in node from ``../shared/sillytavern``; this script checks what a user does by hand:

1. each ``<name>.png`` of an ``arklore export card`` folder is imported
   (``/api/characters/import``) and read back (``/api/characters/get``): every field a chat
   uses must equal the exported ``<name>.json``, and her lorebook must hold every entry;
2. the World Info file of ``arklore export lorebook`` is imported (``/api/worldinfo/import``)
   and read back identical;
3. with ``--arklore URL`` (a running ``arklore serve``), SillyTavern's custom chat-completion
   source is pointed at ``URL/v1/`` (typed with the trailing slash users type): its model list
   must hold every card's name, and one message is sent through it, plain and streamed; the
   reply comes from whatever LLM that ``arklore serve`` is configured with.

SillyTavern (AGPL, github.com/SillyTavern/SillyTavern) is not part of arklore: run it from its
own checkout (``npm install && node server.js --port 8123``). Exit 0 when every check passes,
1 with one line per failure otherwise, 2 when SillyTavern cannot be reached.

Usage: ``.venv/bin/python tools/sillytavern_check.py --cards cards
--lorebook arklore-lorebook.json [--sillytavern http://127.0.0.1:8123]
[--arklore http://127.0.0.1:8000 --model 银灰 --message 初雪最近怎么样？]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import httpx

CARD_FIELDS = (
    "name", "description", "personality", "scenario", "first_mes", "mes_example",
    "alternate_greetings", "creator_notes",
)  # fmt: skip


def client(url: str) -> httpx.Client:
    """A session with SillyTavern's CSRF token (its API refuses a POST without one)."""
    c = httpx.Client(base_url=url, timeout=300)
    c.headers["X-CSRF-Token"] = c.get("/csrf-token").raise_for_status().json()["token"]
    return c


def check_cards(st: httpx.Client, folder: Path) -> list[str]:
    failures: list[str] = []
    pngs = sorted(folder.glob("*.png"))
    if not pngs:
        return [f"no card PNG in {folder}: run `arklore export card ... --out {folder}`"]
    for png in pngs:
        ours = json.loads(png.with_suffix(".json").read_text("utf-8"))["data"]
        r = st.post(
            "/api/characters/import",
            files={"avatar": (png.name, png.read_bytes(), "image/png")},
            data={"file_type": "png"},
        )
        name = r.json().get("file_name") if r.is_success else None
        if not name:
            failures.append(f"{png.name}: SillyTavern did not import it ({r.status_code})")
            continue
        got: dict[str, Any] = (
            st.post("/api/characters/get", json={"avatar_url": f"{name}.png"})
            .json()
            .get("data", {})
        )
        differ = [k for k in CARD_FIELDS if got.get(k) != ours.get(k)]
        entries = len((got.get("character_book") or {}).get("entries", []))
        want = len(ours["character_book"]["entries"])
        print(
            f"{png.name}: imported as {name!r}; {len(CARD_FIELDS) - len(differ)} of "
            f"{len(CARD_FIELDS)} fields equal; lorebook {entries} of {want} entries"
        )
        if differ:
            failures.append(f"{png.name}: fields read back different: {', '.join(differ)}")
        if entries != want:
            failures.append(f"{png.name}: lorebook read back with {entries} of {want} entries")
    return failures


def check_world_info(st: httpx.Client, path: Path) -> list[str]:
    ours = json.loads(path.read_text("utf-8"))
    r = st.post("/api/worldinfo/import", files={"avatar": (path.name, path.read_bytes())})
    if not r.is_success:
        return [f"{path.name}: SillyTavern refused it ({r.status_code}: {r.text[:80]})"]
    back = st.post("/api/worldinfo/get", json={"name": r.json()["name"]}).json()
    print(
        f"{path.name}: {len(back.get('entries', {}))} of {len(ours['entries'])} entries read back"
    )
    return [] if back == ours else [f"{path.name}: read back different from the file"]


def check_chat(st: httpx.Client, arklore: str, cards: Path, model: str, text: str) -> list[str]:
    url = arklore.rstrip("/") + "/v1/"  # the trailing slash SillyTavern turns into //models
    source = {"chat_completion_source": "custom", "custom_url": url}
    r = st.post("/api/backends/chat-completions/status", json=source)
    models = {m["id"] for m in r.json().get("data", [])} if r.is_success else set()
    if not models:
        return [f"model list through SillyTavern failed ({r.status_code}: {r.text[:80]})"]
    names = {
        json.loads(p.with_suffix(".json").read_text("utf-8"))["data"]["name"]
        for p in cards.glob("*.png")
    }
    print(f"model list through SillyTavern: {len(models)} models; cards' names missing: "
          f"{sorted(names - models) or 'none'}")  # fmt: skip
    failures = [f"model list: no model named {n}" for n in sorted(names - models)]
    for stream in (False, True):
        body = {**source, "model": model, "stream": stream, "max_tokens": 300,
                "messages": [{"role": "user", "content": text}]}  # fmt: skip
        r = st.post("/api/backends/chat-completions/generate", json=body)
        reply = _reply(r.text, stream)
        print(f"chat ({'streamed' if stream else 'plain'}): {r.status_code}: {reply[:120]!r}")
        if not r.is_success or not reply:
            failures.append(f"chat ({'streamed' if stream else 'plain'}): {r.text[:120]}")
    return failures


def _reply(text: str, stream: bool) -> str:
    """The assistant's text from a chat completion body, or from its server-sent events."""
    if not stream:
        try:
            return str(json.loads(text)["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            return ""
    parts = []
    for line in text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            try:
                parts.append(json.loads(line[6:])["choices"][0]["delta"].get("content") or "")
            except (ValueError, KeyError, IndexError, TypeError):
                continue
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sillytavern", default="http://127.0.0.1:8123")
    ap.add_argument("--cards", type=Path, required=True, help="an `arklore export card` folder")
    ap.add_argument("--lorebook", type=Path, help="an `arklore export lorebook` file")
    ap.add_argument("--arklore", help="a running `arklore serve`, e.g. http://127.0.0.1:8000")
    ap.add_argument("--model", default="银灰")
    ap.add_argument("--message", default="初雪最近怎么样？")
    a = ap.parse_args(argv)
    try:
        st = client(a.sillytavern)
    except httpx.HTTPError as e:
        print(f"error: SillyTavern is not answering at {a.sillytavern} ({e}); start it with "
              "`node server.js --port 8123` in its checkout", file=sys.stderr)  # fmt: skip
        return 2
    failures = check_cards(st, a.cards)
    if a.lorebook:
        failures += check_world_info(st, a.lorebook)
    if a.arklore:
        failures += check_chat(st, a.arklore, a.cards, a.model, a.message)
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    print("all checks passed" if not failures else f"{len(failures)} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
