"""Rules the lead chose where API.md is open: platform Kairos images (missing for a supported
minor, a declared patch that disagrees with the version map, an unpinned reference), a fixed image on a
Talos class, and the warning when the platform default changes."""

from __future__ import annotations

from tests.builders import (
    FIXED_REFERENCE,
    PLATFORM_KAIROS_135,
    has_denial,
    make_class,
    make_platform,
    make_pool,
    make_state,
)
from workerclass import admit, resolve


def _platform_with_images(images: dict[str, dict[str, str]]) -> dict[str, object]:
    platform = make_platform()  # a fresh dict each call
    platform["spec"]["kairos"] = {"images": images}  # type: ignore[index]
    return platform


def test_minor_in_the_map_without_a_platform_kairos_image_is_unsupported() -> None:
    state = make_state(platform=_platform_with_images({}))
    decision = admit(state, "CREATE", make_pool(workerClassName="kairos", version="v1.35"))
    assert has_denial(decision.denials, "UnsupportedVersion", "spec.version"), decision.denials


def test_platform_image_pools_follow_the_map_patch_and_warn_when_the_image_declares_another() -> None:
    """API.md section 2: "Kubernetes patch: the platform map's patch for the pool's minor"."""
    images = {"v1.35": {"reference": PLATFORM_KAIROS_135, "kubernetesVersion": "v1.35.1"}}
    state = make_state(platform=_platform_with_images(images))
    pool = make_pool(workerClassName="kairos", version="v1.35")
    decision = admit(state, "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any("declares Kubernetes v1.35.1" in warning for warning in decision.warnings), decision.warnings
    assert resolve(state, pool).kubernetes_version == "v1.35.6"  # the map's patch


def test_matching_platform_image_is_allowed_with_the_experimental_warning() -> None:
    decision = admit(make_state(), "CREATE", make_pool(workerClassName="kairos", version="v1.35"))
    assert decision.allowed, decision.denials
    assert any("experimental" in warning for warning in decision.warnings)


def test_unpinned_platform_kairos_image_is_refused_on_the_platform() -> None:
    images = {"v1.35": {"reference": "ghcr.io/cozystack/kairos-worker:v1.35", "kubernetesVersion": "v1.35.6"}}
    platform = _platform_with_images(images)
    decision = admit(make_state(platform=platform), "CREATE", platform)
    assert has_denial(decision.denials, "ImageNotPinned", "spec.kairos.images.v1.35.reference"), decision.denials
    pinned = make_platform()
    assert admit(make_state(platform=pinned), "CREATE", pinned).allowed


def test_a_fixed_image_on_a_talos_class_is_invalid() -> None:
    talos_with_image = make_class("talos-fixed", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE})
    decision = admit(make_state(), "CREATE", talos_with_image)
    assert has_denial(decision.denials, "Invalid", "spec.image"), decision.denials


def test_changing_the_platform_default_warns_that_stored_pools_keep_their_class() -> None:
    old, new = make_platform(), make_platform(defaultWorkerClass="kairos")
    decision = admit(make_state(platform=old), "UPDATE", new, old)
    assert decision.allowed, decision.denials
    assert any("does not retarget stored pools" in warning for warning in decision.warnings), decision.warnings
    same = admit(make_state(platform=old), "UPDATE", make_platform(), old)
    assert not any("retarget" in warning for warning in same.warnings)


def test_a_map_change_moves_platform_image_pools_and_never_fixed_image_pools() -> None:
    versions = {minor: {"patch": patch} for minor, patch in make_platform()["spec"]["kubernetesVersions"].items()}  # type: ignore[index]
    versions["v1.35"] = {"patch": "v1.35.7"}
    state = make_state(platform=make_platform(kubernetesVersions=versions))
    platform_pool = make_pool(workerClassName="kairos", version="v1.35", minReplicas=1)
    fixed_pool = make_pool(workerClassName="kairos-example-v1-35-6-r1", version="v1.35", minReplicas=1)
    assert resolve(state, platform_pool).kubernetes_version == "v1.35.7"
    assert resolve(state, fixed_pool).kubernetes_version == "v1.35.6"
