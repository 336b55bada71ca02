"""What a layer needs to run an LLM task, handed down by the workspace: a way to open an LLM
service (its own run id and cost line), each task's settings, and the run-wide limits.

Layers below the settings never read them; they get one :class:`LLMAccess` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from arklore.llm.config import LLMConfig, Prices
from arklore.llm.service import LLM
from arklore.llm.types import LLMFiles


@dataclass(frozen=True)
class LLMAccess:
    """LLM services and settings per task (see the module doc)."""

    factory: Callable[..., LLM]  # (no_cache=False, **config changes) -> a new LLM service
    config: Callable[[str], LLMConfig]  # task -> its settings (LLM_<TASK>_*, else LLM_*)
    configured: Callable[[str], bool]  # task -> whether it has a model to call
    files: LLMFiles
    breaker_failures: int = 5
    secrets: Callable[[], list[str]] = list

    def prices(self, task: str) -> Prices:
        return self.config(task).prices

    def model(self, task: str) -> str:
        return self.config(task).model

    @contextmanager
    def session(self, *, no_cache: bool = False, retry: int | None = None) -> Iterator[LLM]:
        """A new LLM service for one run (``retry`` overrides the retries per request),
        closed at the end."""
        llm = self.factory(no_cache=no_cache, **({} if retry is None else {"max_retries": retry}))
        try:
            yield llm
        finally:
            llm.close()
