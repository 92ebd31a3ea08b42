"""Server-side TLS on an accepted socket, with small per-connection state and public APIs only.

Its edge: a plain stream transport in (the accepted socket), an :class:`asyncio.Transport` of
decrypted bytes out to an :class:`asyncio.Protocol`. TLS is :class:`ssl.SSLObject` over two
:class:`ssl.MemoryBIO`; nothing of asyncio's own TLS protocol is used. What a connection holds:

* nothing of TLS until the client's first bytes arrive (a silent socket holds the transport and
  this protocol only); the TLS object is made then, and dropped when the connection is lost;
* no receive buffer of its own: the socket is read into one buffer shared by every connection
  of the guard (:class:`asyncio.BufferedProtocol`; the selector event loop calls ``get_buffer``,
  reads, and calls ``buffer_updated`` in one step, and the bytes are copied into the connection's
  TLS input before anything else runs). asyncio's TLS protocol instead gives every connection a
  256 KiB buffer when TLS starts, which glibc keeps after a flood;
* while the application has paused reading, undecrypted input up to :data:`INPUT_LIMIT`, then the
  socket is not read; decrypted bytes are handed on :data:`READ_CHUNK` at a time.

The application's protocol gets ``connection_made`` once the handshake is done (a connection
that never completes one never reaches it) and ``connection_lost`` whenever the socket goes,
handshake done or not. Nothing here logs a client's bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any

logger = logging.getLogger("workerclass.webhook")

#: decrypted bytes handed to the application at once (a TLS record carries at most 16 KiB)
READ_CHUNK = 16 * 1024

#: seconds a closed connection waits for the client's end before its socket is aborted
LINGER = 2.0

#: undecrypted bytes a connection holds while its application does not read; past it the socket is not read
INPUT_LIMIT = 32 * 1024


class TLSStream(asyncio.BufferedProtocol):
    """The accepted socket's protocol: decrypts into ``app``, encrypts what ``app`` writes.

    ``buffer`` is the shared receive buffer; :meth:`heard` is called on every chunk's arrival, before
    it is decrypted (so a handshake's bytes count as the connection's activity); ``handshake_timeout``
    runs from the first byte.
    """

    __slots__ = (
        "app",
        "app_paused",
        "buffer",
        "context",
        "handshake_timeout",
        "incoming",
        "outgoing",
        "raw",
        "raw_paused",
        "secure",
        "timer",
        "tls",
        "transport",
    )

    def __init__(
        self,
        context: ssl.SSLContext,
        app: asyncio.Protocol,
        *,
        buffer: memoryview,
        handshake_timeout: float,
    ) -> None:
        self.context = context
        self.app = app
        self.buffer = buffer
        self.handshake_timeout = handshake_timeout
        self.raw: asyncio.Transport | None = None
        self.tls: ssl.SSLObject | None = None
        self.incoming: ssl.MemoryBIO | None = None
        self.outgoing: ssl.MemoryBIO | None = None
        self.transport: TLSTransport | None = None  # the application's, once the handshake is done
        self.secure = False
        self.app_paused = False
        self.raw_paused = False
        self.timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ the socket's side

    def heard(self) -> None:
        """Bytes arrived from the client (a hook: nothing here)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.raw = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self.raw is None or self.raw.is_closing() or (self.transport is not None and self.transport.closing):
            return  # closing: what the client still sends is dropped
        if self.tls is None:
            self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self.tls = self.context.wrap_bio(self.incoming, self.outgoing, server_side=True)
            self.timer = asyncio.get_running_loop().call_later(self.handshake_timeout, self._handshake_expired)
        assert self.incoming is not None
        self.incoming.write(self.buffer[:nbytes])
        self.heard()
        self._advance()

    def eof_received(self) -> bool | None:
        if self.secure and self.transport is not None and not self.transport.closing:
            return self.app.eof_received()
        return None  # the loop closes the socket

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.tls = self.incoming = self.outgoing = None
        self.raw = None
        if self.transport is not None:
            self.transport.closing = True
        self.app.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.secure:
            self.app.pause_writing()

    def resume_writing(self) -> None:
        if self.secure:
            self.app.resume_writing()

    # ------------------------------------------------------------------ TLS

    def _advance(self) -> None:
        tls = self.tls
        assert tls is not None
        if not self.secure:
            try:
                tls.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                return
            except (ssl.SSLError, ValueError) as error:
                logger.debug("TLS handshake failed: %s", type(error).__name__)
                self._flush()
                self._give_up()
                return
            self._flush()
            self.secure = True
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            assert self.raw is not None
            self.transport = TLSTransport(self)
            self.app.connection_made(self.transport)
        self._decrypt()

    def _decrypt(self) -> None:
        """Hand the application what has arrived, unless it paused reading; pause the socket when
        too much waits undecrypted."""
        while not self.app_paused and self.tls is not None and self.raw is not None and not self.raw.is_closing():
            try:
                data = self.tls.read(READ_CHUNK)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                data = b""
            except ssl.SSLError as error:
                logger.debug("TLS read failed: %s", type(error).__name__)
                self._give_up()
                return
            if not data:  # the client's close_notify: the end of its stream
                self._flush()
                if self.transport is not None and not self.app.eof_received():
                    self.transport.close()
                return
            self.app.data_received(data)
        self._flush()
        raw, incoming = self.raw, self.incoming
        if raw is None or incoming is None:
            return
        waiting = incoming.pending > INPUT_LIMIT
        if waiting and not self.raw_paused and not raw.is_closing():
            self.raw_paused = True
            raw.pause_reading()
        elif not waiting and self.raw_paused and not self.app_paused and not raw.is_closing():
            self.raw_paused = False
            raw.resume_reading()

    def _flush(self) -> None:
        if self.outgoing is not None and self.outgoing.pending and self.raw is not None and not self.raw.is_closing():
            self.raw.write(self.outgoing.read())

    def _give_up(self) -> None:
        if self.raw is not None:
            self.raw.close()  # after what is queued (the alert, if OpenSSL made one)

    def _handshake_expired(self) -> None:
        self.timer = None
        if not self.secure and self.raw is not None:
            logger.debug("closed a connection whose TLS handshake took over %gs", self.handshake_timeout)
            self.raw.abort()

    # ------------------------------------------------------------------ the application's side

    def write(self, data: bytes | bytearray | memoryview) -> None:
        tls = self.tls
        if tls is None or self.raw is None or self.raw.is_closing():
            return
        view = memoryview(data).cast("B")
        while view:
            try:
                sent = tls.write(view[:READ_CHUNK])
            except ssl.SSLError as error:
                logger.debug("TLS write failed: %s", type(error).__name__)
                self._give_up()
                return
            view = view[sent:]
        self._flush()

    def pause_reading(self) -> None:
        self.app_paused = True

    def resume_reading(self) -> None:
        if not self.app_paused:
            return
        self.app_paused = False
        if self.tls is not None:  # what waited is handed on from the loop, not from within the caller
            asyncio.get_running_loop().call_soon(self._resumed)

    def _resumed(self) -> None:
        if not self.app_paused and self.tls is not None:
            self._decrypt()

    def shutdown(self) -> None:
        """The application closed: send close_notify and the socket's FIN after what is queued,
        then drop what the client still sends until it closes too, for at most :data:`LINGER`
        seconds (closing a socket with unread input resets it, and a reset loses the answer the
        client has not read yet). The TLS state is dropped at once."""
        raw = self.raw
        if self.tls is not None and self.secure:
            with contextlib.suppress(ssl.SSLError, ValueError):  # the client's close_notify is not awaited
                self.tls.unwrap()
            self._flush()
        self.tls = self.incoming = self.outgoing = None
        if raw is None or raw.is_closing():
            return
        if not raw.can_write_eof():  # pragma: no cover - stream sockets can
            raw.close()
            return
        try:
            raw.write_eof()
        except OSError:  # the client is gone already (ENOTCONN): nothing to linger for
            raw.abort()
            return
        self.lingering()
        if self.raw_paused:
            self.raw_paused = False
            raw.resume_reading()
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(LINGER, raw.abort)

    def lingering(self) -> None:
        """The application closed and the client is given :data:`LINGER` seconds to close (a hook)."""


class TLSTransport(asyncio.Transport):
    """The decrypted stream of a :class:`TLSStream`, as the application sees it."""

    __slots__ = ("closing", "stream")

    def __init__(self, stream: TLSStream) -> None:
        super().__init__()
        self.stream = stream
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        tls = self.stream.tls
        if name == "sslcontext":
            return tls.context if tls is not None else default
        if name == "ssl_object":
            return tls if tls is not None else default
        if name == "peercert":
            return tls.getpeercert() if tls is not None else default
        if name == "cipher":
            return tls.cipher() if tls is not None else default
        if name == "compression":
            return tls.compression() if tls is not None else default
        raw = self.stream.raw
        return raw.get_extra_info(name, default) if raw is not None else default

    def is_closing(self) -> bool:
        raw = self.stream.raw
        return self.closing or raw is None or raw.is_closing()

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            self.stream.shutdown()

    def abort(self) -> None:
        self.closing = True
        if self.stream.raw is not None:
            self.stream.raw.abort()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closing:
            self.stream.write(data)

    def can_write_eof(self) -> bool:
        return False

    def pause_reading(self) -> None:
        self.stream.pause_reading()

    def resume_reading(self) -> None:
        self.stream.resume_reading()

    def is_reading(self) -> bool:
        return not self.stream.app_paused and not self.is_closing()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if self.stream.raw is not None:
            self.stream.raw.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        raw = self.stream.raw
        return raw.get_write_buffer_size() if raw is not None else 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        raw = self.stream.raw
        return raw.get_write_buffer_limits() if raw is not None else (0, 0)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        assert isinstance(protocol, asyncio.Protocol)
        self.stream.app = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.stream.app
