"""The chart the cluster's pools run, read through Flux's source API and kept current.

Cozystack serves KubernetesNodes from the ApplicationDefinition ``kubernetes-nodes``
(``cozystack.io/v1alpha1``, cluster-scoped), whose ``spec.release.chartRef`` every pool's HelmRelease
gets: a Flux source (an ``ExternalArtifact`` in ``cozy-system`` today; a ``HelmChart`` or an
``OCIRepository`` are the other kinds a HelmRelease may name). Its ``status.artifact`` is the packaged
chart: a ``url`` that source-controller serves and the ``digest`` of its bytes. :class:`ChartFollower`
reads that reference, or the source the hoster names (``serve --chart-source``, :func:`parse_chart_source`),
downloads the artifact when its digest changes, checks the bytes against the digest, and hands the
chart (:class:`~workerclass.chart.source.ChartSource`: its identity and its text) to the cluster cache,
which puts it into every State it makes: admission then follows that chart's rules and refuses a
class-selecting write where it lacks the chart gate (``ChartNotGated``), and the worker controller
renders with its text.

Only the hoster chooses the chart: the ApplicationDefinition and the setting are the hoster's objects;
a pool HelmRelease's own ``chartRef`` is never read here: a tenant writes those in its namespace, and
no tenant may choose the chart every tenant's pools are judged and rendered by.

What it says when it cannot tell (:attr:`ChartFollower.problem`): the reference names no source, the
source has no artifact yet, the download failed, the bytes do not match the digest, or they are no
chart. The chart in effect is then "unverified" (:meth:`ChartSource.unverified`), and admission fails
closed for class-selecting writes only: classless pools never depend on it. Where nothing names a
chart at all (no ApplicationDefinition served, no ``--chart-source``: not a Cozystack cluster, or an
older one), no chart is known: nothing is checked, the shipped facts apply, and
:attr:`ChartFollower.note` says so (logged as a warning, and shown by the webhook's ``/readyz``).

Polling, not watching: one ``get`` of the ApplicationDefinition and one of the source every
``interval`` seconds (two objects; a watch of every Flux source in the cluster would cost more), and a
download only when the digest changes. Downloads (:func:`download`) are bounded (:data:`~.chart.MAX_CHART_BYTES`,
``timeout``, :data:`MAX_REDIRECTS`), follow a redirect only to the artifact's own scheme, host and
port, and are checked against a ``sha256:`` digest only (another algorithm is refused, not skipped).
Their URL is never logged or reported (it names the cluster's internals): errors are reduced to their
type, an HTTP status, or the hosts of a refused redirect.

Its edge: lightkube ``get`` calls and one HTTP client (aiohttp) in, ChartSources out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api.resources import APPLICATION_DEFINITION, CHART_SOURCES, POOL_APPLICATION
from ..chart.source import ChartSource
from .chart import MAX_CHART_BYTES, ChartReadError, chart_archive_files, with_engine
from .helm import helm_engine
from .kube import short_error, status_code

__all__ = [
    "MAX_REDIRECTS",
    "NO_CHART_KNOWN",
    "ArtifactDownloadError",
    "ChartFollower",
    "ChartRef",
    "artifact_of",
    "chart_ref",
    "download",
    "parse_chart_source",
    "verify_digest",
]

logger = logging.getLogger("workerclass.charts")

#: the one digest form checked: what source-controller writes by default (``--artifact-digest-algo``);
#: another algorithm is refused, never skipped, so a weaker one cannot stand in for it
_SHA256 = re.compile(r"sha256:[0-9a-fA-F]{64}")
#: redirects followed (to the artifact's own scheme, host and port only): source-controller answers
#: without any; a few leave room for a proxy in front of it, and a loop ends
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


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


#: a namespace name (RFC 1123 label) and an object name (RFC 1123 subdomain), as the API server takes them
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def parse_chart_source(text: str) -> ChartRef:
    """The hoster's ``--chart-source KIND/NAMESPACE/NAME`` as a :class:`ChartRef`, or ValueError saying
    what is wrong (the kind one of the Flux sources a HelmRelease may name)."""
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"--chart-source {text!r}: give KIND/NAMESPACE/NAME, e.g. ExternalArtifact/cozy-system/NAME")
    kind, namespace, name = parts
    if kind not in CHART_SOURCES:
        kinds = sorted(CHART_SOURCES)
        raise ValueError(
            f"--chart-source {text!r}: the kind must be {', '.join(kinds[:-1])} or {kinds[-1]} (a Flux source)"
        )
    if not _LABEL.fullmatch(namespace):
        raise ValueError(f"--chart-source {text!r}: {namespace!r} is not a namespace name")
    if not _SUBDOMAIN.fullmatch(name):
        raise ValueError(f"--chart-source {text!r}: {name!r} is not an object name")
    return ChartRef(kind, namespace, name)


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
    """``""`` when ``data`` has ``digest`` (``sha256:<64 hex>``, as Flux writes it), else why not; a
    digest of any other form or algorithm is refused (the chart is then not verified)."""
    if not _SHA256.fullmatch(digest):
        algorithm = digest.partition(":")[0] if ":" in digest else "no algorithm"
        return (
            f"its digest ({algorithm[:32]}) is not sha256:<64 hex digits>, the only form workerclass checks "
            "(Flux's --artifact-digest-algo=sha256, its default)"
        )
    if hashlib.sha256(data).hexdigest() != digest.partition(":")[2].lower():
        return "the downloaded bytes do not match the artifact's digest"
    return ""


def _plain(obj: Any) -> dict[str, Any]:
    raw = obj.to_dict() if hasattr(obj, "to_dict") else obj
    return dict(raw) if isinstance(raw, Mapping) else {}


#: what the follower says while nothing names the chart the pools run
NO_CHART_KNOWN = (
    f"no chart known: neither {APPLICATION_DEFINITION.kind} {POOL_APPLICATION} nor --chart-source names the Flux "
    "source the pools take their chart from, so the shipped facts' chart stands in and ChartNotGated is not "
    "checked (pool HelmReleases' own chartRef is never taken: tenants write those)"
)

Fetch = Callable[[str, float, int], Awaitable[bytes]]


class ArtifactDownloadError(Exception):
    """A download that failed in a way worth saying (a status, a size, a redirect refused): its text
    is ours and names no host, path, query or credentials (it reaches tenants in ``ChartNotGated``);
    ``detail`` adds the hosts of a refused redirect, for the hoster's log only."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


def _origin(url: Any) -> str:
    """``scheme://host[:port]`` of a ``yarl.URL``: what a message may name of it (no credentials)."""
    port = f":{url.explicit_port}" if url.explicit_port is not None else ""
    return f"{url.scheme}://{url.host or ''}{port}"


async def download(url: str, timeout: float, limit: int) -> bytes:
    """GET ``url`` (source-controller's artifact server) within ``timeout`` seconds and ``limit`` bytes,
    following at most :data:`MAX_REDIRECTS` redirects, each only to the same scheme, host and port;
    :class:`ArtifactDownloadError` says why not."""
    import aiohttp
    from yarl import URL

    start = URL(url)
    if start.scheme not in ("http", "https") or not start.host:
        raise ArtifactDownloadError("the artifact's address is not an http or https URL")
    here = start
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        for _ in range(MAX_REDIRECTS + 1):
            async with session.get(here, allow_redirects=False) as response:
                if response.status in _REDIRECTS:
                    location = response.headers.get("Location")
                    if not location:
                        raise ArtifactDownloadError(
                            f"the artifact server answered {response.status} without a Location"
                        )
                    target = here.join(URL(location))
                    if (target.scheme, target.host, target.port) != (start.scheme, start.host, start.port):
                        refused = "the artifact server redirected to another host: not followed"
                        raise ArtifactDownloadError(
                            refused, detail=f"{refused} (from {_origin(start)} to {_origin(target)})"
                        )
                    here = target
                    continue
                if response.status != 200:
                    raise ArtifactDownloadError(f"the artifact server answered {response.status}")
                data = bytearray()
                async for chunk in response.content.iter_chunked(65536):
                    data += chunk
                    if len(data) > limit:
                        raise ArtifactDownloadError(f"the artifact is larger than {limit // (1024 * 1024)} MiB")
                return bytes(data)
    raise ArtifactDownloadError(f"the artifact server answered more than {MAX_REDIRECTS} redirects")


class ChartFollower:
    """Keeps the chart the pools run current for a cluster cache (see the module).

    ``client`` is a ``lightkube.AsyncClient``; ``source``: the Flux source the hoster names
    (``--chart-source``; None: the ApplicationDefinition's); ``fetch`` downloads an artifact (tests
    give their own); ``interval`` seconds between reads of the reference and its source.
    """

    def __init__(
        self,
        client: Any,
        *,
        source: ChartRef | None = None,
        interval: float = 10.0,
        timeout: float = 30.0,
        fetch: Fetch | None = None,
    ) -> None:
        self._client = client
        self.source = source
        self.interval = interval
        self.timeout = timeout
        self._fetch = fetch or download
        #: charts read, by artifact digest (a digest names the same bytes for ever)
        self._charts: dict[str, ChartSource] = {}
        #: the chart in effect: None while nothing names a chart (not a Cozystack cluster)
        self.chart: ChartSource | None = None
        #: why the chart in effect cannot be verified ("" when it is, or when nothing names one)
        self.problem = ""
        #: whether one read has finished (the webhook is not ready before)
        self.settled = False
        #: why no chart is checked, for people ("" while a chart is named): :data:`NO_CHART_KNOWN`
        self.note = ""

    async def _get(self, group: str, version: str, kind: str, plural: str, name: str, namespace: str | None) -> Any:
        from lightkube.generic_resource import create_global_resource, create_namespaced_resource

        if namespace is None:
            return await self._client.get(create_global_resource(group, version, kind, plural), name)
        return await self._client.get(
            create_namespaced_resource(group, version, kind, plural), name, namespace=namespace
        )

    async def reference(self) -> ChartRef | str | None:
        """The source the pools take their chart from: the hoster's ``--chart-source``, else the
        ApplicationDefinition's ``chartRef``; None when neither names one (no chart known); a string
        when the ApplicationDefinition cannot be read (why)."""
        if self.source is not None:
            return self.source
        row = APPLICATION_DEFINITION
        try:
            definition = _plain(await self._get(row.group, row.version, row.kind, row.plural, POOL_APPLICATION, None))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if status_code(error) != 404:
                return f"reading {row.kind} {POOL_APPLICATION} failed ({short_error(error)})"
            return None
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
        except ArtifactDownloadError as error:
            if error.detail != str(error):  # the hosts of a refused redirect: the hoster's to know
                logger.warning("downloading the artifact of %s: %s", ref.describe(), error.detail)
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

    async def refresh(self) -> ChartSource | None:
        """One read: the chart in effect now (None: no chart known), also kept in :attr:`chart`."""
        ref = await self.reference()
        if ref is None:
            chart: ChartSource | None = None
        elif isinstance(ref, str):
            chart = ChartSource.unverified(ref)
        else:
            chart = await self.read(ref)
        first = not self.settled
        previous, self.chart = self.chart, chart
        self.problem = chart.problem if chart is not None else ""
        self.note = NO_CHART_KNOWN if chart is None else ""
        self.settled = True
        changed = chart != previous or (
            chart is not None and previous is not None and chart.problem != previous.problem
        )
        if first or changed:
            if chart is None:
                logger.warning("%s", NO_CHART_KNOWN)
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
                chart = await self.refresh()
                if chart is not before or first:
                    cache.set_chart(chart)
                first = False
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug must not end the loop: say where, try again
                logger.error("reading the chart the pools run failed (%s)", type(error).__name__, exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval)
