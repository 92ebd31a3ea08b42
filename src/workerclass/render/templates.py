"""The templates no chart renders: Kairos pools, and Talos pools on Proxmox.

Both start from what the chart renders for the pool's legacy values (:mod:`workerclass.render.legacy`)
and change only what the family or the substrate needs, so they keep the chart's conventions:
names ``kubernetes-<cluster>-<pool>``, ``clusterName: kubernetes-<cluster>``, the MachineDeployment
and MachineHealthCheck (``cluster.x-k8s.io/v1beta1``, with the chart's annotations, strategy,
selector and labels), the WorkloadMonitor and the dashboard RBAC, all as the chart renders them.

**Kairos** (the design page's shape, API.md section 2): the chart's KubevirtMachineTemplate with the
system disk taken from the fixed or platform image reference as a KubeVirt ``containerDisk`` (the
pool's ``diskSize`` and ``storageClass`` become a blank data disk ``disk-data``, with the chart's
populator annotation). The bootstrap takes one of two paths (:data:`KAIROS_PATHS`, chosen by
:func:`workerclass.ops.providers.kairos_path` from what the cluster serves):

- the **data-secret** path (Cozystack as it ships: no released Kairos bootstrap provider runs on its
  Cluster API): the pool's kubeadm join as a ``#cloud-config`` Secret for Kairos's kubeadm provider
  (:mod:`.kairos_bootstrap`), which the MachineDeployment names in ``bootstrap.dataSecretName``;
- the **provider** path (a Kairos bootstrap provider whose template takes ``distribution: kubeadm``):
  a ``KairosConfigTemplate`` (``bootstrap.cluster.x-k8s.io/v1beta2``), ``role: worker``, the exact
  Kubernetes version of the disk, and the single SSH key as ``sshPublicKey`` of the user ``kairos``
  in the ``admin`` group (no key: no login is rendered).

The talos-reconcile Job and its RBAC and network policy are Talos machinery and are left out; the
MachineDeployment's ``version`` is the disk's.

The design page says Kairos bootstrap changes require replacement workers. So, unlike the
TalosConfigTemplate (a stable name whose spec the Talos provider keeps immutable), the bootstrap
Secret and the KairosConfigTemplate are named ``kubernetes-<cluster>-<pool>-<hash6>`` by its own content
(:func:`workerclass.render.hash.named_by_content`, which also stamps the hash rule's version on it):
a content change changes the MachineDeployment's ``bootstrap.dataSecretName`` or ``configRef``,
which Cluster API rolls.
The KubevirtMachineTemplate is named the same way by its content.

**Talos on Proxmox** (no oracle; Cozystack's chart is KubeVirt only): the chart's objects with the
KubevirtMachineTemplate replaced by a ``ProxmoxMachineTemplate`` (``infrastructure.cluster.x-k8s.io/v1alpha2``)
``kubernetes-<cluster>-<pool>-<hash6>`` by its content: the VM template chosen by the effective
template tags (sorted, unique), one socket with the chart's effective CPU (whole cores, rounded
up) and memory (MiB rounded up to a multiple of 8, as the CRD wants), the boot disk ``scsi0`` of
``diskSize`` (whole GiB, at least 5), one virtio NIC on ``vmbr0`` with IPv4 from the cluster's
pool. The talos-reconcile Job still applies the TalosConfigTemplate. GPUs and the storage class
are not used there (resolution warns).

Its edge: the chart's objects and the effective settings in, plain dicts out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..chart.values import copy_values
from ..resolve.effective import Effective
from .errors import RenderError
from .hash import named_by_content
from .kairos_bootstrap import bootstrap_secret
from .units import cpu_cores, gibibytes, mebibytes

__all__ = [
    "KAIROS_ADMIN_GROUP",
    "KAIROS_BOOTSTRAP_API",
    "KAIROS_DATA_SECRET_PATH",
    "KAIROS_DISTRIBUTION",
    "KAIROS_PATHS",
    "KAIROS_PROVIDER_PATH",
    "KAIROS_USER",
    "PROXMOX_API",
    "kairos_objects",
    "proxmox_objects",
]

KAIROS_BOOTSTRAP_API = "bootstrap.cluster.x-k8s.io/v1beta2"
KAIROS_USER = "kairos"
KAIROS_ADMIN_GROUP = "admin"
#: The kubeadm path the design page describes; the upstream enum lists only k0s and k3s.
KAIROS_DISTRIBUTION = "kubeadm"
#: How a Kairos pool's machines get their bootstrap: through a KairosConfigTemplate of a Kairos
#: bootstrap provider that takes ``distribution: kubeadm`` (none released runs on Cluster API v1.10),
#: or as a cloud-config Secret the MachineDeployment names (:mod:`.kairos_bootstrap`), which needs
#: no bootstrap provider: what a cluster as Cozystack ships it gets.
KAIROS_PROVIDER_PATH = "provider"
KAIROS_DATA_SECRET_PATH = "data-secret"
KAIROS_PATHS = (KAIROS_DATA_SECRET_PATH, KAIROS_PROVIDER_PATH)
KAIROS_DATA_DISK = "data"
KAIROS_DATA_VOLUME = "disk-data"
PROXMOX_API = "infrastructure.cluster.x-k8s.io/v1alpha2"
PROXMOX_BOOT_DISK = "scsi0"
#: Proxmox's default bridge; the machine takes its IPv4 address from the ProxmoxCluster's pool.
PROXMOX_BRIDGE = "vmbr0"
#: What the talos-reconcile machinery is called in every object of it (Job, RBAC, network policy).
TALOS_RECONCILE = "-talos-reconcile"


def _find(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    for obj in objects:
        if obj.get("kind") == kind:
            return obj
    raise RenderError(f"the chart rendered no {kind}")


def _pool_base(md: Mapping[str, Any]) -> str:
    """``kubernetes-<cluster>-<pool>``: the chart's MachineDeployment name."""
    return str(md["metadata"]["name"])


def _retarget(
    md: dict[str, Any],
    *,
    infrastructure: Mapping[str, Any] | None = None,
    bootstrap: Mapping[str, Any] | None = None,
    version: str | None = None,
) -> dict[str, Any]:
    """A copy of the chart's MachineDeployment pointing at other templates."""
    md = copy_values(md)
    machine = md["spec"]["template"]["spec"]
    for key, target in (("infrastructureRef", infrastructure), ("bootstrap", bootstrap)):
        if target is None:
            continue
        ref = {
            "apiVersion": target["apiVersion"],
            "kind": target["kind"],
            "name": target["metadata"]["name"],
            "namespace": target["metadata"]["namespace"],
        }
        if key == "bootstrap":
            machine["bootstrap"] = {"configRef": ref}
        else:
            machine["infrastructureRef"] = ref
    if version is not None:
        machine["version"] = version
    return md


def _replace(objects: list[dict[str, Any]], old: Mapping[str, Any], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for obj in objects:
        if obj is old:
            out.extend(new)
        else:
            out.append(obj)
    return out


# --------------------------------------------------------------------------- Kairos


def _kairos_machine_template(chart_template: Mapping[str, Any], reference: str) -> dict[str, Any]:
    """The Kairos KubevirtMachineTemplate made from the chart's (the render's fresh object, not
    kept by anything else): :func:`kairos_vm_template` changes its own copies of the containers on
    the paths it changes, the rest is the chart's."""
    template = kairos_vm_template(_own_path(chart_template["spec"]["template"]), reference)
    metadata = chart_template["metadata"]
    base = str(metadata["name"]).rsplit("-", 1)[0]
    return {
        "apiVersion": chart_template["apiVersion"],
        "kind": "KubevirtMachineTemplate",
        "metadata": named_by_content(base, metadata["namespace"], template),
        "spec": {"template": template},
    }


#: where kairos_vm_template sets a key or adds an item, from the template down
_CHANGED_PATH = ("spec", "virtualMachineTemplate", "spec", "template", "spec", "domain", "devices", "disks")


def _own_path(template: Mapping[str, Any]) -> dict[str, Any]:
    """``template`` with fresh copies of the containers on :data:`_CHANGED_PATH` (a chart's text
    read by YAML may hold one container in two places, an alias: changed in place, both would)."""
    top = dict(template)
    node: Any = top
    for name in _CHANGED_PATH:
        child = node[name]
        node[name] = child = list(child) if isinstance(child, list) else dict(child)
        node = child
    return top


def kairos_vm_template(template: dict[str, Any], reference: str) -> dict[str, Any]:
    """The chart's KubevirtMachineTemplate ``spec.template`` made a Kairos pool's, in place (the
    caller's own copy): the system disk a blank data volume, the image booted as a container disk."""
    vm_spec = template["spec"]["virtualMachineTemplate"]["spec"]
    system = vm_spec["dataVolumeTemplates"][0]
    data_volume: dict[str, Any] = {"metadata": {"name": KAIROS_DATA_VOLUME}}
    if "annotations" in system["metadata"]:
        data_volume["metadata"]["annotations"] = system["metadata"]["annotations"]
    data_volume["spec"] = {"source": {"blank": {}}, "storage": system["spec"]["storage"]}
    vm_spec["dataVolumeTemplates"] = [data_volume]
    guest = vm_spec["template"]["spec"]
    guest["domain"]["devices"]["disks"].append({"name": KAIROS_DATA_DISK, "disk": {"bus": "virtio"}})
    volumes: list[dict[str, Any]] = []
    for volume in guest["volumes"]:
        if "dataVolume" in volume and volume["dataVolume"].get("name") == system["metadata"]["name"]:
            volumes.append({"name": volume["name"], "containerDisk": {"image": reference}})
        else:
            volumes.append(volume)
    volumes.append({"name": KAIROS_DATA_DISK, "dataVolume": {"name": KAIROS_DATA_VOLUME}})
    guest["volumes"] = volumes
    return template


def _kairos_config_template(effective: Effective, base: str, namespace: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "role": "worker",
        "distribution": KAIROS_DISTRIBUTION,
        "kubernetesVersion": effective.kubernetes_version,
    }
    if effective.ssh_key:
        # One key authorizes a sudo-capable guest user (the page); an empty list renders no login.
        spec.update({"userName": KAIROS_USER, "userGroups": [KAIROS_ADMIN_GROUP], "sshPublicKey": effective.ssh_key})
    template = {"spec": spec}
    return {
        "apiVersion": KAIROS_BOOTSTRAP_API,
        "kind": "KairosConfigTemplate",
        "metadata": named_by_content(base, namespace, template),
        "spec": {"template": template},
    }


def kairos_objects(
    chart_objects: list[dict[str, Any]], effective: Effective, *, kairos_path: str = KAIROS_DATA_SECRET_PATH
) -> list[dict[str, Any]]:
    """The chart's objects for the pool, made a Kairos pool (see the module docstring); ``kairos_path``
    says how its machines get their bootstrap: :data:`KAIROS_DATA_SECRET_PATH` or :data:`KAIROS_PROVIDER_PATH`.

    ``chart_objects`` are the render's own, just made: the chart's KubevirtMachineTemplate is
    changed in place into the Kairos one (the caller keeps none of them)."""
    if kairos_path not in KAIROS_PATHS:
        raise RenderError(f"{effective.identity}: unknown Kairos bootstrap path {kairos_path!r}")
    reference = effective.image.reference
    if not reference:
        raise RenderError(f"{effective.identity}: the Kairos image has no reference")
    objects = [
        obj
        for obj in chart_objects
        if obj.get("kind") not in ("Job", "TalosConfigTemplate")
        and TALOS_RECONCILE not in str(obj.get("metadata", {}).get("name", ""))
    ]
    chart_kmt = _find(objects, "KubevirtMachineTemplate")
    md = _find(objects, "MachineDeployment")
    kmt = _kairos_machine_template(chart_kmt, reference)
    namespace = str(md["metadata"]["namespace"])
    if kairos_path == KAIROS_PROVIDER_PATH:
        kct = _kairos_config_template(effective, _pool_base(md), namespace)
        new_md = _retarget(md, infrastructure=kmt, bootstrap=kct, version=effective.kubernetes_version)
        objects = _replace(objects, chart_kmt, [kmt, kct])
        return _replace(objects, md, [new_md])
    secret = bootstrap_secret(effective, _pool_base(md), namespace)
    new_md = _retarget(md, infrastructure=kmt, version=effective.kubernetes_version)
    new_md["spec"]["template"]["spec"]["bootstrap"] = {"dataSecretName": secret["metadata"]["name"]}
    objects = _replace(objects, chart_kmt, [kmt, secret])
    return _replace(objects, md, [new_md])


# --------------------------------------------------------------------------- Proxmox


def proxmox_machine_template(
    effective: Effective, *, base: str, namespace: str, cpu: str, memory: str, disk_size: str
) -> dict[str, Any]:
    tags = sorted(set(effective.image.template_tags or ()))
    if not tags:
        raise RenderError(f"{effective.identity}: a Proxmox pool needs a nonempty template tag list")
    if not cpu or not memory:
        raise RenderError(f"{effective.identity}: a Proxmox pool needs an effective CPU and memory size")
    template = {
        "spec": {
            "templateSelector": {"matchTags": tags},
            "numSockets": 1,
            "numCores": cpu_cores(cpu),
            # The CRD wants a multiple of 8 MiB.
            "memoryMiB": -(-mebibytes(memory) // 8) * 8,
            "disks": {"bootVolume": {"disk": PROXMOX_BOOT_DISK, "sizeGb": max(5, gibibytes(disk_size))}},
            "network": {
                "networkDevices": [{"name": "net0", "bridge": PROXMOX_BRIDGE, "model": "virtio", "defaultIPv4": True}]
            },
        }
    }
    return {
        "apiVersion": PROXMOX_API,
        "kind": "ProxmoxMachineTemplate",
        "metadata": named_by_content(base, namespace, template),
        "spec": {"template": template},
    }


def proxmox_objects(
    chart_objects: list[dict[str, Any]], effective: Effective, *, cpu: str, memory: str, disk_size: str
) -> list[dict[str, Any]]:
    """The chart's objects with a ProxmoxMachineTemplate for the KubevirtMachineTemplate."""
    chart_kmt = _find(chart_objects, "KubevirtMachineTemplate")
    md = _find(chart_objects, "MachineDeployment")
    pmt = proxmox_machine_template(
        effective,
        base=_pool_base(md),
        namespace=str(md["metadata"]["namespace"]),
        cpu=cpu,
        memory=memory,
        disk_size=disk_size,
    )
    objects = _replace(chart_objects, chart_kmt, [pmt])
    return _replace(objects, md, [_retarget(md, infrastructure=pmt)])
