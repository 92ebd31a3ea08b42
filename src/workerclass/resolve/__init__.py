"""Resolution: class baseline, then pool overrides, then image selection and compatibility.

Pure. Implements API.md section 2 and the design page's "Talos overrides and image selection"
table, one rule per path. Its edge: it reads a :class:`~workerclass.state.State` and one pool;
it returns :class:`Effective` settings with the origin of every value, or violations.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from ..chart import ChartFailure
from ..chart.checks import chart_failures
from ..chart.values import chart_defaults, chart_input, version_map
from ..model import (
    CHART_VERSIONS,
    DEFAULT_MIN_REPLICAS,
    Cluster,
    Golden,
    ImageSource,
    KernelModule,
    OsImage,
    OsSettings,
    Platform,
    PoolSpec,
    TalosSettings,
    WorkerClassSpec,
    minor_of,
    version_tuple,
)
from ..model.reader import DNS_LABEL, TALOS_VERSION
from ..state import ClassRecord, PoolRecord, State, pool_from_object, release_of
from ..violations import Denied, Violation
from .effective import Effective, EffectiveImage, EffectiveTalos
from .keys import private_key_paths, public_key_problem

__all__ = [
    "NVIDIA_MODULES",
    "Effective",
    "EffectiveImage",
    "EffectiveTalos",
    "Resolution",
    "check_replicas",
    "check_talos_vgpu",
    "golden_reference",
    "resolve",
    "resolve_all",
    "resolve_pool",
    "resolve_talos",
]

NVIDIA_MODULES = (
    KernelModule("nvidia", ("NVreg_NvLinkDisable=1",)),
    KernelModule("nvidia_uvm"),
    KernelModule("nvidia_drm"),
    KernelModule("nvidia_modeset"),
)
GOLDEN_NAMESPACE = "cozy-public"
MAX_MINOR_SKEW = 3


def shown_name(name: str) -> str:
    """A name quoted when it is a DNS label; anything else may hold anything and is not shown."""
    return repr(name) if DNS_LABEL.fullmatch(name) and len(name) <= 63 else "(name not shown)"


def golden_reference(schematic_id: str, version: str) -> str:
    """The golden DataVolume a builtin source clones: ``cozy-public/talos-worker-<schematic>-<version>``."""
    return f"{GOLDEN_NAMESPACE}/talos-worker-{schematic_id}-{version}"


def factory_reference(endpoint: str, schematic_id: str, version: str) -> str:
    """The Image Factory disk CDI imports over HTTP (OpenStack image: bootstrap via config drive)."""
    return f"{endpoint.rstrip('/')}/image/{schematic_id}/{version}/openstack-amd64.raw.xz"


@dataclass(slots=True)
class Resolution:
    """Working space of one resolution: denials and warnings collected together."""

    denials: list[Violation]
    warnings: list[str]
    origins: dict[str, str]

    def deny(self, code: str, field: str, message: str) -> None:
        self.denials.append(Violation(code, field, message))


# --------------------------------------------------------------------------- Talos settings


def _class_origin(record: ClassRecord | None) -> str:
    return f"class {record.name}" if record is not None else "class"


def mirror_map(parsed: Mapping[str, tuple[str, ...]], values: Any) -> dict[str, Mapping[str, Any]]:
    """The registry mirrors the model read (``parsed``), each with its map as written in ``values``.

    ``values`` holds ``talos.registryMirrors`` (a pool's values, a class's spec). A registry whose
    written map cannot be found keeps the parsed endpoints (``{"endpoints": [...]}``).
    """
    talos = values.get("talos") if isinstance(values, Mapping) else None
    written = talos.get("registryMirrors") if isinstance(talos, Mapping) else None
    raw = {str(key): body for key, body in written.items()} if isinstance(written, Mapping) else {}
    out: dict[str, Mapping[str, Any]] = {}
    for registry, endpoints in parsed.items():
        body = raw.get(registry)
        # Not copied: values are read-only here, and a mirror map may nest arbitrarily deep
        # (such a pool is refused for it; resolving it must not recurse).
        out[registry] = body if isinstance(body, Mapping) else {"endpoints": list(endpoints)}
    return out


def resolve_talos(
    platform: Platform,
    pool: TalosSettings | None,
    baseline: TalosSettings | None,
    *,
    baseline_origin: str,
    origins: dict[str, str],
    chart: Mapping[str, str] | None = None,
    pool_values: Any = None,
    baseline_values: Any = None,
) -> EffectiveTalos:
    """Scalars: a supplied pool value (even ``""``) replaces the baseline; ``""`` means platform.

    ``registryMirrors``: a supplied map replaces the baseline whole, ``{}`` clears it. The map is
    carried as written (Talos ``machine.registries.mirrors``: ``skipFallback``, ``overridePath``
    and every other mirror key) from ``pool_values`` / ``baseline_values``, the pool's values
    and the class's spec holding ``talos.registryMirrors``; without them, the endpoints parsed.
    """
    platform_values = {
        "version": platform.talos_version,
        "schematicID": platform.talos_schematic_id,
        "imageFactoryURL": platform.talos_image_factory_url,
        "imageFactoryCA": "",
        "installerRepository": platform.talos_installer_repository,
    }
    if chart is not None:
        # A classless pool: the chart's values as coalesced (the pool's talos.* over values.yaml).
        platform_values.update({key: value for key, value in chart.items() if key in platform_values})
    values: dict[str, str] = {}
    for name, attribute in (
        ("version", "version"),
        ("schematicID", "schematic_id"),
        ("imageFactoryURL", "image_factory_url"),
        ("imageFactoryCA", "image_factory_ca"),
        ("installerRepository", "installer_repository"),
    ):
        supplied_by_pool = getattr(pool, attribute) if pool is not None else None
        supplied_by_class = getattr(baseline, attribute) if baseline is not None else None
        if supplied_by_pool is not None:
            value, origin = supplied_by_pool, "pool"
        elif supplied_by_class is not None:
            value, origin = supplied_by_class, baseline_origin
        else:
            value, origin = "", ""
        if value == "":
            fallback = platform_values[name]
            if fallback:
                where = "chart values.yaml" if chart is not None else "platform"
                origin = f"{where} ({origin} set it empty)" if origin else where
            else:
                origin = f"{origin} (empty)" if origin else "unset"
            value = fallback
        values[name] = value
        origins[f"talos.{name}"] = origin
    mirrors: dict[str, Mapping[str, Any]]
    if pool is not None and pool.registry_mirrors is not None:
        mirrors, origin = mirror_map(pool.registry_mirrors, pool_values), "pool"
    elif baseline is not None and baseline.registry_mirrors is not None:
        mirrors, origin = mirror_map(baseline.registry_mirrors, baseline_values), baseline_origin
    else:
        mirrors, origin = {}, "unset"
    origins["talos.registryMirrors"] = origin
    return EffectiveTalos(
        version=values["version"],
        schematic_id=values["schematicID"],
        image_factory_url=values["imageFactoryURL"],
        image_factory_ca=values["imageFactoryCA"],
        installer_repository=values["installerRepository"],
        registry_mirrors=mirrors,
    )


def resolve_kubevirt_image(
    platform: Platform,
    talos: EffectiveTalos,
    selection: OsImage,
    *,
    field: str,
    owner: str = "pool",
    result: Resolution,
) -> EffectiveImage | None:
    """Builtin golden or Image Factory disk; then the disk/installer compatibility check.

    ``owner`` says who selected the source (``pool``, ``class NAME``) for the messages.
    """
    chosen = f" (selected by {owner})" if owner.startswith("class") else ""
    if selection.builtin is not None and selection.factory is not None:
        result.deny(
            "OsImageSourceConflict",
            field,
            f"set builtin or factory, not both{chosen}: osImage selects exactly one disk source "
            "({} = default factory path)",
        )
        return None
    if selection.builtin is not None:
        source, kind, path = selection.builtin, "builtin", f"{field}.builtin"
    else:
        source, kind, path = selection.factory or ImageSource(), "factory", f"{field}.factory"
    version = source.version or talos.version
    schematic = source.schematic_id or talos.schematic_id
    result.origins["image.version"] = "osImage source" if source.version else "effective talos.version"
    result.origins["image.schematicID"] = "osImage source" if source.schematic_id else "effective talos.schematicID"
    if not version or not schematic:
        return None  # reported as missing Talos settings by the caller
    if kind == "builtin":
        if Golden(version, schematic) not in platform.goldens:
            result.deny(
                "GoldenNotFound",
                path,
                f"no builtin golden disk for Talos {version} with schematic {schematic}{chosen}: "
                "choose a version/schematic the platform publishes, or the factory source",
            )
        reference = golden_reference(schematic, version)
        result.origins["image.reference"] = "golden DataVolume for the disk version and schematic"
    else:
        endpoint = source.endpoint or talos.image_factory_url
        result.origins["image.endpoint"] = "osImage source" if source.endpoint else "effective talos.imageFactoryURL"
        if not endpoint:
            result.deny("Invalid", f"{path}.endpoint", "no Image Factory endpoint: set talos.imageFactoryURL")
            return None
        reference = factory_reference(endpoint, schematic, version)
        result.origins["image.reference"] = "Image Factory URL from endpoint, schematic and version"
    # A class's source that conflicts with a pool's own Talos value: the pool's field is the one to change.
    pool_prefix = field.removesuffix(".kubevirt.osImage") if owner.startswith("class") else None

    def conflict_field(name: str) -> str:
        if pool_prefix is not None and result.origins.get(f"talos.{name}") == "pool":
            return f"{pool_prefix}.talos.{name}"
        return f"{path}.{name}"

    if version != talos.version:
        result.deny(
            "ArtifactConflict",
            conflict_field("version"),
            f"the {kind} disk{chosen} is Talos {version} but the installer is Talos {talos.version}: "
            "disk and installer must agree; leave the source version empty to follow talos.version",
        )
    if schematic != talos.schematic_id:
        result.deny(
            "ArtifactConflict",
            conflict_field("schematicID"),
            f"the {kind} disk{chosen} uses schematic {schematic} but the installer uses {talos.schematic_id}: "
            "disk and installer must agree; leave the source schematicID empty to follow talos.schematicID",
        )
    return EffectiveImage(kind, reference, version, schematic)


def _kernel_modules(
    spec: PoolSpec, baseline: OsSettings | None, origin: str, result: Resolution, *, classified: bool = True
) -> tuple[KernelModule, ...]:
    """A supplied list replaces; the NVIDIA rule runs only for classified pools (API.md section 2:
    a classless pool keeps the legacy render, which loads none)."""
    if spec.os.kernel_modules is not None:
        result.origins["kernelModules"] = "pool"
        return spec.os.kernel_modules
    if baseline is not None and baseline.kernel_modules is not None:
        result.origins["kernelModules"] = origin
        return baseline.kernel_modules
    if classified and any(gpu.name.startswith("nvidia.com/") for gpu in spec.gpus):
        result.origins["kernelModules"] = "NVIDIA rule (an nvidia.com GPU, no list supplied)"
        return NVIDIA_MODULES
    result.origins["kernelModules"] = "unset"
    return ()


# --------------------------------------------------------------------------- pools


@lru_cache(maxsize=1)
def chart_talos_defaults() -> Mapping[str, str]:
    """The chart's ``talos`` defaults (values.yaml): a classless pool's Talos fallbacks."""
    defaults = chart_defaults()
    talos = defaults.get("talos")
    out = {k: v for k, v in talos.items() if isinstance(v, str)} if isinstance(talos, dict) else {}
    version = defaults.get("version")
    if isinstance(version, str):
        out["_version"] = version  # the chart's Kubernetes minor, kept beside (never a Talos key)
    return out


#: Chart failures a classified pool meets through its own resolved rules instead: its Kubernetes
#: minor is checked against the platform map and the chart's enum, its effective (not raw)
#: Talos version against the platform's support matrix.
CLASS_RESOLVED_CODES = frozenset({"UnsupportedVersion", "TalosKubernetesIncompatible"})


def chart_checks(state: State, record: PoolRecord) -> tuple[Violation, ...]:
    """Every render-time refusal of the kubernetes-nodes chart for a standalone pool's values.

    ``workerclass.chart.checks.chart_failures`` over the values as the chart sees them (the
    pool's values coalesced over values.yaml, ``_cluster`` from the platform, the cluster's
    instance types), field paths moved under the pool's values (``spec.values...`` for a
    HelmRelease). ``InvalidPoolName`` ones are included: admission takes them on CREATE only.
    Computed once per state and values.
    """
    if record.kind == "ComputePlane":
        return ()
    key = ("chart-checks", record.kind, record.namespace, record.name)
    cached = state.memo.get(key)
    if cached is not None and cached[0] is record.values:
        return cast(tuple[Violation, ...], cached[1])
    release = record.release or release_of(record.kind, record.name)
    bounded = _bounded(record.values)
    content = _content_key(bounded, release, record.namespace, state.platform.cluster_values)
    shared = _SHARED_CHECKS.get(content) if content is not None else None
    if shared is not None and shared[0] is state.instancetypes:
        failures = shared[1]
        with contextlib.suppress(KeyError):  # another thread may have evicted it meanwhile
            _SHARED_CHECKS.move_to_end(content)  # type: ignore[arg-type]
    else:
        inp = chart_input(
            bounded,
            namespace=record.namespace,
            release=release,
            cluster_values={"_cluster": dict(state.platform.cluster_values)},
            instancetypes=state.instancetypes,
        )
        failures = tuple(chart_failures(inp))
        if content is not None:
            _SHARED_CHECKS[content] = (state.instancetypes, failures)
            if len(_SHARED_CHECKS) > SHARED_CHECKS_SIZE:
                with contextlib.suppress(KeyError):
                    _SHARED_CHECKS.popitem(last=False)
    out: list[Violation] = []
    for failure in failures:
        where = failure.field
        if where == "spec" or where.startswith("spec."):
            where = record.field + where[len("spec") :]
        out.append(Violation(failure.code, where, failure.message))
    violations = tuple(out)
    state.memo[key] = (record.values, violations)
    return violations


#: The chart's checks are a pure function of the values, release, namespace, ``_cluster`` and
#: the instance types: identical pools across States (a plan's two states, a resync, a retried
#: review) share one computation. Bounded, least recently used first out.
SHARED_CHECKS_SIZE = 4096
_SHARED_CHECKS: OrderedDict[str, tuple[Mapping[str, Any], tuple[ChartFailure, ...]]] = OrderedDict()


def _content_key(
    values: Mapping[str, Any], release: str, namespace: str, cluster_values: Mapping[str, Any]
) -> str | None:
    """A canonical text of the checks' inputs (the instance types are compared by identity)."""
    try:
        return json.dumps([values, release, namespace, cluster_values], sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return None


#: Deeper than this, a value is cut for the chart's checks (they read a few known levels; the
#: chart's value helpers copy recursively). Such values are refused for their key anyway.
MAX_CHART_DEPTH = 64


def _bounded(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """``values`` itself, or a copy whose containers below :data:`MAX_CHART_DEPTH` are emptied."""
    stack: list[tuple[Any, int]] = [(values, 0)]
    deep = False
    while stack and not deep:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 >= MAX_CHART_DEPTH:
                    deep = True
                    break
                stack.append((child, depth + 1))
    if not deep:
        return values

    def cut(item: Any, depth: int) -> Any:
        if isinstance(item, dict):
            return {} if depth >= MAX_CHART_DEPTH else {k: cut(v, depth + 1) for k, v in item.items()}
        if isinstance(item, list):
            return [] if depth >= MAX_CHART_DEPTH else [cut(v, depth + 1) for v in item]
        return item

    return cast(Mapping[str, Any], cut(values, 0))


def _parse_refused(field: str, seen: set[tuple[str, str]]) -> bool:
    """The value at ``field`` (or above it) is already refused as malformed or a private key."""
    return any(
        code in ("Invalid", "PrivateKeyMaterial") and (field == where or field.startswith(where + "."))
        for code, where in seen
    )


def chart_context(state: State, record: PoolRecord) -> dict[str, Any]:
    """What the chart needs beside the effective settings: the values verbatim, the release,
    ``_cluster`` and the instance types the cluster has (all of them: the chart looks one up)."""
    return {
        "values": record.values,
        "release": record.release or release_of(record.kind, record.name),
        "cluster_values": {"_cluster": dict(state.platform.cluster_values)},
        "instancetypes": state.instancetypes,
    }


def class_problems(state: State, record: ClassRecord) -> tuple[Violation, ...]:
    """Every class rule the record breaks, computed once per state and class."""
    key = ("class-problems", record.name)
    cached = state.memo.get(key)
    if cached is None:
        from .classes import class_rule_violations

        rules = class_rule_violations(
            state.platform, record.spec, record.obj.get("spec"), name=record.name, baseline=False
        )
        cached = (*record.violations, *rules)
        state.memo[key] = cached
    return cast(tuple[Violation, ...], cached)


def _family(record: ClassRecord | None) -> str:
    return (record.spec.bootstrap if record is not None else "") or "talos"


@lru_cache(maxsize=1024)
def _minor_key(minor: str) -> tuple[int, ...]:
    return version_tuple(minor)[:2]


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


def _check_health(spec: PoolSpec, result: Resolution) -> None:
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


def _check_control_plane(minor: str, cluster: Cluster | None, field: str, result: Resolution) -> None:
    if cluster is None or not cluster.version:
        return
    pool_key, parent_key = _minor_key(minor), _minor_key(cluster.version)
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


def _kubernetes_minor(state: State, record: PoolRecord, cluster: Cluster | None) -> tuple[str | None, str]:
    if record.spec.version:
        return record.spec.version, "pool"
    if record.kind != "ComputePlane" and not record.spec.worker_class_name:
        # A classless pool renders as the chart does: its values.yaml ``version``.
        default = chart_talos_defaults().get("_version", "")
        if default:
            return default, "chart values.yaml"
    if cluster is not None and cluster.version:
        return cluster.version, f"control plane of {cluster.name}"
    if record.kind == "ComputePlane" and state.platform.kubernetes_versions:
        newest = max(state.platform.kubernetes_versions, key=_minor_key)
        return newest, "platform (newest supported minor)"
    return None, ""


def _pool_names(state: State) -> dict[tuple[str, str], list[str]]:
    """``(namespace, name)`` -> the kinds of the pools with that name, once per state."""
    cached = state.memo.get("pool-names")
    if cached is None:
        names: dict[tuple[str, str], list[str]] = {}
        for kind, namespace, name in state.pools:
            names.setdefault((namespace, name), []).append(kind)
        state.memo["pool-names"] = cached = names
    return cast(dict[tuple[str, str], list[str]], cached)


def _check_pool_name(state: State, record: PoolRecord, result: Resolution) -> None:
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
    others = [kind for kind in _pool_names(state).get((record.namespace, record.name), []) if kind != record.kind]
    if others:
        result.warnings.append(
            f"{' and '.join(others)} {record.identity} has the same name as this {record.kind}: their Cluster API "
            "objects collide; if one is the other's backing release, keep only one in STATE"
        )


#: Denials a pool minor yields only when it is usable: with ``UnsupportedVersion`` they are noise.
_MINOR_DERIVED = frozenset({"ControlPlaneTooOld", "TalosKubernetesIncompatible"})


def _root_version_cause(denials: list[Violation], field: str) -> list[Violation]:
    """API.md section 3: a pool minor not in the map is ``UnsupportedVersion``, reported alone for the
    version (the control-plane skew and the Talos support matrix of an unusable minor are dropped)
    and first, so CREATE and UPDATE list it in the same place and ``status.reason`` names it."""
    unsupported = [v for v in denials if v.code == "UnsupportedVersion" and v.field == f"{field}.version"]
    if not unsupported:
        return denials
    rest = [v for v in denials if v.code != "UnsupportedVersion" or v.field != f"{field}.version"]
    return unsupported[:1] + [v for v in rest if v.code not in _MINOR_DERIVED]


def _stored_kairos(state: State, record: PoolRecord) -> PoolRecord:
    """A stored Kairos KubernetesNodes with no backing HelmRelease, without the Talos-only values
    the API's read filled in (chart defaults: :func:`~workerclass.admission.supplied.kairos_filled_paths`)."""
    if record.kind != "KubernetesNodes" or (record.namespace, record.name) in state.backing_values:
        return record
    if state.pools.get((record.kind, record.namespace, record.name)) is not record:
        return record  # a request's object, not the pool as stored
    selected = state.worker_class(record.class_name) if record.class_name else None
    if selected is None or selected.spec.bootstrap != "kairos":
        return record
    from ..admission.supplied import kairos_filled_paths, strip_paths  # admission imports this module

    paths = kairos_filled_paths(record.values)
    if not paths:
        return record
    obj = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
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
    return effective, _root_version_cause(denials, record.field), warnings


def _resolve_pool(state: State, record: PoolRecord) -> tuple[Effective | None, list[Violation], list[str]]:
    field = record.field
    spec = record.spec
    result = Resolution(list(record.violations), [], {})
    for path in private_key_paths(record.values, field):
        result.deny(
            "PrivateKeyMaterial",
            path,
            "private key material must never be put in pool values; remove it and rotate the key",
        )

    _check_pool_name(state, record, result)

    if record.kind == "ComputePlane":
        cluster = state.compute_planes.get((record.namespace, record.cluster))
    else:
        cluster = state.cluster(record.namespace, record.cluster) if record.cluster else None
    if cluster is None and record.cluster:
        plane = (record.namespace, record.cluster) in state.compute_planes
        result.deny(
            "ClusterNotFound",
            f"{field}.cluster",
            f"Kubernetes app {shown_name(record.cluster)} does not exist in namespace {record.namespace}"
            + (" (a ComputePlane of that name is no pool's parent cluster)" if plane else "")
            + ": create the parent cluster first",
        )
    infrastructure = cluster.infrastructure if cluster is not None else "kubevirt"

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
    # What the chart refuses at render time (names aside: admission checks them on CREATE only;
    # the tenant namespace rule is a render failure of every read, so it stays).
    seen = {(v.code, v.field) for v in result.denials}
    for failure in chart_checks(state, record):
        if (failure.code == "InvalidPoolName" and failure.field != "metadata.namespace") or (
            class_name is not None and failure.code in CLASS_RESOLVED_CODES
        ):
            continue
        if (failure.code, failure.field) not in seen and not _parse_refused(failure.field, seen):
            result.denials.append(failure)
            seen.add((failure.code, failure.field))
    bootstrap = _family(class_record)
    result.origins["bootstrap"] = _class_origin(class_record) if class_record else "legacy classless pool (Talos)"
    result.origins["class"] = f"{record.field}.workerClassName" if class_name else "classless: legacy Talos rendering"

    # The rules that do not depend on the class still run when the class is missing or broken:
    # every denial of the request is reported together.
    check_replicas(spec, field, result)
    _check_health(spec, result)
    minor, minor_origin = _kubernetes_minor(state, record, cluster)
    result.origins["kubernetesMinor"] = minor_origin
    if minor is None:
        if cluster is not None:
            result.deny("Invalid", f"{field}.version", "set the Kubernetes minor (vX.Y) of the pool")
        return None, result.denials, result.warnings
    if minor_origin == "chart values.yaml":
        # A classless pool that never chose a minor follows the chart's default: the chart renders
        # it, and refusing its UPDATEs would be an outage of our making. Said, not refused.
        probe = Resolution([], [], {})
        _check_control_plane(minor, cluster, f"{field}.version", probe)
        result.warnings.extend(
            f"{v.message} (the pool sets no version and follows the chart's default {minor}: set spec.version)"
            for v in probe.denials
        )
    else:
        _check_control_plane(minor, cluster, f"{field}.version", result)
    if not class_usable:
        return None, result.denials, result.warnings

    args = (state, record, class_record, cluster, minor, result)
    effective = _resolve_kairos(*args) if bootstrap == "kairos" else _resolve_talos_pool(*args, infrastructure)
    if result.denials or effective is None:
        return None, result.denials, result.warnings
    return effective, result.denials, result.warnings


def _chart_patch(minor: str, field: str, result: Resolution) -> str | None:
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


@lru_cache(maxsize=1)
def chart_version_map() -> Mapping[str, str]:
    return version_map()


def _platform_patch(state: State, minor: str, field: str, result: Resolution, *, standalone: bool = True) -> str | None:
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
        supported = ", ".join(sorted(state.platform.kubernetes_versions, key=_minor_key)) or "none"
        result.deny(
            "UnsupportedVersion",
            f"{field}.version",
            f"Kubernetes {minor} is not in the platform version map (supported: {supported})",
        )
    else:
        result.origins["kubernetesVersion"] = f"platform version map ({minor})"
    return patch


def _warn_platform_patch(state: State, minor: str, chart_patch: str, result: Resolution) -> None:
    """A Talos pool renders the chart's patch: say so when the platform map gives its minor another."""
    platform_patch = state.platform.kubernetes_versions.get(minor)
    if platform_patch is not None and platform_patch != chart_patch:
        result.warnings.append(
            f"the kubernetes-nodes chart renders {chart_patch}; the platform map's {platform_patch} "
            "applies to platform Kairos images"
        )


def _talos_patch(state: State, minor: str, platform_patch: str | None, result: Resolution) -> str | None:
    """A classified Talos pool's (or a node group's) patch: the chart's, as its render uses.

    The chart renders its own ``files/versions.yaml`` (the embedded platform's map equals it);
    the platform map still decides which minors a classified pool may select (``_platform_patch``
    refuses the others) and its patches apply to platform Kairos images. A minor the chart has no
    patch for keeps the platform's (the chart refuses to render it).
    """
    if platform_patch is None:
        return None
    chart_patch = chart_version_map().get(minor)
    if chart_patch is None:
        return platform_patch
    result.origins["kubernetesVersion"] = f"chart version map ({minor})"
    _warn_platform_patch(state, minor, chart_patch, result)
    return chart_patch


def _resolve_talos_pool(
    state: State,
    record: PoolRecord,
    class_record: ClassRecord | None,
    cluster: Cluster | None,
    minor: str,
    result: Resolution,
    infrastructure: str,
) -> Effective | None:
    field, spec, platform = record.field, record.spec, state.platform
    baseline: WorkerClassSpec | None = class_record.spec if class_record else None
    baseline_os = baseline.os if baseline else None
    origin = _class_origin(class_record)

    if spec.ssh_keys:
        result.deny(
            "SSHKeysOnTalos",
            f"{field}.sshKeys",
            "Talos has no SSH server: leave sshKeys empty, or use a Kairos class for SSH access",
        )
    check_talos_vgpu(spec, field, result)
    talos = resolve_talos(
        platform,
        spec.os.talos,
        baseline_os.talos if baseline_os else None,
        baseline_origin=origin,
        origins=result.origins,
        chart=chart_talos_defaults() if class_record is None and record.kind != "ComputePlane" else None,
        pool_values=record.values,
        baseline_values=class_record.obj.get("spec") if class_record is not None else None,
    )
    for name, value in (("version", talos.version), ("schematicID", talos.schematic_id)):
        if not value:
            result.deny("Invalid", f"{field}.talos.{name}", f"no Talos {name}: set it in the pool, class or platform")
    if not talos.installer_repository:
        result.deny(
            "Invalid", f"{field}.talos.installerRepository", "no installer repository in the pool, class or platform"
        )
    kernel_modules = _kernel_modules(spec, baseline_os, origin, result, classified=class_record is not None)

    image: EffectiveImage | None = None
    if infrastructure == "proxmox":
        if spec.os.os_image is not None and not spec.os.os_image.empty:
            result.deny(
                "OsImageOnProxmox",
                f"{field}.kubevirt.osImage",
                "osImage selects a KubeVirt disk and is not a Proxmox source: "
                "select the template with proxmox.templateTags",
            )
            if spec.os.os_image.builtin is not None and spec.os.os_image.factory is not None:
                result.deny(
                    "OsImageSourceConflict",
                    f"{field}.kubevirt.osImage",
                    "set builtin or factory, not both: osImage selects exactly one disk source",
                )
        if spec.os.template_tags is not None:
            tags, tags_origin = spec.os.template_tags, "pool"
        elif baseline_os is not None and baseline_os.template_tags is not None:
            tags, tags_origin = baseline_os.template_tags, origin
        else:
            tags, tags_origin = (), "unset"
        result.origins["image.templateTags"] = tags_origin
        if spec.gpus:
            result.warnings.append(
                "gpus are not attached on Proxmox: the Proxmox machine template has no GPU field, so the "
                "workers start without them; attach GPUs through the VM template"
            )
        if spec.storage_class:
            result.warnings.append(
                "storageClass is not used on Proxmox: the VM disk lives on the template's Proxmox storage"
            )
        if not tags:
            result.deny(
                "EmptyTemplateTags",
                f"{field}.proxmox.templateTags",
                "a Proxmox pool needs a nonempty template tag list to select its VM template",
            )
        image = EffectiveImage("proxmox", None, talos.version or None, talos.schematic_id or None, tags)
    elif talos.version and talos.schematic_id:
        if spec.os.os_image is not None:
            selection, selection_origin = spec.os.os_image, "pool"
        elif baseline_os is not None and baseline_os.os_image is not None:
            selection, selection_origin = baseline_os.os_image, origin
        else:
            selection, selection_origin = OsImage(), "default factory path"
        if selection.empty and selection_origin != "default factory path":
            selection_origin += " ({} = default factory path)"
        result.origins["image.source"] = selection_origin
        path = f"{field}.kubevirt.osImage"
        image = resolve_kubevirt_image(platform, talos, selection, field=path, owner=selection_origin, result=result)

    if class_record is None and record.kind != "ComputePlane":
        patch = _chart_patch(minor, field, result)
        if patch is not None:
            _warn_platform_patch(state, minor, patch, result)
    else:
        patch = _talos_patch(
            state, minor, _platform_patch(state, minor, field, result, standalone=record.kind != "ComputePlane"), result
        )
    classless = class_record is None and record.kind != "ComputePlane"
    # A classless pool meets the chart's own support-matrix check (chart_failures) instead.
    if not classless and TALOS_VERSION.fullmatch(talos.version) and platform.support_matrix:
        talos_minor = minor_of(talos.version)
        bounds = platform.support_matrix.get(talos_minor)
        # As the chart: only the Talos minors the matrix lists are checked.
        runs = bounds is None or _minor_key(bounds[0]) <= _minor_key(minor) <= _minor_key(bounds[1])
        if not runs and bounds is not None:
            supported = f"{bounds[0]}..{bounds[1]}"
            version_field = (
                f"{field}.talos.version" if result.origins.get("talos.version") == "pool" else f"{field}.version"
            )
            result.deny(
                "TalosKubernetesIncompatible",
                version_field,
                f"Talos {talos.version} does not run Kubernetes {minor} (Talos {talos_minor} runs {supported})",
            )
    if image is None or patch is None or result.denials:
        return None
    installer = f"{talos.installer_repository}/{talos.schematic_id}:{talos.version}"
    return Effective(
        kind=record.kind,
        namespace=record.namespace,
        name=record.name,
        cluster=record.cluster,
        class_name=class_record.name if class_record else None,
        bootstrap="talos",
        infrastructure=infrastructure,
        kubernetes_minor=minor,
        kubernetes_version=patch,
        talos=talos,
        kernel_modules=kernel_modules,
        image=image,
        installer_image=installer,
        pool=spec,
        origins=dict(result.origins),
        warnings=tuple(result.warnings),
        **chart_context(state, record),
    )


def _resolve_kairos(
    state: State,
    record: PoolRecord,
    class_record: ClassRecord | None,
    cluster: Cluster | None,
    minor: str,
    result: Resolution,
) -> Effective | None:
    field, spec, platform = record.field, record.spec, state.platform
    assert class_record is not None  # kairos is only ever selected through a class
    if cluster is not None and cluster.infrastructure == "proxmox":
        result.deny(
            "KairosOnProxmox",
            f"{field}.workerClassName",
            f"Kairos initially supports KubeVirt, not Proxmox: cluster {cluster.name} runs on Proxmox; "
            "select a Talos class",
        )
    for path in spec.os.nonempty_paths(field):
        result.deny(
            "TalosSettingOnKairos",
            path,
            f"a Talos-only setting on a Kairos pool (class {class_record.name}) is refused rather than "
            "interpreted as Kairos configuration: remove it or leave it empty",
        )
    keys = spec.ssh_keys or ()
    if len(keys) > 1:
        result.deny(
            "TooManySSHKeys",
            f"{field}.sshKeys",
            f"Kairos accepts zero or one SSH public key, not {len(keys)}",
        )
    for index, key in enumerate(keys):
        if any(True for _ in private_key_paths(key, "")):
            continue  # reported as PrivateKeyMaterial
        problem = public_key_problem(key)
        if problem is not None:
            result.deny("InvalidSSHKey", f"{field}.sshKeys[{index}]", f"not an OpenSSH public key: {problem}")
    if keys:
        result.warnings.append("the SSH key authorizes a sudo-capable guest user on every worker of this pool")
    if (spec.min_replicas if spec.min_replicas is not None else DEFAULT_MIN_REPLICAS) == 0:
        unset = "" if spec.min_replicas is not None else f" (minReplicas defaults to {DEFAULT_MIN_REPLICAS})"
        result.warnings.append(
            f"scale from zero on Kairos needs separate evidence{unset}: "
            "verify it for this image and substrate before relying on it, or set minReplicas"
        )

    image_spec = class_record.spec.image
    image: EffectiveImage | None = None
    patch: str | None = None
    fixed = class_record.spec.fixed_image
    if fixed is not None and fixed.kubernetes_version and fixed.reference:
        image_minor = minor_of(fixed.kubernetes_version)
        if image_minor != minor:
            result.deny(
                "VersionMismatch",
                f"{field}.version",
                f"class {class_record.name} carries a fixed image with Kubernetes {fixed.kubernetes_version}: "
                f"the pool must select {image_minor}, not {minor}",
            )
        patch = fixed.kubernetes_version
        result.origins["kubernetesVersion"] = f"fixed image of class {class_record.name}"
        result.origins["image.reference"] = f"fixed image of class {class_record.name}"
        image = EffectiveImage("fixed", fixed.reference, fixed.kubernetes_version, None)
    elif image_spec is None or not (image_spec.kubernetes_version or image_spec.reference):
        patch = _platform_patch(state, minor, field, result)
        platform_image = platform.kairos_images.get(minor)
        if patch is not None and platform_image is None:
            result.deny(
                "UnsupportedVersion",
                f"{field}.version",
                f"the platform publishes no Kairos image for Kubernetes {minor}; select a class with a fixed image",
            )
        if patch is not None and platform_image is not None:
            if platform_image.kubernetes_version and platform_image.kubernetes_version != patch:
                # API.md section 2: the patch of a platform image pool is the map's. The image's own
                # declaration is the hoster's record of what it was built for: a stale one is reported.
                result.warnings.append(
                    f"the platform Kairos image for {minor} declares Kubernetes {platform_image.kubernetes_version} "
                    f"but the platform version map selects {patch}, which the pool follows: the hoster should "
                    "publish an image built for that patch"
                )
            result.origins["image.reference"] = f"platform Kairos image for {minor}"
            image = EffectiveImage("platform", platform_image.reference, patch, None)
            result.warnings.append(
                "platform Kairos images are experimental: a platform rebuild can change the image digest and "
                "replace workers even when intended inputs did not change; pin a class with a fixed image to avoid it"
            )
    if image is None or patch is None or result.denials:
        return None
    return Effective(
        kind=record.kind,
        namespace=record.namespace,
        name=record.name,
        cluster=record.cluster,
        class_name=class_record.name,
        bootstrap="kairos",
        infrastructure=cluster.infrastructure if cluster else "kubevirt",
        kubernetes_minor=minor,
        kubernetes_version=patch,
        talos=None,
        kernel_modules=(),
        image=image,
        installer_image=None,
        pool=spec,
        origins=dict(result.origins),
        warnings=tuple(result.warnings),
        **chart_context(state, record),
    )


# --------------------------------------------------------------------------- public API


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
