"""The Kairos pool: what a Kairos worker refuses (Talos-only settings, Proxmox, more than one SSH
key), and its disk: a class's fixed image or the platform's image for the pool's minor.
"""

from __future__ import annotations

from ..model import DEFAULT_MIN_REPLICAS, Cluster, minor_of
from ..rules.keys import private_key_paths, public_key_problem
from ..state import ClassRecord, PoolRecord, State
from .chart import chart_context
from .effective import Effective, EffectiveImage
from .resolution import Resolution, infrastructure_of
from .versions import platform_map_patch

__all__ = ["resolve_kairos"]


def resolve_kairos(
    state: State,
    record: PoolRecord,
    class_record: ClassRecord | None,
    cluster: Cluster | None,
    minor: str,
    result: Resolution,
) -> Effective | None:
    """A Kairos pool: always through a class, on KubeVirt; a fixed image or the platform's."""
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
        patch = platform_map_patch(state, minor, field, result)
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
    if image is None or patch is None or result.denials or result.verdict:
        return None
    return Effective(
        kind=record.kind,
        namespace=record.namespace,
        name=record.name,
        cluster=record.cluster,
        class_name=class_record.name,
        bootstrap="kairos",
        infrastructure=infrastructure_of(cluster),
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
        chart_input=result.chart_input,  # kept when every chart check passed (_resolve_pool)
    )
