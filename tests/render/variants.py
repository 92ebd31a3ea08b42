"""A table of effective settings covering every renderer branch, shared by the schema tests."""

from __future__ import annotations

from workerclass.resolve.effective import Effective, EffectiveImage

from .builders import (
    CA,
    FIXED_REFERENCE,
    SCHEMATIC,
    SSH_KEY,
    Gpu,
    KernelModule,
    Resources,
    Taint,
    make_effective,
    replace,
    with_pool,
    with_talos,
)


def variants() -> dict[str, Effective]:
    talos = make_effective()
    kairos = make_effective(bootstrap="kairos")
    proxmox = replace(
        talos,
        infrastructure="proxmox",
        image=EffectiveImage("proxmox", None, "v1.13.6", SCHEMATIC, ("talos-v1.13.6", "cozystack")),
    )
    return {
        "talos-factory": talos,
        "talos-factory-ca": with_talos(talos, image_factory_ca=CA),
        "talos-builtin": replace(
            talos,
            image=EffectiveImage("builtin", f"cozy-public/talos-worker-{SCHEMATIC}-v1.13.6", "v1.13.6", SCHEMATIC),
        ),
        "talos-mirrors-modules": replace(
            with_talos(
                talos,
                registry_mirrors={"docker.io": ("https://mirror.example",), "ghcr.io": ("https://a", "https://b")},
            ),
            kernel_modules=(KernelModule("nvme_tcp"), KernelModule("nvidia", ("NVreg_NvLinkDisable=1",))),
        ),
        "talos-resources-storage": with_pool(
            talos, resources=Resources("4", "8Gi"), disk_size="50Gi", storage_class="replicated"
        ),
        "talos-gpu-passthrough": with_pool(talos, gpus=(Gpu("nvidia.com/AD102GL_L40S"), Gpu("nvidia.com/GA102GL_A10"))),
        "talos-node-settings": with_pool(
            talos,
            min_replicas=1,
            max_replicas=5,
            roles=("ingress-nginx", "storage"),
            labels={"topology.example/zone": "a", "team": "data"},
            taints=(Taint("dedicated", "gpu", "NoSchedule"), Taint("example.com/spot", "", "PreferNoSchedule")),
            max_unhealthy="50%",
            node_startup_timeout="20m",
            ready_unknown_timeout="300s",
            ready_false_timeout="1h30m",
        ),
        "talos-max-unhealthy-int": with_pool(talos, max_unhealthy=1),
        "talos-legacy-helmrelease": replace(talos, kind="HelmRelease", class_name=None),
        "talos-legacy-computeplane": replace(
            talos, kind="ComputePlane", class_name=None, name="plane-md0", cluster="plane"
        ),
        "talos-proxmox": proxmox,
        "talos-proxmox-resources": with_pool(proxmox, resources=Resources("1500m", "3000Mi"), disk_size="2Gi"),
        "kairos-platform": kairos,
        "kairos-fixed-ssh-vgpu": replace(
            with_pool(kairos, ssh_keys=(SSH_KEY,), gpus=(Gpu("nvidia.com/NVIDIA_L40S-24Q", vgpu=True),)),
            class_name="kairos-example-v1-35-6-r1",
            image=EffectiveImage("fixed", FIXED_REFERENCE, "v1.35.6", None),
        ),
    }
