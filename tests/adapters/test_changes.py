"""The change notification the controller's loops wait on: a change wakes them, a burst wakes them
once (the debounce), and nothing wakes them without a change."""

from __future__ import annotations

import asyncio

import pytest

from workerclass.adapters.changes import Changes


async def woken(changes: Changes, after: int, limit: float) -> int | None:
    """The version a waiter is woken for within ``limit`` seconds, or None."""
    try:
        return await asyncio.wait_for(changes.wait(after), limit)
    except TimeoutError:
        return None


@pytest.mark.asyncio
async def test_a_change_wakes_a_waiter_at_once_without_a_debounce() -> None:
    changes = Changes()
    waiter = asyncio.create_task(changes.wait(changes.published))
    await asyncio.sleep(0)
    assert not waiter.done()
    changes.bump()
    assert await asyncio.wait_for(waiter, 1) == 1


@pytest.mark.asyncio
async def test_nothing_wakes_a_waiter_without_a_change() -> None:
    changes = Changes(debounce=0.01)
    changes.bump()
    seen = await woken(changes, 0, 1)
    assert seen == 1
    assert await woken(changes, seen, 0.1) is None


@pytest.mark.asyncio
async def test_a_change_between_two_waits_is_not_missed() -> None:
    changes = Changes()
    seen = changes.published
    changes.bump()  # nobody waits at this moment
    assert await woken(changes, seen, 0.1) == 1


@pytest.mark.asyncio
async def test_a_burst_within_the_debounce_wakes_once_with_its_last_version() -> None:
    changes = Changes(debounce=0.2)
    wakes: list[int] = []

    async def follow() -> None:
        seen = 0
        while True:
            seen = await changes.wait(seen)
            wakes.append(seen)

    follower = asyncio.create_task(follow())
    for _ in range(5):  # five changes within 0.1 s of the first
        changes.bump()
        await asyncio.sleep(0.02)
    assert wakes == [] and changes.published == 0  # gathered: not announced before the debounce ends
    await asyncio.sleep(0.3)
    assert wakes == [5]
    changes.bump()  # a later change starts a burst of its own
    await asyncio.sleep(0.3)
    follower.cancel()
    assert wakes == [5, 6]


@pytest.mark.asyncio
async def test_closing_announces_a_pending_burst() -> None:
    changes = Changes(debounce=60)
    changes.bump()
    assert changes.published == 0
    changes.close()
    assert await woken(changes, 0, 0.1) == 1


def test_a_burst_left_pending_on_a_closed_loop_does_not_silence_the_next_loop() -> None:
    changes = Changes(debounce=0.05)

    async def bump_and_leave() -> None:
        changes.bump()  # its timer dies with this loop, never fired, never closed

    async def bump_and_wait() -> int:
        seen = changes.published
        changes.bump()
        return await asyncio.wait_for(changes.wait(seen), 2)

    asyncio.run(bump_and_leave())
    assert asyncio.run(bump_and_wait()) == 2
