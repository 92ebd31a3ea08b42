"""The parent Kubernetes app, as far as pools need it: its control-plane minor, infrastructure and
node-group names; and the one rule of its node groups (:data:`NODE_GROUP_REFUSED`).

The parent ``kubernetes`` chart renders each node group as Talos workers of its own and reads
none of the keys the class era adds: a group that names a class or Kairos settings would become
Talos machines all the same, which the design forbids, so such a key is refused there with how to
move the group to a standalone KubernetesNodes pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.frozen import fast_init
from ..api.names import INFRASTRUCTURES, Infrastructure, is_infrastructure
from ..api.patterns import KUBERNETES_MINOR, KUBERNETES_PATCH
from ..api.schema import CLASS_ERA_KEYS
from ..violations import Violation
from .reader import Reader, key_path
from .versions import minor_of

__all__ = ["INFRASTRUCTURES", "NODE_GROUP_REFUSED", "Cluster", "node_group_refusals", "parse_cluster"]

#: the keys a parent's node group may not set: the class era's (section 1's ``*`` keys) and the
#: ones the design refuses on any pool (a bootstrap override, a fixed image, a tenant pull Secret);
#: the parent chart reads none of them, so each would be silently dropped from a Talos worker
NODE_GROUP_REFUSED: tuple[str, ...] = (*CLASS_ERA_KEYS, "bootstrap", "image", "imagePullSecrets")


def node_group_refusals(cluster: str, groups: object, field: str) -> list[Violation]:
    """``NotAllowedInNodeGroup`` for each key of :data:`NODE_GROUP_REFUSED` a node group of the parent
    ``cluster`` sets (``groups``: its ``nodeGroups`` as written, at ``field``)."""
    if not isinstance(groups, dict):
        return []
    out: list[Violation] = []
    for group, body in groups.items():
        if not isinstance(body, dict):
            continue
        for key in NODE_GROUP_REFUSED:
            if key in body:
                out.append(
                    Violation(
                        "NotAllowedInNodeGroup",
                        key_path(key_path(field, str(group)), key),
                        f"the parent kubernetes chart renders its node groups as classless Talos workers and does "
                        f"not read {key}: move the group to a standalone KubernetesNodes pool (metadata.name "
                        f"{cluster}-<pool>, spec.cluster {cluster}, the group's settings with {key}) and remove "
                        "it from nodeGroups once its workloads moved",
                    )
                )
    return out


@fast_init
@dataclass(frozen=True, slots=True)
class Cluster:
    """The parent Kubernetes app: only its control-plane minor and infrastructure matter."""

    namespace: str
    name: str
    version: str | None = None
    infrastructure: Infrastructure = "kubevirt"
    #: the parent chart's node groups (Helm coalesces ``spec.nodeGroups`` over its default ``md0``)
    node_groups: frozenset[str] = frozenset({"md0"})


def parse_cluster(namespace: str, name: str, spec: object, field: str = "spec") -> tuple[Cluster, list[Violation]]:
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    version = reader.string(data, "version", field)
    if version and not KUBERNETES_MINOR.fullmatch(version):
        # The parent app may carry a patch; only its minor matters here.
        if KUBERNETES_PATCH.fullmatch(version):
            version = minor_of(version)
        else:
            reader.invalid(f"{field}.version", "is not a Kubernetes minor (vX.Y); the value is not shown")
            version = None
    text = reader.string(data, "infrastructure", field) or "kubevirt"
    infrastructure: Infrastructure = "kubevirt"
    if is_infrastructure(text):
        infrastructure = text
    else:
        reader.invalid(f"{field}.infrastructure", "is not kubevirt or proxmox")
    # Helm coalesces the app's nodeGroups over the chart's default ``md0``: a map merges (md0
    # stays), a group set to null is deleted.
    groups = {"md0"}
    raw_groups = data.get("nodeGroups")
    if isinstance(raw_groups, dict):
        for group, body in raw_groups.items():
            if body is None:
                groups.discard(str(group))
            else:
                groups.add(str(group))
    refused = node_group_refusals(name, raw_groups, f"{field}.nodeGroups")
    return Cluster(namespace, name, version or None, infrastructure, frozenset(groups)), reader.violations + refused
