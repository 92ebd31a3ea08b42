"""The chart the cluster's pools run, read through Flux's source API and kept current.

Cozystack serves KubernetesNodes from the ApplicationDefinition ``kubernetes-nodes``
(``cozystack.io/v1alpha1``, cluster-scoped), whose ``spec.release.chartRef`` every pool's HelmRelease
gets: a Flux source (an ``ExternalArtifact`` in ``cozy-system`` today; a ``HelmChart`` or an
``OCIRepository`` are the other kinds a HelmRelease may name). Its ``status.artifact`` is the packaged
chart: a ``url`` that source-controller serves and the ``digest`` of its bytes. :class:`ChartFollower`
reads that reference (a pool HelmRelease's own ``chartRef`` where the ApplicationDefinition is not
served), downloads the artifact when its digest changes, checks the bytes against the digest, and hands
the chart (:class:`~workerclass.chart.source.ChartSource`: its identity and its text) to the cluster
cache, which puts it into every State it makes: admission then follows that chart's rules and refuses a
class-selecting write where it lacks the chart gate (``ChartNotGated``), and the worker controller
renders with its text.

What it says when it cannot tell (:attr:`ChartFollower.problem`): the reference names no source, the
source has no artifact yet, the download failed, the bytes do not match the digest, or they are no
chart. The chart in effect is then "unverified" (:meth:`ChartSource.unverified`), and admission fails
closed for class-selecting writes only: classless pools never depend on it. Where nothing in the
cluster names a chart at all (no ApplicationDefinition, no pool HelmRelease with a ``chartRef``: not a
Cozystack cluster), nothing is checked and the shipped facts apply.

Polling, not watching: one ``get`` of the ApplicationDefinition and one of the source every
``interval`` seconds (two objects; a watch of every Flux source in the cluster would cost more), and a
download only when the digest changes. Downloads are bounded (:data:`~.chart.MAX_CHART_BYTES`, ``timeout``)
and their URL is never logged or reported (it names the cluster's internals); errors are reduced to
their type or HTTP status.

Its edge: lightkube ``get`` calls and one HTTP client (aiohttp) in, ChartSources out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api.resources import APPLICATION_DEFINITION, CHART_SOURCES, HELM_RELEASE, POOL_APPLICATION
from ..chart.source import ChartSource
from ..state import State
from .chart import MAX_CHART_BYTES, ChartReadError, chart_archive_files, with_engine
from .helm import helm_engine
from .kube import short_error, status_code

__all__ = ["ChartFollower", "ChartRef", "artifact_of", "chart_ref", "verify_digest"]

logger = logging.getLogger("workerclass.charts")

#: the digest algorithms Flux may write (``--artifact-digest-algo``) that hashlib has
_ALGORITHMS = frozenset({"sha256", "sha384", "sha512", "sha1"})


@dataclass(frozen=True, slots=True)
class ChartRef:
    """A Flux source a release takes its chart from (a HelmRelease's ``chartRef``)."""

    kind: str
    namespace: str
    name: str

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Artifact:
    """A source's ``status.artifact``: where source-controller serves it, its digest and revision."""

    url: str
    digest: str
    revision: str


def chart_ref(value: Any, default_namespace: str = "") -> ChartRef | None:
    """A ``chartRef`` mapping (``kind``, ``name``, optional ``namespace``) as a :class:`ChartRef`."""
    if not isinstance(value, Mapping):
        return None
    kind, name = value.get("kind"), value.get("name")
    namespace = value.get("namespace") or default_namespace
    if not (isinstance(kind, str) and kind in CHART_SOURCES and isinstance(name, str) and name):
        return None
    return ChartRef(kind, str(namespace), name)


def artifact_of(source: Mapping[str, Any]) -> Artifact | None:
    """The artifact a Flux source object holds, or None while it has none."""
    status = source.get("status")
    artifact = status.get("artifact") if isinstance(status, Mapping) else None
    if not isinstance(artifact, Mapping):
        return None
    url, digest = artifact.get("url"), artifact.get("digest")
    if not (isinstance(url, str) and url and isinstance(digest, str) and digest):
        return None
    return Artifact(url, digest, str(artifact.get("revision") or ""))


def verify_digest(data: bytes, digest: str) -> str:
    """``""`` when ``data`` has ``digest`` (``<algorithm>:<hex>``, as Flux writes it), else why not."""
    algorithm, _, expected = digest.partition(":")
    if algorithm not in _ALGORITHMS or not expected:
        return f"its digest uses {algorithm or 'no'} algorithm, which workerclass cannot check"
    if hashlib.new(algorithm, data).hexdigest() != expected.lower():
        return "the downloaded bytes do not match the artifact's digest"
    return ""


def _plain(obj: Any) -> dict[str, Any]:
    raw = obj.to_dict() if hasattr(obj, "to_dict") else obj
    return dict(raw) if isinstance(raw, Mapping) else {}


Fetch = Callable[[str, float, int], Awaitable[bytes]]


async def _aiohttp_fetch(url: str, timeout: float, limit: int) -> bytes:
    """GET ``url`` (source-controller's artifact server) within ``timeout`` seconds and ``limit`` bytes."""
    import aiohttp

    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
        session.get(url) as response,
    ):
        if response.status != 200:
            raise _FetchError(f"the artifact server answered {response.status}")
        data = bytearray()
        async for chunk in response.content.iter_chunked(65536):
            data += chunk
            if len(data) > limit:
                raise _FetchError(f"the artifact is larger than {limit // (1024 * 1024)} MiB")
        return bytes(data)


class _FetchError(Exception):
    """A download that failed in a way worth saying (a status, a size): its text is ours."""


class ChartFollower:
    """Keeps the chart the pools run current for a cluster cache (see the module).

    ``client`` is a ``lightkube.AsyncClient``; ``fetch`` downloads an artifact (tests give their own);
    ``interval`` seconds between reads of the reference and its source.
    """

    def __init__(
        self,
        client: Any,
        *,
        interval: float = 10.0,
        timeout: float = 30.0,
        fetch: Fetch | None = None,
    ) -> None:
        self._client = client
        self.interval = interval
        self.timeout = timeout
        self._fetch = fetch or _aiohttp_fetch
        #: charts read, by artifact digest (a digest names the same bytes for ever)
        self._charts: dict[str, ChartSource] = {}
        #: the chart in effect: None while nothing names a chart (not a Cozystack cluster)
        self.chart: ChartSource | None = None
        #: why the chart in effect cannot be verified ("" when it is, or when nothing names one)
        self.problem = ""
        #: whether one read has finished (the webhook is not ready before)
        self.settled = False

    async def _get(self, group: str, version: str, kind: str, plural: str, name: str, namespace: str | None) -> Any:
        from lightkube.generic_resource import create_global_resource, create_namespaced_resource

        if namespace is None:
            return await self._client.get(create_global_resource(group, version, kind, plural), name)
        return await self._client.get(
            create_namespaced_resource(group, version, kind, plural), name, namespace=namespace
        )

    async def reference(self, state: State | None) -> ChartRef | str | None:
        """The source the pools take their chart from: the ApplicationDefinition's ``chartRef``, else
        (not served) the one most pool HelmReleases name; None when nothing names one; a string when
        the ApplicationDefinition cannot be read (why)."""
        row = APPLICATION_DEFINITION
        try:
            definition = _plain(await self._get(row.group, row.version, row.kind, row.plural, POOL_APPLICATION, None))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if status_code(error) != 404:
                return f"reading {row.kind} {POOL_APPLICATION} failed ({short_error(error)})"
            return _most_named(state)
        release = (definition.get("spec") or {}).get("release") or {}
        found = chart_ref(release.get("chartRef"))
        if found is None:
            return f"{row.kind} {POOL_APPLICATION} names no Flux source as its release's chartRef"
        return found

    async def read(self, ref: ChartRef) -> ChartSource:
        """The chart ``ref``'s artifact holds (from the cache when its digest was read before)."""
        row = CHART_SOURCES[ref.kind]
        try:
            source = _plain(await self._get(row.group, row.version, row.kind, row.plural, ref.name, ref.namespace))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            return ChartSource.unverified(f"reading {ref.describe()} failed ({short_error(error)})")
        artifact = artifact_of(source)
        if artifact is None:
            return ChartSource.unverified(f"{ref.describe()} has no artifact yet")
        cached = self._charts.get(artifact.digest)
        if cached is not None:
            return cached
        try:
            data = await self._fetch(artifact.url, self.timeout, MAX_CHART_BYTES)
        except asyncio.CancelledError:
            raise
        except _FetchError as error:
            return ChartSource.unverified(f"downloading the artifact of {ref.describe()} failed: {error}")
        except Exception as error:  # never the URL: it names the cluster's internals
            return ChartSource.unverified(
                f"downloading the artifact of {ref.describe()} failed ({type(error).__name__})"
            )
        mismatch = verify_digest(data, artifact.digest)
        if mismatch:
            return ChartSource.unverified(f"the artifact of {ref.describe()}: {mismatch}")
        try:
            files = chart_archive_files(data, origin=f"the artifact of {ref.describe()}")
        except ChartReadError as error:
            return ChartSource.unverified(str(error))
        revision = f" revision {artifact.revision}" if artifact.revision else ""
        chart = ChartSource.from_files(
            files, origin=f"{ref.describe()}{revision}", artifacts=frozenset({artifact.digest})
        )
        if not chart.known:  # Helm's engine renders it where the extra is installed, and shows its gate
            engine = helm_engine(files)
            if engine is not None:
                chart = with_engine(chart, engine)
        self._charts = {artifact.digest: chart}  # the previous one is not needed again
        return chart

    async def refresh(self, state: State | None) -> ChartSource | None:
        """One read: the chart in effect now (None: nothing names one), also kept in :attr:`chart`."""
        ref = await self.reference(state)
        if ref is None:
            chart: ChartSource | None = None
        elif isinstance(ref, str):
            chart = ChartSource.unverified(ref)
        else:
            chart = await self.read(ref)
        previous, self.chart = self.chart, chart
        self.problem = chart.problem if chart is not None else ""
        self.settled = True
        if chart != previous or (chart is not None and previous is not None and chart.problem != previous.problem):
            if chart is None:
                logger.warning("no ApplicationDefinition or pool release names a chart: the chart gate is not checked")
            elif chart.problem:
                logger.warning("the chart the pools run cannot be verified: %s", chart.problem)
            else:
                logger.info("the pools run %s", chart.describe())
        return chart

    async def run(self, cache: Any, *, stop: asyncio.Event | None = None) -> None:
        """Read every ``interval`` seconds and hand each change to ``cache.set_chart``.

        The first read waits for the cache's first State (``cache.wait_synced``, where it has one):
        read before it, the pools' releases are unknown and the read would settle on no chart. That
        first read is always handed over, so the cache announces a State once the chart is known
        (what the controller waits for before its first pass)."""
        stop = stop or asyncio.Event()
        synced = getattr(cache, "wait_synced", None)
        if synced is not None:
            waiting = asyncio.ensure_future(synced())
            stopping = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait([waiting, stopping], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (waiting, stopping):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
        first = True
        while not stop.is_set():
            try:
                before = self.chart
                chart = await self.refresh(cache.state)
                if chart is not before or first:
                    cache.set_chart(chart)
                first = False
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug must not end the loop: say where, try again
                logger.error("reading the chart the pools run failed (%s)", type(error).__name__, exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval)


def _most_named(state: State | None) -> ChartRef | None:
    """The ``chartRef`` most pool HelmReleases in ``state`` name (ties: the first in name order)."""
    if state is None:
        return None
    counts: dict[ChartRef, int] = {}
    for pool in state.pools.values():
        stored = (
            state.records.get((HELM_RELEASE.kind, pool.namespace, pool.name))
            if pool.kind == HELM_RELEASE.kind
            else None
        )
        if stored is None:
            continue
        ref = chart_ref(((stored.obj.get("spec") or {}).get("chartRef")), pool.namespace)
        if ref is not None:
            counts[ref] = counts.get(ref, 0) + 1
    if not counts:
        return None
    return sorted(counts, key=lambda ref: (-counts[ref], ref.namespace, ref.name))[0]
