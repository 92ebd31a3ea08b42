"""A parent Kubernetes app's node groups are classless pools of the parent ``kubernetes`` chart,
which reads no class-era key: a group that sets one (a class, Kairos settings, SSH keys, labels,
taints, a disk source, a fixed image...) is refused ``NotAllowedInNodeGroup`` with how to move it
to a standalone KubernetesNodes pool; plain groups are allowed, and a stored parent keeps
ratcheting."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import make_cluster, make_state
from workerclass import admit

GROUP = {"minReplicas": 1, "maxReplicas": 2, "instanceType": "u1.medium", "diskSize": "20Gi"}


def _parent(**group: Any) -> dict[str, Any]:
    obj = make_cluster()
    obj["spec"]["nodeGroups"] = {"md0": {**GROUP, **group}}
    return obj


def _as_release(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-{obj['metadata']['name']}",
            "namespace": obj["metadata"]["namespace"],
            "labels": {"apps.cozystack.io/application.kind": "Kubernetes"},
        },
        "spec": {"values": obj["spec"]},
    }


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("workerClassName", "kairos"),
        ("workerClassName", "talos"),
        ("sshKeys", []),
        ("labels", {"team": "a"}),
        ("taints", [{"key": "a", "value": "b", "effect": "NoSchedule"}]),
        ("kernelModules", [{"name": "nvme_tcp"}]),
        ("kubevirt", {"osImage": {}}),
        ("proxmox", {"templateTags": ["x"]}),
        ("bootstrap", "kairos"),
        ("image", {"reference": "r@sha256:" + "0" * 64}),
        ("imagePullSecrets", [{"name": "x"}]),
    ],
    ids=lambda v: str(v) if isinstance(v, str) else None,
)
@pytest.mark.parametrize("stored_as", ["Kubernetes", "HelmRelease"])
def test_a_class_era_key_in_a_node_group_is_refused(key: str, value: Any, stored_as: str) -> None:
    obj = _parent(**{key: value})
    values = "spec"
    if stored_as == "HelmRelease":
        obj, values = _as_release(obj), "spec.values"
    decision = admit(make_state(clusters=[]), "CREATE", obj)
    assert not decision.allowed
    assert [(d.code, d.field) for d in decision.denials] == [
        ("NotAllowedInNodeGroup", f"{values}.nodeGroups.md0.{key}")
    ]
    message = decision.denials[0].message
    assert "standalone KubernetesNodes pool" in message and "example-" in message and "classless" in message


@pytest.mark.parametrize("stored_as", ["Kubernetes", "HelmRelease"])
def test_plain_node_groups_are_allowed(stored_as: str) -> None:
    obj = _parent(roles=["ingress-nginx"], kubelet={"evictionHardMemory": "7%"})
    if stored_as == "HelmRelease":
        obj = _as_release(obj)
    decision = admit(make_state(clusters=[]), "CREATE", obj)
    assert decision.allowed, decision.denials


def test_a_stored_parent_with_a_class_in_a_group_still_takes_other_changes() -> None:
    stored = _parent(workerClassName="kairos")
    state = make_state([stored], clusters=[])
    changed = copy.deepcopy(stored)
    changed["spec"]["nodeGroups"]["md0"]["maxReplicas"] = 5
    decision = admit(state, "UPDATE", changed, stored)
    assert decision.allowed and any("NotAllowedInNodeGroup" in w for w in decision.warnings)
    added = copy.deepcopy(stored)
    added["spec"]["nodeGroups"]["md1"] = {**GROUP, "sshKeys": []}
    assert [d.code for d in admit(state, "UPDATE", added, stored).denials] == ["NotAllowedInNodeGroup"]
