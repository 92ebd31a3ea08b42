"""A pool's values (KubernetesNodes ``spec``, HelmRelease ``spec.values``, ComputePlane node
groups): the chart's keys with the chart's types plus the class-era keys of API.md section 1.

:func:`parse_pool_spec` is on the admission hot path: paths are f-strings, nothing is built per
call beyond the values. Its edge: one pool's values; the chart's render-time checks are the
chart port's (:mod:`workerclass.chart`), class rules the resolver's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..api.frozen import fast_init
from ..api.patterns import KUBERNETES_MINOR, KUBERNETES_PATCH, NAME, QUANTITY
from ..api.schema import CLASS_ERA_KEYS
from ..chart.checks import KUBELET_KEYS
from ..chart.facts import compute_plane_keys, upstream_facts
from ..violations import Violation
from .reader import (
    Reader,
    key_path,
    label_key_problem,
    label_value_problem,
    looks_private,
    type_name,
    whole_number,
)
from .settings import OsSettings, parse_os

__all__ = [
    "CHART_KEYS",
    "CHART_VERSIONS",
    "CLASS_ERA_KEYS",
    "COMPUTE_PLANE_ALLOWLIST",
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_MIN_REPLICAS",
    "RESERVED_LABEL_PREFIXES",
    "ROLE",
    "TAINT_EFFECTS",
    "Gpu",
    "PoolSpec",
    "Resources",
    "Taint",
    "parse_node_group",
    "parse_pool_spec",
]

TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
#: replica bounds of a pool that leaves them out (the Cozystack node-group defaults)
DEFAULT_MIN_REPLICAS = 0
DEFAULT_MAX_REPLICAS = 10


@fast_init
@dataclass(frozen=True, slots=True)
class Resources:
    cpu: str
    memory: str


@fast_init
@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def as_dict(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@fast_init
@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    vgpu: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A standalone pool's values (KubernetesNodes ``spec``, HelmRelease ``spec.values``)."""

    cluster: str | None = None
    worker_class_name: str | None = None
    version: str | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    resources: Resources | None = None
    storage_class: str | None = None
    roles: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    max_unhealthy: str | None = None
    gpus: tuple[Gpu, ...] = ()
    ssh_keys: tuple[str, ...] | None = None
    os: OsSettings = field(default_factory=OsSettings)
    kubelet: Mapping[str, str] | None = None
    images: Mapping[str, str] | None = None
    #: the values as written, verbatim (a classless pool's values are never rewritten)
    values: Mapping[str, Any] = field(default_factory=dict)
    #: format rules the chart does not have (Talos value patterns, credentials in URLs): they
    #: refuse a *classified* pool only; a classless pool renders whatever the chart renders
    class_violations: tuple[Violation, ...] = ()
    #: keys no one reads (Cozystack's API stores values unpruned, the chart ignores them): said, not refused
    warnings: tuple[str, ...] = ()


#: Every key of the chart's values schema (the generated facts), read with the chart's types.
CHART_KEYS = frozenset(upstream_facts()["schema"]["properties"])
_POOL_KEYS = CHART_KEYS | frozenset(CLASS_ERA_KEYS)
_KUBELET_KEYS = frozenset(KUBELET_KEYS)  # the chart's keys (its order matters there), as a set
#: The chart's ``version`` enum (its values schema, in the generated facts).
CHART_VERSIONS: tuple[str, ...] = tuple(upstream_facts()["schema"]["properties"]["version"]["enum"])
#: Label prefixes that are Cluster API's own: its selectors and topology use them. (Its
#: node.cluster.x-k8s.io/ prefix is the one it copies to Nodes, and stays open to pools.)
RESERVED_LABEL_PREFIXES = frozenset({"cluster.x-k8s.io", "topology.cluster.x-k8s.io"})
#: A role becomes the label key ``node-role.kubernetes.io/<role>``: its name part, a label name of
#: at most 63 characters (letters of either case, digits, ``-``, ``_``, ``.``; alphanumeric at both ends).
ROLE = re.compile(r"^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _quantity(reader: Reader, data: Mapping[str, Any], key: str, field: str) -> str | None:
    """A chart quantity (``anyOf: [integer, string]`` with Kubernetes' quantity pattern)."""
    if key not in data or data[key] is None:
        return None
    value = data[key]
    number = whole_number(value)
    if number is None and not isinstance(value, str):
        reader.invalid(f"{field}.{key}", f"must be a quantity (an integer or a string), not {type_name(value)}")
        return None
    text = str(number) if number is not None else str(value)
    if not QUANTITY.fullmatch(text):
        reader.invalid(f"{field}.{key}", "is not a Kubernetes quantity (like 4, 500m, 8Gi); the value is not shown")
        return None
    return text


def _gpus(reader: Reader, data: Mapping[str, Any], field: str) -> tuple[Gpu, ...]:
    gpus: list[Gpu] = []
    for path, item in reader.object_list(data, "gpus", field) or []:
        reader.only(item, frozenset({"name", "vgpu"}), path)
        if "name" not in item:
            reader.invalid(f"{path}.name", "is required")
        elif item["name"] is None:
            reader.invalid(f"{path}.name", "must be a string, not null")
        name = reader.string(item, "name", path) if item.get("name") is not None else None
        vgpu = reader.boolean(item, "vgpu", path)
        if name is not None:  # "" too: the chart renders a device without a name, as written
            gpus.append(Gpu(name, bool(vgpu)))
    return tuple(gpus)


def _resources(reader: Reader, data: Mapping[str, Any], field: str) -> Resources | None:
    """``resources``: each of cpu/memory is a quantity; only both together size the VM.

    One of them alone is no parse error: the chart renders it with ``instanceType: ""`` and
    refuses it beside an instance type (``IncompleteResources``, a chart check).
    """
    if "resources" not in data or data["resources"] is None:
        return None
    raw = reader.mapping(data["resources"], f"{field}.resources")
    if raw is None:
        return None
    reader.only(raw, frozenset({"cpu", "memory"}), f"{field}.resources")
    cpu = _quantity(reader, raw, "cpu", f"{field}.resources")
    memory = _quantity(reader, raw, "memory", f"{field}.resources")
    return Resources(cpu, memory) if cpu is not None and memory is not None else None


def _string_map(
    reader: Reader, data: Mapping[str, Any], key: str, allowed: frozenset[str], field: str
) -> dict[str, str] | None:
    """An object of string fields (``kubelet``, ``images``): absent -> ``None``; formats are the chart's."""
    if key not in data:
        return None
    if data[key] is None:
        return {}
    raw = reader.mapping(data[key], f"{field}.{key}")
    if raw is None:
        return None
    reader.only(raw, allowed, f"{field}.{key}")
    out: dict[str, str] = {}
    for name in _sorted(allowed):
        if name not in raw:  # reader.string reads nothing there
            continue
        value = reader.string(raw, name, f"{field}.{key}")
        if value is not None and raw[name] is not None:
            out[name] = value
    return out


@lru_cache(maxsize=16)
def _sorted(keys: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(keys))


#: Why a pool's top-level ``_`` key is refused. Cozystack injects ``_cluster`` and ``_namespace``
#: (the Secret ``cozystack-values``) into every application's values, and its application API refuses
#: ``_`` keys a tenant writes; the chart reads ``_cluster`` into the talos-reconcile Job's shell script
#: (unescaped: it is the platform's) and into the VM's scheduling, so a tenant's copy would run as
#: the Job's account in the management cluster.
PLATFORM_VALUE_MESSAGE = (
    "top-level keys beginning with '_' are the platform's values (Cozystack injects _cluster and "
    "_namespace into every application); a pool may not set them: remove the key"
)


#: Keys the chart's templates read that its values schema does not list: ``kubernetes.name`` takes
#: ``nameOverride`` for the ``app.kubernetes.io/name`` label, so such a key is no unknown field.
CHART_TEMPLATE_KEYS = frozenset({"nameOverride"})

#: Why a pool's ``bootstrap`` is refused: the design page's "an override cannot change bootstrap family".
BOOTSTRAP_MESSAGE = (
    "a pool cannot choose its bootstrap family: the family is its WorkerClass's (no override changes it); "
    "select a class of the family instead (workerClassName) and remove bootstrap"
)
#: Why a pool's fixed image is refused: the design page puts it in the class, as a pair.
FIXED_IMAGE_MESSAGE = (
    "a fixed worker image is a WorkerClass's (image.kubernetesVersion with image.reference, published by the "
    "hoster): a pool selects it through workerClassName; remove image from the pool"
)
#: Why a tenant pull Secret is refused: the design page, "this interface does not accept a tenant pull Secret".
PULL_SECRET_MESSAGE = (
    "this interface does not accept a tenant pull Secret: worker images are public, and private worker "
    "images wait for the shared catalog; remove imagePullSecrets"
)


def _design_refused(reader: Reader, data: Mapping[str, Any], field: str) -> set[str]:
    """Refuse what the design page refuses a pool (``BootstrapFamilyChange`` for ``bootstrap``,
    ``TenantImageSetting`` for a fixed image or a pull Secret); the keys it judged, which are
    then no unknown fields (saying they have no effect would hide the refusal)."""
    judged: set[str] = set()
    if data.get("bootstrap") not in (None, ""):
        reader.add("BootstrapFamilyChange", f"{field}.bootstrap", BOOTSTRAP_MESSAGE)
        judged.add("bootstrap")
    image = data.get("image")
    if isinstance(image, Mapping):
        fixed = [key for key in ("reference", "kubernetesVersion") if image.get(key) not in (None, "")]
        for key in fixed:
            reader.add("TenantImageSetting", f"{field}.image.{key}", FIXED_IMAGE_MESSAGE)
        if fixed:
            judged.add("image")
    if data.get("imagePullSecrets") not in (None, "", [], {}):
        reader.add("TenantImageSetting", f"{field}.imagePullSecrets", PULL_SECRET_MESSAGE)
        judged.add("imagePullSecrets")
    return judged


_IMAGE_KEYS = frozenset({"kubectl"})
#: the keys a pool's values may hold without a word: no ``_`` key, none the design page refuses
_READ_KEYS = _POOL_KEYS | CHART_TEMPLATE_KEYS
assert not any(key.startswith("_") for key in _READ_KEYS)
assert not _READ_KEYS & {"bootstrap", "image", "imagePullSecrets"}


def parse_pool_spec(spec: object, field: str = "spec") -> tuple[PoolSpec, list[Violation]]:
    """Parse a pool's values: the chart's values plus the class-era keys (API.md section 1).

    Every key of the chart's ``values.schema.json`` is read with the chart's type (``Invalid``
    otherwise); what the chart checks at render time (durations, ``maxUnhealthy``, kubelet
    reservations, podCpu, half resources, instance types) is left to the chart's checks. A key
    neither the chart nor the class era knows is a warning (Cozystack's API stores values unpruned
    and the chart ignores such keys, so refusing one would freeze a pool Cozystack renders), with
    the known key it is closest to. The raw values are kept verbatim.
    """
    reader = Reader(unknown="warn")
    strict = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    if not data.keys() <= _READ_KEYS:  # every key known (the usual pool): none of these can apply
        platform_keys = [key for key in data if isinstance(key, str) and key.startswith("_")]
        for key in platform_keys:
            reader.add("PlatformValueInPool", key_path(field, key), PLATFORM_VALUE_MESSAGE)
        judged = _design_refused(reader, data, field)
        unread = [key for key in data if key not in platform_keys and key not in judged]
        reader.only({key: None for key in unread}, _READ_KEYS, field)
    version = reader.string(data, "version", field)
    if version and not KUBERNETES_MINOR.fullmatch(version):
        message = f"is not a Kubernetes minor (vX.Y; the chart's: {', '.join(CHART_VERSIONS)})"
        if KUBERNETES_PATCH.fullmatch(version):
            message = (
                f"{version} is not a Kubernetes minor: pools select a minor only ({', '.join(CHART_VERSIONS)}); "
                "the exact patch comes from the platform version map or from the class's fixed image"
            )
        reader.invalid(f"{field}.version", message)
        version = None
    labels: dict[str, str] = {}
    if "labels" in data and data["labels"] is not None:
        raw_labels = reader.mapping(data["labels"], f"{field}.labels")
        for key, value in (raw_labels or {}).items():
            path = key_path(f"{field}.labels", key)
            key_problem = label_key_problem(key) if isinstance(key, str) else "is not a valid label key"
            if key_problem is not None and path == f"{field}.labels":
                key_problem = "has a key that is not a valid label key ([prefix/]name); the key is not shown"
            if key_problem is not None:
                reader.invalid(path, key_problem)
            elif key.rpartition("/")[0] in RESERVED_LABEL_PREFIXES:
                reader.invalid(
                    path,
                    f"labels under {key.rpartition('/')[0]}/ belong to Cluster API (it selects the pool's machines "
                    "by them): use another prefix (node.cluster.x-k8s.io/ reaches the Nodes)",
                )
            elif not isinstance(value, str):
                reader.invalid(path, f"must be a string, not {type_name(value)}")
            elif looks_private(value):
                pass  # refused as PrivateKeyMaterial, with the rest of the values
            elif (value_problem := label_value_problem(value)) is not None:
                reader.invalid(path, value_problem)
            else:
                labels[key] = value
    taints: list[Taint] = []
    for path, item in reader.object_list(data, "taints", field) or []:
        reader.only(item, frozenset({"key", "value", "effect"}), path)
        taint_key = reader.string(item, "key", path, required=True)
        taint_value = reader.string(item, "value", path) or ""
        effect = reader.string(item, "effect", path, required=True)
        if effect and effect not in TAINT_EFFECTS:
            reader.invalid(f"{path}.effect", "is not one of NoSchedule, PreferNoSchedule, NoExecute")
        elif taint_key and not looks_private(taint_key) and (key_problem := label_key_problem(taint_key)) is not None:
            reader.invalid(f"{path}.key", key_problem.replace("label key", "taint key"))
        elif (
            taint_value
            and not looks_private(taint_value)
            and (value_problem := label_value_problem(taint_value)) is not None
        ):
            reader.invalid(f"{path}.value", value_problem.replace("label value", "taint value"))
        elif taint_key and effect:
            taints.append(Taint(taint_key, taint_value, effect))
    roles = reader.string_list(data, "roles", field) or ()
    # What Kubernetes or Cluster API would refuse after admission; the chart renders any string
    # here, so these refuse a classified pool only (a classless pool renders as the chart does).
    for index, role in enumerate(roles):
        if not ROLE.fullmatch(role) and not looks_private(role):
            strict.invalid(f"{field}.roles[{index}]", "is not a role name (a DNS name of at most 63 characters)")
    for key, what in (("instanceType", "an instance type name"), ("storageClass", "a StorageClass name")):
        text = data.get(key)
        if isinstance(text, str) and text and not NAME.fullmatch(text) and not looks_private(text):
            strict.invalid(f"{field}.{key}", f"is not {what} (the value is not shown)")
    # Read in the chart's key order, so the denials come in it too. The values that only the
    # chart's checks and the renderer read (they take them from ``values``) are read here for
    # their types alone and not kept.
    # (Each read of an absent key reads nothing and says nothing: those calls are left out.)
    cluster = reader.string(data, "cluster", field, required=True)
    worker_class_name = (
        reader.string(data, "workerClassName", field, pattern=NAME, what="a WorkerClass name")
        if "workerClassName" in data
        else None
    )
    min_replicas = reader.integer(data, "minReplicas", field) if "minReplicas" in data else None
    max_replicas = reader.integer(data, "maxReplicas", field) if "maxReplicas" in data else None
    if "instanceType" in data:
        reader.string(data, "instanceType", field)
    resources = _resources(reader, data, field) if "resources" in data else None
    if "diskSize" in data:
        _quantity(reader, data, "diskSize", field)
    storage_class = reader.string(data, "storageClass", field) if "storageClass" in data else None
    max_unhealthy = reader.string(data, "maxUnhealthy", field) if "maxUnhealthy" in data else None
    for key in ("nodeStartupTimeout", "readyUnknownTimeout", "readyFalseTimeout"):
        if key in data:
            reader.string(data, key, field)
    gpus = _gpus(reader, data, field) if "gpus" in data else ()
    ssh_keys = reader.string_list(data, "sshKeys", field) if "sshKeys" in data else None
    os_settings = parse_os(reader, data, field, strict)
    if "maxNodeProvisionTime" in data:
        reader.string(data, "maxNodeProvisionTime", field)
    if "logSerialConsole" in data:
        reader.boolean(data, "logSerialConsole", field)
    for key in ("podCpuLimit", "podCpuRequest"):
        if key in data:
            _quantity(reader, data, key, field)
    pool = PoolSpec(
        cluster=cluster,
        worker_class_name=worker_class_name,
        version=version,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        resources=resources,
        storage_class=storage_class,
        roles=roles,
        labels=labels,
        taints=tuple(taints),
        max_unhealthy=max_unhealthy,
        gpus=gpus,
        ssh_keys=ssh_keys,
        os=os_settings,
        kubelet=_string_map(reader, data, "kubelet", _KUBELET_KEYS, field) if "kubelet" in data else None,
        images=_string_map(reader, data, "images", _IMAGE_KEYS, field) if "images" in data else None,
        values=data,
        class_violations=tuple(strict.violations),
        warnings=tuple(reader.warnings),
    )
    return pool, reader.violations


#: ComputePlane node groups: Cozystack's allowlist (the generated facts).
COMPUTE_PLANE_ALLOWLIST = compute_plane_keys()


#: Why a node group's ``ephemeralStorage`` is refused: the ComputePlane passes unlisted node-group
#: fields to the ``kubernetes`` chart, whose render fails on the key whatever its value.
EPHEMERAL_STORAGE_MESSAGE = (
    "the kubernetes chart the ComputePlane renders fails on ephemeralStorage, whatever its value: it is no "
    "longer supported and was replaced by diskSize (Cozystack's platform migration 41); use diskSize"
)
#: A node group's unknown key reaches the wrapped ``kubernetes`` chart, not the kubernetes-nodes chart.
NODE_GROUP_UNREAD = "the ComputePlane passes it to the kubernetes chart, which does not read it, so it has no effect"


def parse_node_group(group: object, field: str) -> tuple[PoolSpec, list[Violation]]:
    """Parse a ComputePlane node group, rendered on the classless path: a pool key outside the
    allowlist (a class, a version, Talos settings...) is refused, and so is ``ephemeralStorage``
    (the wrapped chart fails on it); a key no pool knows is a warning (Cozystack passes it through
    to the wrapped chart, which ignores it)."""
    reader = Reader(unknown="warn", unread=NODE_GROUP_UNREAD)
    data = reader.mapping(group if group is not None else {}, field) or {}
    if "ephemeralStorage" in data:
        reader.add("NotAllowedInComputePlane", key_path(field, "ephemeralStorage"), EPHEMERAL_STORAGE_MESSAGE)
    unread = [key for key in data if key not in _POOL_KEYS and key != "ephemeralStorage"]
    reader.only({key: None for key in unread}, COMPUTE_PLANE_ALLOWLIST, field)
    for key in data:
        if key not in COMPUTE_PLANE_ALLOWLIST and key in _POOL_KEYS:
            allowed = ", ".join(sorted(COMPUTE_PLANE_ALLOWLIST))
            reader.add(
                "NotAllowedInComputePlane",
                key_path(field, key),
                f"ComputePlane node groups keep the classless Talos path; allowed keys: {allowed}."
                " Use a standalone KubernetesNodes pool to select a worker class, version or Talos settings",
            )
    min_replicas = reader.integer(data, "minReplicas", field)
    max_replicas = reader.integer(data, "maxReplicas", field)
    reader.string(data, "instanceType", field)  # its type only: the chart's checks read it from ``values``
    resources = _resources(reader, data, field)
    _quantity(reader, data, "diskSize", field)
    pool = PoolSpec(
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        resources=resources,
        storage_class=reader.string(data, "storageClass", field),
        roles=reader.string_list(data, "roles", field) or (),
        gpus=_gpus(reader, data, field),
        kubelet=_string_map(reader, data, "kubelet", _KUBELET_KEYS, field),
        values=data,
        warnings=tuple(reader.warnings),
    )
    return pool, reader.violations
