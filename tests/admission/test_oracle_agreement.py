"""Admission agrees with the real chart over its value space.

For every generated classless pool (every chart key; instance types, present and missing;
resources whole and halved; GPUs; kubelet reservations and eviction thresholds; timeouts;
podCpu pairs; names and namespaces that break the naming rule), the oracle
(``shared/tools/cozystack-render``, through ``tests/chart/oracle.py``'s driver) renders the
chart exactly when admission allows the pool

- as a CREATE: the direct HelmRelease ``kubernetes-nodes-<name>`` (a classless CREATE: the
  application API would default a KubernetesNodes CREATE's class), refused also when the
  parent Kubernetes app still manages the nodeGroup of that name (the chart's ownership
  lookup, which the oracle cannot see offline);
- as an UPDATE of itself, judged as stored (``ratcheting=False``: a ratcheted UPDATE that changes
  nothing is let through, tests/admission/test_ratchet.py): the KubernetesNodes ``<name>``,
  classless, whose UPDATE is never refused for its name: when the chart's first failure is a
  naming one, the oracle renders the same values under a conforming name to learn what else it
  refuses.

When the chart refuses, the denials carry the code the upstream README maps its message to.
The parents exist in every namespace and carry no version, so the design page's rules that the
chart lacks (ClusterNotFound, ControlPlaneTooOld) stay out of the way; replica bounds are valid.
``WORKERCLASS_ORACLE_EXAMPLES`` sets the number of examples (default 150, about 30 s).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.chart import oracle
from tests.chart.cases import code_of_message
from workerclass import State, admit

oracle.require_oracle()

EXAMPLES = int(os.environ.get("WORKERCLASS_ORACLE_EXAMPLES", "150"))
CLUSTER = "example"
NAMESPACES = ("tenant-example", "tenant-example", "tenant-example", "tenant-other", "example")
PREFIX = "kubernetes-nodes-"


def _state() -> State:
    parents = [
        {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "Kubernetes",
            "metadata": {"name": CLUSTER, "namespace": namespace},
            "spec": {},
        }
        for namespace in sorted(set(NAMESPACES))
    ]
    return State.from_objects(parents)


STATE = _state()

quantity_cpu = st.sampled_from(["2", "500m", 4, "100m", "1.5", "1", "0", "8"])
quantity_memory = st.sampled_from(["4Gi", "512Mi", "8Gi", 2147483648, "1G", "16Gi"])
pod_cpu = st.sampled_from(["0", "1", "2", "500m", "-1", 2, "1.5", "100u", "4", "1500m"])
memory_reservation = st.sampled_from(["256Mi", "1Gi", "0", "1GB", "2e8", "512Mi", "128Mi"])
cpu_reservation = st.sampled_from(["100m", "1", "0", "1.5m", "0.5", "2", "50m"])
duration = st.sampled_from(["5m", "1h30m", "0s", "30", "-5m", "20m0s", "30min", "9999999h", "45m", "1h0m0s"])

KUBELET = st.fixed_dictionaries(
    {},
    optional={
        "systemReservedMemory": memory_reservation,
        "kubeReservedMemory": memory_reservation,
        "systemReservedCpu": cpu_reservation,
        "kubeReservedCpu": cpu_reservation,
        "evictionHardMemory": st.sampled_from(["7%", "5%", "12%", "0%", "150%", "x%", "500Mi", "200Mi"]),
        "evictionSoftMemory": st.sampled_from(["10%", "15%", "1Gi", "100Mi"]),
    },
)
TALOS = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from(["v1.13.6", "v1.12.4", "v1.13.0", "v1.11.2", ""]),
        "schematicID": st.sampled_from(["ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515", "ab" * 32]),
        "imageFactoryURL": st.sampled_from(["https://factory.talos.dev", "https://factory.example/"]),
        "installerRepository": st.sampled_from(["factory.talos.dev/installer", "registry.example/talos/installer"]),
        "registryMirrors": st.sampled_from(
            [{}, {"ghcr.io": {"endpoints": ["https://mirror.example"], "skipFallback": True}}]
        ),
    },
)
CHART_VALUES = st.fixed_dictionaries(
    {},
    optional={
        "storageClass": st.sampled_from(["replicated", "", "local", "fast-ssd"]),
        "instanceType": st.sampled_from(
            ["u1.medium", "u1.nano", "u1.micro", "u1.small", "u1.large", "cx1.medium", "gn1.xlarge", "", "zz.huge"]
        ),
        "diskSize": st.sampled_from(["20Gi", "50Gi", 10737418240, "1Ti", "5G"]),
        "roles": st.lists(st.sampled_from(["ingress-nginx", "gpu", "worker"]), max_size=2, unique=True),
        "resources": st.fixed_dictionaries({}, optional={"cpu": quantity_cpu, "memory": quantity_memory}),
        "podCpuLimit": pod_cpu,
        "podCpuRequest": pod_cpu,
        "gpus": st.sampled_from([[], [{"name": "nvidia.com/AD102GL_L40S"}]]),
        "kubelet": KUBELET,
        "logSerialConsole": st.booleans(),
        "maxUnhealthy": st.sampled_from(["50%", "0%", "0", "1", "12.5%", "", "x", 1]),
        "nodeStartupTimeout": st.sampled_from(["20m", "soon", "1h"]),
        "readyUnknownTimeout": duration,
        "readyFalseTimeout": duration,
        "maxNodeProvisionTime": duration,
        "version": st.sampled_from(["v1.35", "v1.34", "v1.33", "v1.32", "v1.31", "v1.36", "v1.30"]),
        "talos": TALOS,
        "images": st.sampled_from([{"kubectl": ""}, {"kubectl": "registry.example/kubectl:v1.35"}, {}]),
    },
)


@st.composite
def pools(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    values = dict(draw(CHART_VALUES))
    cluster = draw(st.sampled_from([CLUSTER] * 10 + ["", None]))
    if cluster is not None:
        values["cluster"] = cluster
    low = draw(st.integers(0, 3))
    if draw(st.booleans()):
        values["minReplicas"] = low
    if draw(st.booleans()):
        values["maxReplicas"] = (
            draw(st.integers(max(low, 1), 12)) if "minReplicas" in values else draw(st.integers(0, 12))
        )
        if values.get("minReplicas", 0) > values["maxReplicas"]:
            values["minReplicas"] = values["maxReplicas"]
    elif values.get("minReplicas", 0) > 10:
        values["minReplicas"] = 10
    prefix = draw(st.sampled_from([f"{CLUSTER}-"] * 6 + ["other-"]))
    pool = draw(st.sampled_from(["md1", "md1", "gpu", "w-2", "big" + "x" * 30, "md0"]))
    namespace = draw(st.sampled_from(NAMESPACES))
    return prefix + pool, namespace, values


def _release(name: str, namespace: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": PREFIX + name,
            "namespace": namespace,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": values},
    }


def _nodes(name: str, namespace: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": name, "namespace": namespace},
        "spec": values,
    }


def _render(values: dict[str, Any], release: str, namespace: str) -> Any:
    return oracle.get_oracle().render(values, release=release, namespace=namespace)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(pools())
# the space's corners, always tried: a missing instance type, reservations that leave a tiny
# type no memory, a GPU type, half resources without an instance type, a valid podCpu pair
@example(("example-md1", "tenant-example", {"cluster": CLUSTER, "instanceType": "zz.huge"}))
@example(("example-md1", "tenant-example", {"cluster": CLUSTER, "instanceType": "u1.nano"}))
@example(("example-gpu", "tenant-example", {"cluster": CLUSTER, "instanceType": "gn1.xlarge", "gpus": [{"name": "x"}]}))
@example(("example-md1", "tenant-example", {"cluster": CLUSTER, "instanceType": "", "resources": {"cpu": "4"}}))
@example(
    (
        "example-md1",
        "tenant-example",
        {"cluster": CLUSTER, "instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"}, "podCpuLimit": "2"},
    )
)
def test_admission_allows_exactly_what_the_chart_renders(pool: tuple[str, str, dict[str, Any]]) -> None:
    name, namespace, values = pool
    rendered = _render(values, PREFIX + name, namespace)
    collision = name.endswith("-md0") and name.startswith(f"{CLUSTER}-")

    create = admit(STATE, "CREATE", _release(name, namespace, values))
    create_codes = {v.code for v in create.denials}
    shown = (rendered.error[:200], sorted(str(v) for v in create.denials))
    if rendered.ok:
        assert create.allowed is (not collision), shown
        if collision:
            assert create_codes == {"InvalidPoolName"}, shown
    else:
        assert not create.allowed, shown
        assert code_of_message(rendered.error) in create_codes, shown

    stored = _nodes(name, namespace, values)
    update = admit(STATE, "UPDATE", stored, old=stored, ratcheting=False)  # judged as stored, not ratcheted
    update_codes = {v.code for v in update.denials}
    first = rendered
    if not rendered.ok and code_of_message(rendered.error) == "InvalidPoolName":
        # the chart stopped at the name: what does it say under a conforming name?
        first = _render(values, f"{PREFIX}{CLUSTER}-md1", "tenant-example")
    shown = (first.error[:200], sorted(str(v) for v in update.denials))
    # Names are CREATE-only; the tenant namespace is a render failure of every read (UPDATE too),
    # and so is the parent's node group (the chart's lookup finds its MachineDeployment live; the
    # oracle renders offline and cannot see it).
    tenant = namespace.startswith("tenant-")
    taken = collision and values.get("cluster") == CLUSTER
    update_names = {v.field for v in update.denials if v.code == "InvalidPoolName"}
    expected = (set() if tenant else {"metadata.namespace"}) | ({"metadata.name"} if taken else set())
    assert update_names == expected, shown
    if first.ok:
        assert update.allowed is (tenant and not taken), shown
        assert update.patch == []  # classless: no patch
    else:
        assert not update.allowed, shown
        assert code_of_message(first.error) in update_codes, shown
