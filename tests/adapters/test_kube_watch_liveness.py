"""A watch that goes silent and an API server that freezes: the cache re-lists, readiness fails within its bound.

The fake API server (aiohttp on loopback) answers lists from a fixed set of objects and holds every
watch open without sending a byte, as a connection that died without a FIN looks to a client.
``frozen`` makes lists hang too (an API server that stopped answering).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

pytest.importorskip("lightkube")

from lightkube import AsyncClient, KubeConfig

from tests.webhook.cases import pool
from tests.webhook.conftest import fast_settings
from tests.webhook.helpers import EXAMPLES, CertFiles, Client, review
from workerclass.adapters.folder import load_state
from workerclass.adapters.kube import WATCHED, ClusterCache
from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook.server import WebhookServer

pytestmark = pytest.mark.asyncio

PLURALS = {watched.plural: watched for watched in WATCHED}


class FakeAPI:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.frozen = False
        self.lists: Counter[str] = Counter()
        self.watches: Counter[str] = Counter()
        self._hold = asyncio.Event()  # never set while the test runs: held requests stay silent
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        plural = request.path.rstrip("/").rsplit("/", 1)[-1]
        watched = PLURALS.get(plural)
        if watched is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        if request.query.get("watch") in ("true", "1"):
            self.watches[plural] += 1
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await self._hold.wait()  # silent: no event, no bookmark, no end
            return response
        self.lists[plural] += 1
        if self.frozen:
            await self._hold.wait()
        items = [obj for obj in self.objects if obj["kind"] == watched.kind]
        return web.json_response(
            {
                "apiVersion": watched.api_version,
                "kind": f"{watched.kind}List",
                "metadata": {"resourceVersion": "7"},
                "items": items,
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


def example_objects() -> list[dict[str, Any]]:
    objects = [json.loads(json.dumps(dict(record.obj))) for record in load_state(EXAMPLES).objects]
    for index, obj in enumerate(objects):
        obj["metadata"]["resourceVersion"] = str(index + 1)
    return objects


@pytest_asyncio.fixture
async def fake_api() -> AsyncIterator[FakeAPI]:
    api = FakeAPI(example_objects())
    await api.start()
    yield api
    await api.stop()


def client_for(url: str) -> AsyncClient:
    config = KubeConfig.from_dict(
        {
            "clusters": [{"name": "fake", "cluster": {"server": url}}],
            "users": [{"name": "webhook", "user": {"token": "test-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "webhook"}}],
            "current-context": "fake",
        }
    )
    return AsyncClient(config=config, trust_env=False)


async def eventually(check: Any, limit: float) -> None:
    async with asyncio.timeout(limit):
        while not await check():
            await asyncio.sleep(0.05)


async def test_silent_watch_relists_and_a_frozen_api_fails_readiness_within_the_bound(
    fake_api: FakeAPI, tmp_certs: CertFiles
) -> None:
    client = client_for(fake_api.url)
    stale_after, watch_timeout, margin = 3.0, 1, 0.5
    cache = ClusterCache(
        client,
        watch_timeout=watch_timeout,
        watch_margin=margin,
        list_timeout=0.5,
        stale_after=stale_after,
        retry_delay=0.05,
        max_retry_delay=0.2,
        debounce=0.01,
    )
    server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=fast_settings())
    await server.start()
    https = Client(server.port, tmp_certs.client_context())

    async def get(path: str) -> Any:
        return await asyncio.to_thread(https.request, "GET", path)

    async def ready() -> bool:
        return bool((await get("/readyz")).status == 200)

    async def not_ready() -> bool:
        return not await ready()

    try:
        await cache.wait_synced(10)
        await eventually(ready, 5)

        # Quiet but healthy: every watch stays silent, each is given up after its deadline and the
        # resource listed again, which keeps it current: ready throughout.
        for _ in range(8):
            await asyncio.sleep(0.5)
            assert await ready(), (await get("/readyz")).body
        assert all(count >= 2 for count in fake_api.lists.values()), fake_api.lists
        assert all(count >= 2 for count in fake_api.watches.values()), fake_api.watches

        # The API server stops answering: lists hang past their deadline, the resources go stale,
        # and readiness fails within the bound (staleness bound + one watch deadline + slack).
        fake_api.frozen = True
        await eventually(not_ready, stale_after + watch_timeout + margin + 3)
        reply = await get("/readyz")
        assert reply.status == 503
        text = reply.body.decode()
        assert "the cluster cache is stale" in text and "not current within 3s" in text
        assert any(watched.name in text for watched in WATCHED)  # names which resource
        assert "(last error: TimeoutError (no answer in time))" in text  # the lists' own deadline, no detail

        metrics = (await get("/metrics")).body.decode()
        assert "workerclass_webhook_ready 0.0" in metrics
        stale = [line for line in metrics.splitlines() if line.startswith("workerclass_webhook_source_staleness")]
        assert any(float(line.rsplit(" ", 1)[1]) > stale_after for line in stale), stale
        failures = [
            line for line in metrics.splitlines() if line.startswith("workerclass_webhook_source_sync_failures_total")
        ]
        assert any(float(line.rsplit(" ", 1)[1]) >= 1 for line in failures), failures
        assert any(
            line.startswith("workerclass_webhook_source_last_sync_timestamp_seconds") for line in metrics.splitlines()
        )

        # Requests are still answered from the last good state (readiness moves traffic away).
        answer = await asyncio.to_thread(
            https.post_review, "/validate/kubernetesnodes", review(pool(workerClassName="talos"))
        )
        assert answer.response["allowed"] is True

        # The API answers again: current again, ready again.
        fake_api.frozen = False
        await eventually(ready, 10)
    finally:
        await asyncio.to_thread(https.close)
        await server.stop()
        await client.close()
