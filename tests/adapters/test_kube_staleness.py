"""The cluster cache's staleness lines: when answers rest on data that is not fully current, and the webhook says so.

A client double answers lists from the examples and keeps watches quiet, or refuses one resource's
watch (500) or list (a timeout), or answers an optional one 404. The cache's ``sleep`` parks (no
retry), so the cache stays in that state while the test reads it; the ``clock`` is the test's, so
ages are exact.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("lightkube")

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from tests.webhook.cases import pool
from tests.webhook.conftest import fast_settings
from tests.webhook.helpers import EXAMPLES, CertFiles, Client, review
from workerclass.adapters.folder import load_state
from workerclass.adapters.kube import WATCHED, ClusterCache
from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook.server import WebhookServer

pytestmark = pytest.mark.asyncio

RELEASES = "helmreleases.helm.toolkit.fluxcd.io"
PLANES = "computeplanes.apps.cozystack.io"


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


class Parked:
    """The cache's ``sleep``: no retry while the test reads the cache, but one for each plural in ``once``."""

    def __init__(self, once: tuple[str, ...] = ()) -> None:
        self.once = {f"workerclass-watch-{plural}" for plural in once}

    async def __call__(self, delay: float) -> None:
        task = asyncio.current_task()
        if task is not None and task.get_name() in self.once:
            self.once.discard(task.get_name())
            return
        await asyncio.Event().wait()


class FakeClient:
    """Lists answer the examples; watches stay quiet, except the kinds told to fail."""

    def __init__(
        self, *, watch_fails: tuple[str, ...] = (), list_fails: tuple[str, ...] = (), absent: tuple[str, ...] = ()
    ) -> None:
        self.objects = [json.loads(json.dumps(dict(record.obj))) for record in load_state(EXAMPLES).objects]
        self.watch_fails = watch_fails
        self.list_fails = list_fails
        self.absent = absent
        self.lists: dict[str, int] = {}

    def list(self, resource: Any, **scope: Any) -> Any:
        kind = resource._api_info.resource.kind
        self.lists[kind] = self.lists.get(kind, 0) + 1
        if kind in self.absent:
            raise ApiError(status=Status(code=404, reason="NotFound", message="the server could not find it"))
        if kind in self.list_fails and self.lists[kind] > 1:
            raise TimeoutError
        items = [obj for obj in self.objects if obj["kind"] == kind]

        class Listing:
            resourceVersion = "7"

            async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
                for item in items:
                    yield item

        return Listing()

    async def watch(self, resource: Any, **scope: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        kind = resource._api_info.resource.kind
        if kind in self.watch_fails:
            raise ApiError(status=Status(code=500, reason="InternalError", message="etcd said: secret-77"))
        if kind in self.list_fails:
            return  # ends at once: listed again (and that list fails)
        await asyncio.Event().wait()
        yield "ADDED", {}  # pragma: no cover


async def started(client: FakeClient, clock: Clock, *, once: tuple[str, ...] = ()) -> ClusterCache:
    cache = ClusterCache(client, clock=clock, sleep=Parked(once), watch_timeout=30, watch_margin=10, stale_after=60)
    await cache.start()
    await cache.wait_synced(5)
    await asyncio.sleep(0.05)  # the watches started (and the failing ones failed)
    return cache


async def test_a_current_cache_gives_no_lines() -> None:
    clock = Clock()
    cache = await started(FakeClient(), clock)
    try:
        assert cache.staleness() == ()
        clock.now += 40  # exactly the watch deadline: still current
        assert cache.staleness() == ()
    finally:
        await cache.stop()


async def test_a_broken_watch_is_said_from_its_failure_on() -> None:
    clock = Clock()
    cache = await started(FakeClient(watch_fails=("HelmRelease",)), clock)
    try:
        clock.now += 12
        assert cache.staleness() == (
            f"workerclass: deciding on {RELEASES} as of 12s ago (watch failed, 500 InternalError)",
        )
        assert cache.reason == ""  # within stale_after: still ready, but no longer silent
        clock.now += 60  # past stale_after: not ready either (and the quiet resources past their deadline)
        assert f"workerclass: deciding on {RELEASES} as of 72s ago (watch failed, 500 InternalError)" in (
            cache.staleness()
        )
        assert RELEASES in cache.reason
        assert all("secret-77" not in line and len(line) <= 140 for line in cache.staleness())
        assert all(len(line) <= 120 for line in cache.staleness() if RELEASES in line)
    finally:
        await cache.stop()


async def test_a_resource_not_confirmed_within_the_watch_deadline_is_said() -> None:
    """No failure, but nothing heard for longer than a watch may stay silent (being listed again)."""
    clock = Clock()
    cache = await started(FakeClient(), clock)
    try:
        clock.now += 41
        lines = cache.staleness()
        assert len(lines) == len(WATCHED)
        assert lines[0] == (
            "workerclass: deciding on workerplatforms.cozystack.io as of 41s ago (no watch event or list in 40s)"
        )
    finally:
        await cache.stop()


async def test_a_failing_list_and_an_absent_optional_api_are_said() -> None:
    clock = Clock()
    client = FakeClient(list_fails=("WorkerClass",), absent=("ComputePlane",))
    cache = await started(client, clock, once=("workerclasses",))  # its watch ends: listed again, and that fails
    try:
        clock.now += 3
        assert cache.staleness() == (
            "workerclass: deciding on workerclasses.cozystack.io as of 3s ago "
            "(list failed, TimeoutError (no answer in time))",
        )  # the absent optional API is a platform fact: said in notes, not to every writer
        assert cache.notes == (f"{PLANES}: not served by the API server (404 NotFound); read as empty",)
        clock.now += 1000  # an absent optional API is never stale
        assert all(PLANES not in line for line in cache.staleness())
        assert PLANES not in cache.reason
    finally:
        await cache.stop()


async def test_every_decided_answer_says_it_was_decided_on_stale_data(tmp_certs: CertFiles) -> None:
    """Allowed, patched and denied answers carry the lines while the HelmRelease watch is broken;
    none does once the cache is current again."""
    clock = Clock()
    client = FakeClient(watch_fails=("HelmRelease",))
    cache = await started(client, clock)
    server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=fast_settings())
    await server.start()
    https = Client(server.port, tmp_certs.client_context())

    async def answer(path: str, obj: dict[str, Any]) -> dict[str, Any]:
        return (await asyncio.to_thread(https.post_review, path, review(obj))).response

    try:
        clock.now += 12
        line = f"workerclass: deciding on {RELEASES} as of 12s ago (watch failed, 500 InternalError)"
        patched = await answer("/mutate/kubernetesnodes", pool())
        assert patched["allowed"] is True and "patch" in patched and patched["warnings"] == [line]
        allowed = await answer("/validate/kubernetesnodes", pool(workerClassName="talos"))
        assert allowed["allowed"] is True and allowed["warnings"][-1] == line
        denied = await answer("/validate/kubernetesnodes", pool(workerClassName="no-such-class"))
        assert denied["allowed"] is False and denied["warnings"][-1] == line
        assert (await asyncio.to_thread(https.request, "GET", "/readyz")).status == 200  # stale, yet ready

        cache._fresh(next(watched for watched in WATCHED if watched.kind == "HelmRelease"))  # listed again
        allowed = await answer("/validate/kubernetesnodes", pool(workerClassName="talos"))
        assert not any(warning.startswith("workerclass: deciding") for warning in allowed.get("warnings", []))
    finally:
        await asyncio.to_thread(https.close)
        await server.stop()
        await cache.stop()


INSTANCE_TYPES = "virtualmachineclusterinstancetypes.instancetype.kubevirt.io"


async def test_unserved_optional_apis_are_said_once_not_in_every_answer(tmp_certs: CertFiles) -> None:
    """A cluster without ComputePlanes or instance types is a platform fact: the tenant cannot act
    on it, so no answer carries it; ``/readyz`` says it as a note and ``/metrics`` as a gauge."""
    clock = Clock()
    client = FakeClient(absent=("ComputePlane", "VirtualMachineClusterInstancetype"))
    cache = await started(client, clock)
    server = WebhookServer(cache, tls=ReloadingContext(tmp_certs.cert, tmp_certs.key), settings=fast_settings())
    await server.start()
    https = Client(server.port, tmp_certs.client_context())
    try:
        for path, obj in (
            ("/mutate/kubernetesnodes", pool()),
            ("/validate/kubernetesnodes", pool(workerClassName="talos")),
            ("/validate/kubernetesnodes", pool(workerClassName="no-such-class")),
        ):
            answer = (await asyncio.to_thread(https.post_review, path, review(obj))).response
            assert not any("read as empty" in warning for warning in answer.get("warnings", [])), answer
        ready = await asyncio.to_thread(https.request, "GET", "/readyz")
        assert ready.status == 200
        text = ready.body.decode()
        assert f"note: {PLANES}: not served by the API server (404 NotFound); read as empty" in text
        assert f"note: {INSTANCE_TYPES}: not served" in text
        metrics = (await asyncio.to_thread(https.request, "GET", "/metrics")).body.decode()
        assert f'workerclass_webhook_source_absent{{reason="not_served",source="{PLANES}"}} 1.0' in metrics
        assert f'workerclass_webhook_source_absent{{reason="not_served",source="{INSTANCE_TYPES}"}} 1.0' in metrics
        assert f'workerclass_webhook_source_absent{{reason="not_served",source="{RELEASES}"}}' not in metrics
    finally:
        await asyncio.to_thread(https.close)
        await server.stop()
        await cache.stop()
