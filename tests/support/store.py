"""An ingested store from invented stages, as `arklore ingest` leaves one: the stages and
their lines, the corpus-wide speaker counts, the names layer's tables, a finished ingest run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from arklore.core.model import Stage
from arklore.corpus.ingest import rebuild_speakers
from arklore.corpus.store import Store
from arklore.names.build import rebuild_names
from arklore.names.registry import Registry
from arklore.workspace import open_store


def ingested_store(
    path: Path,
    stages: Iterable[Stage],
    registry: Registry,
    *,
    principal: Mapping[str, list[str]] | None = None,
    order: Mapping[str, int] | None = None,
) -> Store:
    """The store at ``path`` holding ``stages`` (``principal``: stage path -> its principal
    speakers; ``order``: stage path -> its story order rank) with ``registry``'s operators,
    recorded as one finished ingest run. The caller closes it."""
    store = open_store(path)
    run = store.begin_ingest_run(None, None, ["avg"])
    with store.transaction() as c:
        for stage in stages:
            store.replace_stage(stage, (principal or {}).get(stage.stage_path))
        for stage_path, rank in (order or {}).items():
            c.execute("UPDATE stages SET order_rank = ? WHERE stage_path = ?", (rank, stage_path))
        rebuild_speakers(c)
    rebuild_names(store, registry)
    store.finish_ingest_run(run, "")
    return store
