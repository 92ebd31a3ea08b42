"""WorkerClass CREATE rules, ComputePlane node groups and direct HelmRelease writers.

Class rules: the spec is immutable (tested with the denials), classes hold OS and bootstrap
settings only (no GPU licenses, no tenant credentials, no pool configuration), ``image`` is a
Kairos fixed disk with both fields pinned by digest. ComputePlane keeps its classless Talos path
behind an allowlist. HelmRelease writers get no mutation, and a classless release is rendered
the legacy way without any class lookup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import (
    ABSENT,
    CERTIFICATE,
    CHART_FACTORY_URL,
    CHART_SCHEMATIC,
    FIXED_REFERENCE,
    NVIDIA_GPU,
    NVIDIA_MODULES,
    SCHEMATIC_A,
    SCHEMATIC_C,
    TALOS_VERSION,
    apply_patch,
    factory_url,
    has_denial,
    make_class,
    make_cluster,
    make_compute_plane,
    make_platform,
    make_pool,
    make_release,
    make_state,
    pairs,
    view,
)
from workerclass import State, admit, resolve
from workerclass.adapters.folder import load_state
from workerclass.resolve import resolve_pool

FULL_TALOS_CLASS = {
    "talos": {
        "version": "v1.13.6",
        "schematicID": SCHEMATIC_A,
        "imageFactoryURL": "https://factory.example",
        "imageFactoryCA": CERTIFICATE,
        "installerRepository": "factory.example/installer",
        "registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}},
    },
    "kernelModules": [{"name": "nvme_tcp", "parameters": []}],
    "kubevirt": {"osImage": {"factory": {"version": "v1.13.6", "schematicID": SCHEMATIC_A}}},
    "proxmox": {"templateTags": ["talos-v1.13.6"]},
}

CLASS_CREATES_ALLOWED = [
    ("design-page-talos", make_class("talos-example-r1", talos={"version": "v1.13.6"})),
    ("bare-talos", make_class("bare-talos")),
    ("bare-kairos", make_class("bare-kairos", "kairos")),
    (
        "design-page-fixed-kairos",
        make_class("kairos-r1", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE}),
    ),
    ("every-talos-setting", make_class("full-talos", **FULL_TALOS_CLASS)),
    ("talos-builtin-golden", make_class("golden", kubevirt={"osImage": {"builtin": {}}})),
    ("talos-empty-os-image", make_class("empty-os", kubevirt={"osImage": {}})),
    ("kairos-empty-talos-only-settings", make_class("kairos-e", "kairos", talos={"version": ""}, kernelModules=[])),
]


@pytest.mark.parametrize("obj", [c[1] for c in CLASS_CREATES_ALLOWED], ids=[c[0] for c in CLASS_CREATES_ALLOWED])
def test_class_create_allowed(obj: dict[str, Any]) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert decision.patch == []


CLASS_CREATES_REFUSED = [
    ("bootstrap-missing", make_class("c", bootstrap=ABSENT), "Invalid", ("spec.bootstrap",)),
    ("bootstrap-empty", make_class("c", bootstrap=""), "Invalid", ("spec.bootstrap",)),
    ("bootstrap-unknown", make_class("c", bootstrap="ubuntu"), "Invalid", ("spec.bootstrap",)),
    ("bootstrap-wrong-type", make_class("c", bootstrap=["talos"]), "Invalid", ("spec.bootstrap",)),
    ("spec-not-a-mapping", {**make_class("c"), "spec": ["talos"]}, "Invalid", ("spec",)),
    ("no-gpu-fields", make_class("c", gpus=[NVIDIA_GPU]), "Invalid", ("spec.gpus",)),
    ("no-license-token", make_class("c", licenseToken="abc"), "Invalid", ("spec.licenseToken",)),
    ("no-tenant-ssh-keys", make_class("c", "kairos", sshKeys=[]), "Invalid", ("spec.sshKeys",)),
    ("no-pool-replicas", make_class("c", minReplicas=1), "Invalid", ("spec.minReplicas",)),
    ("no-pool-version", make_class("c", version="v1.35"), "Invalid", ("spec.version",)),
    (
        "no-pull-secret",
        make_class(
            "c", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE, "pullSecret": "creds"}
        ),
        "Invalid",
        ("spec.image.pullSecret",),
    ),
    (
        "image-is-kairos-only",
        make_class("c", image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE}),
        "Invalid",
        ("spec.image", "spec.image.reference", "spec.image.kubernetesVersion", "spec.bootstrap"),
    ),
    (
        "image-version-not-a-patch",
        make_class("c", "kairos", image={"kubernetesVersion": "v1.35", "reference": FIXED_REFERENCE}),
        "Invalid",
        ("spec.image.kubernetesVersion",),
    ),
    (
        "image-reference-wrong-type",
        make_class("c", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": 42}),
        "Invalid",
        ("spec.image.reference",),
    ),
    (
        "talos-setting-on-kairos-class",
        make_class("c", "kairos", talos={"registryMirrors": {"docker.io": {"endpoints": ["https://m.example"]}}}),
        "TalosSettingOnKairos",
        ("spec.talos.registryMirrors",),
    ),
    (
        "class-source-conflict",
        make_class("c", kubevirt={"osImage": {"builtin": {}, "factory": {}}}),
        "OsImageSourceConflict",
        ("spec.kubevirt.osImage",),
    ),
    (
        "class-private-key-in-module-parameters",
        make_class(
            "c",
            kernelModules=[{"name": "x", "parameters": ["-----BEGIN PRIVATE KEY-----\nAA\n-----END PRIVATE KEY-----"]}],
        ),
        "PrivateKeyMaterial",
        ("spec.kernelModules[0].parameters[0]",),
    ),
]


@pytest.mark.parametrize(
    ("obj", "code", "fields"), [c[1:] for c in CLASS_CREATES_REFUSED], ids=[c[0] for c in CLASS_CREATES_REFUSED]
)
def test_class_create_refused(obj: dict[str, Any], code: str, fields: tuple[str, ...]) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, code, fields), [str(v) for v in decision.denials]


# --------------------------------------------------------------------------- ComputePlane

ALLOWLIST = {
    "minReplicas": 1,
    "maxReplicas": 3,
    "instanceType": "u1.medium",
    "diskSize": "20Gi",
    "storageClass": "replicated",
    "resources": {"cpu": "4", "memory": "8Gi"},
    "roles": ["ingress-nginx"],
    "gpus": [NVIDIA_GPU],
    "kubelet": {"evictionHardMemory": "7%"},
}

REFUSED_KEYS = {
    "workerClassName": "kairos",
    "version": "v1.35",
    "talos": {"version": "v1.13.6"},
    "kernelModules": [{"name": "nvme_tcp"}],
    "kubevirt": {"osImage": {}},
    "proxmox": {"templateTags": ["t"]},
    "sshKeys": [],
    "taints": [],
    "labels": {},
}


@pytest.mark.parametrize("key", list(ALLOWLIST), ids=list(ALLOWLIST))
def test_compute_plane_allowlisted_key(key: str) -> None:
    obj = make_compute_plane(node_groups={"workers": {key: ALLOWLIST[key]}})
    decision = admit(make_state(), "CREATE", obj)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert decision.patch == []


def test_compute_plane_whole_allowlist() -> None:
    decision = admit(
        make_state(), "CREATE", make_compute_plane(node_groups={"workers": ALLOWLIST, "gpu": {"gpus": []}})
    )
    assert decision.allowed, [str(v) for v in decision.denials]


@pytest.mark.parametrize("key", list(REFUSED_KEYS), ids=list(REFUSED_KEYS))
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_compute_plane_key_outside_allowlist(key: str, operation: str) -> None:
    obj = make_compute_plane(node_groups={"workers": {"minReplicas": 1, key: REFUSED_KEYS[key]}})
    old = make_compute_plane() if operation == "UPDATE" else None
    decision = admit(make_state(), operation, obj, old=old)
    assert not decision.allowed
    assert ("NotAllowedInComputePlane", f"spec.nodeGroups.workers.{key}") in pairs(decision.denials)
    assert decision.patch == []


def test_compute_plane_groups_resolve_on_the_classless_talos_path() -> None:
    # Even with a platform default naming a Kairos class, node groups stay classless Talos.
    state = make_state([make_compute_plane()], platform=make_platform(defaultWorkerClass="kairos"))
    groups = [record for record in state.sorted_pools() if record.kind == "ComputePlane"]
    assert groups, "the node group is a pool of the state"
    for record in groups:
        effective, denials, _ = resolve_pool(state, record)
        assert effective is not None, [str(v) for v in denials]
        assert (effective.class_name, effective.bootstrap) == (None, "talos")


# --------------------------------------------------------------------------- HelmRelease direct writers


@pytest.mark.parametrize(
    ("values", "operation", "old"),
    [
        ({}, "CREATE", None),
        ({"workerClassName": ""}, "CREATE", None),
        ({}, "UPDATE", make_release(workerClassName="talos-example-r1")),
        ({"workerClassName": ""}, "UPDATE", make_release(workerClassName="talos-example-r1")),
    ],
    ids=["create-omitted", "create-empty", "update-omitted-old-classified", "update-empty-old-classified"],
)
def test_helm_release_writers_get_no_mutation(values: dict[str, Any], operation: str, old: Any) -> None:
    state = make_state(platform=make_platform(defaultWorkerClass="kairos"))
    obj = make_release(**values)
    decision = admit(state, operation, obj, old=old)
    assert decision.patch == []
    assert decision.object == apply_patch(obj, [])
    assert decision.object is not None
    assert decision.object["spec"]["values"].get("workerClassName", ABSENT) == values.get("workerClassName", ABSENT)


def test_helm_release_create_classless_is_allowed() -> None:
    decision = admit(make_state(), "CREATE", make_release())
    assert decision.allowed, [str(v) for v in decision.denials]


class _NoClasses(dict[str, Any]):
    """A class index that fails the test on any lookup."""

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a classless render looked up a WorkerClass")

    __getitem__ = get = __contains__ = __iter__ = __len__ = keys = values = items = _fail  # type: ignore[assignment]


@pytest.mark.parametrize("default", ["talos", "kairos", "does-not-exist"])
def test_classless_helm_release_resolves_without_any_class_lookup(
    default: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = make_release("legacy")
    state = make_state([release], platform=make_platform(defaultWorkerClass=default), classes=[])
    # A probe, not a use: the State is frozen, so its class table is swapped past the dataclass.
    object.__setattr__(state, "classes", _NoClasses())

    def no_lookup(self: Any, name: str) -> Any:
        raise AssertionError(f"a classless render looked up WorkerClass {name!r}")

    monkeypatch.setattr(type(state), "worker_class", no_lookup)
    effective = resolve(state, release)
    assert (effective.class_name, effective.bootstrap) == (None, "talos")
    # a classless pool's Talos fallbacks are the chart's values.yaml, not the platform's
    assert effective.image.reference == factory_url(CHART_SCHEMATIC, TALOS_VERSION, CHART_FACTORY_URL)


def test_classless_helm_release_with_talos_settings_keeps_them() -> None:
    release = make_release(talos={"schematicID": SCHEMATIC_C}, kernelModules=[{"name": "nvme_tcp"}])
    effective = resolve(make_state([release]), release)
    assert effective.class_name is None
    assert effective.talos is not None and effective.talos.schematic_id == SCHEMATIC_C
    assert [m.name for m in effective.kernel_modules] == ["nvme_tcp"]


def test_helm_release_field_paths_name_the_values() -> None:
    decision = admit(make_state(), "CREATE", make_release(minReplicas="x", sshKeys=["ssh-ed25519 AAAA"]))
    got = pairs(decision.denials)
    assert ("Invalid", "spec.values.minReplicas") in got
    assert any(code == "SSHKeysOnTalos" and field.startswith("spec.values.sshKeys") for code, field in got), got


def test_other_helm_releases_are_not_pools() -> None:
    other = make_release()
    other["metadata"]["labels"] = {"apps.cozystack.io/application.kind": "Postgres"}
    other["spec"]["values"] = {"replicas": "anything", "sshKeys": ["x"]}
    decision = admit(make_state(), "CREATE", other)
    assert decision.allowed and decision.patch == []


# --------------------------------------------------------------------------- warnings (issue 2, item 6)


@pytest.mark.parametrize(
    ("pool", "needle"),
    [
        (make_pool(workerClassName="kairos"), "experimental"),
        (
            make_pool(
                workerClassName="kairos-example-v1-35-6-r1",
                sshKeys=[
                    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKPzq9uaCGBnfTpFZkwH6e5KO7we4dEpHqktWTCH5wkC tenant@example"
                ],
            ),
            "sudo",
        ),
        (make_pool(minReplicas=1, maxReplicas=1, maxUnhealthy="50%"), "maxunhealthy"),
        (make_pool(workerClassName="kairos-example-v1-35-6-r1", minReplicas=0, maxReplicas=2), "zero"),
    ],
    ids=["platform-kairos-image", "ssh-sudo-user", "singleton-percentage-rounds-down", "kairos-scale-from-zero"],
)
def test_risky_or_experimental_choices_are_warned_about(pool: dict[str, Any], needle: str) -> None:
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any(needle in warning.lower() for warning in decision.warnings), decision.warnings


@pytest.mark.parametrize(
    ("overrides", "warned"),
    [({}, True), ({"minReplicas": 0}, True), ({"minReplicas": 2, "maxReplicas": 3}, False)],
    ids=["min-unset-defaults-to-zero", "min-zero", "min-two"],
)
def test_kairos_scale_from_zero_warning_follows_the_rendered_minimum(overrides: dict[str, Any], warned: bool) -> None:
    pool = make_pool(workerClassName="kairos-example-v1-35-6-r1", **overrides)
    if "minReplicas" not in overrides:
        pool["spec"].pop("minReplicas", None)  # whatever the builder's defaults hold
    decision = admit(make_state(), "CREATE", pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any("scale from zero" in warning for warning in decision.warnings) is warned, decision.warnings


def test_integer_max_unhealthy_on_a_singleton_is_not_warned_about() -> None:
    decision = admit(make_state(), "CREATE", make_pool(minReplicas=1, maxReplicas=1, maxUnhealthy="1"))
    assert decision.allowed
    assert not any("maxunhealthy" in warning.lower() for warning in decision.warnings), decision.warnings


def test_compute_plane_vgpu_is_refused_on_its_talos_path() -> None:
    obj = make_compute_plane(node_groups={"gpu": {"gpus": [{**NVIDIA_GPU, "vgpu": True}]}})
    decision = admit(make_state(), "CREATE", obj)
    assert has_denial(
        decision.denials, "TalosVGPU", ("spec.nodeGroups.gpu.gpus[0].vgpu", "spec.nodeGroups.gpu.gpus[0]")
    )


@pytest.mark.parametrize("obj", [make_pool(), make_release(), make_compute_plane()], ids=["pool", "release", "plane"])
def test_deleting_a_pool_is_not_mutated_or_refused(obj: dict[str, Any]) -> None:
    decision = admit(make_state([obj]), "DELETE", None, old=obj)
    assert decision.allowed and decision.patch == []


# --------------------------------------------------------------------------- built-ins and the examples


def test_builtin_classes_and_embedded_platform_apply_without_state_objects() -> None:
    """API.md section 1: without a WorkerPlatform the embedded one applies; talos and kairos ship built in."""
    state = State.from_objects([make_cluster()])
    create = admit(state, "CREATE", make_pool(workerClassName=ABSENT))
    assert create.patch == [{"op": "add", "path": "/spec/workerClassName", "value": "talos"}]
    assert create.allowed, [str(v) for v in create.denials]
    for name, family in (("talos", "talos"), ("kairos", "kairos")):
        effective = resolve(state, make_pool(workerClassName=name))
        assert (effective.class_name, effective.bootstrap) == (name, family)


def test_builtin_talos_class_takes_everything_from_the_platform() -> None:
    """``talos`` is ``{bootstrap: talos}``: it resolves exactly like a classless pool, but for the class.

    On the embedded platform (Cozystack's defaults), whose Talos defaults are the chart's: a
    classless pool falls back to the chart's values.yaml, a classified one to the platform.
    """
    state = State.from_objects([make_cluster()])
    classified = view(resolve(state, make_pool(workerClassName="talos", gpus=[NVIDIA_GPU])))
    legacy = view(resolve(state, make_pool(workerClassName=ABSENT, gpus=[NVIDIA_GPU])))
    assert classified.pop("class") == "talos" and legacy.pop("class") is None
    # API.md section 2: the NVIDIA rule runs for classified pools only; the legacy render loads none
    assert classified.pop("kernelModules") == NVIDIA_MODULES and legacy.pop("kernelModules") == []
    assert classified == legacy


def test_a_state_object_replaces_a_builtin_class() -> None:
    state = make_state(classes=[make_class("talos", talos={"version": "v1.13.5"})])
    assert view(resolve(state, make_pool()))["talos"]["version"] == "v1.13.5"


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_design_page_examples_are_all_admitted() -> None:
    state = load_state(EXAMPLES)
    admitted = 0
    for record in state.objects:
        decision = admit(state, "CREATE", record.obj)
        assert decision.allowed, (record.kind, record.name, [str(v) for v in decision.denials])
        admitted += 1
    assert admitted >= 6


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("example-kairos", {"class": "kairos", "bootstrap": "kairos", "kubernetesVersion": "v1.35.6"}),
        ("example-talos", {"class": "talos-example-r1", "bootstrap": "talos", "kubernetesVersion": "v1.35.6"}),
        (
            "example-custom-kairos",
            {"class": "kairos-example-v1-35-6-r1", "bootstrap": "kairos", "kubernetesVersion": "v1.35.6"},
        ),
        ("example-legacy", {"class": None, "bootstrap": "talos"}),
    ],
    ids=["kairos", "talos-override", "fixed-kairos", "legacy-helmrelease"],
)
def test_the_design_page_pools_resolve(name: str, expected: dict[str, Any]) -> None:
    state = load_state(EXAMPLES)
    record = next(r for r in state.objects if r.name == name)
    effective = view(resolve(state, record.obj))
    assert {key: effective[key] for key in expected} == expected
    if name == "example-talos":
        assert effective["talos"]["version"] == "v1.13.6"
        assert effective["kernelModules"] == [{"name": "nvme_tcp", "parameters": []}]
    if name == "example-custom-kairos":
        assert effective["image"]["source"] == "fixed"
        assert effective["image"]["reference"].startswith("registry.example.com/workers/kairos-worker@sha256:")
