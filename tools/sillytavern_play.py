"""Play an arklore card in SillyTavern's own web client and read what the model receives.

`tools/sillytavern_check.py` checks the server's API; the prompt a model gets, though, is
built in SillyTavern's browser client (its World Info scan, its prompt order). This script
drives that client as a user would, in Debian's chromium through Playwright:

1. starts SillyTavern from its install (``npm i sillytavern@1.12.6`` puts it in
   ``node_modules/sillytavern``) on an empty data folder of its own, and ``arklore serve`` in
   front of a scripted upstream (the tests' OpenAI-compatible stub, which records every
   request);
2. imports the card PNG through the character import button, answers yes to "import the
   embedded lorebook", points the chat-completion source "custom" at ``arklore serve``;
3. sends the messages one by one.

It prints, per turn, the lorebook entries SillyTavern's own scan inserted (its ``[WI]``
console lines), the prompt tokens and how many of them open the next turn's prompt unchanged
(what a provider's prompt cache reuses), and any line of arklore's knowledge the model got
twice. Exit 0 when every turn got a reply and no line came twice, 1 otherwise, 2 when
SillyTavern, chromium or the card is missing.

Usage: ``.venv/bin/python tools/sillytavern_play.py --sillytavern ~/st/node_modules/sillytavern
--card cards/银灰.png [--home var] [--message 初雪最近怎么样？ ...] [--out records.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.llm_stub import Reply, StubServer  # noqa: E402

from arklore.chat.layout import KNOWLEDGE_HEAD, MESSAGE_HEAD  # noqa: E402
from arklore.core.tokens import count_tokens  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
MESSAGES = (
    "初雪最近怎么样？", "你妹妹们还好吗？", "崖心又去爬山了吗", "讯使今天来找过你",
    "你还记得谢拉格的雪吗", "恩希欧迪斯，你最近在忙什么", "角峰说你又熬夜了",
    "你和喀兰贸易的事情顺利吗", "初雪说想见你", "晚安，盟友",
)  # fmt: skip
"""Ten messages to 银灰 naming his people, his past and nothing (the default)."""
REPLY = "（他点了点头）嗯。"
_WI = re.compile(r"\[WI\] Entry \d+ activation successful.*comment: ([^}]*)\}")
_MARK = re.compile(r"^\s*(?:[-*•]\s*)")
_OWN_MARK = re.compile(r"^\[[^\]]*\]$")
"""SillyTavern's own markers, sent once per example block ([Example Chat])."""
MIN_LINE = 8
"""Characters of a line of arklore's knowledge checked for a second copy."""


def _wait(url: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            httpx.get(url, timeout=2)
            return True
        except httpx.HTTPError:
            time.sleep(0.5)
    return False


@contextmanager
def _process(args: list[str], log: Path, ready: str, **kw: Any) -> Iterator[None]:
    with log.open("w") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **kw)
        try:
            if not _wait(ready, 120):
                raise SystemExit(f"error: {args[0]} did not answer at {ready}; see {log}")
            yield
        finally:
            proc.terminate()
            proc.wait(20)


def flat(body: dict[str, Any]) -> str:
    """A request's messages as one text, in order (what a prefix cache sees)."""
    return "".join(
        f"<|{m['role']}|>{m.get('name', '')}\n{m['content']}\n" for m in body["messages"]
    )


def reuse(a: str, b: str) -> int:
    """Tokens of ``a`` that open ``b`` unchanged."""
    return count_tokens(os.path.commonprefix([a, b]))


def twice(body: dict[str, Any]) -> list[str]:
    """Lines of arklore's knowledge (its system message, the part ahead of the last user
    message) that the app's own system messages also carry, and lines the app sends in two
    of them (her card's book and a World Info file inserting one entry twice)."""
    msgs = body["messages"]
    ours = msgs[0]["content"]
    last = msgs[-1]["content"]
    if isinstance(last, str) and last.startswith(KNOWLEDGE_HEAD):
        ours += "\n" + last.split(MESSAGE_HEAD)[0]
    theirs = [str(m["content"]) for m in msgs[1:-1] if m["role"] == "system"]
    lines = [_MARK.sub("", ln).strip() for ln in ours.split("\n")]
    out = [ln for ln in lines if len(ln) >= MIN_LINE and any(ln in t for t in theirs)]
    seen: set[str] = set()  # and a line the app itself sends in two of its messages
    for t in theirs:
        here = {ln.strip() for ln in t.split("\n") if len(ln.strip()) >= MIN_LINE}
        here = {ln for ln in here if not _OWN_MARK.match(ln)}
        out += sorted(here & seen)
        seen |= here
    return out


def play(a: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    stub = StubServer()
    stub.default = lambda body: Reply.text(REPLY)
    stub.start()
    env = {**os.environ, "LLM_BASE_URL": stub.url, "LLM_CHAT_MODEL": "stub-model",
           "LLM_MODEL": "stub-model", "LLM_API_KEY": "sk-play-not-a-key-000000",
           "NO_PROXY": "127.0.0.1,localhost"}  # fmt: skip
    if a.home:
        env["ARKLORE_HOME"] = str(a.home)
    st_url, ark_url = f"http://127.0.0.1:{a.port}", f"http://127.0.0.1:{a.port + 1}"
    name = json.loads(a.card.with_suffix(".json").read_text("utf-8"))["data"]["name"]
    logs = Path(tempfile.mkdtemp(prefix="st-play-"))
    console: list[str] = []
    per_turn: list[list[str]] = []
    try:
        with (
            _process(["node", "server.js", "--port", str(a.port), "--autorun", "false",
                      "--dataRoot", str(logs / "data")], logs / "sillytavern.log",
                     st_url + "/csrf-token", cwd=a.sillytavern),
            _process([sys.executable, "-m", "arklore", "serve", "--port", str(a.port + 1)],
                     logs / "serve.log", ark_url + "/v1/models", env=env),
            sync_playwright() as p,
        ):  # fmt: skip
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: console.append(m.text))
            page.goto(st_url)
            page.wait_for_selector("#send_textarea", timeout=60000)
            page.locator("dialog.popup textarea").first.fill("博士")  # the welcome: persona
            page.locator("dialog.popup .popup-button-ok", has_text="Save").first.click()
            page.set_input_files("#character_import_file", str(a.card))
            page.locator("dialog.popup .menu_button", has_text="Import All").first.click()
            page.click("#API-status-top")
            page.select_option("#main_api", "openai")
            page.select_option("#chat_completion_source", "custom")
            page.fill("#custom_api_url_text", ark_url + "/v1/")  # the slash users type
            page.fill("#custom_model_id", a.model or name)
            page.click("#api_button_openai")
            page.click("#rightNavDrawerIcon")
            page.locator(".character_select", has_text=name).first.click()
            page.get_by_text("embedded World/Lorebook").wait_for(timeout=20000)
            page.locator("dialog.popup .popup-button-ok").first.click()
            page.get_by_text("has been imported").wait_for(timeout=20000)
            if a.world:  # arklore's World Info file as well, enabled for every chat
                page.set_input_files("#world_import_file", str(a.world))
                time.sleep(2)
                page.evaluate(
                    """(name) => { const s = $('#world_info');
                    s.find('option').filter((_, o) => o.text === name).prop('selected', true);
                    s.trigger('change'); }""",
                    a.world.stem,
                )
                time.sleep(1)
            for text in a.message or MESSAGES:
                before, seen = len(stub.requests), len(console)
                page.fill("#send_textarea", text)
                page.click("#send_but")
                end = time.monotonic() + 60
                while time.monotonic() < end and (
                    len(stub.requests) == before or not page.locator("#mes_stop").is_hidden()
                ):
                    time.sleep(0.3)
                time.sleep(1)
                fired = (m.group(1) for c in console[seen:] if (m := _WI.search(c)))
                per_turn.append(list(dict.fromkeys(fired)))  # it scans more than once a turn
            browser.close()
    finally:
        stub.stop()
    bodies = [r.body for r in stub.requests]
    if a.out:
        a.out.write_text(json.dumps(bodies, ensure_ascii=False, indent=1), "utf-8")
    texts = [flat(b) for b in bodies]
    failures = 0
    for i, (text, body) in enumerate(zip(texts, bodies, strict=True)):
        nxt = f", {reuse(text, texts[i + 1]) / count_tokens(text):.0%} open the next" if (
            i + 1 < len(texts)) else ""  # fmt: skip
        dup = twice(body)
        failures += bool(dup)
        print(f"turn {i + 1}: lorebook {', '.join(per_turn[i]) if i < len(per_turn) else '-'}; "
              f"{count_tokens(text)} prompt tokens{nxt}; {len(dup)} lines twice")  # fmt: skip
        for d in dup:
            print(f"  twice: {d[:80]}")
    sent = len(a.message or MESSAGES)
    if len(bodies) != sent:
        print(f"{len(bodies)} of {sent} messages reached the model; logs in {logs}")
        return 1
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sillytavern", type=Path, required=True,
                    help="SillyTavern's folder (the one holding server.js)")  # fmt: skip
    ap.add_argument("--card", type=Path, required=True, help="an `arklore export card` PNG")
    ap.add_argument("--home", type=Path, help="ARKLORE_HOME for `arklore serve`")
    ap.add_argument("--world", type=Path, help="an `arklore export lorebook` file, enabled too")
    ap.add_argument("--model", help="the connection's model id (default: the card's name)")
    ap.add_argument("--message", action="append", help="a message to send (repeat)")
    ap.add_argument("--port", type=int, default=8123, help="SillyTavern's; arklore's is +1")
    ap.add_argument("--out", type=Path, help="write every request the model got here")
    a = ap.parse_args(argv)
    for path, what in ((a.sillytavern / "server.js", "SillyTavern"), (a.card, "the card"),
                       (a.card.with_suffix(".json"), "the card's JSON"),
                       (Path(CHROMIUM), "chromium")):  # fmt: skip
        if not path.exists():
            print(f"error: {what} not found at {path}", file=sys.stderr)
            return 2
    return play(a)


if __name__ == "__main__":
    sys.exit(main())
