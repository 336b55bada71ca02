"""What a chat actually receives: turn assembly over the built knowledge base.

* :mod:`~arklore.chat.facade` -- :class:`ChatFacade`: who a chat is with (names + manifest) and
  ``turn()``, which runs every block module over one turn context;
* :mod:`~arklore.chat.context` -- :class:`TurnContext` (one turn as every block reads it:
  who, who the message names, her persona with the tier decision, the claims) and
  :class:`Layers` (the lower layers and settings a block reads);
* :mod:`~arklore.chat.blocks` -- one module per block (persona, doctor, relations, memories,
  group, exemplars), each ``build(ctx) -> Block``, in :data:`~arklore.chat.blocks.BLOCK_ORDER`;
* :mod:`~arklore.chat.turn` -- the :class:`Turn` a chat receives and its prompt preamble;
* :mod:`~arklore.chat.manifest` -- the operators an app exposes;
* :mod:`~arklore.chat.session` -- a chat session: history, replies through the LLM layer.

The workspace builds the facade from the lower layers' facades (``ws.chat``); the CLI, the
HTTP service and the Python API call it.
"""
