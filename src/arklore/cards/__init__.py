"""SillyTavern's formats, made from what the layers below know: character cards, lorebooks,
World Info, and keys that are safe in Chinese.

* :mod:`~arklore.cards.facade` -- :class:`CardsFacade`: a card per operator, the World Info
  file, the lint of their keys, reading a card back;
* :mod:`~arklore.cards.card` -- one card from its inputs, field by field;
* :mod:`~arklore.cards.keys` -- which names may key an entry, and what confirms the others;
* :mod:`~arklore.cards.lint` -- SillyTavern's key matching, emulated, over labelled messages;
* :mod:`~arklore.cards.spec` -- the card, lorebook entry and World Info shapes;
* :mod:`~arklore.cards.png` -- the ``chara``/``ccv3`` text chunks and the card image.
"""
