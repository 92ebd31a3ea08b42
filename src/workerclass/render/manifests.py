"""Effective settings -> the Cluster API objects that make one pool's workers.

Owns the object layout (API.md section 2, "What the resolved values become") in the served
storage versions of the upstream CRDs (``../shared/upstream-crds``):

- ``MachineDeployment`` (``cluster.x-k8s.io/v1beta2``): replicas left to the cluster
  autoscaler (node-group min/max annotations); roles, labels and taints for the nodes;
- ``KubevirtMachineTemplate`` (``infrastructure.cluster.x-k8s.io/v1alpha1``) or
  ``ProxmoxMachineTemplate`` (``infrastructure.cluster.x-k8s.io/v1alpha2``, Talos only);
- ``TalosConfigTemplate`` (``bootstrap.cluster.x-k8s.io/v1beta1``) or ``KairosConfigTemplate``
  (``bootstrap.cluster.x-k8s.io/v1beta2``);
- ``MachineHealthCheck`` (``cluster.x-k8s.io/v1beta2``);
- a ``ConfigMap`` with the Image Factory CA, referenced by the CDI HTTP import alone.

Both templates are named ``<pool>-<template hash>``; their content depends only on hashed
settings (:mod:`workerclass.render.hash`) and the pool's identity, so that a new name exactly
when the machines would differ is what rolls them. Its edge: pure data in, plain dicts out;
classless (legacy) pools take the same path and never look up a WorkerClass, because the
renderer does not see the State at all.
"""

from __future__ import annotations

from typing import Any

from ..model import DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS
from ..resolve.effective import Effective
from .defaults import (
    INSTANCE_TYPES,
    MachineShape,
    RenderError,
    machine_shape,
    template_tags,
)
from .hash import HASH_ANNOTATION, HASH_VERSION, HASH_VERSION_ANNOTATION, template_hash
from .units import cpu_cores, duration_seconds, gibibytes, mebibytes

__all__ = [
    "AUTOSCALER_MAX",
    "AUTOSCALER_MIN",
    "CLASS_ANNOTATION",
    "KIND_RANK",
    "POOL_ANNOTATION",
    "autoscaler_bounds",
    "cluster_api_name",
    "health_settings",
    "node_labels",
    "node_taints",
    "render",
    "sort_manifests",
    "template_name",
]

CAPI_GROUP = "cluster.x-k8s.io"
BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io"
INFRASTRUCTURE_GROUP = "infrastructure.cluster.x-k8s.io"

CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
DEPLOYMENT_NAME_LABEL = "cluster.x-k8s.io/deployment-name"
AUTOSCALER_MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
AUTOSCALER_MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "workerclass"
POOL_ANNOTATION = "workerclass.cozystack.io/pool"
CLASS_ANNOTATION = "workerclass.cozystack.io/class"

#: The Cozystack ``kubernetes`` app names its Cluster API ``Cluster`` after its release.
CLUSTER_PREFIX = "kubernetes-"
#: Health-check defaults: Cluster API's own node start-up default, 5 minutes per condition.
DEFAULT_NODE_STARTUP_TIMEOUT = "10m"
DEFAULT_READY_UNKNOWN_TIMEOUT = "5m"
DEFAULT_READY_FALSE_TIMEOUT = "5m"

KUBELET_IMAGE = "ghcr.io/siderolabs/kubelet"
KAIROS_USER = "kairos"
KAIROS_ADMIN_GROUP = "admin"
#: Kairos joins on the kubeadm path the page describes; see the module note in ``render``.
KAIROS_DISTRIBUTION = "kubeadm"
CA_CONFIGMAP_KEY = "ca.pem"
PROXMOX_BOOT_DISK = "scsi0"
#: Proxmox's default bridge; the machine takes its IPv4 address from the ProxmoxCluster's pool.
PROXMOX_BRIDGE = "vmbr0"
SYSTEM_VOLUME = "system"
EPHEMERAL_VOLUME = "ephemeral"

#: Apply order: what a template references comes before it, the deployment after both.
KIND_RANK: dict[str, int] = {
    "ConfigMap": 0,
    "KubevirtMachineTemplate": 1,
    "ProxmoxMachineTemplate": 1,
    "TalosConfigTemplate": 2,
    "KairosConfigTemplate": 2,
    "MachineDeployment": 3,
    "MachineHealthCheck": 4,
}


def cluster_api_name(effective: Effective) -> str:
    """The Cluster API ``Cluster`` of the pool's parent ``Kubernetes`` app."""
    return f"{CLUSTER_PREFIX}{effective.cluster}"


def template_name(effective: Effective, digest: str | None = None) -> str:
    """``<pool>-<hash>``: both templates of a pool share it (they are of different kinds)."""
    return f"{effective.name}-{digest or template_hash(effective)}"


def ca_configmap_name(effective: Effective) -> str:
    """Stable, so that a CA rotation updates trust for new imports without rolling machines."""
    return f"{effective.name}-image-factory-ca"


def sort_manifests(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kind rank, then namespace, then name; the kind name breaks ties within a rank."""
    return sorted(
        manifests,
        key=lambda obj: (
            KIND_RANK.get(obj["kind"], len(KIND_RANK)),
            obj["metadata"].get("namespace", ""),
            obj["metadata"]["name"],
            obj["kind"],
        ),
    )


# --------------------------------------------------------------------------- helpers


def _metadata(effective: Effective, name: str, *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": effective.namespace,
        "labels": {
            CLUSTER_NAME_LABEL: cluster_api_name(effective),
            MANAGED_BY_LABEL: MANAGED_BY,
        },
        "annotations": {POOL_ANNOTATION: f"{effective.kind}/{effective.identity}", **(annotations or {})},
    }
    return metadata


def _hash_annotations(digest: str) -> dict[str, str]:
    return {HASH_ANNOTATION: digest, HASH_VERSION_ANNOTATION: HASH_VERSION}


def _ref(group: str, kind: str, name: str) -> dict[str, str]:
    return {"apiGroup": group, "kind": kind, "name": name}


# --------------------------------------------------------------------------- MachineDeployment


def node_labels(effective: Effective) -> dict[str, str]:
    """Roles as ``node-role.kubernetes.io/<role>`` plus the pool's labels, sorted by key.

    They sit on the Machine template, which Cluster API updates in place; it syncs the
    ``node-role.kubernetes.io/`` prefix (and any prefix the hoster adds with
    ``--additional-sync-machine-labels``) on to the Nodes.
    """
    labels = {f"{ROLE_LABEL_PREFIX}{role}": "" for role in effective.pool.roles}
    labels.update(effective.pool.labels)
    return dict(sorted(labels.items()))


def node_taints(effective: Effective) -> list[str]:
    """The pool's taints as ``key=value:effect`` (for people; the manifest keeps the list)."""
    return [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in effective.pool.taints]


def autoscaler_bounds(effective: Effective) -> dict[str, int]:
    """``{"min": .., "max": ..}`` with the node-group defaults filled in."""
    pool = effective.pool
    minimum = pool.min_replicas if pool.min_replicas is not None else DEFAULT_MIN_REPLICAS
    maximum = pool.max_replicas if pool.max_replicas is not None else max(DEFAULT_MAX_REPLICAS, minimum)
    return {"min": minimum, "max": maximum}


def health_settings(effective: Effective) -> dict[str, Any]:
    """The MachineHealthCheck inputs with defaults filled in, timeouts in seconds."""
    pool = effective.pool
    return {
        "nodeStartupTimeoutSeconds": duration_seconds(pool.node_startup_timeout or DEFAULT_NODE_STARTUP_TIMEOUT),
        "readyUnknownSeconds": duration_seconds(pool.ready_unknown_timeout or DEFAULT_READY_UNKNOWN_TIMEOUT),
        "readyFalseSeconds": duration_seconds(pool.ready_false_timeout or DEFAULT_READY_FALSE_TIMEOUT),
        "maxUnhealthy": pool.max_unhealthy,
    }


def _machine_deployment(
    effective: Effective, digest: str, infrastructure_kind: str, bootstrap_kind: str
) -> dict[str, Any]:
    pool = effective.pool
    cluster = cluster_api_name(effective)
    bounds = autoscaler_bounds(effective)
    annotations = {
        AUTOSCALER_MIN: str(bounds["min"]),
        AUTOSCALER_MAX: str(bounds["max"]),
        **_hash_annotations(digest),
    }
    if effective.class_name is not None:
        annotations[CLASS_ANNOTATION] = effective.class_name
    selector = {CLUSTER_NAME_LABEL: cluster, DEPLOYMENT_NAME_LABEL: effective.name}
    machine: dict[str, Any] = {
        "clusterName": cluster,
        "version": effective.kubernetes_version,
        "bootstrap": {"configRef": _ref(BOOTSTRAP_GROUP, bootstrap_kind, template_name(effective, digest))},
        "infrastructureRef": _ref(INFRASTRUCTURE_GROUP, infrastructure_kind, template_name(effective, digest)),
    }
    if pool.taints:
        # Cluster API reconciles these taints on the nodes in place ("Always"), without a rollout.
        machine["taints"] = [{**taint.as_dict(), "propagation": "Always"} for taint in pool.taints]
    # ``replicas`` is left out on purpose: Cluster API defaults it from the autoscaler bounds
    # and the autoscaler owns it afterwards; writing it would fight the autoscaler.
    return {
        "apiVersion": f"{CAPI_GROUP}/v1beta2",
        "kind": "MachineDeployment",
        "metadata": _metadata(effective, effective.name, annotations=annotations),
        "spec": {
            "clusterName": cluster,
            "selector": {"matchLabels": dict(selector)},
            "template": {
                # the selector's labels last: the template must always match the selector
                "metadata": {"labels": {**node_labels(effective), **selector}},
                "spec": machine,
            },
        },
    }


# --------------------------------------------------------------------------- MachineHealthCheck


def _machine_health_check(effective: Effective) -> dict[str, Any]:
    cluster = cluster_api_name(effective)
    health = health_settings(effective)
    spec: dict[str, Any] = {
        "clusterName": cluster,
        "selector": {"matchLabels": {CLUSTER_NAME_LABEL: cluster, DEPLOYMENT_NAME_LABEL: effective.name}},
        "checks": {
            "nodeStartupTimeoutSeconds": health["nodeStartupTimeoutSeconds"],
            "unhealthyNodeConditions": [
                {"type": "Ready", "status": "Unknown", "timeoutSeconds": health["readyUnknownSeconds"]},
                {"type": "Ready", "status": "False", "timeoutSeconds": health["readyFalseSeconds"]},
            ],
        },
    }
    if health["maxUnhealthy"] is not None:
        # v1beta2 spells maxUnhealthy as remediation.triggerIf.unhealthyLessThanOrEqualTo
        # (int or string); "50%" stays the string "50%", 1 stays the integer 1.
        spec["remediation"] = {"triggerIf": {"unhealthyLessThanOrEqualTo": health["maxUnhealthy"]}}
    return {
        "apiVersion": f"{CAPI_GROUP}/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": _metadata(effective, effective.name),
        "spec": spec,
    }


# --------------------------------------------------------------------------- KubeVirt


def _storage(shape: MachineShape) -> dict[str, Any]:
    storage: dict[str, Any] = {"resources": {"requests": {"storage": shape.disk_size}}}
    if shape.storage_class:
        storage["storageClassName"] = shape.storage_class
    return storage


def _system_disk_source(effective: Effective) -> dict[str, Any]:
    image = effective.image
    if image.reference is None:
        raise RenderError(f"{effective.identity}: the {image.source} image has no reference")
    if image.source == "factory":
        http: dict[str, Any] = {"url": image.reference}
        if effective.talos is not None and effective.talos.image_factory_ca:
            http["certConfigMap"] = ca_configmap_name(effective)
        return {"http": http}
    if image.source == "builtin":
        namespace, _, name = image.reference.partition("/")
        if not namespace or not name:
            raise RenderError(f"{effective.identity}: golden {image.reference!r} is not namespace/name")
        return {"pvc": {"namespace": namespace, "name": name}}
    raise RenderError(f"{effective.identity}: image source {image.source!r} is not a KubeVirt disk for Talos")


def _kubevirt_machine_template(effective: Effective, digest: str) -> dict[str, Any]:
    shape = machine_shape(effective)
    disks: list[dict[str, Any]] = [{"name": SYSTEM_VOLUME, "disk": {"bus": "virtio"}}]
    if effective.bootstrap == "kairos":
        if effective.image.reference is None:
            raise RenderError(f"{effective.identity}: the Kairos image has no reference")
        # The immutable Kairos disk boots from the container disk; the pool's disk size and
        # storage class become a blank persistent disk for the node's data.
        data_volumes = [
            {
                "metadata": {"name": EPHEMERAL_VOLUME},
                "spec": {"source": {"blank": {}}, "storage": _storage(shape)},
            }
        ]
        volumes: list[dict[str, Any]] = [
            {"name": SYSTEM_VOLUME, "containerDisk": {"image": effective.image.reference}},
            {"name": EPHEMERAL_VOLUME, "dataVolume": {"name": EPHEMERAL_VOLUME}},
        ]
        disks.append({"name": EPHEMERAL_VOLUME, "disk": {"bus": "virtio"}})
    else:
        data_volumes = [
            {
                "metadata": {"name": SYSTEM_VOLUME},
                "spec": {"source": _system_disk_source(effective), "storage": _storage(shape)},
            }
        ]
        volumes = [{"name": SYSTEM_VOLUME, "dataVolume": {"name": SYSTEM_VOLUME}}]
    devices: dict[str, Any] = {
        "disks": disks,
        "interfaces": [{"name": "default", "bridge": {}}],
    }
    passthrough = [name for name, vgpu in shape.gpus if not vgpu]
    mediated = [name for name, vgpu in shape.gpus if vgpu]
    if passthrough:
        devices["hostDevices"] = [{"name": f"gpu{index}", "deviceName": name} for index, name in enumerate(passthrough)]
    if mediated:
        devices["gpus"] = [{"name": f"vgpu{index}", "deviceName": name} for index, name in enumerate(mediated)]
    domain: dict[str, Any] = {"devices": devices}
    vm_spec: dict[str, Any] = {"runStrategy": "Always", "dataVolumeTemplates": data_volumes}
    if shape.instance_type is not None:
        vm_spec["instancetype"] = {"kind": "VirtualMachineClusterInstancetype", "name": shape.instance_type}
    elif shape.cpu is not None and shape.memory is not None:
        domain["cpu"] = {"cores": cpu_cores(shape.cpu)}
        domain["memory"] = {"guest": shape.memory}
        domain["resources"] = {"requests": {"cpu": shape.cpu, "memory": shape.memory}}
    vm_spec["template"] = {
        "spec": {
            "domain": domain,
            "evictionStrategy": "External",
            "networks": [{"name": "default", "pod": {}}],
            "volumes": volumes,
        }
    }
    return {
        "apiVersion": f"{INFRASTRUCTURE_GROUP}/v1alpha1",
        "kind": "KubevirtMachineTemplate",
        "metadata": _metadata(effective, template_name(effective, digest), annotations=_hash_annotations(digest)),
        "spec": {
            "template": {
                "spec": {
                    # Talos runs no SSH server and Kairos gets no provider key: nothing to check over SSH.
                    "virtualMachineBootstrapCheck": {"checkStrategy": "none"},
                    "virtualMachineTemplate": {"spec": vm_spec},
                }
            }
        },
    }


def _image_factory_ca(effective: Effective) -> dict[str, Any] | None:
    talos = effective.talos
    if effective.image.source != "factory" or talos is None or not talos.image_factory_ca:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(effective, ca_configmap_name(effective)),
        "data": {CA_CONFIGMAP_KEY: talos.image_factory_ca},
    }


# --------------------------------------------------------------------------- Proxmox


def _proxmox_machine_template(effective: Effective, digest: str) -> dict[str, Any]:
    shape = machine_shape(effective)
    tags = template_tags(effective.image.template_tags)
    if not tags:
        raise RenderError(f"{effective.identity}: a Proxmox pool needs a nonempty template tag list")
    if shape.cpu is not None and shape.memory is not None:
        cores, memory = cpu_cores(shape.cpu), mebibytes(shape.memory)
    else:
        instance_type = shape.instance_type or ""
        if instance_type not in INSTANCE_TYPES:
            known = ", ".join(sorted(INSTANCE_TYPES))
            raise RenderError(
                f"{effective.identity}: instance type {instance_type!r} has no Proxmox size;"
                f" set resources or use one of {known}"
            )
        cores, memory = INSTANCE_TYPES[instance_type]
    return {
        "apiVersion": f"{INFRASTRUCTURE_GROUP}/v1alpha2",
        "kind": "ProxmoxMachineTemplate",
        "metadata": _metadata(effective, template_name(effective, digest), annotations=_hash_annotations(digest)),
        "spec": {
            "template": {
                "spec": {
                    "templateSelector": {"matchTags": tags},
                    "numSockets": 1,
                    "numCores": cores,
                    # The CRD wants a multiple of 8 MiB.
                    "memoryMiB": -(-memory // 8) * 8,
                    "disks": {"bootVolume": {"disk": PROXMOX_BOOT_DISK, "sizeGb": max(5, gibibytes(shape.disk_size))}},
                    "network": {
                        "networkDevices": [
                            {"name": "net0", "bridge": PROXMOX_BRIDGE, "model": "virtio", "defaultIPv4": True}
                        ]
                    },
                }
            }
        },
    }


# --------------------------------------------------------------------------- bootstrap


def _talos_config_template(effective: Effective, digest: str) -> dict[str, Any]:
    talos = effective.talos
    if talos is None or not effective.installer_image:
        raise RenderError(f"{effective.identity}: a Talos pool needs effective Talos settings and an installer image")
    # RFC 6902 "add" replaces an existing member, so these hold whatever the generated config has.
    patches: list[dict[str, Any]] = [
        {"op": "add", "path": "/machine/install/image", "value": effective.installer_image},
        {"op": "add", "path": "/machine/kubelet/image", "value": f"{KUBELET_IMAGE}:{effective.kubernetes_version}"},
    ]
    if talos.registry_mirrors:
        mirrors = {
            registry: {"endpoints": list(endpoints)} for registry, endpoints in sorted(talos.registry_mirrors.items())
        }
        patches.append({"op": "add", "path": "/machine/registries", "value": {"mirrors": mirrors}})
    if effective.kernel_modules:
        modules = [
            {"name": module.name, **({"parameters": list(module.parameters)} if module.parameters else {})}
            for module in effective.kernel_modules
        ]
        patches.append({"op": "add", "path": "/machine/kernel", "value": {"modules": modules}})
    return {
        "apiVersion": f"{BOOTSTRAP_GROUP}/v1beta1",
        "kind": "TalosConfigTemplate",
        "metadata": _metadata(effective, template_name(effective, digest), annotations=_hash_annotations(digest)),
        "spec": {
            "template": {
                "spec": {
                    "generateType": "worker",
                    "talosVersion": _talos_minor(talos.version),
                    "configPatches": patches,
                }
            }
        },
    }


def _talos_minor(version: str) -> str:
    major, minor, *_ = version.lstrip("v").split(".")
    return f"v{major}.{minor}"


def _kairos_config_template(effective: Effective, digest: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "role": "worker",
        "distribution": KAIROS_DISTRIBUTION,
        "kubernetesVersion": effective.kubernetes_version,
    }
    if effective.ssh_key:
        # One key authorizes a sudo-capable guest user: the ``admin`` group. No key: no login is
        # rendered at all (the page: an empty list configures no SSH login).
        spec.update({"userName": KAIROS_USER, "userGroups": [KAIROS_ADMIN_GROUP], "sshPublicKey": effective.ssh_key})
    return {
        "apiVersion": f"{BOOTSTRAP_GROUP}/v1beta2",
        "kind": "KairosConfigTemplate",
        "metadata": _metadata(effective, template_name(effective, digest), annotations=_hash_annotations(digest)),
        "spec": {"template": {"spec": spec}},
    }


# --------------------------------------------------------------------------- entry point


def render(effective: Effective) -> list[dict[str, Any]]:
    """The pool's Cluster API objects, in :func:`sort_manifests` order. Raises :class:`RenderError`."""
    if effective.bootstrap not in ("talos", "kairos"):
        raise RenderError(f"{effective.identity}: unknown bootstrap family {effective.bootstrap!r}")
    digest = template_hash(effective)
    manifests: list[dict[str, Any]] = []
    if effective.infrastructure == "proxmox":
        if effective.bootstrap != "talos":
            raise RenderError(f"{effective.identity}: Kairos pools run on KubeVirt only, not Proxmox")
        manifests.append(_proxmox_machine_template(effective, digest))
        infrastructure_kind = "ProxmoxMachineTemplate"
    elif effective.infrastructure == "kubevirt":
        manifests.append(_kubevirt_machine_template(effective, digest))
        infrastructure_kind = "KubevirtMachineTemplate"
        ca = _image_factory_ca(effective)
        if ca is not None:
            manifests.append(ca)
    else:
        raise RenderError(f"{effective.identity}: unknown infrastructure {effective.infrastructure!r}")
    if effective.bootstrap == "talos":
        manifests.append(_talos_config_template(effective, digest))
        bootstrap_kind = "TalosConfigTemplate"
    else:
        manifests.append(_kairos_config_template(effective, digest))
        bootstrap_kind = "KairosConfigTemplate"
    manifests.append(_machine_deployment(effective, digest, infrastructure_kind, bootstrap_kind))
    manifests.append(_machine_health_check(effective))
    return sort_manifests(manifests)
