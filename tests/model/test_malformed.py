"""Malformed input never raises: wrong types, unknown fields, bad versions and digests become
``Invalid`` (or the specific code) with a field path, through both doors (admit and resolve).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import ABSENT, has_denial, make_class, make_compute_plane, make_pool, make_state
from workerclass import Denied, admit, resolve

#: (id, pool spec overrides, code, accepted field paths)
POOL_ROWS: list[tuple[str, dict[str, Any], str, tuple[str, ...]]] = [
    ("minReplicas-string", {"minReplicas": "2"}, "Invalid", ("spec.minReplicas",)),
    ("minReplicas-float", {"minReplicas": 1.5}, "Invalid", ("spec.minReplicas",)),
    ("minReplicas-bool", {"minReplicas": True}, "Invalid", ("spec.minReplicas",)),
    ("maxReplicas-list", {"maxReplicas": [3]}, "Invalid", ("spec.maxReplicas",)),
    ("sshKeys-string", {"sshKeys": "ssh-ed25519 AAAA"}, "Invalid", ("spec.sshKeys",)),
    ("sshKeys-item-int", {"sshKeys": [3], "workerClassName": "kairos"}, "Invalid", ("spec.sshKeys[0]",)),
    ("labels-list", {"labels": ["a"]}, "Invalid", ("spec.labels",)),
    ("roles-string", {"roles": "ingress"}, "Invalid", ("spec.roles",)),
    ("taints-bad-effect", {"taints": [{"key": "a", "effect": "Sometimes"}]}, "Invalid", ("spec.taints[0].effect",)),
    ("gpus-mapping", {"gpus": {"name": "nvidia.com/x"}}, "Invalid", ("spec.gpus",)),
    ("gpus-vgpu-string", {"gpus": [{"name": "nvidia.com/x", "vgpu": "yes"}]}, "Invalid", ("spec.gpus[0].vgpu",)),
    # the chart's render-time refusals (upstream README's mapping), not parse errors
    ("resources-half", {"resources": {"cpu": "4"}}, "IncompleteResources", ("spec.resources", "spec.resources.memory")),
    ("resources-bad-quantity", {"resources": {"cpu": "four", "memory": "8Gi"}}, "Invalid", ("spec.resources.cpu",)),
    ("maxUnhealthy-word", {"maxUnhealthy": "half"}, "InvalidMaxUnhealthy", ("spec.maxUnhealthy",)),
    ("maxUnhealthy-integer", {"maxUnhealthy": 1}, "Invalid", ("spec.maxUnhealthy",)),
    ("timeout-word", {"readyUnknownTimeout": "soon"}, "InvalidDuration", ("spec.readyUnknownTimeout",)),
    ("cluster-missing", {"cluster": ABSENT}, "Invalid", ("spec.cluster",)),
    ("cluster-int", {"cluster": 5}, "Invalid", ("spec.cluster",)),
    ("workerClassName-int", {"workerClassName": 5}, "Invalid", ("spec.workerClassName",)),
    ("workerClassName-list", {"workerClassName": ["talos"]}, "Invalid", ("spec.workerClassName",)),
    ("version-without-v", {"version": "1.35"}, "Invalid", ("spec.version",)),
    ("version-patch-not-selectable", {"version": "v1.35.6"}, "Invalid", ("spec.version",)),
    ("version-word", {"version": "latest"}, "Invalid", ("spec.version",)),
    ("version-float", {"version": 1.35}, "Invalid", ("spec.version",)),
    ("talos-string", {"talos": "v1.13.6"}, "Invalid", ("spec.talos",)),
    ("talos-version-without-v", {"talos": {"version": "1.13.6"}}, "Invalid", ("spec.talos.version",)),
    ("talos-version-minor-only", {"talos": {"version": "v1.13"}}, "Invalid", ("spec.talos.version",)),
    ("talos-version-int", {"talos": {"version": 113}}, "Invalid", ("spec.talos.version",)),
    ("schematic-short", {"talos": {"schematicID": "abc"}}, "Invalid", ("spec.talos.schematicID",)),
    ("schematic-not-hex", {"talos": {"schematicID": "z" * 64}}, "Invalid", ("spec.talos.schematicID",)),
    (
        "factory-url-without-scheme",
        {"talos": {"imageFactoryURL": "factory.example"}},
        "Invalid",
        ("spec.talos.imageFactoryURL",),
    ),
    ("ca-not-pem", {"talos": {"imageFactoryCA": "trust me"}}, "Invalid", ("spec.talos.imageFactoryCA",)),
    ("mirrors-list", {"talos": {"registryMirrors": ["docker.io"]}}, "Invalid", ("spec.talos.registryMirrors",)),
    (
        "mirror-endpoints-string",
        {"talos": {"registryMirrors": {"docker.io": {"endpoints": "https://m.example"}}}},
        "Invalid",
        ("spec.talos.registryMirrors.docker.io.endpoints",),
    ),
    ("kernelModules-string", {"kernelModules": "nvme_tcp"}, "Invalid", ("spec.kernelModules",)),
    ("kernelModules-name-int", {"kernelModules": [{"name": 3}]}, "Invalid", ("spec.kernelModules[0].name",)),
    ("kernelModules-name-missing", {"kernelModules": [{}]}, "InvalidKernelModule", ("spec.kernelModules[0].name",)),
    ("kernelModules-item-string", {"kernelModules": ["nvme_tcp"]}, "Invalid", ("spec.kernelModules[0]",)),
    (
        "kernelModules-parameters-string",
        {"kernelModules": [{"name": "nvidia", "parameters": "a=1"}]},
        "Invalid",
        ("spec.kernelModules[0].parameters",),
    ),
    ("kubevirt-string", {"kubevirt": "builtin"}, "Invalid", ("spec.kubevirt",)),
    ("osImage-list", {"kubevirt": {"osImage": ["builtin"]}}, "Invalid", ("spec.kubevirt.osImage",)),
    (
        "factory-version-minor-only",
        {"kubevirt": {"osImage": {"factory": {"version": "v1.13"}}}},
        "Invalid",
        ("spec.kubevirt.osImage.factory.version",),
    ),
    (
        "factory-schematic-short",
        {"kubevirt": {"osImage": {"factory": {"schematicID": "abc"}}}},
        "Invalid",
        ("spec.kubevirt.osImage.factory.schematicID",),
    ),
    ("templateTags-string", {"proxmox": {"templateTags": "t"}}, "Invalid", ("spec.proxmox.templateTags",)),
    ("templateTags-item-int", {"proxmox": {"templateTags": [1]}}, "Invalid", ("spec.proxmox.templateTags[0]",)),
]


#: (id, pool spec overrides, the path a warning names): keys no one reads, said and not refused
#: (tests/admission/test_unknown_keys.py has the rule)
WARNED_ROWS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown-field", {"surprise": 1}, "spec.surprise"),
    ("talos-unknown-key", {"talos": {"kernel": "x"}}, "spec.talos.kernel"),
    ("osImage-unknown-source", {"kubevirt": {"osImage": {"url": {}}}}, "spec.kubevirt.osImage.url"),
    (
        "builtin-has-no-endpoint",
        {"kubevirt": {"osImage": {"builtin": {"endpoint": "https://x.example"}}}},
        "spec.kubevirt.osImage.builtin.endpoint",
    ),
]


@pytest.mark.parametrize(("spec", "path"), [r[1:] for r in WARNED_ROWS], ids=[r[0] for r in WARNED_ROWS])
def test_unknown_keys_are_warned_through_both_doors(spec: dict[str, Any], path: str) -> None:
    decision = admit(make_state(), "CREATE", make_pool("md1", **spec))
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any(w.startswith(f"{path}: unknown field") for w in decision.warnings), decision.warnings
    assert resolve(make_state(), make_pool("md1", **spec)) is not None


@pytest.mark.parametrize(("spec", "code", "fields"), [r[1:] for r in POOL_ROWS], ids=[r[0] for r in POOL_ROWS])
def test_malformed_pool_admit(spec: dict[str, Any], code: str, fields: tuple[str, ...]) -> None:
    decision = admit(make_state(), "CREATE", make_pool(**spec))
    assert not decision.allowed
    assert has_denial(decision.denials, code, fields), [str(v) for v in decision.denials]


@pytest.mark.parametrize(("spec", "code", "fields"), [r[1:] for r in POOL_ROWS], ids=[r[0] for r in POOL_ROWS])
def test_malformed_pool_resolve(spec: dict[str, Any], code: str, fields: tuple[str, ...]) -> None:
    with pytest.raises(Denied) as denied:
        resolve(make_state(), make_pool(**spec))
    assert has_denial(denied.value.violations, code, fields), [str(v) for v in denied.value.violations]


@pytest.mark.parametrize(
    "spec",
    [None, "a string", ["list"], 42, True],
    ids=["null", "string", "list", "int", "bool"],
)
def test_spec_of_the_wrong_type(spec: Any) -> None:
    obj = make_pool()
    obj["spec"] = spec
    state = make_state()
    decision = admit(state, "CREATE", obj)
    assert not decision.allowed
    expected = ("spec", "spec.cluster", "spec.workerClassName")
    assert any(v.field in expected for v in decision.denials), [str(v) for v in decision.denials]
    with pytest.raises(Denied):
        resolve(state, obj)


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "KubernetesNodes"},
        {"kind": "KubernetesNodes", "metadata": "x", "spec": {}},
        {"kind": "KubernetesNodes", "metadata": {"name": ["x"]}, "spec": {"cluster": "example"}},
        {"kind": 3, "spec": {}},
        {},
    ],
    ids=["no-metadata", "metadata-string", "name-list", "kind-int", "empty"],
)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE", "DELETE"])
def test_odd_objects_never_raise(obj: dict[str, Any], operation: str) -> None:
    decision = admit(make_state(), operation, obj, old=obj if operation != "CREATE" else None)
    assert isinstance(decision.allowed, bool)


@pytest.mark.parametrize("operation", ["PATCH", "", "create"])
def test_unknown_operation_is_refused_not_raised(operation: str) -> None:
    decision = admit(make_state(), operation, make_pool())
    assert not decision.allowed
    assert decision.denials and all(v.code == "Invalid" for v in decision.denials)


@pytest.mark.parametrize(
    ("spec", "code", "fields"),
    [
        ({"image": "registry.example.com/w@sha256:" + "a" * 64}, "Invalid", ("spec.image",)),
        (
            {"image": {"kubernetesVersion": "1.35.6", "reference": "r@sha256:" + "a" * 64}},
            "Invalid",
            ("spec.image.kubernetesVersion",),
        ),
        (
            {"image": {"kubernetesVersion": "v1.35.6", "reference": "r@sha256:" + "A" * 64}},
            "ImageNotPinned",
            ("spec.image.reference",),
        ),
        (
            {"image": {"kubernetesVersion": "v1.35.6", "reference": "r@sha256:" + "g" * 64}},
            "ImageNotPinned",
            ("spec.image.reference",),
        ),
        (
            {"image": {"kubernetesVersion": "v1.35.6", "reference": "r@sha256:" + "a" * 65}},
            "ImageNotPinned",
            ("spec.image.reference",),
        ),
        ({"image": {"kubernetesVersion": "v1.35.6", "reference": "r"}}, "ImageNotPinned", ("spec.image.reference",)),
        (
            {"image": {"kubernetesVersion": "v1.35.6", "reference": "r@sha256:" + "a" * 64, "tag": "x"}},
            "Invalid",
            ("spec.image.tag",),
        ),
        ({"talos": {"version": "v1.13.6"}}, "TalosSettingOnKairos", ("spec.talos.version",)),
    ],
    ids=[
        "image-string",
        "image-version-without-v",
        "digest-uppercase",
        "digest-not-hex",
        "digest-too-long",
        "no-digest",
        "image-unknown-key",
        "talos-on-kairos",
    ],
)
def test_malformed_kairos_class(spec: dict[str, Any], code: str, fields: tuple[str, ...]) -> None:
    decision = admit(make_state(), "CREATE", make_class("k", "kairos", **spec))
    assert not decision.allowed
    assert has_denial(decision.denials, code, fields), [str(v) for v in decision.denials]


@pytest.mark.parametrize(
    ("groups", "fields"),
    [
        ("workers", ("spec.nodeGroups",)),
        ({"workers": "big"}, ("spec.nodeGroups.workers",)),
        ({"workers": {"minReplicas": "x"}}, ("spec.nodeGroups.workers.minReplicas",)),
        ({"workers": {"gpus": "nvidia"}}, ("spec.nodeGroups.workers.gpus",)),
    ],
    ids=["groups-string", "group-string", "replicas-string", "gpus-string"],
)
def test_malformed_compute_plane(groups: Any, fields: tuple[str, ...]) -> None:
    obj = make_compute_plane()
    obj["spec"]["nodeGroups"] = groups
    decision = admit(make_state(), "CREATE", obj)
    assert not decision.allowed
    assert has_denial(decision.denials, "Invalid", fields), [str(v) for v in decision.denials]


def test_a_malformed_stored_pool_does_not_break_the_state() -> None:
    broken = make_pool("broken", minReplicas={"no": 1}, talos=[1, 2])
    state = make_state([broken, make_pool("fine")])
    assert resolve(state, make_pool("fine")).bootstrap == "talos"
    with pytest.raises(Denied):
        resolve(state, broken)
