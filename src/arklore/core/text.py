"""Small text rules shared by several layers (no I/O)."""

from __future__ import annotations


def strip_json_fence(content: str) -> str:
    """The JSON inside a model reply: some models wrap it in ```json fences even in JSON mode."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()
