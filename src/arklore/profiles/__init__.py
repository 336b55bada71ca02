"""Character profiles (``.char`` files): what a chat needs to speak as one operator.

* :mod:`~arklore.profiles.charfile` -- the ``.char`` format: lossless read/write, tiers,
  hand-edit detection, the sections a chat may use, the protective writer;
* :mod:`~arklore.profiles.archive` -- the structured anchor copied from the handbook archive
  and the character table, and the check that a written anchor still equals its sources;
* :mod:`~arklore.profiles.quotes` -- verbatim quotes picked by a fixed rule from voice lines
  and story lines, and the verbatim gate;
* :mod:`~arklore.profiles.mentions` -- relation candidates from the operators she names;
* :mod:`~arklore.profiles.inputs` -- everything the tasks read about one operator;
* :mod:`~arklore.profiles.task_a` ... :mod:`~arklore.profiles.task_e` -- the distillation
  tasks: prompt next to its response model, the rule without a model, the item gates;
* :mod:`~arklore.profiles.rules` -- length and shape rules of model-written text;
* :mod:`~arklore.profiles.results` / :mod:`~arklore.profiles.schema` -- the stored result per
  task and operator (``distill_results``, resume);
* :mod:`~arklore.profiles.assemble` -- a profile's text from its stored results, re-checked;
* :mod:`~arklore.profiles.distill` -- the run: jobs on the shared LLM layer, storing, writing;
* :mod:`~arklore.profiles.draft` -- one operator's no-model draft in memory;
* :mod:`~arklore.profiles.persona` -- the sections a chat may inject, by tier;
* :mod:`~arklore.profiles.review` -- review entries, the queue (Markdown/HTML), samples;
* :mod:`~arklore.profiles.feedback` -- approved views of her people as ``char_anchor``
  relation documents;
* :mod:`~arklore.profiles.sources` -- the one adapter that reads the store and the tables.
"""
