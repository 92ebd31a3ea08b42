"""Prometheus metrics of the webhook server, in a registry of its own (no module globals).

Labels are bounded: ``webhook`` is one of the served paths' names (or ``other``), ``result`` one
of :data:`RESULTS`. Nothing taken from a request body ever becomes a label.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: allowed; allowed with a patch; denied by a rule; refused before deciding (bad request,
#: not ready, internal error); or not an AdmissionReview at all (HTTP 4xx)
RESULTS = ("allowed", "patched", "denied", "bad_request", "not_ready", "error", "rejected")

#: admission latency buckets: the API server's webhook timeout is at most 30 s, the target p99 25 ms
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "workerclass_webhook_requests",
            "Admission requests answered, by webhook and result.",
            ["webhook", "result"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "workerclass_webhook_request_duration_seconds",
            "Time from the request's headers to its answer, by webhook and result.",
            ["webhook", "result"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.dry_run = Counter(
            "workerclass_webhook_dry_run_requests",
            "Admission requests marked dryRun (answered the same way; the webhook has no side effects).",
            ["webhook"],
            registry=self.registry,
        )
        self.ready = Gauge(
            "workerclass_webhook_ready",
            "1 when the state the webhook decides against is synced, 0 while it fails closed.",
            registry=self.registry,
        )
        self.state_loads = Gauge(
            "workerclass_webhook_state_generation",
            "How many times the state snapshot has been replaced.",
            registry=self.registry,
        )
        self.certificate_reloads = Gauge(
            "workerclass_webhook_certificate_reloads",
            "How many times a rotated TLS certificate has been taken into use.",
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "workerclass_webhook_certificate_expiry_timestamp_seconds",
            "When the serving certificate in use expires (Unix time).",
            registry=self.registry,
        )
        # Label children resolved once: the hot path then only adds and observes.
        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def observe(self, webhook: str, result: str, seconds: float) -> None:
        key = (webhook, result)
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(webhook, result), self.latency.labels(webhook, result))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def exposition(self) -> bytes:
        result: bytes = generate_latest(self.registry)
        return result
