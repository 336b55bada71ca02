"""A deterministic fake model for the distillation tasks, served by the stub server.

It answers every task from the request itself, the way an honest model would: task A writes
a 核心经历 sentence (and volunteers the height the prompt's copied fields give), task B picks
the first candidates verbatim, C writes a short attitude paragraph, D one sentence per
document target with the document's id. ``Fake.inject_*`` make it lie for one operator: a
fabricated quote, a wrong height. Everything here is invented text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from support.llm_stub import Reply

_OP = re.compile(r"^干员：(?P<name>.+?)（(?P<id>[^）]+)）", re.M)
_CAND = re.compile(r"^\[(?P<sid>(?:voice|story):[^\]]+)\]（[^）]*）(?P<text>.+)$", re.M)
_DOC = re.compile(r"^\[(?P<doc>[^\]]+)\] 对方：(?P<name>.+?)（(?P<target>[^）]+)）", re.M)
_FIELD = re.compile(r"^- 身高：(?P<h>.+)$", re.M)


def _msgs(body: dict[str, Any]) -> tuple[str, str]:
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    return system, user


@dataclass
class Fake:
    fabricated: dict[str, str] = field(default_factory=dict)  # char id -> invented quote
    wrong_height: dict[str, str] = field(default_factory=dict)  # char id -> wrong value
    delay: float = 0.0
    calls: list[str] = field(default_factory=list)  # "<task letter>:<char id>"

    def inject_fabricated_quote(
        self, char_id: str, text: str = "这句话她从来没有说过，是模型编的。"
    ) -> None:
        self.fabricated[char_id] = text

    def inject_wrong_height(self, char_id: str, value: str = "999cm") -> None:
        self.wrong_height[char_id] = value

    def __call__(self, body: dict[str, Any]) -> Reply:
        system, user = _msgs(body)
        m = _OP.search(user)
        name, cid = (m.group("name"), m.group("id")) if m else ("她", "?")
        if "核心经历" in system and "档案原文" in user:
            self.calls.append(f"A:{cid}")
            data: dict[str, Any] = {
                "core": f"{name}来到罗德岛之前经历了许多事情，如今在这里继续她的工作。"
            }
            h = _FIELD.search(user)
            if cid in self.wrong_height:
                data["fields"] = {"身高": self.wrong_height[cid]}
            elif h:
                data["fields"] = {"身高": h.group("h")}
        elif "台词候选" in user:
            self.calls.append(f"B:{cid}")
            quotes = [
                {"source": c.group("sid"), "text": c.group("text")} for c in _CAND.finditer(user)
            ]
            quotes = quotes[:6]
            if cid in self.fabricated and quotes:
                quotes.insert(1, {"source": quotes[0]["source"], "text": self.fabricated[cid]})
            data = {"quotes": quotes, "personality": "我做事认真，也不太会说漂亮话。"}
        elif "我·关于博士" in system:
            self.calls.append(f"C:{cid}")
            data = {
                "about_doctor": "刚认识博士的时候，我只把博士当作一位需要观察的指挥官。"
                "共事久了，我开始相信博士的判断。如今我愿意把后背交给博士。"
            }
        elif "关系资料" in user:
            self.calls.append(f"D:{cid}")
            people, seen = [], set()
            for d in _DOC.finditer(user):
                if d.group("target") in seen:
                    continue
                seen.add(d.group("target"))
                people.append(
                    {
                        "target": d.group("target"),
                        "view": f"我和{d.group('name')}之间的事情，我一直记在心里。",
                        "docs": [d.group("doc")],
                    }
                )
            data = {"people": people[:4]}
        else:
            data = {"echo": user[:40]}
        return Reply.json(data, delay=self.delay)
