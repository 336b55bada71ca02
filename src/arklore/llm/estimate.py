"""``--dry-run`` estimates: tokens and cost for a list of requests without calling anything.

Tokens are counted by :func:`arklore.core.tokens.count_tokens`, the same conservative counter the
context budget uses (real tokenisers come out lower), plus a few tokens per message.

Two prices are given. The upper bound prices every input token as a cache miss. The second
models the provider's prefix cache (DeepSeek's context caching): a request whose leading
messages equal an earlier request's reads that shared prefix from the cache, in whole units of
:data:`CACHE_UNIT_TOKENS`; every task sends the same system prompt in every request, so from
the second request on the system prompt is billed at the cache-hit price.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arklore.core.tokens import count_tokens
from arklore.llm.config import Prices
from arklore.llm.types import ChatRequest

MESSAGE_OVERHEAD_TOKENS = 4
DEFAULT_EXPECTED_OUTPUT_TOKENS = 300
CACHE_UNIT_TOKENS = 64
"""DeepSeek stores and bills cached prefixes in units of 64 tokens."""


@dataclass(frozen=True)
class Estimate:
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float  # every input token at the cache-miss price: an upper bound
    cached_input_tokens: int = 0  # of input_tokens, expected to hit the prefix cache
    cost_with_cache_usd: float = 0.0
    input_chars: int = 0  # characters of the user messages (the story text sent)

    def line(self) -> str:
        return (
            f"LLM dry run: {self.requests} requests, ~{self.input_tokens:,} input tokens, "
            f"~{self.output_tokens:,} output tokens; ~${self.cost_usd:.4f} with all input at "
            f"the miss price, ~${self.cost_with_cache_usd:.4f} with the provider's prefix cache "
            f"(~{self.cached_input_tokens:,} input tokens cached)"
        )

    def per_10k_chars(self) -> tuple[float, float]:
        """(cost without, with the prefix cache) per 10,000 characters of text sent."""
        if not self.input_chars:
            return 0.0, 0.0
        f = 10_000 / self.input_chars
        return self.cost_usd * f, self.cost_with_cache_usd * f


def estimate(
    requests: Iterable[ChatRequest],
    *,
    expected_output_tokens: int = DEFAULT_EXPECTED_OUTPUT_TOKENS,
    prices: Prices | None = None,
) -> Estimate:
    """Sum the estimate over ``requests``; ``max_tokens`` caps the expected output."""
    prices = prices or Prices()
    n = inp = out = cached = chars = 0
    seen_prefixes: set[tuple[str, ...]] = set()
    for req in requests:
        n += 1
        sizes = [count_tokens(m.get("content", "")) + MESSAGE_OVERHEAD_TOKENS for m in req.messages]
        inp += sum(sizes)
        chars += sum(len(m.get("content", "")) for m in req.messages if m.get("role") == "user")
        out += min(expected_output_tokens, req.max_tokens or expected_output_tokens)
        # the longest run of leading messages an earlier request already sent
        contents = tuple(m.get("content", "") for m in req.messages)
        shared = 0
        for k in range(len(contents), 0, -1):
            if contents[:k] in seen_prefixes:
                shared = sum(sizes[:k])
                break
        cached += (shared // CACHE_UNIT_TOKENS) * CACHE_UNIT_TOKENS
        for k in range(1, len(contents)):
            seen_prefixes.add(contents[:k])
    return Estimate(
        n, inp, out, prices.cost(0, inp, out), cached, prices.cost(cached, inp - cached, out), chars
    )
