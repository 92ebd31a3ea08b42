#!/usr/bin/env python3
"""Regenerate tests/chart/golden/*.json from the oracle (Cozystack's chart through Helm's engine).

Each golden file is a fact about the real chart: the pool's values, release, namespace and
platform values in; the objects the oracle renders (``--order chart``, optionally with the
TalosConfigTemplate), or its refusal message and the README's code for it, out.
tests/chart/test_golden.py compares our port with these files and runs without the oracle.

    .venv/bin/python scripts/regen-chart-golden.py          # rewrite every file
    .venv/bin/python scripts/regen-chart-golden.py --check  # exit 1 if any file is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.chart.cases import chart_message_free, chart_text_free, code_of_message  # noqa: E402
from tests.chart.oracle import available, get_oracle  # noqa: E402

GOLDEN = ROOT / "tests" / "chart" / "golden"
REL = "kubernetes-nodes-example-md1"
NS = "tenant-example"
CONSTRAINTS = (
    "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: topology.kubernetes.io/zone\n"
    "  whenUnsatisfiable: ScheduleAnyway\n"
)

POOLS: dict[str, dict[str, Any]] = {
    "defaults": {"values": {"cluster": "example"}},
    "resources-gpu-podcpu": {
        "values": {
            "cluster": "example",
            "instanceType": "",
            "resources": {"cpu": 4, "memory": "16Gi"},
            "gpus": [{"name": "nvidia.com/AD102GL_L40S"}],
            "podCpuLimit": 3,
            "podCpuRequest": "1500m",
            "roles": ["ingress-nginx"],
            "logSerialConsole": True,
        },
        "talos_config_template": True,
    },
    "instancetype-kubelet": {
        "values": {
            "cluster": "example",
            "instanceType": "u1.2xlarge",
            "kubelet": {
                "systemReservedMemory": "512Mi",
                "kubeReservedCpu": "0.25",
                "evictionHardMemory": "300Mi",
                "evictionSoftMemory": "1Gi",
            },
            "maxUnhealthy": "3",
            "maxNodeProvisionTime": "1h30m",
            "readyUnknownTimeout": "20m0s",
            "nodeStartupTimeout": "10",
            "version": "v1.32",
        },
    },
    "scheduling-ratio-mirrors": {
        "values": {
            "cluster": "example",
            "storageClass": "",
            "diskSize": "50Gi",
            "talos": {
                "imageFactoryURL": "https://factory.example.internal/",
                "schematicID": "613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245",
                "registryMirrors": {"ghcr.io": {"endpoints": ["https://mirror.example.internal"]}},
            },
        },
        "cluster_values": {
            "_cluster": {
                "cluster-domain": "cozy.local",
                "ephemeral-storage-allocation-ratio": "8",
                "scheduling": {"globalAppTopologySpreadConstraints": CONSTRAINTS},
            }
        },
        "talos_config_template": True,
    },
    "big-numbers": {
        "values": {
            "cluster": "example",
            "instanceType": "",
            "resources": {"cpu": "64", "memory": "2Ti"},
            "maxReplicas": 1000000,
            "minReplicas": 3,
        },
    },
    "refused-u1-nano": {"values": {"cluster": "example", "instanceType": "u1.nano"}},
    "refused-namespace": {"values": {"cluster": "example"}, "namespace": "default"},
    "refused-podcpu-with-type": {"values": {"cluster": "example", "podCpuLimit": 3}},
}


def render(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    release = spec.get("release", REL)
    namespace = spec.get("namespace", NS)
    result = get_oracle().render(
        spec["values"],
        release=release,
        namespace=namespace,
        cluster_values=spec.get("cluster_values"),
        talos_config_template=bool(spec.get("talos_config_template")),
    )
    out: dict[str, Any] = {
        "name": name,
        "values": spec["values"],
        "release": release,
        "namespace": namespace,
        "cluster_values": spec.get("cluster_values"),
        "talos_config_template": bool(spec.get("talos_config_template")),
    }
    if result.ok:
        out["objects"] = chart_text_free(result.objects)
    else:
        out["error"] = chart_message_free(result.error)
        out["code"] = code_of_message(result.error)
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 when stale")
    args = p.parse_args(argv)
    if not available():
        reason = "Cozystack's chart or the helm extra is missing (tests/shared.py)"
        print(f"regen-chart-golden: the oracle is absent: {reason}", file=sys.stderr)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    stale = 0
    for name, spec in POOLS.items():
        text = json.dumps(render(name, spec), indent=1, sort_keys=True) + "\n"
        path = GOLDEN / f"{name}.json"
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"stale: {path.relative_to(ROOT)}")
                stale += 1
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
