"""Schema-driven fuzzing: schemathesis generates requests from ``/openapi.json`` -- valid ones
and invalid ones (negative mode) -- against the app over the invented knowledge base, and
checks every answer against the document with all its checks: no server error, every status
and content type documented, bodies matching their schemas, valid requests accepted and
invalid ones refused. Zero failures: the document and the server agree.

Bounded and reproducible: a few examples per operation and mode in the fast suite, many more
in the slow one; derandomized, no example database, no deadline. (Driven through Hypothesis
directly: schemathesis' pytest plugin does not run under pytest 9.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Err
from schemathesis.schemas import APIOperation
from support.service_world import kb_settings, make_kb

from arklore.service.app import create_app
from arklore.workspace import Workspace

FAST_EXAMPLES = 4
SLOW_EXAMPLES = 40


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    home = make_kb(tmp_path_factory.mktemp("fuzz") / "home")
    ws = Workspace(kb_settings(home, admin_token="fuzz-token"))
    app = create_app(ws, warm_up=False)
    with TestClient(app):  # runs the lifespan (startup/shutdown)
        yield app


def _operations(app: object) -> list[APIOperation[Any, Any, Any, Any]]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    # a body over ARKLORE_MAX_BODY_BYTES (10,001 messages, say) is rejected with 413
    schema.config.checks.negative_data_rejection.expected_statuses.append("413")
    ops = []
    for r in schema.get_all_operations():
        if isinstance(r, Err):
            raise r.err()
        ops.append(r.ok())
    return ops


@pytest.mark.parametrize(
    "examples", [FAST_EXAMPLES, pytest.param(SLOW_EXAMPLES, marks=pytest.mark.slow)]
)
def test_the_server_agrees_with_its_openapi_document(
    fuzz_app: object, examples: int, metrics
) -> None:
    ops = _operations(fuzz_app)
    labels = {f"{op.method.upper()} {op.path}" for op in ops}
    assert {"POST /v1/turn", "POST /v1/relation-context", "GET /v1/stages/{stage_path}/lines",
            "GET /v1/operators/{name}", "PUT /v1/operators/{name}/persona"} <= labels  # fmt: skip
    failures: list[str] = []
    sent: dict[int, int] = {}

    for op in ops:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(op, mode, examples, failures, sent)
    total = sum(sent.values())
    metrics(
        f"schemathesis ({examples} per operation and mode): {total} requests over {len(ops)} "
        "operations, statuses "
        + ", ".join(f"{k}: {v}" for k, v in sorted(sent.items()))
        + f"; {len(failures)} disagreements with the document"
    )
    assert total >= len(ops) * examples  # it really ran
    assert failures == [], "\n".join(failures[:5])


def _fuzz(
    op, mode: GenerationMode, examples: int, failures: list[str], sent: dict[int, int]
) -> None:
    """``examples`` requests for one operation in one mode, each answer checked against the
    document (all of schemathesis' checks)."""

    @given(case=op.as_strategy(generation_mode=mode))
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    def run(case: schemathesis.Case[Any]) -> None:
        resp = case.call()
        sent[resp.status_code] = sent.get(resp.status_code, 0) + 1
        try:
            case.validate_response(resp)
        except BaseExceptionGroup as exc:  # schemathesis' FailureGroup: every failed check
            failures.append(f"{case.method} {case.formatted_path} ({mode.value}) -> "
                            f"{resp.status_code}: {exc}"[:600])  # fmt: skip

    try:
        run()
    except Exception as exc:  # a mode that cannot generate anything for this operation
        if "Unsatisfiable" not in type(exc).__name__ and "Unsatisfiable" not in str(exc):
            raise


def test_the_fuzzed_base_was_built(fuzz_app: object) -> None:
    st = fuzz_app.state.arklore  # type: ignore[attr-defined]
    assert st.readiness()["ready"] and Path(st.ws.paths.graph).exists()
