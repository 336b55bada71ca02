"""The HTTP service: a FastAPI app over one workspace (``arklore serve``): the chat API
under ``/v1``, the review routes, the web pages, metrics and probes."""
