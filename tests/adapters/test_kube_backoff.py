"""The cluster cache's retry backoff: doubling with jitter, started over only by a healthy watch.

The client is a double whose lists succeed and whose watches are scripted (refused at once, as RBAC
that grants list but not watch answers; an event; a long run). Time is simulated: the cache's
``sleep`` advances a fake clock (and its ``clock`` reads it), so minutes of retries take
milliseconds and every delay is exact (``jitter`` is fixed).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

pytest.importorskip("lightkube")

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from workerclass.adapters.kube import HEALTHY_WATCH, Backoff, ClusterCache
from workerclass.api.resources import HELM_RELEASE, WORKER_PLATFORM

pytestmark = pytest.mark.asyncio


def refused(code: int = 403, reason: str = "Forbidden") -> ApiError:
    return ApiError(status=Status(code=code, reason=reason, message="the server's own text: secret-3f9a"))


class SimulatedTime:
    """A fake monotonic clock; ``sleep`` advances it. Past ``limit`` every sleep parks forever."""

    def __init__(self, limit: float) -> None:
        self.now = 1000.0
        self.limit = 1000.0 + limit
        self.sleeps: list[float] = []
        self.done = asyncio.Event()

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        self.now += delay
        if self.now >= self.limit:
            self.done.set()
            await asyncio.Event().wait()
        await asyncio.sleep(0)


Script = Callable[[int, SimulatedTime], AsyncIterator[tuple[str, dict[str, Any]]]]


class ScriptedClient:
    """Lists answer at once (and are timed); the n-th watch of a kind runs ``script(n, time)``."""

    def __init__(self, time: SimulatedTime, script: Script) -> None:
        self.time = time
        self.script = script
        self.lists: dict[str, list[float]] = {}
        self.watches: dict[str, int] = {}

    def list(self, resource: Any, **scope: Any) -> Any:
        kind = resource._api_info.resource.kind
        self.lists.setdefault(kind, []).append(self.time.now)

        class Listing:
            resourceVersion = "7"

            async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
                for item in ():
                    yield item

        return Listing()

    async def watch(self, resource: Any, **scope: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        kind = resource._api_info.resource.kind
        self.watches[kind] = self.watches.get(kind, 0) + 1
        await asyncio.sleep(0)  # a real request yields to the loop: a loop without backoff spins, not hangs
        async for event in self.script(self.watches[kind], self.time):
            yield event


async def run(client: ScriptedClient, time: SimulatedTime, **options: Any) -> ClusterCache:
    cache = ClusterCache(
        client,
        resources=(HELM_RELEASE,),
        clock=time.clock,
        sleep=time.sleep,
        jitter=lambda: 0.5,  # every delay is 3/4 of its step
        **options,
    )
    await cache.start()
    try:
        async with asyncio.timeout(5):
            await time.done.wait()
    finally:
        await cache.stop()
    return cache


def gaps(times: list[float]) -> list[float]:
    return [round(later - earlier, 6) for earlier, later in itertools.pairwise(times)]


async def test_a_watch_refused_after_every_list_backs_off() -> None:
    """Each list is followed by a watch answered 403 at once: the lists slow down, doubling up to
    the cap (not one a second, and not in a tight loop, as a reset after each list would do)."""

    async def refuse(count: int, time: SimulatedTime) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        raise refused()
        yield  # pragma: no cover

    time = SimulatedTime(limit=600)
    client = ScriptedClient(time, refuse)
    cache = await run(client, time, retry_delay=1.0, max_retry_delay=30.0)
    lists = client.lists["HelmRelease"]
    assert gaps(lists)[:7] == [0.75, 1.5, 3.0, 6.0, 12.0, 22.5, 22.5]  # 3/4 of 1, 2, 4, 8, 16, 30, 30
    assert set(gaps(lists)[5:]) == {22.5}  # bounded by the cap
    assert 20 <= len(lists) <= 35  # ten minutes: ~30 lists, where a reset after each list made ~600
    assert cache.reason == ""  # every list succeeds: current, never stale
    assert cache._errors["HelmRelease"] == "403 Forbidden"


async def test_the_jitter_spreads_each_delay_over_the_upper_half_of_its_step() -> None:
    values = iter([0.0, 0.999, 0.0, 0.999, 0.25])
    backoff = Backoff(1.0, 4.0, jitter=lambda: next(values))
    assert [backoff.next() for _ in range(5)] == [0.5, 1.999, 2.0, 3.998, 2.5]
    backoff.reset()
    assert Backoff(1.0, 4.0, jitter=lambda: 0.0).next() == 0.5
    assert 0.5 <= Backoff(1.0, 4.0).next() <= 1.0  # random.random by default


@pytest.mark.parametrize("healthy", ["event", "long run"])
async def test_a_healthy_watch_starts_the_backoff_over(healthy: str) -> None:
    """Three watches refused at once (the delays grow), then one that delivers an event (or runs
    longer than HEALTHY_WATCH) before it breaks: the next delay is the first one again."""

    async def script(count: int, time: SimulatedTime) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        if count == 4:
            if healthy == "event":
                yield "ADDED", {"metadata": {"name": "x", "namespace": "tenant-example"}}
            else:
                time.now += HEALTHY_WATCH
        raise refused(500, "InternalError")

    time = SimulatedTime(limit=40)
    client = ScriptedClient(time, script)
    await run(client, time, retry_delay=1.0, max_retry_delay=30.0)
    assert time.sleeps[:5] == [0.75, 1.5, 3.0, 0.75, 1.5]


async def test_a_watch_that_ends_at_once_is_not_a_tight_loop() -> None:
    """A watch that ends without an error right after each list (no event) backs off too."""

    async def end(count: int, time: SimulatedTime) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return
        yield  # pragma: no cover

    time = SimulatedTime(limit=100)
    client = ScriptedClient(time, end)
    await run(client, time, retry_delay=1.0, max_retry_delay=8.0)
    assert time.sleeps[:5] == [0.75, 1.5, 3.0, 6.0, 6.0]
    assert len(client.lists["HelmRelease"]) < 25


async def test_failing_lists_back_off_and_each_resource_keeps_its_own_backoff() -> None:
    """Lists that fail (500) back off the same; a healthy resource beside them is not slowed."""

    class Client(ScriptedClient):
        def list(self, resource: Any, **scope: Any) -> Any:
            listing = super().list(resource, **scope)
            if resource._api_info.resource.kind == "HelmRelease":
                raise refused(500, "InternalError")
            return listing

    async def quiet(count: int, time: SimulatedTime) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        await asyncio.Event().wait()  # a healthy, quiet watch
        yield "ADDED", {}  # pragma: no cover

    time = SimulatedTime(limit=60)
    client = Client(time, quiet)
    cache = ClusterCache(
        client,
        resources=(WORKER_PLATFORM, HELM_RELEASE),
        clock=time.clock,
        sleep=time.sleep,
        jitter=lambda: 0.5,
        retry_delay=1.0,
        max_retry_delay=30.0,
    )
    await cache.start()
    try:
        async with asyncio.timeout(5):
            await time.done.wait()
    finally:
        await cache.stop()
    assert gaps(client.lists["HelmRelease"])[:5] == [0.75, 1.5, 3.0, 6.0, 12.0]
    assert len(client.lists["WorkerPlatform"]) == 1  # listed once, then watched
    assert "helmreleases.helm.toolkit.fluxcd.io: 500 InternalError" in cache.reason
    assert "secret-3f9a" not in cache.reason
