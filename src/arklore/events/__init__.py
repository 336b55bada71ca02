"""Story events: first-person memories per operator, appearances and the story timeline.

The task module (prompt + response model) is :mod:`arklore.extract.events`; here are the
checks that decide what is believed (``checks``), the run (``runner``), the tables
(``schema``, ``store``), appearances without any LLM (``appearances``), the timeline
(``timeline``), memories for chat (``memories``), run comparison (``diff``) and the review
report (``review``).
"""
