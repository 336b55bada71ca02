"""Schema-driven fuzzing: schemathesis generates requests from ``/openapi.json`` -- valid ones
and invalid ones (negative mode) -- against the app over the invented knowledge base; no answer
may be a server error (5xx other than the documented 503 of an unbuilt base, which this base
is not).

Bounded and reproducible: :data:`EXAMPLES` examples per operation and mode, derandomized, no
example database, no deadline, so it runs in the default suite. (Driven through Hypothesis
directly: schemathesis' pytest plugin does not run under pytest 9.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from service_kb import kb_settings, make_kb

from arklore.service.app import create_app
from arklore.workspace import Workspace

EXAMPLES = 25


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    home = make_kb(tmp_path_factory.mktemp("fuzz") / "home")
    ws = Workspace(kb_settings(home, admin_token="fuzz-token"))
    app = create_app(ws, warm_up=False)
    with TestClient(app):  # runs the lifespan (startup/shutdown)
        yield app


def _operations(app: object) -> list:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return [r.ok() for r in schema.get_all_operations()]


@pytest.mark.slow
def test_no_generated_request_makes_a_server_error(fuzz_app: object, metrics) -> None:
    ops = _operations(fuzz_app)
    labels = {f"{op.method.upper()} {op.path}" for op in ops}
    assert {"POST /v1/turn", "POST /v1/relation-context", "GET /v1/stages/{stage_path}/lines",
            "GET /v1/operators/{name}", "PUT /v1/operators/{name}/persona"} <= labels  # fmt: skip
    failures: list[str] = []
    sent: dict[int, int] = {}

    for op in ops:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=op.as_strategy(generation_mode=mode))
            @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))  # fmt: skip
            def run(case: schemathesis.Case) -> None:
                resp = case.call()
                sent[resp.status_code] = sent.get(resp.status_code, 0) + 1
                if resp.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} -> "
                                    f"{resp.status_code} {resp.text[:200]}")  # fmt: skip

            try:
                run()
            except Exception as exc:  # a mode that cannot generate anything for this operation
                if "Unsatisfiable" not in type(exc).__name__ and "Unsatisfiable" not in str(exc):
                    raise
    total = sum(sent.values())
    metrics(
        f"schemathesis: {total} requests over {len(ops)} operations, statuses "
        + ", ".join(f"{k}: {v}" for k, v in sorted(sent.items()))
    )
    assert total >= len(ops) * EXAMPLES  # it really ran
    assert failures == [], failures[:5]


def test_the_fuzzed_base_was_built(fuzz_app: object) -> None:
    st = fuzz_app.state.arklore  # type: ignore[attr-defined]
    assert st.readiness()["ready"] and Path(st.ws.paths.graph).exists()
