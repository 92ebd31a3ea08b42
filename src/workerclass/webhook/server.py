"""The admission webhook over HTTPS: AdmissionReview in, the core's decision out.

Its edge: HTTP, TLS, readiness, metrics and shutdown. Every decision comes from the core
(:func:`workerclass.admission.mutate` for the mutating path, :func:`workerclass.admission.validate`
for the validating paths) against one State snapshot from a :class:`~.sources.StateSource`; this
module adds no rule of its own. While the source has no snapshot the server is not ready and
answers every review with a denial that says why (fail closed, never a guess).

Bad input gets a clear answer and never a crash: bodies over the limit get 413, slow bodies 408,
non-JSON or a wrong envelope 400, other media types 415; a readable review whose request is wrong
(unknown operation, missing object, another kind) gets a denial with ``status.code`` 400. Logs
carry the webhook, operation, denial codes and fields, the uid only when it is a UUID (as the API
server makes it) and the object's namespace and name only when they are Kubernetes names; other
request text is escaped and cut (:mod:`.logtext`), and object contents never appear.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import signal
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

from ..adapters.tls import ReloadingContext, stop_task
from ..admission.decision import Decision
from ..state import State
from . import review as wire
from .connections import ConnectionGuard
from .logtext import escaped, identity_text, uid_text
from .metrics import CONTENT_TYPE, WebhookMetrics
from .routes import ROUTES, Route
from .sources import StateSource, sync_reports

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
_SERVED_PATHS = _REVIEW_PATHS | {"/healthz", "/readyz", "/metrics"}


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


Decider = Callable[[State, str, dict[str, Any] | None, dict[str, Any] | None], Decision]

MIB = 1024 * 1024


def core_deciders() -> dict[str, Decider]:
    """The core's ``mutate`` and ``validate`` (imported late: the core is a library of its own)."""
    from ..admission import mutate, validate

    return {"mutate": mutate, "validate": validate}


@dataclass(frozen=True)
class Settings:
    """Listening address and the limits that keep bad or slow clients from hurting the server."""

    host: str = "0.0.0.0"
    port: int = 8443
    #: bodies over this get 413 (an object is at most ~1.5 MiB in etcd; a review carries two)
    max_body: int = 3 * MIB
    #: a client that has not sent its whole body after this many seconds gets 408
    body_timeout: float = 10.0
    #: idle keep-alive connections close after this; longer than the API server's idle timeout for
    #: webhook connections (Go's 90 s), so the server never closes a connection the API server is
    #: about to reuse for a POST it cannot retry
    keepalive_timeout: float = 120.0
    #: a request's headers must be complete this long after the connection opened (handshake
    #: included) or after its first byte following an idle pause; slow or silent clients are closed
    header_timeout: float = 10.0
    #: open connections at most (each costs ~25 KB with TLS, see bench/README.md); at the cap the
    #: oldest connection without a request, else the longest idle one, makes room, and a new
    #: connection is refused only when every one is answering a request
    max_connections: int = 1024
    #: bytes a connection may send before its request's headers are complete
    max_header_bytes: int = 64 * 1024
    #: bytes of request bodies being read at once across connections (a body that came whole with
    #: its headers is already read); a body waits for room within ``body_timeout``
    body_budget: int = 32 * MIB
    #: aiohttp's per-connection read buffer: what an unread body holds before reading pauses
    read_bufsize: int = 16 * 1024
    #: after refusing a body, keep reading (and dropping) it this long so the client sees the answer
    lingering_time: float = 2.0
    #: TLS handshakes that take longer (from the client's first byte) are dropped
    handshake_timeout: float = 10.0
    #: on shutdown, in-flight requests get this long to finish
    shutdown_timeout: float = 20.0
    #: on shutdown, keep serving (reported not ready) this long so endpoints drop the pod first
    shutdown_delay: float = 0.0
    #: how often the certificate files are checked for rotation
    tls_reload_interval: float = 5.0
    #: log every request line (off by default: denials are logged anyway)
    access_log: bool = False
    max_field_size: int = 8190


class WebhookServer:
    """The aiohttp application plus its lifecycle (start, drain, stop)."""

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
        self._listener: asyncio.AbstractServer | None = None
        self._tls_task: asyncio.Task[None] | None = None
        self._port: int | None = None
        self._state_seen: State | None = None
        self._generation = 0
        self.app = self._make_app()

    # ------------------------------------------------------------------ application

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=self.settings.max_body)
        for route in ROUTES:
            app.router.add_post(route.path, self._handler(route))
        app.router.add_get("/healthz", self._tracked(self._healthz))
        app.router.add_get("/readyz", self._tracked(self._readyz))
        app.router.add_get("/metrics", self._tracked(self._metrics))
        # every other method and path, so that the connection guard hears of each answer (a
        # middleware would too, at a cost per request aiohttp makes noticeable: ~10 µs under load)
        app.router.add_route("*", "/{path:.*}", self._tracked(self._other))
        return app

    def _answered(self, request: web.Request, response: web.StreamResponse) -> None:
        """Tell the connection guard an answer is made (the connection is idle from now, unless it closes)."""
        guard = self._guard
        if guard is not None:
            # a connection that closes after this answer (a refused body, draining) stays busy while
            # aiohttp drops the rest of what the client sends: those bytes are no new request
            guard.request_finished(request.protocol, reusable=response.keep_alive is not False and request.keep_alive)

    def _tracked(self, handler: Callable[[web.Request], Any]) -> Callable[[web.Request], Any]:
        async def tracked(request: web.Request) -> web.StreamResponse:
            response: web.StreamResponse = await handler(request)
            self._answered(request, response)
            return response

        return tracked

    async def _other(self, request: web.Request) -> web.Response:
        if request.path in _SERVED_PATHS:
            allowed = "POST" if request.path in _REVIEW_PATHS else "GET"
            return web.Response(status=405, text="405: Method Not Allowed", headers={"Allow": allowed})
        return web.Response(status=404, text="404: Not Found")

    def _handler(self, route: Route) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            started = time.perf_counter()
            if self._guard is not None:  # busy (a request pipelined behind another had no bytes of its own)
                self._guard.request_started(request.protocol)
            self._in_flight += 1
            try:
                result, response = await self._answer(request, route)
            finally:
                self._in_flight -= 1
                if self._in_flight == 0 and self._idle is not None:
                    self._idle.set()
            if self._draining:
                response.force_close()  # the client reconnects, to a replica that is not stopping
            self.metrics.observe(route.name, result, time.perf_counter() - started)
            self._answered(request, response)
            return response

        return handle

    @property
    def ready(self) -> bool:
        """Serving, synced, and the source fresh (a stale or failing source reports a reason)."""
        return not self._draining and self.source.state is not None and not self.source.reason

    def not_ready_reason(self) -> str:
        if self._draining:
            return "the server is shutting down"
        return self.source.reason or "the state has not synced"

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self.ready:
            return web.Response(text="ok\n")
        return web.Response(status=503, text=f"not ready: {self.not_ready_reason()}\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        self.metrics.ready.set(1 if self.ready else 0)
        self._note_state(self.source.state)
        self.metrics.note_sync(sync_reports(self.source))
        if self._guard is not None:
            self.metrics.note_connections(self._guard.stats())
        if self.tls is not None:
            self.metrics.certificate_reloads.set(self.tls.reloads)
            if self.tls.not_after is not None:
                self.metrics.certificate_expiry.set(self.tls.not_after.timestamp())
        response = web.Response(body=self.metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    def _note_state(self, state: State | None) -> None:
        if state is not None and state is not self._state_seen:
            self._state_seen = state
            self._generation += 1
            self.metrics.state_loads.set(self._generation)

    # ------------------------------------------------------------------ one review

    async def _answer(self, request: web.Request, route: Route) -> tuple[str, web.StreamResponse]:
        problem = self._check_headers(request)
        if problem is not None:
            return "rejected", problem
        max_body = self.settings.max_body
        try:
            content = request.content
            if content.is_eof():
                # The usual case: the whole body came with the headers. Take it from the buffer
                # (what request.read() would return, without its copies and awaits); the size
                # limit is checked the same.
                body = content.read_nowait()
                if len(body) > max_body:
                    return "rejected", _error(413, f"the request body is larger than {max_body} bytes", close=True)
            else:
                # A body still on its way is read under the budget of bytes being read at once
                # (so many connections sending large bodies cannot add up past the memory limit)
                # and the body timeout, which also bounds the wait for budget.
                need = min(request.content_length or max_body, max_body)
                async with asyncio.timeout(self.settings.body_timeout):
                    taken = await self._budget.take(need)
                    try:
                        body = await request.read()
                    finally:
                        self._budget.give(taken)
        except TimeoutError:
            logger.warning("%s: request body not received within %gs", route.name, self.settings.body_timeout)
            message = f"the request body did not arrive within {self.settings.body_timeout:g}s"
            return "rejected", _error(408, message, close=True)
        except web.HTTPRequestEntityTooLarge:
            return "rejected", _error(413, f"the request body is larger than {max_body} bytes", close=True)
        except (HttpProcessingError, ConnectionError, ValueError) as error:
            message = f"the request body could not be read ({type(error).__name__})"
            return "rejected", _error(400, message, close=True)
        return self._decide(route, body)

    def _decide(self, route: Route, body: bytes) -> tuple[str, web.Response]:
        """Decode, decide and encode one review (no awaits: the body is all there)."""
        try:
            review = wire.decode(body, route.target)
        except wire.EnvelopeError as error:
            logger.warning("%s: not an AdmissionReview: %s", route.name, error.message)
            return "rejected", _error(error.status, error.message)
        except wire.RequestError as error:
            logger.warning("%s: uid=%s refused: %s", route.name, uid_text(error.uid), error.message)
            answer = wire.refusal(error.uid, 400, "BadRequest", error.message)
            return "bad_request", _review(answer)

        if review.dry_run:
            # Answered exactly like the real request: this webhook has no side effects to skip.
            self.metrics.dry_run.labels(route.name).inc()

        state = self.source.state
        if state is None:
            reason = self.not_ready_reason()
            logger.warning(
                "%s: uid=%s %s %s refused, not ready: %s",
                route.name,
                uid_text(review.uid),
                review.operation,
                identity_text(review.namespace, review.name),
                reason,
            )
            answer = wire.refusal(
                review.uid,
                503,
                "ServiceUnavailable",
                f"workerclass admission is not ready and refuses rather than guesses: {reason}",
            )
            return "not_ready", _review(answer)

        decide = self._deciders[route.decider]
        try:
            decision = decide(state, review.operation, review.obj, review.old)
        except Exception as error:
            # The traceback's frames locate the bug; its message could quote the object, so it stays out.
            frames = traceback.extract_tb(error.__traceback__)[-3:]
            where = " <- ".join(f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" for frame in reversed(frames))
            logger.error(
                "%s: uid=%s %s %s: the core raised %s at %s",
                route.name,
                uid_text(review.uid),
                review.operation,
                identity_text(review.namespace, review.name),
                type(error).__name__,
                where,
            )
            answer = wire.refusal(
                review.uid,
                500,
                "InternalError",
                f"workerclass admission failed on this request ({type(error).__name__}) and refuses it",
            )
            return "error", _review(answer)

        answer = wire.from_decision(review.uid, decision, mutating=route.mutating)
        if not decision.allowed or decision.warnings:
            wire.scrub(answer, review.obj, review.old)
        if not decision.allowed:
            if logger.isEnabledFor(logging.INFO):  # the denial's codes are only joined for the log
                codes = ", ".join(
                    f"{escaped(violation.code, 64)} {escaped(wire.shown_field(violation.field), 160)}"
                    for violation in decision.denials
                )
                logger.info(
                    "%s: uid=%s %s %s %s denied: %s",
                    route.name,
                    uid_text(review.uid),
                    review.operation,
                    review.kind,
                    identity_text(review.namespace, review.name),
                    codes or "no reason given",
                )
            return "denied", _review(answer)
        return ("patched" if "patch" in answer else "allowed"), _review(answer)

    def _check_headers(self, request: web.Request) -> web.Response | None:
        headers = request.headers
        content_type = headers.get("Content-Type")
        if content_type is not None and content_type != "application/json":  # the API server's exact value
            media = content_type.split(";", 1)[0].strip().lower()
            if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
                return _error(415, "the request body must be application/json")
        encoding = headers.get("Content-Encoding")
        if encoding is not None and encoding.strip().lower() not in ("", "identity"):
            return _error(415, "compressed request bodies are not accepted")
        length = request.content_length
        if length is not None and length > self.settings.max_body:
            # closed: the unread body would otherwise be drained from a client we just refused
            return _error(413, f"the request body is larger than {self.settings.max_body} bytes", close=True)
        return None

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
        # TLS is wrapped by the guard (a slot is taken before the handshake), not by the loop
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
        )
        self._listener = await loop.create_server(
            self._guard,
            settings.host,
            settings.port,
            backlog=1024,
            reuse_address=True,
        )
        sockets = self._listener.sockets
        self._port = sockets[0].getsockname()[1] if sockets else settings.port
        if self.tls is not None:
            self.tls.interval = settings.tls_reload_interval
            self._tls_task = self.tls.start()
        logger.info("webhook listening on %s:%d (%s)", settings.host, self._port, "https" if self.tls else "http")

    async def stop(self) -> None:
        """Drain: report not ready, optionally wait, stop accepting, let in-flight requests finish.

        In flight means the headers have arrived: a review whose body is still on its way is
        waited for (up to ``shutdown_timeout``) and answered, not cut off.
        """
        self._draining = True
        if self.settings.shutdown_delay > 0:
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
        await stop_task(self._tls_task)
        self._tls_task = None
        await self.source.stop()
        logger.info("webhook stopped")

    async def serve(self, *, stop: asyncio.Event | None = None) -> None:
        """Run until SIGTERM/SIGINT (or ``stop`` is set), then drain and return."""
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []

        def on_signal() -> None:
            if stop.is_set():  # a second signal while draining: the drain goes on, nothing is dropped
                logger.info("already shutting down: in-flight requests are still being answered")
            stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, on_signal)
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


class ByteBudget:
    """Bytes that may be taken at once; takers wait in order (one event loop, no locks)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.free = total
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def take(self, amount: int) -> int:
        """Wait until ``amount`` (at most the whole budget) is free, take it and return it."""
        amount = min(amount, self.total)
        if not self._waiting and self.free >= amount:
            self.free -= amount
            return amount
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (amount, waiter)
        self._waiting.append(entry)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give(amount)  # granted just as it was cancelled: hand it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(entry)
                self._wake()
            raise
        return amount

    def give(self, amount: int) -> None:
        self.free += amount
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            amount, waiter = self._waiting[0]
            if waiter.done():  # cancelled while waiting: its taker removes nothing more
                self._waiting.popleft()
                continue
            if self.free < amount:
                break
            self._waiting.popleft()
            self.free -= amount
            waiter.set_result(None)


def _review(answer: Mapping[str, Any]) -> web.Response:
    return web.Response(body=wire.encode(answer), content_type="application/json")


def _error(status: int, message: str, *, close: bool = False) -> web.Response:
    response = web.json_response({"error": message, "code": status}, status=status)
    if close:  # the connection's state is unknown (body unread or partly read): do not reuse it
        response.force_close()
    return response
