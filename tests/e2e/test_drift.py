"""Owned objects are watched, not polled: with the full resync five minutes away, a MachineDeployment
deleted by hand comes back and one edited by hand is put back within seconds, on a real API server.

The controller runs as the bundle's controller ServiceAccount, alone (its own Lease holder), with
``--resync-interval 300``: only its watches of the owned kinds can make it act in time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import TENANT, ClusterAPI, Install, Served
from .kube import Kube
from .test_workers import CAPI, FLUX, POOLS, pool_objects, start_controller
from .testbed import ApiServer, Process, wait_until

SPEC = {
    "cluster": "example", "workerClassName": "talos", "version": "v1.35",
    "minReplicas": 1, "maxReplicas": 2, "instanceType": "", "resources": {"cpu": "2", "memory": "4Gi"},
}  # fmt: skip
NAME = "example-e2e-drift"
DEPLOYMENT = f"kubernetes-{NAME}"


@pytest.fixture
def controller(
    cluster: ApiServer, install: Install, capi: ClusterAPI, webhook: Served, tmp_path: Path
) -> Iterator[Process]:
    process = start_controller(cluster, tmp_path / "controller.log", resync=300)
    yield process
    process.stop()


def test_a_machine_deployment_deleted_or_edited_by_hand_is_repaired_in_seconds(kube: Kube, controller: Process) -> None:
    from .test_cluster_api import parent_cluster

    parent_cluster(kube)
    try:
        for obj in pool_objects(NAME, SPEC):
            kube.apply(obj, manager="cozystack-api")
        first = wait_until(
            lambda: kube.find(CAPI, "MachineDeployment", DEPLOYMENT, TENANT),
            timeout=90,
            what="applied\n" + controller.tail(),
        )
        time.sleep(2)  # settled: the apply's own echoes seen
        kube.delete(CAPI, "MachineDeployment", DEPLOYMENT, TENANT)
        deleted = time.monotonic()
        again = wait_until(
            lambda: (
                (found := kube.find(CAPI, "MachineDeployment", DEPLOYMENT, TENANT)) is not None
                and found["metadata"]["uid"] != first["metadata"]["uid"]
                and found
            ),
            timeout=30,
            what="the deleted MachineDeployment re-applied\n" + controller.tail(),
        )
        took = time.monotonic() - deleted
        print(f"\nrepaired a hand-deleted MachineDeployment in {took:.2f} s")
        assert took < 20, took  # the resync is 300 s away
        # an edit by hand (a merge patch, as kubectl edit sends: its manager takes the field over)
        key = next(k for k in again["metadata"]["annotations"] if k.endswith("autoscaler-node-group-max-size"))
        kube.patch(CAPI, "MachineDeployment", DEPLOYMENT, {"metadata": {"annotations": {key: "9"}}}, namespace=TENANT)
        wait_until(
            lambda: kube.get(CAPI, "MachineDeployment", DEPLOYMENT, TENANT)["metadata"]["annotations"][key] == "2",
            timeout=20,
            what="the edited annotation put back\n" + controller.tail(),
        )
    finally:
        kube.delete(POOLS, "KubernetesNodes", NAME, TENANT)
        kube.delete(FLUX, "HelmRelease", f"kubernetes-nodes-{NAME}", TENANT)
