"""Talos settings and the Talos pool: the Talos scalars and registry mirrors (a pool value over the
class baseline over the platform), the kernel modules, and a Talos pool's disk, installer and patch.

A classless pool (the legacy path) takes the chart's ``values.yaml`` where a classified pool takes
the platform, so it resolves as the chart renders it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.names import Infrastructure
from ..api.patterns import TALOS_VERSION
from ..model import (
    Cluster,
    KernelModule,
    OsImage,
    OsSettings,
    Platform,
    PoolSpec,
    TalosSettings,
    WorkerClassSpec,
    minor_of,
)
from ..state import ClassRecord, PoolRecord, State
from .chart import chart_context, chart_talos_defaults
from .checks import check_talos_vgpu
from .effective import Effective, EffectiveImage, EffectiveTalos
from .image import resolve_kubevirt_image
from .resolution import Resolution, class_origin
from .versions import classless_patch, minor_key, platform_map_patch, talos_patch, warn_platform_patch

__all__ = ["NVIDIA_MODULES", "mirror_map", "resolve_kernel_modules", "resolve_talos", "resolve_talos_pool"]

NVIDIA_MODULES = (
    KernelModule("nvidia", ("NVreg_NvLinkDisable=1",)),
    KernelModule("nvidia_uvm"),
    KernelModule("nvidia_drm"),
    KernelModule("nvidia_modeset"),
)


def mirror_map(parsed: Mapping[str, tuple[str, ...]], values: Any) -> dict[str, Mapping[str, Any]]:
    """The registry mirrors the model read (``parsed``), each with its map as written in ``values``.

    ``values`` holds ``talos.registryMirrors`` (a pool's values, a class's spec). A registry whose
    written map cannot be found keeps the parsed endpoints (``{"endpoints": [...]}``).
    """
    # (``type(x) is dict`` first: an ABC check is a Python frame, and these are dicts from JSON)
    talos = values.get("talos") if type(values) is dict or isinstance(values, Mapping) else None
    written = talos.get("registryMirrors") if type(talos) is dict or isinstance(talos, Mapping) else None
    raw: dict[str, Any] = {}
    if type(written) is dict or isinstance(written, Mapping):
        raw = {str(key): body for key, body in written.items()}
    out: dict[str, Mapping[str, Any]] = {}
    for registry, endpoints in parsed.items():
        body = raw.get(registry)
        # Not copied: values are read-only here, and a mirror map may nest arbitrarily deep
        # (such a pool is refused for it; resolving it must not recurse).
        out[registry] = body if type(body) is dict or isinstance(body, Mapping) else {"endpoints": list(endpoints)}
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


def resolve_kernel_modules(
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


def resolve_talos_pool(
    state: State,
    record: PoolRecord,
    class_record: ClassRecord | None,
    cluster: Cluster | None,
    minor: str,
    result: Resolution,
    infrastructure: Infrastructure,
) -> Effective | None:
    """A Talos pool (classified, classless or a node group) on KubeVirt or Proxmox."""
    field, spec, platform = record.field, record.spec, state.platform
    baseline: WorkerClassSpec | None = class_record.spec if class_record else None
    baseline_os = baseline.os if baseline else None
    origin = class_origin(class_record)

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
    kernel_modules = resolve_kernel_modules(spec, baseline_os, origin, result, classified=class_record is not None)

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
        image = resolve_kubevirt_image(platform, talos, selection, values=field, owner=selection_origin, result=result)

    if class_record is None and record.kind != "ComputePlane":
        patch = classless_patch(minor, field, result)
        if patch is not None:
            warn_platform_patch(state, minor, patch, result)
    else:
        patch = talos_patch(
            state,
            minor,
            platform_map_patch(state, minor, field, result, standalone=record.kind != "ComputePlane"),
            result,
        )
    classless = class_record is None and record.kind != "ComputePlane"
    # A classless pool meets the chart's own support-matrix check (chart_failures) instead.
    if not classless and TALOS_VERSION.fullmatch(talos.version) and platform.support_matrix:
        talos_minor = minor_of(talos.version)
        bounds = platform.support_matrix.get(talos_minor)
        # As the chart: only the Talos minors the matrix lists are checked.
        runs = bounds is None or minor_key(bounds[0]) <= minor_key(minor) <= minor_key(bounds[1])
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
    if image is None or patch is None or result.denials or result.verdict:
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
        chart_input=result.chart_input,  # kept when every chart check passed (_resolve_pool)
    )
