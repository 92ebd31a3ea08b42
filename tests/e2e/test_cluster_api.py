"""What ``workerclass render`` prints for a pool, applied to a real API server with Cluster API's own
manager (v1.10.1, the version Cozystack ships): every object is accepted by the CRDs Cozystack
installs, the MachineDeployment's replicas are seeded by Cluster API's defaulting webhook from the
autoscaler's min-size annotation (the chart leaves ``spec.replicas`` out), and Cluster API creates
the pool's MachineSet from the templates.

Seen to fail while it was written: without the TalosConfigTemplate the Job would apply, Cluster
API made no MachineSet (the wait timed out), and a namespaced object the chart leaves unnamespaced
was refused 404 until it got the release's namespace, as Helm gives it. No deliberate break of the
render was run against it.
"""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from .conftest import TENANT, ClusterAPI
from .kube import Kube
from .testbed import ROOT, chart_option, wait_until, workerclass_command

CAPI = "cluster.x-k8s.io/v1beta1"


def rendered(pool: str, *extra: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [
            *workerclass_command(),
            "render",
            str(ROOT / "examples"),
            "--pool",
            pool,
            "--talos-config-template",
            *chart_option(),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def parent_cluster(kube: Kube, name: str = "kubernetes-example") -> None:
    """The Cluster that Cozystack's Kubernetes app owns (the workers' MachineDeployments name it)."""
    kube.apply(
        {"apiVersion": CAPI, "kind": "Cluster", "metadata": {"name": name, "namespace": TENANT}, "spec": {}},
        manager="workerclass-e2e",
    )


def machine_sets(kube: Kube, deployment: str) -> list[dict[str, Any]]:
    return kube.list(CAPI, "MachineSet", TENANT, labels=f"cluster.x-k8s.io/deployment-name={deployment}")


def test_a_rendered_legacy_pool_becomes_a_machine_set(kube: Kube, capi: ClusterAPI) -> None:
    parent_cluster(kube)
    objects = rendered("tenant-example/example-legacy")
    kinds = sorted(obj["kind"] for obj in objects)
    assert {"KubevirtMachineTemplate", "MachineDeployment", "MachineHealthCheck", "TalosConfigTemplate"} <= set(kinds)
    for obj in objects:  # Helm puts a namespaced object the chart leaves unnamespaced in the release's namespace
        if kube.resource_of(obj).namespaced:
            obj["metadata"].setdefault("namespace", TENANT)
    for obj in objects:
        kube.apply(obj, manager="workerclass-e2e", dry_run=True)
    for obj in objects:
        kube.apply(obj, manager="workerclass-e2e")
    deployment = kube.get(CAPI, "MachineDeployment", "kubernetes-example-legacy", TENANT)
    assert deployment["spec"]["replicas"] == 2  # CAPI's webhook, from the min-size annotation
    found = wait_until(lambda: machine_sets(kube, "kubernetes-example-legacy"), timeout=60, what="a MachineSet")
    assert len(found) == 1
    infrastructure = found[0]["spec"]["template"]["spec"]["infrastructureRef"]["name"]
    assert infrastructure == deployment["spec"]["template"]["spec"]["infrastructureRef"]["name"]
