"""The small pieces behind the webhook's bounds: the body budget, log text, answered field paths."""

from __future__ import annotations

import asyncio

import pytest

from workerclass.webhook.connections import ConnectionGuard
from workerclass.webhook.logtext import escaped, identity_text, uid_text
from workerclass.webhook.review import shown_field
from workerclass.webhook.server import ByteBudget


def test_budget_waits_in_order_and_survives_cancellation() -> None:
    async def run() -> list[str]:
        budget = ByteBudget(100)
        order: list[str] = []
        assert await budget.take(60) == 60

        async def taker(name: str, amount: int) -> None:
            taken = await budget.take(amount)
            order.append(name)
            await asyncio.sleep(0)
            budget.give(taken)

        first = asyncio.create_task(taker("first", 50))
        cancelled = asyncio.create_task(taker("cancelled", 10))
        last = asyncio.create_task(taker("last", 40))
        await asyncio.sleep(0.01)
        assert order == []  # 40 free: the first in line (50) waits, and nobody jumps the queue
        cancelled.cancel()
        await asyncio.sleep(0.01)
        budget.give(60)
        await asyncio.wait_for(asyncio.gather(first, last), 5)
        assert budget.free == 100
        assert await budget.take(10**9) == 100  # more than the whole budget takes the whole budget
        return order

    assert asyncio.run(run()) == ["first", "last"]


def test_budget_wait_is_bounded_by_a_timeout() -> None:
    async def run() -> int:
        budget = ByteBudget(10)
        await budget.take(10)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await budget.take(5)
        budget.give(10)
        return budget.free

    assert asyncio.run(run()) == 10


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("spec.workerClassName", "spec.workerClassName"),
        ("spec.labels.node.kubernetes.io/role", "spec.labels.node.kubernetes.io/role"),
        ("spec.taints[2].value", "spec.taints[2].value"),
        ("spec.labels.https://user:pw@host/x", "spec.labels.(a key that is not shown)"),
        ("spec.labels.a b", "spec.labels.(a key that is not shown)"),
        ("spec.labels.-----BEGIN PRIVATE KEY-----", "spec.labels.(a key that is not shown)"),
        ("x" * 300, "." + "(a key that is not shown)"),
    ],
)
def test_field_paths_are_answered_up_to_a_key_that_could_hold_anything(text: str, shown: str) -> None:
    assert shown_field(text) == shown


def test_log_text() -> None:
    assert uid_text("705ab4f5-6393-11e8-b7cc-42010a800002") == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert uid_text("x" * 3_000_000) == "<not a UUID, 3000000 chars>"
    assert uid_text("705ab4f5-6393-11e8-b7cc-42010a800002\nforged") == "<not a UUID, 43 chars>"
    assert identity_text("tenant-a", "pool-1") == "tenant-a/pool-1"
    assert identity_text("", "Bad\nName") == "<not a Kubernetes name, 8 chars>"
    assert escaped("plain") == "plain"
    assert escaped("a\nb\\c\u00e9") == "a\\x0ab\\\\c\\xe9"
    long = escaped("y" * 10_000, 20)
    assert long.startswith("y" * 20) and long.endswith("...(10000 chars)") and "\n" not in long


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


def test_a_connection_evicted_before_it_is_made_is_closed_when_it_is() -> None:
    """asyncio accepts a burst of connections before making any: one that gave its slot away
    meanwhile is closed as soon as it is made, never left open outside the count."""

    async def run() -> None:
        guard = ConnectionGuard(asyncio.Protocol, limit=1, header_timeout=10.0, tls=None, handshake_timeout=10.0)
        first, second = guard(), guard()  # the second takes the first's slot
        early, late = FakeTransport(), FakeTransport()
        first.connection_made(early)
        second.connection_made(late)
        assert early.aborted and not late.aborted
        assert guard.open == 1 and guard.closed["evicted"] == 1
        first.connection_lost(None)  # the aborted one's loss frees nothing twice
        assert guard.open == 1
        second.connection_lost(None)
        assert guard.open == 0

    asyncio.run(run())


def test_a_burst_of_silent_connections_waits_out_their_grace_and_spares_those_that_spoke() -> None:
    """At the cap, connections accepted too recently to have been read are not closed at once: up
    to ``burst`` more are let in, then the silent ones go, oldest first, when their grace ends; one
    that spoke keeps its slot throughout."""

    async def run() -> None:
        guard = ConnectionGuard(
            asyncio.Protocol, limit=2, header_timeout=10.0, tls=None, handshake_timeout=10.0, grace=0.2, burst=2
        )
        transports = [FakeTransport() for _ in range(5)]
        spoke = guard()
        spoke.connection_made(transports[0])
        spoke.data_received(b"POST /validate/kubernetesnodes HTTP/1.1\r\n")  # headers not complete yet
        for transport in transports[1:4]:  # one under the cap, two over it: all in their grace
            guard().connection_made(transport)
        assert guard.open == 4 and guard.closed["evicted"] == 0
        guard().connection_made(transports[4])  # past the burst: the oldest silent one goes at once
        assert transports[1].aborted and guard.open == 4 and guard.closed["evicted"] == 1
        await asyncio.sleep(0.3)  # after the grace (the loop runs timers in order)
        assert [transport.aborted for transport in transports] == [False, True, True, True, False]
        assert guard.open == 2 and guard.closed["evicted"] == 3 and guard.closed["refused"] == 0

    asyncio.run(run())
