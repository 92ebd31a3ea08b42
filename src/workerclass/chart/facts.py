"""The facts the package ships about Cozystack's chart: ``data/facts.json``, read once.

Owns reading that file, which ``scripts/sync-upstream.py`` generates from the upstream charts (never
edited by hand, never a copy of an upstream file): the known charts' identities, and per upstream
chart its metadata, default values, values schema (types, defaults and constraints only), Kubernetes
version map, the talos-reconcile Job's default kubectl image and the Talos support matrix; the guest
sizes of the instance types Cozystack ships; the keys a ComputePlane node group may set.

Its edge: plain read-only data out. Callers that change what they get copy it first
(:func:`workerclass.chart.values.chart_defaults` returns a deep copy).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any

__all__ = ["DEFAULT_UPSTREAM", "compute_plane_keys", "facts", "instance_type_sizes", "upstream_facts"]

#: The upstream chart the facts describe when no chart is given: Cozystack main.
DEFAULT_UPSTREAM = "main"


@functools.cache
def facts() -> Mapping[str, Any]:
    """The whole facts file (parsed once; treat it as read-only)."""
    text = resources.files(__package__).joinpath("data", "facts.json").read_text(encoding="utf-8")
    loaded = json.loads(text)
    return loaded if isinstance(loaded, dict) else {}


def upstream_facts(name: str = DEFAULT_UPSTREAM) -> Mapping[str, Any]:
    """The facts of one upstream chart (``main``, ``pr3315``; the default's for a name not synced)."""
    upstream: Mapping[str, Mapping[str, Any]] = facts()["upstream"]
    return upstream[name] if name in upstream else upstream[DEFAULT_UPSTREAM]


@functools.cache
def instance_type_sizes() -> Mapping[str, Mapping[str, Any]]:
    """Name -> ``{"cpu": guest CPUs, "memory": guest memory}`` of every instance type Cozystack ships."""
    sizes = facts().get("instanceTypes") or {}
    return MappingProxyType({str(name): MappingProxyType(dict(size)) for name, size in sizes.items()})


@functools.cache
def compute_plane_keys() -> frozenset[str]:
    """The keys a ComputePlane node group may set (Cozystack's allowlist)."""
    return frozenset(str(key) for key in facts().get("computePlaneKeys") or ())
