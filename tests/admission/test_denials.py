"""Every denial code of API.md section 3, with its field path, and the allowed neighbour cases.

Where API.md fixes the path (a named field), the row names it exactly; where the contract leaves
the granularity open (for example the whole ``spec`` or the changed key for ``ClassImmutable``),
the row lists the paths a tenant could act on, and the test accepts any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.builders import (
    ABSENT,
    API_CODES,
    FIXED_REFERENCE,
    KAIROS_FIXED,
    KUBERNETES_VERSIONS,
    NVIDIA_GPU,
    PRIVATE_KEY,
    PROXMOX_CLUSTER,
    RSA_PRIVATE_KEY,
    SCHEMATIC_B,
    SCHEMATIC_C,
    SSH_KEY,
    SSH_KEY_2,
    TALOS_EXAMPLE,
    chart_known_as,
    has_denial,
    make_class,
    make_cluster,
    make_compute_plane,
    make_platform,
    make_pool,
    make_release,
    make_state,
    rename,
)
from workerclass import State, admit
from workerclass.violations import CODES


@dataclass(frozen=True)
class Case:
    id: str
    obj: Any  # the request object (None for a Kubernetes-style DELETE)
    code: str = ""  # expected denial code ("" for an allowed neighbour)
    fields: tuple[str, ...] = ()  # accepted field paths of that denial
    operation: str = "CREATE"
    old: Any = None
    state: Callable[[], State] = make_state
    also: tuple[str, ...] = ()  # other codes the same request legitimately earns


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _case(id: str, obj: Any, code: str, *fields: str, **kwargs: Any) -> Case:
    return Case(id, obj, code, fields, **kwargs)


def _ok(id: str, obj: Any, **kwargs: Any) -> Case:
    return Case(id, obj, **kwargs)


def _platform_without(minor: str) -> Callable[[], State]:
    versions = {m: {"patch": p} for m, p in KUBERNETES_VERSIONS.items() if m != minor}
    return lambda: make_state(platform=make_platform(kubernetesVersions=versions))


def _state_with(*objects: Any) -> Callable[[], State]:
    return lambda: make_state(list(objects))


def _on_chart(name: str) -> Callable[[], State]:
    """The test state on a chart the cluster is known to run (its rules; no text is needed)."""
    return lambda: make_state().with_chart(chart_known_as(name))


def _parent_with_group(group: dict[str, Any]) -> dict[str, Any]:
    """The parent Kubernetes app with one node group ``md0`` of these settings."""
    obj = make_cluster()
    obj["spec"]["nodeGroups"] = {"md0": group}
    return obj


KAIROS = {"workerClassName": "kairos"}
ECDSA_KEY = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBHVhoCUEoA+/n+grZihMV2oU3TTUGu+fR25wK9MJU"
    "IYfG2HJOU7c5JmK85L8uFyI3Xo/tnrkDiqYfWKWm63f+yM= ops@example"
)
PVE = {"cluster": PROXMOX_CLUSTER}
USER = make_pool("user", workerClassName="talos-example-r1")

DENIALS = [
    _case(
        "PoolFieldImmutable-storageClass-pr3315",
        make_pool(storageClass="fast"),
        "PoolFieldImmutable",
        "spec.storageClass",
        operation="UPDATE",
        old=make_pool(),
        state=_on_chart("pr3315+gate"),
    ),
    _case(
        "PoolFieldImmutable-storageClass-from-its-default-pr3315",
        make_pool(storageClass="fast"),
        "PoolFieldImmutable",
        "spec.storageClass",
        operation="UPDATE",
        old=make_pool(storageClass=ABSENT),
        state=_on_chart("pr3315+gate"),
    ),
    _case(
        "PoolFieldImmutable-cluster-pr3315",
        make_pool(cluster=PROXMOX_CLUSTER),
        "PoolFieldImmutable",
        "spec.cluster",
        operation="UPDATE",
        old=make_pool(),
        state=_on_chart("pr3315+gate"),
        also=("KairosOnProxmox", "OsImageOnProxmox", "EmptyTemplateTags", "InvalidPoolName"),
    ),
    _case("ChartNotGated-main", make_pool(), "ChartNotGated", "spec.workerClassName", state=_on_chart("main")),
    _case(
        "ChartNotGated-pr3315-helmrelease",
        make_release(workerClassName="talos"),
        "ChartNotGated",
        "spec.values.workerClassName",
        state=_on_chart("pr3315"),
    ),
    _case("ClassNotFound", make_pool(workerClassName="nope"), "ClassNotFound", "spec.workerClassName"),
    _case(
        "PlatformValueInPool",
        make_release(_cluster={"cluster-domain": "x$(id)"}),
        "PlatformValueInPool",
        "spec.values._cluster",
    ),
    _case("ObjectTooLarge", make_pool(labels={"a": _nested(100)}), "ObjectTooLarge", "spec"),
    _case(
        "PlatformImageOverride",
        make_pool(images={"kubectl": "registry.example/kubectl:mine"}),
        "PlatformImageOverride",
        "spec.images.kubectl",
    ),
    _case(
        "TenantImageSetting",
        make_pool(imagePullSecrets=[{"name": "registry"}]),
        "TenantImageSetting",
        "spec.imagePullSecrets",
    ),
    _case(
        "BootstrapFamilyChange-pool-bootstrap",
        make_pool(workerClassName="talos", bootstrap="kairos"),
        "BootstrapFamilyChange",
        "spec.bootstrap",
    ),
    _case("ClusterNotFound", make_pool(cluster="missing"), "ClusterNotFound", "spec.cluster"),
    _case(
        "ClusterNotFound-other-namespace",
        make_pool(namespace="tenant-elsewhere"),
        "ClusterNotFound",
        "spec.cluster",
    ),
    _case(
        "BootstrapFamilyChange-talos-to-kairos",
        make_pool(**KAIROS),
        "BootstrapFamilyChange",
        "spec.workerClassName",
        operation="UPDATE",
        old=make_pool(),
    ),
    _case(
        "BootstrapFamilyChange-legacy-to-kairos",
        make_pool(**KAIROS),
        "BootstrapFamilyChange",
        "spec.workerClassName",
        operation="UPDATE",
        old=make_pool(workerClassName=ABSENT),
    ),
    _case(
        "BootstrapFamilyChange-kairos-to-talos",
        make_pool(),
        "BootstrapFamilyChange",
        "spec.workerClassName",
        operation="UPDATE",
        old=make_pool(**KAIROS),
    ),
    _case("SSHKeysOnTalos", make_pool(sshKeys=[SSH_KEY]), "SSHKeysOnTalos", "spec.sshKeys", "spec.sshKeys[0]"),
    _case(
        "SSHKeysOnTalos-empty-string-key",
        make_pool(sshKeys=[""]),
        "SSHKeysOnTalos",
        "spec.sshKeys",
        "spec.sshKeys[0]",
    ),
    _case(
        "SSHKeysOnTalos-legacy",
        make_pool(workerClassName=ABSENT, sshKeys=[SSH_KEY]),
        "SSHKeysOnTalos",
        "spec.sshKeys",
        "spec.sshKeys[0]",
        operation="UPDATE",
        old=make_pool(workerClassName=ABSENT),
    ),
    _case("TooManySSHKeys", make_pool(sshKeys=[SSH_KEY, SSH_KEY_2], **KAIROS), "TooManySSHKeys", "spec.sshKeys"),
    _case(
        "InvalidSSHKey-garbage",
        make_pool(sshKeys=["not a key"], **KAIROS),
        "InvalidSSHKey",
        "spec.sshKeys[0]",
        "spec.sshKeys",
    ),
    _case(
        "InvalidSSHKey-empty-string",
        make_pool(sshKeys=[""], **KAIROS),
        "InvalidSSHKey",
        "spec.sshKeys[0]",
        "spec.sshKeys",
    ),
    _case(
        "InvalidSSHKey-two-lines-in-one",
        make_pool(sshKeys=[SSH_KEY + "\n" + SSH_KEY_2], **KAIROS),
        "InvalidSSHKey",
        "spec.sshKeys[0]",
        "spec.sshKeys",
    ),
    _case(
        "InvalidSSHKey-bad-base64",
        make_pool(sshKeys=["ssh-ed25519 !!!notbase64!!! user@host"], **KAIROS),
        "InvalidSSHKey",
        "spec.sshKeys[0]",
        "spec.sshKeys",
    ),
    _case(
        "PrivateKeyMaterial-kairos-sshKeys",
        make_pool(sshKeys=[PRIVATE_KEY], **KAIROS),
        "PrivateKeyMaterial",
        "spec.sshKeys[0]",
    ),
    _case(
        "PrivateKeyMaterial-talos-imageFactoryCA",
        make_pool(talos={"imageFactoryCA": RSA_PRIVATE_KEY}),
        "PrivateKeyMaterial",
        "spec.talos.imageFactoryCA",
    ),
    _case(
        "PrivateKeyMaterial-kernel-module-parameter",
        make_pool(kernelModules=[{"name": "nvme_tcp", "parameters": [PRIVATE_KEY]}]),
        "PrivateKeyMaterial",
        "spec.kernelModules[0].parameters[0]",
    ),
    _case(
        "InvalidSSHKey-type-does-not-match-body",
        make_pool(sshKeys=["ssh-rsa " + SSH_KEY.split()[1]], **KAIROS),
        "InvalidSSHKey",
        "spec.sshKeys[0]",
        "spec.sshKeys",
    ),
    _case(
        "PrivateKeyMaterial-label-value",
        make_pool(labels={"note": PRIVATE_KEY.strip()}),
        "PrivateKeyMaterial",
        "spec.labels.note",
    ),
    _case(
        "PrivateKeyMaterial-unknown-field",
        make_pool(notes=RSA_PRIVATE_KEY),
        "PrivateKeyMaterial",
        "spec.notes",
        also=("Invalid",),
    ),
    _case(
        "PrivateKeyMaterial-helmrelease-values",
        make_release(sshKeys=[PRIVATE_KEY]),
        "PrivateKeyMaterial",
        "spec.values.sshKeys[0]",
        also=("SSHKeysOnTalos",),
    ),
    _case(
        "PrivateKeyMaterial-class",
        make_class("leaky", talos={"imageFactoryCA": PRIVATE_KEY}),
        "PrivateKeyMaterial",
        "spec.talos.imageFactoryCA",
    ),
    _case("KairosOnProxmox", make_pool(**PVE, **KAIROS), "KairosOnProxmox", "spec.workerClassName", "spec.cluster"),
    _case(
        "KairosOnProxmox-fixed-image",
        make_pool(workerClassName="kairos-example-v1-35-6-r1", **PVE),
        "KairosOnProxmox",
        "spec.workerClassName",
        "spec.cluster",
    ),
    _case(
        "TalosSettingOnKairos-pool",
        make_pool(talos={"version": "v1.13.6"}, **KAIROS),
        "TalosSettingOnKairos",
        "spec.talos.version",
    ),
    _case(
        "TalosSettingOnKairos-class",
        make_class("kairos-modules", "kairos", kernelModules=[{"name": "nvme_tcp"}]),
        "TalosSettingOnKairos",
        "spec.kernelModules",
        "spec.kernelModules[0]",
    ),
    _case(
        "IncompleteImage-version-only",
        make_class("half", "kairos", image={"kubernetesVersion": "v1.35.6"}),
        "IncompleteImage",
        "spec.image",
        "spec.image.reference",
    ),
    _case(
        "IncompleteImage-reference-only",
        make_class("half", "kairos", image={"reference": FIXED_REFERENCE}),
        "IncompleteImage",
        "spec.image",
        "spec.image.kubernetesVersion",
    ),
    _case(
        "IncompleteImage-empty-reference",
        make_class("half", "kairos", image={"kubernetesVersion": "v1.35.6", "reference": ""}),
        "IncompleteImage",
        "spec.image",
        "spec.image.reference",
    ),
    _case(
        "ImageNotPinned-tag",
        make_class(
            "tagged",
            "kairos",
            image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/workers/kairos-worker:v1.35.6"},
        ),
        "ImageNotPinned",
        "spec.image.reference",
    ),
    _case(
        "ImageNotPinned-short-digest",
        make_class(
            "short",
            "kairos",
            image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w@sha256:" + "a" * 63},
        ),
        "ImageNotPinned",
        "spec.image.reference",
    ),
    _case(
        "ImageNotPinned-other-algorithm",
        make_class(
            "md5",
            "kairos",
            image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w@md5:" + "a" * 32},
        ),
        "ImageNotPinned",
        "spec.image.reference",
    ),
    _case(
        "VersionMismatch",
        make_pool(workerClassName="kairos-example-v1-35-6-r1", version="v1.34"),
        "VersionMismatch",
        "spec.version",
    ),
    _case("UnsupportedVersion", make_pool(), "UnsupportedVersion", "spec.version", state=_platform_without("v1.35")),
    _case(
        "UnsupportedVersion-kairos",
        make_pool(**KAIROS),
        "UnsupportedVersion",
        "spec.version",
        state=_platform_without("v1.35"),
    ),
    _case(
        "ControlPlaneTooOld-pool-newer",
        make_pool(version="v1.35"),
        "ControlPlaneTooOld",
        "spec.version",
        state=lambda: make_state(clusters=[make_cluster(version="v1.34")]),
    ),
    _case("ControlPlaneTooOld-four-minors-older", make_pool(version="v1.31"), "ControlPlaneTooOld", "spec.version"),
    _case(
        "TalosKubernetesIncompatible-matrix-max",
        make_pool(talos={"version": "v1.12.4"}),
        "TalosKubernetesIncompatible",
        "spec.talos.version",
        "spec.version",
    ),
    # A Talos minor the support matrix does not list is not checked (as the chart):
    # tests/resolve/test_versions.py::test_a_talos_minor_missing_from_the_support_matrix_is_not_checked
    _case(
        "TalosKubernetesIncompatible-from-class",
        make_pool(workerClassName="old-talos", version="v1.35"),
        "TalosKubernetesIncompatible",
        "spec.version",
        "spec.workerClassName",
        state=lambda: make_state(
            classes=[make_class("old-talos", talos={"version": "v1.12.4"})],
        ),
    ),
    _case(
        "OsImageSourceConflict-pool",
        make_pool(kubevirt={"osImage": {"builtin": {}, "factory": {}}}),
        "OsImageSourceConflict",
        "spec.kubevirt.osImage",
    ),
    _case(
        "OsImageSourceConflict-class",
        make_class("both", kubevirt={"osImage": {"builtin": {}, "factory": {}}}),
        "OsImageSourceConflict",
        "spec.kubevirt.osImage",
    ),
    _case(
        "GoldenNotFound",
        make_pool(talos={"schematicID": SCHEMATIC_C}, kubevirt={"osImage": {"builtin": {}}}),
        "GoldenNotFound",
        "spec.kubevirt.osImage.builtin",
        "spec.kubevirt.osImage",
    ),
    _case(
        "ArtifactConflict-version",
        make_pool(kubevirt={"osImage": {"factory": {"version": "v1.13.5"}}}),
        "ArtifactConflict",
        "spec.kubevirt.osImage.factory.version",
        "spec.kubevirt.osImage.factory",
        "spec.kubevirt.osImage",
    ),
    _case(
        "ArtifactConflict-schematic",
        make_pool(kubevirt={"osImage": {"builtin": {"schematicID": SCHEMATIC_B}}}),
        "ArtifactConflict",
        "spec.kubevirt.osImage.builtin.schematicID",
        "spec.kubevirt.osImage.builtin",
        "spec.kubevirt.osImage",
    ),
    _case(
        "EmptyTemplateTags",
        make_pool(**PVE),
        "EmptyTemplateTags",
        "spec.proxmox.templateTags",
    ),
    _case(
        "OsImageOnProxmox",
        make_pool(proxmox={"templateTags": ["talos-v1.13.6"]}, kubevirt={"osImage": {"factory": {}}}, **PVE),
        "OsImageOnProxmox",
        "spec.kubevirt.osImage",
    ),
    _case(
        "ClassImmutable",
        make_class("talos-example-r1", talos={"version": "v1.13.5"}),
        "ClassImmutable",
        "spec",
        "spec.talos",
        "spec.talos.version",
        operation="UPDATE",
        old=TALOS_EXAMPLE,
    ),
    _case(
        "ClassInUse-kubernetes-nodes",
        None,
        "ClassInUse",
        "metadata.name",
        "metadata",
        operation="DELETE",
        old=TALOS_EXAMPLE,
        state=_state_with(USER),
    ),
    _case(
        "TalosVGPU", make_pool(gpus=[{**NVIDIA_GPU, "vgpu": True}]), "TalosVGPU", "spec.gpus[0].vgpu", "spec.gpus[0]"
    ),
    _case("InvalidReplicas-negative-min", make_pool(minReplicas=-1), "InvalidReplicas", "spec.minReplicas"),
    _case("InvalidReplicas-negative-max", make_pool(maxReplicas=-1), "InvalidReplicas", "spec.maxReplicas"),
    _case(
        "InvalidReplicas-min-above-max",
        make_pool(minReplicas=4, maxReplicas=2),
        "InvalidReplicas",
        "spec.minReplicas",
        "spec.maxReplicas",
    ),
    _case(
        "NotAllowedInComputePlane",
        make_compute_plane(node_groups={"workers": {"minReplicas": 1, "version": "v1.35"}}),
        "NotAllowedInComputePlane",
        "spec.nodeGroups.workers.version",
    ),
    _case(
        "NotAllowedInNodeGroup",
        _parent_with_group({"minReplicas": 1, "maxReplicas": 2, "workerClassName": "kairos"}),
        "NotAllowedInNodeGroup",
        "spec.nodeGroups.md0.workerClassName",
    ),
    _case("Invalid", make_pool(minReplicas="two"), "Invalid", "spec.minReplicas"),
    # the kubernetes-nodes chart's render-time refusals (upstream README's mapping; more in test_chart_codes)
    _case("InvalidPoolName", rename(make_pool(), "other-pool"), "InvalidPoolName", "metadata.name"),
    _case("InstanceTypeNotFound", make_pool(instanceType="zz.huge"), "InstanceTypeNotFound", "spec.instanceType"),
    _case("IncompleteResources", make_pool(resources={"cpu": "4"}), "IncompleteResources", "spec.resources.memory"),
    _case("InvalidPodCPU", make_pool(podCpuLimit="3"), "InvalidPodCPU", "spec.podCpuLimit"),
    _case(
        "InvalidKubeletReservation",
        make_pool(kubelet={"systemReservedMemory": "0"}),
        "InvalidKubeletReservation",
        "spec.kubelet.systemReservedMemory",
    ),
    _case("InvalidDuration", make_pool(maxNodeProvisionTime="30"), "InvalidDuration", "spec.maxNodeProvisionTime"),
    _case("InvalidMaxUnhealthy", make_pool(maxUnhealthy="12.5%"), "InvalidMaxUnhealthy", "spec.maxUnhealthy"),
    _case(
        "InvalidKernelModule",
        make_pool(kernelModules=[{"name": "nvme;reboot"}]),
        "InvalidKernelModule",
        "spec.kernelModules[0].name",
    ),
]

NEIGHBOURS = [
    _ok("storageClass-changes-on-main", make_pool(storageClass="fast"), operation="UPDATE", old=make_pool()),
    _ok(
        "storageClass-kept-pr3315",
        make_pool(storageClass="replicated"),
        operation="UPDATE",
        old=make_pool(storageClass=ABSENT),
        state=_on_chart("pr3315+gate"),
    ),
    _ok(
        "helmrelease-storageClass-changes-pr3315",
        make_release(workerClassName="talos", storageClass="fast"),
        operation="UPDATE",
        old=make_release(workerClassName="talos"),
        state=_on_chart("pr3315+gate"),
    ),
    _ok("gated-chart", make_pool(), state=_on_chart("main+gate")),
    _ok("ungated-chart-classless-pool", make_release(), state=_on_chart("main")),
    _ok("assumed-chart", make_pool()),
    _ok("kairos-one-valid-key", make_pool(sshKeys=[SSH_KEY], **KAIROS)),
    _ok("kairos-one-valid-ecdsa-key", make_pool(sshKeys=[ECDSA_KEY], **KAIROS)),
    _ok("kairos-fixed-one-valid-key", make_pool(sshKeys=[SSH_KEY_2], workerClassName="kairos-example-v1-35-6-r1")),
    _ok("kairos-no-keys", make_pool(sshKeys=[], **KAIROS)),
    _ok("kairos-keys-omitted", make_pool(**KAIROS)),
    _ok("talos-empty-sshKeys", make_pool(sshKeys=[])),
    _ok("talos-sshKeys-omitted", make_pool()),
    _ok(
        "legacy-empty-sshKeys",
        make_pool(workerClassName=ABSENT, sshKeys=[]),
        operation="UPDATE",
        old=make_pool(workerClassName=ABSENT),
    ),
    _ok("kairos-empty-talos-block", make_pool(talos={}, **KAIROS)),
    _ok(
        "kairos-empty-talos-scalars",
        make_pool(talos={"version": "", "schematicID": "", "registryMirrors": {}}, **KAIROS),
    ),
    _ok("kairos-empty-kernelModules", make_pool(kernelModules=[], **KAIROS)),
    _ok("kairos-empty-osImage", make_pool(kubevirt={"osImage": {}}, **KAIROS)),
    _ok("kairos-empty-templateTags", make_pool(proxmox={"templateTags": []}, **KAIROS)),
    _ok("kairos-vgpu", make_pool(gpus=[{**NVIDIA_GPU, "vgpu": True}], **KAIROS)),
    _ok("kairos-on-kubevirt", make_pool(**KAIROS)),
    _ok("kairos-class-empty-talos-settings", make_class("kairos-plain", "kairos", talos={}, kernelModules=[])),
    _ok("kairos-class-without-image", make_class("kairos-platform", "kairos")),
    _ok("kairos-class-fixed-image", make_class("kairos-pinned", "kairos", image=KAIROS_FIXED["spec"]["image"])),
    _ok(
        "kairos-class-tag-and-digest",
        make_class(
            "kairos-tag-digest",
            "kairos",
            image={"kubernetesVersion": "v1.35.6", "reference": "registry.example.com/w:v1.35.6@sha256:" + "a" * 64},
        ),
    ),
    _ok("kairos-class-image-both-empty", make_class("kairos-none", "kairos", image={})),
    _ok("fixed-image-matching-minor", make_pool(workerClassName="kairos-example-v1-35-6-r1", version="v1.35")),
    _ok("talos-vgpu-false", make_pool(gpus=[NVIDIA_GPU])),
    _ok("control-plane-same-minor", make_pool(version="v1.35")),
    _ok("control-plane-three-minors-older", make_pool(version="v1.32")),
    _ok("talos-minor-runs-pool-minor", make_pool(version="v1.34", talos={"version": "v1.12.4"})),
    _ok("builtin-golden-exists", make_pool(kubevirt={"osImage": {"builtin": {}}})),
    _ok(
        "builtin-golden-other-schematic-exists",
        make_pool(talos={"schematicID": SCHEMATIC_B}, kubevirt={"osImage": {"builtin": {}}}),
    ),
    _ok("factory-matching-version", make_pool(kubevirt={"osImage": {"factory": {"version": "v1.13.6"}}})),
    _ok("factory-without-golden", make_pool(talos={"schematicID": SCHEMATIC_C}, kubevirt={"osImage": {"factory": {}}})),
    _ok("proxmox-with-tags", make_pool(proxmox={"templateTags": ["talos-v1.13.6"]}, **PVE)),
    _ok(
        "proxmox-empty-osImage", make_pool(proxmox={"templateTags": ["talos-v1.13.6"]}, kubevirt={"osImage": {}}, **PVE)
    ),
    _ok("replicas-min-equals-max", make_pool(minReplicas=2, maxReplicas=2)),
    _ok("replicas-min-zero", make_pool(minReplicas=0, maxReplicas=2)),
    _ok(
        "class-metadata-only-update",
        {**TALOS_EXAMPLE, "metadata": {"name": "talos-example-r1", "labels": {"tier": "gold"}}},
        operation="UPDATE",
        old=TALOS_EXAMPLE,
    ),
    _ok("class-delete-unused", None, operation="DELETE", old=TALOS_EXAMPLE),
    _ok("compute-plane-allowlist", make_compute_plane()),
]


def test_every_api_code_has_a_denial_row() -> None:
    assert {case.code for case in DENIALS} == set(API_CODES)
    assert len(API_CODES) == 41


def test_the_implementation_knows_exactly_the_api_codes() -> None:
    assert set(CODES) == set(API_CODES)


@pytest.mark.parametrize("case", DENIALS, ids=[case.id for case in DENIALS])
def test_denial(case: Case) -> None:
    decision = admit(case.state(), case.operation, case.obj, old=case.old)
    assert not decision.allowed
    assert has_denial(decision.denials, case.code, case.fields), (
        f"expected {case.code} at one of {case.fields}, got {[str(v) for v in decision.denials]}"
    )
    for violation in decision.denials:
        assert violation.code in API_CODES
        assert violation.field and violation.message, violation
    # The row isolates its rule: nothing else about the request is wrong.
    assert {v.code for v in decision.denials} <= {case.code, *case.also}, [str(v) for v in decision.denials]


@pytest.mark.parametrize("case", NEIGHBOURS, ids=[case.id for case in NEIGHBOURS])
def test_allowed_neighbour(case: Case) -> None:
    decision = admit(case.state(), case.operation, case.obj, old=case.old)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert decision.denials == []


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            make_pool(sshKeys=[SSH_KEY], gpus=[{**NVIDIA_GPU, "vgpu": True}], minReplicas=-1),
            {
                ("SSHKeysOnTalos", ("spec.sshKeys", "spec.sshKeys[0]")),
                ("TalosVGPU", ("spec.gpus[0].vgpu", "spec.gpus[0]")),
                ("InvalidReplicas", ("spec.minReplicas",)),
            },
        ),
        (
            make_pool(sshKeys=[SSH_KEY, PRIVATE_KEY], talos={"schematicID": SCHEMATIC_B}, **KAIROS),
            {
                ("TooManySSHKeys", ("spec.sshKeys",)),
                ("PrivateKeyMaterial", ("spec.sshKeys[1]",)),
                ("TalosSettingOnKairos", ("spec.talos.schematicID",)),
            },
        ),
        (
            make_pool(maxReplicas="two", sshKeys=[SSH_KEY], minReplicas=-2),
            {
                ("Invalid", ("spec.maxReplicas",)),
                ("SSHKeysOnTalos", ("spec.sshKeys", "spec.sshKeys[0]")),
                ("InvalidReplicas", ("spec.minReplicas",)),
            },
        ),
        (
            make_pool(cluster=PROXMOX_CLUSTER, kubevirt={"osImage": {"builtin": {}, "factory": {}}}),
            {
                ("EmptyTemplateTags", ("spec.proxmox.templateTags",)),
                ("OsImageOnProxmox", ("spec.kubevirt.osImage",)),
            },
        ),
        (
            make_compute_plane(
                node_groups={
                    "a": {"workerClassName": "kairos", "talos": {"version": "v1.13.6"}},
                    "b": {"minReplicas": 3, "maxReplicas": 1, "sshKeys": []},
                }
            ),
            {
                ("NotAllowedInComputePlane", ("spec.nodeGroups.a.workerClassName",)),
                ("NotAllowedInComputePlane", ("spec.nodeGroups.a.talos",)),
                ("NotAllowedInComputePlane", ("spec.nodeGroups.b.sshKeys",)),
                ("InvalidReplicas", ("spec.nodeGroups.b.minReplicas", "spec.nodeGroups.b.maxReplicas")),
            },
        ),
    ],
    ids=["talos-three-rules", "kairos-three-rules", "invalid-with-rules", "proxmox-two-rules", "compute-plane-groups"],
)
def test_several_denials_are_reported_together(obj: Any, expected: set[tuple[str, tuple[str, ...]]]) -> None:
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    for code, fields in expected:
        assert has_denial(decision.denials, code, fields), (code, fields, [str(v) for v in decision.denials])


@pytest.mark.parametrize(
    "setting",
    [
        {"talos": {"version": "v1.13.6"}},
        {"talos": {"schematicID": SCHEMATIC_B}},
        {"talos": {"imageFactoryURL": "https://factory.example"}},
        {"talos": {"imageFactoryCA": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}},
        {"talos": {"installerRepository": "factory.example/installer"}},
        {"talos": {"registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}}}},
        {"kernelModules": [{"name": "nvme_tcp"}]},
        {"kubevirt": {"osImage": {"factory": {}}}},
        {"kubevirt": {"osImage": {"builtin": {}}}},
        {"proxmox": {"templateTags": ["talos-v1.13.6"]}},
    ],
    ids=[
        "talos.version",
        "talos.schematicID",
        "talos.imageFactoryURL",
        "talos.imageFactoryCA",
        "talos.installerRepository",
        "talos.registryMirrors",
        "kernelModules",
        "kubevirt.osImage.factory",
        "kubevirt.osImage.builtin",
        "proxmox.templateTags",
    ],
)
@pytest.mark.parametrize("where", ["pool", "class"])
def test_every_nonempty_talos_setting_is_refused_on_kairos(setting: dict[str, Any], where: str) -> None:
    key = next(iter(setting))
    inner = setting[key]
    path = "spec." + key + ("." + next(iter(inner)) if key in ("talos", "kubevirt", "proxmox") else "")
    accepted = (path, f"{path}[0]", "spec.kubevirt.osImage.factory", "spec.kubevirt.osImage.builtin")
    obj = make_pool(**setting, **KAIROS) if where == "pool" else make_class("kairos-talosish", "kairos", **setting)
    decision = admit(make_state(), "CREATE", obj)
    assert has_denial(decision.denials, "TalosSettingOnKairos", accepted), [str(v) for v in decision.denials]


def test_kairos_on_proxmox_is_refused_even_through_the_platform_default() -> None:
    state = make_state(platform=make_platform(defaultWorkerClass="kairos"))
    decision = admit(state, "CREATE", make_pool(workerClassName=ABSENT, cluster=PROXMOX_CLUSTER))
    assert has_denial(decision.denials, "KairosOnProxmox", ("spec.workerClassName", "spec.cluster"))


@pytest.mark.parametrize(
    ("pool_minor", "parent_minor", "allowed"),
    [
        ("v1.35", "v1.35", True),
        ("v1.34", "v1.35", True),
        ("v1.32", "v1.35", True),
        ("v1.31", "v1.35", False),
        # v1.36 on a v1.35 parent: not a minor the chart renders, UnsupportedVersion alone
        # (tests/resolve/test_versions.py), so no skew denial is derived from it
        ("v1.35", "v1.34", False),
        ("v1.33", "v1.36", True),
        ("v1.32", "v1.36", False),
    ],
    ids=lambda value: str(value),
)
def test_control_plane_skew(pool_minor: str, parent_minor: str, allowed: bool) -> None:
    state = make_state(clusters=[make_cluster(version=parent_minor)])
    decision = admit(state, "CREATE", make_pool(version=pool_minor))
    assert has_denial(decision.denials, "ControlPlaneTooOld", "spec.version") is (not allowed), [
        str(v) for v in decision.denials
    ]
    assert decision.allowed is allowed


@pytest.mark.parametrize(
    ("pool", "in_use"),
    [
        (make_pool("user", workerClassName="talos-example-r1"), True),
        (make_pool("user", namespace="other-tenant", workerClassName="talos-example-r1"), True),
        (make_release("direct", workerClassName="talos-example-r1"), True),
        (make_pool("user", workerClassName="talos"), False),
        (make_pool("user", workerClassName=ABSENT), False),
        (make_release("direct"), False),
    ],
    ids=["pool", "pool-other-namespace", "helmrelease", "other-class", "classless-pool", "classless-release"],
)
@pytest.mark.parametrize("form", ["kubernetes", "cli"])
def test_class_delete_while_in_use(pool: Any, in_use: bool, form: str) -> None:
    state = make_state([pool])
    obj, old = (None, TALOS_EXAMPLE) if form == "kubernetes" else (TALOS_EXAMPLE, TALOS_EXAMPLE)
    decision = admit(state, "DELETE", obj, old=old)
    assert has_denial(decision.denials, "ClassInUse", ("metadata.name", "metadata")) is in_use
    assert decision.allowed is (not in_use)
    assert decision.patch == []


def test_classless_pools_do_not_hold_the_builtin_talos_class() -> None:
    state = make_state([make_pool("legacy", workerClassName=ABSENT), make_release("direct")])
    builtin_talos = make_class("talos")
    decision = admit(state, "DELETE", None, old=builtin_talos)
    assert not any(v.code == "ClassInUse" for v in decision.denials), [str(v) for v in decision.denials]


@pytest.mark.parametrize(
    "change",
    [
        {"talos": {"version": "v1.13.5"}},
        {"talos": {"version": "v1.13.6"}, "kernelModules": [{"name": "nvme_tcp"}]},
        {"bootstrap": "kairos", "talos": ABSENT},
        {"talos": {"version": "v1.13.6", "schematicID": SCHEMATIC_B}},
    ],
    ids=["scalar", "added-list", "bootstrap", "added-scalar"],
)
def test_class_spec_is_immutable(change: dict[str, Any]) -> None:
    new = make_class("talos-example-r1", **change)
    decision = admit(make_state(), "UPDATE", new, old=TALOS_EXAMPLE)
    assert not decision.allowed
    assert any(v.code == "ClassImmutable" and v.field.startswith("spec") for v in decision.denials)


def test_fixed_image_class_spec_is_immutable() -> None:
    image = {"kubernetesVersion": "v1.35.7", "reference": FIXED_REFERENCE}
    new = make_class(KAIROS_FIXED["metadata"]["name"], "kairos", image=image)
    decision = admit(make_state(), "UPDATE", new, old=KAIROS_FIXED)
    assert any(v.code == "ClassImmutable" for v in decision.denials)


@pytest.mark.parametrize(
    "metadata",
    [
        {"name": "talos-example-r1", "labels": {"tier": "gold"}},
        {"name": "talos-example-r1", "annotations": {"note": "hoster"}},
        {"name": "talos-example-r1", "finalizers": ["workerclass.cozystack.io/in-use"]},
    ],
    ids=["labels", "annotations", "finalizers"],
)
def test_class_metadata_only_update_is_allowed(metadata: dict[str, Any]) -> None:
    new = {**TALOS_EXAMPLE, "metadata": metadata, "status": {"pools": 3}}
    decision = admit(make_state(), "UPDATE", new, old=TALOS_EXAMPLE)
    assert decision.allowed, [str(v) for v in decision.denials]


def test_messages_are_actionable_text() -> None:
    decision = admit(make_state(), "CREATE", make_pool(workerClassName="nope", sshKeys=[SSH_KEY]))
    for violation in decision.denials:
        assert isinstance(violation.message, str) and len(violation.message) > 10
    shown = {str(v) for v in decision.denials}
    assert any(s.startswith("ClassNotFound spec.workerClassName: ") for s in shown), shown


def test_kairos_platform_image_missing_for_the_minor_is_refused() -> None:
    """A built-in Kairos pool needs a platform Kairos image for its minor (or a class with a fixed one)."""
    state = make_state(clusters=[make_cluster(version="v1.36")])
    decision = admit(state, "CREATE", make_pool(workerClassName="kairos", version="v1.36"))
    assert not decision.allowed
    assert any(v.field == "spec.version" for v in decision.denials), [str(v) for v in decision.denials]
