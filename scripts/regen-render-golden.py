#!/usr/bin/env python3
"""Regenerate tests/render/golden/ from the oracle: values in, objects out.

Each golden file is a fact about Cozystack's chart, written by the oracle (the chart rendered
by Helm's own engine, ``tests/chart/oracle.py``), never by workerclass's port: the pool object (a KubernetesNodes or
a KubernetesNodes HelmRelease, with its parent cluster's name), the chart variant, and the objects
the chart renders for it with ``--talos-config-template`` (parsed as Kubernetes reads YAML). The
parity tests (``tests/render/test_parity.py``) resolve and render the same pool through workerclass
and compare every object field by field, printing the differing paths.

    .venv/bin/python scripts/regen-render-golden.py           # rewrite every golden file
    .venv/bin/python scripts/regen-render-golden.py --check   # exit 1 if any file would change

Cases live in :data:`CASES` below: add one there, run this script, and commit the new file with
the test that reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "render" / "golden"
sys.path.insert(0, str(REPO))

from tests.chart.cases import chart_text_free  # noqa: E402
from tests.chart.oracle import Oracle  # noqa: E402

NAMESPACE = "tenant-example"
CLUSTER = "example"
MIRRORS = {
    "docker.io": {"endpoints": ["https://mirror.example"]},
    "ghcr.io": {"endpoints": ["https://a.example", "https://b.example"], "skipFallback": True},
}
OTHER_SCHEMATIC = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


def pool(name: str, **values: Any) -> dict[str, Any]:
    """A KubernetesNodes ``<cluster>-<name>`` of the parent ``example``."""
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"{CLUSTER}-{name}", "namespace": NAMESPACE},
        "spec": {"cluster": CLUSTER, "version": "v1.35", **values},
    }


def release(name: str, **values: Any) -> dict[str, Any]:
    """A KubernetesNodes HelmRelease ``kubernetes-nodes-<cluster>-<name>`` written directly."""
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{CLUSTER}-{name}",
            "namespace": NAMESPACE,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {
            "interval": "5m",
            "chart": {"spec": {"chart": "kubernetes-nodes", "sourceRef": {"kind": "HelmRepository", "name": "x"}}},
            "values": {"cluster": CLUSTER, "version": "v1.35", **values},
        },
    }


#: The platform's ``_cluster`` values for one case (WorkerPlatform ``spec.clusterValues``).
CLUSTER_VALUES: dict[str, dict[str, Any]] = {
    "classless-cluster-values": {
        "cluster-domain": "cozy.example",
        "scheduling": {
            "globalAppTopologySpreadConstraints": (
                "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: topology.kubernetes.io/zone\n"
                "  whenUnsatisfiable: ScheduleAnyway\n"
            )
        },
    },
}

#: name -> (pool object, chart variant). Classless pools over the chart's value space.
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "classless-cluster-values": (pool("zones", roles=["ingress-nginx"]), "main"),
    "classless-minimal": (pool("md1"), "main"),
    "classless-replicas-roles-disk": (
        pool(
            "md2",
            minReplicas=1,
            maxReplicas=4,
            instanceType="u1.large",
            diskSize="30Gi",
            storageClass="local",
            roles=["ingress-nginx", "storage"],
        ),
        "main",
    ),
    "classless-resources-podcpu": (
        pool("cpu", instanceType="", resources={"cpu": "4", "memory": "8Gi"}, podCpuLimit="3", podCpuRequest="1"),
        "main",
    ),
    "classless-gpu": (pool("gpu", instanceType="u1.2xlarge", gpus=[{"name": "nvidia.com/AD102GL_L40S"}]), "main"),
    "classless-kubelet": (
        pool(
            "kubelet",
            instanceType="u1.xlarge",
            kubelet={
                "systemReservedMemory": "512Mi",
                "kubeReservedCpu": "100m",
                "evictionHardMemory": "5%",
                "evictionSoftMemory": "12%",
            },
        ),
        "main",
    ),
    "classless-serial-health": (
        pool(
            "health",
            logSerialConsole=True,
            maxUnhealthy="1",
            nodeStartupTimeout="15m",
            readyUnknownTimeout="3m",
            readyFalseTimeout="1h30m",
            maxNodeProvisionTime="45m",
        ),
        "main",
    ),
    "classless-talos-mirrors": (
        pool(
            "mirrors",
            talos={
                "version": "v1.13.6",
                "schematicID": OTHER_SCHEMATIC,
                "imageFactoryURL": "https://factory.example/",
                "installerRepository": "registry.example/installer",
                "registryMirrors": MIRRORS,
            },
        ),
        "main",
    ),
    "classless-old-version": (pool("old", version="v1.31", maxReplicas=1000000), "main"),
    "classless-helmrelease": (
        release("legacy", minReplicas=1, maxReplicas=2, instanceType="u1.medium", roles=["ingress-nginx"]),
        "main",
    ),
    # PR 3571: kernel modules in the machine config (an older base: only that part is compared).
    "pr3571-kernel-modules": (
        pool(
            "modules",
            kernelModules=[{"name": "nvme_tcp"}, {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]}],
        ),
        "pr3571",
    ),
}


def render_case(oracle: Oracle, name: str, obj: dict[str, Any], chart: str) -> dict[str, Any]:
    kind = obj["kind"]
    values = obj["spec"] if kind == "KubernetesNodes" else obj["spec"]["values"]
    object_name = obj["metadata"]["name"]
    cluster_values = CLUSTER_VALUES.get(name)
    result = oracle.render(
        values,
        release=f"kubernetes-nodes-{object_name}" if kind == "KubernetesNodes" else object_name,
        namespace=obj["metadata"]["namespace"],
        cluster_values={"_cluster": cluster_values} if cluster_values is not None else None,
        chart=chart,
        talos_config_template=True,
    )
    if not result.ok:
        raise SystemExit(f"the oracle refused {object_name}: {result.error}")
    fact: dict[str, Any] = {
        "source": f"Helm's engine (tests/chart/oracle.py), chart {chart}, talos_config_template",
        "cluster": {
            "apiVersion": "apps.cozystack.io/v1alpha1",
            "kind": "Kubernetes",
            "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
            # the pool's own minor: a control plane at most 3 minors newer is required
            "spec": {"version": values.get("version", "v1.35")},
        },
        "pool": obj,
        "chart": chart,
        "objects": chart_text_free(result.objects),
    }
    if cluster_values is not None:
        fact["clusterValues"] = cluster_values  # the WorkerPlatform's spec.clusterValues
    return fact


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a golden file would change")
    args = parser.parse_args()
    oracle = Oracle()
    changed: list[str] = []
    try:
        for name, (obj, chart) in CASES.items():
            text = json.dumps(render_case(oracle, name, obj, chart), indent=1, sort_keys=False) + "\n"
            path = GOLDEN / f"{name}.json"
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                changed.append(path.name)
                if not args.check:
                    path.write_text(text, encoding="utf-8")
    finally:
        oracle.close()
    if changed:
        print(("would change: " if args.check else "wrote: ") + ", ".join(changed))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
