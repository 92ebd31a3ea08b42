"""Image source selection for a Talos pool on KubeVirt: a builtin golden disk or an Image Factory
URL, and the rule that the disk and the installer agree (``ArtifactConflict``).

Proxmox templates and Kairos images are selected with their families (:mod:`.talos`, :mod:`.kairos`).
"""

from __future__ import annotations

from ..api.names import ImageSource as SourceName
from ..api.paths import FieldPath
from ..chart import factory_disk_url
from ..model import Golden, ImageSource, OsImage, Platform
from .effective import EffectiveImage, EffectiveTalos
from .resolution import Resolution

__all__ = ["GOLDEN_NAMESPACE", "OS_IMAGE", "golden_reference", "resolve_kubevirt_image"]

GOLDEN_NAMESPACE = "cozy-public"
#: where a disk source is selected, below the values of a pool or the spec of a class
OS_IMAGE = FieldPath("kubevirt", "osImage")


def golden_reference(schematic_id: str, version: str) -> str:
    """The golden DataVolume a builtin source clones: ``cozy-public/talos-worker-<schematic>-<version>``."""
    return f"{GOLDEN_NAMESPACE}/talos-worker-{schematic_id}-{version}"


def resolve_kubevirt_image(
    platform: Platform,
    talos: EffectiveTalos,
    selection: OsImage,
    *,
    values: str,
    owner: str = "pool",
    result: Resolution,
) -> EffectiveImage | None:
    """Builtin golden or Image Factory disk; then the disk/installer compatibility check.

    ``values`` is the field path of the values that hold ``kubevirt.osImage`` and ``talos`` (a
    pool's ``spec`` or ``spec.values``, a class's ``spec``); ``owner`` says who selected the
    source (``pool``, ``class NAME``) for the messages.
    """
    field = f"{values}.{OS_IMAGE}"
    chosen = f" (selected by {owner})" if owner.startswith("class") else ""
    if selection.builtin is not None and selection.factory is not None:
        result.deny(
            "OsImageSourceConflict",
            field,
            f"set builtin or factory, not both{chosen}: osImage selects exactly one disk source "
            "({} = default factory path)",
        )
        return None
    kind: SourceName
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
        # the chart's one rule for the URL, so a source that adds nothing renders the chart's disk
        reference = factory_disk_url(endpoint, schematic, version)
        result.origins["image.reference"] = "Image Factory URL from endpoint, schematic and version"
    # A class's source that conflicts with a pool's own Talos value: the pool's field is the one to change.
    by_class = owner.startswith("class")

    def conflict_field(name: str) -> str:
        if by_class and result.origins.get(f"talos.{name}") == "pool":
            return f"{values}.talos.{name}"
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
