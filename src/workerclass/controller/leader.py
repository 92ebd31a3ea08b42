"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's leaderelection guarantees.

Every replica of ``serve controller`` runs a :class:`LeaseElector`; only the holder of the Lease
reconciles and writes. The guarantees, and how they are kept:

* **Expiry is judged on this process's own monotonic clock**, never by comparing the holder's
  ``renewTime`` with the local wall clock (hosts' wall clocks disagree; a follower a few seconds
  ahead would take a Lease renewed a moment ago). A follower remembers the Lease record it last
  read and the monotonic moment it first saw that record; it takes the Lease over only when the
  record has not changed for the record's ``leaseDurationSeconds`` on its own clock. ``renewTime``
  and ``acquireTime`` are still written (for people and tools) and never read for a decision.
* **Every renewal is bounded by the renew deadline.** The leader counts its deadline from the
  moment it *sent* its last successful renewal (the API server wrote it after that, so a
  follower's clock started later still) and every request it makes for the Lease, and every wait
  between them, ends at that deadline: the shared client's long read timeout never applies.
* **The leader stops acting before anyone may take over.** At the deadline the work is cancelled
  (no write of the controllers after it), and the Lease is lost. A follower can take over at the
  earliest ``lease_duration`` after it saw the last renewal, so the margin is ``lease_duration -
  renew_deadline`` (5 s with client-go's 15/10/2 s defaults, which are these). :class:`LeaseSettings`
  refuses durations that leave no margin or too few retries within the deadline.
* **A lost Lease ends the process.** The controllers' in-memory view (what was applied, pools'
  states) belonged to a leader; rather than re-campaign with it, :meth:`LeaseElector.run` raises
  :class:`LeadershipLost` once the work is stopped, ``serve controller`` exits with status 1 and
  the kubelet restarts the replica, which campaigns again from a clean start (controller-runtime's
  choice too). A Lease read held by someone else while leading is lost at once.
* **A clean stop releases the Lease** (an empty holder, ``leaseDurationSeconds`` 1) so another
  replica takes over at once; a release that fails is logged (the others then wait out the lease).

Writes carry the Lease's resourceVersion, so two replicas never both win a round.

Its edge: lightkube calls on one Lease, the monotonic clock (``clock``) and the wall clock
(``wall``, for the timestamps written), both injectable.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ..adapters.kube import short_error, status_code

__all__ = ["LeadershipLost", "LeaseElector", "LeaseSettings"]

logger = logging.getLogger("workerclass.leader")

#: how much a follower's wait between attempts may grow at random (client-go's JitterFactor)
JITTER = 1.2


class LeadershipLost(RuntimeError):
    """The leader could not renew its Lease within the renew deadline (or saw another holder): its
    work was stopped, and the process must not act as leader again without starting over."""


@dataclass(frozen=True)
class LeaseSettings:
    """Seconds: how long a Lease holds without renewal (``lease_duration``, what followers wait), how
    long the leader keeps trying to renew before it stops acting (``renew_deadline``), and the pause
    between attempts (``retry_period``). client-go's defaults."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if self.retry_period <= 0:
            raise ValueError("retry_period must be positive")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline:g}s) must exceed {JITTER:g} x retry_period "
                f"({self.retry_period:g}s): the leader needs more than one attempt before it gives up"
            )
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration:g}s) must exceed renew_deadline ({self.renew_deadline:g}s): "
                "the leader must stop acting before a follower may take over"
            )
        if int(self.lease_duration) != self.lease_duration:
            raise ValueError("lease_duration is written as whole seconds (leaseDurationSeconds)")

    @property
    def margin(self) -> float:
        """Seconds between the leader's last possible act and a follower's first chance to take over."""
        return self.lease_duration - self.renew_deadline


def _wall() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _micro(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(lease: dict[str, Any] | None) -> tuple[Any, ...] | None:
    """What a follower compares between reads: the Lease's spec as written (any write changes it)."""
    if lease is None:
        return None
    spec = lease.get("spec") or {}
    return tuple(
        str(spec.get(key))
        for key in ("holderIdentity", "renewTime", "acquireTime", "leaseDurationSeconds", "leaseTransitions")
    )


class LeaseElector:
    """Holds the Lease ``namespace/name`` for ``identity`` and runs ``work`` while it does.

    ``clock`` is monotonic seconds (every decision); ``wall`` the UTC time written into the Lease."""

    def __init__(
        self,
        client: Any,
        *,
        namespace: str,
        name: str,
        identity: str,
        settings: LeaseSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime.datetime] = _wall,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.settings = settings or LeaseSettings()
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()
        self.leading = False
        self.transitions = 0
        #: the Lease record last read and the monotonic moment it was first seen as it is
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = -float("inf")
        #: the holder of the record last read ("" when released or never read)
        self.observed_holder = ""
        #: the monotonic moment the last successful acquire or renewal was sent (its deadline counts from it)
        self.renewed_at = -float("inf")

    def _resource(self) -> Any:
        from lightkube.resources.coordination_v1 import Lease

        return Lease

    async def _read(self) -> dict[str, Any] | None:
        try:
            lease = await self._client.get(self._resource(), self.name, namespace=self.namespace)
        except Exception as error:
            if status_code(error) == 404:
                return None
            raise
        raw: dict[str, Any] = lease.to_dict() if hasattr(lease, "to_dict") else dict(lease)
        return raw

    def _observe(self, current: dict[str, Any] | None, now: float) -> None:
        record = _record(current)
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        self.observed_holder = str(((current or {}).get("spec") or {}).get("holderIdentity") or "")

    def expired(self, current: dict[str, Any], now: float) -> bool:
        """Whether the Lease ``current`` (the record last observed) may be taken over at ``now``: it was
        released, or it has not changed for its ``leaseDurationSeconds`` on this process's clock."""
        spec = current.get("spec") or {}
        if not spec.get("holderIdentity"):
            return True
        try:
            duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        except (TypeError, ValueError):
            duration = self.settings.lease_duration
        return now - self._observed_at >= duration

    async def try_acquire_or_renew(self) -> bool:
        """One round: take or renew the Lease when it is ours, released or expired; whether we hold it
        now. On success :attr:`renewed_at` is the moment this round began (before its first request)."""
        from lightkube import codecs

        began = self._clock()
        wall = _micro(self._wall())
        current = await self._read()
        self._observe(current, self._clock())
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.settings.lease_duration),
            "renewTime": wall,
        }
        if current is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec, "acquireTime": wall, "leaseTransitions": 0},
            }
            try:
                await self._client.create(codecs.from_dict(body))
            except Exception as error:
                if status_code(error) == 409:
                    return False  # another replica created it first
                raise
            self.renewed_at = began
            return True
        held = current.get("spec") or {}
        holder = str(held.get("holderIdentity") or "")
        if holder and holder != self.identity and not self.expired(current, self._clock()):
            return False
        transitions = int(held.get("leaseTransitions") or 0)
        if holder != self.identity:
            spec["acquireTime"] = wall
            spec["leaseTransitions"] = transitions + 1
        else:
            spec["acquireTime"] = held.get("acquireTime") or wall
            spec["leaseTransitions"] = transitions
        try:
            written = await self._client.replace(codecs.from_dict(self._lease(spec, current)))
        except Exception as error:
            if status_code(error) == 409:
                return False  # someone else wrote it since our read
            raise
        self.renewed_at = began
        raw = written.to_dict() if hasattr(written, "to_dict") else None
        self._observe(raw if isinstance(raw, dict) else {**current, "spec": spec}, self._clock())
        return True

    def _lease(self, spec: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        """The Lease with ``spec``, written over ``current`` (its resourceVersion: no lost update)."""
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": (current.get("metadata") or {}).get("resourceVersion"),
            },
            "spec": spec,
        }

    async def release(self) -> bool:
        """Give the Lease up (an empty holder, expired at once) so another replica need not wait; only
        while our renew deadline has not passed (after it the Lease may be someone else's), bounded by
        it. Whether it was released; a failure is logged."""
        from lightkube import codecs

        remaining = self.renewed_at + self.settings.renew_deadline - self._clock()
        if remaining <= 0:
            logger.warning("not releasing the leader Lease: its renew deadline has passed")
            return False
        try:
            async with asyncio.timeout(remaining):
                current = await self._read()
                if current is None or (current.get("spec") or {}).get("holderIdentity") != self.identity:
                    return False
                wall = _micro(self._wall())
                spec = dict(current.get("spec") or {})
                spec.update({"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": wall, "acquireTime": wall})
                await self._client.replace(codecs.from_dict(self._lease(spec, current)))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            what = "timed out" if isinstance(error, TimeoutError) else short_error(error)
            logger.warning(
                "releasing the leader Lease failed (%s): the next leader waits until it expires (%gs)",
                what,
                self.settings.lease_duration,
            )
            return False
        logger.info("released the leader Lease %s/%s", self.namespace, self.name)
        return True

    async def _attempt(self, limit: float) -> bool:
        """One :meth:`try_acquire_or_renew` ended after ``limit`` seconds; a failure is ``False``, logged."""
        try:
            async with asyncio.timeout(max(0.0, limit)):
                return await self.try_acquire_or_renew()
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            logger.warning("the leader Lease could not be read or written within %.1fs", limit)
        except Exception as error:
            logger.warning("the leader Lease could not be read or written (%s)", short_error(error))
        return False

    async def _pause(self, stop: asyncio.Event, seconds: float, task: asyncio.Task[None] | None = None) -> None:
        """Wait ``seconds``, or less when ``stop`` is set or ``task`` ends."""
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([waiter, *([task] if task else [])], timeout=max(0.0, seconds))
        finally:
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter

    async def _renew(self, stop: asyncio.Event, task: asyncio.Task[None], deadline: float) -> str:
        """Renew before ``deadline`` (monotonic): ``""`` when renewed (or stopping), else why the Lease is lost."""
        while not stop.is_set() and not task.done():
            remaining = deadline - self._clock()
            if remaining <= 0:
                return f"not renewed within the renew deadline ({self.settings.renew_deadline:g}s)"
            if await self._attempt(remaining):
                return ""
            if self.observed_holder not in ("", self.identity):
                return f"the Lease is held by {self.observed_holder}"
            await self._pause(stop, min(self.settings.retry_period, deadline - self._clock()), task)
        return ""

    async def run(self, work: Callable[[], Coroutine[Any, Any, None]], *, stop: asyncio.Event | None = None) -> None:
        """Campaign until ``stop``; while leading, ``work()`` runs. Raises :class:`LeadershipLost` when the
        Lease is lost (``work`` cancelled first, at the renew deadline at the latest), and what ``work``
        raised when it failed. A clean end (``stop``, or ``work`` returning) releases the Lease."""
        stop = stop or asyncio.Event()
        settings = self.settings
        task: asyncio.Task[None] | None = None
        try:
            while not stop.is_set():  # a follower: one attempt every retry_period (jittered)
                if await self._attempt(settings.renew_deadline):
                    break
                await self._pause(stop, settings.retry_period * self._rng.uniform(1.0, JITTER))
            if stop.is_set():
                return
            self.leading = True
            self.transitions += 1
            logger.info("leading as %s (Lease %s/%s)", self.identity, self.namespace, self.name)
            task = asyncio.create_task(work(), name="workerclass-leader-work")
            lost = ""
            while not stop.is_set() and not task.done() and not lost:
                deadline = self.renewed_at + settings.renew_deadline
                await self._pause(stop, min(settings.retry_period, deadline - self._clock()), task)
                if not stop.is_set() and not task.done():
                    lost = await self._renew(stop, task, deadline)
            if lost:
                self.leading = False
                await _cancel(task)  # first: nothing of the work may act after the deadline
                task = None
                logger.error("lost the leader Lease (%s): work stopped", lost)
                raise LeadershipLost(f"lost the leader Lease {self.namespace}/{self.name}: {lost}")
            if task.done() and not task.cancelled():
                failure = task.exception()
                if failure is not None:
                    raise failure
        finally:
            if task is not None:
                await _cancel(task)
            if self.leading:
                self.leading = False
                await self.release()


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
