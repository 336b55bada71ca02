"""Relation RAG: relation documents, their validation, a ChromaDB index and the relation
context a chat turn injects (see :mod:`arklore.rag.context` for the retrieval API)."""
