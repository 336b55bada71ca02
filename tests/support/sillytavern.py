"""SillyTavern's own rules, run on what arklore exports: the example-dialogue parser
(``parseExampleIntoIndividual``) and the keyword rule (``WorldInfoBuffer.matchKeys`` with its
secondary-key logic), read from SillyTavern 1.12.6's files at test time (AGPL: never copied
into the repo) and run in node's ``vm`` by ``sillytavern_rules.js``.

The files are ``ARKLORE_SILLYTAVERN`` or the workplace copy ``../shared/sillytavern``; a test
that needs them skips when they are absent, like the real game data. node is a system package:
under ``CI`` its absence fails the test instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).with_name("sillytavern_rules.js")
WORKPLACE = Path(__file__).resolve().parents[3] / "shared" / "sillytavern"
WORLD_INFO = "public/scripts/world-info.js"


def sillytavern_root() -> Path:
    """Where SillyTavern's files are; skips the test when they are absent, fails it under CI
    when node is."""
    root = Path(os.environ.get("ARKLORE_SILLYTAVERN") or WORKPLACE)
    if not (root / WORLD_INFO).is_file():
        pytest.skip(f"SillyTavern's files not available (set ARKLORE_SILLYTAVERN; {root})")
    if shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node is missing: install nodejs (apt-get install nodejs)")
        pytest.skip("node is missing")
    return root


@dataclass
class Scan:
    """One World Info scan: ``messages`` newest first, each ``Name: text`` as SillyTavern
    writes its buffer."""

    entries: list[dict[str, Any]]
    messages: list[str]
    depth: int = 2


@dataclass
class Rules:
    """A batch of questions for SillyTavern's rules, answered by one node process."""

    root: Path
    examples: list[dict[str, str]] = field(default_factory=list)
    scans: list[Scan] = field(default_factory=list)

    def run(self) -> tuple[list[list[list[dict[str, str]]]], list[list[Any]]]:
        """(for each example text its blocks' messages, for each scan the uids that fire)."""
        # scans of one book send it once: a whole lorebook per message outgrows node's strings
        books: dict[int, int] = {}
        shared: list[list[dict[str, Any]]] = []
        for s in self.scans:
            if id(s.entries) not in books:
                books[id(s.entries)] = len(shared)
                shared.append(s.entries)
        request = {
            "examples": self.examples,
            "books": shared,
            "scans": [
                {"book": books[id(s.entries)], "messages": s.messages, "depth": s.depth}
                for s in self.scans
            ],
        }
        done = subprocess.run(
            ["node", str(HARNESS), str(self.root)],
            input=json.dumps(request, ensure_ascii=False),
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        out = json.loads(done.stdout)
        return out["examples"], out["scans"]


def parse_examples(root: Path, text: str, user: str, char: str) -> list[list[dict[str, str]]]:
    """``text`` (a card's ``mes_example``) as SillyTavern's chat-completion prompt splits it:
    per ``<START>`` block, its messages (``role``, ``content``, ``name``: example_user or
    example_assistant)."""
    rules = Rules(root, examples=[{"text": text, "user": user, "char": char}])
    return rules.run()[0][0]


def fired(
    root: Path, entries: list[dict[str, Any]], messages: list[str], depth: int = 2
) -> list[Any]:
    """The uids of ``entries`` (World Info entries: ``uid``, ``key``, ``keysecondary``,
    ``selective``, ``selectiveLogic``, …) SillyTavern's keyword rule fires on ``messages``."""
    return Rules(root, scans=[Scan(entries, messages, depth)]).run()[1][0]
