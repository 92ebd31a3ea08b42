"""Connections of the webhook: a cap, deadlines for slow or silent clients, and small TLS state.

Its edge: accepted sockets in, aiohttp's request handler out. Every connection takes a *slot*
from :class:`ConnectionGuard` when it is accepted (before any TLS), and gives it back when it
closes, so the number of open connections, and with it the memory they hold, is bounded
whatever clients do:

* at most ``max_connections`` are open. At the cap a new connection takes the slot of the
  oldest one that has not delivered a request yet (still in its TLS handshake, silent, or
  sending headers slowly), else of the connection idle longest between requests; a connection
  whose request is being answered is never closed for another. When every slot is answering a
  request, the new connection is refused (closed at once). ``workerclass_webhook_connections``
  and the ``..._connections_closed_total{reason}`` counter export it;
* a request's headers must be complete within ``header_timeout`` of the connection's start or
  of its first byte after an idle pause (a slowloris client is closed however steadily it
  trickles bytes), and within ``max_header_bytes`` (aiohttp's own limits, 128 lines of 8 KiB,
  would let 1 MiB through); the TLS handshake has its own timeout; idle keep-alive connections
  are closed by aiohttp after ``keepalive_timeout``;
* per-connection memory is small and given back: asyncio's TLS protocol gives each connection
  a 256 KiB receive buffer of its own (about 300 KB per connection with the rest, measured in
  ``bench/README.md``), which glibc does not give back after a flood. Here every connection of
  one event loop reads into one shared buffer: the transport fills it and the protocol copies the
  bytes into the connection's TLS input at once, before the loop runs anything else, so sharing
  it is safe on a single-threaded loop. The TLS handshake starts with the client's first bytes
  and aiohttp's handler is made only after it, so a silent TCP connection holds ~10 KB; after
  every 64 closed connections (at most once a second) the freed heap is returned to the system
  (``malloc_trim``).

Nothing here logs a client's bytes; logs carry counts and the reason a connection was closed.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import ssl
from asyncio import sslproto
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("workerclass.webhook")

#: what the TLS protocol reads per call (the default is 256 KiB; a TLS record is at most ~16 KiB):
#: it bounds the undecrypted and the decrypted bytes a connection holds while its reader is paused
READ_CHUNK = 16 * 1024

#: why a connection was closed by the guard (bounded label values)
CLOSE_REASONS = ("refused", "evicted", "header_timeout", "header_too_large")

_NEW, _READING, _ACTIVE, _IDLE, _CLOSED = range(5)

#: after this many connections closed (and a second), give freed heap memory back to the system (glibc keeps it
#: otherwise: a flood would leave its peak as the process's resident size)
TRIM_AFTER = 64


def _malloc_trim() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)``, or ``None`` on another C library."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call() -> None:
        trim(0)

    return call


_TRIM = _malloc_trim()


class _Slot:
    """One accepted connection: its raw transport, where it is in its life, and its deadline."""

    __slots__ = ("guard", "handler", "header_bytes", "state", "tail", "timer", "transport")

    def __init__(self, guard: ConnectionGuard) -> None:
        self.guard = guard
        self.header_bytes = 0
        self.tail = b""  # the last bytes of a chunk that ended inside the request's headers
        self.state = _NEW
        self.transport: asyncio.BaseTransport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.handler: asyncio.BaseProtocol | None = None


class _Refused(asyncio.Protocol):
    """A connection over the cap: closed as soon as it is made, nothing allocated for it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


class _Guarded(asyncio.Protocol):
    """Sits between the transport (plain, or asyncio's TLS app transport) and aiohttp's handler:
    makes the handler only once the connection is usable (after the TLS handshake), notices the
    first byte of a request, and frees the slot when the connection is lost."""

    __slots__ = ("inner", "slot")

    def __init__(self, slot: _Slot) -> None:
        self.slot = slot
        self.inner: asyncio.Protocol | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        slot = self.slot
        if slot.state == _CLOSED:  # made room for another before the loop got to make it
            transport.abort()  # type: ignore[attr-defined]
            return
        if slot.transport is None:  # plain TCP: this is the raw transport
            slot.transport = transport
        self.inner = inner = slot.guard._handler_for(slot)
        inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        slot = self.slot
        state = slot.state
        if state != _ACTIVE:
            if state == _IDLE:
                slot.guard._reading(slot)
            elif state == _CLOSED:
                return
            # Until the blank line that ends the headers, every byte is request line or header:
            # bounded in time (the header deadline) and in size, whatever aiohttp's per-line limits
            # would let through. Its end makes the connection busy (never evicted, no deadline).
            end = data.find(b"\r\n\r\n")
            if end < 0 and slot.tail:
                end = (slot.tail + data[:3]).find(b"\r\n\r\n")
            if end >= 0:
                slot.guard._headers_in(slot)
            else:
                slot.header_bytes += len(data)
                if slot.header_bytes > slot.guard.max_header_bytes:
                    slot.guard._too_large(slot)
                    return
                slot.tail = data[-3:]
        assert self.inner is not None
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            if self.inner is not None:
                self.inner.connection_lost(exc)
        finally:
            self.slot.guard._release(self.slot)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()


class _SlimTLS(sslproto.SSLProtocol):
    """asyncio's TLS protocol reading into the loop's shared buffer instead of 256 KiB of its own.

    ``max_size`` is shadowed while the base class builds its buffer (so it allocates nothing), then
    the shared buffer is put in its place; ``get_buffer`` hands it out unchanged because it is as
    large as ``max_size``. The slot is released here too, since the application protocol never
    hears of a connection whose handshake did not finish.
    """

    max_size = READ_CHUNK

    def __init__(
        self,
        slot: _Slot,
        loop: asyncio.AbstractEventLoop,
        app: asyncio.BaseProtocol,
        context: ssl.SSLContext,
        buffer: tuple[bytearray, memoryview],
        handshake_timeout: float,
    ) -> None:
        # the base class allocates bytearray(self.max_size): shadow it with 0 for the call
        self.max_size = 0  # type: ignore[misc]
        super().__init__(
            loop,
            app,
            context,
            None,  # type: ignore[arg-type]  # no waiter: nobody awaits the handshake
            server_side=True,
            ssl_handshake_timeout=handshake_timeout,  # type: ignore[arg-type]  # typeshed says int
        )
        del self.max_size
        self._ssl_buffer, self._ssl_buffer_view = buffer
        self._slot = slot
        # While aiohttp pauses reading (a body nobody reads yet), asyncio keeps up to 256 KiB of
        # undecrypted input per connection by default, and 512 KiB of output: keep a few reads.
        self._set_read_buffer_limits(high=2 * READ_CHUNK)  # type: ignore[attr-defined]
        self._set_write_buffer_limits(high=4 * READ_CHUNK)  # type: ignore[attr-defined]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # The handshake starts with the client's first bytes: OpenSSL's first handshake step
        # allocates ~32 KB of buffers, which a silent connection then never costs.
        if self._slot.state == _CLOSED:  # made room for another before the loop got to make it
            transport.abort()  # type: ignore[attr-defined]
            return
        self._slot.transport = transport

    def buffer_updated(self, nbytes: int) -> None:
        if self._transport is None:  # the first bytes (the shared buffer holds them until below)
            transport = self._slot.transport
            if transport is None:  # released meanwhile (evicted or timed out): drop the bytes
                return
            super().connection_made(transport)
        super().buffer_updated(nbytes)

    def connection_lost(self, exc: BaseException | None) -> None:
        try:
            super().connection_lost(exc)
        finally:
            self._slot.guard._release(self._slot)


class ConnectionGuard:
    """The protocol factory handed to ``loop.create_server``: one slot per connection, at most ``limit``.

    ``inner`` makes aiohttp's request handler (``web.Server``); ``tls`` is the listening context
    (``None``: plain HTTP, for tests and benchmarks). The end of a request's headers is seen in the
    bytes; :meth:`request_finished` is called by the server's handlers with aiohttp's handler of
    the connection (``request.protocol``), and :meth:`request_started` for a request that was
    pipelined behind another (its bytes came while the connection was busy).
    """

    def __init__(
        self,
        inner: Callable[[], asyncio.Protocol],
        *,
        limit: int,
        header_timeout: float,
        tls: ssl.SSLContext | None,
        handshake_timeout: float,
        max_header_bytes: int = 64 * 1024,
    ) -> None:
        if limit < 1:
            raise ValueError("max_connections must be at least 1")
        self.inner = inner
        self.limit = limit
        self.max_header_bytes = max_header_bytes
        self.header_timeout = header_timeout
        self.tls = tls
        self.handshake_timeout = handshake_timeout
        #: slots that have not delivered a request (oldest first), and idle keep-alive ones
        self._pending: dict[_Slot, None] = {}
        self._idle: dict[_Slot, None] = {}
        self._by_handler: dict[asyncio.BaseProtocol, _Slot] = {}
        self.open = 0
        self.accepted = 0
        self.closed = dict.fromkeys(CLOSE_REASONS, 0)
        buffer = bytearray(READ_CHUNK)
        self._buffer = (buffer, memoryview(buffer))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed_since_trim = 0
        self._trim_scheduled = False
        self.trims = 0

    # ------------------------------------------------------------------ accepting

    def __call__(self) -> asyncio.BaseProtocol:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if self.open >= self.limit and not self._make_room():
            self.closed["refused"] += 1
            return _Refused()
        slot = _Slot(self)
        self.open += 1
        self.accepted += 1
        self._pending[slot] = None
        slot.timer = loop.call_later(self.header_timeout, self._expire, slot)
        guarded = _Guarded(slot)
        if self.tls is None:
            return guarded
        return _SlimTLS(slot, loop, guarded, self.tls, self._buffer, self.handshake_timeout)

    def _handler_for(self, slot: _Slot) -> asyncio.Protocol:
        inner = self.inner()
        slot.handler = inner
        self._by_handler[inner] = slot
        return inner

    def _make_room(self) -> bool:
        """Close the oldest connection without a request, else the longest idle; ``False`` if none."""
        for waiting in (self._pending, self._idle):
            if waiting:
                victim = next(iter(waiting))
                self.closed["evicted"] += 1
                self._close(victim)
                return True
        return False

    def _close(self, slot: _Slot) -> None:
        """Abort the connection now and free its slot (its ``connection_lost`` comes later, and finds it freed)."""
        transport = slot.transport
        self._release(slot)
        if transport is not None:
            transport.abort()  # type: ignore[attr-defined]

    def _expire(self, slot: _Slot) -> None:
        slot.timer = None
        if slot.state in (_NEW, _READING):
            self.closed["header_timeout"] += 1
            logger.debug("closed a connection that sent no complete request headers in %gs", self.header_timeout)
            self._close(slot)

    def _too_large(self, slot: _Slot) -> None:
        self.closed["header_too_large"] += 1
        logger.debug("closed a connection that sent more than %d bytes before a request", self.max_header_bytes)
        self._close(slot)

    # ------------------------------------------------------------------ a connection's life

    def _reading(self, slot: _Slot) -> None:
        """The first byte after an idle pause: the request's headers are due within ``header_timeout``."""
        self._idle.pop(slot, None)
        slot.header_bytes = 0
        slot.state = _READING
        self._pending[slot] = None
        loop = self._loop
        assert loop is not None
        slot.timer = loop.call_later(self.header_timeout, self._expire, slot)

    def _headers_in(self, slot: _Slot) -> None:
        """A request's headers are complete: the connection is busy until its answer is sent."""
        slot.state = _ACTIVE
        slot.tail = b""
        self._pending.pop(slot, None)
        self._idle.pop(slot, None)
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None

    def request_started(self, handler: object) -> None:
        """aiohttp runs a handler (a pipelined request arrives with no bytes of its own to notice)."""
        slot = self._by_handler.get(handler)  # type: ignore[call-overload]
        if slot is None or slot.state == _CLOSED or slot.state == _ACTIVE:
            return
        slot.state = _ACTIVE
        self._pending.pop(slot, None)
        self._idle.pop(slot, None)
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None

    def request_finished(self, handler: object, *, reusable: bool = True) -> None:
        """The answer is made; ``reusable``: the connection stays open for another request
        (otherwise it stays busy until aiohttp closes it)."""
        slot = self._by_handler.get(handler)  # type: ignore[call-overload]
        if slot is None or slot.state != _ACTIVE or not reusable:
            return
        slot.state = _IDLE
        self._idle[slot] = None

    def _release(self, slot: _Slot) -> None:
        if slot.state == _CLOSED:
            return
        slot.state = _CLOSED
        self.open -= 1
        self._pending.pop(slot, None)
        self._idle.pop(slot, None)
        if slot.handler is not None:
            self._by_handler.pop(slot.handler, None)
            slot.handler = None
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None
        slot.transport = None
        self._closed_since_trim += 1
        if self._closed_since_trim >= TRIM_AFTER and not self._trim_scheduled and _TRIM is not None:
            loop = self._loop
            if loop is not None:
                self._trim_scheduled = True
                loop.call_later(1.0, self._trim)  # once the burst of closes has passed

    def _trim(self) -> None:
        self._trim_scheduled = False
        self._closed_since_trim = 0
        if _TRIM is not None:
            _TRIM()
            self.trims += 1

    # ------------------------------------------------------------------ shutdown

    def close_waiting(self) -> None:
        """Close every connection that is not answering a request (on shutdown)."""
        for waiting in (self._pending, self._idle):
            for slot in list(waiting):
                self._close(slot)

    def stats(self) -> dict[str, Any]:
        return {"open": self.open, "accepted": self.accepted, "limit": self.limit, **self.closed}
