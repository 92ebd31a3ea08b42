"""A pool's effective settings in the legacy (classless) layout, and what that layout cannot hold.

Owns the two halves of "a classified Talos pool renders as the chart renders its restore
values" (API.md section 2):

- :func:`legacy_values`: the values the main ``kubernetes-nodes`` chart renders for the pool:
  the pool's stored values verbatim for a classless pool; for a classified one the stored
  values less the class-era keys (:data:`CLASS_ERA_KEYS`), with ``talos`` = the effective Talos
  settings the main chart knows (version, schematicID, imageFactoryURL, installerRepository,
  registryMirrors). These are exactly the values ``restore`` prints.
- :func:`class_era` : the effective settings the main chart cannot express, as the inputs the
  chart port takes for them in the upstream pull requests' shapes (kernel modules as PR 3571,
  a builtin golden clone or a non-default factory disk and the installer image as PR 3294, the
  Image Factory CA as PR 3797). Each carries the pool field that asked for it, so ``restore``
  can name the setting that keeps the pool from being restored without a rollout.

Its edge: an :class:`~workerclass.resolve.effective.Effective` in, plain values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.frozen import fast_init
from ..api.schema import CLASS_ERA_KEYS
from ..chart import factory_disk_url
from ..chart.values import copy_values
from ..resolve.effective import Effective, EffectiveTalos

__all__ = [
    "CLASS_ERA_KEYS",
    "ClassEra",
    "class_era",
    "default_factory_url",
    "legacy_values",
    "talos_values",
]

# The keys the class era adds to the chart's values (api.schema.CLASS_ERA_KEYS, declared once
# there); the main chart renders none of them, so a restore leaves them out (``talos.imageFactoryCA`` too).


def default_factory_url(talos: EffectiveTalos) -> str:
    """The disk the main chart imports for these Talos settings (``nodegroup.yaml``)."""
    return factory_disk_url(talos.image_factory_url, talos.schematic_id, talos.version)


def _mirrors(mirrors: Mapping[str, Any]) -> dict[str, Any]:
    """``registryMirrors`` as the chart passes it through: ``{host: {endpoints: [...], ...}}``."""
    out: dict[str, Any] = {}
    for host, mirror in mirrors.items():
        if isinstance(mirror, Mapping):
            out[host] = copy_values(dict(mirror))
        else:  # resolution's compact form: host -> endpoint URLs
            out[host] = {"endpoints": list(mirror)}
    return out


def talos_values(talos: EffectiveTalos) -> dict[str, Any]:
    """The effective Talos settings at the chart's ``talos.*`` paths (no CA: the main chart has none)."""
    return {
        "version": talos.version,
        "schematicID": talos.schematic_id,
        "imageFactoryURL": talos.image_factory_url,
        "installerRepository": talos.installer_repository,
        "registryMirrors": _mirrors(talos.registry_mirrors),
    }


def _values_as_written(effective: Effective) -> Mapping[str, Any]:
    """The pool's values as written (resolution carries them on the effective settings)."""
    return effective.values or effective.pool.values


def legacy_values(effective: Effective) -> dict[str, Any]:
    """The values the main chart renders for this pool (a copy; key order of the stored values).

    Classless: the stored values verbatim. Classified (Talos or Kairos): the stored values less
    :data:`CLASS_ERA_KEYS`, with ``talos`` written out from the effective settings (a Kairos
    pool has none: the chart's defaults fill the Talos parts, which a Kairos render drops).
    """
    values: dict[str, Any] = copy_values(dict(_values_as_written(effective)))
    if effective.legacy:
        return values
    for key in CLASS_ERA_KEYS:
        values.pop(key, None)
    # The Job's image is the platform's for a pool with a class (it runs as an account of the
    # management cluster): a stored override, refused at admission, never reaches the render.
    values.pop("images", None)
    if effective.talos is not None:
        talos = talos_values(effective.talos)
        stored = _values_as_written(effective).get("talos")
        if effective.origins.get("talos.registryMirrors") == "pool" and isinstance(stored, Mapping):
            # the pool's own map as written: the chart passes every mirror key through (skipFallback...)
            raw = stored.get("registryMirrors")
            if isinstance(raw, Mapping):
                talos["registryMirrors"] = copy_values(dict(raw))
        values["talos"] = talos
    else:
        values.pop("talos", None)
    return values


@fast_init
@dataclass(frozen=True, slots=True)
class ClassEra:
    """Effective settings beyond the main chart, with the pool field each one came from."""

    kernel_modules: tuple[dict[str, Any], ...] = ()  # PR 3571: [{name, parameters}]
    golden: str | None = None  # PR 3294 builtin: the golden DataVolume, ``namespace/name``
    factory_url: str | None = None  # PR 3294 factory: a disk URL other than the chart's default
    installer_image: str | None = None  # PR 3294: the installer follows the image source
    image_factory_ca: str | None = None  # PR 3797: trust for the CDI HTTP import only
    settings: tuple[str, ...] = ()  # the settings above, named for people

    @property
    def empty(self) -> bool:
        return not self.settings


def class_era(effective: Effective) -> ClassEra:
    """What this pool needs beyond its legacy values (nothing for a classless pool)."""
    talos = effective.talos
    if effective.legacy or talos is None or effective.bootstrap != "talos":
        return ClassEra()
    settings: list[str] = []

    def origin(key: str) -> str:
        where = effective.origins.get(key)
        return f" from {where}" if where else ""

    modules = tuple(module.as_dict() for module in effective.kernel_modules)
    if modules:
        names = ", ".join(str(module["name"]) for module in modules)
        settings.append(f"kernelModules ({names}){origin('kernelModules')}")
    golden = factory = installer = ca = None
    image = effective.image
    if effective.infrastructure == "kubevirt":
        if image.source == "builtin" and image.reference:
            golden = image.reference
            settings.append(f"kubevirt.osImage.builtin (golden {golden}){origin('image.source')}")
        elif image.source == "factory" and image.reference and image.reference != default_factory_url(talos):
            factory = image.reference
            settings.append(f"kubevirt.osImage.factory ({factory}){origin('image.source')}")
        if golden or factory:
            installer = effective.installer_image
        if image.source == "factory" and talos.image_factory_ca:
            ca = talos.image_factory_ca
            settings.append(f"talos.imageFactoryCA{origin('talos.imageFactoryCA')}")
    return ClassEra(
        kernel_modules=modules,
        golden=golden,
        factory_url=factory,
        installer_image=installer,
        image_factory_ca=ca,
        settings=tuple(settings),
    )
