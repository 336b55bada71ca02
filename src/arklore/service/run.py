"""``arklore serve``: uvicorn with one or more workers over the same ``ARKLORE_HOME``.

Each worker is a process with its own workspace (its own handles on the same store, graph file
and index); the knowledge base is read only, so they need no coordination. Prometheus metrics
are aggregated over the workers through ``PROMETHEUS_MULTIPROC_DIR``, a fresh folder under
``$ARKLORE_HOME/run`` set here before any worker starts (this module is an entry point: it may
touch the environment). On several machines, point every process at one Chroma server
(``CHROMA_HOST``/``CHROMA_PORT``) and give each machine a copy of ``ARKLORE_HOME``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from arklore.service.openai import check_exposure
from arklore.settings import Settings

FACTORY = "arklore.service.app:app_from_env"


def metrics_dir(home: Path, port: int) -> Path:
    d = Path(home) / "run" / f"metrics-{port}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)
    return d


def serve(*, host: str, port: int, workers: int = 1, log_level: str = "info") -> None:
    import uvicorn

    settings = Settings.from_env()
    check_exposure(host, settings)  # the chat route spends the LLM key: no open relay
    if workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir(settings.home, port))
    uvicorn.run(
        FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
