"""LLM descriptions of graph edges (task ``relation_descriptions``), gated, evidence fallback.

Used by ``arklore rag build`` when an LLM is configured for the task (a key, or an endpoint
that needs none: see ``LLMSettings.configured``). Per edge the model is shown what the corpus
holds about the pair: a few actual exchanges between the two (line ids shown, capped in
tokens), the extracted notes and the curated description when there are any, and the
evidence-built description; it answers with one or two sentences of A's view of B.

The answer is untrusted. It is kept (``generated_by = "llm"``) only when it is 10-200
characters and names no person who is neither of the two nor named in what it was shown
(the names mention matcher plus the graph's NPC names, handed in as ``find_people``).
Anything else -- a request that failed for good, unparseable JSON, a refused answer -- keeps
the evidence-built description, with the reason in the document's ``gate_reason``
(``request_failed``, ``length``, ``unknown_person:<name>``). Answers go through the LLM
layer's cache, so a rebuild asks only about edges whose evidence changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import BaseModel

from arklore.core.tokens import TokenCounter, count_tokens
from arklore.graph.model import RelationGraph
from arklore.llm import LLM, ChatRequest, ChatResult, Job, run_jobs
from arklore.rag.docs import MAX_CHARS, MIN_CHARS, Describer, Description, EdgeItem
from arklore.rag.evidence import pick_exchanges

TASK = "relation_descriptions"
PROMPT_VERSION = "2"
EVIDENCE_TOKENS = 700
"""Token budget of the exchanges shown per edge (:mod:`arklore.core.tokens`)."""
MAX_TOKENS = 200

SYSTEM = """你是《明日方舟》剧情资料的整理者。用户会给出两名角色甲、乙在剧情中的真实对话片段\
（每行开头方括号内是台词编号）以及已知的资料。请只根据这些材料，用一到两句自然的中文写出甲眼中的乙：\
甲如何看待、如何称呼、如何对待乙。

要求：
- 只写材料能支持的内容，不要编造情节；
- 除甲、乙二人外，不要提到材料中没有出现的人物；
- 不要照抄台词原文，用自己的话概括；
- {min_chars} 到 {max_chars} 个字。

以 JSON 回答：{{"description": "..."}}"""

PROMPT = """甲：{a}；乙：{b}。请写出{a}眼中的{b}。

【对话片段】
{exchanges}

【已知资料】
{known}"""
"""The per-edge message; the fixed instructions are the system prompt (the provider's prefix
cache bills them at the hit price from the second request on)."""


class DescriptionResponse(BaseModel):
    """The model's answer: one or two sentences of A's view of B."""

    description: str


PeopleFinder = Callable[[str], list[tuple[str, int, int]]]
"""Text -> (node id, start, end) of every person it names (an ambiguous name: one span per
candidate). :func:`people_finder` builds one from the mention matcher and the graph."""


def people_finder(
    graph: RelationGraph, mention_spans: Callable[[str], Iterable[tuple[str, int, int]]]
) -> PeopleFinder:
    """Operators found by ``mention_spans`` (the names matcher, ids resolved to graph nodes)
    plus NPC nodes of the graph found by their full name (the matcher knows operators only)."""
    npcs = sorted(
        (
            (n.name, nid)
            for nid, n in graph.nodes.items()
            if n.kind != "operator" and len(n.name) >= 2
        ),
        key=lambda x: -len(x[0]),
    )

    def find(text: str) -> list[tuple[str, int, int]]:
        out = [(graph.resolve(c) or c, s, e) for c, s, e in mention_spans(text)]
        for name, nid in npcs:
            i = text.find(name)
            while i >= 0:
                out.append((nid, i, i + len(name)))
                i = text.find(name, i + len(name))
        return out

    return find


def shown_evidence(
    it: EdgeItem,
    name: Callable[[str], str],
    *,
    budget: int = EVIDENCE_TOKENS,
    counter: TokenCounter = count_tokens,
) -> tuple[str, str, list[str]]:
    """(exchanges block, known-facts block, line ids shown) for one edge's prompt."""
    windows = pick_exchanges(it.facts, name, budget=budget, counter=counter)
    ids = [ln.split("]", 1)[0].lstrip("[") for w in windows for ln in w]
    exchanges = "\n\n".join("\n".join(w) for w in windows) or "（无）"
    known = [f"- 关系类型：{it.edge.predicate}", f"- 语料整理：{it.fallback.text}"]
    if it.curated:
        known.append(f"- 人工整理的关系描述：{it.curated}")
    known += [f"- 抽取到的备注：{n}" for n in it.notes[:5]]
    return exchanges, "\n".join(known), ids


def build_request(
    it: EdgeItem,
    name: Callable[[str], str],
    *,
    budget: int = EVIDENCE_TOKENS,
    counter: TokenCounter = count_tokens,
) -> tuple[ChatRequest, list[str], str]:
    """(request, line ids shown, everything shown as one text) for one edge."""
    exchanges, known, ids = shown_evidence(it, name, budget=budget, counter=counter)
    system = SYSTEM.format(min_chars=MIN_CHARS, max_chars=MAX_CHARS)
    prompt = PROMPT.format(a=it.a_name, b=it.b_name, exchanges=exchanges, known=known)
    e = it.edge
    req = ChatRequest(
        task=TASK,
        key=f"{e.source}->{e.target}:{e.predicate}",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        prompt_version=PROMPT_VERSION,
        max_tokens=MAX_TOKENS,
        schema=DescriptionResponse,
    )
    return req, ids, f"{exchanges}\n{known}"


def gate(text: str, it: EdgeItem, shown: str, find_people: PeopleFinder) -> str | None:
    """Why the answer is refused (None: kept): its length, or a person it names who is
    neither party nor named in (or speaking) the evidence it was shown."""
    if not MIN_CHARS <= len(text) <= MAX_CHARS:
        return f"length {len(text)}"
    allowed = {it.edge.source, it.edge.target}
    allowed.update(nid for nid, _, _ in find_people(shown))
    by_span: dict[tuple[int, int], set[str]] = {}
    for nid, s, e in find_people(text):
        by_span.setdefault((s, e), set()).add(nid)
    for (s, e), ids in sorted(by_span.items()):
        if not ids & allowed:
            return f"unknown_person:{text[s:e]}"
    return None


def describe_requests(items: list[EdgeItem], name: Callable[[str], str]) -> list[ChatRequest]:
    """The requests a build would send (for ``rag build --dry-run``)."""
    return [build_request(it, name)[0] for it in items]


def llm_describer(
    llm: LLM,
    *,
    find_people: PeopleFinder,
    name: Callable[[str], str],
    concurrency: int = 8,
) -> Describer:
    """A :data:`~arklore.rag.docs.Describer` asking ``llm``; ``name`` gives a node's display
    name (speaker labels of the exchanges), ``find_people`` the gate's person detector."""

    def describe(items: list[EdgeItem]) -> list[Description]:
        out = [
            Description(it.fallback.text, it.fallback.generated_by,
                        list(it.fallback.evidence_line_ids), "request_failed")
            for it in items
        ]  # fmt: skip
        jobs, shown = [], []
        for i, it in enumerate(items):
            req, ids, text = build_request(it, name)
            jobs.append(Job(req, context=i))
            shown.append((ids, text))

        def handler(job: Job, result: ChatResult) -> str:
            i = job.context
            it = items[i]
            answer = result.parsed.description.strip()
            ids, text = shown[i]
            reason = gate(answer, it, text, find_people)
            if reason is None:
                keep = ids or list(it.fallback.evidence_line_ids)
                out[i] = Description(answer, "llm", keep)
            else:
                out[i].gate_reason = reason
            return job.key

        run_jobs(jobs, llm, handler=handler, concurrency=concurrency, resume=False)
        return out

    return describe
