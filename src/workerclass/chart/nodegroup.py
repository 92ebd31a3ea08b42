"""The objects of ``templates/nodegroup.yaml``, one function per define or document.

Owns: the ``kubevirtmachinetemplate`` define's exact text (:func:`kubevirtmachinetemplate_text`;
the template name is ``sha256`` of it, first 6 hex), and as plain dicts equal to what the
oracle parses: the KubevirtMachineTemplate, MachineDeployment, MachineHealthCheck and
WorkloadMonitor. The KMT text also takes a class-era disk source (:class:`Disk`): an HTTP import
with PR 3797's optional ``certConfigMap``, or PR 3294's ``pvc`` clone of a golden image (their
constructors and the CA ConfigMap are in :mod:`.render`). ``disk=None`` is the chart's own HTTP
source, byte for byte.

Callers pass a :class:`~workerclass.chart.context.ChartInput` the chart renders (see
``checks.chart_failures``); values the chart would refuse are not re-checked here.

Why one module over the house ~500 lines (about 600): it is ``nodegroup.yaml`` whole, one
function per define or document in the template's order (the KubevirtMachineTemplate's text, the
same object as data for the fast path, its name, then the MachineDeployment, MachineHealthCheck
and WorkloadMonitor), so a chart upgrade is one diff against one file; about 330 lines are the
KubevirtMachineTemplate, whose text and data forms must change together.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from ..api.caching import short_cache
from ..api.frozen import fast_init
from .context import ChartInput
from .goyaml import to_yaml
from .kubeyaml import from_yaml, k8s_load, plain_scalar
from .quantity import divf, go_quote_text, go_str, nindent, to_float, to_float64, to_int, truthy
from .sizing import Sizing
from .values import chart_version, copy_values, version_map

KMT_API = "infrastructure.cluster.x-k8s.io/v1alpha1"
CAPI_API = "cluster.x-k8s.io/v1beta1"
TCT_API = "bootstrap.cluster.x-k8s.io/v1alpha3"
WM_API = "cozystack.io/v1alpha1"

#: ``kubernetes.positiveDuration``'s pattern (fullmatch: Go's ``$`` is the end of the text).
POSITIVE_DURATION = re.compile(r"[1-9][0-9]{0,4}[smh]([0-9]{1,5}[smh]){0,2}")


@fast_init
@dataclass(frozen=True, slots=True)
class Disk:
    """Where ``disk-system`` is imported or cloned from.

    ``Disk(kind="http", url=..., cert_configmap=None)``: an HTTP import (PR 3797 adds
    ``certConfigMap`` when the factory has a CA). ``Disk(kind="pvc", pvc_namespace="cozy-public",
    pvc_name="talos-worker-<schematicID>-<version>")``: a CDI clone of a golden (PR 3294; no
    ``usePopulator`` annotation on that path).
    """

    kind: Literal["http", "pvc"] = "http"
    url: str = ""
    cert_configmap: str | None = None
    pvc_namespace: str = "cozy-public"
    pvc_name: str = ""

    @classmethod
    def http(cls, url: str, cert_configmap: str | None = None) -> Disk:
        return cls(kind="http", url=url, cert_configmap=cert_configmap)

    @classmethod
    def pvc(cls, namespace: str, name: str) -> Disk:
        return cls(kind="pvc", pvc_namespace=namespace, pvc_name=name)


def tpl(value: Any) -> str:
    """``{{ value }}`` in a template: ``%v``, with Helm's ``<no value>`` for nil replaced by ""."""
    return "" if value is None else go_str(value)


def go_quote(value: Any) -> str:
    """sprig ``quote``: Go's ``%q`` of the value's string."""
    return go_quote_text(go_str(value))


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if type(obj) is dict or isinstance(obj, Mapping) else None


def _roles(inp: ChartInput) -> list[Any]:
    roles = inp.values.get("roles")
    return list(roles) if isinstance(roles, list) else []


def factory_disk_url(endpoint: str, schematic_id: str, version: str) -> str:
    """The Image Factory disk CDI imports over HTTP, by the chart's rule (``nodegroup.yaml``).

    ``<endpoint | trimSuffix "/">/image/<schematic>/<version>/openstack-amd64.raw.xz``: exactly one
    trailing ``/`` comes off (``https://f.example//`` keeps one). The one builder of this URL:
    resolution's factory source, the class-era comparison and the chart port all call it, so a
    class that sets only what the chart can express renders the chart's URL and hash.
    """
    return f"{endpoint.removesuffix('/')}/image/{schematic_id}/{version}/openstack-amd64.raw.xz"


def chart_http_url(inp: ChartInput) -> str:
    """The chart's disk URL for the values' ``talos`` settings (:func:`factory_disk_url`)."""
    talos = inp.values.get("talos")
    return factory_disk_url(
        tpl(_get(talos, "imageFactoryURL")), tpl(_get(talos, "schematicID")), tpl(_get(talos, "version"))
    )


def sanitized_pod_resources(inp: ChartInput) -> str:
    """``cozy-lib.resources.sanitize`` of ``{ephemeral-storage: 2Gi}`` plus podCpuLimit/Request, as text.

    The chart round-trips the YAML through ``fromYaml``/``toYaml`` to set each CPU key; a map of
    strings survives that round trip unchanged, so the map is built once and written once.
    """
    limits, requests = _pod_resources(inp)
    return _pod_resources_text(tuple(limits.items()), tuple(requests.items()))


@short_cache(maxsize=1024)
def _pod_resources_text(limits: tuple[tuple[str, Any], ...], requests: tuple[tuple[str, Any], ...]) -> str:
    # Cached by the map: go-yaml's emitter costs ~45 us a call, the lookup ~1 us, and a fleet's
    # pools share a handful of pod CPU settings.
    return to_yaml({"limits": dict(limits), "requests": dict(requests)})


def _pod_resources(inp: ChartInput) -> tuple[dict[str, Any], dict[str, Any]]:
    cluster = inp.values.get("_cluster")
    ratio_raw = cluster.get("ephemeral-storage-allocation-ratio", "40") if isinstance(cluster, Mapping) else "40"
    limits: dict[str, Any] = {"ephemeral-storage": "2Gi"}
    requests: dict[str, Any] = {"ephemeral-storage": _ephemeral_request(ratio_raw)}
    v = inp.values
    if v.get("podCpuLimit") is not None:
        limits["cpu"] = go_str(v["podCpuLimit"])
    if v.get("podCpuRequest") is not None:
        requests["cpu"] = go_str(v["podCpuRequest"])
    return limits, requests


def _ephemeral_request(ratio_raw: Any) -> str:
    if type(ratio_raw) is str:
        return _ephemeral_request_str(ratio_raw)
    return str(to_int(divf(to_float("2Gi"), to_float64(ratio_raw))))


@short_cache(maxsize=64)
def _ephemeral_request_str(ratio_raw: str) -> str:
    return str(to_int(divf(to_float("2Gi"), to_float64(ratio_raw))))


@functools.lru_cache(maxsize=64)
def constraints_text(raw: str) -> str:
    """``$rawConstraints | fromYaml | toYaml`` (cached: the platform's one string).

    Helm's ``toYaml`` is go-yaml v2 (:mod:`.goyaml`): the template's name hashes this text, so its
    key order, folds, literal blocks, quoting and complex keys must be go-yaml's."""
    return to_yaml(from_yaml(raw))


@functools.lru_cache(maxsize=64)
def _constraints_block(raw: str, cluster_name: str) -> dict[str, Any] | None:
    """The define's ``spec`` lines from the platform's constraints to the chart's ``labelSelector``
    (what precedes ``domain:``), parsed on their own: the same for every pool of a cluster, so the
    direct build (:func:`_kmt_template_dict`) reads them once. None when they are not a mapping of
    their own (the caller then parses the whole text)."""
    text = constraints_text(raw) + (
        f"\n  labelSelector:\n    matchLabels:\n      cluster.x-k8s.io/cluster-name: {cluster_name}"
    )
    try:
        block = k8s_load(text)
    except yaml.YAMLError:
        return None
    return block if isinstance(block, dict) else None


def _disk_source_lines(inp: ChartInput, disk: Disk | None) -> list[str]:
    if disk is not None and disk.kind == "pvc":
        return [
            "          source:",
            "            pvc:",
            f"              namespace: {disk.pvc_namespace}",
            f"              name: {disk.pvc_name}",
        ]
    url = chart_http_url(inp) if disk is None else disk.url
    lines = ["          source:", "            http:", f"              url: {url}"]
    if disk is not None and disk.cert_configmap:
        lines.append(f"              certConfigMap: {disk.cert_configmap}")
    return lines


def kubevirtmachinetemplate_text(inp: ChartInput, sizing: Sizing, disk: Disk | None = None) -> str:
    """The ``kubevirtmachinetemplate`` define's output, exactly (no trailing newline)."""
    v = inp.values
    roles = _roles(inp)
    role_lines = [f'node-role.kubernetes.io/{tpl(r)}: ""' for r in roles]
    cluster_name = inp.cluster_name
    group = inp.group_name
    resources = v.get("resources")
    out: list[str] = [
        "spec:",
        "  virtualMachineBootstrapCheck:",
        "    checkStrategy: none",
        "  virtualMachineTemplate:",
        "    metadata:",
        f"      namespace: {inp.namespace}",
        "      labels:",
        *("        " + r for r in role_lines),
        "    spec:",
    ]
    if truthy(v.get("instanceType")) and not sizing.sized_by_resources:
        out += [
            "      instancetype:",
            "        kind: VirtualMachineClusterInstancetype",
            f"        name: {tpl(v.get('instanceType'))}",
        ]
    out += [
        "      runStrategy: Always",
        "      dataVolumeTemplates:",
        "      - metadata:",
        "          name: disk-system",
    ]
    if disk is None or disk.kind == "http":
        out += ["          annotations:", '            cdi.kubevirt.io/storage.usePopulator: "false"']
    out.append("        spec:")
    out += _disk_source_lines(inp, disk)
    disk_size = v.get("diskSize")
    out += [
        "          storage:",
        "            resources:",
        "              requests:",
        f"                storage: {go_quote(disk_size if truthy(disk_size) else '20Gi')}",
    ]
    storage_class = v.get("storageClass")
    if truthy(storage_class):
        out.append(f"            storageClassName: {go_quote(storage_class)}")
    out += [
        "      template:",
        "        metadata:",
        "          annotations:",
        '            kubevirt.io/allow-pod-bridge-network-live-migration: "true"',
        "          labels:",
        "            apps.cozystack.io/application.group: apps.cozystack.io",
        "            apps.cozystack.io/application.kind: Kubernetes",
        f"            apps.cozystack.io/application.name: {go_quote(cluster_name.removeprefix('kubernetes-'))}",
        *("            " + r for r in role_lines),
        f"            cluster.x-k8s.io/deployment-name: {cluster_name}-{group}",
        "        spec:",
    ]
    text = "\n".join(out)
    scheduling = _get(v.get("_cluster"), "scheduling")
    if truthy(scheduling):
        raw = _get(scheduling, "globalAppTopologySpreadConstraints")
        if truthy(raw):
            text += nindent(constraints_text(go_str(raw)), 10)
            text += (
                "\n            labelSelector:\n              matchLabels:\n"
                f"                cluster.x-k8s.io/cluster-name: {cluster_name}"
            )
    out = ["", "          domain:"]
    if truthy(resources) and truthy(_get(resources, "cpu")):
        out += [
            "            cpu:",
            "              threads: 1",
            f"              cores: {tpl(_get(resources, 'cpu'))}",
            "              sockets: 1",
        ]
    out.append("            devices:")
    gpus = v.get("gpus")
    if truthy(gpus) and isinstance(gpus, list):
        out.append("              gpus:")
        for i, gpu in enumerate(gpus):
            out += [f"              - name: gpu{i + 1}", f"                deviceName: {tpl(_get(gpu, 'name'))}"]
    out += [
        "              disks:",
        "              - name: system",
        "                disk:",
        "                  bus: virtio",
        "                  pciAddress: 0000:07:00.0",
        "                blockSize:",
        "                  custom:",
        "                    logical: 512",
        "                    physical: 4096",
        "              interfaces:",
        "              - name: default",
        "                bridge: {}",
    ]
    if truthy(v.get("logSerialConsole")):
        out.append("              logSerialConsole: true")
    if truthy(resources) and truthy(_get(resources, "memory")):
        out += ["            memory:", f"              guest: {tpl(_get(resources, 'memory'))}"]
    out.append("            resources:")
    out.append("              " + nindent(sanitized_pod_resources(inp), 14))
    out += [
        "          evictionStrategy: External",
        "          volumes:",
        "          - name: system",
        "            dataVolume:",
        "              name: disk-system",
        "          networks:",
        "          - name: default",
        "            pod: {}",
    ]
    return text + "\n".join(out)


_SIMPLE_QUANTITY = re.compile(r"[0-9A-Za-z.+-]*")
_PLAIN_CONSTANTS = {
    "pciAddress": plain_scalar("0000:07:00.0"),
    "512": plain_scalar("512"),
    "4096": plain_scalar("4096"),
}


def _quoted(value: Any) -> str | None:
    """What the parsed ``{{ quote value }}`` holds, or None when %q escaped something."""
    s = go_str(value)
    return s if go_quote(value) == f'"{s}"' else None


def _kmt_template_dict(inp: ChartInput, sizing: Sizing, disk: Disk | None) -> dict[str, Any] | None:
    """The parsed define, built directly (what :func:`k8s_load` reads from the text, key order
    included), for the common case: every unquoted value plain-safe (the caller checks), platform
    constraints that parse on their own (:func:`_constraints_block`), quoted values that %q leaves
    alone, plain pod CPU quantities. None otherwise (the caller parses the text).
    ``tests/chart/test_fast_paths.py`` checks it equals the parse of the text over the chart's
    value space."""
    v = inp.values
    constraints: dict[str, Any] = {}
    scheduling = _get(v.get("_cluster"), "scheduling")
    raw = _get(scheduling, "globalAppTopologySpreadConstraints") if truthy(scheduling) else None
    if truthy(raw):
        block = _constraints_block(go_str(raw), inp.cluster_name)
        if block is None or not block.keys().isdisjoint(("domain", "evictionStrategy", "volumes", "networks")):
            return None  # a shape the whole text's parse decides (a key the define writes after it)
        constraints = copy_values(block)
    disk_size = v.get("diskSize")
    storage = _quoted(disk_size if truthy(disk_size) else "20Gi")
    storage_class = v.get("storageClass")
    class_name = _quoted(storage_class) if truthy(storage_class) else ""
    cluster_name = inp.cluster_name
    app_name = _quoted(cluster_name.removeprefix("kubernetes-"))
    for key in ("podCpuLimit", "podCpuRequest"):
        if v.get(key) is not None and not _SIMPLE_QUANTITY.fullmatch(go_str(v[key])):
            return None
    if storage is None or class_name is None or app_name is None:
        return None
    roles = {f"node-role.kubernetes.io/{tpl(r)}": "" for r in _roles(inp)}
    resources = v.get("resources")
    vm_spec: dict[str, Any] = {}
    if truthy(v.get("instanceType")) and not sizing.sized_by_resources:
        vm_spec["instancetype"] = {
            "kind": "VirtualMachineClusterInstancetype",
            "name": plain_scalar(tpl(v.get("instanceType"))),
        }
    vm_spec["runStrategy"] = "Always"
    volume_meta: dict[str, Any] = {"name": "disk-system"}
    if disk is None or disk.kind == "http":
        volume_meta["annotations"] = {"cdi.kubevirt.io/storage.usePopulator": "false"}
    source: dict[str, Any]
    if disk is not None and disk.kind == "pvc":
        source = {"pvc": {"namespace": plain_scalar(disk.pvc_namespace), "name": plain_scalar(disk.pvc_name)}}
    else:
        http: dict[str, Any] = {"url": plain_scalar(chart_http_url(inp) if disk is None else disk.url)}
        if disk is not None and disk.cert_configmap:
            http["certConfigMap"] = plain_scalar(disk.cert_configmap)
        source = {"http": http}
    volume_storage: dict[str, Any] = {"resources": {"requests": {"storage": storage}}}
    if class_name:
        volume_storage["storageClassName"] = class_name
    vm_spec["dataVolumeTemplates"] = [{"metadata": volume_meta, "spec": {"source": source, "storage": volume_storage}}]
    domain: dict[str, Any] = {}
    if truthy(resources) and truthy(_get(resources, "cpu")):
        domain["cpu"] = {"threads": 1, "cores": plain_scalar(tpl(_get(resources, "cpu"))), "sockets": 1}
    devices: dict[str, Any] = {}
    gpus = v.get("gpus")
    if truthy(gpus) and isinstance(gpus, list):
        devices["gpus"] = [
            {"name": f"gpu{i + 1}", "deviceName": plain_scalar(tpl(_get(gpu, "name")))} for i, gpu in enumerate(gpus)
        ]
    devices["disks"] = [
        {
            "name": "system",
            "disk": {"bus": "virtio", "pciAddress": _PLAIN_CONSTANTS["pciAddress"]},
            "blockSize": {"custom": {"logical": _PLAIN_CONSTANTS["512"], "physical": _PLAIN_CONSTANTS["4096"]}},
        }
    ]
    devices["interfaces"] = [{"name": "default", "bridge": {}}]
    if truthy(v.get("logSerialConsole")):
        devices["logSerialConsole"] = True
    domain["devices"] = devices
    if truthy(resources) and truthy(_get(resources, "memory")):
        domain["memory"] = {"guest": plain_scalar(tpl(_get(resources, "memory")))}
    limits, requests = _pod_resources(inp)
    domain["resources"] = {"limits": dict(sorted(limits.items())), "requests": dict(sorted(requests.items()))}
    labels = {
        "apps.cozystack.io/application.group": "apps.cozystack.io",
        "apps.cozystack.io/application.kind": "Kubernetes",
        "apps.cozystack.io/application.name": app_name,
        **roles,
        "cluster.x-k8s.io/deployment-name": plain_scalar(f"{cluster_name}-{inp.group_name}"),
    }
    vm_spec["template"] = {
        "metadata": {
            "annotations": {"kubevirt.io/allow-pod-bridge-network-live-migration": "true"},
            "labels": labels,
        },
        "spec": {
            **constraints,
            "domain": domain,
            "evictionStrategy": "External",
            "volumes": [{"name": "system", "dataVolume": {"name": "disk-system"}}],
            "networks": [{"name": "default", "pod": {}}],
        },
    }
    return {
        "spec": {
            "virtualMachineBootstrapCheck": {"checkStrategy": "none"},
            "virtualMachineTemplate": {
                "metadata": {"namespace": plain_scalar(inp.namespace), "labels": roles or None},
                "spec": vm_spec,
            },
        }
    }


#: Hex digits the chart keeps of a name hash: its ``trunc 6``.
HASH_LENGTH = 6


def chart_hash(text: str) -> str:
    """``sha256sum | trunc 6`` of a text: the hash in the names of the chart's KubevirtMachineTemplate
    and talos-reconcile Job, and of the templates we name by content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def kubevirtmachinetemplate(inp: ChartInput, sizing: Sizing, disk: Disk | None = None) -> dict[str, Any]:
    """The KubevirtMachineTemplate document, parsed as the oracle parses it."""
    text = kubevirtmachinetemplate_text(inp, sizing, disk)
    return {
        "apiVersion": KMT_API,
        "kind": "KubevirtMachineTemplate",
        "metadata": {"name": f"{inp.cluster_name}-{inp.group_name}-{chart_hash(text)}", "namespace": inp.namespace},
        "spec": {"template": kmt_template(inp, sizing, disk, text=text)},
    }


def kmt_template(
    inp: ChartInput, sizing: Sizing, disk: Disk | None = None, *, text: str | None = None
) -> dict[str, Any]:
    """The KubevirtMachineTemplate's ``spec.template`` as :func:`kubevirtmachinetemplate` holds it
    (a new dict), built without the define's text where the values allow (``text``: that text,
    when the caller has it)."""
    if all_plain_safe(kmt_interpolations(inp, disk)):
        template = _kmt_template_dict(inp, sizing, disk)
        if template is not None:
            return template
    parsed: dict[str, Any] = k8s_load(kubevirtmachinetemplate_text(inp, sizing, disk) if text is None else text)
    return parsed


#: integers whose ``{{ }}`` is their own digits: fmt prints a float64 of 1e+06 or more with an exponent
_SMALL_INT = 1_000_000


def _scalar(value: Any) -> Any:
    """An unquoted ``{{ value }}`` as the parsed YAML holds it."""
    if value.__class__ is int and -_SMALL_INT < value < _SMALL_INT:
        return value  # printed as its digits (a float64's %v below 1e+06), read back as itself
    text = tpl(value)
    if plain_safe(text):
        return plain_scalar(text)
    loaded = k8s_load(f"v: {text}")
    return loaded.get("v") if isinstance(loaded, dict) else text


_PLAIN_SAFE = re.compile(r"[^\s\x00-\x1f\x7f#'\"\[\]{},&*!|>%@`\\]*")


def plain_safe(text: str) -> bool:
    """Whether ``text`` pasted after ``key: `` (or before ``: ""``) reads back as one plain scalar
    (no whitespace, comment, quote, flow or other indicator characters, no trailing colon)."""
    return _PLAIN_SAFE.fullmatch(text) is not None and not text.endswith(":")


def all_plain_safe(pairs: Sequence[tuple[str, str]]) -> bool:
    """Whether every text of ``pairs`` (field, text) is :func:`plain_safe`: one match of their
    concatenation (the pattern is one character class, repeated), then the trailing colons."""
    texts = [text for _, text in pairs]
    return _PLAIN_SAFE.fullmatch("".join(texts)) is not None and not any(text.endswith(":") for text in texts)


def kmt_interpolations(inp: ChartInput, disk: Disk | None = None) -> list[tuple[str, str]]:
    """(field, text) of the values the KMT define and the pool's documents paste unquoted."""
    v = inp.values
    out = [(f"spec.roles[{i}]", tpl(r)) for i, r in enumerate(_roles(inp))]
    gpus = v.get("gpus")
    for i, gpu in enumerate(gpus if isinstance(gpus, list) else []):
        out.append((f"spec.gpus[{i}].name", tpl(_get(gpu, "name"))))
    resources = v.get("resources")
    out += [(f"spec.resources.{k}", tpl(_get(resources, k))) for k in ("cpu", "memory")]
    out.append(("spec.instanceType", tpl(v.get("instanceType"))))
    if disk is None:
        talos = v.get("talos")
        out += [(f"spec.talos.{k}", tpl(_get(talos, k))) for k in ("imageFactoryURL", "schematicID", "version")]
    else:
        out += [
            ("disk", disk.url),
            ("disk", disk.cert_configmap or ""),
            ("disk", disk.pvc_namespace),
            ("disk", disk.pvc_name),
        ]
    out += [
        ("metadata.namespace", inp.namespace),
        ("spec.cluster", inp.cluster_name),
        ("metadata.name", inp.group_name),
    ]
    return out


def _duration(value: Any) -> str:
    s = go_str(value)
    return s if POSITIVE_DURATION.fullmatch(s) else ""


def _selector(inp: ChartInput) -> dict[str, str]:
    return {
        "cluster.x-k8s.io/cluster-name": inp.cluster_name,
        "cluster.x-k8s.io/deployment-name": f"{inp.cluster_name}-{inp.group_name}",
    }


def machinedeployment(inp: ChartInput, sizing: Sizing, kmt_name: str) -> dict[str, Any]:
    """The MachineDeployment (no ``spec.replicas``: the autoscaler owns it)."""
    v = inp.values
    annotations: dict[str, Any] = {
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": tpl(v.get("minReplicas")),
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": tpl(v.get("maxReplicas")),
        "cluster.x-k8s.io/autoscaling-options-maxnodeprovisiontime": _duration(v.get("maxNodeProvisionTime")),
    }
    memory = sizing.capacity_memory()
    if memory is not None:
        annotations["capacity.cluster-autoscaler.kubernetes.io/memory"] = memory
    cpu = sizing.capacity_cpu()
    if cpu is not None:
        annotations["capacity.cluster-autoscaler.kubernetes.io/cpu"] = cpu
    labels: dict[str, Any] = dict(_selector(inp))
    for role in _roles(inp):
        key = f"node-role.kubernetes.io/{tpl(role)}"
        if plain_safe(key):
            labels[key] = ""
        else:
            line = k8s_load(f'{key}: ""')
            labels.update(line if isinstance(line, dict) else {})
    name = f"{inp.cluster_name}-{inp.group_name}"
    return {
        "apiVersion": CAPI_API,
        "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": inp.namespace, "annotations": annotations},
        "spec": {
            "clusterName": inp.cluster_name,
            "strategy": {
                "rollingUpdate": {"maxSurge": _scalar(v.get("maxReplicas")), "maxUnavailable": 1},
                "type": "RollingUpdate",
            },
            "selector": {"matchLabels": _selector(inp)},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "bootstrap": {
                        "configRef": {
                            "apiVersion": TCT_API,
                            "kind": "TalosConfigTemplate",
                            "name": name,
                            "namespace": inp.namespace,
                        }
                    },
                    "clusterName": inp.cluster_name,
                    "infrastructureRef": {
                        "apiVersion": KMT_API,
                        "kind": "KubevirtMachineTemplate",
                        "name": kmt_name,
                        "namespace": inp.namespace,
                    },
                    "version": _scalar(version_map(inp.chart.upstream).get(go_str(v.get("version")), "")),
                },
            },
        },
    }


def _max_unhealthy(value: Any) -> Any:
    s = go_str(value)
    if s.endswith("%"):
        return s
    return to_int(s)


def machinehealthcheck(inp: ChartInput) -> dict[str, Any]:
    """The MachineHealthCheck (maxUnhealthy a bare int, or the quoted percentage)."""
    v = inp.values
    return {
        "apiVersion": CAPI_API,
        "kind": "MachineHealthCheck",
        "metadata": {"name": f"{inp.cluster_name}-{inp.group_name}", "namespace": inp.namespace},
        "spec": {
            "clusterName": inp.cluster_name,
            "maxUnhealthy": _max_unhealthy(v.get("maxUnhealthy")),
            "nodeStartupTimeout": _scalar(v.get("nodeStartupTimeout")),
            "selector": {"matchLabels": _selector(inp)},
            "unhealthyConditions": [
                {"type": "Ready", "status": "Unknown", "timeout": _duration(v.get("readyUnknownTimeout"))},
                {"type": "Ready", "status": "False", "timeout": _duration(v.get("readyFalseTimeout"))},
            ],
        },
    }


def workloadmonitor(inp: ChartInput) -> dict[str, Any]:
    """The worker WorkloadMonitor."""
    return {
        "apiVersion": WM_API,
        "kind": "WorkloadMonitor",
        "metadata": {"name": f"{inp.cluster_name}-{inp.group_name}", "namespace": inp.namespace},
        "spec": {
            "minReplicas": _scalar(inp.values.get("minReplicas")),
            "kind": "kubernetes",
            "type": "worker",
            "selector": {**_selector(inp), "cluster.x-k8s.io/role": "worker"},
            "version": _scalar(chart_version(inp.chart)),
        },
    }


def nodegroup_objects(inp: ChartInput, sizing: Sizing, disk: Disk | None = None) -> list[dict[str, Any]]:
    """``nodegroup.yaml``'s documents in file order (no earlier templates to preserve offline)."""
    kmt = kubevirtmachinetemplate(inp, sizing, disk)
    return [kmt, machinedeployment(inp, sizing, kmt["metadata"]["name"]), machinehealthcheck(inp), workloadmonitor(inp)]
