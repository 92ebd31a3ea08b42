"""The cluster-backed state: list and watch what admission reads, rebuild a State on every change.

Its edge: the Kubernetes API in (through lightkube's async client), whole
:class:`~workerclass.state.State` snapshots out. What it reads is :data:`WATCHED`, which is also
where the install manifests take their RBAC rules from, so the ServiceAccount can read exactly
this and nothing else.

Like an informer: each resource is listed, then watched from the list's resourceVersion; a watch
that fails (410 Gone, a dropped connection, a 5xx) is followed by a fresh list after a backoff.
The cache is *synced* only once every resource's first list has succeeded; until then ``state``
is ``None`` and ``reason`` says which lists are missing and the last error, so the webhook fails
closed and says why. After that, a resource whose watch broke keeps its last known objects while
it is listed again (a stale read rather than an outage, as with client-go informers).

lightkube is imported lazily so that importing this module (for :data:`WATCHED`) needs no client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..state import APPLICATION_KIND_LABEL, State

logger = logging.getLogger("workerclass.kube")


@dataclass(frozen=True, slots=True)
class Watched:
    """One resource the cache lists and watches."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        """``plural.group``, as RBAC and kubectl name it."""
        return f"{self.plural}.{self.group}"


WATCHED: tuple[Watched, ...] = (
    Watched("cozystack.io", "v1alpha1", "WorkerPlatform", "workerplatforms", False),
    Watched("cozystack.io", "v1alpha1", "WorkerClass", "workerclasses", False),
    Watched("apps.cozystack.io", "v1alpha1", "Kubernetes", "kuberneteses", True),
    Watched("apps.cozystack.io", "v1alpha1", "KubernetesNodes", "kubernetesnodes", True),
    Watched("apps.cozystack.io", "v1alpha1", "ComputePlane", "computeplanes", True),
    Watched(
        "instancetype.kubevirt.io",
        "v1beta1",
        "VirtualMachineClusterInstancetype",
        "virtualmachineclusterinstancetypes",
        False,
    ),
    Watched(
        "helm.toolkit.fluxcd.io",
        "v2",
        "HelmRelease",
        "helmreleases",
        True,
        {APPLICATION_KIND_LABEL: "KubernetesNodes"},
    ),
)


#: What the WorkerClass controller reads: a class's status needs the platform (for its rules) and the
#: pools, not parent clusters or ComputePlanes (whose node groups are classless).
CONTROLLER_WATCHED: tuple[Watched, ...] = tuple(
    watched
    for watched in WATCHED
    if watched.kind in ("WorkerPlatform", "WorkerClass", "KubernetesNodes", "HelmRelease")
)


def short_error(error: BaseException) -> str:
    """An API error's status line, or the exception type: never a response body."""
    status = getattr(error, "status", None)
    code = getattr(status, "code", None)
    reason = getattr(status, "reason", None)
    if code is not None:
        return f"{code} {reason or ''}".strip()
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__


class ClusterCache:
    """A :class:`~workerclass.webhook.sources.StateSource` kept current from the Kubernetes API.

    ``client`` is a ``lightkube.AsyncClient``; without one, one is made from the environment
    (in-cluster service account, ``KUBECONFIG`` or ``~/.kube/config``) on :meth:`start`.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        resources: tuple[Watched, ...] = WATCHED,
        retry_delay: float = 1.0,
        max_retry_delay: float = 30.0,
        debounce: float = 0.05,
        watch_timeout: int = 300,
    ) -> None:
        self._client = client
        #: the server ends each watch after this many seconds and the resource is listed again, so a
        #: connection that died without a word (a failover, a load balancer) cannot freeze the cache
        self.watch_timeout = watch_timeout
        self._owns_client = client is None
        self.resources = resources
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.debounce = debounce
        self._stores: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._listed: set[str] = set()
        self._errors: dict[str, str] = {}
        self._state: State | None = None
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.generation = 0

    # ------------------------------------------------------------------ StateSource

    @property
    def state(self) -> State | None:
        return self._state

    @property
    def synced(self) -> bool:
        return self._state is not None

    @property
    def reason(self) -> str:
        if self._state is not None:
            return ""
        missing = [watched.name for watched in self.resources if watched.kind not in self._listed]
        text = "the cluster cache has not synced: waiting for the first list of " + ", ".join(missing)
        messages = set(self._errors.values())
        if len(messages) == 1 and len(self._errors) > 1:  # one cause for all (the API is unreachable)
            text += f" (last error of each: {messages.pop()})"
        elif self._errors:
            names = {watched.kind: watched.name for watched in self.resources}
            errors = [f"{names.get(kind, kind)}: {error}" for kind, error in sorted(self._errors.items())]
            text += " (last errors: " + "; ".join(errors) + ")"
        return text

    async def start(self) -> None:
        if self._client is None:
            from lightkube import AsyncClient

            self._client = AsyncClient(field_manager="workerclass-webhook")
        self._tasks = [
            asyncio.create_task(self._follow(watched), name=f"workerclass-watch-{watched.plural}")
            for watched in self.resources
        ]
        self._tasks.append(asyncio.create_task(self._rebuild_loop(), name="workerclass-state-rebuild"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None

    async def wait_synced(self, timeout: float | None = None) -> State:
        """The first synced state (for tests and tools); raises TimeoutError."""
        async with asyncio.timeout(timeout):
            while self._state is None:
                await asyncio.sleep(0.01)
        assert self._state is not None
        return self._state

    # ------------------------------------------------------------------ list + watch

    def _normalized(self, watched: Watched, obj: Any) -> tuple[tuple[str, str], dict[str, Any]] | None:
        raw = obj.to_dict() if hasattr(obj, "to_dict") else obj
        if not isinstance(raw, dict):
            return None
        raw = dict(raw)
        # List items of custom resources carry apiVersion and kind; fill them when a server leaves them out.
        raw.setdefault("apiVersion", watched.api_version)
        raw.setdefault("kind", watched.kind)
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            return None
        namespace = metadata.get("namespace") or ""
        return (namespace if isinstance(namespace, str) else "", metadata["name"]), raw

    async def _follow(self, watched: Watched) -> None:
        from lightkube.generic_resource import create_global_resource, create_namespaced_resource

        factory = create_namespaced_resource if watched.namespaced else create_global_resource
        resource = factory(watched.group, watched.version, watched.kind, watched.plural)
        scope: dict[str, Any] = {"namespace": "*"} if watched.namespaced else {}
        if watched.labels:
            scope["labels"] = dict(watched.labels)
        delay = self.retry_delay
        while True:
            try:
                listing = self._client.list(resource, **scope)
                items: dict[tuple[str, str], dict[str, Any]] = {}
                async for obj in listing:
                    entry = self._normalized(watched, obj)
                    if entry is not None:
                        items[entry[0]] = entry[1]
                try:
                    version: str | None = listing.resourceVersion
                except Exception:  # an empty list page may carry none: watch from "now"
                    version = None
                self._stores[watched.kind] = items
                first = watched.kind not in self._listed
                self._listed.add(watched.kind)
                self._errors.pop(watched.kind, None)
                self._changed()
                if first:
                    logger.info("listed %d %s", len(items), watched.name)
                delay = self.retry_delay
                watch = self._client.watch(
                    resource, resource_version=version, server_timeout=self.watch_timeout, **scope
                )
                async for event, obj in watch:
                    if event not in ("ADDED", "MODIFIED", "DELETED"):
                        continue  # BOOKMARK: nothing changed
                    entry = self._normalized(watched, obj)
                    if entry is None:
                        continue
                    if event == "DELETED":
                        items.pop(entry[0], None)
                    else:
                        items[entry[0]] = entry[1]
                    self._changed()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                message = short_error(error)
                self._errors[watched.kind] = message
                logger.warning("%s: list/watch failed (%s); listing again in %.1fs", watched.name, message, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_retry_delay)

    def _changed(self) -> None:
        self._dirty.set()

    async def _rebuild_loop(self) -> None:
        while True:
            await self._dirty.wait()
            await asyncio.sleep(self.debounce)  # one rebuild for a burst of events
            self._dirty.clear()
            if any(watched.kind not in self._listed for watched in self.resources):
                continue
            objects = [obj for store in self._stores.values() for obj in store.values()]
            try:
                state = await asyncio.to_thread(State.from_objects, objects)
            except Exception:  # a builder bug must not end the cache; keep the previous snapshot
                logger.exception("rebuilding the state from %d objects failed", len(objects))
                continue
            if self._state is None:
                logger.info("cluster cache synced: %d objects", len(objects))
            self._state = state
            self.generation += 1
