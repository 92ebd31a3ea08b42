"""WorkerPlatform: the singleton ``default``'s spec (the default class, the version maps, the
platform Talos defaults and goldens, the Kairos disks), completed key by key from the embedded
platform, and its parser. Key sets and patterns come from :mod:`workerclass.api.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.frozen import fast_init
from ..api.schema import PLATFORM_KAIROS, PLATFORM_SPEC, PLATFORM_TALOS, Map, Object, values_of
from ..builtin import embedded_platform_spec
from ..violations import Violation
from .reader import Reader, key_path
from .versions import minor_of

__all__ = ["Golden", "KairosImage", "Platform", "complete_platform_spec", "parse_platform"]


@fast_init
@dataclass(frozen=True, slots=True)
class Golden:
    version: str
    schematic_id: str


@fast_init
@dataclass(frozen=True, slots=True)
class KairosImage:
    reference: str
    kubernetes_version: str | None


@fast_init
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


def _read(reader: Reader, data: Mapping[str, Any], key: str, field: str, node: Object) -> str | None:
    """``data[key]`` as ``node`` declares it: its pattern and noun; required unless it may be supplied empty."""
    declared = node.string(key)
    return reader.string(data, key, field, pattern=declared.pattern, what=declared.what, required=not declared.empty)


_VERSIONS = PLATFORM_SPEC.map("kubernetesVersions")
_VERSION = values_of(_VERSIONS)
_GOLDEN = values_of(PLATFORM_TALOS.array("goldens"))
_MATRIX = PLATFORM_TALOS.map("supportMatrix")
_MATRIX_ENTRY = values_of(_MATRIX)
_IMAGES = PLATFORM_KAIROS.map("images")
_IMAGE = values_of(_IMAGES)


def _minor_map(reader: Reader, value: object, field: str, node: Map) -> dict[str, Mapping[str, Any]]:
    data = reader.mapping(value if value is not None else {}, field) or {}
    out: dict[str, Mapping[str, Any]] = {}
    pattern = node.key_pattern
    for minor, entry in data.items():
        path = key_path(field, minor)
        if not isinstance(minor, str) or (pattern is not None and not pattern.fullmatch(minor)):
            reader.invalid(path, f"is not {node.key_what}; the key is not shown")
            continue
        body = reader.mapping(entry, path)
        if body is not None:
            out[minor] = body
    return out


#: WorkerPlatform keys completed key by key from the embedded platform, and its object-typed keys
#: (``talos`` and ``kairos``) one level deeper: each of their own keys falls back on its own.
_PLATFORM_NESTED = frozenset(key for key, node in PLATFORM_SPEC.properties.items() if isinstance(node, Object))


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
    reader.only(data, PLATFORM_SPEC.keys, field)
    cluster_values: dict[str, Any] = {"cluster-domain": "cozy.local"}
    if "clusterValues" in data:
        raw_cluster = reader.mapping(
            data["clusterValues"] if data["clusterValues"] is not None else {}, f"{field}.clusterValues"
        )
        if raw_cluster is not None:
            cluster_values = dict(raw_cluster)
    versions: dict[str, str] = {}
    raw_versions = _minor_map(reader, data.get("kubernetesVersions"), f"{field}.kubernetesVersions", _VERSIONS)
    for minor, body in raw_versions.items():
        path = f"{field}.kubernetesVersions.{minor}"
        patch = _read(reader, body, "patch", path, _VERSION)
        if patch and minor_of(patch) != minor:
            reader.invalid(f"{path}.patch", f"{patch} is not a patch of {minor}")
        elif patch:
            versions[minor] = patch
    talos = reader.mapping(data.get("talos") or {}, f"{field}.talos") or {}
    tpath = f"{field}.talos"
    reader.only(talos, PLATFORM_TALOS.keys, tpath)
    goldens: set[Golden] = set()
    for path, item in reader.object_list(talos, "goldens", tpath) or []:
        version = _read(reader, item, "version", path, _GOLDEN)
        schematic = _read(reader, item, "schematicID", path, _GOLDEN)
        if version and schematic:
            goldens.add(Golden(version, schematic))
    matrix: dict[str, tuple[str, str]] = {}
    for talos_minor, body in _minor_map(reader, talos.get("supportMatrix"), f"{tpath}.supportMatrix", _MATRIX).items():
        path = f"{tpath}.supportMatrix.{talos_minor}"
        low = _read(reader, body, "min", path, _MATRIX_ENTRY)
        high = _read(reader, body, "max", path, _MATRIX_ENTRY)
        if low and high:
            matrix[talos_minor] = (low, high)
    kairos = reader.mapping(data.get("kairos") or {}, f"{field}.kairos") or {}
    reader.only(kairos, PLATFORM_KAIROS.keys, f"{field}.kairos")
    images: dict[str, KairosImage] = {}
    for minor, body in _minor_map(reader, kairos.get("images"), f"{field}.kairos.images", _IMAGES).items():
        path = f"{field}.kairos.images.{minor}"
        # the reference's pattern is the CRD's; here admission's reference rule reads it (its own codes)
        reference = reader.string(body, "reference", path, required=True)
        patch = _read(reader, body, "kubernetesVersion", path, _IMAGE)
        if reference:
            images[minor] = KairosImage(reference, patch or None)
    platform = Platform(
        default_worker_class=_read(reader, data, "defaultWorkerClass", field, PLATFORM_SPEC) or "talos",
        kubernetes_versions=versions,
        talos_version=_read(reader, talos, "version", tpath, PLATFORM_TALOS) or "",
        talos_schematic_id=_read(reader, talos, "schematicID", tpath, PLATFORM_TALOS) or "",
        talos_image_factory_url=_read(reader, talos, "imageFactoryURL", tpath, PLATFORM_TALOS) or "",
        talos_installer_repository=_read(reader, talos, "installerRepository", tpath, PLATFORM_TALOS) or "",
        goldens=frozenset(goldens),
        support_matrix=matrix,
        kairos_images=images,
        cluster_values=cluster_values,
    )
    return platform, reader.violations
