"""The handoff from Helm without a rollout, driven by Helm's real engine on the test bed.

A legacy pool (its KubernetesNodes and HelmRelease written before workerclass was installed) is
installed by Helm from the gated chart; Cluster API makes its MachineSet. The controller pins its
Helm-made objects (``helm.sh/resource-policy: keep``). The tenant then selects a class (an UPDATE
the webhook admits), Cozystack's API writes it to the HelmRelease, and Helm upgrades the release
with the gate, which renders nothing for a classified pool: Helm deletes nothing because of the
pins, and the controller applies the class's objects over the same names. Every DELETE the API
server sees and every MachineSet Cluster API makes is watched: none is deleted in between, and a
new MachineSet appears exactly when ``workerclass plan`` says the change replaces machines.
Uninstalling the release and deleting the pool then leaves nothing behind.

Seen to fail against a broken controller: with the pinning step switched off (``_pin`` returning
at once) the wait for the pin timed out, and with that wait skipped too, Helm's upgrade deleted 15
of the pool's objects (the talos-reconcile ServiceAccount, ClusterRole and binding, the Roles, ...:
the no-delete assertion listed them).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.shared import chart_path

from .conftest import TENANT, ClusterAPI, Install, Served
from .helm import gated_chart, helm
from .kube import Kube
from .test_workers import job_does, pool_objects, start_controller, write_pool_state
from .testbed import ROOT, ApiServer, Process, chart_option, wait_until, workerclass_command

POOLS = "apps.cozystack.io/v1alpha1"
FLUX = "helm.toolkit.fluxcd.io/v2"
CAPI = "cluster.x-k8s.io/v1beta1"
KUBEVIRT = "infrastructure.cluster.x-k8s.io/v1alpha1"
NAME = "example-e2e-handoff"
RELEASE = f"kubernetes-nodes-{NAME}"
DEPLOYMENT = f"kubernetes-{NAME}"
LEGACY = {
    "cluster": "example", "version": "v1.35", "minReplicas": 2, "maxReplicas": 3,
    "instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"},
}  # fmt: skip


@pytest.fixture(scope="module")
def controller(
    cluster: ApiServer, install: Install, capi: ClusterAPI, webhook: Served, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Process]:
    process = start_controller(cluster, tmp_path_factory.mktemp("handoff") / "controller.log", resync=3)
    yield process
    process.stop()


def _plan_replaces(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """``workerclass plan`` for the pool: does selecting the class replace its machines?"""
    with tempfile.TemporaryDirectory() as folder:
        states = [
            write_pool_state(Path(folder) / side, NAME, spec) for side, spec in (("before", before), ("after", after))
        ]
        out = subprocess.run(
            [*workerclass_command(), "plan", str(states[0]), "--to", str(states[1]), "-o", "json", *chart_option()],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    rows = json.loads(out.stdout)["pools"]
    row = next(row for row in rows if row["pool"] == f"{TENANT}/{NAME}")
    return bool(row["replace"])


def _machine_sets(kube: Kube) -> set[str]:
    listed = kube.list(CAPI, "MachineSet", TENANT, labels=f"cluster.x-k8s.io/deployment-name={DEPLOYMENT}")
    return {obj["metadata"]["name"] for obj in listed}


def _ours(kube: Kube) -> bool:
    deployment = kube.find(CAPI, "MachineDeployment", DEPLOYMENT, TENANT) or {}
    return "workerclass.cozystack.io/pool" in (deployment.get("metadata", {}).get("labels") or {})


def _pinned(kube: Kube) -> bool:
    deployment = kube.find(CAPI, "MachineDeployment", DEPLOYMENT, TENANT) or {}
    annotations = deployment.get("metadata", {}).get("annotations") or {}
    return annotations.get("helm.sh/resource-policy") == "keep"


def test_a_legacy_pool_selects_a_class_without_a_delete_or_a_rollout(
    cluster: ApiServer, kube: Kube, install: Install, controller: Process, tmp_path: Path
) -> None:
    from .test_cluster_api import parent_cluster

    parent_cluster(kube)
    chart = gated_chart(
        chart_path("main"),
        ROOT / "deploy" / "chart-gate" / "kubernetes-nodes-main.patch",
        tmp_path,
    )
    # the pool as it was before workerclass: written with no webhook in the way
    configurations = [obj for obj in install.objects if obj["kind"].endswith("WebhookConfiguration")]
    for obj in configurations:
        kube.delete("admissionregistration.k8s.io/v1", obj["kind"], obj["metadata"]["name"])
    try:
        time.sleep(1)
        for obj in pool_objects(NAME, LEGACY):
            kube.apply(obj, manager="cozystack-api")
    finally:
        for obj in configurations:
            kube.apply(obj, manager="workerclass-e2e-install")
    kubeconfig = cluster.admin.kubeconfig
    helm("install", kubeconfig=kubeconfig, release=RELEASE, namespace=TENANT, chart=chart, values=LEGACY)
    job_does(kube, NAME, LEGACY)  # the talos-reconcile Job's TalosConfigTemplate (no pod runs here)
    before_sets = wait_until(lambda: _machine_sets(kube), timeout=60, what="CAPI's MachineSet for the Helm pool")
    template = kube.get(CAPI, "MachineDeployment", DEPLOYMENT, TENANT)["spec"]["template"]["spec"]["infrastructureRef"][
        "name"
    ]
    wait_until(lambda: _pinned(kube), timeout=30, what="the controller's pin on the Helm-made objects")

    selected = {**LEGACY, "workerClassName": "talos"}
    replaces = _plan_replaces(LEGACY, selected)
    mark = cluster.audit_mark()
    kube.patch(
        POOLS, "KubernetesNodes", NAME, {"spec": {"workerClassName": "talos"}}, namespace=TENANT
    )  # the webhook admits it
    stored = kube.get(POOLS, "KubernetesNodes", NAME, TENANT)["spec"]
    for obj in pool_objects(NAME, stored):  # Cozystack's API writes the HelmRelease's values
        kube.apply(obj, manager="cozystack-api")
    helm("upgrade", kubeconfig=kubeconfig, release=RELEASE, namespace=TENANT, chart=chart, values=stored)
    wait_until(lambda: _ours(kube), timeout=60, what="the controller applying the classified pool")
    time.sleep(8)  # resyncs, and CAPI's reconcile of the applied MachineDeployment

    deletes = [
        f"{event['objectRef'].get('resource')}/{event['objectRef'].get('name')} by {event['user']['username']}"
        for event in cluster.requests_by_verb("delete", since=mark)
        if NAME in str(event["objectRef"].get("name", "")) or template == event["objectRef"].get("name")
    ]
    assert deletes == [], f"deleted during the handoff: {deletes}"
    after_sets = _machine_sets(kube)
    assert (after_sets != before_sets) is replaces, (before_sets, after_sets, replaces)
    if not replaces:
        now = kube.get(CAPI, "MachineDeployment", DEPLOYMENT, TENANT)["spec"]["template"]["spec"]["infrastructureRef"]
        assert now["name"] == template

    # uninstall: Helm (nothing left in its release), then the pool: nothing of it remains
    helm("uninstall", kubeconfig=kubeconfig, release=RELEASE, namespace=TENANT)
    for obj in pool_objects(NAME, stored):
        kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], TENANT)

    def left() -> list[str]:
        names = []
        for api_version, kind in (
            (CAPI, "MachineDeployment"), (CAPI, "MachineHealthCheck"), (KUBEVIRT, "KubevirtMachineTemplate"),
            ("batch/v1", "Job"), ("rbac.authorization.k8s.io/v1", "Role"), ("v1", "ServiceAccount"),
            ("cozystack.io/v1alpha1", "WorkloadMonitor"),
        ):  # fmt: skip
            names += [
                f"{kind}/{o['metadata']['name']}"
                for o in kube.list(api_version, kind, TENANT)
                if NAME in o["metadata"]["name"]
            ]
        names += [
            f"ClusterRole/{o['metadata']['name']}"
            for o in kube.list("rbac.authorization.k8s.io/v1", "ClusterRole")
            if NAME in o["metadata"]["name"]
        ]
        return names

    wait_until(lambda: not left(), timeout=90, what="nothing of the pool left")


def test_a_deleted_classless_pool_leaves_nothing_it_had_pinned(
    cluster: ApiServer, kube: Kube, install: Install, controller: Process, tmp_path: Path
) -> None:
    """A classless pool's Helm-made objects carry the controller's handoff pin (``keep``). Helm's
    uninstall deletes them anyway (it judges the policy from the manifests it stored, not from the
    live objects), but a release that goes without that uninstall (its HelmRelease removed, the
    Helm release left) leaves them pinned, with their machines. Once the pool and its HelmRelease
    are gone the controller deletes them; Helm's later uninstall finds nothing left to delete.

    Seen to fail before the controller deleted what it had pinned: the wait timed out with the
    MachineDeployment, its template, the Job, the RBAC and the WorkloadMonitor all still there."""
    from .test_cluster_api import parent_cluster

    parent_cluster(kube)
    name = "example-e2e-unpinned"
    release = f"kubernetes-nodes-{name}"
    chart = gated_chart(chart_path("main"), ROOT / "deploy" / "chart-gate" / "kubernetes-nodes-main.patch", tmp_path)
    configurations = [obj for obj in install.objects if obj["kind"].endswith("WebhookConfiguration")]
    for obj in configurations:  # the pool as it was before workerclass
        kube.delete("admissionregistration.k8s.io/v1", obj["kind"], obj["metadata"]["name"])
    try:
        time.sleep(1)
        for obj in pool_objects(name, LEGACY):
            kube.apply(obj, manager="cozystack-api")
    finally:
        for obj in configurations:
            kube.apply(obj, manager="workerclass-e2e-install")
    helm("install", kubeconfig=cluster.admin.kubeconfig, release=release, namespace=TENANT, chart=chart, values=LEGACY)

    def left() -> list[str]:
        names = []
        for api_version, kind in (
            (CAPI, "MachineDeployment"), (CAPI, "MachineHealthCheck"), (KUBEVIRT, "KubevirtMachineTemplate"),
            ("batch/v1", "Job"), ("rbac.authorization.k8s.io/v1", "Role"), ("v1", "ServiceAccount"),
            ("cozystack.io/v1alpha1", "WorkloadMonitor"),
        ):  # fmt: skip
            names += [f"{kind}/{o['metadata']['name']}" for o in kube.list(api_version, kind, TENANT)
                      if name in o["metadata"]["name"]]  # fmt: skip
        names += [
            f"ClusterRole/{o['metadata']['name']}"
            for o in kube.list("rbac.authorization.k8s.io/v1", "ClusterRole")
            if name in o["metadata"]["name"]
        ]
        return names

    def pinned() -> bool:
        found = kube.find(CAPI, "MachineDeployment", f"kubernetes-{name}", TENANT) or {}
        return (found.get("metadata", {}).get("annotations") or {}).get("helm.sh/resource-policy") == "keep"

    try:
        wait_until(pinned, timeout=30, what="the controller's pin on the Helm-made objects")
        made = left()
        assert len(made) >= 8, made
        for obj in pool_objects(name, LEGACY):  # the pool and its HelmRelease go; Helm's release stays
            kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], TENANT)
        wait_until(lambda: not left(), timeout=30, what="nothing the pool had pinned left:\n" + controller.tail())
    finally:
        helm("uninstall", kubeconfig=cluster.admin.kubeconfig, release=release, namespace=TENANT)


def test_a_chart_without_the_gate_is_detected_and_never_double_written(
    cluster: ApiServer, kube: Kube, controller: Process, tmp_path: Path
) -> None:
    """A classified Kairos pool whose release runs the chart without our gate: the chart renders it
    as Talos (what the design page forbids). The controller sees Helm-made worker objects it did
    not pin for a classified pool, reports ``ChartNotGated`` on the HelmRelease and applies
    nothing for it, so the chart and the controller never both write the pool's machines.

    Seen to fail with the controller's refusal switched off: no ChartNotGated Event came (the
    controller applied over the chart's objects instead)."""
    from .test_cluster_api import parent_cluster

    parent_cluster(kube)
    name = "example-e2e-ungated"
    spec = {**LEGACY, "workerClassName": "kairos", "sshKeys": []}
    upstream = chart_path("main")  # as Cozystack ships it: no gate
    # Helm first (had the controller applied first, Helm's install would fail on objects it does not own)
    helm("install", kubeconfig=cluster.admin.kubeconfig, release=f"kubernetes-nodes-{name}", namespace=TENANT,
         chart=upstream, values=spec)  # fmt: skip
    for obj in pool_objects(name, spec):
        kube.apply(obj, manager="cozystack-api")
    try:

        def reported() -> bool:
            return any(
                "ChartNotGated" in (event.get("message") or "")
                and event["involvedObject"]["name"] == f"kubernetes-nodes-{name}"
                for event in kube.list("v1", "Event", TENANT)
            )

        wait_until(reported, timeout=30, what="the ChartNotGated Event:\n" + controller.tail())
        deployment = kube.get(CAPI, "MachineDeployment", f"kubernetes-{name}", TENANT)
        # the chart's Talos render, untouched by the controller
        assert deployment["spec"]["template"]["spec"]["bootstrap"]["configRef"]["kind"] == "TalosConfigTemplate"
        assert "workerclass.cozystack.io/pool" not in (deployment["metadata"].get("labels") or {})
        managers = {entry["manager"] for entry in deployment["metadata"]["managedFields"]}
        assert "workerclass-controller" not in managers
    finally:
        helm("uninstall", kubeconfig=cluster.admin.kubeconfig, release=f"kubernetes-nodes-{name}", namespace=TENANT)
        for obj in pool_objects(name, spec):
            kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], TENANT)
