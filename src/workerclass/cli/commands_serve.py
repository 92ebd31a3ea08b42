"""``serve webhook`` and ``serve controller``: the servers against a cluster.

``serve`` is a Typer group (:data:`serve_app`): ``workerclass serve webhook`` and
``workerclass serve controller``. Both read the cluster through a
:class:`~workerclass.adapters.kube.ClusterCache` whose lightkube client is made with a read
timeout that fits the cache's list and watch deadlines (``_cache_client``,
:func:`~workerclass.adapters.kube.client_timeout`), not lightkube's default 10 s, which would cut a
slow list page the cache means to wait for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import uuid
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..adapters.folder import load_state
from ..api.webhooks import HEALTH_PATH
from ..chart.source import ChartSource
from ..deploy import (
    CONTROLLER_LEASE,
    DEFAULT_NAMESPACE,
)
from ..state import State
from .app import Command, app
from .chart import ChartOption, load_chart
from .output import fail

if TYPE_CHECKING:  # the servers' modules (asyncio, x509) are imported by the commands that run them
    from ..webhook.sources import StateSource

serve_app = typer.Typer(
    name="serve",
    help="Serve against a cluster: the admission webhook (serve webhook), and the WorkerClass controller "
    "(serve controller).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(serve_app, name="serve")


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def _config_error(error: BaseException) -> str:
    """A kubeconfig error in one line without its message (which may quote a server URL with
    credentials): :func:`~workerclass.adapters.kube.short_error`, plus a file error's reason."""
    from ..adapters.kube import short_error

    if isinstance(error, OSError) and error.strerror:
        return f"{short_error(error)} ({error.strerror})"
    return short_error(error)


def _kube_config(kube_config: Any, kubeconfig: Path | None) -> Any:
    """lightkube's configuration from ``kubeconfig``, else from the environment (in-cluster, then
    ``KUBECONFIG``, then ``~/.kube/config``); when none of those is there, the error names each
    source tried, and any other failure is one line (exit 2), never a traceback."""
    from ..adapters.kubeconfig import no_configuration

    if kubeconfig is None:
        missing = no_configuration()
        if missing is not None:
            fail(missing)
    try:
        return kube_config.from_file(kubeconfig) if kubeconfig is not None else kube_config.from_env()
    except Exception as error:  # lightkube's ConfigError and file errors: one line, no traceback
        fail(f"no Kubernetes configuration: {_config_error(error)}")


def _cache_client(config: Any, field_manager: str) -> Any:
    """A ``lightkube.AsyncClient`` for a :class:`~workerclass.adapters.kube.ClusterCache` made with its
    default deadlines: its read timeout fits them (:func:`~workerclass.adapters.kube.client_timeout`:
    lightkube's default 10 s would cut a list page the cache's 30 s ``list_timeout`` lets finish); its
    requests go through aiohttp (:mod:`~workerclass.adapters.transport`: a third of the CPU per request)."""
    from lightkube import AsyncClient

    from ..adapters.kube import client_timeout
    from ..adapters.transport import aiohttp_transport

    single = config.get() if hasattr(config, "get") else config
    return AsyncClient(
        config=config, field_manager=field_manager, timeout=client_timeout(), transport=aiohttp_transport(single)
    )


def _cluster_source(
    kubeconfig: Path | None,
    *,
    stale_after: float = 60.0,
    chart: ChartSource | None = None,
    chart_poll: float = 10.0,
    chart_source: Any = None,
) -> StateSource:
    try:
        from lightkube import KubeConfig
    except ImportError:
        fail("reading a cluster needs lightkube: install workerclass[controller], or serve a folder with --state DIR")
    from ..adapters.kube import ClusterCache

    config = _kube_config(KubeConfig, kubeconfig)
    client = _cache_client(config, "workerclass-webhook")
    charts = _follower(client, chart, chart_poll, chart_source)
    return ClusterCache(client, stale_after=stale_after, chart=chart, charts=charts)


def _follower(client: Any, chart: ChartSource | None, interval: float, source: Any = None) -> Any:
    """What keeps the chart the pools run current from Flux's source API: none when ``--chart``
    pins one (:class:`~workerclass.adapters.flux.ChartFollower`); ``source``: the hoster's
    ``--chart-source`` (a :class:`~workerclass.adapters.flux.ChartRef`), else the ApplicationDefinition's."""
    if chart is not None:
        return None
    from ..adapters.flux import ChartFollower

    return ChartFollower(client, interval=interval, source=source)


#: ``--chart-source``: the Flux source the pools take their chart from, named by the hoster
ChartSourceOption = Annotated[
    str | None,
    typer.Option(
        "--chart-source",
        metavar="KIND/NAMESPACE/NAME",
        help="The Flux source (ExternalArtifact, HelmChart or OCIRepository) the pools take their chart from, "
        "in place of the ApplicationDefinition kubernetes-nodes' chartRef; for a cluster that serves no "
        "ApplicationDefinition. Never taken from pools' HelmReleases. Not with --chart.",
        show_default=False,
    ),
]


def _chart_options(chart: str | None, chart_source: str | None) -> tuple[ChartSource | None, Any]:
    """``--chart`` read, ``--chart-source`` parsed; a bad value or both at once exit 2 with one line."""
    if chart is not None and chart_source is not None:
        fail("give --chart (a pinned chart) or --chart-source (a Flux source to follow), not both")
    ref = None
    if chart_source is not None:
        from ..adapters.flux import parse_chart_source

        try:
            ref = parse_chart_source(chart_source)
        except ValueError as error:
            fail(str(error))
    return (load_chart(chart) if chart is not None else None), ref


#: ``--chart-poll``: seconds between reads of the chart the pools run (ApplicationDefinition, Flux source)
ChartPollOption = Annotated[
    float,
    typer.Option(
        "--chart-poll",
        min=0.2,
        help="Seconds between reads of the chart the pools run through Flux's source API (without --chart).",
    ),
]


def _folder_loader(chart: ChartSource | None) -> Callable[[Path], State]:
    """How a STATE folder is read for the webhook: under ``chart`` when one is given."""
    if chart is None:
        return load_state
    return lambda folder: load_state(folder).with_chart(chart)


#: Python frames the process may nest: the API server stores JSON up to 10,000 levels deep (Go's
#: encoding/json bound), and the JSON reader under the Kubernetes client recurses once per level.
#: With Python's 1,000 one tenant's deep object failed the list page that carried it, for ever
#: (every tenant's writes then refused while the webhook stayed unready); with room for 10,000
#: it is read, then skipped by the bounds of :mod:`workerclass.api.bounds` before anything walks it.
DEEP_ANSWERS = 25_000


def read_deep_answers() -> None:
    """Let this process decode any object the API server can store (:data:`DEEP_ANSWERS`)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_ANSWERS))


@serve_app.command("webhook", cls=Command)
def serve_webhook(
    tls_cert: Annotated[
        Path, typer.Option("--tls-cert", metavar="FILE", help="PEM certificate chain; reloaded when the file changes.")
    ],
    tls_key: Annotated[Path, typer.Option("--tls-key", metavar="FILE", help="PEM private key of that certificate.")],
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="HTTPS port (0: any free port).")] = 8443,
    metrics_port: Annotated[
        int,
        typer.Option(
            "--metrics-port",
            min=0,
            max=65535,
            help="Serve /metrics on this port (plain HTTP, nothing else) so a NetworkPolicy can admit the "
            "scrapers to it alone; 0: /metrics on the HTTPS port.",
        ),
    ] = 0,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (127.0.0.1 for a local trial).")
    ] = "0.0.0.0",
    state: Annotated[
        Path | None,
        typer.Option(
            "--state",
            metavar="DIR",
            help="Decide against a STATE folder (reloaded when it changes) instead of the cluster.",
        ),
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", metavar="FILE", help="Without it: in-cluster, then KUBECONFIG, ~/.kube/config."),
    ] = None,
    state_interval: Annotated[float, typer.Option(min=0.1, help="Seconds between checks of the STATE folder.")] = 1.0,
    tls_reload_interval: Annotated[float, typer.Option(min=0.1, help="Seconds between checks of the TLS files.")] = 5.0,
    shutdown_delay: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="On SIGTERM, keep answering this long (not ready, each answer closing its connection) so the "
            "endpoints drop the pod and the API server moves its kept-alive connections off it; then stop "
            "accepting and drain. 0 stops at once and may drop a request already sent on a kept-alive connection.",
        ),
    ] = 5.0,
    shutdown_timeout: Annotated[
        float, typer.Option(min=0.0, help="Longest wait for in-flight requests on shutdown.")
    ] = 20.0,
    access_log: Annotated[bool, typer.Option(help="Log every request line.")] = False,
    log_level: Annotated[LogLevel, typer.Option(help="Log level.")] = LogLevel.info,
    max_connections: Annotated[
        int, typer.Option("--max-connections", min=1, help="Open connections at most (the idlest makes room).")
    ] = 256,
    header_timeout: Annotated[
        float, typer.Option("--header-timeout", min=0.1, help="Seconds a request's headers may take to arrive.")
    ] = 10.0,
    stale_after: Annotated[
        float,
        typer.Option(
            "--stale-after", min=1.0, help="Not ready when a watched resource is not current this many seconds."
        ),
    ] = 60.0,
    chart: ChartOption = None,
    chart_poll: ChartPollOption = 10.0,
    chart_source: ChartSourceOption = None,
) -> None:
    """Serve the admission webhooks (the contract's section 5) over HTTPS until SIGTERM, then drain.

    Paths: /mutate/kubernetesnodes, /validate/kubernetesnodes, /validate/workerclasses,
    /validate/computeplanes, /validate/kuberneteses; /healthz, /readyz (ready once the state has
    synced) and /metrics.

    SIGTERM (or Ctrl-C): not ready at once, answers go on for --shutdown-delay (each closing its
    connection), then the listener closes and requests in flight finish (--shutdown-timeout); a
    second SIGTERM does not cut the drain short. SIGHUP reloads the TLS files and the STATE folder
    now (both are reloaded on change anyway) and is logged; it never ends the server.
    """
    from ..webhook.server import Settings, WebhookServer

    read_deep_answers()
    logging.basicConfig(
        level=log_level.value.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from ..adapters.tls import ReloadingContext, TLSFileError  # x509 and asyncio: the server's own

    try:
        tls = ReloadingContext(tls_cert, tls_key)
    except TLSFileError as error:
        fail(str(error))
    given, ref = _chart_options(chart, chart_source)
    from ..webhook.sources import FolderSource

    source: StateSource = (
        FolderSource(state, interval=state_interval, loader=_folder_loader(given))
        if state is not None
        else _cluster_source(kubeconfig, stale_after=stale_after, chart=given, chart_poll=chart_poll, chart_source=ref)
    )
    settings = Settings(
        host=host,
        port=port,
        metrics_port=metrics_port,
        tls_reload_interval=tls_reload_interval,
        shutdown_delay=shutdown_delay,
        shutdown_timeout=shutdown_timeout,
        access_log=access_log,
        max_connections=max_connections,
        header_timeout=header_timeout,
    )
    server = WebhookServer(source, tls=tls, settings=settings)
    import asyncio  # the servers' own: not imported by every command's start

    try:
        asyncio.run(server.serve())
    except OSError as error:  # the port is taken, the address does not exist, ...
        fail(f"cannot listen on {host}:{port}: {error.strerror or str(error)}")
    except (UnicodeError, ValueError) as error:  # a host name the resolver cannot encode
        detail = str(error).splitlines()[0] if str(error) else "bad address"
        fail(f"cannot listen on {host}:{port}: {detail}")


@serve_app.command("controller", cls=Command)
def serve_controller(
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", metavar="FILE", help="Without it: in-cluster, then KUBECONFIG, ~/.kube/config."),
    ] = None,
    debounce: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Seconds a burst of cluster changes is gathered before status and pools are reconciled (0: at once).",
        ),
    ] = 0.2,
    poll_interval: Annotated[
        float | None,
        typer.Option(hidden=True, help="Ignored (the controller waits for changes now); kept for older manifests."),
    ] = None,
    retain_recheck: Annotated[
        float, typer.Option(min=1.0, help="Seconds between re-checks of a class deletion held by live pools.")
    ] = 30.0,
    liveness_port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port of the liveness endpoint /healthz (0: none).")
    ] = 8080,
    metrics_port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port of the Prometheus endpoint /metrics (0: none).")
    ] = 9090,
    workers: Annotated[
        bool,
        typer.Option(
            "--workers/--no-workers",
            help="Apply the objects of classified pools (the worker controller), beside class status.",
        ),
    ] = True,
    resync_interval: Annotated[
        float, typer.Option(min=1.0, help="Seconds between full resyncs of the classified pools' objects.")
    ] = 60.0,
    leader_elect: Annotated[
        bool,
        typer.Option("--leader-elect/--no-leader-elect", help="Act only while holding the leader Lease."),
    ] = True,
    lease_namespace: Annotated[
        str, typer.Option("--lease-namespace", help="Namespace of the leader Lease (the controller's own).")
    ] = DEFAULT_NAMESPACE,
    log_level: Annotated[LogLevel, typer.Option(help="Log level.")] = LogLevel.info,
    chart: ChartOption = None,
    chart_poll: ChartPollOption = 10.0,
    chart_source: ChartSourceOption = None,
) -> None:
    """Run the controller against the cluster until SIGTERM (any number of replicas, one leader).

    Writes status.conditions (Accepted, InUse, WorkersApplied) and status.pools of every WorkerClass, keeps a
    finalizer on custom classes so that one is not deleted while live pools select it, and applies
    the objects of every classified pool (server-side apply, owner references to the pool's
    HelmRelease), pinning classless pools' Helm-made objects for a handoff without rollout.
    Replicas elect a leader on the Lease workerclass-controller; only the leader writes.
    """
    try:
        from lightkube import KubeConfig
    except ImportError:
        fail("the controller needs lightkube: install workerclass[controller]")
    read_deep_answers()
    from ..adapters.kube import ClusterCache
    from ..api import CONTROLLER_READS
    from ..controller import (
        CachePoolLister,
        ChartRead,
        ClassController,
        ControllerSettings,
        LightkubeClassEvents,
        LightkubeFinalizerWriter,
        LightkubeStatusWriter,
    )
    from ..controller.leader import LeaseElector
    from ..controller.liveness import serve_liveness
    from ..controller.workers import WorkerController, WorkerMetrics, WorkerSettings

    logging.basicConfig(
        level=log_level.value.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for chatty in ("httpx", "httpx2", "aiohttp.access"):  # a line per API request or probe
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))
    if poll_interval is not None:
        logging.getLogger("workerclass.controller").warning(
            "--poll-interval is ignored: the controller acts on the cluster cache's changes (see --debounce)"
        )
    config = _kube_config(KubeConfig, kubeconfig)
    given, ref = _chart_options(chart, chart_source)
    settings = ControllerSettings(retain_recheck=retain_recheck)
    identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"

    import asyncio  # the servers' own: not imported by every command's start

    async def run() -> None:
        import signal

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stop.set)
        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):
            # the controller reads the cluster continuously: nothing to reload, and a hangup never ends it
            loop.add_signal_handler(
                signal.SIGHUP, lambda: logging.getLogger("workerclass.controller").info("SIGHUP: ignored")
            )
        # one client for the cache's lists and watches and every write: its read timeout fits the cache's
        client = _cache_client(config, "workerclass-controller")
        # the process's one list-watch per resource: status, finalizers and pools all wait on it
        cache = ClusterCache(
            client,
            resources=CONTROLLER_READS,
            debounce=debounce,
            chart=given,
            charts=_follower(client, given, chart_poll, ref),
        )
        await cache.start()
        liveness = await serve_liveness(liveness_port, HEALTH_PATH) if liveness_port else None
        if metrics_port:
            from prometheus_client import start_http_server

            start_http_server(metrics_port)
        worker = WorkerController(
            client, settings=WorkerSettings(resync_interval=resync_interval), metrics=WorkerMetrics()
        )

        async def until_stopped(job: Any) -> None:
            """Run ``job``; when it ends (a stop, or a loop that failed), stop everything else too."""
            try:
                await job
            finally:
                stop.set()

        # nothing is decided before the first read of the chart the pools run (without --chart, Flux's)
        settled = ChartRead(cache)

        async def lead() -> None:
            classes = ClassController(
                settled,
                LightkubeStatusWriter(client),
                CachePoolLister(cache),
                finalizers=LightkubeFinalizerWriter(client),
                events=LightkubeClassEvents(client),
                settings=settings,
                workers=worker if workers else None,
            )
            jobs = [until_stopped(classes.run(stop=stop))]
            if workers:
                jobs.append(until_stopped(worker.run(settled, stop=stop)))
            await asyncio.gather(*jobs)

        try:
            if leader_elect:
                elector = LeaseElector(client, namespace=lease_namespace, name=CONTROLLER_LEASE, identity=identity)
                await elector.run(lead, stop=stop)
            else:
                await lead()
        finally:
            if liveness is not None:
                await liveness.cleanup()
            await cache.stop()
            await client.close()

    from ..controller.leader import LeadershipLost

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    except LeadershipLost as lost:  # our own text (no server's): the pod restarts and campaigns anew
        fail(f"the controller stopped: {lost}; exiting so that it starts over as a follower", code=1)
    except Exception as error:  # a loop gave up: one line, exit 1
        from ..adapters.kube import short_error  # never the message: it may quote a server URL

        fail(f"the controller stopped: {short_error(error)}", code=1)
