"""Prometheus metrics of the service (``GET /metrics``).

======================================================  =========================================
``arklore_http_requests_total{method,route,status}``    requests per route template
``arklore_http_request_duration_seconds{method,route}`` latency per route (histogram)
``arklore_turn_block_tokens{block}``                    tokens injected per block per turn
``arklore_turns_total``                                 assembled turns
``arklore_relation_context_total{endpoint}``            relation blocks served (turn or
                                                        relation-context)
``arklore_relation_context_empty_total{endpoint}``      ... that were empty
``arklore_relation_context_contextual_total{endpoint}`` ... with at least one contextual entry
``arklore_named_people_total``                          people a turn's message names that its
                                                        relations block answers for
``arklore_named_people_related_total``                  ... that got her relation to them
``arklore_openai_requests_total{key,status}``           OpenAI-compatible requests per client key
                                                        (``key``: its label, ``settings.
                                                        api_key_label``; ``local`` without keys,
                                                        ``invalid`` for a refused one)
``arklore_openai_tokens_total{key,kind}``               tokens the endpoint reported per client key
                                                        (``kind``: ``prompt`` / ``completion``)
======================================================  =========================================

Rates in PromQL: empty-context rate =
``rate(arklore_relation_context_empty_total[5m]) / rate(arklore_relation_context_total[5m])``,
contextual hit rate = the same with ``..._contextual_total``; recall on named people =
``rate(arklore_named_people_related_total[5m]) / rate(arklore_named_people_total[5m])``.

With several workers (``arklore serve --workers N``) the metrics are aggregated over the
workers through ``PROMETHEUS_MULTIPROC_DIR`` (set by ``arklore serve``): every worker's
``/metrics`` shows the totals.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
TOKEN_BUCKETS = (0, 25, 50, 100, 200, 300, 400, 600, 800, 1200, 2000)


def multiprocess_mode() -> bool:
    """Whether prometheus_client was imported with ``PROMETHEUS_MULTIPROC_DIR`` set."""
    return bool(values.ValueClass.__name__ != "MutexValue")


class Metrics:
    """One set of metrics per app, in its own registry (tests make several apps)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "arklore_http_requests", "HTTP requests", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "arklore_http_request_duration_seconds", "HTTP request latency",
            ["method", "route"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.block_tokens = Histogram(
            "arklore_turn_block_tokens", "Tokens injected per block per turn", ["block"],
            buckets=TOKEN_BUCKETS, registry=r,
        )  # fmt: skip
        self.turns = Counter("arklore_turns", "Assembled chat turns", registry=r)
        self.rel = Counter(
            "arklore_relation_context", "Relation blocks served", ["endpoint"], registry=r
        )
        self.rel_empty = Counter(
            "arklore_relation_context_empty", "Relation blocks that were empty", ["endpoint"],
            registry=r,
        )  # fmt: skip
        self.rel_contextual = Counter(
            "arklore_relation_context_contextual",
            "Relation blocks with at least one contextual entry", ["endpoint"], registry=r,
        )  # fmt: skip
        self.named = Counter(
            "arklore_named_people",
            "People a message names that the relations block answers for",
            registry=r,
        )
        self.named_related = Counter(
            "arklore_named_people_related",
            "Named people who got her relation to them",
            registry=r,
        )

        self.openai_requests = Counter(
            "arklore_openai_requests", "OpenAI-compatible requests per client key",
            ["key", "status"], registry=r,
        )  # fmt: skip
        self.openai_tokens = Counter(
            "arklore_openai_tokens", "Tokens reported by the chat endpoint per client key",
            ["key", "kind"], registry=r,
        )  # fmt: skip

    def observe_openai(self, key: str, status: int) -> None:
        self.openai_requests.labels(key, str(status)).inc()

    def observe_openai_tokens(self, key: str, prompt: int, completion: int) -> None:
        self.openai_tokens.labels(key, "prompt").inc(prompt)
        self.openai_tokens.labels(key, "completion").inc(completion)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_relations(self, endpoint: str, empty: bool, contextual: int) -> None:
        self.rel.labels(endpoint).inc()
        if empty:
            self.rel_empty.labels(endpoint).inc()
        if contextual:
            self.rel_contextual.labels(endpoint).inc()

    def observe_turn(self, turn: Any) -> None:
        self.turns.inc()
        for b in turn.blocks:
            self.block_tokens.labels(b.name).observe(b.tokens)
        rel = turn.block("relations")
        self.observe_relations("turn", rel.empty, int(rel.meta.get("contextual", 0)))
        self.named.inc(len(rel.meta.get("named") or ()))
        self.named_related.inc(len(rel.meta.get("named_related") or ()))

    def exposition(self) -> tuple[bytes, str]:
        if multiprocess_mode():
            reg = CollectorRegistry()
            # prometheus_client ships this class without annotations
            multiprocess.MultiProcessCollector(reg)  # type: ignore[no-untyped-call]
            return generate_latest(reg), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Pure ASGI middleware: counts and times every HTTP request by its route template."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500

        async def send_wrapper(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "(unmatched)"
            self.metrics.observe_request(
                scope.get("method", "?"), template, status, time.perf_counter() - t0
            )
