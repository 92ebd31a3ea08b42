"""The admission webhook over HTTPS: AdmissionReview in, the core's decision out.

Its edge: HTTP, TLS, readiness, metrics and shutdown: the aiohttp application and its lifecycle
(start, drain, stop, signals). Answering one review (limits, decoding, the core's decision,
encoding) is :class:`~.handler.ReviewHandler`, which :class:`WebhookServer` inherits; the limits are
:class:`~.settings.Settings` (re-exported here with :class:`~.handler.ByteBudget`). Every decision
comes from the core (:func:`workerclass.admission.mutate` for the mutating path,
:func:`workerclass.admission.validate` for the validating paths) against one State snapshot from a
:class:`~.sources.StateSource`; nothing here adds a rule. While the source has no snapshot the
server is not ready and answers every review with a denial that says why (fail closed, never a
guess).

Logs carry the webhook, operation, denial codes and fields, the uid only when it is a UUID (as the
API server makes it) and the object's namespace and name only when they are Kubernetes names;
other request text is escaped and cut (:mod:`.logtext`), and object contents never appear. A
malformed HTTP request is logged as one line and answered with its status line only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_protocol import RequestHandler
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..adapters.tls import ReloadingContext, TLSFileError, stop_task
from ..api import HEALTH_PATH, METRICS_PATH, READY_PATH
from ..state import State
from .connections import BURST, GRACE, ConnectionGuard
from .handler import ByteBudget, Decider, ReviewHandler, core_deciders
from .livereads import LiveReads
from .metrics import WebhookMetrics
from .routes import ROUTES
from .settings import MIB, Settings
from .sources import StateSource, source_absent, source_notes, sync_reports

__all__ = ["MIB", "ByteBudget", "Decider", "Settings", "WebhookServer", "core_deciders", "http_logger"]

logger = logging.getLogger("workerclass.webhook")


class _OneLineHTTPErrors(logging.Filter):
    """aiohttp logs a malformed request with a traceback whose message quotes the request bytes;
    keep one line with the error type instead (cheap, and nothing a client sent ends up in the log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = "refused a malformed HTTP request (%s %s)"
            record.args = (type(error).__name__, getattr(error, "code", ""))
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


http_logger = logging.getLogger("workerclass.http")
http_logger.addFilter(_OneLineHTTPErrors())


_REVIEW_PATHS = frozenset(route.path for route in ROUTES)
_SERVED_PATHS = _REVIEW_PATHS | {HEALTH_PATH, READY_PATH, METRICS_PATH}


class _QuietRequestHandler(RequestHandler):
    """aiohttp's connection handler whose answer to a malformed request is its status line only:
    aiohttp's own quotes the bytes it could not parse (a request line, a header) back to the client."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status != 500:  # 500 has aiohttp's fixed text already
            try:
                message = f"{status} {HTTPStatus(status).phrase}"
            except ValueError:
                message = str(status)
        return super().handle_error(request, status, exc, message)


class _AccessLogger(AbstractAccessLogger):
    """One line per request (``access_log``): method, a served path or ``other``, status, size and
    time; no query string, header or unknown path (aiohttp's default format quotes them)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        path = request.path if request.path in _SERVED_PATHS else "other"
        method = request.method if request.method in ("GET", "POST", "PUT", "HEAD", "DELETE") else "other"
        self.logger.info("%s %s %d %d %.1fms", method, path, response.status, response.body_length, time * 1000)


def _raise_open_files(wanted: int) -> None:
    """Raise this process's soft limit on open files to ``wanted`` (at most the hard limit): a burst
    of connections may hold up to ``BURST + 1`` times ``max_connections`` sockets for a moment, and
    an ``accept`` that fails for want of descriptors stops the listener for a second."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on a Unix
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class WebhookServer(ReviewHandler):
    """The aiohttp application plus its lifecycle (start, drain, stop); reviews are answered by
    the inherited :class:`~.handler.ReviewHandler`."""

    def __init__(
        self,
        source: StateSource,
        *,
        tls: ReloadingContext | None,
        settings: Settings | None = None,
        metrics: WebhookMetrics | None = None,
        deciders: Mapping[str, Decider] | None = None,
    ) -> None:
        self.source = source
        self.tls = tls
        self.settings = settings or Settings()
        self.metrics = metrics or WebhookMetrics()
        self._deciders = dict(deciders) if deciders is not None else core_deciders()
        self._draining = False
        self._in_flight = 0
        #: made by :meth:`stop` when it has requests to wait for, set by the last one to finish
        #: (nothing to signal per request while the server is not stopping)
        self._idle: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self._guard: ConnectionGuard | None = None
        self._budget = ByteBudget(self.settings.body_budget)
        self._live_reads = LiveReads(self.settings.live_read_rate, self.settings.live_read_burst)
        self._listener: asyncio.AbstractServer | None = None
        self._metrics_runner: web.AppRunner | None = None
        self._tls_task: asyncio.Task[None] | None = None
        self._port: int | None = None
        self._state_seen: State | None = None
        self._generation = 0
        #: the paths this server answers on its HTTPS port
        self._served = _SERVED_PATHS
        self.app = self._make_app()

    # ------------------------------------------------------------------ application

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=self.settings.max_body)
        for route in ROUTES:
            app.router.add_post(route.path, self._handler(route))
        app.router.add_get(HEALTH_PATH, self._tracked(self._healthz))
        app.router.add_get(READY_PATH, self._tracked(self._readyz))
        if not self.settings.metrics_port:
            app.router.add_get(METRICS_PATH, self._tracked(self._metrics))
        else:  # on a port of its own (:meth:`_start_metrics`): not found here
            self._served = self._served - {METRICS_PATH}
        # every other method and path, so that the connection guard hears of each answer (a
        # middleware would too, at a cost per request aiohttp makes noticeable: ~10 µs under load)
        app.router.add_route("*", "/{path:.*}", self._tracked(self._other))
        return app

    def _tracked(self, handler: Callable[[web.Request], Any]) -> Callable[[web.Request], Any]:
        async def tracked(request: web.Request) -> web.StreamResponse:
            response: web.StreamResponse = await handler(request)
            if self._draining:
                response.force_close()  # as the reviews' answers: the client reconnects elsewhere
            self._answered(request, response)
            return response

        return tracked

    async def _other(self, request: web.Request) -> web.Response:
        if request.path in self._served:
            allowed = "POST" if request.path in _REVIEW_PATHS else "GET"
            return web.Response(status=405, text="405: Method Not Allowed", headers={"Allow": allowed})
        return web.Response(status=404, text="404: Not Found")

    @property
    def ready(self) -> bool:
        """Serving, synced, and the source fresh (a stale or failing source reports a reason)."""
        return not self._draining and self.source.state is not None and not self.source.reason

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self.ready:  # ready, and what a person should know of how it decides (no chart known)
            return web.Response(text="ok\n" + "".join(f"note: {note}\n" for note in source_notes(self.source)))
        return web.Response(status=503, text=f"not ready: {self.not_ready_reason()}\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        self.metrics.ready.set(1 if self.ready else 0)
        self._note_state(self.source.state)
        self.metrics.note_sync(sync_reports(self.source))
        self.metrics.note_absent(source_absent(self.source))
        if self._guard is not None:
            self.metrics.note_connections(self._guard.stats())
        if self.tls is not None:
            self.metrics.certificate_reloads.set(self.tls.reloads)
            if self.tls.not_after is not None:
                self.metrics.certificate_expiry.set(self.tls.not_after.timestamp())
        response = web.Response(body=self.metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    def _note_state(self, state: State | None) -> None:
        if state is not None and state is not self._state_seen:
            self._state_seen = state
            self._generation += 1
            self.metrics.state_loads.set(self._generation)

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the server is not started")
        return self._port

    async def start(self) -> None:
        """Start the state source, then listen. Returns once the socket accepts connections."""
        await self.source.start()
        settings = self.settings
        runner = web.AppRunner(
            self.app,
            handle_signals=False,
            shutdown_timeout=settings.shutdown_timeout,
            access_log=logging.getLogger("workerclass.access") if settings.access_log else None,
            access_log_class=_AccessLogger,
            keepalive_timeout=settings.keepalive_timeout,
            logger=http_logger,
            lingering_time=settings.lingering_time,
            auto_decompress=False,
            max_field_size=settings.max_field_size,
            read_bufsize=settings.read_bufsize,
        )
        await runner.setup()
        self._runner = runner
        assert runner.server is not None
        loop = asyncio.get_running_loop()
        # TLS is the guard's (a slot is taken before any TLS state), not the loop's
        aiohttp_server = runner.server
        try:
            options = dict(aiohttp_server._kwargs)

            def handler() -> asyncio.Protocol:
                return _QuietRequestHandler(aiohttp_server, loop=loop, **options)

            handler()  # fails here, at start, if aiohttp no longer takes these arguments
        except (AttributeError, TypeError):  # pragma: no cover - another aiohttp
            handler = aiohttp_server
        self._guard = ConnectionGuard(
            handler,
            limit=settings.max_connections,
            header_timeout=settings.header_timeout,
            tls=self.tls.context if self.tls is not None else None,
            handshake_timeout=settings.handshake_timeout,
            max_header_bytes=settings.max_header_bytes,
            grace=GRACE,
            burst=BURST * settings.max_connections,
        )
        _raise_open_files((BURST + 1) * settings.max_connections + 256)
        self._listener = await loop.create_server(
            self._guard,
            settings.host,
            settings.port,
            backlog=1024,
            reuse_address=True,
        )
        sockets = self._listener.sockets
        self._port = sockets[0].getsockname()[1] if sockets else settings.port
        if settings.metrics_port:
            await self._start_metrics()
        if self.tls is not None:
            self.tls.interval = settings.tls_reload_interval
            self._tls_task = self.tls.start()
        logger.info("webhook listening on %s:%d (%s)", settings.host, self._port, "https" if self.tls else "http")

    async def _start_metrics(self) -> None:
        """``/metrics`` alone, over plain HTTP on ``metrics_port`` (the scrapers' port)."""
        metrics = web.Application()
        metrics.router.add_get(METRICS_PATH, self._metrics)
        runner = web.AppRunner(metrics, handle_signals=False, access_log=None, logger=http_logger)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.settings.host, self.settings.metrics_port, reuse_address=True).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._metrics_runner = runner
        logger.info("metrics on %s:%d (http)", self.settings.host, self.settings.metrics_port)

    async def stop(self) -> None:
        """Drain: report not ready, keep answering for ``shutdown_delay``, stop accepting, let
        in-flight requests finish.

        During the delay every answer closes its connection (``Connection: close``), so the API
        server, whose kept-alive connections stay on this pod after its endpoints are gone, moves
        each one to a replica that stays as soon as it is used, instead of losing a request sent
        on it when the server closes it. In flight means the headers have arrived: a review whose
        body is still on its way is waited for (up to ``shutdown_timeout``) and answered, not cut off.
        """
        self._draining = True
        if self.settings.shutdown_delay > 0:
            logger.info(
                "not ready; answering for %.1f s more, each answer closing its connection", self.settings.shutdown_delay
            )
            await asyncio.sleep(self.settings.shutdown_delay)
        if self._listener is not None:
            self._listener.close()
        if self._in_flight:
            logger.info("waiting for %d in-flight request(s)", self._in_flight)
            self._idle = idle = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.shutdown_timeout):
                    await idle.wait()
        if self._runner is not None:
            await self._runner.cleanup()  # closes idle keep-alive connections, then any handler left
            self._runner = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.wait_closed()
            self._listener = None
        if self._metrics_runner is not None:
            await self._metrics_runner.cleanup()
            self._metrics_runner = None
        await stop_task(self._tls_task)
        self._tls_task = None
        await self.source.stop()
        logger.info("webhook stopped")

    async def reload_now(self) -> None:
        """Reload the TLS files and the state source now (SIGHUP), each only if it changed: both are
        reloaded on change anyway; this is for an operator who does not want to wait. A pair that
        does not load, or a folder that cannot be read, is logged and the previous one kept."""
        if self.tls is not None:
            try:
                changed = await asyncio.to_thread(self.tls.reload)
            except TLSFileError as error:
                logger.warning("SIGHUP: the TLS files do not load, keeping the previous pair: %s", error)
            else:
                logger.info("SIGHUP: TLS certificate %s", "reloaded" if changed else "unchanged")
        reload = getattr(self.source, "reload", None)
        if callable(reload):
            try:
                changed = await reload()
            except OSError as error:
                logger.warning("SIGHUP: the state cannot be read, keeping the previous one (%s)", type(error).__name__)
            else:
                logger.info("SIGHUP: state %s", "reloaded" if changed else "unchanged")
        else:
            logger.info("SIGHUP: the state follows the cluster's watches: nothing to reload")

    async def serve(self, *, stop: asyncio.Event | None = None) -> None:
        """Run until SIGTERM/SIGINT (or ``stop`` is set), then drain and return. SIGHUP reloads the
        TLS files and the state now (:meth:`reload_now`) and is logged: it never ends the server."""
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        reloads: set[asyncio.Task[None]] = set()

        def on_signal() -> None:
            if stop.is_set():  # a second signal while draining: the drain goes on, nothing is dropped
                logger.info("already shutting down: in-flight requests are still being answered")
            stop.set()

        def on_hangup() -> None:
            logger.info("SIGHUP: reloading the TLS files and the state (the server goes on)")
            task = asyncio.create_task(self.reload_now(), name="workerclass-sighup")
            reloads.add(task)
            task.add_done_callback(reloads.discard)

        handlers = [(signal.SIGTERM, on_signal), (signal.SIGINT, on_signal)]
        if hasattr(signal, "SIGHUP"):
            handlers.append((signal.SIGHUP, on_hangup))
        for sig, callback in handlers:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, callback)
                installed.append(sig)
        try:
            await self.start()
            await stop.wait()
            logger.info("shutting down: draining in-flight requests")
        finally:
            try:
                await self.stop()  # the handlers stay installed: a second SIGTERM must not kill the drain
            finally:
                for sig in installed:
                    loop.remove_signal_handler(sig)
