"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection does.

Every replica of ``serve controller`` runs a :class:`LeaseElector`; only the holder of the Lease
reconciles and writes. The holder renews the Lease every ``retry_period`` seconds; a replica takes
it over once ``renewTime + leaseDurationSeconds`` has passed without a renewal (the holder died or
lost the API), so a killed leader is replaced within about ``lease_duration + retry_period``
seconds (15 s by default). Writes use the Lease's resourceVersion, so two replicas never both win.
A holder that cannot renew within ``renew_deadline`` seconds gives up leadership itself (its work is
cancelled) before another replica can take over, so two leaders never act at once. A holder that
stops cleanly releases the Lease (an empty holder) so the next one takes over at once.

Its edge: lightkube calls on one Lease and the clock; times in the Lease are the API's MicroTime.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ..adapters.kube import short_error, status_code

__all__ = ["LeaseElector", "LeaseSettings"]

logger = logging.getLogger("workerclass.leader")


@dataclass(frozen=True)
class LeaseSettings:
    lease_duration: float = 10.0
    renew_deadline: float = 8.0
    retry_period: float = 2.0


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _parse(value: Any) -> datetime.datetime | None:
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
    if isinstance(value, str) and value:
        with contextlib.suppress(ValueError):
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None


def _micro(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseElector:
    """Holds the Lease ``namespace/name`` for ``identity`` and runs ``work`` while it does."""

    def __init__(
        self,
        client: Any,
        *,
        namespace: str,
        name: str,
        identity: str,
        settings: LeaseSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.settings = settings or LeaseSettings()
        self._clock = clock
        self.leading = False
        self.transitions = 0

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

    async def try_acquire_or_renew(self) -> bool:
        """One round: take or renew the Lease when it is ours or expired; whether we hold it now."""
        from lightkube import codecs

        now = _now()
        current = await self._read()
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.settings.lease_duration),
            "renewTime": _micro(now),
        }
        if current is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec, "acquireTime": _micro(now), "leaseTransitions": 0},
            }
            try:
                await self._client.create(codecs.from_dict(body))
            except Exception as error:
                if status_code(error) == 409:
                    return False  # another replica created it first
                raise
            return True
        held = current.get("spec") or {}
        holder = held.get("holderIdentity") or ""
        renewed = _parse(held.get("renewTime")) or _parse(held.get("acquireTime"))
        duration = float(held.get("leaseDurationSeconds") or self.settings.lease_duration)
        expired = renewed is None or (now - renewed).total_seconds() > duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(held.get("leaseTransitions") or 0)
        if holder != self.identity:
            spec["acquireTime"] = _micro(now)
            spec["leaseTransitions"] = transitions + 1
        else:
            spec["acquireTime"] = held.get("acquireTime") or _micro(now)
            spec["leaseTransitions"] = transitions
        try:
            await self._client.replace(codecs.from_dict(self._lease(spec, current)))
        except Exception as error:
            if status_code(error) == 409:
                return False  # someone else wrote it since our read
            raise
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

    async def release(self) -> None:
        """Give the Lease up (an empty holder, expired at once) so another replica need not wait."""
        from lightkube import codecs

        with contextlib.suppress(Exception):
            current = await self._read()
            if current is None or (current.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            spec = dict(current.get("spec") or {})
            spec.update({"holderIdentity": "", "leaseDurationSeconds": 1})
            await self._client.replace(codecs.from_dict(self._lease(spec, current)))

    async def run(self, work: Callable[[], Coroutine[Any, Any, None]], *, stop: asyncio.Event | None = None) -> None:
        """Campaign until ``stop``; while leading, ``work()`` runs (cancelled when leadership is lost)."""
        stop = stop or asyncio.Event()
        task: asyncio.Task[None] | None = None
        last_renewal = -float("inf")
        try:
            while not stop.is_set():
                try:
                    holding = await self.try_acquire_or_renew()
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    logger.warning("the leader Lease could not be read or written (%s)", short_error(error))
                    holding = False
                now = self._clock()
                if holding:
                    last_renewal = now
                    if not self.leading:
                        self.leading = True
                        self.transitions += 1
                        logger.info("leading as %s (Lease %s/%s)", self.identity, self.namespace, self.name)
                        task = asyncio.create_task(work(), name="workerclass-leader-work")
                elif self.leading and now - last_renewal > self.settings.renew_deadline:
                    logger.warning("lost the leader Lease: stopping work")
                    self.leading = False
                    if task is not None:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await task
                        task = None
                if task is not None and task.done():
                    failure = task.exception() if not task.cancelled() else None
                    if failure is not None:
                        raise failure
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.retry_period)
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self.leading:
                self.leading = False
                await self.release()
