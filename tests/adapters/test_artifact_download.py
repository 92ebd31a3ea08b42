"""Downloading a chart artifact from source-controller (:func:`workerclass.adapters.flux.download`)
against real HTTP servers on loopback: redirects are followed only to the same scheme, host and
port; any other is refused naming the hosts (never credentials, never the path); the size is bounded.
And the digest: only ``sha256:<64 hex>`` is checked, any other form refused rather than skipped."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("aiohttp")

from aiohttp import web
from aiohttp.test_utils import TestServer

from workerclass.adapters.flux import MAX_REDIRECTS, ArtifactDownloadError, download, verify_digest

pytestmark = pytest.mark.asyncio

BODY = b"the artifact's bytes"


class Served:
    """One loopback HTTP server: its routes answer with ``handler``; every path it was asked counted."""

    def __init__(self, server: TestServer) -> None:
        self.server = server
        self.asked: list[str] = []

    def url(self, path: str, *, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.server.port}{path}"


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Callable[[Callable[[web.Request], Any]], Any]]:
    started: list[TestServer] = []

    async def start(handler: Callable[[web.Request], Any]) -> Served:
        app = web.Application()
        served: Served | None = None

        async def route(request: web.Request) -> web.StreamResponse:
            assert served is not None
            served.asked.append(request.path)
            result: web.StreamResponse = await handler(request)
            return result

        app.router.add_route("GET", "/{tail:.*}", route)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        started.append(server)
        served = Served(server)
        return served

    yield start
    for server in started:
        await server.close()


def redirect(location: str, status: int = 302) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": location})

    return handler


async def body(request: web.Request) -> web.StreamResponse:
    return web.Response(body=BODY)


async def test_a_same_host_redirect_is_followed(serve: Any) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/old.tar.gz":
            return web.Response(status=301, headers={"Location": "/new.tar.gz"})
        return web.Response(body=BODY)

    server = await serve(handler)
    assert await download(server.url("/old.tar.gz"), 5.0, 1024) == BODY
    assert server.asked == ["/old.tar.gz", "/new.tar.gz"]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_to_another_host_is_refused_naming_both(serve: Any, status: int) -> None:
    elsewhere = await serve(body)
    # localhost is the same machine, but another host by name: the artifact's origin is what counts
    origin = await serve(redirect(elsewhere.url("/secret/path.tar.gz", host="localhost"), status))
    with pytest.raises(ArtifactDownloadError) as raised:
        await download(origin.url("/artifact.tar.gz"), 5.0, 1024)
    detail = raised.value.detail  # for the hoster's log: the hosts, never the path
    assert f"127.0.0.1:{origin.server.port}" in detail and f"localhost:{elsewhere.server.port}" in detail
    assert "another host" in str(raised.value) and "/secret/path" not in detail
    assert "127.0.0.1" not in str(raised.value)  # what tenants may read (ChartNotGated) names no host
    assert elsewhere.asked == []


async def test_a_redirect_to_another_port_or_scheme_is_refused(serve: Any) -> None:
    elsewhere = await serve(body)
    origin = await serve(redirect(elsewhere.url("/x.tar.gz")))
    with pytest.raises(ArtifactDownloadError, match="another host"):
        await download(origin.url("/a.tar.gz"), 5.0, 1024)
    assert elsewhere.asked == []
    upgraded = await serve(redirect("https://127.0.0.1:1/x.tar.gz"))
    with pytest.raises(ArtifactDownloadError) as raised:
        await download(upgraded.url("/a.tar.gz"), 5.0, 1024)
    assert "https://127.0.0.1:1" in raised.value.detail


async def test_credentials_in_a_redirect_are_never_shown(serve: Any) -> None:
    elsewhere = await serve(body)
    origin = await serve(redirect(f"http://admin:hunter2@localhost:{elsewhere.server.port}/x?token=abc"))
    with pytest.raises(ArtifactDownloadError) as raised:
        await download(origin.url("/a.tar.gz"), 5.0, 1024)
    message = str(raised.value) + raised.value.detail
    assert "hunter2" not in message and "admin" not in message and "token" not in message
    assert elsewhere.asked == []


async def test_a_redirect_loop_ends(serve: Any) -> None:
    server = await serve(redirect("/again"))
    with pytest.raises(ArtifactDownloadError, match=f"more than {MAX_REDIRECTS} redirects"):
        await download(server.url("/a.tar.gz"), 5.0, 1024)
    assert len(server.asked) == MAX_REDIRECTS + 1


async def test_status_and_size_are_said(serve: Any) -> None:
    async def missing(request: web.Request) -> web.StreamResponse:
        return web.Response(status=404)

    server = await serve(missing)
    with pytest.raises(ArtifactDownloadError, match="answered 404"):
        await download(server.url("/a.tar.gz"), 5.0, 1024)
    large = await serve(body)
    with pytest.raises(ArtifactDownloadError, match="larger than"):
        await download(large.url("/a.tar.gz"), 5.0, len(BODY) - 1)


async def test_only_http_urls_are_fetched() -> None:
    with pytest.raises(ArtifactDownloadError, match="not an http or https URL"):
        await download("file:///etc/passwd", 5.0, 1024)


@pytest.mark.parametrize(
    ("digest", "says"),
    [
        ("sha256:" + hashlib.sha256(BODY).hexdigest(), ""),
        ("sha256:" + hashlib.sha256(BODY).hexdigest().upper(), ""),
        ("sha256:" + "0" * 64, "do not match"),
        ("sha512:" + hashlib.sha512(BODY).hexdigest(), "sha256:<64 hex digits>"),
        ("sha1:" + hashlib.sha1(BODY).hexdigest(), "sha256:<64 hex digits>"),
        ("sha256:" + hashlib.sha256(BODY).hexdigest()[:63], "sha256:<64 hex digits>"),
        ("sha256:", "sha256:<64 hex digits>"),
        (hashlib.sha256(BODY).hexdigest(), "sha256:<64 hex digits>"),
        ("blake3:" + "0" * 64, "sha256:<64 hex digits>"),
    ],
    ids=["sha256", "sha256-upper", "mismatch", "sha512", "sha1", "short", "empty", "no-algorithm", "blake3"],
)
async def test_only_sha256_digests_are_checked(digest: str, says: str) -> None:
    found = verify_digest(BODY, digest)
    assert (found == "") if not says else (says in found), found
