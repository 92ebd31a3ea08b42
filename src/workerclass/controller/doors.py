"""The class controller's doors to the cluster: the lightkube-backed status writer, finalizer
writer and Events, and the pool lister over the cluster cache (the protocols they meet are the
controller's: ``StatusWriter``, ``FinalizerWriter``, ``ClassEvents`` and ``PoolLister``).

Its edge: one request each, as the controller asks; no rule and no loop lives here.
"""

from __future__ import annotations

from typing import Any

from ..adapters.kube import ClusterCache
from ..api.resources import CLASS_SELECTORS, WORKER_CLASS
from ..rules.usage import selecting
from .reporting import post_object_event
from .workers import FIELD_MANAGER

__all__ = ["CachePoolLister", "LightkubeClassEvents", "LightkubeFinalizerWriter", "LightkubeStatusWriter"]

GROUP, VERSION, PLURAL = WORKER_CLASS.group, WORKER_CLASS.version, WORKER_CLASS.plural


class LightkubeStatusWriter:
    """``StatusWriter`` over a ``lightkube.AsyncClient``."""

    def __init__(self, client: Any) -> None:
        from lightkube.generic_resource import create_global_resource

        self._client = client
        self._resource = create_global_resource(GROUP, VERSION, WORKER_CLASS.kind, PLURAL)

    async def write(self, name: str, status: dict[str, Any]) -> None:
        from lightkube.types import PatchType

        await self._client.patch(self._resource.Status, name, {"status": status}, patch_type=PatchType.MERGE)


class CachePoolLister:
    """A ``PoolLister`` over the cluster cache: the pool kinds that can select a class, listed from the
    API server (:meth:`~workerclass.adapters.kube.ClusterCache.fresher`, as the webhook confirms a
    class DELETE), every namespace; where the list equals the cache's stores, the cache's snapshot."""

    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache

    async def selecting(self, name: str) -> list[str]:
        state = await self._cache.fresher(CLASS_SELECTORS) or self._cache.state
        if state is None:
            raise RuntimeError("the cluster cache has not synced")
        return selecting(state, name)


class LightkubeFinalizerWriter:
    """A ``FinalizerWriter`` over a ``lightkube.AsyncClient``: a JSON patch whose ``test`` op holds
    the finalizers read, so a finalizer another controller added meanwhile is never overwritten."""

    def __init__(self, client: Any) -> None:
        from lightkube.generic_resource import create_global_resource

        self._client = client
        self._resource = create_global_resource(GROUP, VERSION, WORKER_CLASS.kind, PLURAL)

    async def set(self, name: str, seen: list[str] | None, finalizers: list[str]) -> None:
        from lightkube.types import PatchType

        # a test for null passes on an absent list (the API server's JSON patch), so the add is guarded too
        patch = [
            {"op": "test", "path": "/metadata/finalizers", "value": seen},
            {"op": "add" if seen is None else "replace", "path": "/metadata/finalizers", "value": finalizers},
        ]
        await self._client.patch(self._resource, name, patch, patch_type=PatchType.JSON)


class LightkubeClassEvents:
    """A ``ClassEvents`` over a ``lightkube.AsyncClient`` (in ``default``: a class is cluster-scoped)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def warn(self, name: str, reason: str, message: str, *, uid: str = "") -> None:
        involved = {"apiVersion": WORKER_CLASS.api_version, "kind": WORKER_CLASS.kind, "name": name}
        if uid:
            involved["uid"] = uid  # what kubectl describe finds the class's Events by
        await post_object_event(
            self._client, involved, reason, message, warning=True, component=FIELD_MANAGER, what=f"WorkerClass {name}"
        )
