"""The cluster cache against a slow API server: its lists wait for ``list_timeout``, not the client's read timeout.

lightkube's client reads with a 10 s timeout unless told otherwise, shorter than the cache's 30 s
list deadline. Here the same, scaled down: the client's read timeout is 0.5 s (given that way, or
lightkube's default patched to it), the fake API server (aiohttp on loopback) answers each list
after 1 s, and the cache's ``list_timeout`` is 3 s.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

pytest.importorskip("lightkube")

import lightkube
from lightkube import AsyncClient, KubeConfig
from lightkube.config import client_adapter

from workerclass.adapters.kube import ClusterCache, client_timeout
from workerclass.api.resources import WORKER_CLASS

pytestmark = pytest.mark.asyncio

HTTP = vars(client_adapter)["httpx"]  # lightkube's HTTP library (httpx2 from lightkube 1.0)
LIST_DELAY = 1.0
READ_TIMEOUT = 0.5


def worker_class(name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": WORKER_CLASS.api_version,
        "kind": "WorkerClass",
        "metadata": {"name": name, "resourceVersion": version},
        "spec": {"bootstrap": "talos"},
    }


class SlowAPI:
    """Lists of WorkerClasses answered after ``LIST_DELAY``; a watch sends one ADDED event after
    ``LIST_DELAY`` (a quiet stretch longer than the read timeout), then holds the stream open."""

    def __init__(self) -> None:
        self.lists = 0
        self.watches = 0
        self._hold = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not request.path.endswith("/" + WORKER_CLASS.plural):
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        if request.query.get("watch") in ("true", "1"):
            self.watches += 1
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await asyncio.sleep(LIST_DELAY)
            event = {"type": "ADDED", "object": worker_class("late", "8")}
            await response.write(json.dumps(event).encode() + b"\n")
            await self._hold.wait()
            return response
        self.lists += 1
        await asyncio.sleep(LIST_DELAY)
        return web.json_response(
            {
                "apiVersion": WORKER_CLASS.api_version,
                "kind": "WorkerClassList",
                "metadata": {"resourceVersion": "7"},
                "items": [worker_class("talos-r1", "7")],
            }
        )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._hold.set()
        if self.runner is not None:
            await self.runner.cleanup()


@pytest_asyncio.fixture
async def slow_api() -> AsyncIterator[SlowAPI]:
    api = SlowAPI()
    await api.start()
    yield api
    await api.stop()


def kubeconfig(url: str) -> dict[str, Any]:
    return {
        "clusters": [{"name": "slow", "cluster": {"server": url}}],
        "users": [{"name": "webhook", "user": {"token": "test-token"}}],
        "contexts": [{"name": "slow", "context": {"cluster": "slow", "user": "webhook"}}],
        "current-context": "slow",
    }


def quick_cache(client: Any) -> ClusterCache:
    return ClusterCache(
        client, resources=(WORKER_CLASS,), list_timeout=3.0, watch_timeout=5, watch_margin=1.0, retry_delay=0.05
    )


async def test_a_given_client_with_a_short_read_timeout_still_lists_a_slow_server(
    slow_api: SlowAPI, caplog: pytest.LogCaptureFixture
) -> None:
    """The client reads with a 0.5 s timeout and each list takes 1 s: the cache raises the client's
    read timeout to fit its deadlines, so the first list succeeds; the watch's quiet second before
    its event is not cut either (no second list)."""
    client = AsyncClient(
        config=KubeConfig.from_dict(kubeconfig(slow_api.url)), trust_env=False, timeout=HTTP.Timeout(READ_TIMEOUT)
    )
    cache = quick_cache(client)
    caplog.set_level(logging.INFO, "workerclass.kube")
    await cache.start()
    try:
        state = await cache.wait_synced(LIST_DELAY + 2)
        assert state.worker_class("talos-r1") is not None and cache.reason == ""
        async with asyncio.timeout(LIST_DELAY + 2):
            while cache.state is None or cache.state.worker_class("late") is None:
                await asyncio.sleep(0.02)
        assert (slow_api.lists, slow_api.watches) == (1, 1)
        assert "read timeout was 0.5s: raised to 6s" in caplog.text
    finally:
        await cache.stop()
        await client.close()


async def test_the_client_the_cache_makes_fits_its_deadlines(
    slow_api: SlowAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No client given: the one made from the environment reads with ``client_timeout(...)``, not
    lightkube's default (patched here to 0.5 s, the scaled-down 10 s)."""
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps(kubeconfig(slow_api.url)))
    monkeypatch.setenv("KUBECONFIG", str(config))
    original = AsyncClient.__init__

    def short_default(self: Any, *args: Any, timeout: Any = None, **kwargs: Any) -> None:
        original(self, *args, timeout=HTTP.Timeout(READ_TIMEOUT) if timeout is None else timeout, **kwargs)

    monkeypatch.setattr(lightkube.AsyncClient, "__init__", short_default)
    cache = quick_cache(None)
    await cache.start()
    try:
        await cache.wait_synced(LIST_DELAY + 2)
        assert cache._client._timeout.read == 6.0  # max(list_timeout 3, watch_timeout 5 + margin 1)
    finally:
        await cache.stop()


async def test_client_timeout_reads_as_long_as_the_longest_deadline() -> None:
    timeout = client_timeout()
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (10.0, 40.0, 10.0, 10.0)
    assert client_timeout(list_timeout=90, watch_timeout=30, watch_margin=10).read == 90.0
    assert isinstance(timeout, HTTP.Timeout)
    assert ClusterCache(object()).read_timeout == 40.0
