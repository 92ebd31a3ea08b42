"""The parent Kubernetes app, as far as pools need it: its control-plane minor, infrastructure and
node-group names.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.names import INFRASTRUCTURES, Infrastructure, is_infrastructure
from ..api.patterns import KUBERNETES_MINOR, KUBERNETES_PATCH
from ..violations import Violation
from .reader import Reader
from .versions import minor_of

__all__ = ["INFRASTRUCTURES", "Cluster", "parse_cluster"]


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
    return Cluster(namespace, name, version or None, infrastructure, frozenset(groups)), reader.violations
