"""LLM descriptions of graph edges (task ``relation_descriptions``), template fallback.

Used by ``arklore rag build`` when an LLM is configured for the task (a key, or an endpoint
that needs none: see ``LLMSettings.configured``). Answers go through the LLM layer's cache, so
a rebuild asks only about edges that changed; an edge whose request fails, or whose answer
is not 10-200 characters, falls back to the template (``generated_by = "template"``).
"""

from __future__ import annotations

from pydantic import BaseModel

from arklore.graph.model import Edge
from arklore.llm import LLM, ChatRequest, ChatResult, Job, run_jobs
from arklore.rag.docs import MAX_CHARS, MIN_CHARS, Describer, template_description

TASK = "relation_descriptions"
PROMPT_VERSION = "1"


class DescriptionResponse(BaseModel):
    description: str


def _request(e: Edge, a: str, b: str) -> ChatRequest:
    facts = template_description(e, a, b)
    prompt = (
        f"用一到两句自然的中文，从{a}的角度描述她/他如何看待{b}（{a}眼中的{b}）。"
        f"关系类型：{e.predicate}；强度 {e.strength:.2f}；已知：{facts}\n"
        f"只根据给出的信息，不要编造情节；10 到 {MAX_CHARS} 个字。"
        '以 JSON 回答：{"description": "..."}'
    )
    return ChatRequest(
        task=TASK,
        key=f"{e.source}->{e.target}:{e.predicate}",
        messages=[{"role": "user", "content": prompt}],
        prompt_version=PROMPT_VERSION,
        schema=DescriptionResponse,
    )


def llm_describer(llm: LLM, *, concurrency: int = 8) -> Describer:
    def describe(items: list[tuple[Edge, str, str]]) -> list[tuple[str, str]]:
        out = [(template_description(e, a, b), "template") for e, a, b in items]
        jobs = [Job(_request(e, a, b), context=i) for i, (e, a, b) in enumerate(items)]

        def handler(job: Job, result: ChatResult) -> str:
            text = result.parsed.description.strip()
            if MIN_CHARS <= len(text) <= MAX_CHARS:
                out[job.context] = (text, "llm")
            return job.key

        run_jobs(jobs, llm, handler=handler, concurrency=concurrency, resume=False)
        return out

    return describe
