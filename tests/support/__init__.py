"""Builders shared by the tests: invented worlds in the formats arklore reads (never game
text). A world is ``<subject>_world`` (tree, events, doctor, evidence, profiles, rag, service,
sisters); the helpers are ``lines`` (the one ``line()`` builder of story lines, and ``stage()``),
``store`` (an ingested store made from Stage objects), ``llm_stub`` (the stub model server, a
pytest plugin), ``distill_fake`` (a fake model for distill) and ``serve_proc`` (``arklore
serve`` as a subprocess)."""
