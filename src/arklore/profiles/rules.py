"""The rule checks every model-written text passes before anything is stored or written.

A model answer whose shape or lengths break these rules is rejected as a whole (a
``ValueError`` inside the response validator: the LLM layer retries it, up to ``--retry``
times, then the task is recorded as failed for that operator). Quotes and structured anchor
fields are not judged here: they are repaired item by item by their gates (the verbatim gate
in :mod:`arklore.profiles.quotes`, the source check in :mod:`arklore.profiles.archive`).
"""

from __future__ import annotations

import re

from arklore.core.text import SENTENCE_END, one_line

_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


def cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def sentences(text: str) -> int:
    """Sentences in ``text``: runs of 。！？ (with closing quotes) plus a trailing part."""
    parts = [p for p in SENTENCE_END.split(text.strip()) if p.strip(" …—\n")]
    return len(parts)


def check_text(
    text: str,
    what: str,
    *,
    min_chars: int,
    max_chars: int,
    min_cjk: int = 0,
    max_sentences: int | None = None,
) -> str:
    """``text`` folded to one line, or ValueError naming the rule it breaks."""
    t = one_line(text)
    if not min_chars <= len(t) <= max_chars:
        raise ValueError(f"{what}: {len(t)} characters, not {min_chars}-{max_chars}")
    if cjk_count(t) < min_cjk:
        raise ValueError(f"{what}: fewer than {min_cjk} Chinese characters")
    if max_sentences is not None and sentences(t) > max_sentences:
        raise ValueError(f"{what}: {sentences(t)} sentences, at most {max_sentences}")
    return t
