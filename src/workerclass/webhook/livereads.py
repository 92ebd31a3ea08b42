"""The webhook's live reads, shared and bounded.

A decision that rests on an object not being there (a WorkerClass DELETE, a ``ClassNotFound``) is
confirmed by listing the kinds it rests on from the API server (:meth:`~workerclass.adapters.kube.
ClusterCache.fresher`). The webhook's port is reachable from any source (its NetworkPolicy cannot
name the API server), so whoever can reach it can send such reviews: unbounded, each forged
WorkerClass DELETE would list every pool in the cluster. Two rules keep that cost fixed:

- **one list serves every request waiting for it.** Requests for the same kinds and namespace
  join the list that has not started yet; a list already under way is not joined (it may have
  been sent before the write a request must see), so a request arriving during it waits for the
  next one, which starts when it ends. At most two lists per key exist at once, one running and
  one gathering;
- **a token bucket over the costly lists** (``rate`` per second, ``burst`` at once; the caller says
  which: the webhook bounds its lists of the pools of every namespace, not the cheap ones, so a pool
  created right after its class is still confirmed live): a list that finds no token is not sent,
  and its requests are answered from the cache (``LIMITED``), as they are when a live read fails or
  is slow: the cache's decision is the one the webhook gave before it read live at all.

Its edge: awaitables in, results out; no Kubernetes, no State of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Final

__all__ = ["LIMITED", "LiveReads"]

#: what :meth:`LiveReads.read` returns when the list was not sent (no token)
LIMITED: Final = object()


class LiveReads:
    """Coalesces live reads by key and bounds how many are sent (see the module docstring)."""

    def __init__(self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._filled = clock()
        #: the list still gathering requests, by key
        self._gathering: dict[Hashable, asyncio.Future[Any]] = {}
        #: the last list made for a key (gathering or running), which the next one waits for
        self._last: dict[Hashable, asyncio.Future[Any]] = {}
        self.sent = 0  # lists sent
        self.limited = 0  # lists not sent for want of a token
        self.joined = 0  # requests served by a list another request started

    def _take(self) -> bool:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._filled) * self.rate)
        self._filled = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    async def read(self, key: Hashable, fetch: Callable[[], Awaitable[Any]], *, bounded: bool = True) -> Any:
        """``fetch()``'s result, from a list started after this call; :data:`LIMITED` when the
        list was not sent. A caller that stops waiting (a timeout) leaves the list to the others.
        ``bounded=False``: a cheap list, shared but not counted against the bucket."""
        flight = self._gathering.get(key)
        if flight is None:
            flight = asyncio.ensure_future(self._fly(key, self._last.get(key), fetch, bounded))
            self._gathering[key] = self._last[key] = flight
            flight.add_done_callback(lambda done: self._done(key, done))
        else:
            self.joined += 1
        return await asyncio.shield(flight)

    def _done(self, key: Hashable, flight: asyncio.Future[Any]) -> None:
        if self._last.get(key) is flight:
            del self._last[key]
        if self._gathering.get(key) is flight:
            del self._gathering[key]
        if not flight.cancelled():
            flight.exception()  # retrieved: a failed list is its callers' (each got it), never "unretrieved"

    async def _fly(
        self, key: Hashable, previous: asyncio.Future[Any] | None, fetch: Callable[[], Awaitable[Any]], bounded: bool
    ) -> Any:
        if previous is not None:
            await asyncio.wait([previous])  # its outcome is its callers'; this one's own cancellation propagates
        # from here on this list is under way: a later request gathers for the next one
        if self._gathering.get(key) is asyncio.current_task():
            del self._gathering[key]
        if bounded and not self._take():
            self.limited += 1
            return LIMITED
        self.sent += 1
        return await fetch()
