"""rag layer."""
