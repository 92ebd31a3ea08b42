"""The incrementally updated State equals ``State.from_objects`` of the final objects.

``from_objects`` is itself the fold of the incremental step over the objects (one indexing), so
what this proves is that a State does not depend on its history: any sequence of adds, changes,
status writes and deletes leaves the snapshot one pass over the surviving objects gives.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workerclass.state import PMap, State, identify

from .probes import HR_LABEL, NS, decisions, example_objects, indexes, noisy, probe_objects


def _kn(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"version": "v1.35", "minReplicas": 1, "maxReplicas": 2, **spec},
    }


def _hr(name: str, labelled: bool = True, **values: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if labelled:
        metadata["labels"] = {HR_LABEL: "KubernetesNodes"}
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": metadata,
        "spec": {"interval": "5m", "values": {"version": "v1.35", "minReplicas": 1, "maxReplicas": 2, **values}},
    }


def _class(name: str, bootstrap: str, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "generation": 1}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "cozystack.io/v1alpha1",
        "kind": "WorkerClass",
        "metadata": metadata,
        "spec": {"bootstrap": bootstrap},
    }


def _cluster(name: str, version: str, infrastructure: str = "kubevirt") -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"version": version, "infrastructure": infrastructure},
    }


def _parent_release(name: str, version: str, infrastructure: str = "kubevirt", labelled: bool = True) -> dict[str, Any]:
    """The HelmRelease ``kubernetes-<name>`` Cozystack stores a parent Kubernetes app as."""
    metadata: dict[str, Any] = {"name": f"kubernetes-{name}", "namespace": NS}
    if labelled:
        metadata["labels"] = {HR_LABEL: "Kubernetes"}
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": metadata,
        "spec": {"values": {"version": version, "infrastructure": infrastructure}},
    }


def _platform(default: str) -> dict[str, Any]:
    base = next(obj for obj in example_objects() if obj["kind"] == "WorkerPlatform")
    out = copy.deepcopy(base)
    out["spec"]["defaultWorkerClass"] = default
    return out


def _instancetype(name: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpu}, "memory": {"guest": "4Gi"}},
    }


def _plane(**groups: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "ComputePlane",
        "metadata": {"name": "plane", "namespace": NS},
        "spec": {"version": "v1.35", "nodeGroups": groups},
    }


#: identity -> the versions of that object an event may carry
VARIANTS: list[list[dict[str, Any]]] = [
    [_kn("example-a", cluster="example"), _kn("example-a", cluster="example", workerClassName="gpu")],
    [_kn("example-b", cluster="example", workerClassName="kairos"), _kn("example-b", cluster="example")],
    [
        _hr("kubernetes-nodes-example-a", cluster="example"),
        _hr("kubernetes-nodes-example-a", cluster="example", workerClassName="gpu"),
    ],
    [
        _hr("kubernetes-nodes-example-b", cluster="example", workerClassName="talos"),
        _hr("kubernetes-nodes-example-b", False, cluster="example"),
    ],
    [_hr("pve-standalone", cluster="pve", workerClassName="gpu"), _hr("pve-standalone", cluster="pve")],
    [_kn("example-legacy", cluster="example", workerClassName="talos"), _kn("example-legacy", cluster="example")],
    [_class("gpu", "talos"), _class("gpu", "kairos"), _class("gpu", "talos", deleting=True)],
    [_class("talos", "talos"), _class("kairos", "kairos")],
    [_cluster("pve", "v1.35", "proxmox"), _cluster("pve", "v1.34", "proxmox")],
    [_cluster("example", "v1.35"), _cluster("example", "v1.34")],
    [_platform("talos"), _platform("kairos")],
    [_instancetype("u1.medium", 2), _instancetype("u9.huge", 32)],
    [_plane(workers={"minReplicas": 1}), _plane(workers={"minReplicas": 2}, gpu={"minReplicas": 1})],
    [_parent_release("pve", "v1.33", "proxmox"), _parent_release("pve", "v1.35"), _hr("kubernetes-pve")],
    [_parent_release("solo", "v1.35"), _parent_release("solo", "v1.34", labelled=False)],
]

EVENT = st.tuples(
    st.sampled_from(["ADDED", "MODIFIED", "DELETED", "STATUS"]),
    st.integers(0, len(VARIANTS) - 1),
    st.integers(0, 2),
)


def _replay(events: list[tuple[str, int, int]]) -> tuple[dict[tuple[str, str, str], dict[str, Any]], State]:
    """The events applied one by one to a State, beside the final objects they leave."""
    objects = {identify(obj): obj for obj in example_objects()}
    start = State.from_objects(objects.values())
    state = start
    for serial, (event, index, variant) in enumerate(events):
        choices = VARIANTS[index]
        obj = choices[variant % len(choices)]
        key = identify(obj)
        if event == "DELETED":
            objects.pop(key, None)
            state = state.without(*key)
        elif event == "STATUS":  # a write that changes nothing read: the stored object, noisier
            if key in objects:
                objects[key] = noisy(objects[key], serial)
                state = state.with_object(objects[key])
        else:
            objects[key] = obj
            state = state.with_object(obj)
    return objects, state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENT, max_size=25))
def test_incremental_state_equals_a_rebuild(events: list[tuple[str, int, int]]) -> None:
    objects, state = _replay(events)
    rebuilt = State.from_objects(objects.values())
    assert indexes(state) == indexes(rebuilt)
    probes = probe_objects(rebuilt)
    assert decisions(state, probes) == decisions(rebuilt, probes)


def test_replay_applies_what_it_says() -> None:
    """A fixed sequence: the incremental State holds what the events wrote (the property's baseline)."""
    events = [("MODIFIED", 0, 1), ("ADDED", 2, 1), ("STATUS", 2, 0), ("DELETED", 6, 0), ("ADDED", 10, 1)]
    _, state = _replay(events)
    assert state.platform.default_worker_class == "kairos"
    assert [p.identity for p in state.pools_selecting("gpu")] == [f"{NS}/example-a"]
    assert state.backing_values[(NS, "example-a")]["workerClassName"] == "gpu"


def test_a_snapshot_never_changes_under_its_reader() -> None:
    before = State.from_objects(example_objects())
    pools = dict(before.pools)
    after = before.with_object(VARIANTS[0][1]).without("KubernetesNodes", NS, "example-kairos")
    assert dict(before.pools) == pools
    assert ("KubernetesNodes", NS, "example-a") in after.pools
    assert ("KubernetesNodes", NS, "example-kairos") not in after.pools
    assert ("KubernetesNodes", NS, "example-kairos") in before.pools
    assert isinstance(after.pools, PMap)
    assert after.memo is not before.memo


def test_pmap_is_a_persistent_mapping() -> None:
    empty = PMap()
    one = empty.set("a", 1)
    two = one.set("b", 2).set("a", 3)
    assert (len(empty), len(one), len(two)) == (0, 1, 2)
    assert dict(one) == {"a": 1}
    assert two == {"a": 3, "b": 2}
    assert two.delete("a") == {"b": 2} and two.delete("zz") is two
    assert two.put("b", None) == {"a": 3}
    assert two.keys() == {"a", "b"} and two.keys() - {"a"} == {"b"}  # set-like, as a dict's
    assert ("a", 3) in two.items() and sorted(two.values()) == [2, 3]
    big = PMap((str(i), i) for i in range(5000))
    assert len(big.set("x", 0)) == 5001 and len(big) == 5000 and big.get("4999") == 4999
