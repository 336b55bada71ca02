"""``--dry-run`` estimates: tokens and cost for a list of requests without calling anything.

Counting is deliberately conservative (real tokenisers usually come out lower): ~0.6 token
per CJK character, ~0.3 per other character, a few tokens per message, every input token
priced as a cache miss.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from arklore.llm.config import Prices
from arklore.llm.types import ChatRequest

CJK_TOKENS_PER_CHAR = 0.6
OTHER_TOKENS_PER_CHAR = 0.3
MESSAGE_OVERHEAD_TOKENS = 4
DEFAULT_EXPECTED_OUTPUT_TOKENS = 300


@dataclass(frozen=True)
class Estimate:
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float

    def line(self) -> str:
        return (
            f"LLM dry run: {self.requests} requests, ~{self.input_tokens:,} input tokens, "
            f"~{self.output_tokens:,} output tokens, ~${self.cost_usd:.4f} (all input at miss price)"
        )


def count_tokens(text: str) -> int:
    """Conservative token count for mixed Chinese/Latin text."""
    cjk = sum(1 for ch in text if _is_cjk(ch))
    return math.ceil(cjk * CJK_TOKENS_PER_CHAR + (len(text) - cjk) * OTHER_TOKENS_PER_CHAR)


def estimate(
    requests: Iterable[ChatRequest],
    *,
    expected_output_tokens: int = DEFAULT_EXPECTED_OUTPUT_TOKENS,
    prices: Prices | None = None,
) -> Estimate:
    """Sum the estimate over ``requests``; ``max_tokens`` caps the expected output."""
    prices = prices or Prices()
    n = inp = out = 0
    for req in requests:
        n += 1
        inp += sum(
            count_tokens(m.get("content", "")) + MESSAGE_OVERHEAD_TOKENS for m in req.messages
        )
        out += min(expected_output_tokens, req.max_tokens or expected_output_tokens)
    return Estimate(n, inp, out, prices.cost(0, inp, out))


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x3000 <= cp <= 0x30FF  # CJK punctuation, kana
        or 0x3400 <= cp <= 0x4DBF
        or 0x4E00 <= cp <= 0x9FFF
        or 0xF900 <= cp <= 0xFAFF
        or 0xFF00 <= cp <= 0xFFEF  # full-width forms
        or 0x20000 <= cp <= 0x2FFFF
    )
