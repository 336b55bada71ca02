"""The checks `tools/sillytavern_play.py` prints after playing a card in SillyTavern's own
client: what of arklore's knowledge the model got twice, and the prompt a turn reuses."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from arklore.chat.layout import KNOWLEDGE_HEAD, MESSAGE_HEAD


def _tool() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "tools" / "sillytavern_play.py"
    spec = importlib.util.spec_from_file_location("sillytavern_play", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ENTRY = "初雪（恩雅）：他的大妹妹，如今身为圣女。"  # invented, in an entry's shape


def _body(
    *app_system: str, knowledge: str = "- 崖心：他最小的妹妹，在罗德岛治疗。"
) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": "你正在以干员银灰的身份与博士对话。"},
            *({"role": "system", "content": c} for c in app_system),
            {"role": "user", "content": f"{KNOWLEDGE_HEAD}\n{knowledge}\n{MESSAGE_HEAD}\n你好"},
        ]
    }


def test_a_line_of_arklore_the_app_also_sends_is_flagged() -> None:
    tool = _tool()
    assert tool.twice(_body("[Example Chat]", ENTRY, "[Example Chat]")) == []
    assert tool.twice(_body(ENTRY, knowledge=f"- {ENTRY}")) == [ENTRY]


def test_an_entry_the_app_inserts_twice_is_flagged() -> None:
    assert _tool().twice(_body(ENTRY, "代号：银灰", ENTRY)) == [ENTRY]


def test_the_reused_prompt_is_the_common_opening_in_tokens() -> None:
    tool = _tool()
    a, b = tool.flat(_body(ENTRY)), tool.flat(_body(ENTRY, "另一条"))
    assert 0 < tool.reuse(a, b) < tool.count_tokens(a)
    assert tool.reuse(a, a) == tool.count_tokens(a)
