"""The webhook's live reads: one list per gathering of requests, and a bucket over all lists.

An unauthenticated caller of the webhook's port (its NetworkPolicy admits any source) could make
it list every pool in the cluster per forged WorkerClass DELETE; these bounds keep that fixed.
"""

from __future__ import annotations

import asyncio

import pytest

from workerclass.webhook.livereads import LIMITED, LiveReads

pytestmark = pytest.mark.asyncio


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_requests_waiting_together_share_one_list() -> None:
    reads = LiveReads(rate=1.0, burst=5, clock=Clock())
    release = asyncio.Event()
    sent: list[int] = []

    async def fetch() -> str:
        sent.append(1)
        await release.wait()
        return "fresh"

    first = asyncio.create_task(reads.read("key", fetch))
    while not sent:  # the first list is under way
        await asyncio.sleep(0)
    later = [asyncio.create_task(reads.read("key", fetch)) for _ in range(50)]
    for _ in range(10):
        await asyncio.sleep(0)
    assert len(sent) == 1  # the others gather for the next list, which waits for this one
    release.set()
    assert await first == "fresh"
    assert [await task for task in later] == ["fresh"] * 50
    assert len(sent) == 2 and reads.sent == 2 and reads.joined == 49


async def test_a_list_under_way_is_not_joined() -> None:
    """It may have been sent before the write a later request must see."""
    reads = LiveReads(rate=1.0, burst=5, clock=Clock())
    world = {"value": "old"}
    gate = asyncio.Event()

    started = asyncio.Event()

    async def fetch() -> str:
        seen = world["value"]
        started.set()
        await gate.wait()
        return seen

    early = asyncio.create_task(reads.read("key", fetch))
    await started.wait()
    world["value"] = "new"  # written after the first list read, before the next request
    late = asyncio.create_task(reads.read("key", fetch))
    await asyncio.sleep(0)
    gate.set()
    assert (await early, await late) == ("old", "new")


async def test_lists_past_the_bucket_are_not_sent() -> None:
    clock = Clock()
    reads = LiveReads(rate=2.0, burst=3, clock=clock)

    async def fetch() -> str:
        return "fresh"

    results = [await reads.read(("kinds", f"tenant-{index}"), fetch) for index in range(10)]
    assert results[:3] == ["fresh"] * 3 and all(result is LIMITED for result in results[3:])
    assert (reads.sent, reads.limited) == (3, 7)
    clock.now += 1.0  # two tokens back
    assert [await reads.read("key", fetch) for _ in range(3)][:2] == ["fresh", "fresh"]
    assert reads.sent == 5


async def test_a_failed_list_fails_its_requests_and_the_next_list_is_sent() -> None:
    reads = LiveReads(rate=10.0, burst=10, clock=Clock())
    calls = 0

    async def fetch() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("503")
        return "fresh"

    with pytest.raises(RuntimeError):
        await reads.read("key", fetch)
    assert await reads.read("key", fetch) == "fresh"


async def test_a_caller_that_stops_waiting_leaves_the_list_to_the_others() -> None:
    reads = LiveReads(rate=10.0, burst=10, clock=Clock())
    gate = asyncio.Event()

    async def fetch() -> str:
        await gate.wait()
        return "fresh"

    patient = asyncio.create_task(reads.read("key", fetch))
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await reads.read("key", fetch)
    gate.set()
    assert await patient == "fresh"


async def test_a_cheap_read_is_shared_but_never_limited() -> None:
    """The bucket bounds only what the caller calls costly: a pool created right after its class
    is confirmed live however busy the costly reads keep the bucket."""
    reads = LiveReads(rate=0.0, burst=1, clock=Clock())

    async def fetch() -> str:
        return "fresh"

    assert await reads.read("pools", fetch) == "fresh"
    assert await reads.read("pools", fetch) is LIMITED  # the bucket is empty
    assert [await reads.read("classes", fetch, bounded=False) for _ in range(5)] == ["fresh"] * 5
