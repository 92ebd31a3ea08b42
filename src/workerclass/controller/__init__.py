"""The WorkerClass controller: class status and the retention of classes that live pools select.

A thin door over the core (:mod:`workerclass.ops.status`):

* every WorkerClass in the cluster gets ``status.conditions`` (``Accepted``, ``InUse``, and with the
  worker controller beside it ``WorkersApplied``) and ``status.pools`` as the contract lays them
  out. The controller reads the same cluster cache as the webhook
  (:class:`~workerclass.adapters.kube.ClusterCache`: classes, pools, the platform and parent
  clusters); whenever the cache holds a new State, or a pool's worker state changes, it recomputes
  every class and patches the ``status`` subresource of those whose status differs, so a pool that
  starts or stops selecting a class shows within ``poll_interval`` seconds and a quiet cluster sees
  no writes;
* custom classes (every name but the built-in ``talos`` and ``kairos``) carry the finalizer
  :data:`FINALIZER`, through kopf. The design page: "Retain custom classes and the worker
  controller while live classified pools depend on them." A deletion waits, re-checked every
  ``retain_recheck`` seconds, until no live pool selects the class. The validating webhook's
  ``ClassInUse`` is the first line; this one also holds while the webhook is down. The page's
  other half: "Removing the controller can also leave custom classes with finalizers needing
  hoster handling": remove the finalizer by hand only after checking that no pool selects the class.

Until the cache has synced nothing is written and no finalizer is released: the controller waits
rather than guesses. kopf runs standalone (no peering): ``serve controller`` runs this class
controller, and the worker controller, only on the replica that holds the leader Lease
(:mod:`.leader`), so any number of replicas can run.

Its edge: kopf handlers, the status writes and the loop; no rule lives here. kopf is imported
here only, so the core and the webhook do not need it. The resource it handles, the finalizer and
kopf's annotation prefix come from the API table (:mod:`workerclass.api`), what it reads from the
cluster cache's list (:data:`workerclass.api.CONTROLLER_READS`).

Modules: this one (the status loop, the retention handler and the two lightkube-backed helpers,
:class:`LightkubeStatusWriter` and :class:`LightkubePoolLister`); :mod:`.workers` (the worker
controller: classified pools become machines, the handoff from Helm, Events and metrics);
:mod:`.reporting` (its Events and metrics); :mod:`.leader` (leader election on a Lease);
:mod:`.liveness` (``/healthz`` on every replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import kopf

from ..adapters.kube import LIST_CHUNK, short_error, status_code
from ..api import CONTROLLER_READS, FINALIZER, WEBHOOK_DOMAIN
from ..api.resources import POOL_KINDS, WORKER_CLASS
from ..ops.status import class_status
from ..rules.classes import BUILTIN_FAMILIES
from ..rules.usage import deletion_blocker, in_use_message
from ..state import State, pool_from_object

__all__ = [
    "FINALIZER",
    "ClassController",
    "ControllerSettings",
    "LightkubePoolLister",
    "LightkubeStatusWriter",
    "PoolLister",
    "StateSource",
    "StatusWriter",
    "WorkerStates",
]

logger = logging.getLogger("workerclass.controller")

#: The words that start the reason kopf logs while a deletion waits (an expected wait, logged at INFO).
RETAINED = "retained:"

# FINALIZER (imported from the API table, exported): holds a custom class while live pools select it.

#: the resource kopf handles (the WorkerClass row of the API table)
GROUP, VERSION, PLURAL = WORKER_CLASS.group, WORKER_CLASS.version, WORKER_CLASS.plural


class StateSource(Protocol):
    """Where the controller reads the cluster: a synced State, or ``None`` and the reason why not."""

    @property
    def state(self) -> State | None: ...

    @property
    def reason(self) -> str: ...


class StatusWriter(Protocol):
    """Writes the ``status`` subresource of one WorkerClass (a merge patch of ``status``)."""

    async def write(self, name: str, status: dict[str, Any]) -> None: ...


class LightkubeStatusWriter:
    """:class:`StatusWriter` over a ``lightkube.AsyncClient``."""

    def __init__(self, client: Any) -> None:
        from lightkube.generic_resource import create_global_resource

        self._client = client
        self._resource = create_global_resource(GROUP, VERSION, WORKER_CLASS.kind, PLURAL)

    async def write(self, name: str, status: dict[str, Any]) -> None:
        from lightkube.types import PatchType

        await self._client.patch(self._resource.Status, name, {"status": status}, patch_type=PatchType.MERGE)


class WorkerStates(Protocol):
    """The worker controller's report: each classified pool's state, and a counter bumped on a change."""

    @property
    def pool_states(self) -> dict[str, str]: ...

    @property
    def states_version(self) -> int: ...

    @property
    def settled(self) -> bool:
        """Whether one reconcile has run: before it no pool's state is known."""
        ...


class PoolLister(Protocol):
    """The live pools that select a class, read from the API server itself (not a cache)."""

    async def selecting(self, name: str) -> list[str]: ...


class LightkubePoolLister:
    """:class:`PoolLister` over a ``lightkube.AsyncClient``: KubernetesNodes and pool HelmReleases, all namespaces."""

    def __init__(self, client: Any) -> None:
        from lightkube.generic_resource import create_namespaced_resource

        self._client = client
        self._resources = [
            (create_namespaced_resource(w.group, w.version, w.kind, w.plural), w)
            for w in CONTROLLER_READS
            if w.kind in POOL_KINDS
        ]

    async def selecting(self, name: str) -> list[str]:
        found: set[str] = set()
        for resource, watched in self._resources:
            scope: dict[str, Any] = {"namespace": "*"}
            if watched.labels:
                scope["labels"] = dict(watched.labels)
            try:
                listed = [obj async for obj in self._client.list(resource, chunk_size=LIST_CHUNK, **scope)]
            except Exception as error:  # an optional API the cluster does not serve (or RBAC hides) has no pools
                if watched.optional and status_code(error) in (403, 404):
                    continue
                raise
            for obj in listed:
                raw = obj.to_dict() if hasattr(obj, "to_dict") else obj
                if isinstance(raw, dict):  # list items may leave apiVersion and kind out
                    raw = {"apiVersion": watched.api_version, "kind": watched.kind, **raw}
                record = pool_from_object(raw) if isinstance(raw, dict) else None
                if record is not None and record.class_name == name:
                    found.add(record.identity)
        return sorted(found)


@dataclass(frozen=True)
class ControllerSettings:
    #: seconds between checks for a new State (a cheap identity check; statuses are written on change)
    poll_interval: float = 2.0
    #: seconds between re-checks of a deletion held because live pools select the class
    retain_recheck: float = 30.0
    #: seconds before the deletion handler retries while the cache has not synced
    retry_delay: float = 5.0


class _ExpectedWait(logging.Filter):
    """kopf logs a retried handler at ERROR (and posts an Event); a held deletion is expected: INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and RETAINED in record.getMessage():
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _custom(name: str | None = None, **_: Any) -> bool:
    return name not in BUILTIN_FAMILIES


class ClassController:
    """The status loop, plus kopf's deletion handler in its own registry (no module-level kopf state)."""

    def __init__(
        self,
        source: StateSource,
        writer: StatusWriter,
        pools: PoolLister,
        *,
        settings: ControllerSettings | None = None,
        login: Callable[..., Any] | None = None,
        workers: WorkerStates | None = None,
    ) -> None:
        self.source = source
        #: the worker controller's pool states, for the ``WorkersApplied`` condition (None: not run)
        self.workers = workers
        self.writer = writer
        self.pools = pools
        #: the last status written per class and (uid, generation): never written twice, so a server that
        #: prunes or defaults part of it cannot make the loop write forever
        self._written: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
        self.settings = settings or ControllerSettings()
        self.registry = kopf.OperatorRegistry()
        self._login = login
        self.writes = 0  # status patches sent (for the log and tests)
        kopf.on.startup(registry=self.registry)(self._configure)
        kopf.on.login(registry=self.registry)(self._authenticate)
        kopf.on.delete(GROUP, VERSION, PLURAL, registry=self.registry, when=_custom, id="retain")(self._retain)

    async def run(
        self,
        *,
        stop_flag: Any = None,
        ready_flag: Any = None,
        liveness_endpoint: str | None = None,
    ) -> None:
        """Run the status loop and the kopf operator until ``stop_flag`` is set."""
        loop = asyncio.create_task(self._status_loop(), name="workerclass-status")
        try:
            await kopf.operator(
                registry=self.registry,
                clusterwide=True,
                standalone=True,
                stop_flag=stop_flag,
                ready_flag=ready_flag,
                liveness_endpoint=liveness_endpoint,
            )
        finally:
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop

    # ------------------------------------------------------------------ status

    async def refresh(self, state: State) -> bool:
        """Write the status of every cluster class whose status differs; ``False`` if a write failed."""
        complete = True
        for name, record in sorted(state.classes.items()):
            if record.builtin:
                continue  # the package's embedded class: no object in the cluster to write to
            metadata = record.obj.get("metadata") or {}
            generation = metadata.get("generation")
            workers = self.workers.pool_states if self.workers is not None else None
            status = class_status(state, name, generation if isinstance(generation, int) else None, workers)
            current = record.obj.get("status") or {}
            if status is None or {key: current.get(key) for key in status} == status:
                continue
            identity = (metadata.get("uid"), generation)
            if self._written.get(name) == (*identity, status):
                continue  # written already; what the server kept of it is its business
            try:
                await self.writer.write(name, status)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # one class must not starve the others
                if getattr(getattr(error, "status", None), "code", None) == 404:
                    self._written[name] = (*identity, status)  # deleted since the cache saw it: nothing to do
                    continue
                logger.warning("writing the status of WorkerClass %s failed (%s)", name, short_error(error))
                complete = False
                continue
            self._written[name] = (*identity, status)
            self.writes += 1
            accepted = status["conditions"][0]
            if accepted["status"] != "True":
                logger.warning("WorkerClass %s is not accepted: %s", name, accepted["reason"])
        for gone in set(self._written) - set(state.classes):
            del self._written[gone]
        return complete

    async def _status_loop(self) -> None:
        seen: State | None = None
        seen_workers = -1
        while True:
            state = self.source.state
            version = self.workers.states_version if self.workers is not None else 0
            # with the worker controller beside it, the status waits for its first reconcile: a
            # WorkersApplied written before would say Pending, and a restart would write twice
            waiting = self.workers is not None and not self.workers.settled
            if state is not None and not waiting and (state is not seen or version != seen_workers):
                before = self.writes
                try:
                    complete = await self.refresh(state)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bug must not end the loop: log it and try the next State
                    logger.exception("refreshing WorkerClass status failed")
                    complete = False
                if complete:
                    seen, seen_workers = state, version  # else the same State is tried again after a pause
                if self.writes > before:
                    logger.info("wrote the status of %d WorkerClass(es)", self.writes - before)
            current = (state is seen and version == seen_workers) or waiting
            await asyncio.sleep(self.settings.poll_interval if current else self.settings.retry_delay)

    # ------------------------------------------------------------------ kopf

    def _configure(self, settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.finalizer = FINALIZER
        settings.posting.level = logging.WARNING  # Kubernetes Events only for problems
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 360  # a silent connection is dropped and the watch restarted
        settings.networking.error_backoffs = [1, 2, 5, 10, 20, 30, 60, 60, 60, 60, 60, 60]  # ~7 minutes
        kopf_objects = logging.getLogger("kopf.objects")
        if not any(isinstance(existing, _ExpectedWait) for existing in kopf_objects.filters):
            kopf_objects.addFilter(_ExpectedWait())
        # kopf's bookkeeping in our own annotations; status belongs to API.md's shape.
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=WEBHOOK_DOMAIN)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix=WEBHOOK_DOMAIN, key="last-handled-configuration"
        )

    def _authenticate(self, **kwargs: Any) -> kopf.ConnectionInfo | None:
        if self._login is not None:
            return self._login(**kwargs)  # type: ignore[no-any-return]
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    async def _retain(self, name: str, **_: Any) -> None:
        state = self.source.state
        if state is None:
            raise kopf.TemporaryError(
                self.source.reason or "the cluster cache has not synced", delay=self.settings.retry_delay
            )
        blocker = deletion_blocker(state, name)
        if blocker is None:
            # The cache can lag behind a pool created a moment ago (or a watch being re-listed):
            # the finalizer is released only on a fresh list from the API server itself.
            try:
                live = await self.pools.selecting(name)
            except Exception as error:
                raise kopf.TemporaryError(
                    f"cannot list the pools that select WorkerClass {name} ({short_error(error)})",
                    delay=self.settings.retry_delay,
                ) from None
            if live:
                blocker = in_use_message(name, live)
        if blocker is not None:
            raise kopf.TemporaryError(f"{RETAINED} {blocker}", delay=self.settings.retain_recheck)
        logger.info("WorkerClass %s: no live pool selects it; releasing it for deletion", name)
