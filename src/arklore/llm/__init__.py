"""The LLM layer shared by every LLM task: one OpenAI-compatible client, a response cache,
retries, a cost ledger and a resumable batch runner. See ``arklore.llm.config`` for the
environment variables."""

from arklore.llm.config import LLMConfig, Prices
from arklore.llm.estimate import Estimate, count_tokens, estimate
from arklore.llm.jobs import Job, JobsSummary, JobStore, run_jobs
from arklore.llm.ledger import CostLedger, CostSummary, format_cost_line
from arklore.llm.service import LLM
from arklore.llm.types import ChatModel, ChatRequest, ChatResult, Usage

__all__ = [
    "LLM",
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
    "Prices",
    "Usage",
    "count_tokens",
    "estimate",
    "format_cost_line",
    "run_jobs",
]
