"""Builders with defaults plus overrides for pools rendered through the public path.

``pool(**spec)`` is a KubernetesNodes ``example-<name>`` of the parent ``example`` (KubeVirt,
v1.35) in ``tenant-example``; ``render_pool(pool, *objects)`` builds a State with the parent, the
extra objects (classes, a platform) and the pool, resolves it and renders it. So every rendered
object in these tests went through ``resolve`` and the chart port, as ``workerclass render`` does.
"""

from __future__ import annotations

from typing import Any

from workerclass import render, resolve
from workerclass.render.templates import KAIROS_DATA_SECRET_PATH
from workerclass.resolve.effective import Effective
from workerclass.state import State

NAMESPACE = "tenant-example"
CLUSTER = "example"
SCHEMATIC = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
CHART_SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
TALOS_VERSION = "v1.13.6"
FACTORY = "https://factory.talos.dev"
INSTALLER_REPOSITORY = "factory.talos.dev/installer"
FIXED_REFERENCE = (
    "registry.example.com/workers/kairos-worker@sha256:3f7a9c2e1b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6a"
)
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx1c3RpZ2F0b3JzIGFyZSBub3QgcmVhbCBrZXlz tenant@example"
CA = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBszCCAVmgAwIBAgIUexampleexampleexampleexampleexampleAQIDAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n"
    "-----END CERTIFICATE-----\n"
)


def factory_url(version: str = TALOS_VERSION, schematic: str = CHART_SCHEMATIC, endpoint: str = FACTORY) -> str:
    return f"{endpoint}/image/{schematic}/{version}/openstack-amd64.raw.xz"


def parent(version: str = "v1.35", infrastructure: str = "kubevirt") -> dict[str, Any]:
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "Kubernetes",
        "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
        "spec": {"version": version, "infrastructure": infrastructure},
    }


def pool(name: str = "workers", **spec: Any) -> dict[str, Any]:
    """A KubernetesNodes ``example-<name>``; ``spec`` overrides ``{cluster, version}``."""
    return {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"name": f"{CLUSTER}-{name}", "namespace": NAMESPACE},
        "spec": {"cluster": CLUSTER, "version": "v1.35", **spec},
    }


def release(name: str = "workers", **values: Any) -> dict[str, Any]:
    """A KubernetesNodes HelmRelease ``kubernetes-nodes-example-<name>`` written directly."""
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": f"kubernetes-nodes-{CLUSTER}-{name}",
            "namespace": NAMESPACE,
            "labels": {"apps.cozystack.io/application.kind": "KubernetesNodes"},
        },
        "spec": {"values": {"cluster": CLUSTER, "version": "v1.35", **values}},
    }


def worker_class(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cozystack.io/v1alpha1", "kind": "WorkerClass", "metadata": {"name": name}, "spec": spec}


def identity(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def state_of(pool_object: dict[str, Any], *objects: dict[str, Any], infrastructure: str = "kubevirt") -> State:
    has_parent = any(obj.get("kind") == "Kubernetes" for obj in objects)
    return State.from_objects([*([] if has_parent else [parent(infrastructure=infrastructure)]), *objects, pool_object])


def effective_of(pool_object: dict[str, Any], *objects: dict[str, Any], infrastructure: str = "kubevirt") -> Effective:
    state = state_of(pool_object, *objects, infrastructure=infrastructure)
    record = state.pool(identity(pool_object))
    assert record is not None, identity(pool_object)
    return resolve(state, record)


def render_pool(
    pool_object: dict[str, Any],
    *objects: dict[str, Any],
    infrastructure: str = "kubevirt",
    talos_config_template: bool = True,
    kairos_path: str = KAIROS_DATA_SECRET_PATH,
) -> list[dict[str, Any]]:
    effective = effective_of(pool_object, *objects, infrastructure=infrastructure)
    return render(effective, talos_config_template=talos_config_template, kairos_path=kairos_path)


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The pool objects by kind (the chart renders several Roles: those are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj["kind"] in out and obj["kind"] not in ("Role", "RoleBinding"):
            raise AssertionError(f"two {obj['kind']} objects")
        out.setdefault(obj["kind"], obj)
    return out


__all__ = [
    "CA",
    "CHART_SCHEMATIC",
    "CLUSTER",
    "FACTORY",
    "FIXED_REFERENCE",
    "INSTALLER_REPOSITORY",
    "NAMESPACE",
    "SCHEMATIC",
    "SSH_KEY",
    "TALOS_VERSION",
    "by_kind",
    "effective_of",
    "factory_url",
    "identity",
    "parent",
    "pool",
    "release",
    "render_pool",
    "state_of",
    "worker_class",
]
