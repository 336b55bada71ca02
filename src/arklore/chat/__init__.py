"""What a chat actually receives: turn assembly over the built knowledge base.

* :mod:`~arklore.chat.turn` -- :func:`assemble_turn`: the system-prompt blocks of one turn;
* :mod:`~arklore.chat.knowledge` -- name resolution (with the manifest) and the block builders;
* :mod:`~arklore.chat.persona` -- the persona block from ``.char`` profiles, by tier;
* :mod:`~arklore.chat.appearances` -- appearances and the timeline from the store (no LLM);
* :mod:`~arklore.chat.manifest` -- the operators an app exposes;
* :mod:`~arklore.chat.session` -- a chat session: history, replies through the LLM layer.

The workspace builds :class:`~arklore.chat.knowledge.ChatKnowledge` from its handles
(``Workspace.chat()``); the CLI and the HTTP service are adapters over it.
"""
