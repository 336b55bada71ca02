"""Relation extraction: the model proposes (``relations``), the program decides (``gates``)."""

from arklore.extract.gates import GatedEdge, GatedEvidence, gate_edges, summarize
from arklore.extract.relations import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    EdgeProposal,
    EvidenceProposal,
    RelationsResponse,
    build_messages,
    chunk_lines,
    parse_response,
)
from arklore.llm.shape import ResponseShapeError

__all__ = [
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "EdgeProposal",
    "EvidenceProposal",
    "GatedEdge",
    "GatedEvidence",
    "RelationsResponse",
    "ResponseShapeError",
    "build_messages",
    "chunk_lines",
    "gate_edges",
    "parse_response",
    "summarize",
]
