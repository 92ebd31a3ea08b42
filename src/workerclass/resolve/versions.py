"""A pool's Kubernetes minor and patch: where the minor comes from, which patch renders, and the
rules between the minor, the platform's version map, the chart's and the parent control plane.
"""

from __future__ import annotations

from ..api.caching import short_cache
from ..model import CHART_VERSIONS, Cluster, version_tuple
from ..state import PoolRecord, State
from ..violations import Violation
from .chart import chart_talos_defaults, chart_version_map
from .resolution import Resolution

__all__ = [
    "MAX_MINOR_SKEW",
    "MINOR_DERIVED",
    "check_control_plane",
    "classless_patch",
    "kubernetes_minor",
    "minor_key",
    "platform_map_patch",
    "root_version_cause",
    "talos_patch",
    "warn_platform_patch",
]

MAX_MINOR_SKEW = 3


@short_cache(maxsize=1024)
def minor_key(minor: str) -> tuple[int, ...]:
    return version_tuple(minor)[:2]


def check_control_plane(minor: str, cluster: Cluster | None, field: str, result: Resolution) -> None:
    if cluster is None or not cluster.version:
        return
    pool_key, parent_key = minor_key(minor), minor_key(cluster.version)
    if pool_key[0] != parent_key[0]:
        return
    if pool_key > parent_key:
        result.deny(
            "ControlPlaneTooOld",
            field,
            f"pool {minor} is newer than the control plane {cluster.version} of cluster {cluster.name}: "
            "upgrade the parent control-plane minor first",
        )
    elif parent_key[1] - pool_key[1] > MAX_MINOR_SKEW:
        result.deny(
            "ControlPlaneTooOld",
            field,
            f"pool {minor} is more than {MAX_MINOR_SKEW} minors older than the control plane {cluster.version}: "
            "upgrade the pool",
        )


def kubernetes_minor(state: State, record: PoolRecord, cluster: Cluster | None) -> tuple[str | None, str]:
    """A pool's Kubernetes minor and where it came from: the pool's own; for a classless pool the
    chart's default (the chart renders it); for a pool with a class the parent's control-plane minor
    (the design page: the parent's minor goes first), else the chart's default (both charts default
    it, so an omitted minor is never a refusal); a node group the parent's, else the platform's newest."""
    if record.spec.version:
        return record.spec.version, "pool"
    default = chart_talos_defaults().get("_version", "") if record.kind != "ComputePlane" else ""
    if default and not record.spec.worker_class_name:
        # A classless pool renders as the chart does: its values.yaml ``version``.
        return default, "chart values.yaml"
    if cluster is not None and cluster.version:
        return cluster.version, f"control plane of {cluster.name}"
    if default:
        return default, "chart values.yaml"
    if record.kind == "ComputePlane" and state.platform.kubernetes_versions:
        newest = max(state.platform.kubernetes_versions, key=minor_key)
        return newest, "platform (newest supported minor)"
    return None, ""


#: Denials a pool minor yields only when it is usable: with ``UnsupportedVersion`` they are noise.
MINOR_DERIVED = frozenset({"ControlPlaneTooOld", "TalosKubernetesIncompatible"})


def root_version_cause(denials: list[Violation], field: str) -> list[Violation]:
    """API.md section 3: a pool minor not in the map is ``UnsupportedVersion``, reported alone for the
    version (the control-plane skew and the Talos support matrix of an unusable minor are dropped)
    and first, so CREATE and UPDATE list it in the same place and ``status.reason`` names it."""
    unsupported = [v for v in denials if v.code == "UnsupportedVersion" and v.field == f"{field}.version"]
    if not unsupported:
        return denials
    rest = [v for v in denials if v.code != "UnsupportedVersion" or v.field != f"{field}.version"]
    return unsupported[:1] + [v for v in rest if v.code not in MINOR_DERIVED]


def classless_patch(minor: str, field: str, result: Resolution) -> str | None:
    """A classless pool's patch: the chart's own ``files/versions.yaml`` (it renders the pool)."""
    patch = chart_version_map().get(minor)
    if patch is None and ("UnsupportedVersion", f"{field}.version") not in {(v.code, v.field) for v in result.denials}:
        result.deny(
            "UnsupportedVersion",
            f"{field}.version",
            f"Kubernetes {minor} is not a minor the kubernetes-nodes chart renders ({', '.join(CHART_VERSIONS)})",
        )
    elif patch is not None:
        result.origins["kubernetesVersion"] = f"chart version map ({minor})"
    return patch


def platform_map_patch(
    state: State, minor: str, field: str, result: Resolution, *, standalone: bool = True
) -> str | None:
    """The platform map's patch; a standalone pool's minor must also be in the chart's enum."""
    if standalone and minor not in CHART_VERSIONS:
        result.deny(
            "UnsupportedVersion",
            f"{field}.version",
            f"Kubernetes {minor} is not a minor the kubernetes-nodes chart renders ({', '.join(CHART_VERSIONS)})",
        )
        return None
    patch = state.platform.kubernetes_versions.get(minor)
    if patch is None:
        supported = ", ".join(sorted(state.platform.kubernetes_versions, key=minor_key)) or "none"
        result.deny(
            "UnsupportedVersion",
            f"{field}.version",
            f"Kubernetes {minor} is not in the platform version map (supported: {supported})",
        )
    else:
        result.origins["kubernetesVersion"] = f"platform version map ({minor})"
    return patch


def warn_platform_patch(state: State, minor: str, chart_patch: str, result: Resolution) -> None:
    """A Talos pool renders the chart's patch: say so when the platform map gives its minor another."""
    platform_patch = state.platform.kubernetes_versions.get(minor)
    if platform_patch is not None and platform_patch != chart_patch:
        result.warnings.append(
            f"the kubernetes-nodes chart renders {chart_patch}; the platform map's {platform_patch} "
            "applies to platform Kairos images"
        )


def talos_patch(state: State, minor: str, platform_patch: str | None, result: Resolution) -> str | None:
    """A classified Talos pool's (or a node group's) patch: the chart's, as its render uses.

    The chart renders its own ``files/versions.yaml`` (the embedded platform's map equals it);
    the platform map still decides which minors a classified pool may select (:func:`platform_map_patch`
    refuses the others) and its patches apply to platform Kairos images. A minor the chart has no
    patch for keeps the platform's (the chart refuses to render it).
    """
    if platform_patch is None:
        return None
    chart_patch = chart_version_map().get(minor)
    if chart_patch is None:
        return platform_patch
    result.origins["kubernetesVersion"] = f"chart version map ({minor})"
    warn_platform_patch(state, minor, chart_patch, result)
    return chart_patch
