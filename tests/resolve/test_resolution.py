"""The resolution table of API.md section 2 and the design page's "Talos overrides and image
selection": class baseline, then pool overrides, then image selection and compatibility.

"Supplied" means the key is present in the pool spec, even with an empty value, so every table
tells unset (key absent), empty (``""``, ``{}``, ``[]``) and set apart.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    ABSENT,
    CERTIFICATE,
    CERTIFICATE_2,
    CHART_FACTORY_URL,
    CHART_SCHEMATIC,
    CLUSTER,
    FACTORY_URL,
    FIXED_REFERENCE,
    INSTALLER_REPOSITORY,
    KAIROS_FIXED,
    KUBERNETES_VERSIONS,
    NVIDIA_GPU,
    NVIDIA_MODULES,
    PLATFORM_KAIROS_134,
    PLATFORM_KAIROS_135,
    PRIVATE_KEY,
    PROXMOX_CLUSTER,
    SCHEMATIC_A,
    SCHEMATIC_B,
    SCHEMATIC_C,
    TALOS_VERSION,
    factory_url,
    golden_name,
    has_denial,
    installer_image,
    make_class,
    make_cluster,
    make_platform,
    make_pool,
    make_release,
    make_state,
    refused,
    resolved,
)
from workerclass.resolve import resolve

BASE = "base"  # the class every table row selects


def _state(class_spec: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    spec = {} if class_spec is None else class_spec
    return make_state(classes=[make_class(BASE, **spec), KAIROS_FIXED], **kwargs)


# --------------------------------------------------------------------------- Talos scalars

#: setting -> (platform value, class value, pool value)
SCALARS = {
    "version": (TALOS_VERSION, "v1.13.5", "v1.13.4"),
    "schematicID": (SCHEMATIC_A, SCHEMATIC_B, SCHEMATIC_C),
    "imageFactoryURL": (FACTORY_URL, "https://class-factory.example", "https://pool-factory.example"),
    "imageFactoryCA": ("", CERTIFICATE, CERTIFICATE_2),
    "installerRepository": (INSTALLER_REPOSITORY, "class.example/installer", "pool.example/installer"),
}

#: (id, class supplies, pool supplies, which value wins); "unset" = key absent, "empty" = "".
SCALAR_ROWS = [
    ("unset-unset-platform", "unset", "unset", "platform"),
    ("set-unset-class", "set", "unset", "class"),
    ("set-set-pool-replaces", "set", "set", "pool"),
    ("set-empty-not-replaced-by-class", "set", "empty", "platform"),
    ("empty-unset-platform", "empty", "unset", "platform"),
    ("unset-set-pool", "unset", "set", "pool"),
    ("unset-empty-platform", "unset", "empty", "platform"),
    ("empty-set-pool", "empty", "set", "pool"),
]


def _supplied(how: str, value: str) -> Any:
    return {"unset": ABSENT, "empty": "", "set": value}[how]


@pytest.mark.parametrize("setting", list(SCALARS), ids=list(SCALARS))
@pytest.mark.parametrize(
    ("by_class", "by_pool", "winner"), [row[1:] for row in SCALAR_ROWS], ids=[r[0] for r in SCALAR_ROWS]
)
def test_talos_scalar(setting: str, by_class: str, by_pool: str, winner: str) -> None:
    platform_value, class_value, pool_value = SCALARS[setting]
    class_talos = {k: v for k, v in {setting: _supplied(by_class, class_value)}.items() if v is not ABSENT}
    pool_talos = {k: v for k, v in {setting: _supplied(by_pool, pool_value)}.items() if v is not ABSENT}
    state = _state({"talos": class_talos})
    effective = resolved(state, make_pool(workerClassName=BASE, talos=pool_talos))

    expected = {"platform": platform_value, "class": class_value, "pool": pool_value}[winner]
    talos = effective["talos"]
    assert talos[setting] == expected
    # Every other setting keeps the platform value, and the disk and installer follow effective Talos.
    for other, (platform_other, _, _) in SCALARS.items():
        if other != setting:
            assert talos[other] == platform_other, other
    assert effective["image"]["source"] == "factory"
    assert effective["image"]["reference"] == factory_url(
        talos["schematicID"], talos["version"], talos["imageFactoryURL"]
    )
    assert effective["installerImage"] == installer_image(
        talos["schematicID"], talos["version"], talos["installerRepository"]
    )


@pytest.mark.parametrize(
    "pool_talos",
    [ABSENT, {}],
    ids=["block-absent", "block-empty"],
)  # a null block is refused (Helm drops the chart's talos defaults with it): tests/admission/test_spellings.py
def test_a_pool_talos_block_without_keys_keeps_the_class_baseline(pool_talos: Any) -> None:
    class_talos = {name: values[1] for name, values in SCALARS.items()}
    state = _state({"talos": class_talos})
    effective = resolved(state, make_pool(workerClassName=BASE, talos=pool_talos))
    assert {k: effective["talos"][k] for k in SCALARS} == class_talos


def test_all_scalars_supplied_empty_fall_back_to_the_platform_not_the_class() -> None:
    class_talos = {name: values[1] for name, values in SCALARS.items()}
    state = _state({"talos": class_talos})
    effective = resolved(state, make_pool(workerClassName=BASE, talos=dict.fromkeys(SCALARS, "")))
    assert {k: effective["talos"][k] for k in SCALARS} == {k: v[0] for k, v in SCALARS.items()}


# --------------------------------------------------------------------------- registryMirrors


M_CLASS = {
    "docker.io": {"endpoints": ["https://m1.example", "https://m1b.example"]},
    "ghcr.io": {"endpoints": ["https://m2.example"]},
}
M_POOL = {"docker.io": {"endpoints": ["https://p.example"]}}
M_QUAY = {"quay.io": {"endpoints": ["https://q.example"]}}

MIRROR_ROWS = [
    ("unset-unset-empty", ABSENT, ABSENT, {}),
    ("class-only", M_CLASS, ABSENT, M_CLASS),
    ("pool-replaces-whole-map", M_CLASS, M_POOL, M_POOL),
    ("pool-other-registry-not-merged", M_CLASS, M_QUAY, M_QUAY),
    ("pool-empty-clears", M_CLASS, {}, {}),
    ("pool-only", ABSENT, M_POOL, M_POOL),
    ("class-empty", {}, ABSENT, {}),
    ("class-empty-pool-set", {}, M_QUAY, M_QUAY),
]


@pytest.mark.parametrize(
    ("by_class", "by_pool", "expected"), [r[1:] for r in MIRROR_ROWS], ids=[r[0] for r in MIRROR_ROWS]
)
def test_registry_mirrors(by_class: Any, by_pool: Any, expected: dict[str, Any]) -> None:
    class_talos = {} if by_class is ABSENT else {"registryMirrors": by_class}
    pool_talos = {} if by_pool is ABSENT else {"registryMirrors": by_pool}
    state = _state({"talos": class_talos})
    effective = resolved(state, make_pool(workerClassName=BASE, talos=pool_talos))
    assert effective["talos"]["registryMirrors"] == expected


def test_registry_mirrors_survive_other_pool_talos_overrides() -> None:
    state = _state({"talos": {"registryMirrors": M_CLASS}})
    effective = resolved(state, make_pool(workerClassName=BASE, talos={"version": "v1.13.4"}))
    assert effective["talos"]["registryMirrors"] == M_CLASS


# --------------------------------------------------------------------------- kernelModules

NVME = [{"name": "nvme_tcp"}]
NVME_OUT = [{"name": "nvme_tcp", "parameters": []}]
DRBD = [{"name": "drbd", "parameters": ["usermode_helper=disabled"]}]
AMD_GPU = {"name": "amd.com/MI300X", "vgpu": False}

MODULE_ROWS = [
    ("nothing-no-gpu", ABSENT, ABSENT, [], []),
    ("nvidia-rule", ABSENT, ABSENT, [NVIDIA_GPU], NVIDIA_MODULES),
    (
        "nvidia-rule-two-gpus-once",
        ABSENT,
        ABSENT,
        [NVIDIA_GPU, {**NVIDIA_GPU, "name": "nvidia.com/GA100"}],
        NVIDIA_MODULES,
    ),
    ("nvidia-rule-mixed-gpus", ABSENT, ABSENT, [AMD_GPU, NVIDIA_GPU], NVIDIA_MODULES),
    ("no-rule-for-other-vendors", ABSENT, ABSENT, [AMD_GPU], []),
    ("class-list", NVME, ABSENT, [], NVME_OUT),
    ("class-list-blocks-nvidia-rule", NVME, ABSENT, [NVIDIA_GPU], NVME_OUT),
    ("class-empty-list-blocks-nvidia-rule", [], ABSENT, [NVIDIA_GPU], []),
    ("pool-replaces-class", NVME, DRBD, [], DRBD),
    ("pool-empty-disables", NVME, [], [NVIDIA_GPU], []),
    ("pool-empty-blocks-nvidia-rule", ABSENT, [], [NVIDIA_GPU], []),
    ("pool-list-blocks-nvidia-rule", ABSENT, NVME, [NVIDIA_GPU], NVME_OUT),
    ("pool-list-not-merged-with-nvidia", NVME, DRBD, [NVIDIA_GPU], DRBD),
]


@pytest.mark.parametrize(
    ("by_class", "by_pool", "gpus", "expected"), [r[1:] for r in MODULE_ROWS], ids=[r[0] for r in MODULE_ROWS]
)
def test_kernel_modules(by_class: Any, by_pool: Any, gpus: list[Any], expected: list[Any]) -> None:
    state = _state({} if by_class is ABSENT else {"kernelModules": by_class})
    effective = resolved(state, make_pool(workerClassName=BASE, kernelModules=by_pool, gpus=gpus))
    assert effective["kernelModules"] == expected


def test_no_nvidia_rule_on_a_classless_pool() -> None:
    """API.md section 2: the rule runs only for classified pools; the chart's legacy render loads none."""
    effective = resolved(make_state(), make_pool(workerClassName=ABSENT, gpus=[NVIDIA_GPU]))
    assert effective["class"] is None
    assert effective["kernelModules"] == []


def test_kernel_modules_are_talos_only() -> None:
    effective = resolved(make_state(), make_pool(workerClassName="kairos", gpus=[NVIDIA_GPU]))
    assert effective["kernelModules"] == []


# --------------------------------------------------------------------------- KubeVirt osImage

BUILTIN_A = ("builtin", golden_name(SCHEMATIC_A, TALOS_VERSION))
FACTORY_A = ("factory", factory_url(SCHEMATIC_A, TALOS_VERSION))
CLASS_EP = "https://class-endpoint.example"
POOL_EP = "https://pool-endpoint.example"

#: (id, class spec, pool overrides, (source, reference))
OS_IMAGE_ROWS = [
    ("absent-no-class-source-default-factory", {}, {}, FACTORY_A),
    ("absent-class-empty-source-default-factory", {"kubevirt": {"osImage": {}}}, {}, FACTORY_A),
    ("absent-class-builtin", {"kubevirt": {"osImage": {"builtin": {}}}}, {}, BUILTIN_A),
    (
        "absent-class-factory",
        {"kubevirt": {"osImage": {"factory": {"endpoint": CLASS_EP}}}},
        {},
        ("factory", factory_url(SCHEMATIC_A, TALOS_VERSION, CLASS_EP)),
    ),
    ("absent-kubevirt-block-without-osImage", {"kubevirt": {"osImage": {"builtin": {}}}}, {"kubevirt": {}}, BUILTIN_A),
    (
        "supplied-empty-replaces-class-builtin",
        {"kubevirt": {"osImage": {"builtin": {}}}},
        {"kubevirt": {"osImage": {}}},
        FACTORY_A,
    ),
    (
        "supplied-factory-replaces-class-builtin",
        {"kubevirt": {"osImage": {"builtin": {}}}},
        {"kubevirt": {"osImage": {"factory": {}}}},
        FACTORY_A,
    ),
    (
        "supplied-factory-as-a-unit-drops-class-endpoint",
        {"kubevirt": {"osImage": {"factory": {"endpoint": CLASS_EP}}}},
        {"kubevirt": {"osImage": {"factory": {}}}},
        FACTORY_A,
    ),
    (
        "supplied-empty-drops-class-factory",
        {"kubevirt": {"osImage": {"factory": {"endpoint": CLASS_EP}}}},
        {"kubevirt": {"osImage": {}}},
        FACTORY_A,
    ),
    (
        "supplied-builtin-replaces-class-factory",
        {"kubevirt": {"osImage": {"factory": {"endpoint": CLASS_EP}}}},
        {"kubevirt": {"osImage": {"builtin": {}}}},
        BUILTIN_A,
    ),
    (
        "builtin-empty-values-follow-talos",
        {},
        {"kubevirt": {"osImage": {"builtin": {"version": "", "schematicID": ""}}}},
        BUILTIN_A,
    ),
    (
        "builtin-follows-pool-schematic",
        {},
        {"talos": {"schematicID": SCHEMATIC_B}, "kubevirt": {"osImage": {"builtin": {}}}},
        ("builtin", golden_name(SCHEMATIC_B, TALOS_VERSION)),
    ),
    (
        "builtin-follows-class-version",
        {"talos": {"version": "v1.12.4"}, "kubevirt": {"osImage": {"builtin": {}}}},
        {"version": "v1.34"},
        ("builtin", golden_name(SCHEMATIC_A, "v1.12.4")),
    ),
    (
        "builtin-explicit-matching-values",
        {},
        {"kubevirt": {"osImage": {"builtin": {"version": TALOS_VERSION, "schematicID": SCHEMATIC_A}}}},
        BUILTIN_A,
    ),
    (
        "factory-empty-values-follow-talos",
        {},
        {"kubevirt": {"osImage": {"factory": {"version": "", "schematicID": "", "endpoint": ""}}}},
        FACTORY_A,
    ),
    (
        "factory-endpoint-wins",
        {},
        {"kubevirt": {"osImage": {"factory": {"endpoint": POOL_EP}}}},
        ("factory", factory_url(SCHEMATIC_A, TALOS_VERSION, POOL_EP)),
    ),
    (
        "factory-endpoint-follows-pool-url",
        {},
        {"talos": {"imageFactoryURL": POOL_EP}, "kubevirt": {"osImage": {"factory": {}}}},
        ("factory", factory_url(SCHEMATIC_A, TALOS_VERSION, POOL_EP)),
    ),
    (
        "factory-endpoint-beats-effective-url",
        {"talos": {"imageFactoryURL": CLASS_EP}},
        {"kubevirt": {"osImage": {"factory": {"endpoint": POOL_EP}}}},
        ("factory", factory_url(SCHEMATIC_A, TALOS_VERSION, POOL_EP)),
    ),
    (
        "factory-follows-pool-version",
        {},
        {"talos": {"version": "v1.13.4"}, "kubevirt": {"osImage": {"factory": {}}}},
        ("factory", factory_url(SCHEMATIC_A, "v1.13.4")),
    ),
    (
        "class-factory-follows-pool-schematic",
        {"kubevirt": {"osImage": {"factory": {"endpoint": CLASS_EP}}}},
        {"talos": {"schematicID": SCHEMATIC_C}},
        ("factory", factory_url(SCHEMATIC_C, TALOS_VERSION, CLASS_EP)),
    ),
    (
        "default-factory-follows-class-url",
        {"talos": {"imageFactoryURL": CLASS_EP}},
        {},
        ("factory", factory_url(SCHEMATIC_A, TALOS_VERSION, CLASS_EP)),
    ),
]


@pytest.mark.parametrize(
    ("class_spec", "pool", "expected"), [r[1:] for r in OS_IMAGE_ROWS], ids=[r[0] for r in OS_IMAGE_ROWS]
)
def test_kubevirt_os_image(class_spec: dict[str, Any], pool: dict[str, Any], expected: tuple[str, str]) -> None:
    effective = resolved(_state(class_spec), make_pool(workerClassName=BASE, **pool))
    assert (effective["image"]["source"], effective["image"]["reference"]) == expected
    # Resolved version and schematic agree between disk and installer.
    talos = effective["talos"]
    assert (effective["image"]["version"], effective["image"]["schematicID"]) == (
        talos["version"],
        talos["schematicID"],
    )


#: (id, class spec, pool overrides, code, accepted field paths)
OS_IMAGE_DENIALS = [
    (
        "builtin-and-factory",
        {},
        {"kubevirt": {"osImage": {"builtin": {}, "factory": {}}}},
        "OsImageSourceConflict",
        ("spec.kubevirt.osImage",),
    ),
    (
        "builtin-and-factory-even-empty-values",
        {"kubevirt": {"osImage": {"builtin": {}}}},
        {"kubevirt": {"osImage": {"builtin": {"version": ""}, "factory": {"endpoint": ""}}}},
        "OsImageSourceConflict",
        ("spec.kubevirt.osImage",),
    ),
    (
        "golden-missing-for-schematic",
        {},
        {"talos": {"schematicID": SCHEMATIC_C}, "kubevirt": {"osImage": {"builtin": {}}}},
        "GoldenNotFound",
        ("spec.kubevirt.osImage.builtin", "spec.kubevirt.osImage"),
    ),
    (
        "golden-missing-for-version",
        {},
        {"talos": {"version": "v1.13.5"}, "kubevirt": {"osImage": {"builtin": {}}}},
        "GoldenNotFound",
        ("spec.kubevirt.osImage.builtin", "spec.kubevirt.osImage"),
    ),
    (
        "golden-missing-through-class-source",
        {"kubevirt": {"osImage": {"builtin": {}}}},
        {"talos": {"schematicID": SCHEMATIC_C}},
        "GoldenNotFound",
        ("spec.kubevirt.osImage.builtin", "spec.kubevirt.osImage", "spec.talos.schematicID", "spec.workerClassName"),
    ),
    (
        "builtin-version-conflicts-with-installer",
        {},
        {"kubevirt": {"osImage": {"builtin": {"version": "v1.12.4"}}}},
        "ArtifactConflict",
        ("spec.kubevirt.osImage.builtin.version", "spec.kubevirt.osImage.builtin", "spec.kubevirt.osImage"),
    ),
    (
        "factory-schematic-conflicts-with-installer",
        {},
        {"kubevirt": {"osImage": {"factory": {"schematicID": SCHEMATIC_B}}}},
        "ArtifactConflict",
        ("spec.kubevirt.osImage.factory.schematicID", "spec.kubevirt.osImage.factory", "spec.kubevirt.osImage"),
    ),
    (
        "class-pinned-disk-vs-pool-talos-version",
        {"kubevirt": {"osImage": {"factory": {"version": TALOS_VERSION}}}},
        {"talos": {"version": "v1.13.5"}},
        "ArtifactConflict",
        (
            "spec.kubevirt.osImage.factory.version",
            "spec.kubevirt.osImage.factory",
            "spec.kubevirt.osImage",
            "spec.talos.version",
            "spec.workerClassName",
        ),
    ),
    (
        "class-pinned-golden-vs-pool-schematic",
        {"kubevirt": {"osImage": {"builtin": {"schematicID": SCHEMATIC_A}}}},
        {"talos": {"schematicID": SCHEMATIC_B}},
        "ArtifactConflict",
        (
            "spec.kubevirt.osImage.builtin.schematicID",
            "spec.kubevirt.osImage.builtin",
            "spec.kubevirt.osImage",
            "spec.talos.schematicID",
            "spec.workerClassName",
        ),
    ),
]


@pytest.mark.parametrize(
    ("class_spec", "pool", "code", "fields"), [r[1:] for r in OS_IMAGE_DENIALS], ids=[r[0] for r in OS_IMAGE_DENIALS]
)
def test_kubevirt_os_image_refused(
    class_spec: dict[str, Any], pool: dict[str, Any], code: str, fields: tuple[str, ...]
) -> None:
    violations = refused(_state(class_spec), make_pool(workerClassName=BASE, **pool))
    assert has_denial(violations, code, fields), [str(v) for v in violations]


# --------------------------------------------------------------------------- Proxmox


@pytest.mark.parametrize(
    ("class_tags", "pool_proxmox", "expected"),
    [
        (["talos-v1.13.6"], ABSENT, ["talos-v1.13.6"]),
        (["talos-v1.13.6"], {"templateTags": ["custom", "gpu"]}, ["custom", "gpu"]),
        (ABSENT, {"templateTags": ["custom"]}, ["custom"]),
        (["talos-v1.13.6"], {}, ["talos-v1.13.6"]),
    ],
    ids=["class-tags", "pool-replaces", "pool-only", "pool-block-without-tags"],
)
def test_proxmox_template_tags(class_tags: Any, pool_proxmox: Any, expected: list[str]) -> None:
    state = _state({} if class_tags is ABSENT else {"proxmox": {"templateTags": class_tags}})
    effective = resolved(state, make_pool(workerClassName=BASE, cluster=PROXMOX_CLUSTER, proxmox=pool_proxmox))
    assert effective["image"]["source"] == "proxmox"
    assert effective["image"]["templateTags"] == expected


@pytest.mark.parametrize(
    ("class_tags", "pool_proxmox"),
    [
        (ABSENT, ABSENT),
        ([], ABSENT),
        (["talos-v1.13.6"], {"templateTags": []}),
        (ABSENT, {"templateTags": []}),
    ],
    ids=["none-anywhere", "class-empty", "pool-empty-replaces-class", "pool-empty"],
)
def test_proxmox_empty_final_tag_list_is_refused(class_tags: Any, pool_proxmox: Any) -> None:
    state = _state({} if class_tags is ABSENT else {"proxmox": {"templateTags": class_tags}})
    violations = refused(state, make_pool(workerClassName=BASE, cluster=PROXMOX_CLUSTER, proxmox=pool_proxmox))
    assert has_denial(violations, "EmptyTemplateTags", "spec.proxmox.templateTags")


@pytest.mark.parametrize(
    ("os_image", "refuse"),
    [({"factory": {}}, True), ({"builtin": {}}, True), ({"factory": {"endpoint": POOL_EP}}, True), ({}, False)],
    ids=["factory", "builtin", "factory-endpoint", "empty"],
)
def test_nonempty_os_image_is_not_a_proxmox_source(os_image: dict[str, Any], refuse: bool) -> None:
    pool = make_pool(
        workerClassName=BASE,
        cluster=PROXMOX_CLUSTER,
        proxmox={"templateTags": ["talos-v1.13.6"]},
        kubevirt={"osImage": os_image},
    )
    state = _state()
    if refuse:
        assert has_denial(refused(state, pool), "OsImageOnProxmox", "spec.kubevirt.osImage")
    else:
        assert resolved(state, pool)["image"]["source"] == "proxmox"


def test_proxmox_pool_still_checks_talos_kubernetes_support() -> None:
    pool = make_pool(
        workerClassName=BASE, cluster=PROXMOX_CLUSTER, proxmox={"templateTags": ["t"]}, talos={"version": "v1.12.4"}
    )
    assert has_denial(refused(_state(), pool), "TalosKubernetesIncompatible", ("spec.talos.version", "spec.version"))


# --------------------------------------------------------------------------- Kubernetes patch


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        (make_pool(version="v1.35"), ("talos", "v1.35.6", "factory", FACTORY_A[1])),
        # the chart renders its own patch (v1.34.9), not the test platform map's v1.34.5
        (make_pool(version="v1.34"), ("talos", "v1.34.9", "factory", FACTORY_A[1])),
        # classless: the chart's version map and Talos defaults, not the platform's
        (
            make_pool(workerClassName=ABSENT, version="v1.33"),
            ("talos", "v1.33.13", "factory", factory_url(CHART_SCHEMATIC, TALOS_VERSION, CHART_FACTORY_URL)),
        ),
        (make_pool(workerClassName="kairos", version="v1.35"), ("kairos", "v1.35.6", "platform", PLATFORM_KAIROS_135)),
        (make_pool(workerClassName="kairos", version="v1.34"), ("kairos", "v1.34.5", "platform", PLATFORM_KAIROS_134)),
        (
            make_pool(workerClassName="kairos-example-v1-35-6-r1", version="v1.35"),
            ("kairos", "v1.35.6", "fixed", FIXED_REFERENCE),
        ),
    ],
    ids=[
        "talos-v1.35",
        "talos-v1.34",
        "legacy-v1.33",
        "kairos-platform-v1.35",
        "kairos-platform-v1.34",
        "kairos-fixed",
    ],
)
def test_kubernetes_patch_and_image(pool: dict[str, Any], expected: tuple[str, str, str, str]) -> None:
    effective = resolved(make_state(), pool)
    got = (
        effective["bootstrap"],
        effective["kubernetesVersion"],
        effective["image"]["source"],
        effective["image"]["reference"],
    )
    assert got == expected


def test_platform_patch_change_moves_platform_images_but_never_a_fixed_image() -> None:
    versions = {m: {"patch": p} for m, p in KUBERNETES_VERSIONS.items()}
    versions["v1.35"] = {"patch": "v1.35.9"}
    state = make_state(platform=make_platform(kubernetesVersions=versions))
    platform_image = resolved(state, make_pool(workerClassName="kairos", version="v1.35"))
    assert (platform_image["kubernetesVersion"], platform_image["image"]["source"]) == ("v1.35.9", "platform")
    # a Talos pool renders the chart's own patch, whatever the platform map says (and is warned)
    talos = resolve(state, make_pool(version="v1.35"))
    assert talos.kubernetes_version == "v1.35.6"
    assert (
        "the kubernetes-nodes chart renders v1.35.6; the platform map's v1.35.9 applies to platform Kairos images"
        in talos.warnings
    )
    fixed = resolved(state, make_pool(workerClassName="kairos-example-v1-35-6-r1"))
    assert (fixed["kubernetesVersion"], fixed["image"]["reference"]) == ("v1.35.6", FIXED_REFERENCE)


def test_fixed_image_supplies_its_own_patch_for_a_minor_outside_the_platform_map() -> None:
    versions = {m: {"patch": p} for m, p in KUBERNETES_VERSIONS.items() if m != "v1.36"}
    image = {"kubernetesVersion": "v1.36.1", "reference": FIXED_REFERENCE}
    state = make_state(
        platform=make_platform(kubernetesVersions=versions),
        classes=[make_class("kairos-v1-36-1", "kairos", image=image)],
        clusters=[make_cluster(version="v1.36")],
    )
    effective = resolved(state, make_pool(workerClassName="kairos-v1-36-1", version="v1.36"))
    assert (effective["kubernetesVersion"], effective["image"]["source"]) == ("v1.36.1", "fixed")


def test_kairos_effective_settings_carry_no_talos() -> None:
    effective = resolved(make_state(), make_pool(workerClassName="kairos-example-v1-35-6-r1"))
    assert effective["talos"] is None
    assert effective["installerImage"] is None
    assert effective["class"] == "kairos-example-v1-35-6-r1"


# --------------------------------------------------------------------------- rendered references


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        (
            {},
            {
                "image": factory_url(SCHEMATIC_A, TALOS_VERSION),
                "installer": f"{INSTALLER_REPOSITORY}/{SCHEMATIC_A}:{TALOS_VERSION}",
            },
        ),
        (
            {"kubevirt": {"osImage": {"builtin": {}}}},
            {
                "image": f"cozy-public/talos-worker-{SCHEMATIC_A}-{TALOS_VERSION}",
                "installer": f"{INSTALLER_REPOSITORY}/{SCHEMATIC_A}:{TALOS_VERSION}",
            },
        ),
        (
            {
                "talos": {
                    "version": "v1.13.4",
                    "schematicID": SCHEMATIC_C,
                    "imageFactoryURL": "https://pool-factory.example",
                    "installerRepository": "registry.example:5000/talos/installer",
                }
            },
            {
                "image": f"https://pool-factory.example/image/{SCHEMATIC_C}/v1.13.4/openstack-amd64.raw.xz",
                "installer": f"registry.example:5000/talos/installer/{SCHEMATIC_C}:v1.13.4",
            },
        ),
    ],
    ids=["factory-url", "golden-datavolume", "all-overridden"],
)
def test_rendered_reference_forms(pool: dict[str, Any], expected: dict[str, str]) -> None:
    effective = resolved(_state(), make_pool(workerClassName=BASE, **pool))
    assert effective["image"]["reference"] == expected["image"]
    assert effective["installerImage"] == expected["installer"]


# --------------------------------------------------------------------------- classless / legacy


def test_classless_pool_keeps_its_tenant_settings() -> None:
    pool = make_pool(
        workerClassName=ABSENT,
        talos={"version": "v1.13.4", "registryMirrors": M_POOL},
        kernelModules=NVME,
    )
    effective = resolved(make_state(), pool)
    assert effective["class"] is None and effective["bootstrap"] == "talos"
    assert effective["talos"]["version"] == "v1.13.4"
    assert effective["talos"]["schematicID"] == CHART_SCHEMATIC  # the chart's default, not the platform's
    assert effective["talos"]["registryMirrors"] == M_POOL
    assert effective["kernelModules"] == NVME_OUT


@pytest.mark.parametrize("class_value", [ABSENT, ""], ids=["omitted", "empty"])
def test_classless_helm_release_resolves_as_legacy_talos(class_value: Any) -> None:
    release = make_release("direct", workerClassName=class_value)
    effective = resolved(make_state([release]), release)
    assert (effective["class"], effective["bootstrap"]) == (None, "talos")
    assert effective["image"]["reference"] == factory_url(CHART_SCHEMATIC, TALOS_VERSION, CHART_FACTORY_URL)
    assert effective["kubernetesVersion"] == "v1.35.6"


def test_helm_release_with_an_explicit_class_gets_class_semantics() -> None:
    release = make_release("direct", workerClassName="kairos")
    effective = resolved(make_state([release]), release)
    assert (effective["class"], effective["bootstrap"]) == ("kairos", "kairos")


def test_parent_cluster_is_looked_up_in_the_pool_namespace() -> None:
    other = make_cluster(CLUSTER, "other-tenant", infrastructure="proxmox")
    state = make_state(clusters=[make_cluster(), other])
    assert resolved(state, make_pool())["image"]["source"] == "factory"
    violations = refused(state, make_pool(namespace="other-tenant"))
    assert has_denial(violations, "EmptyTemplateTags", "spec.proxmox.templateTags")


# --------------------------------------------------------------------------- classes that bypassed admission
#
# A STATE folder (GitOps, the offline CLI) or a cluster whose class webhook was unavailable can
# hold a WorkerClass that breaks the class rules of API.md section 3. Resolution must then fail
# closed for the pools that select it (as it already does for IncompleteImage and a builtin+factory
# class source), never resolve with the bad class values silently dropped or passed through.


BROKEN_CLASSES = [
    pytest.param(
        make_class("broken", "kairos", image={"kubernetesVersion": "v1.35.6"}),
        ("IncompleteImage",),
        id="incomplete-fixed-image",
    ),
    pytest.param(
        make_class("broken", kubevirt={"osImage": {"builtin": {}, "factory": {}}}),
        ("OsImageSourceConflict",),
        id="class-source-conflict",
    ),
    pytest.param(
        make_class(
            "broken", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w:latest"}
        ),
        ("ImageNotPinned",),
        id="unpinned-fixed-image",
    ),
    pytest.param(
        make_class("broken", "kairos", talos={"version": "v1.13.6"}, kernelModules=[{"name": "nvme_tcp"}]),
        ("TalosSettingOnKairos",),
        id="talos-settings-on-kairos-class",
    ),
    pytest.param(
        make_class("broken", talos={"imageFactoryCA": PRIVATE_KEY}),
        ("PrivateKeyMaterial",),
        id="private-key-in-class",
    ),
    pytest.param(
        make_class("broken", talos={"version": "latest"}),
        ("Invalid",),
        id="malformed-class-talos-version",
    ),
    pytest.param(
        make_class("broken", kernelModules=[{"name": "nvme_tcp"}, {"name": 3}]),
        ("Invalid",),
        id="malformed-class-kernel-module",
    ),
]


@pytest.mark.parametrize(("broken", "codes"), BROKEN_CLASSES)
def test_a_pool_selecting_a_class_that_breaks_the_class_rules_is_refused(
    broken: dict[str, Any], codes: tuple[str, ...]
) -> None:
    state = make_state(classes=[broken])
    pool = make_pool(workerClassName="broken")
    violations = refused(state, pool)
    accepted = (*codes, "Invalid")
    assert any(v.code in accepted for v in violations), [str(v) for v in violations]
