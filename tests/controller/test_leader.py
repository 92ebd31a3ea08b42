"""The Lease elector's guarantees (client-go's), against an in-memory Lease store.

Decisions are driven with an injected monotonic clock and skewed wall clocks (a follower never
reads the holder's timestamps for expiry); the runs that need real waits (a leader cut off from the
API server, a Lease lost while leading) use durations of a second or less. The e2e tier runs two
processes on a real API server (tests/e2e/test_leader.py).
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("lightkube")

from workerclass.controller.leader import LeadershipLost, LeaseElector, LeaseSettings

NAMESPACE, NAME = "cozy-workerclass", "workerclass-controller"


class ApiError(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.status = SimpleNamespace(code=code, reason=reason)


class Store:
    """One Lease as the API server keeps it: a resourceVersion per write, 409 on a stale one."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0

    def write(self, body: dict[str, Any], *, create: bool) -> dict[str, Any]:
        if create and self.lease is not None:
            raise ApiError(409, "AlreadyExists")
        if not create:
            if self.lease is None:
                raise ApiError(404, "NotFound")
            if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict")
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.lease = stored
        return copy.deepcopy(stored)

    def take(self, holder: str) -> None:
        """Another replica holds the Lease now (a write that is not ours)."""
        assert self.lease is not None
        spec = dict(self.lease["spec"], holderIdentity=holder, renewTime="2030-01-01T00:00:00.000000Z")
        self.write({**self.lease, "spec": spec}, create=False)


class Obj(dict[str, Any]):
    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self))


class Client:
    """One replica's view of the store; ``cut`` makes every call hang (no answer, no write reaches it)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cut = False
        self.writes: list[str] = []
        self.fail_replace: Exception | None = None

    async def _wait(self) -> None:
        if self.cut:
            await asyncio.Event().wait()  # a partition: no answer, ever

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> Any:
        await self._wait()
        if self.store.lease is None:
            raise ApiError(404, "NotFound")
        return Obj(copy.deepcopy(self.store.lease))

    async def create(self, obj: Any) -> Any:
        await self._wait()
        self.writes.append("create")
        return Obj(self.store.write(obj.to_dict(), create=True))

    async def replace(self, obj: Any) -> Any:
        await self._wait()
        if self.fail_replace is not None:
            raise self.fail_replace
        self.writes.append("replace")
        return Obj(self.store.write(obj.to_dict(), create=False))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wall(offset: float) -> Any:
    return lambda: datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=offset)


def elector(store: Store, identity: str, clock: Any = time.monotonic, **options: Any) -> LeaseElector:
    return LeaseElector(Client(store), namespace=NAMESPACE, name=NAME, identity=identity, clock=clock, **options)


def holder(store: Store) -> str:
    assert store.lease is not None
    return str(store.lease["spec"]["holderIdentity"])


def test_the_defaults_are_client_gos_and_leave_a_margin() -> None:
    settings = LeaseSettings()
    assert (settings.lease_duration, settings.renew_deadline, settings.retry_period) == (15.0, 10.0, 2.0)
    assert settings.margin == 5.0
    with pytest.raises(ValueError, match="must exceed renew_deadline"):
        LeaseSettings(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match="retry_period"):
        LeaseSettings(lease_duration=15, renew_deadline=2, retry_period=2)


@pytest.mark.parametrize("skew", [9.0, -9.0, 3600.0, -3600.0])
@pytest.mark.asyncio
async def test_expiry_is_judged_on_the_followers_own_clock_whatever_the_wall_clocks_say(skew: float) -> None:
    store, clock = Store(), Clock()
    leader = elector(store, "a", clock)
    follower = elector(store, "b", clock, wall=wall(skew))
    assert await leader.try_acquire_or_renew()
    assert not await follower.try_acquire_or_renew()  # first seen now: a whole lease to wait
    for _ in range(5):  # renewed every 2 s: never taken, however far apart the wall clocks are
        clock.now += 2.0
        assert await leader.try_acquire_or_renew()
        assert not await follower.try_acquire_or_renew()
    assert holder(store) == "a"
    # the leader stops renewing: taken once the record has not changed for 15 s on the follower's clock
    clock.now += 14.9
    assert not await follower.try_acquire_or_renew()
    clock.now += 0.2
    assert await follower.try_acquire_or_renew()
    assert holder(store) == "b"
    assert store.lease is not None and store.lease["spec"]["leaseTransitions"] == 1


@pytest.mark.asyncio
async def test_a_follower_takes_a_released_lease_at_once() -> None:
    store, clock = Store(), Clock()
    leader, follower = elector(store, "a", clock), elector(store, "b", clock)
    assert await leader.try_acquire_or_renew()
    assert not await follower.try_acquire_or_renew()
    assert await leader.release()
    assert holder(store) == ""
    assert await follower.try_acquire_or_renew()


@pytest.mark.asyncio
async def test_a_leader_cut_off_from_the_api_server_stops_before_anyone_takes_over() -> None:
    settings = LeaseSettings(lease_duration=1, renew_deadline=0.6, retry_period=0.1)
    store = Store()
    a, b = elector(store, "a", settings=settings), elector(store, "b", settings=settings)
    moments: dict[str, float] = {}
    started = asyncio.Event()

    async def work_of(name: str) -> None:
        moments[f"{name} leads"] = time.monotonic()
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            moments[f"{name} stopped"] = time.monotonic()
            raise

    stop_b = asyncio.Event()
    run_a = asyncio.create_task(a.run(lambda: work_of("a")))
    await asyncio.wait_for(started.wait(), 2)
    run_b = asyncio.create_task(b.run(lambda: work_of("b"), stop=stop_b))
    await asyncio.sleep(0.3)
    assert holder(store) == "a"
    a._client.cut = True
    cut = time.monotonic()
    writes = len(a._client.writes)
    with pytest.raises(LeadershipLost, match="renew deadline"):
        await asyncio.wait_for(run_a, 3)  # the shared client's 40 s read timeout never applies
    # stopped by the deadline counted from the last renewal sent, long before the lease ran out
    assert moments["a stopped"] - a.renewed_at <= settings.renew_deadline + 0.1
    assert moments["a stopped"] - cut <= settings.renew_deadline + 0.1
    assert len(a._client.writes) == writes  # nothing reached the API server after the cut
    await asyncio.wait_for(_until(lambda: "b leads" in moments), 3)
    assert moments["b leads"] > moments["a stopped"]
    assert moments["b leads"] - moments["a stopped"] >= settings.margin - 0.15
    stop_b.set()
    await asyncio.wait_for(run_b, 2)
    assert holder(store) == ""  # b released it on its clean stop


@pytest.mark.asyncio
async def test_a_lease_taken_by_another_while_leading_stops_the_work_and_raises() -> None:
    settings = LeaseSettings(lease_duration=1, renew_deadline=0.6, retry_period=0.1)
    store = Store()
    a = elector(store, "a", settings=settings)
    cancelled = asyncio.Event()
    started = asyncio.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    run = asyncio.create_task(a.run(work))
    await asyncio.wait_for(started.wait(), 2)
    store.take("b")
    with pytest.raises(LeadershipLost, match="held by b"):
        await asyncio.wait_for(run, 2)
    assert cancelled.is_set()
    assert not a.leading
    assert holder(store) == "b"  # a lost Lease is not released: it is not ours


@pytest.mark.asyncio
async def test_a_release_that_fails_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    settings = LeaseSettings(lease_duration=1, renew_deadline=0.6, retry_period=0.1)
    store = Store()
    a = elector(store, "a", settings=settings)
    stop = asyncio.Event()

    async def work() -> None:
        a._client.fail_replace = ApiError(503, "ServiceUnavailable")
        stop.set()

    with caplog.at_level(logging.WARNING, logger="workerclass.leader"):
        await asyncio.wait_for(a.run(work, stop=stop), 2)
    assert "releasing the leader Lease failed (503 ServiceUnavailable)" in caplog.text
    assert holder(store) == "a"


@pytest.mark.asyncio
async def test_a_release_is_bounded_and_never_sent_after_the_deadline(caplog: pytest.LogCaptureFixture) -> None:
    store, clock = Store(), Clock()
    a = elector(store, "a", clock)
    assert await a.try_acquire_or_renew()
    clock.now += 10.5  # past the renew deadline: the Lease may be another's already
    with caplog.at_level(logging.WARNING, logger="workerclass.leader"):
        assert not await a.release()
    assert "renew deadline has passed" in caplog.text
    assert holder(store) == "a"


@pytest.mark.asyncio
async def test_work_that_fails_ends_the_run_with_its_error_and_releases() -> None:
    settings = LeaseSettings(lease_duration=1, renew_deadline=0.6, retry_period=0.1)
    store = Store()
    a = elector(store, "a", settings=settings)

    async def work() -> None:
        raise RuntimeError("broken")

    with pytest.raises(RuntimeError, match="broken"):
        await asyncio.wait_for(a.run(work), 2)
    assert holder(store) == ""


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.01)
