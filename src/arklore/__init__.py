"""arklore: the knowledge layer for Arknights character role-play.

The package is laid out as the pipeline runs: ``sources`` (readers) -> ``corpus``
(store, ingest, checks) -> ``names`` -> ``llm`` -> ``extract`` -> ``graph`` -> ``rag``,
with ``core`` holding plain data types and errors that do no I/O.
"""

__version__ = "0.1.0"
