"""lightkube over aiohttp (:class:`~workerclass.adapters.transport.AiohttpTransport`): the same client
calls (get, apply, list, watch through the cluster cache) against kmock, a compressed answer decoded
once, the bearer token sent, and aiohttp's failures turned into the HTTP library's kinds."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("lightkube")

import kmock
from aiohttp import web
from lightkube import AsyncClient, KubeConfig
from lightkube.config import client_adapter
from lightkube.generic_resource import create_global_resource
from lightkube.types import PatchType

from tests.adapters.test_kube import BY_KIND, example_objects, seed, url_of
from workerclass.adapters.kube import ClusterCache
from workerclass.adapters.transport import AiohttpTransport, aiohttp_transport, environment_proxy

pytestmark = pytest.mark.asyncio

httpx = vars(client_adapter)["httpx"]
CLASSES = create_global_resource("cozystack.io", "v1alpha1", "WorkerClass", "workerclasses")


def config_for(server: str) -> KubeConfig:
    return KubeConfig.from_dict(
        {
            "clusters": [{"name": "test", "cluster": {"server": server}}],
            "users": [{"name": "test", "user": {"token": "test-token"}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
            "current-context": "test",
        }
    )


def client_for(server: str, **options: Any) -> AsyncClient:
    config = config_for(server)
    return AsyncClient(config=config, trust_env=False, transport=aiohttp_transport(config.get()), **options)


@pytest_asyncio.fixture
async def client(kmock: kmock.KubernetesEmulator) -> AsyncIterator[AsyncClient]:
    made = client_for(str(kmock.url))
    yield made
    await made.close()


async def test_get_apply_and_list_go_through_aiohttp(kmock: kmock.KubernetesEmulator, client: AsyncClient) -> None:
    seed(kmock, example_objects())
    found = await client.get(CLASSES, "talos-example-r1")
    assert found.to_dict()["spec"]["bootstrap"] == "talos"
    body = {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": {"name": "talos-example-r1", "labels": {"applied": "yes"}},
    }
    applied = await client.patch(
        CLASSES, "talos-example-r1", body, patch_type=PatchType.APPLY, field_manager="test", force=True
    )
    assert applied.to_dict()["metadata"]["labels"] == {"applied": "yes"}
    names = {obj.metadata.name async for obj in client.list(CLASSES)}
    assert {"talos-example-r1", "kairos-example-v1-35-6-r1"} <= names
    requests = list(kmock)
    assert requests and all(request.headers.get("Authorization") == "Bearer test-token" for request in requests)
    patch = next(request for request in requests if request.method == "PATCH")
    assert patch.headers["Content-Type"] == "application/apply-patch+yaml"
    assert patch.params == {"fieldManager": "test", "force": "true"}


async def test_the_cluster_cache_lists_and_watches_through_it(kmock: kmock.KubernetesEmulator) -> None:
    seed(kmock, example_objects())
    made = client_for(str(kmock.url))
    cache = ClusterCache(made, retry_delay=0.05, max_retry_delay=0.2)
    try:
        await cache.start()
        state = await cache.wait_synced(5)
        assert state.pool("tenant-example/example-talos") is not None
        classes = BY_KIND["WorkerClass"]
        reply = await kmock.post(
            url_of(kmock, classes),
            json={"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "talos-r3"},
                  "spec": {"bootstrap": "talos"}},
        )  # fmt: skip
        assert reply.status in (200, 201)
        async with asyncio.timeout(5):
            while cache.state is None or cache.state.worker_class("talos-r3") is None:
                await asyncio.sleep(0.01)
    finally:
        await cache.stop()
        await made.close()


@pytest_asyncio.fixture
async def odd_server() -> AsyncIterator[str]:
    """A server with a gzip'd answer and one that never answers."""

    async def compressed(request: web.Request) -> web.Response:
        obj = {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": "zipped"}}
        body = gzip.compress(json.dumps({**obj, "spec": {"bootstrap": "kairos"}}).encode())
        return web.Response(body=body, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    released = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await released.wait()  # until the fixture ends: the client's read timeout comes first
        return web.Response()

    app = web.Application()
    app.router.add_get("/apis/cozystack.io/v1alpha1/workerclasses/zipped", compressed)
    app.router.add_get("/apis/cozystack.io/v1alpha1/workerclasses/silent", silent)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    released.set()
    await runner.cleanup()


async def test_a_compressed_answer_is_decoded_once(odd_server: str) -> None:
    made = client_for(odd_server)
    try:
        found = await made.get(CLASSES, "zipped")
        assert found.to_dict()["spec"] == {"bootstrap": "kairos"}
    finally:
        await made.close()


async def test_a_silent_server_is_a_read_timeout(odd_server: str) -> None:
    made = client_for(odd_server, timeout=httpx.Timeout(5, read=0.3))
    try:
        with pytest.raises(httpx.ReadTimeout):
            await made.get(CLASSES, "silent")
    finally:
        await made.close()


async def test_a_refused_connection_is_a_connect_error() -> None:
    probe = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()  # nothing listens on the port now
    made = client_for(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(httpx.ConnectError) as caught:
            await made.get(CLASSES, "any")
        assert str(port) not in str(caught.value)  # the error never quotes the URL
    finally:
        await made.close()


async def test_the_session_closes_with_the_client() -> None:
    transport = AiohttpTransport(False)
    session = transport._open()
    await transport.aclose()
    assert session.closed


@pytest.mark.parametrize(
    ("environment", "server", "proxy"),
    [
        ({}, "https://10.0.0.1:6443", None),
        ({"HTTPS_PROXY": "http://proxy.example:3128"}, "https://10.0.0.1:6443", "http://proxy.example:3128"),
        ({"https_proxy": "http://proxy.example:3128", "NO_PROXY": "10.0.0.1"}, "https://10.0.0.1:6443", None),
        ({"HTTP_PROXY": "http://proxy.example:3128"}, "https://api.example:6443", None),
    ],
    ids=["none", "https-proxy", "no-proxy-exempts", "http-proxy-not-for-https"],
)
async def test_the_proxy_is_chosen_once_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], server: str, proxy: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert environment_proxy(server) == proxy


async def test_a_request_waits_for_a_pooled_connection_only_as_long_as_the_pool_timeout(odd_server: str) -> None:
    """Every connection of the pool held (watches, a silent server): the next request fails after the
    pool timeout instead of queuing for ever."""
    config = config_for(odd_server)
    made = AsyncClient(
        config=config,
        trust_env=False,
        transport=aiohttp_transport(config.get(), limit=1),
        timeout=httpx.Timeout(1, read=30, pool=0.3),
    )
    try:
        held = asyncio.create_task(made.get(CLASSES, "silent"))  # takes the one connection
        await asyncio.sleep(0.2)
        started = asyncio.get_running_loop().time()
        with pytest.raises(httpx.TimeoutException):
            await made.get(CLASSES, "zipped")
        assert asyncio.get_running_loop().time() - started < 3
        held.cancel()
    finally:
        await made.close()
