"""The type of the ``metrics`` fixture (tests/conftest.py): a measured figure as text, and the
figures it states by name for the record docs/figures.json (``make docs-measure``)."""

from __future__ import annotations

from typing import Protocol


class Metrics(Protocol):
    def __call__(self, text: str, **figures: float) -> None: ...
