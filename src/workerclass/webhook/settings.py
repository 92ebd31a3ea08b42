"""The webhook server's settings: the listening address and the limits that keep bad or slow
clients from hurting it (body size and time, connections, header bytes, shutdown timing).

Its edge: plain data, shared by the request handler (:mod:`.handler`) and the lifecycle
(:mod:`.server`, which re-exports :class:`Settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIB", "Settings"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """Listening address and the limits that keep bad or slow clients from hurting the server."""

    host: str = "0.0.0.0"
    port: int = 8443
    #: serve ``/metrics`` on this port (plain HTTP, nothing else there) instead of the HTTPS port,
    #: which the API server reaches from anywhere: a NetworkPolicy can then admit the scrapers to
    #: this port alone. 0: ``/metrics`` on the HTTPS port
    metrics_port: int = 0
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
    #: open connections at most (each ~2-21 KB idle, ~135 KB stalled mid-body: bench/README.md;
    #: the API server, the only client, keeps a few dozen per replica); at the cap the oldest
    #: connection without a request, else the longest idle one, makes room, and a new connection
    #: is refused only when every one is answering a request
    max_connections: int = 256
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
    #: on shutdown, keep serving (reported not ready, every answer closing its connection) this long
    #: so endpoints drop the pod first and the API server moves its kept-alive connections off it;
    #: 0 closes the listener and the idle connections at once (a request already on its way on one
    #: of them is lost: the API server counts it as a failed call)
    shutdown_delay: float = 5.0
    #: how often the certificate files are checked for rotation
    tls_reload_interval: float = 5.0
    #: a decision that rests on an object not being there (``ClassNotFound``, a class DELETE no pool
    #: stands in the way of) is confirmed by reading those kinds live, for at most this many seconds;
    #: past it the cache's decision is answered (the API server's webhook timeout is 10 s by default)
    live_read_timeout: float = 2.0
    #: live reads sent per second at most, over all requests (requests waiting for the same kinds
    #: share one read: :mod:`.livereads`); past it the cache's decision is answered
    live_read_rate: float = 5.0
    #: live reads sent at once at most before the rate applies
    live_read_burst: int = 10
    #: log every request line (off by default: denials are logged anyway)
    access_log: bool = False
    max_field_size: int = 8190
