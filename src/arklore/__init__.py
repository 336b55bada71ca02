"""arklore: the knowledge layer for Arknights character role-play.

The package is laid out as the pipeline runs: ``sources`` (readers) -> ``corpus`` (store,
ingest, checks) -> ``names`` -> ``llm`` -> ``extract`` -> ``graph`` -> ``rag``, with ``core``
for plain data types and rules that do no I/O, ``base`` for I/O primitives, ``settings`` for
every setting and ``workspace`` as the one composition root. The names in ``__all__`` are the
public API (the README documents them); they are imported on first use, so importing one
layer does not load the others; the package's namespace holds nothing else (a test reads its
``vars``).
"""

import importlib as _importlib

__version__ = "0.6.1"

_PUBLIC: dict[str, str] = {
    "ArkloreError": "arklore.core.errors",
    "Settings": "arklore.settings",
    "Paths": "arklore.workspace",
    "Workspace": "arklore.workspace",
    "default_workspace": "arklore.api",
    "set_default_workspace": "arklore.api",
    "find_mentions": "arklore.api",
    "get_relation_context": "arklore.api",
    "get_anchor_relations": "arklore.api",
    "get_contextual_relations": "arklore.api",
    "get_all_relationships_for": "arklore.api",
    "get_relation_background": "arklore.api",
    "assemble_turn": "arklore.api",
    "get_memories": "arklore.api",
}

__all__ = ["__version__", *sorted(_PUBLIC)]


def __getattr__(name: str) -> object:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'arklore' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
