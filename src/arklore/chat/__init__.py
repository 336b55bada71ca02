"""What a chat actually receives: turn assembly over the built knowledge base.

* :mod:`~arklore.chat.facade` -- :class:`ChatFacade`: who a chat is with (names + manifest) and
  one builder per block of a turn (persona, relations, memories, group), ``turn()``;
* :mod:`~arklore.chat.turn` -- the :class:`Turn` a chat receives and its prompt preamble;
* :mod:`~arklore.chat.persona` -- the persona block, rendered from the profiles layer's persona;
* :mod:`~arklore.chat.manifest` -- the operators an app exposes;
* :mod:`~arklore.chat.session` -- a chat session: history, replies through the LLM layer.

The workspace builds the facade from the lower layers' facades (``ws.chat``); the CLI, the
HTTP service and the Python API call it.
"""
