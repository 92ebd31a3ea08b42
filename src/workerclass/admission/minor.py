"""The Kubernetes minor the mutation writes into a new pool with a class that names none.

Its edge: the State, the request's object and the object after the class op in; the minor and the
warning that says where it came from out (or nothing to write). No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..chart.values import read_chart_defaults
from ..state import State, identify
from .names import shown_name

__all__ = ["minor_ops", "omitted_minor"]

#: the pool field that names its class
CLASS_FIELD = "workerClassName"


def _class_of(obj: Mapping[str, Any]) -> str | None:
    spec = obj.get("spec")
    value = spec.get(CLASS_FIELD) if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) and value else None


def omitted_minor(state: State, obj: Mapping[str, Any], patched: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(minor, warning)`` for a CREATE of a pool with a class that names no Kubernetes minor
    (``version`` absent, null or ``""``), else ``None``.

    The design page: the parent's control-plane minor goes first, so the parent's minor is written;
    only where there is none to take (no parent, or one that states no minor) the chart's own
    default, which is what the chart would have rendered. Writing it on CREATE fixes the pool's
    minor: a pool that followed its parent would roll its machines when the parent is upgraded.
    A classless pool is left as written (the chart renders it with its default).
    """
    spec = patched.get("spec")
    if (type(spec) is not dict and not isinstance(spec, Mapping)) or spec.get("version") not in (None, ""):
        return None
    if _class_of(patched) is None:
        return None
    cluster_name = spec.get("cluster")
    _, namespace, _ = identify(obj)
    parent = state.cluster(namespace, cluster_name) if isinstance(cluster_name, str) and cluster_name else None
    if parent is not None and parent.version:
        return parent.version, (
            f"spec.version: the pool names no Kubernetes minor: set to {parent.version}, the minor of its parent "
            f"cluster {shown_name(parent.name)} (the parent's minor goes first); set spec.version to choose another"
        )
    default = read_chart_defaults(state.chart.upstream).get("version")
    if not isinstance(default, str) or not default:
        return None
    why = (
        f"its parent cluster {shown_name(parent.name)} states no minor"
        if parent is not None
        else "there is no parent cluster to take one from"
    )
    return default, (
        f"spec.version: the pool names no Kubernetes minor and {why}: set to {default}, the kubernetes-nodes "
        "chart's default; set spec.version to choose another"
    )


def minor_ops(
    state: State, obj: Mapping[str, Any], patched: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The RFC 6902 op that writes :func:`omitted_minor`'s minor, and its warning (none: nothing)."""
    minor = omitted_minor(state, obj, patched)
    if minor is None:
        return [], []
    return [{"op": "add", "path": "/spec/version", "value": minor[0]}], [minor[1]]
