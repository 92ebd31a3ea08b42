"""lightkube's requests carried by aiohttp: the same client API, a third of the CPU per request.

lightkube builds its requests with its HTTP library (``httpx2``) and sends them through a transport,
which lightkube lets a caller choose (``AsyncClient(transport=...)``). The default one (httpcore over
anyio, h11 parsing in Python, TLS through ``ssl.SSLObject``) costs about 1.9 ms of CPU per request on
the test bed; :class:`AiohttpTransport` sends the same request through an aiohttp session (its C HTTP
parser, asyncio's TLS) for about 0.8 ms (``bench/README.md``: a controller applying 2,000 pools sends
~28,000 requests, and its CPU competes with the API server's on the same machine). Everything above
the transport is lightkube's and the HTTP library's as before: models, authentication (bearer tokens,
exec plugins, token files re-read on 401), errors, lists, watches (streamed), timeouts.

What it maps: the request's method, URL, headers and body; the timeout extension (``connect`` to the
connection's, ``read`` to each read, so a watch without a read timeout streams for ever); the response's
status, headers and body, streamed chunk by chunk. aiohttp's failures become the HTTP library's
(``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``, ``NetworkError``), so callers that tell a
timeout from a refused connection keep telling them apart. TLS is the kubeconfig's (lightkube's own
:func:`verify_cluster`: the cluster's CA, the user's client certificate), the proxy the environment
names for the server chosen once (:func:`environment_proxy`; aiohttp's own ``trust_env`` re-reads
``~/.netrc`` in a thread for every request, a fifth of the controller's CPU at 2,000 pools), no
redirects (lightkube follows none).

Its edge: one aiohttp session per transport, opened on first use and closed with the client.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["AiohttpTransport", "aiohttp_transport", "environment_proxy"]


def _httpx() -> Any:
    """The HTTP library lightkube builds its requests with (``httpx2`` from lightkube 1.0, else ``httpx``)."""
    from lightkube.config import client_adapter

    return vars(client_adapter)["httpx"]


def aiohttp_transport(config: Any, *, limit: int = 100) -> Any:
    """An :class:`AiohttpTransport` for a lightkube ``SingleConfig`` (its cluster's CA and the user's
    client certificate, as lightkube would verify them, and the proxy the environment names for its
    server), to pass as ``AsyncClient(transport=...)``."""
    from lightkube.config.client_adapter import verify_cluster

    context = verify_cluster(config.cluster, config.user, config.abs_file)
    return AiohttpTransport(context, limit=limit, proxy=environment_proxy(str(config.cluster.server)))


def environment_proxy(server: str) -> str | None:
    """The proxy ``HTTPS_PROXY``/``HTTP_PROXY`` (any letter case) names for ``server``, unless
    ``NO_PROXY`` exempts its host: what the HTTP library would choose from the environment."""
    parts = urllib.parse.urlsplit(server)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies_environment().get(parts.scheme or "https")


def _base() -> type:
    return _httpx().AsyncBaseTransport  # type: ignore[no-any-return]


def _stream_base() -> type:
    return _httpx().AsyncByteStream  # type: ignore[no-any-return]


class _Stream(_stream_base()):  # type: ignore[misc]
    """The response body as the HTTP library's async byte stream (chunks as they arrive, as sent:
    the library decodes a compressed body itself, from the headers)."""

    def __init__(self, response: Any) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except Exception as error:
            raise _mapped(error) from error

    async def aclose(self) -> None:
        self._response.release()


def _mapped(error: BaseException) -> BaseException:
    """aiohttp's (and asyncio's) failure as the HTTP library's, so callers see the kinds they know."""
    import aiohttp

    httpx = _httpx()
    text = type(error).__name__  # never the message: it may quote a URL
    if isinstance(error, aiohttp.ClientConnectorError | ConnectionRefusedError):
        return httpx.ConnectError(text)  # type: ignore[no-any-return]
    if isinstance(error, aiohttp.ConnectionTimeoutError):  # no connection in time: the pool's or a new one
        return httpx.ConnectTimeout(text)  # type: ignore[no-any-return]
    if isinstance(error, TimeoutError | asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return httpx.ReadTimeout(text)  # type: ignore[no-any-return]
    if isinstance(error, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return httpx.RemoteProtocolError(text)  # type: ignore[no-any-return]
    if isinstance(error, aiohttp.ClientError | OSError):
        return httpx.NetworkError(text)  # type: ignore[no-any-return]
    return error


class AiohttpTransport(_base()):  # type: ignore[misc]
    """An async transport of lightkube's HTTP library that sends through aiohttp (see the module)."""

    def __init__(self, context: ssl.SSLContext | bool, *, limit: int = 100, proxy: str | None = None) -> None:
        self._context = context
        self._limit = limit
        self._proxy = proxy
        self._session: Any = None

    def _open(self) -> Any:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._context, limit=self._limit),
                trust_env=False,  # the proxy is chosen once (aiohttp would read ~/.netrc in a thread per request)
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
            )
        return self._session

    async def handle_async_request(self, request: Any) -> Any:
        import aiohttp

        httpx = _httpx()
        timeouts = request.extensions.get("timeout") or {}
        # ``connect`` is aiohttp's wait for a connection: a free one from the pool (all ``limit``
        # taken by watches and slow lists) or a new one; bounded by the pool timeout plus the connect
        # timeout, so a request never queues without end behind held connections
        pool, connect = timeouts.get("pool"), timeouts.get("connect")
        waited = None if pool is None else pool + (connect or 0.0)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=waited, sock_connect=connect, sock_read=timeouts.get("read")
        )
        body = await request.aread()
        try:
            response = await self._open().request(
                request.method,
                str(request.url),
                headers=list(request.headers.multi_items()),
                data=body or None,
                timeout=timeout,
                allow_redirects=False,
                proxy=self._proxy,
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            raise _mapped(error) from error
        return httpx.Response(
            response.status,
            headers=[(key.decode("latin-1"), value.decode("latin-1")) for key, value in response.raw_headers],
            stream=_Stream(response),
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
