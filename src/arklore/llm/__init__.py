"""The LLM layer shared by every LLM task: one OpenAI-compatible client, a response cache,
retries, a cost ledger and a resumable batch runner. Settings come from
:mod:`arklore.settings` (the ``LLM_*`` variables), resolved per task into an ``LLMConfig``."""

from arklore.llm.config import LLMConfig, Prices
from arklore.llm.estimate import Estimate, estimate
from arklore.llm.jobs import Job, JobsSummary, JobStore, run_jobs
from arklore.llm.ledger import CostLedger, format_cost_line
from arklore.llm.service import LLM
from arklore.llm.types import (
    ChatBackend,
    ChatModel,
    ChatRequest,
    ChatResult,
    CostSummary,
    LLMFiles,
    Usage,
)

__all__ = [
    "LLM",
    "ChatBackend",
    "ChatModel",
    "ChatRequest",
    "ChatResult",
    "CostLedger",
    "CostSummary",
    "Estimate",
    "Job",
    "JobStore",
    "JobsSummary",
    "LLMConfig",
    "LLMFiles",
    "Prices",
    "Usage",
    "estimate",
    "format_cost_line",
    "run_jobs",
]
