"""The node sizing and kubelet reservation arithmetic of ``nodegroup.yaml``.

Owns: which source sizes the node (explicit ``resources`` or the instance type the chart's
``lookup`` finds), the effective memory and CPU strings, the auto-computed reservations (5 % of
the effective size, memory clamped to [256Mi, 1Gi], CPU to [50m, 500m]), the kubelet override
defaults (``evictionHardMemory`` 7 %, ``evictionSoftMemory`` 10 %), and the MachineDeployment's
cluster-autoscaler capacity annotations, all with the chart's float64/decimal semantics.

``talos-reconcile-job.yaml`` (lines ~380-440) mirrors the same computation, with one
difference: it looks the instance type up whenever ``instanceType`` is set (also for a pool
sized by both ``resources.cpu`` and ``resources.memory``) and treats a missing one as an empty
object instead of failing. The effective sizes still agree whenever the chart renders: explicit
resources win in both, a half-set ``resources`` with an instance type fails ``nodegroup.yaml``,
and a missing instance type fails ``nodegroup.yaml`` whenever it would be consulted. So one
:class:`Sizing` serves both templates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.caching import short_cache
from ..api.frozen import fast_init
from .context import ChartInput
from .quantity import (
    addf,
    cpu_to_millicores,
    divf,
    float_to_int,
    go_float_str,
    go_str,
    mulf,
    subf,
    to_float,
    to_float64,
    to_int,
    truthy,
)

_MI = 1048576.0


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if type(obj) is not dict and not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _chain(obj: Any, *path: str) -> bool:
    """``and $o $o.a $o.a.b ...``: every step of the path truthy."""
    if not truthy(obj):
        return False
    for key in path:
        obj = obj.get(key) if type(obj) is dict or isinstance(obj, Mapping) else None
        if not truthy(obj):
            return False
    return True


@fast_init
@dataclass(frozen=True, slots=True)
class Sizing:
    """What ``nodegroup.yaml`` computes for one pool, as the strings it computes."""

    instancetype: Mapping[str, Any] | None  # the looked-up object, None when not consulted/found
    effective_memory: str  # "" when none
    effective_cpu: str  # "" when none
    system_reserved_memory: str
    kube_reserved_memory: str
    system_reserved_cpu: str
    kube_reserved_cpu: str
    eviction_hard_memory: str
    eviction_soft_memory: str
    has_cpu: bool = False  # resources.cpu is set (truthy)
    has_memory: bool = False  # resources.memory is set (truthy)
    uses_instancetype: bool = False  # instanceType set and the pool not sized by resources

    @property
    def sized_by_resources(self) -> bool:
        return self.has_cpu and self.has_memory

    def eviction_hard_bytes(self) -> float:
        """The hard eviction threshold in bytes (percentages of the effective memory)."""
        return _eviction_hard_bytes(self.effective_memory, self.eviction_hard_memory)

    def total_reserved_memory_bytes(self) -> float:
        return _total_reserved_memory_bytes(
            self.system_reserved_memory, self.kube_reserved_memory, self.effective_memory, self.eviction_hard_memory
        )

    def total_reserved_cpu_millis(self) -> float:
        return _total_reserved_cpu_millis(self.system_reserved_cpu, self.kube_reserved_cpu)

    def effective_cpu_millis(self) -> float:
        return float(to_int(cpu_to_millicores(self.effective_cpu)))

    def capacity_memory(self) -> str | None:
        """``capacity.cluster-autoscaler.kubernetes.io/memory`` as rendered, None when absent."""
        if not self.effective_memory:
            return None
        return _capacity_memory(
            self.system_reserved_memory, self.kube_reserved_memory, self.effective_memory, self.eviction_hard_memory
        )

    def capacity_cpu(self) -> str | None:
        """``capacity.cluster-autoscaler.kubernetes.io/cpu`` as rendered, None when absent."""
        if not self.effective_cpu:
            return None
        return _capacity_cpu(self.effective_cpu, self.system_reserved_cpu, self.kube_reserved_cpu)


# The arithmetic is a pure function of a few strings: cached on them (pools share sizes).


@short_cache(maxsize=1024)
def _eviction_hard_bytes(effective_memory: str, hard: str) -> float:
    if not effective_memory:
        return 0.0
    if hard.endswith("%"):
        pct = to_float64(hard[:-1])
        return mulf(to_float(effective_memory), divf(pct, 100.0))
    return to_float(hard)


@short_cache(maxsize=1024)
def _total_reserved_memory_bytes(system: str, kube: str, effective_memory: str, hard: str) -> float:
    sys_b = to_float(system)
    kube_b = to_float(kube)
    return addf(addf(sys_b, kube_b), _eviction_hard_bytes(effective_memory, hard))


@short_cache(maxsize=1024)
def _total_reserved_cpu_millis(system: str, kube: str) -> float:
    return addf(to_float64(cpu_to_millicores(system)), to_float64(cpu_to_millicores(kube)))


@short_cache(maxsize=1024)
def _capacity_memory(system: str, kube: str, effective_memory: str, hard: str) -> str:
    allocatable = subf(to_float(effective_memory), _total_reserved_memory_bytes(system, kube, effective_memory, hard))
    mi = float(math.floor(divf(allocatable, _MI)))
    return f"{go_float_str(mi)}Mi"


@short_cache(maxsize=1024)
def _capacity_cpu(effective_cpu: str, system: str, kube: str) -> str:
    millis = float(to_int(cpu_to_millicores(effective_cpu)))
    allocatable = subf(millis, _total_reserved_cpu_millis(system, kube))
    return f"{float_to_int(float(math.ceil(allocatable)))}m"


@short_cache(maxsize=1024)
def _auto_memory(effective_memory: str) -> str:
    auto_mi = 256
    if effective_memory:
        mem_mi = float_to_int(divf(to_float(effective_memory), _MI))
        five = float_to_int(mulf(float(mem_mi), 0.05))
        auto_mi = min(max(five, 256), 1024)
    return f"{auto_mi}Mi"


@short_cache(maxsize=1024)
def _auto_cpu(effective_cpu: str) -> str:
    auto_millis = 50
    if effective_cpu:
        cpu_m = to_int(cpu_to_millicores(effective_cpu))
        five = float_to_int(mulf(float(cpu_m), 0.05))
        auto_millis = min(max(five, 50), 500)
    return f"{auto_millis}m"


def _override(kubelet: Mapping[str, Any], key: str, default: str) -> str:
    value = kubelet.get(key)
    return go_str(value) if truthy(value) else default


def sizing(inp: ChartInput) -> Sizing:
    """Port of ``nodegroup.yaml``'s sizing and reservation block for ``inp``."""
    v = inp.values
    resources = v.get("resources")
    has_cpu = truthy(resources) and truthy(_get(resources, "cpu"))
    has_mem = truthy(resources) and truthy(_get(resources, "memory"))
    instance_type = v.get("instanceType")
    uses_it = truthy(instance_type) and not (has_cpu and has_mem)
    it_obj: Mapping[str, Any] | None = None
    if uses_it and isinstance(instance_type, str):
        found = inp.instancetypes.get(instance_type)
        it_obj = found if truthy(found) else None

    effective_memory = ""
    if has_mem:
        effective_memory = go_str(_get(resources, "memory"))
    elif it_obj is not None and _chain(it_obj, "spec", "memory", "guest"):
        effective_memory = go_str(_get(it_obj, "spec", "memory", "guest"))
    effective_cpu = ""
    if has_cpu:
        effective_cpu = go_str(_get(resources, "cpu"))
    elif it_obj is not None and _chain(it_obj, "spec", "cpu", "guest"):
        effective_cpu = go_str(_get(it_obj, "spec", "cpu", "guest"))

    auto_memory = _auto_memory(effective_memory)
    auto_cpu = _auto_cpu(effective_cpu)

    kubelet_raw = v.get("kubelet")
    kubelet: Mapping[str, Any] = kubelet_raw if isinstance(kubelet_raw, Mapping) else {}
    return Sizing(
        instancetype=it_obj,
        effective_memory=effective_memory,
        effective_cpu=effective_cpu,
        system_reserved_memory=_override(kubelet, "systemReservedMemory", auto_memory),
        kube_reserved_memory=_override(kubelet, "kubeReservedMemory", auto_memory),
        system_reserved_cpu=_override(kubelet, "systemReservedCpu", auto_cpu),
        kube_reserved_cpu=_override(kubelet, "kubeReservedCpu", auto_cpu),
        eviction_hard_memory=_override(kubelet, "evictionHardMemory", "7%"),
        eviction_soft_memory=_override(kubelet, "evictionSoftMemory", "10%"),
        has_cpu=has_cpu,
        has_memory=has_mem,
        uses_instancetype=uses_it,
    )
