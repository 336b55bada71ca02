"""The one token counter: the context budget and the LLM cost estimates both use it.

Deliberately conservative: 0.6 token per CJK character, 0.3 per ASCII character, 1 per other
BMP character (full-width punctuation, kana, symbols) and 4 per character outside the BMP
(emoji fall back to byte tokens), rounded up. Real tokenisers (DeepSeek's included) come out
lower, so a block that fits here fits there, and an estimate never undershoots.
"""

from __future__ import annotations

import math
from collections.abc import Callable

TokenCounter = Callable[[str], int]

CJK_TOKENS = 0.6
ASCII_TOKENS = 0.3
OTHER_TOKENS = 1.0
ASTRAL_TOKENS = 4.0


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0xF900 <= cp <= 0xFAFF
        or 0x20000 <= cp <= 0x2FA1F
    )


def count_tokens(text: str) -> int:
    """Conservative token count of ``text`` (see the module docstring)."""
    if text.isascii():
        return math.ceil(len(text) * ASCII_TOKENS)
    cjk = ascii_ = other = astral = 0
    for ch in text:
        cp = ord(ch)
        if cp < 0x80:
            ascii_ += 1
        elif _is_cjk(cp):
            cjk += 1
        elif cp > 0xFFFF:
            astral += 1
        else:
            other += 1
    return math.ceil(
        cjk * CJK_TOKENS + ascii_ * ASCII_TOKENS + other * OTHER_TOKENS + astral * ASTRAL_TOKENS
    )
