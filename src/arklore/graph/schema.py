"""The graph layer's table in the store, as named migrations (see :mod:`arklore.base.db`).

``curated_verdicts``: a person's verdict on one curated relation of a matrix file, keyed by
(from node, to node, predicate family, matrix file name): who gave it, when (UTC ISO), the
verdict (``confirmed`` | ``rejected``), a note, and the sha256 of the relation's text as the
person saw it (:func:`arklore.graph.confirm.relation_sha`). A verdict holds only while the
relation's text still has that sha: an edit makes the relation unconfirmed again.
"""

from __future__ import annotations

from arklore.base.db import Migration

_VERDICTS = """
CREATE TABLE IF NOT EXISTS curated_verdicts (
    source TEXT NOT NULL,               -- node id of `from`
    target TEXT NOT NULL,               -- node id of `to`
    family TEXT NOT NULL,               -- predicate family (arklore.core.predicates)
    matrix TEXT NOT NULL,               -- file name of the matrix the relation is in
    verdict TEXT NOT NULL CHECK (verdict IN ('confirmed', 'rejected')),
    by TEXT NOT NULL,                   -- the name the reviewer gave ("cli", "admin" unnamed)
    at TEXT NOT NULL,                   -- UTC ISO time of the verdict
    note TEXT NOT NULL DEFAULT '',
    sha TEXT NOT NULL,                  -- sha256 of the relation's text as confirmed
    PRIMARY KEY (source, target, family, matrix)
);
"""

MIGRATIONS: tuple[Migration, ...] = (Migration("graph", "001_curated_verdicts", _VERDICTS),)
