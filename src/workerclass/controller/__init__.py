"""The WorkerClass controller: class status and the retention of classes that live pools select.

A thin door over the core (:mod:`workerclass.ops.status`):

* every WorkerClass in the cluster gets ``status.conditions`` (``Accepted``, ``InUse``, and with the
  worker controller beside it ``WorkersApplied``) and ``status.pools`` as the contract lays them
  out. The controller reads the same cluster cache as the webhook
  (:class:`~workerclass.adapters.kube.ClusterCache`: classes, pools, the platform and parent
  clusters); whenever the cache announces a new State (:meth:`~workerclass.adapters.kube.ClusterCache.changed`,
  bursts gathered by its debounce), or a pool's worker state changes, it makes again the status of
  the classes whose record, generation, platform or pools changed, and patches the ``status``
  subresource of those whose status differs. Each class's pools and their worker states are
  counted by change (:class:`~workerclass.ops.status.ClassUsage`), so a change costs the same at
  any number of pools. Nothing polls: a quiet cluster wakes nothing and sees no writes;
* custom classes (every name but the built-in ``talos`` and ``kairos``) carry the finalizer
  :data:`FINALIZER`, added and released from the same cache's States (a JSON patch that tests the
  finalizers it read, so a concurrent write is never overwritten). The design page: "Retain custom
  classes and the worker controller while live classified pools depend on them." A deletion waits
  until no live pool selects the class: the cache's view first, then a fresh list from the API
  server itself (:class:`PoolLister`), re-checked every ``retain_recheck`` seconds while held. The
  validating webhook's ``ClassInUse`` is the first line; this one also holds while the webhook is
  down. The page's other half: "Removing the controller can also leave custom classes with
  finalizers needing hoster handling": remove the finalizer by hand only after checking that no
  pool selects the class.

Until the cache has synced nothing is written and no finalizer is added or released: the
controller waits rather than guesses. ``serve controller`` runs this class controller, and the
worker controller, only on the replica that holds the leader Lease (:mod:`.leader`), so any number
of replicas can run. One list-watch per resource for the whole process: the cache's (kopf ran a
second watch of WorkerClasses for its one handler, the finalizer, until issue 21).

Its edge: the status and finalizer writes, the Events and the loop; no rule lives here. The
resource, the finalizer and what it reads come from the API table (:mod:`workerclass.api`,
:data:`workerclass.api.CONTROLLER_READS`).

Modules: this one (the loop, status and retention, and the protocols of what it reads and writes
through); :mod:`.doors` (their lightkube-backed forms, and the pool lister over the cluster cache);
:mod:`.workers` (the worker controller: classified pools become
machines, the handoff from Helm, Events and metrics); :mod:`.reporting` (Events and metrics);
:mod:`.leader` (leader election on a Lease); :mod:`.liveness` (``/healthz`` on every replica);
:mod:`.settled` (the cache as the controllers read it: no State before the chart is read).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..adapters.kube import short_error, status_code
from ..api import FINALIZER
from ..ops.status import ClassUsage, PoolStates, Usage, class_status, with_transitions
from ..rules.classes import BUILTIN_FAMILIES
from ..rules.usage import in_use_message, in_use_message_as, pool_list, selecting
from ..state import State
from .doors import CachePoolLister, LightkubeClassEvents, LightkubeFinalizerWriter, LightkubeStatusWriter
from .settled import ChartRead
from .workers import wait_first

__all__ = [
    "FINALIZER",
    "CachePoolLister",
    "ChartRead",
    "ClassController",
    "ClassEvents",
    "ControllerSettings",
    "FinalizerWriter",
    "LightkubeClassEvents",
    "LightkubeFinalizerWriter",
    "LightkubeStatusWriter",
    "PoolLister",
    "StateSource",
    "StatusWriter",
    "WorkerStates",
]

logger = logging.getLogger("workerclass.controller")

#: The words that start the log line of a deletion held while live pools select the class (an
#: expected wait, logged at INFO).
RETAINED = "retained:"

# FINALIZER (imported from the API table, exported): holds a custom class while live pools select it.


class StateSource(Protocol):
    """Where the controller reads the cluster (a :class:`~workerclass.adapters.kube.ClusterCache`):
    a synced State or ``None`` (nothing is decided then), and the announcement of new States."""

    @property
    def state(self) -> State | None: ...

    @property
    def published(self) -> int:
        """The generation of the State last announced."""
        ...

    async def changed(self, after: int) -> int:
        """Wait until a generation newer than ``after`` is announced; return it."""
        ...


class StatusWriter(Protocol):
    """Writes the ``status`` subresource of one WorkerClass (a merge patch of ``status``)."""

    async def write(self, name: str, status: dict[str, Any]) -> None: ...


class WorkerStates(PoolStates, Protocol):
    """The worker controller's report: each classified pool's state (:class:`PoolStates`: which
    changed since when, for :class:`~workerclass.ops.status.ClassUsage`), and a counter bumped on a
    change."""

    @property
    def states_version(self) -> int: ...

    @property
    def settled(self) -> bool:
        """Whether one reconcile has run: before it no pool's state is known."""
        ...

    async def states_changed(self, after: int) -> int:
        """Wait until ``states_version`` passes ``after``; return it."""
        ...


class PoolLister(Protocol):
    """The live pools that select a class, read from the API server itself (not a cache)."""

    async def selecting(self, name: str) -> list[str]: ...


class FinalizerWriter(Protocol):
    """Sets the finalizers of one WorkerClass, only if they are still ``seen`` (``None``: none)."""

    async def set(self, name: str, seen: list[str] | None, finalizers: list[str]) -> None:
        """Raises on a refusal: 409 or 422 when the finalizers changed since they were read."""
        ...


class ClassEvents(Protocol):
    """Posts a Warning Event about one WorkerClass (best effort)."""

    async def warn(self, name: str, reason: str, message: str, *, uid: str = "") -> None: ...


def _bare(status: dict[str, Any]) -> dict[str, Any]:
    """``status`` without the conditions' ``lastTransitionTime`` (what "written already" compares: a
    server that pruned the times must not make every pass write a new one)."""
    conditions = [
        {key: value for key, value in condition.items() if key != "lastTransitionTime"}
        for condition in status.get("conditions") or ()
    ]
    return {**status, "conditions": conditions}


@dataclass(frozen=True)
class ControllerSettings:
    #: seconds between re-checks of a deletion held because live pools select the class
    retain_recheck: float = 30.0
    #: seconds before a failed status write, pool list or finalizer patch is tried again
    retry_delay: float = 5.0


@dataclass
class _Held:
    """A deletion being held: when to check it again, why, and whether the API server's list said so."""

    until: float
    message: str
    listed: bool


class ClassController:
    """The status and the finalizer of every WorkerClass, driven by the cache's new States."""

    def __init__(
        self,
        source: StateSource,
        writer: StatusWriter,
        pools: PoolLister,
        *,
        finalizers: FinalizerWriter | None = None,
        events: ClassEvents | None = None,
        settings: ControllerSettings | None = None,
        workers: WorkerStates | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self.source = source
        #: the UTC time a condition's lastTransitionTime is written with
        self._wall = wall or (lambda: datetime.datetime.now(datetime.UTC))
        #: the worker controller's pool states, for the ``WorkersApplied`` condition (None: not run)
        self.workers = workers
        self.writer = writer
        self.pools = pools
        #: None: status only (no finalizer is added or released)
        self.finalizers = finalizers
        self.events = events
        #: the last status written per class and (uid, generation): never written twice, so a server that
        #: prunes or defaults part of it cannot make the loop write forever
        self._written: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
        #: each class's pools and their worker states, kept up by change (a State's pools are not
        #: counted again for each announcement)
        self.usage = ClassUsage()
        #: each class's status as last made, with what it was made of (its record, the platform,
        #: the generation, its usage): a State that changed none of them makes none again
        self._statuses: dict[str, tuple[Any, Any, int | None, Usage, dict[str, Any] | None]] = {}
        self.settings = settings or ControllerSettings()
        self._clock = clock
        self._held: dict[str, _Held] = {}
        #: the last problem said (logged and posted as an Event) per class: said again only when it changes
        self._warned: dict[str, str] = {}
        #: the finalizer patch last refused per class (409/422): the same one refused again is no race
        self._refused: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = {}
        #: each class's uid in the State last retained from (its Events name it)
        self._uids: dict[str, str] = {}
        self.writes = 0  # status patches sent (for the log and tests)
        self.finalizer_writes = 0  # finalizer patches sent

    async def run(self, *, stop: asyncio.Event | None = None) -> None:
        """Write status and keep the finalizers on every announced State until ``stop`` is set.

        Between States it sleeps: woken by the cache's announcement, the worker controller's change
        of a pool's state, a held deletion's recheck or a retry after a failure, nothing else."""
        stop = stop or asyncio.Event()
        status_seen: tuple[int, int] | None = None
        retain_seen = -1
        retain_due = float("inf")
        status_due = float("inf")
        while not stop.is_set():
            generation = self.source.published
            version = self.workers.states_version if self.workers is not None else 0
            state = self.source.state
            now = self._clock()
            if state is not None:
                # with the worker controller beside it, the status waits for its first reconcile: a
                # WorkersApplied written before would say Pending, and a restart would write twice
                waiting = self.workers is not None and not self.workers.settled
                if not waiting and ((generation, version) != status_seen or now >= status_due):
                    status_due = float("inf")
                    if await self._refresh_logged(state):
                        status_seen = (generation, version)
                    else:
                        status_due = self._clock() + self.settings.retry_delay  # the same State again later
                if self.finalizers is not None and (generation != retain_seen or now >= retain_due):
                    retain_seen = generation
                    retain_due = await self._retain_logged(state)
            timeout = max(0.0, min(retain_due, status_due) - self._clock())
            waits = [self.source.changed(generation)]
            if self.workers is not None:
                waits.append(self.workers.states_changed(version))
            await wait_first(stop, *waits, timeout=None if timeout == float("inf") else timeout)

    async def _retain_logged(self, state: State) -> float:
        try:
            return await self.retain(state)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug must not end the loop (nor the worker controller beside it): log, retry later
            logger.exception("adding or releasing WorkerClass finalizers failed")
            return self._clock() + self.settings.retry_delay

    # ------------------------------------------------------------------ status

    async def _refresh_logged(self, state: State) -> bool:
        before = self.writes
        try:
            complete = await self.refresh(state)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug must not end the loop: log it and try again after a pause
            logger.exception("refreshing WorkerClass status failed")
            complete = False
        if self.writes > before:
            logger.info("wrote the status of %d WorkerClass(es)", self.writes - before)
        return complete

    async def refresh(self, state: State) -> bool:
        """Write the status of every cluster class whose status differs; ``False`` if a write failed."""
        complete = True
        now = self._wall().strftime("%Y-%m-%dT%H:%M:%SZ")  # one time for the pass's transitions
        self.usage.fold(state, self.workers)
        for name, record in sorted(state.classes.items()):
            if record.builtin:
                continue  # the package's embedded class: no object in the cluster to write to
            metadata = record.obj.get("metadata") or {}
            generation = metadata.get("generation")
            observed = generation if isinstance(generation, int) else None
            usage = self.usage.of(name)
            made = self._statuses.get(name)
            if made is not None and made[0] is record and made[1] is state.platform and made[2:4] == (observed, usage):
                status = made[4]
            else:
                status = class_status(state, name, observed, usage=usage)
                self._statuses[name] = (record, state.platform, observed, usage, status)
            current = record.obj.get("status") or {}
            if status is None:
                continue
            status = with_transitions(status, current, now)
            if {key: current.get(key) for key in status} == status:
                continue
            identity = (metadata.get("uid"), generation)
            if self._written.get(name) == (*identity, _bare(status)):
                continue  # written already; what the server kept of it is its business
            try:
                await self.writer.write(name, status)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # one class must not starve the others
                if getattr(getattr(error, "status", None), "code", None) == 404:
                    self._written[name] = (*identity, _bare(status))  # deleted since the cache saw it: nothing to do
                    continue
                logger.warning("writing the status of WorkerClass %s failed (%s)", name, short_error(error))
                complete = False
                continue
            self._written[name] = (*identity, _bare(status))
            self.writes += 1
            accepted = status["conditions"][0]
            if accepted["status"] != "True":
                logger.warning("WorkerClass %s is not accepted: %s", name, accepted["reason"])
        for gone in set(self._written) - set(state.classes):
            del self._written[gone]
        for gone in set(self._statuses) - set(state.classes):
            del self._statuses[gone]
        return complete

    # ------------------------------------------------------------------ the finalizer

    async def retain(self, state: State) -> float:
        """Add :data:`FINALIZER` to every custom class that lacks it, and release the deleted ones no
        live pool selects; the monotonic time of the next check needed (a held deletion's recheck or
        a retry), ``inf`` if none."""
        assert self.finalizers is not None
        now = self._clock()
        due = float("inf")
        self._uids = {
            name: str((record.obj.get("metadata") or {}).get("uid") or "") for name, record in state.classes.items()
        }
        for name, record in sorted(state.classes.items()):
            if record.builtin or name in BUILTIN_FAMILIES:
                continue  # the built-ins are never held: the package carries them
            metadata = record.obj.get("metadata") or {}
            listed = metadata.get("finalizers")
            seen = [str(item) for item in listed] if isinstance(listed, list) and listed else None
            current = seen or []
            if not metadata.get("deletionTimestamp"):
                self._held.pop(name, None)
                if FINALIZER not in current and not await self._set(name, seen, [*current, FINALIZER], "adding"):
                    due = min(due, now + self.settings.retry_delay)
                continue
            if FINALIZER not in current:
                self._held.pop(name, None)
                continue  # being deleted, and not ours to hold (released already, or never added)
            due = min(due, await self._release(state, name, seen or [], now))
        for gone in set(self._held) - set(state.classes):
            del self._held[gone]
        for gone in set(self._warned) - set(state.classes):
            del self._warned[gone]
        for gone in set(self._refused) - set(state.classes):
            del self._refused[gone]
        return due

    async def _release(self, state: State, name: str, seen: list[str], now: float) -> float:
        """A deleted class with our finalizer: released if no live pool selects it, else held."""
        held = self._held.get(name)
        self.usage.fold(state, self.workers)  # the cache's count, kept by change (this runs per State)
        count = self.usage.of(name).pools
        pools: list[str] | None = None  # named only for the hoster's log line below
        blocker = in_use_message_as(name, *count) if count[0] else None
        listed = blocker is None  # whether the API server's list (not the cache) holds it
        if blocker is None:
            if held is not None and held.listed and now < held.until:
                return held.until  # the API server's list said held a moment ago: its recheck decides
            # The cache can lag behind a pool created a moment ago (or a watch being re-listed): the
            # finalizer is released only on a fresh list from the API server itself.
            try:
                live = await self.pools.selecting(name)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                problem = f"cannot list the pools that select WorkerClass {name} ({short_error(error)})"
                await self._problem(name, "RetainCheckFailed", problem)
                self._held[name] = _Held(now + self.settings.retry_delay, held.message if held else "", listed=True)
                return now + self.settings.retry_delay
            if live:
                pools, blocker = live, in_use_message(name, live)
            else:
                logger.info("WorkerClass %s: no live pool selects it; releasing it for deletion", name)
                if await self._set(name, seen, [item for item in seen if item != FINALIZER], "releasing"):
                    self._held.pop(name, None)
                    return float("inf")
                return now + self.settings.retry_delay
        # an expected wait: INFO, when it starts, when its reason changes and at every recheck
        if held is None or held.message != blocker or now >= held.until:
            # the hoster's log names the pools (what a tenant may read only counts them)
            named = pools if pools is not None else selecting(state, name)
            logger.info("WorkerClass %s: %s %s: %s", name, RETAINED, blocker, pool_list(named))
            held = _Held(now + self.settings.retain_recheck, blocker, listed=listed)
            self._held[name] = held
        return held.until

    async def _set(self, name: str, seen: list[str] | None, finalizers: list[str], doing: str) -> bool:
        assert self.finalizers is not None
        try:
            await self.finalizers.set(name, seen, finalizers)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            code = status_code(error)
            if code == 404:
                return True  # gone since the cache saw it: nothing to hold
            patch = (tuple(seen) if seen is not None else None, tuple(finalizers))
            if code in (409, 422) and self._refused.get(name) != patch:
                # its finalizers changed since the cache read them (the test failed: 422, whose
                # message the API server does not pass on): the next State decides. The same patch
                # refused again is no race: a webhook or the CRD refuses it, said below.
                self._refused[name] = patch
                logger.info("WorkerClass %s changed while %s the finalizer; trying again", name, doing)
                return False
            problem = f"{doing} the finalizer of WorkerClass {name} failed ({short_error(error)})"
            await self._problem(name, "FinalizerFailed", problem)
            return False
        self.finalizer_writes += 1
        self._warned.pop(name, None)
        self._refused.pop(name, None)
        return True

    async def _problem(self, name: str, reason: str, message: str) -> None:
        """A failure to decide or to write: a WARNING and a Warning Event, once per change of message."""
        if self._warned.get(name) == message:
            return
        self._warned[name] = message
        logger.warning("%s; trying again in %gs", message, self.settings.retry_delay)
        if self.events is not None:
            await self.events.warn(name, reason, message, uid=self._uids.get(name, ""))
