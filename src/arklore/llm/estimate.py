"""``--dry-run`` estimates: tokens and cost for a list of requests without calling anything.

Tokens are counted by :func:`arklore.core.tokens.count_tokens`, the same conservative counter the
context budget uses (real tokenisers come out lower), plus a few tokens per message; every
input token is priced as a cache miss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arklore.core.tokens import count_tokens
from arklore.llm.config import Prices
from arklore.llm.types import ChatRequest

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
