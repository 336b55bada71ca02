"""Character profiles (``.char`` files): what a chat needs to speak as one operator.

Library only (the CLI and workspace wiring come later):

* :mod:`~arklore.profiles.charfile` -- the ``.char`` format: lossless read/write, tiers,
  hand-edit detection, the sections a chat may use, the protective writer;
* :mod:`~arklore.profiles.archive` -- task A without a model: the structured anchor copied
  from the handbook archive and the character table, and the check that a written anchor
  still equals its sources;
* :mod:`~arklore.profiles.quotes` -- task B without a model: verbatim quotes picked by a
  fixed rule from voice lines and story lines, and the verbatim gate;
* :mod:`~arklore.profiles.mentions` -- task E without a model: relation candidates from the
  operators she names (counts read from the relation graph);
* :mod:`~arklore.profiles.review` -- the review queue entry per operator and spot-check samples;
* :mod:`~arklore.profiles.draft` -- one operator's generated draft from the pieces above;
* :mod:`~arklore.profiles.sources` -- the one adapter that reads the store and the tables.
"""
