"""What the controller tells people: Kubernetes Events on a pool's HelmRelease or a WorkerClass, and metrics.

Events carry our own messages only (states, counts, denial codes), never a pool's values, so no
secret reaches them. Metrics (Prometheus, the process registry): pools by state, write requests,
apply errors and how long a reconcile takes. Its edge: one Event write through lightkube; the
metric objects.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from ..adapters.kube import short_error
from ..api.resources import HELM_RELEASE, KUBERNETES_NODES
from ..ops.workers import DesiredPool

__all__ = ["WorkerMetrics", "involved_object", "post_event", "post_object_event"]

logger = logging.getLogger("workerclass.workers")


class WorkerMetrics:
    """Pools by state, writes, apply errors and reconcile latency (Prometheus, the process registry)."""

    def __init__(self, registry: Any = None) -> None:
        from prometheus_client import REGISTRY, Counter, Gauge, Histogram

        registry = registry if registry is not None else REGISTRY
        self.pools = Gauge("workerclass_worker_pools", "Classified pools by state", ["state"], registry=registry)
        self.writes = Counter(
            "workerclass_worker_writes", "Write requests the worker controller sent", ["verb"], registry=registry
        )
        self.apply_errors = Counter(
            "workerclass_worker_apply_errors", "Failed applies and deletes, by kind", ["kind"], registry=registry
        )
        self.reconcile_seconds = Histogram(
            "workerclass_worker_reconcile_seconds",
            "Seconds one reconcile of every classified pool took",
            registry=registry,
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120),
        )


def involved_object(pool: DesiredPool) -> dict[str, str]:
    """What a pool's Events are about: its HelmRelease (by uid, what ``kubectl describe`` finds them
    by); while it has none (``waiting-for-release``), a KubernetesNodes pool's own object."""
    if pool.state == "waiting-for-release" and pool.pool_uid and pool.kind == KUBERNETES_NODES.kind:
        name = pool.identity.partition("/")[2]
        return {
            "apiVersion": KUBERNETES_NODES.api_version,
            "kind": KUBERNETES_NODES.kind,
            "name": name,
            "namespace": pool.namespace,
            "uid": pool.pool_uid,
        }
    involved = {
        "apiVersion": HELM_RELEASE.api_version,
        "kind": HELM_RELEASE.kind,
        "name": pool.owner,
        "namespace": pool.namespace,
    }
    if pool.owner_uid:
        involved["uid"] = pool.owner_uid
    return involved


async def post_event(
    client: Any, pool: DesiredPool, reason: str, message: str, *, warning: bool, component: str
) -> bool:
    """Post one Event about ``pool`` (:func:`involved_object`); ``False`` if the API refused it (best effort)."""
    involved = involved_object(pool)
    return await post_object_event(
        client, involved, reason, message, warning=warning, component=component, what=pool.identity
    )


async def post_object_event(
    client: Any,
    involved: dict[str, str],
    reason: str,
    message: str,
    *,
    warning: bool,
    component: str,
    what: str,
) -> bool:
    """Post one Event about ``involved`` (apiVersion, kind, name, uid where known, and namespace
    unless cluster-scoped: its Event then goes to ``default``, as kubectl shows them); ``False`` if
    the API refused it. ``kubectl describe`` lists the Events whose ``involvedObject.uid`` is the
    object's, so an Event without it is shown by nothing but a list of Events."""
    from lightkube.models.core_v1 import EventSource, ObjectReference
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import Event

    now = datetime.datetime.now(datetime.UTC)
    namespace = involved.get("namespace") or "default"
    event = Event(
        metadata=ObjectMeta(generateName=f"{involved['name']}.", namespace=namespace),
        involvedObject=ObjectReference(**involved),
        reason=reason,
        message=message[:1000],
        type="Warning" if warning else "Normal",
        source=EventSource(component=component),
        firstTimestamp=now,
        lastTimestamp=now,
        count=1,
    )
    try:
        await client.create(event)
    except Exception as error:
        logger.warning("posting an Event on %s failed (%s)", what, short_error(error))
        return False
    return True
