"""Rendering defaults and the machine shape of a pool.

Owns the values the renderer fills in where a pool leaves sizing out, so that the hash and the
templates agree on them: an explicitly written default and an omitted one give the same
machines, the same hash and the same names. Its edge: pure values, no rendering.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..resolve.effective import Effective

__all__ = [
    "DEFAULT_DISK_SIZE",
    "DEFAULT_INSTANCE_TYPE",
    "INSTANCE_TYPES",
    "MachineShape",
    "RenderError",
    "machine_shape",
    "template_tags",
]

#: The Cozystack ``kubernetes`` app's node-group defaults.
DEFAULT_INSTANCE_TYPE = "u1.medium"
DEFAULT_DISK_SIZE = "20Gi"

#: KubeVirt common-instancetypes ``u1`` series (vCPUs, memory in MiB), used where there are no
#: instance types (Proxmox) to size the VM the same way it would be sized on KubeVirt.
INSTANCE_TYPES: dict[str, tuple[int, int]] = {
    "u1.nano": (1, 512),
    "u1.micro": (1, 1024),
    "u1.small": (1, 2048),
    "u1.medium": (1, 4096),
    "u1.2xmedium": (2, 4096),
    "u1.large": (2, 8192),
    "u1.xlarge": (4, 16384),
    "u1.2xlarge": (8, 32768),
    "u1.4xlarge": (16, 65536),
    "u1.8xlarge": (32, 131072),
}


class RenderError(ValueError):
    """A resolved pool the renderer cannot express in the target CRDs (a bug or a gap)."""


@dataclass(frozen=True, slots=True)
class MachineShape:
    """What a worker VM looks like: an instance type, or explicit cpu and memory."""

    instance_type: str | None
    cpu: str | None
    memory: str | None
    disk_size: str
    storage_class: str | None
    gpus: tuple[tuple[str, bool], ...]

    def as_hash(self) -> dict[str, Any]:
        out: dict[str, Any] = {"diskSize": self.disk_size}
        if self.instance_type is not None:
            out["instanceType"] = self.instance_type
        if self.cpu is not None and self.memory is not None:
            out["resources"] = {"cpu": self.cpu, "memory": self.memory}
        if self.storage_class:
            out["storageClass"] = self.storage_class
        if self.gpus:
            out["gpus"] = [{"name": name, "vgpu": vgpu} for name, vgpu in self.gpus]
        return out


def machine_shape(effective: Effective) -> MachineShape:
    """Resources replace the instance type; neither means the default instance type.

    Proxmox clones a template onto Proxmox storage: a Kubernetes storage class and KubeVirt
    GPU devices mean nothing there, so they are left out of the shape (and of the hash).
    """
    proxmox = effective.infrastructure == "proxmox"
    pool = effective.pool
    resources = pool.resources
    if resources is not None:
        instance_type, cpu, memory = None, resources.cpu, resources.memory
    else:
        instance_type, cpu, memory = pool.instance_type or DEFAULT_INSTANCE_TYPE, None, None
    return MachineShape(
        instance_type=instance_type,
        cpu=cpu,
        memory=memory,
        disk_size=pool.disk_size or DEFAULT_DISK_SIZE,
        storage_class=None if proxmox else pool.storage_class or None,
        gpus=() if proxmox else tuple((gpu.name, gpu.vgpu) for gpu in pool.gpus),
    )


def template_tags(tags: tuple[str, ...] | None) -> list[str] | None:
    """Proxmox template tags as a set (the CRD's ``matchTags`` is a list-type set): sorted, unique."""
    return sorted(set(tags)) if tags is not None else None
