"""Connections of the webhook: a cap, deadlines for slow or silent clients, and small TLS state.

Its edge: accepted sockets in, aiohttp's request handler out. Every connection takes a *slot*
from :class:`ConnectionGuard` when it is accepted (before any TLS), and gives it back when it
closes, so the number of open connections, and with it the memory they hold, is bounded
whatever clients do:

* at most ``max_connections`` are open. At the cap a new connection takes the slot of another
  that has not delivered a request yet: first the oldest that never sent a byte (a silent
  socket; one whose bytes wait unread in the kernel counts as having spoken), then, when every
  connection has spoken, the one heard from least recently (a stalled TLS handshake or header),
  each only once it had ``GRACE`` seconds to speak. The event loop accepts a burst of sockets
  before it reads any, so a client that speaks at once (the API server, a probe) would otherwise
  lose its slot to the silent sockets accepted behind it: while the oldest is in its grace, up
  to ``BURST`` times ``max_connections`` more are accepted (a socket and a few KB each until they
  speak) and the surplus is closed as the grace ends; past that, the oldest goes anyway, then the
  connection idle longest between requests. A connection whose request is being answered is
  never closed for another: when every slot is answering one, the new connection is refused
  (closed at once). ``workerclass_webhook_connections`` and the
  ``..._connections_closed_total{reason}`` counter export it;
* a request's headers must be complete within ``header_timeout`` of the connection's start or
  of its first byte after an idle pause (a slowloris client is closed however steadily it
  trickles bytes), and within ``max_header_bytes`` (aiohttp's own limits, 128 lines of 8 KiB,
  would let 1 MiB through); the TLS handshake has its own timeout from its first byte; idle
  keep-alive connections are closed by aiohttp after ``keepalive_timeout``;
* per-connection memory is small, through public APIs only: TLS is :class:`~.tlsstream.TLSStream`
  (``ssl.SSLObject`` over memory BIOs, no TLS state until the client's first bytes, every socket
  read into one shared buffer), made by the guard after the slot is taken, so a connection can be
  evicted mid-handshake by aborting its socket; aiohttp's handler is made after the handshake.
  About 15 KB per silent socket and 25 KB per idle TLS connection (``bench/README.md``; asyncio's
  own TLS protocol holds a 256 KiB receive buffer per connection). No private asyncio attribute
  is read or written and no C library is called.

Nothing here logs a client's bytes; logs carry counts and the reason a connection was closed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
from collections.abc import Callable
from typing import Any

from .tlsstream import READ_CHUNK, TLSStream

try:
    import fcntl
    import termios

    _FIONREAD: int | None = termios.FIONREAD
except ImportError:  # pragma: no cover - not on Linux or macOS
    _FIONREAD = None

logger = logging.getLogger("workerclass.webhook")

#: the most bytes a TLS connection queues for writing before aiohttp is told to wait (asyncio's
#: default is 512 KiB per connection; an answer is a few KiB)
WRITE_LIMIT = 64 * 1024

#: why a connection was closed by the guard (bounded label values)
CLOSE_REASONS = ("refused", "evicted", "header_timeout", "header_too_large")

_NEW, _READING, _ACTIVE, _IDLE, _LINGERING, _CLOSED = range(6)

#: seconds a new connection has to send its first bytes, or one without a request its next ones,
#: before it can lose its slot to another (the loop reads a burst of accepted sockets only after
#: accepting them all: well under this on a loaded 2-core machine)
GRACE = 0.1

#: while the oldest connection without a request is in its grace, the server accepts up to this
#: many times ``max_connections`` more (a silent socket costs a few KB; the loop accepts up to its
#: backlog, 1,024, at a time)
BURST = 3


def _abort(transport: asyncio.BaseTransport) -> None:
    """Close a transport now, dropping what it buffered (every stream transport can)."""
    if isinstance(transport, asyncio.WriteTransport):
        transport.abort()
    else:  # pragma: no cover - the loop's stream transports are write transports
        transport.close()


def _has_input(slot: _Slot) -> bool:
    """Whether bytes wait unread in the kernel for the slot's socket (``FIONREAD``), ``False`` if
    it cannot be known (no transport made yet, or no such ioctl here)."""
    if _FIONREAD is None or slot.transport is None:
        return False
    sock = slot.transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        waiting = fcntl.ioctl(sock.fileno(), _FIONREAD, b"\0\0\0\0")
    except OSError:
        return False
    return int.from_bytes(waiting, sys.byteorder) > 0


class _Slot:
    """One accepted connection: its socket's transport, where it is in its life, and its deadline."""

    __slots__ = ("guard", "handler", "header_bytes", "since", "state", "tail", "timer", "transport")

    def __init__(self, guard: ConnectionGuard, now: float) -> None:
        self.guard = guard
        self.since = now  # accepted, or last heard from before a request's headers were complete
        self.header_bytes = 0
        self.tail = b""  # the last bytes of a chunk that ended inside the request's headers
        self.state = _NEW
        self.transport: asyncio.BaseTransport | None = None  # the accepted socket's
        self.timer: asyncio.TimerHandle | None = None
        self.handler: asyncio.BaseProtocol | None = None


class _Refused(asyncio.Protocol):
    """A connection over the cap: closed as soon as it is made, nothing allocated for it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        _abort(transport)


class _Guarded(asyncio.Protocol):
    """Sits between the transport (the plain socket's, or the decrypted stream of a
    :class:`~.tlsstream.TLSStream`) and aiohttp's handler: makes the handler once the connection
    is usable (after the TLS handshake), notices the first byte of a request, and frees the slot
    when the connection is lost."""

    __slots__ = ("inner", "slot")

    def __init__(self, slot: _Slot) -> None:
        self.slot = slot
        self.inner: asyncio.Protocol | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        slot = self.slot
        if slot.state == _CLOSED:  # made room for another before the loop got to make it
            _abort(transport)
            return
        if slot.transport is None:  # plain: this is the socket's transport
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
            else:
                slot.guard._heard(slot)
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


class _GuardedTLS(TLSStream):
    """The accepted socket's protocol when the guard serves TLS: a slot's :class:`TLSStream`."""

    __slots__ = ("slot",)

    def __init__(self, slot: _Slot, context: ssl.SSLContext, buffer: memoryview) -> None:
        super().__init__(context, _Guarded(slot), buffer=buffer, handshake_timeout=slot.guard.handshake_timeout)
        self.slot = slot

    def heard(self) -> None:
        slot = self.slot
        if slot.state in (_NEW, _READING):
            slot.guard._heard(slot)

    def lingering(self) -> None:
        self.slot.guard._lingering(self.slot)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.slot.state == _CLOSED:  # made room for another before the loop got to make it
            _abort(transport)
            return
        self.slot.transport = transport
        if isinstance(transport, asyncio.WriteTransport):
            transport.set_write_buffer_limits(high=WRITE_LIMIT)
        super().connection_made(transport)


class ConnectionGuard:
    """The protocol factory handed to ``loop.create_server``: one slot per connection, at most ``limit``.

    ``inner`` makes aiohttp's request handler (``web.Server``); ``tls`` is the listening context
    (``None``: plain HTTP, for tests and benchmarks). ``grace``: how long a connection keeps its
    slot before it has spoken (the server's is :data:`GRACE`; 0: none); ``burst``: how many
    connections may be open beyond ``limit`` while every other is in its grace (they cost a
    socket and a few KB until they speak, and the connections over the limit are closed as their
    grace ends). The end of a request's headers is seen in the
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
        grace: float = 0.0,
        burst: int = 0,
    ) -> None:
        if limit < 1:
            raise ValueError("max_connections must be at least 1")
        self.inner = inner
        self.limit = limit
        self.max_header_bytes = max_header_bytes
        self.header_timeout = header_timeout
        self.tls = tls
        self.handshake_timeout = handshake_timeout
        self.grace = grace
        self.burst = burst
        self._trimming: asyncio.TimerHandle | None = None
        #: slots that have sent nothing yet (oldest first), that have sent bytes but no complete
        #: request headers (least recently heard from first), and idle keep-alive ones (longest idle first)
        self._silent: dict[_Slot, None] = {}
        #: slots closed by aiohttp whose socket waits for the client's end (made room for first)
        self._closing: dict[_Slot, None] = {}
        self._pending: dict[_Slot, None] = {}
        self._idle: dict[_Slot, None] = {}
        #: what every connection's socket is read into (:class:`~.tlsstream.TLSStream`)
        self._buffer = memoryview(bytearray(READ_CHUNK))
        self._by_handler: dict[object, _Slot] = {}
        self.open = 0
        self.accepted = 0
        self.closed = dict.fromkeys(CLOSE_REASONS, 0)
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ accepting

    def __call__(self) -> asyncio.BaseProtocol:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if self.open >= self.limit and not self._make_room(young=False):
            if self.open < self.limit + self.burst:
                self._trim_later()  # a burst: every open connection is still in its grace
            elif not self._make_room(young=True):
                self.closed["refused"] += 1
                return _Refused()
        slot = _Slot(self, loop.time())
        self.open += 1
        self.accepted += 1
        self._silent[slot] = None
        slot.timer = loop.call_later(self.header_timeout, self._expire, slot)
        if self.tls is None:
            return _Guarded(slot)
        return _GuardedTLS(slot, self.tls, self._buffer)

    def _handler_for(self, slot: _Slot) -> asyncio.Protocol:
        inner = self.inner()
        slot.handler = inner
        self._by_handler[inner] = slot
        return inner

    def _make_room(self, *, young: bool) -> bool:
        """Close a connection for a new one; ``False`` if none may go. First one aiohttp closed
        already (waiting for the client's end), then the oldest that never sent a byte, then (when
        every connection has spoken) the one without a request heard from least recently, each
        only once it had ``grace`` seconds to speak, unless ``young``; with ``young`` (no room left
        for a burst), the longest idle last."""
        if self._closing:  # already closed for aiohttp: not counted as an eviction
            self._close(next(iter(self._closing)))
            return True
        assert self._loop is not None
        while self._silent and _has_input(next(iter(self._silent))):
            self._heard(next(iter(self._silent)))  # it spoke: its bytes are not read yet
        waiting = self._silent or self._pending
        if waiting:
            victim = next(iter(waiting))
            if young or victim.since <= self._loop.time() - self.grace:
                self.closed["evicted"] += 1
                self._close(victim)
                return True
            return False  # the silent go first, once their grace ends
        if young and self._idle:
            self.closed["evicted"] += 1
            self._close(next(iter(self._idle)))
            return True
        return False

    def _trim_later(self) -> None:
        """Over the limit with connections still in their grace: trim when the first of them ends it."""
        waiting = self._silent or self._pending
        if self._trimming is not None or not waiting:
            return
        loop = self._loop
        assert loop is not None
        delay = next(iter(waiting)).since + self.grace - loop.time()
        self._trimming = loop.call_later(max(0.0, delay), self._trim)

    def _trim(self) -> None:
        """Back to the limit: connections whose grace ended without a request, then the idle ones
        (a connection answering a request is never closed)."""
        self._trimming = None
        while self.open > self.limit:
            if self._make_room(young=False):
                continue
            if self._silent or self._pending:
                self._trim_later()
                return
            if not self._idle:
                return
            self.closed["evicted"] += 1
            self._close(next(iter(self._idle)))

    def _close(self, slot: _Slot) -> None:
        """Abort the connection now and free its slot (its ``connection_lost`` comes later, and finds it freed)."""
        transport = slot.transport
        self._release(slot)
        if transport is not None:
            _abort(transport)

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

    def _heard(self, slot: _Slot) -> None:
        """Bytes before a request's headers are complete (a TLS handshake's, or the headers'): the
        connection is the most recently active of those without a request."""
        if slot.state == _NEW:
            slot.state = _READING
            self._silent.pop(slot, None)
        elif slot.state != _READING:
            return
        assert self._loop is not None
        slot.since = self._loop.time()
        self._pending.pop(slot, None)
        self._pending[slot] = None

    def _unqueue(self, slot: _Slot) -> None:
        """``slot`` out of every eviction queue, its deadline cancelled."""
        self._silent.pop(slot, None)
        self._pending.pop(slot, None)
        self._idle.pop(slot, None)
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None

    def _lingering(self, slot: _Slot) -> None:
        """aiohttp closed the connection; its socket waits a little for the client's end."""
        if slot.state == _CLOSED:
            return
        slot.state = _LINGERING
        self._unqueue(slot)
        self._closing[slot] = None

    def _reading(self, slot: _Slot) -> None:
        """The first byte after an idle pause: the request's headers are due within ``header_timeout``."""
        self._idle.pop(slot, None)
        slot.header_bytes = 0
        slot.state = _READING
        self._pending[slot] = None
        loop = self._loop
        assert loop is not None
        slot.since = loop.time()
        slot.timer = loop.call_later(self.header_timeout, self._expire, slot)

    def _headers_in(self, slot: _Slot) -> None:
        """A request's headers are complete: the connection is busy until its answer is sent."""
        slot.state = _ACTIVE
        slot.tail = b""
        self._unqueue(slot)

    def request_started(self, handler: object) -> None:
        """aiohttp runs a handler (a pipelined request arrives with no bytes of its own to notice)."""
        slot = self._by_handler.get(handler)
        if slot is None or slot.state == _CLOSED or slot.state == _ACTIVE:
            return
        slot.state = _ACTIVE
        self._unqueue(slot)

    def request_finished(self, handler: object, *, reusable: bool = True) -> None:
        """The answer is made; ``reusable``: the connection stays open for another request
        (otherwise it stays busy until aiohttp closes it)."""
        slot = self._by_handler.get(handler)
        if slot is None or slot.state != _ACTIVE or not reusable:
            return
        slot.state = _IDLE
        self._idle[slot] = None

    def _release(self, slot: _Slot) -> None:
        if slot.state == _CLOSED:
            return
        slot.state = _CLOSED
        self.open -= 1
        self._closing.pop(slot, None)
        self._silent.pop(slot, None)
        self._pending.pop(slot, None)
        self._idle.pop(slot, None)
        if slot.handler is not None:
            self._by_handler.pop(slot.handler, None)
            slot.handler = None
        if slot.timer is not None:
            slot.timer.cancel()
            slot.timer = None
        slot.transport = None

    # ------------------------------------------------------------------ shutdown

    def close_waiting(self) -> None:
        """Close every connection that is not answering a request (on shutdown)."""
        if self._trimming is not None:
            self._trimming.cancel()
            self._trimming = None
        for waiting in (self._closing, self._silent, self._pending, self._idle):
            for slot in list(waiting):
                self._close(slot)

    def stats(self) -> dict[str, Any]:
        return {"open": self.open, "accepted": self.accepted, "limit": self.limit, **self.closed}
