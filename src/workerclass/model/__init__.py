"""Typed resources parsed from plain dicts.

Owns the shapes of WorkerClass, KubernetesNodes (and HelmRelease pool values, ComputePlane
node groups), WorkerPlatform and the parent Kubernetes app. Its edge: it reads dicts and
returns frozen values plus ``Invalid`` violations; it never looks at other objects.

"Supplied" survives parsing: an absent key is ``None``, a supplied empty value is ``""``,
``()`` or ``{}``. Resolution depends on that difference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..builtin import embedded_platform_spec
from ..chart.checks import KUBELET_KEYS as CHART_KUBELET_KEYS
from ..violations import Violation
from .reader import (
    CREDENTIALS_MESSAGE,
    KUBERNETES_MINOR,
    KUBERNETES_PATCH,
    MODULE_NAME,
    NAME,
    QUANTITY,
    REPOSITORY,
    SCHEMATIC_ID,
    TALOS_VERSION,
    URL,
    URL_CREDENTIALS,
    Reader,
    key_path,
    label_key_problem,
    label_value_problem,
    looks_private,
    type_name,
)

__all__ = [
    "COMPUTE_PLANE_ALLOWLIST",
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_MIN_REPLICAS",
    "Cluster",
    "FixedImage",
    "Golden",
    "Gpu",
    "ImageSource",
    "KairosImage",
    "KernelModule",
    "OsImage",
    "OsSettings",
    "Platform",
    "PoolSpec",
    "Resources",
    "Taint",
    "TalosSettings",
    "WorkerClassSpec",
    "minor_of",
    "parse_class_spec",
    "parse_cluster",
    "parse_platform",
    "parse_pool_spec",
    "version_tuple",
]

BOOTSTRAPS = ("talos", "kairos")
INFRASTRUCTURES = ("kubevirt", "proxmox")
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
#: replica bounds of a pool that leaves them out (the Cozystack node-group defaults)
DEFAULT_MIN_REPLICAS = 0
DEFAULT_MAX_REPLICAS = 10


@lru_cache(maxsize=1024)
def version_tuple(version: str) -> tuple[int, ...]:
    """``v1.35.6`` -> ``(1, 35, 6)``; a pre-release suffix is ignored. Cached: a hot path."""
    core = version.lstrip("v").split("-", 1)[0]
    return tuple(int(part) for part in core.split("."))


@lru_cache(maxsize=1024)
def minor_of(version: str) -> str:
    """``v1.35.6`` -> ``v1.35``."""
    major, minor = version_tuple(version)[:2]
    return f"v{major}.{minor}"


# --------------------------------------------------------------------------- Talos settings


@dataclass(frozen=True, slots=True)
class TalosSettings:
    """The ``talos`` block a class and a pool share. ``None`` = absent, ``""`` = supplied empty."""

    version: str | None = None
    schematic_id: str | None = None
    image_factory_url: str | None = None
    image_factory_ca: str | None = None
    installer_repository: str | None = None
    registry_mirrors: Mapping[str, tuple[str, ...]] | None = None

    def nonempty_fields(self) -> list[str]:
        """The camelCase names of settings with a nonempty value."""
        out = [
            name
            for name, value in (
                ("version", self.version),
                ("schematicID", self.schematic_id),
                ("imageFactoryURL", self.image_factory_url),
                ("imageFactoryCA", self.image_factory_ca),
                ("installerRepository", self.installer_repository),
            )
            if value
        ]
        if self.registry_mirrors:
            out.append("registryMirrors")
        return out


@dataclass(frozen=True, slots=True)
class KernelModule:
    name: str
    parameters: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "parameters": list(self.parameters)}


@dataclass(frozen=True, slots=True)
class ImageSource:
    """A builtin golden or an Image Factory source; empty values fall back to effective Talos."""

    version: str | None = None
    schematic_id: str | None = None
    endpoint: str | None = None


@dataclass(frozen=True, slots=True)
class OsImage:
    """``kubevirt.osImage``: at most one of ``builtin`` / ``factory``; ``{}`` = default factory."""

    builtin: ImageSource | None = None
    factory: ImageSource | None = None

    @property
    def empty(self) -> bool:
        return self.builtin is None and self.factory is None


@dataclass(frozen=True, slots=True)
class OsSettings:
    """Every Talos-only setting, at the same paths in a class and in a pool."""

    talos: TalosSettings | None = None
    kernel_modules: tuple[KernelModule, ...] | None = None
    os_image: OsImage | None = None
    template_tags: tuple[str, ...] | None = None

    def nonempty_paths(self, prefix: str) -> list[str]:
        """Field paths of nonempty Talos-only settings (refused on Kairos)."""
        out: list[str] = []
        if self.talos is not None:
            out.extend(f"{prefix}.talos.{name}" for name in self.talos.nonempty_fields())
        if self.kernel_modules:
            out.append(f"{prefix}.kernelModules")
        if self.os_image is not None and not self.os_image.empty:
            out.append(f"{prefix}.kubevirt.osImage")
        if self.template_tags:
            out.append(f"{prefix}.proxmox.templateTags")
        return out


# --------------------------------------------------------------------------- resources


@dataclass(frozen=True, slots=True)
class FixedImage:
    kubernetes_version: str | None = None
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class WorkerClassSpec:
    bootstrap: str
    os: OsSettings = field(default_factory=OsSettings)
    image: FixedImage | None = None

    @property
    def fixed_image(self) -> FixedImage | None:
        """The fixed custom image when both fields are set."""
        image = self.image
        if image is not None and image.kubernetes_version and image.reference:
            return image
        return None


@dataclass(frozen=True, slots=True)
class Resources:
    cpu: str
    memory: str


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


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    vgpu: bool = False


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A standalone pool's values (KubernetesNodes ``spec``, HelmRelease ``spec.values``)."""

    cluster: str | None = None
    worker_class_name: str | None = None
    version: str | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    instance_type: str | None = None
    resources: Resources | None = None
    disk_size: str | None = None
    storage_class: str | None = None
    roles: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    max_unhealthy: str | None = None
    node_startup_timeout: str | None = None
    ready_unknown_timeout: str | None = None
    ready_false_timeout: str | None = None
    gpus: tuple[Gpu, ...] = ()
    ssh_keys: tuple[str, ...] | None = None
    os: OsSettings = field(default_factory=OsSettings)
    max_node_provision_time: str | None = None
    log_serial_console: bool | None = None
    pod_cpu_limit: str | None = None
    pod_cpu_request: str | None = None
    kubelet: Mapping[str, str] | None = None
    images: Mapping[str, str] | None = None
    #: the values as written, verbatim (a classless pool's values are never rewritten)
    values: Mapping[str, Any] = field(default_factory=dict)
    #: format rules the chart does not have (Talos value patterns, credentials in URLs): they
    #: refuse a *classified* pool only; a classless pool renders whatever the chart renders
    class_violations: tuple[Violation, ...] = ()


@dataclass(frozen=True, slots=True)
class Golden:
    version: str
    schematic_id: str


@dataclass(frozen=True, slots=True)
class KairosImage:
    reference: str
    kubernetes_version: str | None


@dataclass(frozen=True, slots=True)
class Platform:
    """The singleton WorkerPlatform ``default``: platform defaults and version maps."""

    default_worker_class: str = "talos"
    kubernetes_versions: Mapping[str, str] = field(default_factory=dict)
    talos_version: str = ""
    talos_schematic_id: str = ""
    talos_image_factory_url: str = ""
    talos_installer_repository: str = ""
    goldens: frozenset[Golden] = frozenset()
    support_matrix: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    kairos_images: Mapping[str, KairosImage] = field(default_factory=dict)
    #: what Cozystack injects as ``_cluster`` into every app's values
    cluster_values: Mapping[str, Any] = field(default_factory=lambda: {"cluster-domain": "cozy.local"})


@dataclass(frozen=True, slots=True)
class Cluster:
    """The parent Kubernetes app: only its control-plane minor and infrastructure matter."""

    namespace: str
    name: str
    version: str | None = None
    infrastructure: str = "kubevirt"
    #: the parent chart's node groups (Helm coalesces ``spec.nodeGroups`` over its default ``md0``)
    node_groups: frozenset[str] = frozenset({"md0"})


# --------------------------------------------------------------------------- parsers

_TALOS_KEYS = frozenset(
    {
        "version",
        "schematicID",
        "imageFactoryURL",
        "imageFactoryCA",
        "installerRepository",
        "registryMirrors",
    }
)
_OS_KEYS = frozenset({"talos", "kernelModules", "kubevirt", "proxmox"})
_CLASS_KEYS = frozenset({"bootstrap", "image"}) | _OS_KEYS
#: Every key of the chart's ``values.schema.json`` (main 3c780acd4), with the chart's types.
CHART_KEYS = frozenset(
    {
        "cluster",
        "storageClass",
        "minReplicas",
        "maxReplicas",
        "instanceType",
        "diskSize",
        "roles",
        "resources",
        "podCpuLimit",
        "podCpuRequest",
        "gpus",
        "kubelet",
        "logSerialConsole",
        "maxUnhealthy",
        "nodeStartupTimeout",
        "readyUnknownTimeout",
        "readyFalseTimeout",
        "maxNodeProvisionTime",
        "version",
        "talos",
        "images",
    }
)
#: The class-era keys of API.md section 1 (the design page's and the upstream PRs' shapes).
CLASS_ERA_KEYS = frozenset({"workerClassName", "labels", "taints", "sshKeys", "kernelModules", "kubevirt", "proxmox"})
_POOL_KEYS = CHART_KEYS | CLASS_ERA_KEYS
KUBELET_KEYS = frozenset(CHART_KUBELET_KEYS)
#: The chart's ``version`` enum (values.schema.json).
CHART_VERSIONS = ("v1.35", "v1.34", "v1.33", "v1.32", "v1.31")
PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----"
#: ``imageFactoryCA``: one or more PEM certificate blocks and whitespace, nothing else.
PEM_CERTIFICATES = re.compile(
    r"^\s*(-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----\s*)+$"
)
#: Label prefixes that are Cluster API's own: its selectors and topology use them. (Its
#: node.cluster.x-k8s.io/ prefix is the one it copies to Nodes, and stays open to pools.)
RESERVED_LABEL_PREFIXES = frozenset({"cluster.x-k8s.io", "topology.cluster.x-k8s.io"})
#: A role becomes the label ``node-role.kubernetes.io/<role>``: a DNS name of at most 63 characters.
ROLE = re.compile(r"^(?=.{1,63}$)[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def _talos(reader: Reader, value: object, field: str, strict: Reader) -> TalosSettings | None:
    """The ``talos`` block. Types go to ``reader``; value patterns the chart lacks go to ``strict``.

    A class passes the same reader twice; a pool passes a second one whose violations refuse
    only a classified pool (the chart renders any string there).
    """
    if value is None:
        return TalosSettings()
    data = reader.mapping(value, field)
    if data is None:
        return None
    reader.only(data, _TALOS_KEYS, field)
    ca = reader.string(data, "imageFactoryCA", field)
    if ca and not looks_private(ca) and not PEM_CERTIFICATES.fullmatch(ca):
        reader.invalid(
            f"{field}.imageFactoryCA",
            "must hold PEM certificates (-----BEGIN CERTIFICATE----- blocks) and nothing else; the value is not shown",
        )
        ca = None
    patterns = (
        ("version", TALOS_VERSION, "a Talos version (vX.Y.Z)"),
        ("schematicID", SCHEMATIC_ID, "an Image Factory schematic ID (64 hex)"),
        ("imageFactoryURL", URL, "an http(s) URL"),
        ("installerRepository", REPOSITORY, "an image repository without tag"),
    )
    values: dict[str, str | None] = {}
    for key, pattern, what in patterns:
        text = reader.string(data, key, field)
        if text and not pattern.fullmatch(text):
            path = f"{field}.{key}"
            if pattern is URL and URL_CREDENTIALS.match(text):
                strict.invalid(path, CREDENTIALS_MESSAGE)
            elif not looks_private(text):
                strict.invalid(path, f"is not {what} (the value is not shown)")
            if strict is reader:
                text = None
        values[key] = text
    return TalosSettings(
        version=values["version"],
        schematic_id=values["schematicID"],
        image_factory_url=values["imageFactoryURL"],
        image_factory_ca=ca,
        installer_repository=values["installerRepository"],
        registry_mirrors=_mirrors(reader, data, f"{field}.registryMirrors", strict),
    )


def _mirrors(reader: Reader, data: Mapping[str, Any], field: str, strict: Reader) -> dict[str, tuple[str, ...]] | None:
    """Talos ``machine.registries.mirrors``: ``{host: {endpoints: [url], skipFallback, ...}}``.

    The chart passes the map through (``x-kubernetes-preserve-unknown-fields``); only its shape
    is read here: a mapping per host, ``endpoints`` a list of strings when given. Those shapes are
    ``strict`` rules (classified pools): a classless pool's map is carried through untouched.
    """
    if "registryMirrors" not in data:
        return None
    value = data["registryMirrors"]
    if value is None:
        return {}
    mirrors = reader.mapping(value, field)
    if mirrors is None:
        return None
    out: dict[str, tuple[str, ...]] = {}
    for registry, entry in mirrors.items():
        path = key_path(field, registry)
        # The chart's schema preserves the map's unknown fields: the shape of an entry is a rule of
        # classified pools only (``strict``), where resolution reads the endpoints.
        body = strict.mapping(entry, path)
        if body is None:
            continue
        endpoints = strict.string_list(body, "endpoints", path) or ()
        for index, endpoint in enumerate(endpoints):
            if not URL.fullmatch(endpoint) and not looks_private(endpoint):
                message = CREDENTIALS_MESSAGE if URL_CREDENTIALS.match(endpoint) else "is not an http(s) URL"
                strict.invalid(f"{path}.endpoints[{index}]", message)
        out[str(registry)] = endpoints
    return out


def _kernel_modules(reader: Reader, data: Mapping[str, Any], field: str) -> tuple[KernelModule, ...] | None:
    items = reader.object_list(data, "kernelModules", field)
    if items is None:
        return None
    out: list[KernelModule] = []
    for path, item in items:
        reader.only(item, frozenset({"name", "parameters"}), path)
        name = reader.string(item, "name", path, required=True)
        if name and not MODULE_NAME.fullmatch(name):
            # PR 3571's chart refuses it at render time (its shell-safe module name rule)
            reader.add("InvalidKernelModule", f"{path}.name", "is not a kernel module name ([a-z0-9_-]+); not shown")
            name = None
        parameters = reader.string_list(item, "parameters", path) or ()
        if name:
            out.append(KernelModule(name, parameters))
    return tuple(out)


def _source(reader: Reader, value: object, field: str, *, factory: bool) -> ImageSource | None:
    data = reader.mapping(value if value is not None else {}, field)
    if data is None:
        return None
    keys = {"version", "schematicID"} | ({"endpoint"} if factory else set())
    reader.only(data, frozenset(keys), field)
    return ImageSource(
        version=reader.string(data, "version", field, pattern=TALOS_VERSION, what="a Talos version (vX.Y.Z)"),
        schematic_id=reader.string(
            data,
            "schematicID",
            field,
            pattern=SCHEMATIC_ID,
            what="an Image Factory schematic ID (64 hex)",
        ),
        endpoint=reader.string(data, "endpoint", field, pattern=URL, what="an http(s) URL") if factory else None,
    )


def _os(reader: Reader, data: Mapping[str, Any], field: str, strict: Reader | None = None) -> OsSettings:
    talos = _talos(reader, data["talos"], f"{field}.talos", strict or reader) if "talos" in data else None
    os_image: OsImage | None = None
    if "kubevirt" in data:
        kubevirt = reader.mapping(data["kubevirt"] if data["kubevirt"] is not None else {}, f"{field}.kubevirt")
        if kubevirt is not None:
            reader.only(kubevirt, frozenset({"osImage"}), f"{field}.kubevirt")
            if "osImage" in kubevirt:
                path = f"{field}.kubevirt.osImage"
                raw = reader.mapping(kubevirt["osImage"] if kubevirt["osImage"] is not None else {}, path)
                if raw is not None:
                    reader.only(raw, frozenset({"builtin", "factory"}), path)
                    os_image = OsImage(
                        builtin=_source(reader, raw["builtin"], f"{path}.builtin", factory=False)
                        if "builtin" in raw
                        else None,
                        factory=_source(reader, raw["factory"], f"{path}.factory", factory=True)
                        if "factory" in raw
                        else None,
                    )
    template_tags: tuple[str, ...] | None = None
    if "proxmox" in data:
        proxmox = reader.mapping(data["proxmox"] if data["proxmox"] is not None else {}, f"{field}.proxmox")
        if proxmox is not None:
            reader.only(proxmox, frozenset({"templateTags"}), f"{field}.proxmox")
            template_tags = reader.string_list(proxmox, "templateTags", f"{field}.proxmox")
    return OsSettings(
        talos=talos,
        kernel_modules=_kernel_modules(reader, data, field),
        os_image=os_image,
        template_tags=template_tags,
    )


def parse_class_spec(spec: object, field: str = "spec") -> tuple[WorkerClassSpec, list[Violation]]:
    """Parse a WorkerClass ``spec``; image rules beyond shape live in admission."""
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    reader.only(data, _CLASS_KEYS, field)
    bootstrap = reader.string(data, "bootstrap", field, required=True) or ""
    if bootstrap and bootstrap not in BOOTSTRAPS:
        reader.invalid(f"{field}.bootstrap", "is not a bootstrap family; expected talos or kairos")
        bootstrap = ""
    image: FixedImage | None = None
    if "image" in data:
        raw = reader.mapping(data["image"] if data["image"] is not None else {}, f"{field}.image")
        if raw is not None:
            reader.only(raw, frozenset({"kubernetesVersion", "reference"}), f"{field}.image")
            image = FixedImage(
                kubernetes_version=reader.string(
                    raw,
                    "kubernetesVersion",
                    f"{field}.image",
                    pattern=KUBERNETES_PATCH,
                    what="an exact Kubernetes version (vX.Y.Z)",
                ),
                reference=reader.string(raw, "reference", f"{field}.image"),
            )
    return WorkerClassSpec(bootstrap=bootstrap, os=_os(reader, data, field), image=image), reader.violations


def _quantity(reader: Reader, data: Mapping[str, Any], key: str, field: str) -> str | None:
    """A chart quantity (``anyOf: [integer, string]`` with Kubernetes' quantity pattern)."""
    if key not in data or data[key] is None:
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | str):
        reader.invalid(f"{field}.{key}", f"must be a quantity (an integer or a string), not {type_name(value)}")
        return None
    text = str(value)
    if not QUANTITY.fullmatch(text):
        reader.invalid(f"{field}.{key}", "is not a Kubernetes quantity (like 4, 500m, 8Gi); the value is not shown")
        return None
    return text


def _gpus(reader: Reader, data: Mapping[str, Any], field: str) -> tuple[Gpu, ...]:
    gpus: list[Gpu] = []
    for path, item in reader.object_list(data, "gpus", field) or []:
        reader.only(item, frozenset({"name", "vgpu"}), path)
        name = reader.string(item, "name", path, required=True)
        vgpu = reader.boolean(item, "vgpu", path)
        if name:
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
    for name in sorted(allowed):
        value = reader.string(raw, name, f"{field}.{key}")
        if value is not None and name in raw and raw[name] is not None:
            out[name] = value
    return out


def parse_pool_spec(spec: object, field: str = "spec") -> tuple[PoolSpec, list[Violation]]:
    """Parse a pool's values: the chart's values plus the class-era keys (API.md section 1).

    Every key of the chart's ``values.schema.json`` is read with the chart's type (``Invalid``
    otherwise); what the chart checks at render time (durations, ``maxUnhealthy``, kubelet
    reservations, podCpu, half resources, instance types) is left to the chart's checks. A key
    neither the chart nor the class era knows is ``Invalid``. The raw values are kept verbatim.
    """
    reader = Reader()
    strict = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    reader.only(data, _POOL_KEYS, field)
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
    pool = PoolSpec(
        cluster=reader.string(data, "cluster", field, required=True),
        worker_class_name=reader.string(data, "workerClassName", field, pattern=NAME, what="a WorkerClass name"),
        version=version,
        min_replicas=reader.integer(data, "minReplicas", field),
        max_replicas=reader.integer(data, "maxReplicas", field),
        instance_type=reader.string(data, "instanceType", field),
        resources=_resources(reader, data, field),
        disk_size=_quantity(reader, data, "diskSize", field),
        storage_class=reader.string(data, "storageClass", field),
        roles=roles,
        labels=labels,
        taints=tuple(taints),
        max_unhealthy=reader.string(data, "maxUnhealthy", field),
        node_startup_timeout=reader.string(data, "nodeStartupTimeout", field),
        ready_unknown_timeout=reader.string(data, "readyUnknownTimeout", field),
        ready_false_timeout=reader.string(data, "readyFalseTimeout", field),
        gpus=_gpus(reader, data, field),
        ssh_keys=reader.string_list(data, "sshKeys", field),
        os=_os(reader, data, field, strict),
        max_node_provision_time=reader.string(data, "maxNodeProvisionTime", field),
        log_serial_console=reader.boolean(data, "logSerialConsole", field),
        pod_cpu_limit=_quantity(reader, data, "podCpuLimit", field),
        pod_cpu_request=_quantity(reader, data, "podCpuRequest", field),
        kubelet=_string_map(reader, data, "kubelet", KUBELET_KEYS, field),
        images=_string_map(reader, data, "images", frozenset({"kubectl"}), field),
        values=data,
        class_violations=tuple(strict.violations),
    )
    return pool, reader.violations


#: ComputePlane node groups: Cozystack's allowlist (``upstream-cozystack/computeplane``).
COMPUTE_PLANE_ALLOWLIST = frozenset(
    {
        "minReplicas",
        "maxReplicas",
        "instanceType",
        "diskSize",
        "storageClass",
        "roles",
        "resources",
        "gpus",
        "kubelet",
    }
)


def parse_node_group(group: object, field: str) -> tuple[PoolSpec, list[Violation]]:
    """Parse a ComputePlane node group: only allowlisted keys, rendered on the classless path."""
    reader = Reader()
    data = reader.mapping(group if group is not None else {}, field) or {}
    for key in data:
        if key not in COMPUTE_PLANE_ALLOWLIST:
            allowed = ", ".join(sorted(COMPUTE_PLANE_ALLOWLIST))
            reader.add(
                "NotAllowedInComputePlane",
                key_path(field, key),
                f"ComputePlane node groups keep the classless Talos path; allowed keys: {allowed}."
                " Use a standalone KubernetesNodes pool to select a worker class, version or Talos settings",
            )
    pool = PoolSpec(
        min_replicas=reader.integer(data, "minReplicas", field),
        max_replicas=reader.integer(data, "maxReplicas", field),
        instance_type=reader.string(data, "instanceType", field),
        resources=_resources(reader, data, field),
        disk_size=_quantity(reader, data, "diskSize", field),
        storage_class=reader.string(data, "storageClass", field),
        roles=reader.string_list(data, "roles", field) or (),
        gpus=_gpus(reader, data, field),
        kubelet=_string_map(reader, data, "kubelet", KUBELET_KEYS, field),
        values=data,
    )
    return pool, reader.violations


def _minor_map(reader: Reader, value: object, field: str) -> dict[str, Mapping[str, Any]]:
    data = reader.mapping(value if value is not None else {}, field) or {}
    out: dict[str, Mapping[str, Any]] = {}
    for minor, entry in data.items():
        path = key_path(field, minor)
        if not isinstance(minor, str) or not KUBERNETES_MINOR.fullmatch(minor):
            reader.invalid(path, "is not a minor version (vX.Y); the key is not shown")
            continue
        body = reader.mapping(entry, path)
        if body is not None:
            out[minor] = body
    return out


#: WorkerPlatform keys completed key by key from the embedded platform (``talos`` and ``kairos``
#: one level deeper: each of their own keys falls back on its own).
_PLATFORM_NESTED = frozenset({"talos", "kairos"})


def complete_platform_spec(spec: object, base: Mapping[str, Any] | None) -> object:
    """``spec`` with every key it leaves out taken from ``base`` (the embedded platform's spec).

    API.md section 1: without a WorkerPlatform the embedded defaults apply; a WorkerPlatform that
    sets only ``defaultWorkerClass`` changes only the default. A key that is present (even empty)
    is the hoster's own; a spec that is not a mapping is returned as it is (the reader says why).
    """
    if base is None or not isinstance(spec, Mapping):
        return spec if spec is not None or base is None else dict(base)
    merged: dict[str, Any] = dict(base)
    for key, value in spec.items():
        inherited = base.get(key)
        if value is None:
            continue  # null: left out
        if key in _PLATFORM_NESTED and isinstance(value, Mapping) and isinstance(inherited, Mapping):
            merged[key] = {**inherited, **{k: v for k, v in value.items() if v is not None}}
        else:
            merged[key] = value
    return merged




def parse_platform(
    spec: object, field: str = "spec", *, base: Mapping[str, Any] | None = None
) -> tuple[Platform, list[Violation]]:
    """A WorkerPlatform spec, completed key by key from ``base`` (by default the embedded
    platform's spec: API.md section 1, the keys a WorkerPlatform leaves out keep Cozystack's defaults)."""
    spec = complete_platform_spec(spec, embedded_platform_spec() if base is None else base)
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    reader.only(
        data, frozenset({"defaultWorkerClass", "kubernetesVersions", "talos", "kairos", "clusterValues"}), field
    )
    cluster_values: dict[str, Any] = {"cluster-domain": "cozy.local"}
    if "clusterValues" in data:
        raw_cluster = reader.mapping(
            data["clusterValues"] if data["clusterValues"] is not None else {}, f"{field}.clusterValues"
        )
        if raw_cluster is not None:
            cluster_values = dict(raw_cluster)
    versions: dict[str, str] = {}
    for minor, body in _minor_map(reader, data.get("kubernetesVersions"), f"{field}.kubernetesVersions").items():
        path = f"{field}.kubernetesVersions.{minor}"
        patch = reader.string(body, "patch", path, pattern=KUBERNETES_PATCH, what="a patch version (vX.Y.Z)")
        if patch and minor_of(patch) != minor:
            reader.invalid(f"{path}.patch", f"{patch} is not a patch of {minor}")
        elif patch:
            versions[minor] = patch
    talos = reader.mapping(data.get("talos") or {}, f"{field}.talos") or {}
    tpath = f"{field}.talos"
    reader.only(
        talos,
        frozenset(
            {
                "version",
                "schematicID",
                "imageFactoryURL",
                "installerRepository",
                "goldens",
                "supportMatrix",
            }
        ),
        tpath,
    )
    goldens: set[Golden] = set()
    for path, item in reader.object_list(talos, "goldens", tpath) or []:
        version = reader.string(item, "version", path, pattern=TALOS_VERSION, what="a Talos version", required=True)
        schematic = reader.string(
            item,
            "schematicID",
            path,
            pattern=SCHEMATIC_ID,
            what="a schematic ID (64 hex)",
            required=True,
        )
        if version and schematic:
            goldens.add(Golden(version, schematic))
    matrix: dict[str, tuple[str, str]] = {}
    for talos_minor, body in _minor_map(reader, talos.get("supportMatrix"), f"{tpath}.supportMatrix").items():
        path = f"{tpath}.supportMatrix.{talos_minor}"
        low = reader.string(body, "min", path, pattern=KUBERNETES_MINOR, what="a minor (vX.Y)", required=True)
        high = reader.string(body, "max", path, pattern=KUBERNETES_MINOR, what="a minor (vX.Y)", required=True)
        if low and high:
            matrix[talos_minor] = (low, high)
    kairos = reader.mapping(data.get("kairos") or {}, f"{field}.kairos") or {}
    reader.only(kairos, frozenset({"images"}), f"{field}.kairos")
    images: dict[str, KairosImage] = {}
    for minor, body in _minor_map(reader, kairos.get("images"), f"{field}.kairos.images").items():
        path = f"{field}.kairos.images.{minor}"
        reference = reader.string(body, "reference", path, required=True)
        patch = reader.string(
            body,
            "kubernetesVersion",
            path,
            pattern=KUBERNETES_PATCH,
            what="a patch version (vX.Y.Z)",
        )
        if reference:
            images[minor] = KairosImage(reference, patch or None)
    platform = Platform(
        default_worker_class=reader.string(data, "defaultWorkerClass", field, pattern=NAME, what="a class name")
        or "talos",
        kubernetes_versions=versions,
        talos_version=reader.string(talos, "version", tpath, pattern=TALOS_VERSION, what="a Talos version") or "",
        talos_schematic_id=reader.string(talos, "schematicID", tpath, pattern=SCHEMATIC_ID, what="a schematic ID")
        or "",
        talos_image_factory_url=reader.string(talos, "imageFactoryURL", tpath, pattern=URL, what="a URL") or "",
        talos_installer_repository=reader.string(
            talos, "installerRepository", tpath, pattern=REPOSITORY, what="a repository"
        )
        or "",
        goldens=frozenset(goldens),
        support_matrix=matrix,
        kairos_images=images,
        cluster_values=cluster_values,
    )
    return platform, reader.violations


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
    infrastructure = reader.string(data, "infrastructure", field) or "kubevirt"
    if infrastructure not in INFRASTRUCTURES:
        reader.invalid(f"{field}.infrastructure", "is not kubevirt or proxmox")
        infrastructure = "kubevirt"
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
