"""The cluster-backed state: list and watch what admission reads, keep a State current per event.

Its edge: the Kubernetes API in (through lightkube's async client), immutable
:class:`~workerclass.state.State` snapshots out. What it reads is :data:`WATCHED`, which is also
where the install manifests take their RBAC rules from, so the ServiceAccount can read exactly
this and nothing else. Both are rows of the API table (:mod:`workerclass.api.resources`).

Like an informer: each resource is listed, then watched from the list's resourceVersion; a watch
that fails (410 Gone, a dropped connection, a 5xx) is followed by a fresh list after a backoff.
The cache is *synced* only once every resource's first list has succeeded; until then ``state``
is ``None`` and ``reason`` says which lists are missing and the last error, so the webhook fails
closed and says why. After that, a resource whose watch broke keeps its last known objects while
it is listed again (a stale read rather than an outage, as with client-go informers), and a
resource not current for ``stale_after`` seconds (no list or event: a frozen connection, a failing
API) makes ``reason`` non-empty, so the webhook reports not ready and says which and why.
Errors reach logs and ``reason`` only as status code and reason (:func:`short_error`).

Optional resources (``Resource.optional``: ComputePlane, absent before Cozystack served it, and
KubeVirt's instance types): a list answered 404 (the API server does not serve the group) or 403
(RBAC hides it) reads as listed and empty. The cache syncs without it, drops the objects of a group
that went away, says so once per change in the log and in :attr:`ClusterCache.warnings`, does not
count it as stale, and keeps probing it with the backoff below, so its objects arrive once it is
served. A required resource's 404 or 403 stays a failure: the cache does not sync (or goes stale)
and ``reason`` names it.

Backoff: every retry (a failed list or watch, a probe of an absent optional resource) waits a
doubling delay from ``retry_delay`` up to ``max_retry_delay``, with equal jitter (half fixed, half
random: replicas and resources that failed together do not retry together). It starts over only
when a watch has proved healthy: it delivered an event, or it ran :data:`HEALTHY_WATCH` seconds (at
most ``watch_timeout``). A successful list alone does not reset it, so a watch refused right after
every list (RBAC grants list but not watch, a broken watch cache) backs off instead of listing in a
tight loop.

Timeouts: a list has ``list_timeout`` seconds in all (the cache's own deadline); a watch gets no
read timeout from lightkube, and the cache gives up on one that sends nothing for ``watch_timeout +
watch_margin`` seconds. The client's read timeout must not cut a slow list page first (lightkube's
default is 10 s against the cache's 30 s): a client the cache makes is built with
:func:`client_timeout`, callers that make their own should pass ``timeout=client_timeout(...)``, and
a given lightkube client whose read timeout is shorter has it raised on :meth:`ClusterCache.start`
(logged; a longer read timeout only lets a slow answer finish).

Stale but answering: :meth:`ClusterCache.staleness` gives the warning lines the webhook adds to
every answer it decides while the snapshot is not fully current (a resource that failed since it
was last current, or was last current longer ago than a watch's deadline), and the optional-API
warnings, so a tenant learns that a decision was made on old data before readiness moves traffic.

Cost per event: an object is stored :func:`trimmed` to what State (admission, resolution, the
controller) reads; an event whose trimmed object equals the stored one (a status write by Flux, a
managedFields or resourceVersion bump, an annotation) is dropped there. Any other event makes the
next snapshot with :meth:`State.with_object` / :meth:`State.without`, which replaces only the
entries the object touches and shares the rest (no rebuild, no lock: a request holds the snapshot
it started with). The first lists are paginated (``limit`` :data:`LIST_CHUNK`, ``continue``) and
the first State is built once from the complete lists (``State.from_objects``).

Change notification: every new State bumps :attr:`ClusterCache.generation`, and
:meth:`ClusterCache.changed` wakes whoever waits for one (the controller's loops: no polling). A
burst of events within ``debounce`` seconds of its first is announced once; :attr:`~ClusterCache.state`
is never held back (the webhook reads the newest snapshot), only the wake-up is gathered.

Why one module: the list/watch loop, its backoff, the absent and stale bookkeeping and the texts
made from them read and write the same per-resource progress; split, each part would reach into
the others' state.

lightkube is imported lazily so that importing this module needs no client.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import http
import logging
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..admission.bounds import request_excess
from ..api import WATCHED, Resource
from ..api.resources import APPLICATION_KIND_LABEL, INSTANCETYPE
from ..chart.source import ChartSource
from ..state import State
from .changes import Changes
from .sync import SyncReport, age_report, where

__all__ = [
    "HEALTHY_WATCH",
    "LIST_CHUNK",
    "STATUS_REASONS",
    "WATCHED",
    "Backoff",
    "ClusterCache",
    "client_timeout",
    "resource_class",
    "short_error",
    "status_code",
    "trimmed",
]

logger = logging.getLogger("workerclass.kube")


# WATCHED (imported above): what the webhook's cache lists and watches.


#: objects per list page (``limit``; lightkube follows ``continue``)
LIST_CHUNK = 500

#: seconds a watch must run (at most ``watch_timeout``), if it delivers no event, to prove healthy
#: and start the backoff over
HEALTHY_WATCH = 10.0
#: what a list of an optional resource may be answered with to read as listed and empty
_ABSENT_CODES = frozenset({403, 404})

#: metadata keys State reads, by kind (every kind: name, namespace); labels only where read
_METADATA: dict[str, tuple[str, ...]] = {
    # the controller's status writes (uid, generation), retention and admission's deleting check
    "WorkerClass": ("uid", "generation", "deletionTimestamp", "finalizers"),
    # the worker controller's owner references to a pool's HelmRelease
    "HelmRelease": ("uid",),
    # the Events of a pool whose HelmRelease does not exist yet name the pool itself by it
    "KubernetesNodes": ("uid",),
}
#: ``spec`` keys State reads of a HelmRelease (:func:`~workerclass.state.pool_from_object`,
#: :func:`~workerclass.state.helm_release_name`; ``chartRef``: which chart the release runs); chart,
#: interval, install... are Flux's
_HELMRELEASE_SPEC = ("values", "releaseName", "targetNamespace", "chartRef")


def trimmed(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` reduced to what State and its readers use: apiVersion, kind, name and namespace, the
    spec (a HelmRelease's values, releaseName and targetNamespace), a HelmRelease's application
    label, and for a WorkerClass its uid, generation, deletionTimestamp, finalizers and status
    (the controller compares the status it would write). No managedFields, resourceVersion,
    annotations or other status. ``tests/state`` checks that State decides the same on trimmed
    objects as on whole ones."""
    out: dict[str, Any] = {"apiVersion": raw.get("apiVersion"), "kind": raw.get("kind")}
    metadata = raw.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    meta: dict[str, Any] = {key: metadata[key] for key in ("name", "namespace") if key in metadata}
    for key in _METADATA.get(kind, ()):
        if metadata.get(key) is not None:
            meta[key] = metadata[key]
    labels = metadata.get("labels")
    if kind == "HelmRelease" and isinstance(labels, Mapping) and APPLICATION_KIND_LABEL in labels:
        meta["labels"] = {APPLICATION_KIND_LABEL: labels[APPLICATION_KIND_LABEL]}
    out["metadata"] = meta
    spec = raw.get("spec")
    if kind == "HelmRelease" and isinstance(spec, Mapping):
        out["spec"] = {key: spec[key] for key in _HELMRELEASE_SPEC if key in spec}
    elif "spec" in raw:
        out["spec"] = spec
    if kind == INSTANCETYPE.kind:
        return out
    if kind == "WorkerClass" and "status" in raw:
        out["status"] = raw["status"]
    return out


#: metav1.StatusReason values: the only server-sent reasons quoted (any other text is the server's
#: own and could be anything); else the standard HTTP phrase of the code is used
STATUS_REASONS = frozenset(
    {
        "Unauthorized", "Forbidden", "NotFound", "AlreadyExists", "Conflict", "Gone", "Invalid",
        "ServerTimeout", "StoreReadError", "Timeout", "TooManyRequests", "BadRequest", "MethodNotAllowed",
        "NotAcceptable", "RequestEntityTooLarge", "UnsupportedMediaType", "InternalError", "Expired",
        "ServiceUnavailable",
    }
)  # fmt: skip


def status_code(error: BaseException) -> int | None:
    """The HTTP status code of a Kubernetes client error (lightkube's ``ApiError`` or an httpx
    status error), or ``None`` for an error without one (a connection error, a timeout)."""
    code = getattr(getattr(error, "status", None), "code", None)
    if code is None:
        response = getattr(error, "response", None)
        code = getattr(response, "status_code", None) if response is not None else None
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 999:
        return code
    return None


def short_error(error: BaseException) -> str:
    """An error from the Kubernetes client reduced to its status code and reason, or its type.

    Never the message or a response body: lightkube's ``ApiError`` carries the server's Status
    message (which may quote an object), httpx errors quote the request URL (a kubeconfig server
    URL can hold ``user:password@``), and a fake or broken server can send anything. The reason
    is a Kubernetes ``StatusReason`` value or the standard phrase of the HTTP code.
    """
    status = getattr(error, "status", None)
    code = getattr(status, "code", None)
    reason = getattr(status, "reason", None)
    if code is None:  # httpx.HTTPStatusError: the response's status
        response = getattr(error, "response", None)
        code = getattr(response, "status_code", None) if response is not None else None
        reason = None
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 999:
        if isinstance(reason, str) and reason in STATUS_REASONS:
            return f"{code} {reason}"
        try:
            return f"{code} {http.HTTPStatus(code).phrase}"
        except ValueError:
            return str(code)
    if isinstance(error, TimeoutError):
        return "TimeoutError (no answer in time)"
    return type(error).__name__


def client_timeout(
    *, list_timeout: float = 30.0, watch_timeout: float = 30, watch_margin: float = 10.0, connect: float = 10.0
) -> Any:
    """The ``Timeout`` of lightkube's HTTP library (httpx2 from lightkube 1.0, httpx before) to make
    a ``lightkube.AsyncClient`` for a :class:`ClusterCache` with (``AsyncClient(timeout=...)``).

    ``connect`` seconds to connect, write and wait for a pooled connection (lightkube's 10 s), and
    a read timeout of ``max(list_timeout, watch_timeout + watch_margin)``: the client never cuts a
    list page the cache's own ``list_timeout`` would let finish (lightkube's default 10 s would),
    nor a watch before the cache's deadline (lightkube sends watches without a read timeout). The
    defaults are the cache's; pass the ones the cache is made with.
    """
    from lightkube.config import client_adapter

    httpx = vars(client_adapter)["httpx"]  # the module lightkube builds its HTTP clients with
    return httpx.Timeout(connect, read=_read_timeout(list_timeout, watch_timeout, watch_margin))


def _read_timeout(list_timeout: float, watch_timeout: float, watch_margin: float) -> float:
    return max(float(list_timeout), watch_timeout + watch_margin)


class Backoff:
    """Doubling delays from ``base`` up to ``cap``, with equal jitter: each delay is half its step
    plus a random part of the other half (``jitter()`` in ``[0, 1)``, :func:`random.random` unless
    a test fixes it), so retries grow and retries that failed together spread apart."""

    def __init__(self, base: float, cap: float, jitter: Callable[[], float] = random.random) -> None:
        self.base = base
        self.cap = max(cap, base)
        self.jitter = jitter
        self.attempt = 0

    def next(self) -> float:
        """The delay before the next retry (and one step up for the one after)."""
        step = min(self.cap, self.base * 2.0**self.attempt)
        if step < self.cap:
            self.attempt += 1
        return step / 2 + step / 2 * min(max(self.jitter(), 0.0), 1.0)

    def reset(self) -> None:
        """Start over from ``base`` (a watch proved healthy)."""
        self.attempt = 0


class ChartKeeper(Protocol):
    """Keeps the chart the pools run current for a cache (``run`` calls :meth:`ClusterCache.set_chart`)."""

    @property
    def settled(self) -> bool: ...

    async def run(self, cache: Any) -> None: ...


class _Silent(Exception):
    """A watch that sent no event within its deadline (a connection that died without a word)."""


@dataclass(slots=True)
class _Progress:
    """How current one watched resource is (monotonic times)."""

    fresh_at: float | None = None
    failures: int = 0
    #: when the current run of failures began (``None`` while healthy)
    failing_since: float | None = None
    #: what failed last: ``"list"`` or ``"watch"``
    failed_in: str = ""


#: how many snapshots' changes the cluster cache keeps for :meth:`ClusterCache.changed_since`
CHANGE_LOG = 4096


class ClusterCache:
    """A :class:`~workerclass.webhook.sources.StateSource` kept current from the Kubernetes API.

    ``client`` is a ``lightkube.AsyncClient``; without one, one is made from the environment
    (in-cluster service account, ``KUBECONFIG`` or ``~/.kube/config``) on :meth:`start`, with a
    read timeout that fits the deadlines below (:func:`client_timeout`). A given client should be
    made with ``timeout=client_timeout(...)``; one whose read timeout is shorter has it raised on
    :meth:`start` (a list page slower than the read timeout would never finish otherwise).

    Liveness: a list has ``list_timeout`` seconds to finish; a watch asks the server to end it
    after ``watch_timeout`` seconds, and one that delivers no event for ``watch_timeout +
    watch_margin`` seconds is given up and the resource listed again (lightkube renews a watch the
    server ended without telling its caller, so a quiet resource is re-listed at that pace; a
    re-list applies only the objects whose trimmed form changed). A resource is *current* when it
    was listed or sent an event within ``stale_after`` seconds; once synced, ``reason`` names every
    resource that is not (with its last error, reduced to status code and reason), so the webhook
    reports not ready within ``stale_after`` of a source that froze or fails. An optional resource
    the API server does not serve or RBAC hides is read as empty and never stale
    (:attr:`warnings`). Retries back off (:class:`Backoff` from ``retry_delay`` to
    ``max_retry_delay``), starting over only after a healthy watch; ``sleep`` and ``jitter`` are
    injectable for tests, as is ``clock`` (monotonic seconds). :meth:`changed` announces new States
    (bursts within ``debounce`` seconds gathered into one wake-up).
    """

    def __init__(
        self,
        client: Any = None,
        *,
        resources: tuple[Resource, ...] = WATCHED,
        retry_delay: float = 1.0,
        max_retry_delay: float = 30.0,
        debounce: float = 0.0,
        watch_timeout: int = 30,
        watch_margin: float = 10.0,
        list_timeout: float = 30.0,
        stale_after: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        chart: ChartSource | None = None,
        charts: ChartKeeper | None = None,
    ) -> None:
        self._client = client
        #: the chart the cluster runs, carried by every snapshot (None: the shipped facts' chart)
        self.chart = chart
        #: what keeps :attr:`chart` current from the cluster (:class:`~workerclass.adapters.flux.ChartFollower`,
        #: started with the watches), when no chart was given
        self.charts = charts
        self.watch_timeout = watch_timeout
        self.watch_margin = watch_margin
        self.list_timeout = list_timeout
        self.stale_after = stale_after
        self._clock = clock
        self._sleep = sleep
        self._jitter = jitter
        self._owns_client = client is None
        self.resources = resources
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self._stores: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._listed: set[str] = set()
        self._errors: dict[str, str] = {}
        self._progress: dict[str, _Progress] = {watched.kind: _Progress() for watched in resources}
        #: optional resources last listed as absent (404 or 403), by kind: the warning that says so
        self._absent: dict[str, str] = {}
        self._state: State | None = None
        #: every new State, for :meth:`changed` (waiters woken at most once per ``debounce`` seconds)
        self.changes = Changes(debounce)
        #: the object each of the last :data:`CHANGE_LOG` snapshots changed, by generation (``None``:
        #: a snapshot rebuilt whole, or a new chart: anything may differ), for :meth:`changed_since`
        self._log: collections.deque[tuple[int, tuple[str, str, str] | None]] = collections.deque(maxlen=CHANGE_LOG)
        self._tasks: list[asyncio.Task[None]] = []
        #: events applied to the State, and events dropped because nothing read changed
        self.applied = 0
        self.dropped = 0
        #: objects not read because they are beyond :mod:`workerclass.api.bounds`, by (resource, reason)
        self.skipped: dict[tuple[str, str], int] = {}

    @property
    def read_timeout(self) -> float:
        """The client read timeout the cache's requests need (see :func:`client_timeout`)."""
        return _read_timeout(self.list_timeout, self.watch_timeout, self.watch_margin)

    @property
    def watch_deadline(self) -> float:
        """Seconds a watch may stay silent before it is given up (``watch_timeout + watch_margin``)."""
        return self.watch_timeout + self.watch_margin

    # ------------------------------------------------------------------ StateSource

    @property
    def state(self) -> State | None:
        return self._state

    @property
    def synced(self) -> bool:
        return self._state is not None

    @property
    def generation(self) -> int:
        """How many snapshots were made (the cold sync's included)."""
        return self.changes.version

    @property
    def published(self) -> int:
        """The generation :meth:`changed` last announced: what a waiter passes as ``after`` next."""
        return self.changes.published

    def changed_since(self, after: int) -> set[tuple[str, str, str]] | None:
        """The objects (kind, namespace, name) whose change made the snapshots after generation
        ``after`` up to :attr:`generation`; ``None`` when that cannot be told (a snapshot rebuilt
        whole or a new chart among them, or more of them than the log keeps): the caller then
        looks at everything."""
        if after >= self.changes.version:
            return set()
        if not self._log or self._log[0][0] > after + 1:
            return None
        out: set[tuple[str, str, str]] = set()
        for version, key in reversed(self._log):
            if version <= after:
                break
            if key is None:
                return None
            out.add(key)
        return out

    async def changed(self, after: int) -> int:
        """Wait for a State newer than generation ``after`` (a burst within ``debounce`` seconds of its
        first change is announced once, with its last State); return the generation announced.
        :attr:`state` itself is always the newest: only the wake-up is gathered."""
        return await self.changes.wait(after)

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per optional resource read as empty because its list was answered 404 or 403,
        e.g. ``computeplanes.apps.cozystack.io: not served by the API server (404 NotFound); read
        as empty``, in :attr:`resources` order; empty while every resource is served."""
        return tuple(self._absent[watched.kind] for watched in self.resources if watched.kind in self._absent)

    @property
    def notes(self) -> tuple[str, ...]:
        """Platform facts for ``/readyz``, said there rather than in every answer (a tenant cannot act
        on them): each of :attr:`warnings`, then what the chart follower says while no chart is known
        (its ``note``)."""
        note = getattr(self.charts, "note", "") if self.charts is not None else ""
        return self.warnings + ((note,) if isinstance(note, str) and note else ())

    @property
    def absent(self) -> dict[str, str]:
        """The optional resources read as empty, by name: ``not_served`` (404) or ``forbidden`` (403)."""
        return {
            watched.name: ("not_served" if "not served" in self._absent[watched.kind] else "forbidden")
            for watched in self.resources
            if watched.kind in self._absent
        }

    @property
    def reason(self) -> str:
        if self._state is not None:
            if self.charts is not None and not self.charts.settled:
                return "waiting for the first read of the chart the pools run (Flux's source API)"
            return self._stale_reason()
        missing = [watched.name for watched in self.resources if watched.kind not in self._listed]
        text = "the cluster cache has not synced: waiting for the first list of " + ", ".join(missing)
        messages = set(self._errors.values())
        if len(messages) == 1 and len(self._errors) > 1:  # one cause for all (the API is unreachable)
            text += f" (last error of each: {messages.pop()})"
        elif self._errors:
            names = {watched.kind: watched.name for watched in self.resources}
            errors = [f"{names.get(kind, kind)}: {error}" for kind, error in sorted(self._errors.items())]
            text += " (last errors: " + "; ".join(errors) + ")"
        return text

    def _absent_and_current(self, watched: Resource) -> bool:
        """An optional resource whose last answer was "not served" (or "forbidden"), with no failure since."""
        return watched.kind in self._absent and self._progress[watched.kind].failing_since is None

    def _stale_reason(self) -> str:
        now = self._clock()
        stale: list[str] = []
        for watched in self.resources:
            progress = self._progress[watched.kind]
            if progress.fresh_at is None or self._absent_and_current(watched):
                continue
            age = now - progress.fresh_at
            if age > self.stale_after:
                error = self._errors.get(watched.kind)
                stale.append(f"{watched.name} for {age:.0f}s" + (f" (last error: {error})" if error else ""))
        if not stale:
            return ""
        return (
            f"the cluster cache is stale (answering from the last good state): not current within "
            f"{self.stale_after:g}s: " + "; ".join(stale)
        )

    def staleness(self) -> tuple[str, ...]:
        """Warning lines for an answer decided on the current snapshot: empty while it is fully current.

        A resource is *not fully current* when it failed (a list or watch error) since it was last
        current, or was last current longer ago than :attr:`watch_deadline` (its watch went silent
        and it is being listed again, or the list hangs). Each such resource gives one line, e.g.
        ``workerclass: deciding on helmreleases.helm.toolkit.fluxcd.io as of 12s ago (watch failed,
        500 Internal Server Error)``. The
        lines carry resource names, ages and :func:`short_error` texts only, mostly within the 120
        characters the API recommends (the longest resource name makes a line of about 130; the
        webhook cuts any at 256). Nothing before the first sync (the webhook refuses then). An
        optional resource read as empty is a fact of the platform, not of the answer: it is said in
        :attr:`notes` (``/readyz``), :attr:`absent` (a metric) and the log, never here.
        """
        if self._state is None:
            return ()
        now = self._clock()
        deadline = self.watch_deadline
        lines: list[str] = []
        for watched in self.resources:
            progress = self._progress[watched.kind]
            if progress.fresh_at is None or self._absent_and_current(watched):
                continue
            age = max(0.0, now - progress.fresh_at)
            if progress.failing_since is not None:
                error = self._errors.get(watched.kind, "an error")
                cause = f"{progress.failed_in or 'list'} failed, {error}"
            elif age > deadline:
                cause = f"no watch event or list in {deadline:g}s"  # silent: being listed again
            else:
                continue
            lines.append(f"workerclass: deciding on {watched.name} as of {age:.0f}s ago ({cause})")
        return tuple(lines)

    def sync_reports(self) -> Sequence[SyncReport]:
        now = self._clock()
        return tuple(
            replace(
                age_report(
                    watched.name, self._progress[watched.kind].fresh_at, self._progress[watched.kind].failures, now
                ),
                skipped=sum(count for (name, _), count in self.skipped.items() if name == watched.name),
            )
            for watched in self.resources
        )

    async def start(self) -> None:
        if self._client is None:
            from lightkube import AsyncClient

            self._client = AsyncClient(
                field_manager="workerclass-webhook",
                timeout=client_timeout(
                    list_timeout=self.list_timeout, watch_timeout=self.watch_timeout, watch_margin=self.watch_margin
                ),
            )
        else:
            self._fit_read_timeout()
        self._tasks = [
            asyncio.create_task(self._follow(watched), name=f"workerclass-watch-{watched.plural}")
            for watched in self.resources
        ]
        if self.charts is not None:
            self._tasks.append(asyncio.create_task(self.charts.run(self), name="workerclass-charts"))

    def set_chart(self, chart: ChartSource | None) -> None:
        """The chart the pools run (None: the shipped facts'): carried by the current snapshot and
        every later one (the chart follower calls this on every change)."""
        self.chart = chart
        if self._state is not None:
            self._state = self._state.with_chart(chart if chart is not None else ChartSource.shipped())
            self.changes.bump()
            self._log.append((self.changes.version, None))

    def _fit_read_timeout(self) -> None:
        """Raise a given lightkube client's read timeout to :attr:`read_timeout` when it is shorter.

        lightkube's ``list`` takes no per-request timeout: its requests use the HTTP client's
        (``AsyncClient`` -> its generic client -> the httpx client, whose ``timeout`` is public).
        A client of another shape (a test double) is left as it is.
        """
        try:
            http_client = self._client._client._client
            current = http_client.timeout
            read = current.read
        except AttributeError:
            return
        if not isinstance(read, int | float) or read >= self.read_timeout:
            return  # no read timeout, or a long enough one
        try:
            http_client.timeout = type(current)(
                connect=current.connect, read=self.read_timeout, write=current.write, pool=current.pool
            )
        except Exception as error:  # an HTTP library of another shape: say so, the lists may be cut
            logger.warning(
                "the Kubernetes client's read timeout (%gs) is shorter than list_timeout (%gs) and could not be "
                "raised (%s): make the client with timeout=client_timeout()",
                read,
                self.list_timeout,
                type(error).__name__,
            )
            return
        logger.info(
            "the Kubernetes client's read timeout was %gs: raised to %gs for the cache's lists (list_timeout %gs)",
            read,
            self.read_timeout,
            self.list_timeout,
        )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self.changes.close()
        if self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None

    async def wait_synced(self, timeout: float | None = None) -> State:
        """The first synced state (for tests and tools); raises TimeoutError."""
        async with asyncio.timeout(timeout):
            while self._state is None:
                await self.changed(self.published)
        assert self._state is not None
        return self._state

    async def fresher(self, kinds: Collection[str], namespace: str | None = None) -> State | None:
        """The newest snapshot with ``kinds`` as the API server holds them now, or ``None`` when the
        watches already hold exactly that.

        For the webhook, before a decision that rests on an object not being there (a denial of
        :data:`~workerclass.api.resources.LOOKED_UP`, a WorkerClass DELETE no pool stands in the way
        of): a watch delivers a write moments after the API server made it, so a pool created right
        after its class would otherwise be denied ``ClassNotFound`` by a cache that has not heard of
        the class yet. ``kinds`` are listed (namespaced ones in ``namespace`` only; ``None``: in every
        namespace), and what differs from the stores is applied to a copy of the current snapshot.
        The stores are left to the watches: a list applied there could be overtaken by an older
        event still on its way. An optional resource read as absent is not listed; a failed list
        raises (the caller keeps the decision it has).
        """
        chosen = [
            watched for watched in self.resources if watched.kind in kinds and not self._absent_and_current(watched)
        ]
        if self._state is None or self._client is None or not chosen:
            return None
        listings = await asyncio.gather(
            *(self._list(watched, self._resource(watched), self._scope(watched, namespace)) for watched in chosen)
        )
        current = self._state  # the stores are this snapshot's objects: nothing was awaited from here on
        if current is None:
            return None
        fresh = current
        for watched, (items, _version) in zip(chosen, listings, strict=True):
            held = self._stores.get(watched.kind, {})
            if watched.namespaced and namespace is not None:
                held = {key: obj for key, obj in held.items() if key[0] == namespace}
            for key in held.keys() - items.keys():
                fresh = fresh.without(watched.kind, *key)
            for key, obj in items.items():
                if held.get(key) != obj:
                    fresh = fresh.with_object(obj)
        return None if fresh is current else fresh

    # ------------------------------------------------------------------ list + watch

    def _normalized(self, watched: Resource, obj: Any) -> tuple[tuple[str, str], dict[str, Any]] | None:
        raw = obj.to_dict() if hasattr(obj, "to_dict") else obj
        if not isinstance(raw, dict):
            return None
        raw = dict(raw)
        found = request_excess(raw)
        if found is not None:
            # one tenant's object beyond the bounds is skipped, said, and never walked: every reader
            # of a State built with it would fail, and so would the webhook for every tenant
            metadata = raw.get("metadata")
            self._skip(watched, metadata if isinstance(metadata, dict) else {}, found.reason, found.message)
            return None
        # List items of custom resources carry apiVersion and kind; fill them when a server leaves them out.
        raw.setdefault("apiVersion", watched.api_version)
        raw.setdefault("kind", watched.kind)
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            return None
        namespace = metadata.get("namespace") or ""
        return (namespace if isinstance(namespace, str) else "", metadata["name"]), trimmed(watched.kind, raw)

    def _skip(self, watched: Resource, metadata: Mapping[str, Any], reason: str, message: str) -> None:
        """Count and say an object that is not read (its namespace and name, never its content)."""
        key = (watched.name, reason)
        self.skipped[key] = self.skipped.get(key, 0) + 1
        namespace, name = metadata.get("namespace"), metadata.get("name")
        shown = "/".join(part for part in (namespace, name) if isinstance(part, str) and part) or "(unnamed)"
        logger.warning("%s %s is skipped: it %s (fix or delete it)", watched.kind, shown[:300], message)

    def _fresh(self, watched: Resource) -> None:
        progress = self._progress[watched.kind]
        progress.fresh_at = self._clock()
        progress.failing_since = None

    async def _list(self, watched: Resource, resource: Any, scope: dict[str, Any]) -> tuple[dict[Any, Any], str | None]:
        async with asyncio.timeout(self.list_timeout):
            listing = self._client.list(resource, chunk_size=LIST_CHUNK, **scope)
            items: dict[tuple[str, str], dict[str, Any]] = {}
            async for obj in listing:
                entry = self._normalized(watched, obj)
                if entry is not None:
                    items[entry[0]] = entry[1]
        try:
            version: str | None = listing.resourceVersion
        except Exception:  # an empty list page may carry none: watch from "now"
            version = None
        return items, version

    def _store(self, watched: Resource, items: dict[tuple[str, str], dict[str, Any]]) -> None:
        """A list's answer (``items``; empty for an absent optional resource): stored, applied, current."""
        previous = self._stores.get(watched.kind)
        self._stores[watched.kind] = items
        self._listed.add(watched.kind)
        self._errors.pop(watched.kind, None)
        self._fresh(watched)
        self._relisted(watched, previous or {}, items)

    def _listed_absent(self, watched: Resource, error: BaseException) -> None:
        """An optional resource whose list was answered 404 or 403: listed and empty, said once per change."""
        what = "not served by the API server" if status_code(error) == 404 else "hidden by RBAC"
        text = f"{watched.name}: {what} ({short_error(error)}); read as empty"
        self._store(watched, {})
        if self._absent.get(watched.kind) != text:
            self._absent[watched.kind] = text
            logger.warning("%s; probing it again with backoff", text)

    @staticmethod
    def _resource(watched: Resource) -> Any:
        """lightkube's generic resource class for ``watched`` (lightkube keeps one per kind)."""
        from lightkube.generic_resource import create_global_resource, create_namespaced_resource

        factory = create_namespaced_resource if watched.namespaced else create_global_resource
        return factory(watched.group, watched.version, watched.kind, watched.plural)

    @staticmethod
    def _scope(watched: Resource, namespace: str | None = None) -> dict[str, Any]:
        """The list and watch arguments for ``watched``: its namespace (``None``: every one) and labels."""
        scope: dict[str, Any] = {"namespace": namespace or "*"} if watched.namespaced else {}
        if watched.labels:
            scope["labels"] = dict(watched.labels)
        return scope

    async def _follow(self, watched: Resource) -> None:
        resource = self._resource(watched)
        scope = self._scope(watched)
        backoff = Backoff(self.retry_delay, self.max_retry_delay, self._jitter)
        deadline = self.watch_deadline
        healthy_after = min(float(self.watch_timeout), HEALTHY_WATCH)
        progress = self._progress[watched.kind]
        while True:
            phase = "list"
            started = self._clock()
            try:
                try:
                    items, version = await self._list(watched, resource, scope)
                except Exception as error:
                    if not (watched.optional and status_code(error) in _ABSENT_CODES):
                        raise
                    self._listed_absent(watched, error)
                    await self._sleep(backoff.next())
                    continue
                first = watched.kind not in self._listed
                self._store(watched, items)
                if self._absent.pop(watched.kind, None) is not None:
                    logger.info("%s: served now; listed %d", watched.name, len(items))
                elif first:
                    logger.info("listed %d %s", len(items), watched.name)
                phase = "watch"
                started = self._clock()
                watch = self._client.watch(
                    resource, resource_version=version, server_timeout=self.watch_timeout, **scope
                )
                events = aiter(watch)
                try:
                    while True:
                        try:
                            async with asyncio.timeout(deadline):
                                event, obj = await anext(events)
                        except TimeoutError:
                            raise _Silent from None
                        except StopAsyncIteration:
                            break
                        backoff.reset()  # the watch delivers: healthy
                        self._fresh(watched)
                        if event not in ("ADDED", "MODIFIED", "DELETED"):
                            continue  # BOOKMARK: nothing changed
                        entry = self._normalized(watched, obj)
                        if entry is not None:
                            self._event(watched, items, entry[0], None if event == "DELETED" else entry[1])
                finally:
                    close = getattr(events, "aclose", None)
                    if close is not None:
                        with contextlib.suppress(Exception):
                            await close()
                # The watch ended without an error (lightkube renews the ones the server ends, so
                # rarely): list again, after a backoff unless it ran long enough to be healthy.
                if self._clock() - started >= healthy_after:
                    backoff.reset()
                else:
                    delay = backoff.next()
                    logger.debug("%s: the watch ended at once; listing again in %.1fs", watched.name, delay)
                    await self._sleep(delay)
            except asyncio.CancelledError:
                raise
            except _Silent:
                # Expected on a quiet resource (lightkube renews ended watches silently); the list proves liveness.
                backoff.reset()  # silent for a whole deadline: it ran long enough to be healthy
                logger.debug("%s: no watch event in %gs; listing again", watched.name, deadline)
                continue
            except Exception as error:
                if phase == "watch" and self._clock() - started >= healthy_after:
                    backoff.reset()  # a watch that ran a while broke: retry soon
                message = short_error(error)
                self._errors[watched.kind] = message
                progress.failures += 1
                progress.failed_in = phase
                if progress.failing_since is None:
                    progress.failing_since = self._clock()
                delay = backoff.next()
                logger.warning("%s: %s failed (%s); listing again in %.1fs", watched.name, phase, message, delay)
                await self._sleep(delay)

    def _event(
        self,
        watched: Resource,
        items: dict[tuple[str, str], dict[str, Any]],
        key: tuple[str, str],
        obj: dict[str, Any] | None,
    ) -> None:
        """One watch event: stored and applied to the State, or dropped when nothing read changed."""
        if items.get(key) == obj:
            self.dropped += 1
            return
        if obj is None:
            del items[key]
        else:
            items[key] = obj
        self.applied += 1
        self._apply(watched, key, obj)

    def _apply(self, watched: Resource, key: tuple[str, str], obj: dict[str, Any] | None) -> None:
        if self._state is None:
            return  # the first State is built from the complete lists
        try:
            state = self._state.without(watched.kind, *key) if obj is None else self._state.with_object(obj)
        except Exception as error:  # a State bug must not end the cache: rebuild from the stores instead
            logger.error(
                "applying a %s event failed: %s at %s; rebuilding", watched.kind, type(error).__name__, where(error)
            )
            self._rebuild()
            return
        if state is not self._state:
            self._state = state
            self.changes.bump()
            self._log.append((self.changes.version, (watched.kind, *key)))

    def _relisted(
        self,
        watched: Resource,
        previous: Mapping[tuple[str, str], dict[str, Any]],
        items: Mapping[tuple[str, str], dict[str, Any]],
    ) -> None:
        """A list: the first State once every resource is listed, else what changed since the last list."""
        if self._state is None:
            if all(other.kind in self._listed for other in self.resources):
                self._rebuild()
            return
        for key in previous.keys() - items.keys():
            self._apply(watched, key, None)
        for key, obj in items.items():
            if previous.get(key) != obj:
                self._apply(watched, key, obj)

    def _rebuild(self) -> None:
        objects = [obj for store in self._stores.values() for obj in store.values()]
        try:
            state = State.from_objects(objects)
            if self.chart is not None:
                state = state.with_chart(self.chart)
        except Exception as error:  # a builder bug must not end the cache; keep the previous snapshot
            # its type and where, never its message (it may quote an object's values)
            logger.error(
                "building the state from %d objects failed: %s at %s", len(objects), type(error).__name__, where(error)
            )
            return
        if self._state is None:
            logger.info("cluster cache synced: %d objects", len(objects))
        self._state = state
        self.changes.bump()
        self._log.append((self.changes.version, None))


def resource_class(api_version: str, kind: str, plural: str, *, namespaced: bool) -> Any:
    """lightkube's class for a kind: one of its models (ServiceAccount, Job, Role...), else a
    generic resource registered for it (a custom resource). The worker controller and the live
    preflight address the kinds the chart renders through this."""
    from lightkube.core.resource_registry import resource_registry
    from lightkube.generic_resource import create_global_resource, create_namespaced_resource

    found = resource_registry.get(api_version, kind)
    if found is None:
        try:
            found = resource_registry.load(api_version, kind)
        except Exception:  # not one of lightkube's models: a custom resource
            group, _, version = api_version.rpartition("/")
            factory = create_namespaced_resource if namespaced else create_global_resource
            found = factory(group, version, kind, plural)
    return found
