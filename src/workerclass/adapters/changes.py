"""A change notification: a version counter that wakes its waiters, bursts coalesced by a debounce.

The cluster cache bumps one on every new State, the worker controller one on every change of a
pool's state; the controller's loops wait on them instead of polling, so a quiet cluster costs no
wake-up and no write, and a change is acted on within the debounce.

Its edge: asyncio only (an Event per wait round and, with a debounce, one timer handle); no I/O.
"""

from __future__ import annotations

import asyncio

__all__ = ["Changes"]


class Changes:
    """A counter of changes (:attr:`version`) and what its waiters have been told (:attr:`published`).

    :meth:`bump` counts a change. With ``debounce`` 0 the change is published at once; otherwise
    the first change of a burst starts a timer and every change within ``debounce`` seconds of it
    is published together when it fires: waiters wake at most once per ``debounce`` seconds and see
    the latest version. :meth:`wait` returns as soon as :attr:`published` passes the version the
    caller saw last, so no change between two waits is missed.
    """

    def __init__(self, debounce: float = 0.0) -> None:
        self.debounce = debounce
        #: changes counted so far
        self.version = 0
        #: the version waiters were last woken for (``version`` once a pending burst is published)
        self.published = 0
        self._event: asyncio.Event | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def bump(self) -> None:
        """Count one change; publish it now, or with the burst it belongs to."""
        self.version += 1
        if self.debounce <= 0:
            self._publish()
            return
        if self._timer is not None and self._timer_loop is not None and not self._timer_loop.is_closed():
            return  # a burst is gathering: this change goes out with it (a closed loop's timer never fires)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # outside an event loop (a State built before the loop runs): nobody waits yet
            self._publish()
            return
        self._timer, self._timer_loop = loop.call_later(self.debounce, self._publish), loop

    def _publish(self) -> None:
        self._timer = None
        self.published = self.version
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self, after: int) -> int:
        """Wait until a version newer than ``after`` is published; return it."""
        while self.published <= after:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        return self.published

    def close(self) -> None:
        """Publish a pending burst now (nothing is held back when its owner stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._publish()
