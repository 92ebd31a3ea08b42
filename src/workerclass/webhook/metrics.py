"""Prometheus metrics of the webhook server, in a registry of its own (no module globals).

Labels are bounded: ``webhook`` is one of the served paths' names (or ``other``), ``result`` one
of :data:`RESULTS`, ``reason`` one of the connection guard's close reasons, ``source`` a watched
resource's ``plural.group`` or ``folder``. Nothing taken from a request ever becomes a label.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ..adapters.sync import SyncReport
from .connections import CLOSE_REASONS

#: allowed; allowed with a patch; denied by a rule; refused before deciding (bad request,
#: not ready, internal error); or not an AdmissionReview at all (HTTP 4xx)
RESULTS = ("allowed", "patched", "denied", "bad_request", "not_ready", "error", "rejected")

#: admission latency buckets: the API server's webhook timeout is at most 30 s, the target p99 25 ms
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


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


class _GaugesCollector(Collector):
    """Connection and source figures, copied in just before each scrape (they live elsewhere)."""

    def __init__(self) -> None:
        self.connections: Mapping[str, int] = {}
        self.sync: Sequence[SyncReport] = ()
        self.absent: Mapping[str, str] = {}

    def collect(self) -> Iterator[Metric]:
        stats = self.connections
        if stats:
            yield GaugeMetricFamily(
                "workerclass_webhook_connections", "Open client connections (TLS handshakes included).", stats["open"]
            )
            yield GaugeMetricFamily(
                "workerclass_webhook_connections_limit", "The cap on open connections.", stats["limit"]
            )
            yield CounterMetricFamily(
                "workerclass_webhook_connections_accepted", "Connections accepted.", stats["accepted"]
            )
            closed = CounterMetricFamily(
                "workerclass_webhook_connections_closed",
                "Connections the server closed to stay within its cap and deadlines: refused (at the cap, "
                "every connection answering), evicted (made room at the cap), header_timeout (no complete "
                "request headers in time).",
                labels=["reason"],
            )
            for reason in CLOSE_REASONS:
                closed.add_metric([reason], stats[reason])
            yield closed
        if self.sync:
            last = GaugeMetricFamily(
                "workerclass_webhook_source_last_sync_timestamp_seconds",
                "When each part of the state source was last known current (a list, an event, a folder "
                "check that loaded or found nothing changed), Unix time.",
                labels=["source"],
            )
            stale = GaugeMetricFamily(
                "workerclass_webhook_source_staleness_seconds",
                "Seconds since each part of the state source was last known current (readiness fails past the "
                "source's bound).",
                labels=["source"],
            )
            failures = CounterMetricFamily(
                "workerclass_webhook_source_sync_failures",
                "Failed lists, watches that broke or went silent, folder loads that failed.",
                labels=["source"],
            )
            skipped = CounterMetricFamily(
                "workerclass_webhook_source_objects_skipped",
                "Objects the source does not read because they nest or weigh beyond workerclass's bounds "
                "(each named in a warning of the log); the rest is read as usual.",
                labels=["source"],
            )
            for report in self.sync:
                skipped.add_metric([report.name], report.skipped)
                if report.last_sync is not None:
                    last.add_metric([report.name], report.last_sync)
                if report.staleness is not None:
                    stale.add_metric([report.name], report.staleness)
                failures.add_metric([report.name], report.failures)
            yield last
            yield stale
            yield failures
            yield skipped
        if self.absent:
            absent = GaugeMetricFamily(
                "workerclass_webhook_source_absent",
                "1 for each optional resource the source reads as empty because the API server does not serve it "
                "(reason not_served, 404) or RBAC hides it (forbidden, 403): a fact of the platform, said here, in "
                "/readyz and in the log rather than in every admission answer.",
                labels=["reason", "source"],
            )
            for name, reason in sorted(self.absent.items()):
                absent.add_metric([reason, name], 1)
            yield absent


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._requests = _RequestCollector()
        self.registry.register(self._requests)
        self.observe = self._requests.observe
        self._gauges = _GaugesCollector()
        self.registry.register(self._gauges)
        self.dry_run = Counter(
            "workerclass_webhook_dry_run_requests",
            "Admission requests marked dryRun (answered the same way; the webhook has no side effects).",
            ["webhook"],
            registry=self.registry,
        )
        self.live_reads = Counter(
            "workerclass_webhook_live_reads",
            "Decisions that rest on an object not being there, confirmed by reading its kinds live: same (the "
            "cache held what the API server holds), behind (the cache had not heard of a write yet: decided "
            "again on what was read), failed (the read failed or was slow: the cache's decision was answered), "
            "limited (more live reads were asked for than the rate allows: the cache's decision was answered).",
            ["webhook", "outcome"],
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

    def note_connections(self, stats: Mapping[str, int]) -> None:
        self._gauges.connections = dict(stats)

    def note_sync(self, reports: Sequence[SyncReport]) -> None:
        self._gauges.sync = tuple(reports)

    def note_absent(self, absent: Mapping[str, str]) -> None:
        """The optional resources read as empty (name: ``not_served`` or ``forbidden``)."""
        self._gauges.absent = dict(absent)

    def exposition(self) -> bytes:
        result: bytes = generate_latest(self.registry)
        return result
