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

from ..violations import Violation
from .reader import (
    DURATION,
    KUBERNETES_MINOR,
    KUBERNETES_PATCH,
    MODULE_NAME,
    NAME,
    PERCENT,
    QUANTITY,
    REPOSITORY,
    SCHEMATIC_ID,
    TALOS_VERSION,
    URL,
    Reader,
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
COMPUTE_PLANE_ALLOWLIST = frozenset(
    {"minReplicas", "maxReplicas", "instanceType", "ephemeralStorage", "resources", "roles", "gpus"}
)


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
    max_unhealthy: int | str | None = None
    node_startup_timeout: str | None = None
    ready_unknown_timeout: str | None = None
    ready_false_timeout: str | None = None
    gpus: tuple[Gpu, ...] = ()
    ssh_keys: tuple[str, ...] | None = None
    os: OsSettings = field(default_factory=OsSettings)


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


@dataclass(frozen=True, slots=True)
class Cluster:
    """The parent Kubernetes app: only its control-plane minor and infrastructure matter."""

    namespace: str
    name: str
    version: str | None = None
    infrastructure: str = "kubevirt"


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
_POOL_KEYS = (
    frozenset(
        {
            "cluster",
            "workerClassName",
            "version",
            "minReplicas",
            "maxReplicas",
            "instanceType",
            "resources",
            "diskSize",
            "storageClass",
            "roles",
            "labels",
            "taints",
            "maxUnhealthy",
            "nodeStartupTimeout",
            "readyUnknownTimeout",
            "readyFalseTimeout",
            "gpus",
            "sshKeys",
        }
    )
    | _OS_KEYS
)
PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----"
#: Label prefixes that are Cluster API's own: its selectors and topology use them. (Its
#: node.cluster.x-k8s.io/ prefix is the one it copies to Nodes, and stays open to pools.)
RESERVED_LABEL_PREFIXES = frozenset({"cluster.x-k8s.io", "topology.cluster.x-k8s.io"})
#: A role becomes the label ``node-role.kubernetes.io/<role>``: a DNS name of at most 63 characters.
ROLE = re.compile(r"^(?=.{1,63}$)[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def _talos(reader: Reader, value: object, field: str) -> TalosSettings | None:
    data = reader.mapping(value if value is not None else {}, field)
    if data is None:
        return None
    reader.only(data, _TALOS_KEYS, field)
    ca = reader.string(data, "imageFactoryCA", field)
    if ca and PEM_CERTIFICATE not in ca and "PRIVATE KEY" not in ca:
        reader.invalid(f"{field}.imageFactoryCA", "must hold PEM certificate(s) (-----BEGIN CERTIFICATE-----)")
    return TalosSettings(
        version=reader.string(data, "version", field, pattern=TALOS_VERSION, what="a Talos version (vX.Y.Z)"),
        schematic_id=reader.string(
            data,
            "schematicID",
            field,
            pattern=SCHEMATIC_ID,
            what="an Image Factory schematic ID (64 hex)",
        ),
        image_factory_url=reader.string(data, "imageFactoryURL", field, pattern=URL, what="an http(s) URL"),
        image_factory_ca=ca,
        installer_repository=reader.string(
            data,
            "installerRepository",
            field,
            pattern=REPOSITORY,
            what="an image repository without tag",
        ),
        registry_mirrors=_mirrors(reader, data, f"{field}.registryMirrors"),
    )


def _mirrors(reader: Reader, data: Mapping[str, Any], field: str) -> dict[str, tuple[str, ...]] | None:
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
        path = f"{field}.{registry}"
        body = reader.mapping(entry, path)
        if body is None:
            continue
        reader.only(body, frozenset({"endpoints"}), path)
        endpoints = reader.string_list(body, "endpoints", path, pattern=URL, what="an http(s) URL")
        if not endpoints:
            reader.invalid(f"{path}.endpoints", "needs at least one mirror endpoint URL")
            continue
        out[str(registry)] = endpoints
    return out


def _kernel_modules(reader: Reader, data: Mapping[str, Any], field: str) -> tuple[KernelModule, ...] | None:
    items = reader.object_list(data, "kernelModules", field)
    if items is None:
        return None
    out: list[KernelModule] = []
    for path, item in items:
        reader.only(item, frozenset({"name", "parameters"}), path)
        name = reader.string(item, "name", path, pattern=MODULE_NAME, what="a kernel module name", required=True)
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


def _os(reader: Reader, data: Mapping[str, Any], field: str) -> OsSettings:
    talos = _talos(reader, data["talos"], f"{field}.talos") if "talos" in data else None
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
        reader.invalid(
            f"{field}.bootstrap",
            f"{bootstrap!r} is not a bootstrap family; expected talos or kairos",
        )
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


def _pool_body(reader: Reader, data: Mapping[str, Any], field: str) -> dict[str, Any]:
    """The fields every pool shape shares (standalone pools and ComputePlane node groups)."""
    out: dict[str, Any] = {
        "min_replicas": reader.integer(data, "minReplicas", field),
        "max_replicas": reader.integer(data, "maxReplicas", field),
        "instance_type": reader.string(data, "instanceType", field, pattern=NAME, what="an instance type name"),
        "roles": reader.string_list(data, "roles", field, pattern=ROLE, what="a role name (at most 63 characters)")
        or (),
    }
    if "resources" in data and data["resources"] is not None:
        raw = reader.mapping(data["resources"], f"{field}.resources")
        if raw is not None:
            reader.only(raw, frozenset({"cpu", "memory"}), f"{field}.resources")
            cpu = _quantity(reader, raw, "cpu", f"{field}.resources")
            memory = _quantity(reader, raw, "memory", f"{field}.resources")
            if (cpu is None) != (memory is None):
                reader.invalid(f"{field}.resources", "set both cpu and memory, or neither")
            elif cpu is not None and memory is not None:
                out["resources"] = Resources(cpu, memory)
    gpus: list[Gpu] = []
    for path, item in reader.object_list(data, "gpus", field) or []:
        reader.only(item, frozenset({"name", "vgpu"}), path)
        name = reader.string(item, "name", path, required=True)
        vgpu = reader.boolean(item, "vgpu", path)
        if name:
            gpus.append(Gpu(name, bool(vgpu)))
    out["gpus"] = tuple(gpus)
    return out


def _quantity(reader: Reader, data: Mapping[str, Any], key: str, field: str) -> str | None:
    if key not in data or data[key] is None:
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        reader.invalid(f"{field}.{key}", f"must be a quantity, not {type_name(value)}")
        return None
    text = str(value)
    if not QUANTITY.match(text):
        reader.invalid(f"{field}.{key}", f"{text!r} is not a Kubernetes quantity (like 4, 500m, 8Gi)")
        return None
    return text


def parse_pool_spec(spec: object, field: str = "spec") -> tuple[PoolSpec, list[Violation]]:
    """Parse a pool's values. Unknown fields and bad formats become ``Invalid`` violations."""
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    reader.only(data, _POOL_KEYS, field)
    body = _pool_body(reader, data, field)
    version = reader.string(data, "version", field)
    if version and not KUBERNETES_MINOR.match(version):
        message = f"{version!r} is not a Kubernetes minor (vX.Y)"
        if KUBERNETES_PATCH.match(version):
            message += (
                "; pools select a minor only: the exact patch comes from the platform version map"
                " or from the class's fixed image"
            )
        reader.invalid(f"{field}.version", message)
        version = None
    labels: dict[str, str] = {}
    if "labels" in data and data["labels"] is not None:
        raw_labels = reader.mapping(data["labels"], f"{field}.labels")
        for key, value in (raw_labels or {}).items():
            path = f"{field}.labels.{key}"
            key_problem = label_key_problem(key) if isinstance(key, str) else f"{key!r} is not a valid label key"
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
            reader.invalid(
                f"{path}.effect",
                f"{effect!r} is not one of NoSchedule, PreferNoSchedule, NoExecute",
            )
        elif taint_key and (key_problem := label_key_problem(taint_key)) is not None:
            reader.invalid(f"{path}.key", key_problem.replace("label key", "taint key"))
        elif (
            taint_value
            and not looks_private(taint_value)
            and (value_problem := label_value_problem(taint_value)) is not None
        ):
            reader.invalid(f"{path}.value", value_problem.replace("label value", "taint value"))
        elif taint_key and effect:
            taints.append(Taint(taint_key, taint_value, effect))
    max_unhealthy: int | str | None = None
    if "maxUnhealthy" in data and data["maxUnhealthy"] is not None:
        value = data["maxUnhealthy"]
        if isinstance(value, bool) or not isinstance(value, int | str):
            reader.invalid(
                f"{field}.maxUnhealthy",
                f"must be an integer or a percentage, not {type_name(value)}",
            )
        elif isinstance(value, str) and not (PERCENT.match(value) or value.isdigit()):
            reader.invalid(f"{field}.maxUnhealthy", f"{value!r} is not an integer or a percentage like 50%")
        elif isinstance(value, int) and value < 0:
            reader.invalid(f"{field}.maxUnhealthy", "must not be negative")
        else:
            max_unhealthy = int(value) if isinstance(value, str) and value.isdigit() else value
    duration = "a duration like 20m or 300s"
    ssh_keys = reader.string_list(data, "sshKeys", field)
    pool = PoolSpec(
        cluster=reader.string(data, "cluster", field, pattern=NAME, what="a Kubernetes app name", required=True),
        worker_class_name=reader.string(data, "workerClassName", field, pattern=NAME, what="a WorkerClass name"),
        version=version,
        disk_size=_quantity(reader, data, "diskSize", field),
        storage_class=reader.string(data, "storageClass", field, pattern=NAME, what="a StorageClass name"),
        labels=labels,
        taints=tuple(taints),
        max_unhealthy=max_unhealthy,
        ssh_keys=ssh_keys,
        os=_os(reader, data, field),
        node_startup_timeout=reader.string(data, "nodeStartupTimeout", field, pattern=DURATION, what=duration),
        ready_unknown_timeout=reader.string(data, "readyUnknownTimeout", field, pattern=DURATION, what=duration),
        ready_false_timeout=reader.string(data, "readyFalseTimeout", field, pattern=DURATION, what=duration),
        **body,
    )
    return pool, reader.violations


def parse_node_group(group: object, field: str) -> tuple[PoolSpec, list[Violation]]:
    """Parse a ComputePlane node group: only allowlisted keys, rendered on the classless path."""
    reader = Reader()
    data = reader.mapping(group if group is not None else {}, field) or {}
    for key in data:
        if key not in COMPUTE_PLANE_ALLOWLIST:
            allowed = ", ".join(sorted(COMPUTE_PLANE_ALLOWLIST))
            reader.add(
                "NotAllowedInComputePlane",
                f"{field}.{key}",
                f"ComputePlane node groups keep the classless Talos path; allowed keys: {allowed}."
                " Use a standalone KubernetesNodes pool to select a worker class, version or Talos settings",
            )
    body = _pool_body(reader, data, field)
    return PoolSpec(disk_size=_quantity(reader, data, "ephemeralStorage", field), **body), reader.violations


def _minor_map(reader: Reader, value: object, field: str) -> dict[str, Mapping[str, Any]]:
    data = reader.mapping(value if value is not None else {}, field) or {}
    out: dict[str, Mapping[str, Any]] = {}
    for minor, entry in data.items():
        path = f"{field}.{minor}"
        if not isinstance(minor, str) or not KUBERNETES_MINOR.match(minor):
            reader.invalid(path, f"{minor!r} is not a minor version (vX.Y)")
            continue
        body = reader.mapping(entry, path)
        if body is not None:
            out[minor] = body
    return out


def parse_platform(spec: object, field: str = "spec") -> tuple[Platform, list[Violation]]:
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    reader.only(data, frozenset({"defaultWorkerClass", "kubernetesVersions", "talos", "kairos"}), field)
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
    )
    return platform, reader.violations


def parse_cluster(namespace: str, name: str, spec: object, field: str = "spec") -> tuple[Cluster, list[Violation]]:
    reader = Reader()
    data = reader.mapping(spec if spec is not None else {}, field) or {}
    version = reader.string(data, "version", field)
    if version and not KUBERNETES_MINOR.match(version):
        # The parent app may carry a patch; only its minor matters here.
        if KUBERNETES_PATCH.match(version):
            version = minor_of(version)
        else:
            reader.invalid(f"{field}.version", f"{version!r} is not a Kubernetes minor (vX.Y)")
            version = None
    infrastructure = reader.string(data, "infrastructure", field) or "kubevirt"
    if infrastructure not in INFRASTRUCTURES:
        reader.invalid(f"{field}.infrastructure", f"{infrastructure!r} is not kubevirt or proxmox")
        infrastructure = "kubevirt"
    return Cluster(namespace, name, version or None, infrastructure), reader.violations
