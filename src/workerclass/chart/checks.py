"""Every render-time ``fail`` of the chart, as admission failures.

Owns :func:`chart_failures`: the conditions of each ``fail`` in ``_helpers.tpl`` (cluster
required, the release-name rule, ``kubernetes.positiveDuration``), ``_versions.tpl``,
``nodegroup.yaml`` (Talos support matrix, half-set resources, the podCpuLimit/podCpuRequest
rules, instance type not found, kubelet reservation and eviction rules, totals, no effective
size, maxUnhealthy) and cozy-lib's tenant-namespace rule, plus PR 3571's kernel-module and
schematicID guards. The chart stops at its first failure; this reports each one the chart could
hit on its own (a check whose inputs are already refused is skipped), in the order Helm meets
them, so the list is empty exactly when the chart renders (a value the chart pastes unquoted and
that breaks its YAML counts: Helm refuses the manifest). Codes follow API.md section 3.
For ``variant="pr3571"`` the checks are that chart's: the kernel-module and schematicID guards,
and none of main's podCpuLimit/podCpuRequest or duration guards (its older base has neither).

Messages say what to change. A value is quoted only when it passed a strict, harmless shape
(a quantity, a duration shape, a DNS label); otherwise the message names the field and the rule.
Wrong types (the model parser reports them) are skipped, never a crash.

Why one module over the house ~500 lines (about 770): it is one function per ``fail`` (or per
group of ``fail``s in one template block), called in the order Helm meets them, and that order
is the contract (the list is empty exactly when the chart renders, and its first entry is the
chart's own refusal). Splitting by template file would scatter that one sequence over modules
and make a chart upgrade several diffs; the kernel-module guards, which are PR 3571's and not
the chart's, live in :mod:`.kernel_modules`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import yaml

from ..api.caching import short_cache
from ..api.resources import RELEASE_PREFIX
from ..violations import Violation
from .context import ChartInput
from .facts import upstream_facts
from .kernel_modules import SHELL_SAFE, kernel_module_failures
from .kubeyaml import k8s_load
from .nodegroup import (
    POSITIVE_DURATION,
    all_plain_safe,
    constraints_text,
    kmt_interpolations,
    kubevirtmachinetemplate_text,
    plain_safe,
    tpl,
)
from .quantity import cpu_to_millicores, go_str, is_finite_quantity, to_float, to_float64, truthy
from .sizing import Sizing, sizing
from .talos_job_spec import image_scalar
from .values import version_map

#: The node-group template's Talos support matrix: Talos minor -> the Kubernetes minors it runs.
TALOS_K8S_SUPPORT: dict[str, tuple[str, ...]] = {
    talos: tuple(minors) for talos, minors in upstream_facts()["talosSupport"].items()
}

_MEMORY = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_CPU = re.compile(r"([0-9]+m|[0-9]+(\.[0-9]+)?)")
_PCT_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")
_TALOS_MINOR = re.compile(r"v[0-9]+\.[0-9]+")
_WHOLE = re.compile(r"[0-9]+")
_WHOLE_PERCENT = re.compile(r"[0-9]+%")

# Shapes safe to echo back in a message (no secret fits them).
_SAFE_DNS = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_SAFE_QUANTITY = re.compile(r"[+-]?[0-9.]{1,20}([eE][+-]?[0-9]{1,3})?[A-Za-z]{0,3}%?")
_SAFE_DURATIONISH = re.compile(r"[+-]?[0-9]{1,12}(\.[0-9]{1,6})?[a-zµ]{0,3}([0-9]{1,12}[a-z]{1,3}){0,4}")

_KUBELET_MEMORY_HINT = "a Kubernetes memory quantity (e.g. 128Mi, 1Gi, 1e9, 500e6)"
_KUBELET_CPU_HINT = "a Kubernetes CPU quantity (integer millicores like 100m, or decimal cores like 0.5, 1)"


def _shown(value: Any, shape: re.Pattern[str]) -> str | None:
    s = go_str(value)
    return repr_go(s) if s and shape.fullmatch(s) else None


def repr_go(s: str) -> str:
    return '"' + s + '"'


def _describe(value: Any, shape: re.Pattern[str], what: str = "the value") -> str:
    shown = _shown(value, shape)
    if shown is not None:
        return f"got {shown}"
    if go_str(value) == "":
        return "got an empty value"
    return f"got {what} that does not have that shape"


class _Collector:
    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.failures: list[Violation] = []

    def add(self, code: str, field: str, message: str, *, prefix: bool = True) -> None:
        text = f"nodeGroup {self.pool}: {message}" if prefix else message
        self.failures.append(Violation(code=code, field=field, message=text))


#: The top-level values the chart's checks read but for the rewritten ones (those of ``talos``,
#: ``images`` and ``kernelModules``, which a classified pool's render writes over the pool's own, of
#: the text the chart pastes, which holds Talos URL parts, and Helm's schema validation): with the
#: input's release, namespace, instance types, chart, variant and lookups, all the others read. An
#: input that agrees with one that passed every check on all of them passes those too
#: (:func:`passes_rest_as`), and :func:`chart_failures` runs only the rewritten ones on it.
REST_KEYS: tuple[str, ...] = (
    "cluster",
    "version",
    "_cluster",
    "resources",
    "instanceType",
    "podCpuLimit",
    "podCpuRequest",
    "kubelet",
    "maxNodeProvisionTime",
    "maxUnhealthy",
    "readyUnknownTimeout",
    "readyFalseTimeout",
)


_ABSENT = object()


def passes_rest_as(inp: ChartInput, passed: ChartInput) -> bool:
    """Whether the checks but the rewritten ones (:data:`REST_KEYS`) must pass on ``inp`` because every check
    passed on ``passed``: the two agree on :data:`REST_KEYS` and on everything else those checks
    read, and ``inp``'s lookups found what ``passed``'s did or nothing (a lookup that found nothing
    refuses nothing)."""
    if (
        inp.release != passed.release
        or inp.namespace != passed.namespace
        or inp.instancetypes is not passed.instancetypes
        or inp.chart is not passed.chart
        or inp.variant != passed.variant
    ):
        return False
    for found, known in (
        (inp.existing_machinedeployment_release, passed.existing_machinedeployment_release),
        (inp.existing_machinedeployment_cluster, passed.existing_machinedeployment_cluster),
        (inp.parent_control_plane_version, passed.parent_control_plane_version),
    ):
        if found is not None and found != known:
            return False
    mine, theirs = inp.values, passed.values
    return all(mine.get(key, _ABSENT) == theirs.get(key, _ABSENT) for key in REST_KEYS)


def release_free(release: str, cluster: object) -> bool:
    """Whether the chart's checks read ``release`` only as a well-formed name: it is
    ``kubernetes-nodes-<cluster>-<pool>`` for the values' ``cluster``, and ``<pool>`` is a DNS name
    that reads back as a plain scalar where the chart pastes it. Between two such releases an input
    passes every check under one exactly when it does under the other (no other check reads the
    release; the foreign-pool lookup, which compares an owner with it, is given none by
    resolution), so a pass may be shared between pools that differ only in name."""
    if not isinstance(cluster, str) or not cluster:
        return False
    prefix = f"{RELEASE_PREFIX}{cluster}-"
    if not release.startswith(prefix):
        return False
    group = release[len(prefix) :]
    return _SAFE_DNS.fullmatch(group) is not None and plain_safe(group)


class Prechecked(NamedTuple):
    """What is known of an input before its render runs the chart's checks: its sizing, and whether
    every check passed on this very input (``whole``) or all but the rewritten ones must pass on it
    (:func:`passes_rest_as`; the sizing reads only :data:`REST_KEYS` and the instance types, so the
    input that passed has the same)."""

    size: Sizing
    whole: bool


def chart_failures(inp: ChartInput, *, size: Sizing | None = None, rest_passed: bool = False) -> list[Violation]:
    """Each render-time refusal of the chart for ``inp`` (empty: the chart renders).

    ``size``: ``sizing(inp)`` when the caller has it already (it is computed otherwise).
    ``rest_passed``: all but the rewritten checks are known to pass (:func:`passes_rest_as`): only
    those are run, in their places."""
    v = inp.values
    out = _Collector(inp.group_name if _SAFE_DNS.fullmatch(inp.group_name) else "(pool)")
    out.failures.extend(inp.null_failures)  # Helm's schema validation, before any template
    # talos-reconcile-job.yaml renders first (Helm's reverse path order): the helpers' rules.
    if not rest_passed:
        _check_cluster(inp, out)
        _check_version(inp, out)
    if inp.variant == "pr3571" or "kernelModules" in v:
        _check_pr3571(inp, out)
    # nodegroup.yaml
    _check_talos_matrix(inp, out)
    if rest_passed:
        # the rest, the arithmetic inputs' check among it, passed: the pasted text is checked as after it
        _check_rendered_yaml(inp, size if size is not None else sizing(inp), out)
        _check_job_image(inp, out)
        return out.failures
    _check_foreign_pool(inp, out)
    if inp.chart.rules.cluster_name_drift:
        _check_cluster_name_drift(inp, out)
    if inp.chart.rules.parent_version:
        _check_parent_version(inp, out)
    _check_scheduling(inp, out)
    _check_rest(inp, out, arithmetic=_check_arithmetic_inputs(inp, out), size=size)
    return out.failures


def _check_cluster(inp: ChartInput, out: _Collector) -> None:
    """``_helpers.tpl``: the cluster is required, and the release is named ``kubernetes-nodes-<cluster>-...``."""
    cluster = inp.values.get("cluster")
    if not truthy(cluster):
        out.add(
            "Invalid",
            "spec.cluster",
            "kubernetes-nodes: cluster is required: set it to the parent Kubernetes CR's name, "
            "so the pool attaches to cluster kubernetes-<cluster>",
            prefix=False,
        )
    elif isinstance(cluster, str) and not inp.release.startswith(f"{RELEASE_PREFIX}{cluster}-"):
        release = _shown(inp.release, _SAFE_DNS) or "the release name"
        cl = _shown(cluster, _SAFE_DNS) or "the cluster value"
        out.add(
            "InvalidPoolName",
            "metadata.name",
            f"kubernetes-nodes: release name {release} must start with {RELEASE_PREFIX}<cluster>- for cluster {cl}: "
            "name the KubernetesNodes <cluster>-<pool>",
            prefix=False,
        )


def _check_rest(inp: ChartInput, out: _Collector, *, arithmetic: bool, size: Sizing | None) -> None:
    v = inp.values
    if size is None:
        size = sizing(inp)
    main = inp.variant != "pr3571"  # PR 3571's older base has no podCpu pair and no duration guard
    _check_resources(inp, size, out)
    if main and arithmetic:
        _check_pod_cpu(inp, size, out)
    missing_type = _check_instancetype(inp, size, out)
    if arithmetic:
        _check_kubelet(inp, size, out, missing_type)
        _check_rendered_yaml(inp, size, out)
    _check_job_image(inp, out)
    if main:
        _check_duration(v, "maxNodeProvisionTime", out)
    _check_max_unhealthy(v, out)
    if main:
        _check_duration(v, "readyUnknownTimeout", out)
        _check_duration(v, "readyFalseTimeout", out)
    # dashboard-resourcemap.yaml: cozy-lib's RBAC helper
    if not inp.namespace.startswith("tenant-"):
        ns = _shown(inp.namespace, _SAFE_DNS) or "the namespace"
        out.add(
            "InvalidPoolName",
            "metadata.namespace",
            f"{ns} is not a valid tenant identifier: a pool lives in a tenant namespace (tenant-...)",
            prefix=False,
        )


def _check_arithmetic_inputs(inp: ChartInput, out: _Collector) -> bool:
    """Quantities the chart's decimal arithmetic cannot take (it panics on inf/nan and on a zero
    divisor): reported as Invalid, and the arithmetic checks are skipped. True when all are fine."""
    v = inp.values
    fine = True
    resources = v.get("resources")
    candidates = (
        ("spec.resources.cpu", _get(resources, "cpu")),
        ("spec.resources.memory", _get(resources, "memory")),
        ("spec.podCpuLimit", v.get("podCpuLimit")),
        ("spec.podCpuRequest", v.get("podCpuRequest")),
    )
    for field, value in candidates:
        if value is not None and isinstance(value, (str, int, float)) and not is_finite_quantity(value):
            fine = False
            out.add("Invalid", field, "must be a finite quantity (e.g. 4, 1500m, 8Gi)")
    cluster = v.get("_cluster")
    ratio = cluster.get("ephemeral-storage-allocation-ratio", "40") if isinstance(cluster, Mapping) else "40"
    r = to_float64(ratio)
    if r == 0 or r != r or r in (float("inf"), float("-inf")):
        fine = False
        out.add(
            "Invalid",
            "_cluster.ephemeral-storage-allocation-ratio",
            "the platform's ephemeral-storage allocation ratio must be a finite non-zero number",
            prefix=False,
        )
    return fine


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if type(obj) is dict or isinstance(obj, Mapping) else None


@functools.lru_cache(maxsize=64)
def _constraints_parse(raw: str) -> bool:
    """Whether ``raw | fromYaml | toYaml`` with the chart's ``labelSelector`` lines after it is YAML."""
    text = constraints_text(raw)
    body = "\n".join("  " + line for line in text.split("\n"))
    probe = f"spec:\n{body}\n    labelSelector:\n      matchLabels:\n        k: v\n  domain: {{}}"
    try:
        k8s_load(probe)
    except yaml.YAMLError:
        return False
    return True


def _check_scheduling(inp: ChartInput, out: _Collector) -> None:
    scheduling = _get(inp.values.get("_cluster"), "scheduling")
    raw = _get(scheduling, "globalAppTopologySpreadConstraints") if truthy(scheduling) else None
    if truthy(raw) and isinstance(raw, str) and not _constraints_parse(raw):
        out.add(
            "Invalid",
            "_cluster.scheduling.globalAppTopologySpreadConstraints",
            "the platform's globalAppTopologySpreadConstraints must be a YAML mapping whose last key holds the "
            "list of constraints (topologySpreadConstraints: [...]); the chart appends the labelSelector to the "
            "last one, and any other shape renders a KubevirtMachineTemplate that is not YAML",
            prefix=False,
        )


def _check_version(inp: ChartInput, out: _Collector) -> None:
    version = inp.values.get("version")
    if not isinstance(version, str):
        return
    allowed = version_map(inp.chart.upstream)
    if version not in allowed:
        shown = _shown(version, _SAFE_DNS) or "the version"
        out.add(
            "UnsupportedVersion",
            "spec.version",
            f"Kubernetes version {shown} is not supported, allowed versions are {sorted(allowed)}",
            prefix=False,
        )


def _check_talos_matrix(inp: ChartInput, out: _Collector) -> None:
    talos = inp.values.get("talos")
    talos_version = talos.get("version") if isinstance(talos, Mapping) else None
    version = inp.values.get("version")
    if not isinstance(talos_version, str):
        return
    m = _TALOS_MINOR.match(talos_version)
    supported = TALOS_K8S_SUPPORT.get(m.group(0)) if m else None
    if supported is not None and version not in supported:
        shown = _shown(version, _SAFE_DNS) or "the version"
        out.add(
            "TalosKubernetesIncompatible",
            "spec.version",
            f"Kubernetes {shown} is not supported by Talos {m.group(0) if m else ''}. "
            f"Supported versions: {list(supported)}. Bump 'version' or set talos.version explicitly.",
            prefix=False,
        )


#: the words that mark :func:`_check_foreign_pool`'s failure (:func:`is_foreign_pool`)
_FOREIGN = "is already managed by release"


def is_foreign_pool(failure: Violation) -> bool:
    """Whether ``failure`` is the chart's ``assertNoForeignPool``: the pool's MachineDeployment is
    another release's. Unlike the chart's other name rules, it is about what lives, not the name
    alone, so it refuses the pool on every path (resolution, the controller, ``render``)."""
    return failure.code == "InvalidPoolName" and _FOREIGN in failure.message


def _check_foreign_pool(inp: ChartInput, out: _Collector) -> None:
    """``kubernetes-nodes.assertNoForeignPool``: the MachineDeployment belongs to another release."""
    owner = inp.existing_machinedeployment_release
    if not truthy(inp.values.get("cluster")) or not owner or owner == inp.release:
        return
    name = f"{inp.cluster_name}-{inp.group_name}"
    shown = _shown(name, _SAFE_DNS) or "the pool's MachineDeployment"
    owner_shown = _shown(owner, _SAFE_DNS) or "another release"
    out.add(
        "InvalidPoolName",
        "metadata.name",
        f"kubernetes-nodes: MachineDeployment {shown} {_FOREIGN} {owner_shown}, not this pool's "
        "release: the pool name collides with a nodeGroup the parent kubernetes chart still manages. Rename the pool "
        "or remove it from the parent Kubernetes CR's nodeGroups first.",
        prefix=False,
    )


def _check_cluster_name_drift(inp: ChartInput, out: _Collector) -> None:
    """PR 3315: the live MachineDeployment of the pool's name runs another ``spec.clusterName``."""
    live = inp.existing_machinedeployment_cluster
    if not truthy(inp.values.get("cluster")) or not live or live == inp.cluster_name:
        return
    restore = _shown(live.removeprefix("kubernetes-"), _SAFE_DNS) or "its previous value"
    out.add(
        "PoolFieldImmutable",
        "spec.cluster",
        f"kubernetes-nodes: the pool's MachineDeployment belongs to another cluster: spec.cluster was changed after "
        f"the pool was created, and it cannot change (the pool's WorkloadMonitor would drift off its machines). "
        f"Set spec.cluster back to {restore}.",
        prefix=False,
    )


_MINOR = re.compile(r"v?([0-9]+)\.([0-9]+)")


def _check_parent_version(inp: ChartInput, out: _Collector) -> None:
    """PR 3315: the pool's minor is ahead of the parent KamajiControlPlane's (a kubelet may not lead the apiserver)."""
    parent = _MINOR.search(inp.parent_control_plane_version or "")
    pool = _MINOR.search(go_str(inp.values.get("version")))
    if parent is None or pool is None:
        return
    if (int(pool.group(1)), int(pool.group(2))) <= (int(parent.group(1)), int(parent.group(2))):
        return
    out.add(
        "ControlPlaneTooOld",
        "spec.version",
        f"kubernetes-nodes: pool version v{pool.group(1)}.{pool.group(2)} is ahead of the parent cluster's control "
        f"plane (v{parent.group(1)}.{parent.group(2)}): a worker kubelet may not run ahead of the apiserver; upgrade "
        "the parent Kubernetes first, or set version to at most its minor.",
        prefix=False,
    )


def _check_resources(inp: ChartInput, size: Sizing, out: _Collector) -> None:
    if truthy(inp.values.get("instanceType")) and size.has_cpu != size.has_memory:
        missing = "spec.resources.memory" if size.has_cpu else "spec.resources.cpu"
        out.add("IncompleteResources", missing, "set both resources.cpu and resources.memory, or neither")


def _check_pod_cpu(inp: ChartInput, size: Sizing, out: _Collector) -> None:
    v = inp.values
    limit, request = v.get("podCpuLimit"), v.get("podCpuRequest")
    has_limit, has_request = limit is not None, request is not None
    instance_sized = truthy(v.get("instanceType")) and not size.sized_by_resources
    for key, present in (("podCpuLimit", has_limit), ("podCpuRequest", has_request)):
        if present and instance_sized:
            out.add(
                "InvalidPodCPU",
                f"spec.{key}",
                f"{key} cannot be combined with instanceType sizing, because KubeVirt rejects a VirtualMachine "
                "that references an instancetype and also sets the CPU on its pod. Set both resources.cpu and "
                f"resources.memory, which drops the instancetype from the VM, or drop {key}.",
            )
    lim = to_float(limit) if has_limit else 0.0
    req = to_float(request) if has_request else 0.0
    if has_limit and lim < 0:
        out.add("InvalidPodCPU", "spec.podCpuLimit", f"podCpuLimit ({_q(limit)}) must not be negative")
    if has_request and req < 0:
        out.add("InvalidPodCPU", "spec.podCpuRequest", f"podCpuRequest ({_q(request)}) must not be negative")
    if has_limit and not has_request and lim == 0:
        out.add(
            "InvalidPodCPU",
            "spec.podCpuLimit",
            "podCpuLimit 0 needs podCpuRequest 0 beside it: a zero limit removes the ceiling, but KubeVirt still "
            "derives a CPU request from the guest vCPU count, which a limit of zero refuses.",
        )
    if has_limit and has_request:
        if req == 0 and lim != 0:
            out.add(
                "InvalidPodCPU",
                "spec.podCpuRequest",
                "podCpuRequest 0 beside a podCpuLimit does not reserve nothing: KubeVirt replaces a zero CPU "
                f"request with the declared limit ({_q(limit)}). Give podCpuRequest a non-zero value, or drop it.",
            )
        if req > lim:
            out.add(
                "InvalidPodCPU",
                "spec.podCpuRequest",
                f"podCpuRequest ({_q(request)}) exceeds podCpuLimit ({_q(limit)}), "
                "and a container cannot request more CPU than its limit",
            )


def _q(value: Any) -> str:
    s = go_str(value)
    return s if _SAFE_QUANTITY.fullmatch(s) else "the value given"


def _check_instancetype(inp: ChartInput, size: Sizing, out: _Collector) -> bool:
    name = inp.values.get("instanceType")
    if not size.uses_instancetype or not isinstance(name, str):
        return False
    if size.instancetype is None:
        shown = _shown(name, _SAFE_DNS) or "the instanceType given"
        out.add(
            "InstanceTypeNotFound",
            "spec.instanceType",
            f"specified instanceType {shown} not found in cluster: name a VirtualMachineClusterInstancetype "
            "that exists, or size the pool by resources.cpu and resources.memory",
        )
        return True
    return False


#: The chart's ``kubelet`` keys, in the order its reservation checks read them.
KUBELET_KEYS = (
    "systemReservedMemory",
    "kubeReservedMemory",
    "systemReservedCpu",
    "kubeReservedCpu",
    "evictionHardMemory",
    "evictionSoftMemory",
)


#: the kubelet view of values without a reservation (values.yaml's ``kubelet: {}``)
_NO_KUBELET: tuple[tuple[bool, str], ...] = tuple((truthy(None), go_str(None)) for _ in KUBELET_KEYS)


def _check_kubelet(inp: ChartInput, size: Sizing, out: _Collector, missing_type: bool) -> None:
    raw = inp.values.get("kubelet")
    # The checks read each value only as its truth and its %v text: cached on those and the sizes.
    if isinstance(raw, Mapping) and raw:
        view = tuple((truthy(value), go_str(value)) for value in (raw.get(key) for key in KUBELET_KEYS))
    else:
        view = _NO_KUBELET
    for code, field, message in _kubelet_failures(
        view,
        size.effective_memory,
        size.effective_cpu,
        size.system_reserved_memory,
        size.kube_reserved_memory,
        size.system_reserved_cpu,
        size.kube_reserved_cpu,
        size.eviction_hard_memory,
        size.eviction_soft_memory,
        missing_type,
    ):
        out.add(code, field, message)


class _Failures:
    """Collects (code, field, message) the way :class:`_Collector` does, before the pool prefix."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def add(self, code: str, field: str, message: str) -> None:
        self.items.append((code, field, message))


class _KubeletView:
    """The kubelet values as the checks read them: ``get`` gives the %v text of a truthy value, else None."""

    def __init__(self, view: tuple[tuple[bool, str], ...]) -> None:
        self._text = {key: text for key, (true, text) in zip(KUBELET_KEYS, view, strict=True) if true}

    def get(self, key: str) -> str | None:
        return self._text.get(key)


@short_cache(maxsize=1024)
def _kubelet_failures(
    view: tuple[tuple[bool, str], ...],
    effective_memory: str,
    effective_cpu: str,
    system_reserved_memory: str,
    kube_reserved_memory: str,
    system_reserved_cpu: str,
    kube_reserved_cpu: str,
    eviction_hard_memory: str,
    eviction_soft_memory: str,
    missing_type: bool,
) -> tuple[tuple[str, str, str], ...]:
    size = Sizing(
        instancetype=None,
        effective_memory=effective_memory,
        effective_cpu=effective_cpu,
        system_reserved_memory=system_reserved_memory,
        kube_reserved_memory=kube_reserved_memory,
        system_reserved_cpu=system_reserved_cpu,
        kube_reserved_cpu=kube_reserved_cpu,
        eviction_hard_memory=eviction_hard_memory,
        eviction_soft_memory=eviction_soft_memory,
    )
    out = _Failures()
    kubelet = _KubeletView(view)
    field = "spec.kubelet"
    bad: set[str] = set()
    for key, shape, hint in (
        ("systemReservedMemory", _MEMORY, _KUBELET_MEMORY_HINT),
        ("kubeReservedMemory", _MEMORY, _KUBELET_MEMORY_HINT),
        ("systemReservedCpu", _CPU, _KUBELET_CPU_HINT),
        ("kubeReservedCpu", _CPU, _KUBELET_CPU_HINT),
    ):
        value = kubelet.get(key)
        if truthy(value) and not shape.fullmatch(go_str(value)):
            bad.add(key)
            out.add(
                "InvalidKubeletReservation",
                f"{field}.{key}",
                f"invalid {key} value ({_describe(value, _SAFE_QUANTITY)}): must be {hint}",
            )
    for key in ("systemReservedMemory", "kubeReservedMemory"):
        value = kubelet.get(key)
        if truthy(value) and key not in bad and to_float(go_str(value)) <= 0:
            bad.add(key)
            out.add("InvalidKubeletReservation", f"{field}.{key}", f"{key} must be a positive value, got {_q(value)}")
    for key in ("systemReservedCpu", "kubeReservedCpu"):
        value = kubelet.get(key)
        if truthy(value) and key not in bad and to_float64(cpu_to_millicores(value)) <= 0:
            bad.add(key)
            out.add("InvalidKubeletReservation", f"{field}.{key}", f"{key} must be a positive value, got {_q(value)}")

    hard, soft = size.eviction_hard_memory, size.eviction_soft_memory
    for key, value, example in (("evictionHardMemory", hard, "7%"), ("evictionSoftMemory", soft, "10%")):
        if not value.endswith("%") and not _MEMORY.fullmatch(value):
            bad.add(key)
            out.add(
                "InvalidKubeletReservation",
                f"{field}.{key}",
                f"invalid {key} value ({_describe(value, _SAFE_QUANTITY)}): must be a percentage (e.g. {example}) "
                "or a Kubernetes memory quantity (e.g. 500Mi, 1Gi, 1e9)",
            )
    if hard.endswith("%") and soft.endswith("%"):
        pcts: dict[str, float] = {}
        for key, value in (("evictionHardMemory", hard), ("evictionSoftMemory", soft)):
            number = value[:-1]
            if not _PCT_NUMBER.fullmatch(number):
                bad.add(key)
                out.add(
                    "InvalidKubeletReservation",
                    f"{field}.{key}",
                    f"{key} percentage value ({_describe(number, _SAFE_QUANTITY)}) is not a valid number",
                )
                continue
            pct = to_float64(number)
            pcts[key] = pct
            if pct <= 0 or pct > 100:
                out.add(
                    "InvalidKubeletReservation",
                    f"{field}.{key}",
                    f"{key} percentage must be greater than 0 and at most 100, got {number}%",
                )
        if len(pcts) == 2 and pcts["evictionHardMemory"] >= pcts["evictionSoftMemory"]:
            out.add(
                "InvalidKubeletReservation",
                f"{field}.evictionHardMemory",
                f"evictionHardMemory ({hard}) must be strictly less than evictionSoftMemory ({soft})",
            )
    elif not hard.endswith("%") and not soft.endswith("%"):
        if not bad & {"evictionHardMemory", "evictionSoftMemory"} and to_float(hard) >= to_float(soft):
            out.add(
                "InvalidKubeletReservation",
                f"{field}.evictionHardMemory",
                f"evictionHardMemory ({hard}) must be strictly less than evictionSoftMemory ({soft})",
            )
    else:
        out.add(
            "InvalidKubeletReservation",
            f"{field}.evictionHardMemory",
            f"evictionHardMemory ({_q(hard)}) and evictionSoftMemory ({_q(soft)}) must use the same unit type "
            "(both percentage or both absolute)",
        )

    memory_ok = not bad & {"systemReservedMemory", "kubeReservedMemory", "evictionHardMemory"}
    if size.effective_memory and memory_ok and size.total_reserved_memory_bytes() >= to_float(size.effective_memory):
        out.add(
            "InvalidKubeletReservation",
            field,
            f"total reserved memory (systemReservedMemory={_q(size.system_reserved_memory)} + "
            f"kubeReservedMemory={_q(size.kube_reserved_memory)} + evictionHardMemory={_q(hard)}) must be less "
            f"than effective node memory ({_q(size.effective_memory)}): lower the reservations or size the node up",
        )
    cpu_ok = not bad & {"systemReservedCpu", "kubeReservedCpu"}
    if size.effective_cpu and cpu_ok and size.total_reserved_cpu_millis() >= size.effective_cpu_millis():
        out.add(
            "InvalidKubeletReservation",
            field,
            f"total reserved CPU (systemReservedCpu={_q(size.system_reserved_cpu)} + "
            f"kubeReservedCpu={_q(size.kube_reserved_cpu)}) must be less than effective node CPU "
            f"({_q(size.effective_cpu)} cores): lower the reservations or size the node up",
        )
    if missing_type:
        return tuple(out.items)
    memory_keys = ("systemReservedMemory", "kubeReservedMemory", "evictionHardMemory", "evictionSoftMemory")
    if not size.effective_memory and any(truthy(kubelet.get(k)) for k in memory_keys):
        out.add(
            "InvalidKubeletReservation",
            field,
            "kubelet memory reservations require effective memory to validate: set resources.memory or instanceType",
        )
    if not size.effective_cpu and any(truthy(kubelet.get(k)) for k in ("systemReservedCpu", "kubeReservedCpu")):
        out.add(
            "InvalidKubeletReservation",
            field,
            "cannot validate kubelet CPU reservations without effective CPU: set resources.cpu or a valid instanceType",
        )
    return tuple(out.items)


def _check_rendered_yaml(inp: ChartInput, size: Sizing, out: _Collector) -> None:
    """Values the chart pastes unquoted (roles, GPU names, sizes, Talos URL parts, nodeStartupTimeout)
    that turn its output into text that is not YAML: Helm's parse of the manifest refuses it."""
    pasted = kmt_interpolations(inp)
    unsafe = [] if all_plain_safe(pasted) else [(f, x) for f, x in pasted if not plain_safe(x)]
    timeout = inp.values.get("nodeStartupTimeout")
    if not plain_safe(tpl(timeout)):
        unsafe.append(("spec.nodeStartupTimeout", tpl(timeout)))
    if not unsafe:
        return
    blamed: list[str] = []
    try:
        k8s_load(kubevirtmachinetemplate_text(inp, size))
    except yaml.YAMLError:
        blamed += [f for f, _ in unsafe if f != "spec.nodeStartupTimeout"]
    for field, text in unsafe:
        if field.startswith("spec.roles["):
            probe = f'template:\n  metadata:\n    labels:\n      node-role.kubernetes.io/{text}: ""\n  spec: {{}}'
        elif field == "spec.nodeStartupTimeout":
            probe = f"spec:\n  clusterName: c\n  nodeStartupTimeout: {text}\n  selector: {{}}"
        else:
            continue
        try:
            k8s_load(probe)
        except yaml.YAMLError:
            blamed.append(field)
        else:
            # A line break inside the value re-indents the document around it (refused outright);
            # line breaks and spaces after it are blank lines YAML skips (a ``|`` block's newline).
            body = text.rstrip("\n ")
            if "\n" in body or "\r" in text:
                blamed.append(field)
    for field in dict.fromkeys(blamed):
        out.add(
            "Invalid",
            field,
            f"{field.removeprefix('spec.')} is pasted into the chart's YAML unquoted and this value breaks it: "
            "use a plain value without whitespace, line breaks, quotes, '#' or YAML flow characters",
        )


def _check_job_image(inp: ChartInput, out: _Collector) -> None:
    """``images.kubectl`` is written into the talos-reconcile Job as ``image: "<value>"``: a value
    that breaks that double-quoted scalar (a ``"``, an escape YAML does not know, a control
    character) makes the Job's manifest text that is not YAML, which Helm refuses."""
    images = inp.values.get("images")
    image = images.get("kubectl") if isinstance(images, Mapping) else None
    if truthy(image) and image_scalar(go_str(image)) is None:
        out.add(
            "Invalid",
            "spec.images.kubectl",
            'images.kubectl is written into the talos-reconcile Job\'s double-quoted image: "..." and this value '
            "breaks it: use an image reference without double quotes, backslashes or control characters",
        )


def _check_duration(values: Mapping[str, Any], key: str, out: _Collector) -> None:
    value = values.get(key)
    if not POSITIVE_DURATION.fullmatch(go_str(value)):
        out.add(
            "InvalidDuration",
            f"spec.{key}",
            f"{key} must be a whole number of s, m or h (e.g. 30m, 1h30m), "
            f"{_describe(value, _SAFE_DURATIONISH, 'a value')}",
            prefix=False,
        )


def _check_max_unhealthy(values: Mapping[str, Any], out: _Collector) -> None:
    s = go_str(values.get("maxUnhealthy"))
    ok = _WHOLE_PERCENT.fullmatch(s) if s.endswith("%") else _WHOLE.fullmatch(s)
    if not ok:
        out.add(
            "InvalidMaxUnhealthy",
            "spec.maxUnhealthy",
            "maxUnhealthy must be a bare integer (e.g. 0, 1) or an integer percentage (e.g. 50%), "
            f"{_describe(values.get('maxUnhealthy'), _SAFE_QUANTITY)}",
            prefix=False,
        )


def _check_pr3571(inp: ChartInput, out: _Collector) -> None:
    v = inp.values
    pool = out.pool
    modules = v.get("kernelModules")
    if isinstance(modules, list):
        out.failures += kernel_module_failures(modules, pool=pool)
    pool_schematic = v.get("schematicID")
    talos = v.get("talos")
    if truthy(pool_schematic):
        schematic, field = pool_schematic, "spec.schematicID"
    else:
        schematic = talos.get("schematicID") if isinstance(talos, Mapping) else None
        field = "spec.talos.schematicID"
    if schematic == "":
        return  # "" is the platform default (API.md section 2): the effective schematic is that one
    if not SHELL_SAFE.fullmatch(go_str(schematic)):
        out.add(
            "Invalid",
            field,
            f"pool {pool}: invalid schematicID: must not contain $, a backtick, a backslash, quotes, whitespace "
            "or control characters (a 64-hex image-factory digest or a mirror path such as gpu/nvidia-open is fine)",
            prefix=False,
        )
