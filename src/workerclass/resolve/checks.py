"""Checks of a pool's own settings that hold for every family: replicas, vGPU on Talos, the health
threshold, and the pool's name among the State's pools.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..api.patterns import DNS_LABEL
from ..api.resources import RELEASE_PREFIX
from ..model import PoolSpec
from ..rules.pools import shown_name
from ..state import PoolRecord, State
from .resolution import Resolution

__all__ = [
    "check_cluster_scoped_names",
    "check_health",
    "check_node_group_collision",
    "check_pool_name",
    "check_replicas",
    "check_talos_vgpu",
    "pool_names",
]


def check_replicas(spec: PoolSpec, field: str, result: Resolution) -> None:
    """``InvalidReplicas``: negative bounds, or min above max."""
    low, high = spec.min_replicas, spec.max_replicas
    if low is not None and low < 0:
        result.deny("InvalidReplicas", f"{field}.minReplicas", f"must not be negative (got {low})")
    if high is not None and high < 0:
        result.deny("InvalidReplicas", f"{field}.maxReplicas", f"must not be negative (got {high})")
    if low is not None and high is not None and low > high >= 0:
        result.deny("InvalidReplicas", f"{field}.minReplicas", f"minReplicas {low} is above maxReplicas {high}")


def check_talos_vgpu(spec: PoolSpec, field: str, result: Resolution) -> None:
    """``TalosVGPU``: the known bootstrap-family exception for vGPU."""
    for index, gpu in enumerate(spec.gpus):
        if gpu.vgpu:
            result.deny(
                "TalosVGPU",
                f"{field}.gpus[{index}].vgpu",
                "vGPU is not available on Talos workers: use a passthrough GPU, or a class whose image supports vGPU",
            )


def check_health(spec: PoolSpec, result: Resolution) -> None:
    value = spec.max_unhealthy
    if not isinstance(value, str) or not value.endswith("%") or not value[:-1].isdigit():
        return
    percent = int(value[:-1])
    size = max(spec.min_replicas or 0, 1)
    if percent < 100 and percent * size // 100 == 0:
        result.warnings.append(
            f"maxUnhealthy {value} of a {size}-worker pool rounds down to 0: one unhealthy worker already "
            "exceeds it, so MachineHealthCheck will not remediate; use an integer or a larger pool"
        )


def pool_names(state: State) -> Mapping[tuple[str, str], tuple[str, ...]]:
    """``(namespace, name)`` -> the kinds of the pools with that name: the State's own index."""
    return state.pool_names


def check_pool_name(state: State, record: PoolRecord, result: Resolution) -> None:
    """A node group's name names its MachineDeployment and is the value of its ``deployment-name`` label.

    Standalone pools' names are admission's, on CREATE only (``InvalidPoolName``): a stored pool
    is never refused for its name (its namespace, which the chart fails to render, is refused).
    """
    field = record.field
    if record.kind == "ComputePlane" and (len(record.name) > 63 or not DNS_LABEL.fullmatch(record.name)):
        result.deny(
            "Invalid",
            field,
            "the node group's pool name <computeplane>-<group> must be a DNS label of at most 63 characters: "
            "it becomes the MachineDeployment name and the value of its cluster.x-k8s.io/deployment-name label",
        )
    others = [kind for kind in state.pool_names.get((record.namespace, record.name), ()) if kind != record.kind]
    if others:
        result.warnings.append(
            f"{' and '.join(others)} {record.identity} has the same name as this {record.kind}: their Cluster API "
            "objects collide; if one is the other's backing release, keep only one in STATE"
        )


def check_node_group_collision(state: State, record: PoolRecord, result: Resolution) -> None:
    """``InvalidPoolName``: the pool's release names a node group its parent Kubernetes app still
    manages (the parent chart's default ``md0`` unless its ``nodeGroups`` drop it).

    Both would render the MachineDeployment ``kubernetes-<cluster>-<pool>``, its health check and
    WorkloadMonitor; the chart refuses the pool at every render once the parent's objects exist
    (``assertNoForeignPool``). Refused on every path and every operation (a HelmRelease no webhook
    sees included): applied, the pool would take the parent's node group over, and deleting the
    pool's release would delete it. An UPDATE that leaves the values as stored is ratcheted.
    """
    if record.kind not in ("KubernetesNodes", "HelmRelease") or not record.cluster:
        return
    prefix = f"{RELEASE_PREFIX}{record.cluster}-"
    pool = record.release.removeprefix(prefix) if record.release.startswith(prefix) else ""
    parent = state.cluster(record.namespace, record.cluster)
    if parent is None or not pool or pool not in parent.node_groups:
        return
    cluster, group = shown_name(record.cluster), shown_name(pool)
    result.deny(
        "InvalidPoolName",
        "metadata.name",
        f"the parent Kubernetes app {cluster} still manages nodeGroup {group}: its MachineDeployment "
        "kubernetes-<cluster>-<pool> belongs to the parent; rename the pool or remove that nodeGroup from the "
        "parent first",
    )


#: sorts after every RFC 3339 timestamp: an object without one (not stored yet) is the newest
_UNSTAMPED = "~"


def check_cluster_scoped_names(state: State, record: PoolRecord, result: Resolution) -> None:
    """``InvalidPoolName``: another pool's cluster-scoped objects already have this pool's names.

    The chart names the talos-reconcile Job's ClusterRole and ClusterRoleBinding
    ``<namespace>-<release>-talos-reconcile-coredns``; with tenant namespaces nested in one another
    (``tenant-a`` and ``tenant-a-kubernetes-nodes-b``), two pools of two tenants can render the same
    name, and the later would take the earlier's objects over (and its deletion delete them). The
    pool created first keeps the name (``metadata.creationTimestamp``, then namespace and release);
    every other is refused, on every path. The message names this pool's object, never the other
    pool or its namespace.
    """
    if record.kind not in ("KubernetesNodes", "HelmRelease") or not record.release:
        return
    name = f"{record.namespace}-{record.release}"
    owners = sorted(
        {(created or _UNSTAMPED, namespace, release) for created, namespace, release in state.pools_scoped_as(name)}
    )
    mine = (record.created or _UNSTAMPED, record.namespace, record.release)
    others = [owner for owner in owners if owner[1:] != mine[1:]]
    if not others or min(mine, others[0]) == mine:
        return
    shown = name if DNS_LABEL.fullmatch(name) else "(a name that is not shown)"
    result.deny(
        "InvalidPoolName",
        "metadata.name",
        f"the chart names this pool's ClusterRole and ClusterRoleBinding {shown}-talos-reconcile-coredns "
        "(<namespace>-<release>), and a pool of another namespace created before it already has that name: "
        "rename the pool",
    )
