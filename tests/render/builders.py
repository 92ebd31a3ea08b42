"""Builders with defaults plus overrides for effective settings (``make_effective(**overrides)``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from workerclass.model import Gpu, KernelModule, PoolSpec, Resources, Taint
from workerclass.resolve.effective import Effective, EffectiveImage, EffectiveTalos

SCHEMATIC = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
OTHER_SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
TALOS_VERSION = "v1.13.6"
FACTORY = "https://factory.talos.dev"
INSTALLER_REPOSITORY = "factory.talos.dev/installer"
KAIROS_REFERENCE = (
    "ghcr.io/cozystack/cozystack/kairos-worker@sha256:ab712e0c41c4a395b374066d1cac090145a98710cabacffe914e17ae2c2548f9"
)
FIXED_REFERENCE = (
    "registry.example.com/workers/kairos-worker@sha256:3f7a9c2e1b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6a"
)
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx1c3RpZ2F0b3JzIGFyZSBub3QgcmVhbCBrZXlz tenant@example"
CA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUexample\n-----END CERTIFICATE-----\n"


def factory_url(version: str = TALOS_VERSION, schematic: str = SCHEMATIC, endpoint: str = FACTORY) -> str:
    return f"{endpoint}/image/{schematic}/{version}/openstack-amd64.raw.xz"


def make_talos(**overrides: Any) -> EffectiveTalos:
    values: dict[str, Any] = {
        "version": TALOS_VERSION,
        "schematic_id": SCHEMATIC,
        "image_factory_url": FACTORY,
        "image_factory_ca": "",
        "installer_repository": INSTALLER_REPOSITORY,
        "registry_mirrors": {},
    }
    values.update(overrides)
    return EffectiveTalos(**values)


def make_pool(**overrides: Any) -> PoolSpec:
    values: dict[str, Any] = {"cluster": "example", "version": "v1.35"}
    values.update(overrides)
    return PoolSpec(**values)


def make_effective(**overrides: Any) -> Effective:
    """A Talos KubeVirt pool on the factory path; ``bootstrap="kairos"`` switches the defaults."""
    bootstrap = overrides.get("bootstrap", "talos")
    talos = make_talos() if bootstrap == "talos" else None
    if bootstrap == "talos":
        image = EffectiveImage("factory", factory_url(), TALOS_VERSION, SCHEMATIC)
        installer: str | None = f"{INSTALLER_REPOSITORY}/{SCHEMATIC}:{TALOS_VERSION}"
    else:
        image = EffectiveImage("platform", KAIROS_REFERENCE, "v1.35.6", None)
        installer = None
    values: dict[str, Any] = {
        "kind": "KubernetesNodes",
        "namespace": "tenant-example",
        "name": "workers",
        "cluster": "example",
        "class_name": bootstrap,
        "bootstrap": bootstrap,
        "infrastructure": "kubevirt",
        "kubernetes_minor": "v1.35",
        "kubernetes_version": "v1.35.6",
        "talos": talos,
        "kernel_modules": (),
        "image": image,
        "installer_image": installer,
        "pool": make_pool(),
    }
    values.update(overrides)
    return Effective(**values)


def replace(effective: Effective, **changes: Any) -> Effective:
    return dataclasses.replace(effective, **changes)


def with_pool(effective: Effective, **changes: Any) -> Effective:
    return dataclasses.replace(effective, pool=dataclasses.replace(effective.pool, **changes))


def with_talos(effective: Effective, **changes: Any) -> Effective:
    assert effective.talos is not None
    return dataclasses.replace(effective, talos=dataclasses.replace(effective.talos, **changes))


__all__ = [
    "CA",
    "FIXED_REFERENCE",
    "KAIROS_REFERENCE",
    "OTHER_SCHEMATIC",
    "SCHEMATIC",
    "SSH_KEY",
    "Gpu",
    "KernelModule",
    "Resources",
    "Taint",
    "factory_url",
    "make_effective",
    "make_pool",
    "make_talos",
    "replace",
    "with_pool",
    "with_talos",
]
