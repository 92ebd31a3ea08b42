"""Prometheus metrics of the webhook server, in a registry of its own (no module globals).

Labels are bounded: ``webhook`` is one of the served paths' names (or ``other``), ``result`` one
of :data:`RESULTS`. Nothing taken from a request body ever becomes a label.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

#: allowed; allowed with a patch; denied by a rule; refused before deciding (bad request,
#: not ready, internal error); or not an AdmissionReview at all (HTTP 4xx)
RESULTS = ("allowed", "patched", "denied", "bad_request", "not_ready", "error", "rejected")

#: admission latency buckets: the API server's webhook timeout is at most 30 s, the target p99 25 ms
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _Series:
    """Count, sum and per-bucket counts of one (webhook, result) pair."""

    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.buckets = [0] * (len(BUCKETS) + 1)  # the last one is +Inf


class _RequestCollector(Collector):
    """Requests and their latency, kept as plain numbers on the hot path (one event-loop thread)
    and turned into Prometheus families only when scraped: a tenth of a labelled
    ``Histogram.observe`` plus ``Counter.inc``, which take locks on every request."""

    def __init__(self) -> None:
        self.series: dict[tuple[str, str], _Series] = {}

    def observe(self, webhook: str, result: str, seconds: float) -> None:
        series = self.series.get((webhook, result))
        if series is None:
            series = self.series[(webhook, result)] = _Series()
        series.count += 1
        series.total += seconds
        series.buckets[bisect_left(BUCKETS, seconds)] += 1

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "workerclass_webhook_requests",
            "Admission requests answered, by webhook and result (patched: a patch was returned; for a "
            "dryRun request the API server applies nothing).",
            labels=["webhook", "result"],
        )
        latency = HistogramMetricFamily(
            "workerclass_webhook_request_duration_seconds",
            "Time from the request's headers to its answer, by webhook and result.",
            labels=["webhook", "result"],
        )
        for (webhook, result), series in sorted(self.series.items()):
            requests.add_metric([webhook, result], series.count)
            cumulative, buckets = 0, []
            for bound, count in zip([*(str(b) for b in BUCKETS), "+Inf"], series.buckets, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            latency.add_metric([webhook, result], buckets, series.total)
        yield requests
        yield latency


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._requests = _RequestCollector()
        self.registry.register(self._requests)
        self.observe = self._requests.observe
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

    def exposition(self) -> bytes:
        result: bytes = generate_latest(self.registry)
        return result
