"""The codes of the kubernetes-nodes chart's render-time refusals, names, instance types, ComputePlane.

Each row is a pool spec (classified through the built-in talos class, or classless as a direct
HelmRelease) with the code and field the upstream README's mapping gives the chart's ``fail``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    ABSENT,
    CLUSTER,
    NAMESPACE,
    has_denial,
    make_cluster,
    make_compute_plane,
    make_pool,
    make_release,
    make_state,
    rename,
)
from workerclass import State, admit, resolve, validate
from workerclass.violations import Denied

#: (id, spec overrides, code, accepted fields)
CHART_REFUSALS: list[tuple[str, dict[str, Any], str, tuple[str, ...]]] = [
    ("cluster-missing", {"cluster": ABSENT}, "Invalid", ("spec.cluster",)),
    ("cluster-empty", {"cluster": ""}, "Invalid", ("spec.cluster",)),
    ("resources-cpu-only", {"resources": {"cpu": "4"}}, "IncompleteResources", ("spec.resources.memory",)),
    ("resources-memory-only", {"resources": {"memory": "4Gi"}}, "IncompleteResources", ("spec.resources.cpu",)),
    (
        "podCpuLimit-instancetype",
        {"instanceType": "u1.medium", "podCpuLimit": "3"},
        "InvalidPodCPU",
        ("spec.podCpuLimit",),
    ),
    ("podCpuRequest-instancetype", {"podCpuRequest": "1"}, "InvalidPodCPU", ("spec.podCpuRequest",)),
    (
        "podCpuLimit-negative",
        {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "-1"},
        "InvalidPodCPU",
        ("spec.podCpuLimit",),
    ),
    (
        "podCpuLimit-zero-alone",
        {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "0"},
        "InvalidPodCPU",
        ("spec.podCpuLimit", "spec.podCpuRequest"),
    ),
    (
        "podCpuRequest-zero-beside-limit",
        {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "1", "podCpuRequest": "0"},
        "InvalidPodCPU",
        ("spec.podCpuRequest",),
    ),
    (
        "podCpuRequest-above-limit",
        {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "1", "podCpuRequest": "2"},
        "InvalidPodCPU",
        ("spec.podCpuRequest",),
    ),
    ("instancetype-missing", {"instanceType": "zz.huge"}, "InstanceTypeNotFound", ("spec.instanceType",)),
    (
        "kubelet-cpu-shape",
        {"kubelet": {"systemReservedCpu": "1.5m"}},
        "InvalidKubeletReservation",
        ("spec.kubelet.systemReservedCpu",),
    ),
    (
        "kubelet-memory-unit",
        {"kubelet": {"systemReservedMemory": "1GB"}},
        "InvalidKubeletReservation",
        ("spec.kubelet.systemReservedMemory",),
    ),
    (
        "kubelet-zero",
        {"kubelet": {"kubeReservedMemory": "0"}},
        "InvalidKubeletReservation",
        ("spec.kubelet.kubeReservedMemory",),
    ),
    (
        "kubelet-hard-not-below-soft",
        {"kubelet": {"evictionHardMemory": "12%"}},
        "InvalidKubeletReservation",
        ("spec.kubelet.evictionHardMemory", "spec.kubelet.evictionSoftMemory", "spec.kubelet"),
    ),
    (
        "kubelet-mixed-units",
        {"kubelet": {"evictionHardMemory": "500Mi"}},
        "InvalidKubeletReservation",
        ("spec.kubelet.evictionHardMemory", "spec.kubelet.evictionSoftMemory", "spec.kubelet"),
    ),
    (
        "kubelet-percentage-range",
        {"kubelet": {"evictionHardMemory": "0%"}},
        "InvalidKubeletReservation",
        ("spec.kubelet.evictionHardMemory",),
    ),
    (
        "kubelet-leaves-no-memory",
        {"instanceType": "u1.nano"},
        "InvalidKubeletReservation",
        ("spec.kubelet", "spec.instanceType", "spec.kubelet.systemReservedMemory", "spec.kubelet.kubeReservedMemory"),
    ),
    (
        "kubelet-no-effective-size",
        {"instanceType": "", "kubelet": {"systemReservedMemory": "256Mi"}},
        "InvalidKubeletReservation",
        ("spec.kubelet", "spec.kubelet.systemReservedMemory", "spec.instanceType", "spec.resources"),
    ),
    ("maxNodeProvisionTime-no-unit", {"maxNodeProvisionTime": "30"}, "InvalidDuration", ("spec.maxNodeProvisionTime",)),
    ("maxNodeProvisionTime-zero", {"maxNodeProvisionTime": "0s"}, "InvalidDuration", ("spec.maxNodeProvisionTime",)),
    ("readyUnknownTimeout-negative", {"readyUnknownTimeout": "-5m"}, "InvalidDuration", ("spec.readyUnknownTimeout",)),
    ("readyFalseTimeout-minutes-word", {"readyFalseTimeout": "30min"}, "InvalidDuration", ("spec.readyFalseTimeout",)),
    ("maxUnhealthy-fraction", {"maxUnhealthy": "12.5%"}, "InvalidMaxUnhealthy", ("spec.maxUnhealthy",)),
    ("maxUnhealthy-empty", {"maxUnhealthy": ""}, "InvalidMaxUnhealthy", ("spec.maxUnhealthy",)),
    ("maxUnhealthy-integer", {"maxUnhealthy": 1}, "Invalid", ("spec.maxUnhealthy",)),
    ("version-outside-the-chart", {"version": "v1.36"}, "UnsupportedVersion", ("spec.version",)),
    (
        "kernel-module-name",
        {"kernelModules": [{"name": "nvme$(id)"}]},
        "InvalidKernelModule",
        ("spec.kernelModules[0].name", "spec.kernelModules"),
    ),
]

#: values the chart renders, that an earlier rule refused (none may be refused now)
CHART_RENDERS: list[tuple[str, dict[str, Any]]] = [
    ("half-resources-without-instancetype", {"instanceType": "", "resources": {"cpu": "4"}}),
    ("nodeStartupTimeout-unchecked", {"nodeStartupTimeout": "soon"}),
    ("maxUnhealthy-integer-string", {"maxUnhealthy": "1"}),
    ("duration-canonical", {"maxNodeProvisionTime": "1h0m0s", "readyFalseTimeout": "20m0s"}),
    (
        "podCpu-pair",
        {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": 4, "podCpuRequest": "1500m"},
    ),
    (
        "podCpuRequest-zero-alone",
        {"instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuRequest": "0"},
    ),
    ("logSerialConsole", {"logSerialConsole": True}),
    ("quantity-integer", {"diskSize": 21474836480}),
    (
        "registryMirrors-passthrough",
        {"talos": {"registryMirrors": {"ghcr.io": {"endpoints": ["http://mirror:5000"], "skipFallback": True}}}},
    ),
    ("kubelet-reservations", {"kubelet": {"systemReservedMemory": "512Mi", "kubeReservedCpu": "100m"}}),
    ("gpu-instancetype", {"instanceType": "gn1.xlarge", "gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
]


def _classless(**spec: Any) -> dict[str, Any]:
    return make_release("md1", **spec)


@pytest.mark.parametrize(
    ("spec", "code", "fields"), [r[1:] for r in CHART_REFUSALS], ids=[r[0] for r in CHART_REFUSALS]
)
@pytest.mark.parametrize("shape", ["classified", "classless"])
def test_chart_refusals_have_their_code(spec: dict[str, Any], code: str, fields: tuple[str, ...], shape: str) -> None:
    obj = make_pool("md1", **spec) if shape == "classified" else _classless(**spec)
    decision = admit(make_state(), "CREATE", obj)
    if shape == "classless":
        fields = tuple(f.replace("spec.", "spec.values.", 1) for f in fields)
    assert not decision.allowed
    assert has_denial(decision.denials, code, fields), [str(v) for v in decision.denials]


@pytest.mark.parametrize("spec", [r[1] for r in CHART_RENDERS], ids=[r[0] for r in CHART_RENDERS])
def test_what_the_chart_renders_is_admitted(spec: dict[str, Any]) -> None:
    state = make_state()
    for obj in (_classless(**spec), make_pool("md1", **spec)):
        decision = admit(state, "CREATE", obj)
        assert decision.allowed, (obj["kind"], [str(v) for v in decision.denials])


def test_an_unknown_key_is_a_warning_as_the_chart_ignores_it() -> None:
    """The chart ignores it and Cozystack's API stores it: said, not refused (test_unknown_keys.py)."""
    decision = admit(make_state(), "CREATE", _classless(ephemeralStorage="20Gi"))
    assert decision.allowed
    assert any(w.startswith("spec.values.ephemeralStorage: unknown field") for w in decision.warnings)


# --------------------------------------------------------------------------- names


NAMES_REFUSED = [
    ("too-long", rename(make_pool(), f"{CLUSTER}-" + "p" * 29), "metadata.name"),
    ("not-dns", rename(make_pool(), f"{CLUSTER}-Bad_Name"), "metadata.name"),
    ("dotted", rename(make_pool(), f"{CLUSTER}-a.b"), "metadata.name"),
    ("other-cluster-prefix", rename(make_pool(), "other-md1"), "metadata.name"),
    ("no-pool-part", rename(make_pool(), CLUSTER), "metadata.name"),
    ("namespace-not-tenant", make_pool("md1", namespace="example"), "metadata.namespace"),
    ("release-name", rename(make_release("md1"), "example-legacy"), "metadata.name"),
    ("release-other-cluster", rename(make_release("md1"), "kubernetes-nodes-other-md1"), "metadata.name"),
    ("parent-default-md0", make_pool("md0"), "metadata.name"),
]


def _state_with_namespaces() -> State:
    return make_state(clusters=[make_cluster(), make_cluster(namespace="example")])


@pytest.mark.parametrize(("obj", "field"), [r[1:] for r in NAMES_REFUSED], ids=[r[0] for r in NAMES_REFUSED])
def test_names_are_refused_on_create(obj: dict[str, Any], field: str) -> None:
    decision = admit(_state_with_namespaces(), "CREATE", obj)
    assert has_denial(decision.denials, "InvalidPoolName", field), [str(v) for v in decision.denials]


# The tenant namespace rule is the chart's render failure, not a name check: refused on UPDATE too;
# so is a collision with the parent's node group (the chart fails every render of it).
NAMES_ONLY = [r for r in NAMES_REFUSED if r[2] == "metadata.name" and r[0] != "parent-default-md0"]


@pytest.mark.parametrize(("obj", "field"), [r[1:] for r in NAMES_ONLY], ids=[r[0] for r in NAMES_ONLY])
def test_names_are_never_refused_on_update(obj: dict[str, Any], field: str) -> None:
    """The API skips name validation on UPDATE: a stored pool keeps working under its old name."""
    state = _state_with_namespaces()
    decision = admit(state, "UPDATE", obj, old=obj)
    assert not any(v.code == "InvalidPoolName" for v in decision.denials), [str(v) for v in decision.denials]
    assert resolve(state, obj).name == obj["metadata"]["name"]


@pytest.mark.parametrize("pool", [make_pool("md0"), make_release("md0")], ids=["KubernetesNodes", "HelmRelease"])
def test_a_stored_pool_on_the_parents_node_group_is_ratcheted_on_update_and_never_resolved(
    pool: dict[str, Any],
) -> None:
    """Applied, the pool would take the parent's MachineDeployment (and its deletion would delete it):
    the controller and ``render`` refuse it; an UPDATE that leaves it as stored is let through, said."""
    state = _state_with_namespaces()
    decision = admit(state, "UPDATE", pool, old=pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any("still manages nodeGroup 'md0'" in warning for warning in decision.warnings)
    with pytest.raises(Denied) as refused:
        resolve(state, pool)
    assert has_denial(refused.value.violations, "InvalidPoolName", "metadata.name")


def test_a_name_of_36_characters_is_the_longest() -> None:
    name = f"{CLUSTER}-" + "p" * 28
    assert len(name) == 36
    assert admit(make_state(), "CREATE", rename(make_pool(), name)).allowed


def test_a_parent_that_deletes_md0_frees_the_name_and_its_own_groups_are_taken() -> None:
    parent = make_cluster()
    parent["spec"]["nodeGroups"] = {"md0": None, "gpu": {"minReplicas": 0}}
    state = make_state(clusters=[parent])
    assert admit(state, "CREATE", make_pool("md0")).allowed
    assert has_denial(admit(state, "CREATE", make_pool("gpu")).denials, "InvalidPoolName", "metadata.name")


def test_names_are_not_quoted_unless_they_are_dns_labels() -> None:
    secretish = rename(make_pool(), "s3cr3t/Pass word")
    for violation in admit(make_state(), "CREATE", secretish).denials:
        assert "s3cr3t" not in violation.message and "Pass word" not in violation.message


# --------------------------------------------------------------------------- instance types


def _instancetype(name: str, cpu: int, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpu}, "memory": {"guest": memory}},
    }


def test_instance_types_are_cluster_data() -> None:
    pool = _classless(instanceType="zz.huge")
    assert has_denial(admit(make_state(), "CREATE", pool).denials, "InstanceTypeNotFound", "spec.values.instanceType")
    state = make_state([_instancetype("zz.huge", 64, "256Gi")])
    assert admit(state, "CREATE", pool).allowed
    effective = resolve(state, pool)
    assert effective.instancetypes["zz.huge"]["spec"]["cpu"]["guest"] == 64
    assert "u1.medium" in effective.instancetypes  # Cozystack's shipped set stays


def test_a_folder_instance_type_replaces_the_shipped_one_by_name() -> None:
    tiny = _instancetype("u1.medium", 1, "512Mi")  # too small for the default reservations
    decision = admit(make_state([tiny]), "CREATE", _classless(instanceType="u1.medium"))
    assert has_denial(
        decision.denials, "InvalidKubeletReservation", ("spec.values.kubelet", "spec.values.instanceType")
    ) or any(v.code == "InvalidKubeletReservation" for v in decision.denials), [str(v) for v in decision.denials]


def test_effective_carries_what_the_chart_needs() -> None:
    pool = make_pool("md1")
    effective = resolve(make_state(), pool)
    assert effective.release == f"kubernetes-nodes-{CLUSTER}-md1"
    assert effective.values == pool["spec"]
    assert effective.cluster_values == {"_cluster": {"cluster-domain": "cozy.local"}}
    release = make_release("md2")
    release["spec"]["targetNamespace"] = "tenant-other"
    assert resolve(make_state(), release).release == f"tenant-other-kubernetes-nodes-{CLUSTER}-md2"
    release["spec"]["releaseName"] = f"kubernetes-nodes-{CLUSTER}-md2"
    assert resolve(make_state(), release).release == f"kubernetes-nodes-{CLUSTER}-md2"


# --------------------------------------------------------------------------- ComputePlane


def test_a_compute_plane_is_never_a_pools_parent() -> None:
    plane = make_compute_plane("plane")
    state = make_state([plane], clusters=[])
    pool = make_pool("md1", cluster="plane")
    decision = admit(state, "CREATE", pool)
    assert has_denial(decision.denials, "ClusterNotFound", "spec.cluster"), [str(v) for v in decision.denials]
    assert admit(state, "CREATE", plane).allowed  # its own node groups keep resolving


@pytest.mark.parametrize("key", ["storageClass", "kubelet", "diskSize"])
def test_compute_plane_takes_the_real_allowlist(key: str) -> None:
    values = {"storageClass": "replicated", "kubelet": {"evictionHardMemory": "7%"}, "diskSize": "30Gi"}
    plane = make_compute_plane(node_groups={"workers": {"minReplicas": 1, "maxReplicas": 2, key: values[key]}})
    assert admit(make_state(), "CREATE", plane).allowed


@pytest.mark.parametrize("key", ["logSerialConsole", "maxUnhealthy", "talos"])
def test_compute_plane_refuses_pool_keys_outside_it(key: str) -> None:
    plane = make_compute_plane(node_groups={"workers": {"minReplicas": 1, key: "x"}})
    decision = validate(make_state(), "CREATE", plane)
    assert has_denial(decision.denials, "NotAllowedInComputePlane", f"spec.nodeGroups.workers.{key}")


def test_namespace_constant_is_a_tenant() -> None:
    assert NAMESPACE.startswith("tenant-")


def test_a_classless_pool_without_version_follows_the_chart_and_is_warned_not_refused() -> None:
    """No version: the chart renders its default v1.35; an older parent is said, not refused."""
    state = make_state(clusters=[make_cluster(version="v1.33")])
    pool = make_pool("md1", workerClassName=ABSENT, version=ABSENT)
    decision = admit(state, "UPDATE", pool, old=pool)
    assert decision.allowed, [str(v) for v in decision.denials]
    assert any("follows the chart's default v1.35" in w for w in decision.warnings), decision.warnings
    assert resolve(state, pool).kubernetes_version == "v1.35.6"
    # the UPDATE chooses a minor (not the chart's default, which an UPDATE through the API always carries)
    chosen = make_pool("md1", workerClassName=ABSENT, version="v1.34")
    assert has_denial(admit(state, "UPDATE", chosen, old=pool).denials, "ControlPlaneTooOld", "spec.version")
