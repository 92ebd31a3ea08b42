"""The entry points: one pool (:func:`resolve_pool`, :func:`resolve`) and every pool of a State
(:func:`resolve_all`).

What every pool meets before its family is known (private keys, its name, its parent cluster,
its class and the class's rules, the chart's render-time refusals, replicas and health, its
Kubernetes minor against the control plane), then the family's resolution (:mod:`.talos`,
:mod:`.kairos`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.paths import is_within
from ..api.resources import KUBERNETES_NODES
from ..chart.checks import is_foreign_pool
from ..rules.family import assumed_family
from ..rules.keys import private_key_paths
from ..rules.supplied import kairos_read_paths, strip_paths
from ..state import ClassRecord, PoolRecord, State, pool_from_object
from ..violations import Denied, Violation
from .chart import CLASS_RESOLVED_CODES, chart_checks_and_input
from .checks import (
    check_cluster_scoped_names,
    check_health,
    check_node_group_collision,
    check_pool_name,
    check_replicas,
)
from .classes import class_problems
from .effective import Effective
from .kairos import resolve_kairos
from .resolution import Resolution, class_origin, infrastructure_of, shown_cluster_name
from .talos import resolve_talos_pool
from .versions import check_control_plane, kubernetes_minor, root_version_cause

__all__ = ["resolve", "resolve_all", "resolve_pool", "resolve_verdict"]


def _parse_refused(field: str, seen: set[tuple[str, str]]) -> bool:
    """The value at ``field`` (or above it) is already refused as malformed or a private key."""
    return any(code in ("Invalid", "PrivateKeyMaterial") and is_within(field, where) for code, where in seen)


def _stored_kairos(state: State, record: PoolRecord) -> PoolRecord:
    """A stored Kairos KubernetesNodes with no backing HelmRelease, without the Talos-only values
    the API's read filled in (chart defaults: :func:`~workerclass.rules.supplied.kairos_read_paths`)."""
    if record.kind != "KubernetesNodes" or state.pools.get((record.kind, record.namespace, record.name)) is not record:
        return record  # a request's object (admission's to strip), not the pool as stored
    paths = kairos_read_paths(state, record.namespace, record.name, record.values, record.class_name)
    if not paths:
        return record
    obj = {
        "apiVersion": KUBERNETES_NODES.api_version,
        "kind": KUBERNETES_NODES.kind,
        "metadata": {"name": record.name, "namespace": record.namespace},
        "spec": strip_paths(record.values, paths),
    }
    return pool_from_object(obj) or record


def resolve_pool(state: State, record: PoolRecord) -> tuple[Effective | None, list[Violation], list[str]]:
    """Resolve one pool. Never raises: returns ``(effective or None, denials, warnings)``.

    A pool as stored (a record of ``state``) is read as the API stores it: a Kairos pool's
    Talos-only chart defaults with no backing HelmRelease are API-filled (:func:`_stored_kairos`).
    """
    effective, denials, warnings = _resolve_pool(state, _stored_kairos(state, record))
    return effective, root_version_cause(denials, record.field), warnings


def resolve_verdict(state: State, record: PoolRecord, *, clean: bool = False) -> tuple[list[Violation], list[str]]:
    """:func:`resolve_pool`'s denials and warnings, without building the effective settings
    (admission reads the verdict only). ``clean``: the request's text showed no string that can
    hold private key material (:func:`~workerclass.rules.keys.text_cannot_hold_private`)."""
    _, denials, warnings = _resolve_pool(state, _stored_kairos(state, record), verdict=True, clean=clean)
    return root_version_cause(denials, record.field), warnings


def _resolve_pool(
    state: State, record: PoolRecord, *, verdict: bool = False, clean: bool = False
) -> tuple[Effective | None, list[Violation], list[str]]:
    field = record.field
    spec = record.spec
    result = Resolution(list(record.violations), list(spec.warnings), {}, verdict)
    for path in private_key_paths(record.values, field, clean=clean):
        result.deny(
            "PrivateKeyMaterial",
            path,
            "private key material must never be put in pool values; remove it and rotate the key",
        )

    check_pool_name(state, record, result)
    check_node_group_collision(state, record, result)
    check_cluster_scoped_names(state, record, result)

    if record.kind == "ComputePlane":
        cluster = state.compute_planes.get((record.namespace, record.cluster))
    else:
        cluster = state.cluster(record.namespace, record.cluster) if record.cluster else None
    if cluster is None and record.cluster:
        plane = (record.namespace, record.cluster) in state.compute_planes
        result.deny(
            "ClusterNotFound",
            f"{field}.cluster",
            f"Kubernetes app {shown_cluster_name(record.cluster)} does not exist in namespace {record.namespace}"
            + (" (a ComputePlane of that name is no pool's parent cluster)" if plane else "")
            + ": create the parent cluster first",
        )
    infrastructure = infrastructure_of(cluster)

    class_name = spec.worker_class_name or None if record.kind != "ComputePlane" else None
    class_record: ClassRecord | None = None
    class_usable = True
    if class_name is not None:
        class_record = state.worker_class(class_name)
        if class_record is None:
            known = ", ".join(sorted(state.classes)) or "none"
            result.deny(
                "ClassNotFound",
                f"{field}.workerClassName",
                f"WorkerClass {class_name!r} does not exist (available: {known})",
            )
            class_usable = False
        else:
            for problem in class_problems(state, class_record):
                result.deny(
                    problem.code,
                    f"{field}.workerClassName",
                    f"WorkerClass {class_name} breaks the class rules ({problem.field}: {problem.message}); "
                    "the hoster must publish a corrected class",
                )
                class_usable = False
    if class_name is not None:
        # Format rules the chart lacks refuse only what the class era brings (API.md section 3).
        result.denials.extend(spec.class_violations)
        if spec.images and spec.images.get("kubectl"):
            result.deny(
                "PlatformImageOverride",
                f"{field}.images.kubectl",
                "a pool with a class runs the platform's talos-reconcile image: the Job runs as an account "
                "of the management cluster, so its image is the hoster's; remove images.kubectl",
            )
    # What the chart refuses at render time (names aside: admission checks them on CREATE only;
    # the tenant namespace rule and a MachineDeployment another release owns are render failures
    # of every read, so they stay).
    seen = {(v.code, v.field) for v in result.denials}
    failures, checked = chart_checks_and_input(state, record, keep_input=not verdict)
    if not verdict:
        result.chart_input = checked  # the render reads it (no failure at all: it renders as checked)
    for failure in failures:
        name_rule = failure.field != "metadata.namespace" and not is_foreign_pool(failure)
        if (failure.code == "InvalidPoolName" and name_rule) or (
            class_name is not None and failure.code in CLASS_RESOLVED_CODES
        ):
            continue
        if (failure.code, failure.field) not in seen and not _parse_refused(failure.field, seen):
            result.denials.append(failure)
            seen.add((failure.code, failure.field))
    bootstrap = assumed_family(state, class_name)
    result.origins["bootstrap"] = class_origin(class_record) if class_record else "legacy classless pool (Talos)"
    result.origins["class"] = f"{record.field}.workerClassName" if class_name else "classless: legacy Talos rendering"

    # The rules that do not depend on the class still run when the class is missing or broken:
    # every denial of the request is reported together.
    check_replicas(spec, field, result)
    check_health(spec, result)
    minor, minor_origin = kubernetes_minor(state, record, cluster)
    result.origins["kubernetesMinor"] = minor_origin
    if minor is None:
        if cluster is not None:
            result.deny("Invalid", f"{field}.version", "set the Kubernetes minor (vX.Y) of the pool")
        return None, result.denials, result.warnings
    if minor_origin == "chart values.yaml":
        # A classless pool that never chose a minor follows the chart's default: the chart renders
        # it, and refusing its UPDATEs would be an outage of our making. Said, not refused.
        probe = Resolution([], [], {})
        check_control_plane(minor, cluster, f"{field}.version", probe)
        result.warnings.extend(
            f"{v.message} (the pool sets no version and follows the chart's default {minor}: set spec.version)"
            for v in probe.denials
        )
    else:
        check_control_plane(minor, cluster, f"{field}.version", result)
    if not class_usable:
        return None, result.denials, result.warnings

    args = (state, record, class_record, cluster, minor, result)
    effective = resolve_kairos(*args) if bootstrap == "kairos" else resolve_talos_pool(*args, infrastructure)
    if result.denials or effective is None:
        return None, result.denials, result.warnings
    return effective, result.denials, result.warnings


def resolve(state: State, pool: PoolRecord | Mapping[str, Any]) -> Effective:
    """Effective settings of one pool (a stored record or a pool object); raises :class:`Denied`."""
    record = pool if isinstance(pool, PoolRecord) else pool_from_object(pool)
    if record is None:
        raise Denied([Violation("Invalid", "kind", "not a KubernetesNodes pool or a KubernetesNodes HelmRelease")])
    effective, denials, _ = resolve_pool(state, record)
    if effective is None:
        raise Denied(denials or [Violation("Invalid", record.field, "cannot be resolved")])
    return effective


def resolve_all(state: State) -> list[tuple[PoolRecord, Effective | None, list[Violation], list[str]]]:
    """Every pool of the state, in stable order, resolved."""
    out = []
    for record in state.sorted_pools():
        effective, denials, warnings = resolve_pool(state, record)
        out.append((record, effective, denials, warnings))
    return out
