"""Connections of the webhook: a cap, deadlines for slow or silent clients, and bounded TLS state.

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
* per-connection memory is bounded through public APIs only: the cap, and TLS by the event loop's
  own protocol (``loop.start_tls`` on the accepted socket, so the slot is taken before any TLS
  state exists and a connection can be evicted mid-handshake). asyncio's TLS protocol holds a
  256 KiB receive buffer per connection (about 300 KB with the rest, ``bench/README.md``), and
  glibc keeps freed heap after a flood, so the default cap is 256 connections (the only client is
  the API server, which keeps a few dozen per replica): the worst case is the cap times that,
  under the install's limit, whatever clients do. No private asyncio attribute is read or
  written and no C library is called.

Nothing here logs a client's bytes; logs carry counts and the reason a connection was closed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("workerclass.webhook")

#: the most bytes a TLS connection queues for writing before aiohttp is told to wait (asyncio's
#: default is 512 KiB per connection; an answer is a few KiB)
WRITE_LIMIT = 64 * 1024

#: why a connection was closed by the guard (bounded label values)
CLOSE_REASONS = ("refused", "evicted", "header_timeout", "header_too_large")

_NEW, _READING, _ACTIVE, _IDLE, _CLOSED = range(5)


def _abort(transport: asyncio.BaseTransport) -> None:
    """Close a transport now, dropping what it buffered (every stream transport can)."""
    if isinstance(transport, asyncio.WriteTransport):
        transport.abort()
    else:  # pragma: no cover - the loop's stream transports are write transports
        transport.close()


class _Slot:
    """One accepted connection: its transport, where it is in its life, and its deadline."""

    __slots__ = ("guard", "handler", "header_bytes", "state", "tail", "timer", "transport", "upgrade")

    def __init__(self, guard: ConnectionGuard) -> None:
        self.guard = guard
        self.header_bytes = 0
        self.tail = b""  # the last bytes of a chunk that ended inside the request's headers
        self.state = _NEW
        self.transport: asyncio.BaseTransport | None = None  # the raw socket's, then the TLS one
        self.timer: asyncio.TimerHandle | None = None
        self.handler: asyncio.BaseProtocol | None = None
        self.upgrade: asyncio.Task[None] | None = None  # the TLS handshake (a reference keeps it alive)


class _Refused(asyncio.Protocol):
    """A connection over the cap: closed as soon as it is made, nothing allocated for it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        _abort(transport)


class _Guarded(asyncio.Protocol):
    """Sits between the transport (plain, or the loop's TLS app transport) and aiohttp's handler:
    starts TLS on the accepted socket, makes the handler only once the connection is usable (after
    the handshake), notices the first byte of a request, and frees the slot when the connection is
    lost."""

    __slots__ = ("early", "inner", "slot")

    def __init__(self, slot: _Slot) -> None:
        self.slot = slot
        self.inner: asyncio.Protocol | None = None
        #: what came between the handshake's end and the handler (the request may follow the
        #: handshake in the same read); counted against the header limit like any request byte
        self.early: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        slot = self.slot
        if slot.state == _CLOSED:  # made room for another before the loop got to make it
            _abort(transport)
            return
        slot.transport = transport
        if slot.guard.tls is None:
            self._serve(transport)
        else:
            slot.upgrade = asyncio.get_running_loop().create_task(self._secure(transport))

    async def _secure(self, raw: asyncio.BaseTransport) -> None:
        """The TLS handshake (``loop.start_tls``, bounded by the handshake timeout), then the handler."""
        slot = self.slot
        guard = slot.guard
        assert guard.tls is not None
        secure: asyncio.BaseTransport | None = None
        if not isinstance(raw, asyncio.Transport):  # pragma: no cover - the loop's stream transports are
            guard._release(slot)
            _abort(raw)
            return
        try:
            secure = await asyncio.get_running_loop().start_tls(
                raw,
                self,
                guard.tls,
                server_side=True,
                ssl_handshake_timeout=guard.handshake_timeout,
            )
        except (OSError, ssl.SSLError, TimeoutError, RuntimeError) as error:
            logger.debug("TLS handshake failed: %s", type(error).__name__)
        finally:
            slot.upgrade = None
        if secure is None or slot.state == _CLOSED:  # failed, or closed by the guard meanwhile
            guard._release(slot)
            _abort(secure if secure is not None else raw)
            return
        slot.transport = secure
        if isinstance(secure, asyncio.WriteTransport):
            secure.set_write_buffer_limits(high=WRITE_LIMIT)
        self._serve(secure)

    def _serve(self, transport: asyncio.BaseTransport) -> None:
        self.inner = inner = self.slot.guard._handler_for(self.slot)
        inner.connection_made(transport)
        if self.early:
            data, self.early = b"".join(self.early), []
            inner.data_received(data)

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
        if self.inner is None:
            self.early.append(data)
            return
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
        if self.open >= self.limit and not self._make_room():
            self.closed["refused"] += 1
            return _Refused()
        slot = _Slot(self)
        self.open += 1
        self.accepted += 1
        self._pending[slot] = None
        slot.timer = loop.call_later(self.header_timeout, self._expire, slot)
        return _Guarded(slot)

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
        slot = self._by_handler.get(handler)
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
        for waiting in (self._pending, self._idle):
            for slot in list(waiting):
                self._close(slot)

    def stats(self) -> dict[str, Any]:
        return {"open": self.open, "accepted": self.accepted, "limit": self.limit, **self.closed}
