"""A table of pools covering every renderer branch, shared by the schema and text tests.

Each variant is ``(pool object, extra objects, infrastructure)`` for :func:`builders.render_pool`.
"""

from __future__ import annotations

from typing import Any

from workerclass.render.templates import KAIROS_DATA_SECRET_PATH

from .builders import CA, FIXED_REFERENCE, SSH_KEY, pool, release, render_pool, worker_class

KAIROS_FIXED = worker_class(
    "kairos-example-v1-35-6-r1",
    bootstrap="kairos",
    image={"kubernetesVersion": "v1.35.6", "reference": FIXED_REFERENCE},
)
PROXMOX_CLASS = worker_class("talos-proxmox-r1", bootstrap="talos", proxmox={"templateTags": ["talos-v1.13.6", "b"]})

Variant = tuple[dict[str, Any], tuple[dict[str, Any], ...], str]


def variants() -> dict[str, Variant]:
    return {
        "classless-minimal": (pool(), (), "kubevirt"),
        "classless-helmrelease": (release(minReplicas=1, roles=["ingress-nginx"]), (), "kubevirt"),
        "classless-resources-gpu": (
            pool(instanceType="", resources={"cpu": "4", "memory": "16Gi"}, gpus=[{"name": "nvidia.com/AD102GL_L40S"}]),
            (),
            "kubevirt",
        ),
        "talos-class": (pool(workerClassName="talos"), (), "kubevirt"),
        "talos-kernel-modules": (
            pool(workerClassName="talos", kernelModules=[{"name": "nvme_tcp"}]),
            (),
            "kubevirt",
        ),
        "talos-nvidia-rule": (
            pool(workerClassName="talos", instanceType="u1.2xlarge", gpus=[{"name": "nvidia.com/AD102GL_L40S"}]),
            (),
            "kubevirt",
        ),
        "talos-factory-ca": (pool(workerClassName="talos", talos={"imageFactoryCA": CA}), (), "kubevirt"),
        "talos-factory-endpoint": (
            pool(workerClassName="talos", kubevirt={"osImage": {"factory": {"endpoint": "https://mirror.example"}}}),
            (),
            "kubevirt",
        ),
        "talos-builtin": (pool(workerClassName="talos", kubevirt={"osImage": {"builtin": {}}}), (), "kubevirt"),
        "talos-proxmox": (pool(workerClassName="talos-proxmox-r1"), (PROXMOX_CLASS,), "proxmox"),
        "talos-proxmox-resources": (
            pool(workerClassName="talos-proxmox-r1", instanceType="", resources={"cpu": "1500m", "memory": "3000Mi"}),
            (PROXMOX_CLASS,),
            "proxmox",
        ),
        "kairos-platform": (pool("kairos", workerClassName="kairos", minReplicas=2, maxReplicas=3), (), "kubevirt"),
        "kairos-fixed-ssh": (
            pool("custom", workerClassName="kairos-example-v1-35-6-r1", sshKeys=[SSH_KEY]),
            (KAIROS_FIXED,),
            "kubevirt",
        ),
    }


def rendered(name: str, *, kairos_path: str = KAIROS_DATA_SECRET_PATH) -> list[dict[str, Any]]:
    pool_object, objects, infrastructure = variants()[name]
    return render_pool(pool_object, *objects, infrastructure=infrastructure, kairos_path=kairos_path)
