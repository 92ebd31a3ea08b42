"""The chart's values: defaults, Helm's coalesce, the data files, and building a ChartInput.

Owns reading the package data copied from the chart (``values.yaml``, ``files/versions.yaml``,
``images/kubectl.tag``, ``Chart.yaml``) and the instance types Cozystack ships, each parsed once
and cached; callers get deep copies (or read-only data) so nothing cached is mutated.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any, TypeGuard

from .context import ChartInput, Variant
from .kubeyaml import k8s_load, k8s_load_all
from .schema import null_failures

#: What the oracle (and Cozystack's tests/render-parity.sh) injects when no platform values are given.
DEFAULT_CLUSTER_VALUES: dict[str, Any] = {"_cluster": {"cluster-domain": "cozy.local"}}


def _data_text(name: str) -> str:
    return resources.files(__package__).joinpath("data", name).read_text(encoding="utf-8")


@functools.cache
def _defaults() -> dict[str, Any]:
    loaded = k8s_load(_data_text("values.yaml"))
    return loaded if isinstance(loaded, dict) else {}


def chart_defaults() -> dict[str, Any]:
    """The chart's ``values.yaml`` (a fresh deep copy on every call)."""
    return copy.deepcopy(_defaults())


_ATOMS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    """``copy.deepcopy`` for values data (dicts, lists and scalars; anything else is deep-copied)."""
    if type(value) is dict:
        return {k: v if type(v) in _ATOMS else _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [v if type(v) in _ATOMS else _copy(v) for v in value]
    if type(value) in _ATOMS:
        return value
    return copy.deepcopy(value)


def _is_table(v: Any) -> TypeGuard[Mapping[str, Any]]:
    t = type(v)
    return t is dict or (t not in _ATOMS and t is not list and isinstance(v, Mapping))


def _coalesce_tables(dst: dict[str, Any], src: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalesceTablesFullKey (dst wins): a null in dst deletes the key where src (the
    defaults) has that key, and only there (a user ``a.io: null`` under ``registryMirrors: {}``
    stays null, as Helm renders it); tables merge."""
    for key, val in src.items():
        if key in dst and dst[key] is None:
            del dst[key]  # the user's null removes the default too
            continue
        if key not in dst:
            dst[key] = _copy(val)
            continue
        dv = dst[key]
        if _is_table(val) and _is_table(dv):
            dst[key] = _coalesce_tables(dict(dv), val)
    return dst


def coalesce(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalesce of user values over chart defaults.

    Maps merge recursively; a user ``null`` removes the key (default included) where the defaults
    have that key (elsewhere below the top level it stays null, as in Helm); scalars and lists
    replace. ``values`` is not mutated.
    """
    return _coalesce_owned(_copy(dict(values)), defaults)


def _coalesce_owned(out: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`coalesce` into ``out``, a fresh tree the caller owns (it is changed in place)."""
    for key, val in defaults.items():
        if key in out:
            uv = out[key]
            if uv is None:
                del out[key]
            elif _is_table(uv) and _is_table(val):
                out[key] = _coalesce_tables(dict(uv), val)
        else:
            out[key] = _copy(val)
    # A top-level null the defaults do not know stays nil in Helm; nil and absent read the same
    # in every template expression, so it is dropped.
    for key in [k for k, v in out.items() if v is None]:
        del out[key]
    return out


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Flux's values merge (valuesFrom underneath, spec.values on top): maps merge, the rest replaces."""
    out: dict[str, Any] = _copy(dict(base))
    for k, v in over.items():
        cur = out.get(k)
        if _is_table(v) and _is_table(cur):
            out[k] = deep_merge(cur, v)
        else:
            out[k] = _copy(v)
    return out


@functools.cache
def _version_map() -> dict[str, str]:
    loaded = k8s_load(_data_text("versions.yaml"))
    if not isinstance(loaded, dict):
        return {}
    return {str(k): str(v) for k, v in loaded.items()}


def version_map() -> dict[str, str]:
    """``files/versions.yaml``: Kubernetes minor -> patch (e.g. ``v1.35`` -> ``v1.35.6``)."""
    return dict(_version_map())


@functools.cache
def kubectl_image() -> str:
    """``images/kubectl.tag``, stripped: the talos-reconcile Job's default image."""
    return _data_text("kubectl.tag").strip()


def chart_version() -> str:
    """``.Chart.Version``: the placeholder ``0.0.0`` the source chart carries."""
    return str(_chart_meta().get("version", "0.0.0"))


def app_version() -> str:
    """``.Chart.AppVersion`` from Chart.yaml."""
    return str(_chart_meta().get("appVersion", ""))


@functools.cache
def _chart_meta() -> dict[str, Any]:
    loaded = k8s_load(_data_text("Chart.yaml"))
    return loaded if isinstance(loaded, dict) else {}


@functools.cache
def _instancetypes() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for doc in k8s_load_all(_data_text("instancetypes.yaml")):
        if isinstance(doc, dict) and doc.get("kind") == "VirtualMachineClusterInstancetype":
            meta = doc.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if isinstance(name, str):
                table[name] = doc
    return table


def load_instancetypes() -> dict[str, Any]:
    """The VirtualMachineClusterInstancetype objects Cozystack ships, by name (shared, read-only)."""
    return dict(_instancetypes())


def chart_input(
    pool_values: Mapping[str, Any],
    *,
    namespace: str,
    release: str,
    cluster_values: Mapping[str, Any] | None = None,
    instancetypes: Mapping[str, Mapping[str, Any]] | None = None,
    variant: Variant = "main",
    existing_machinedeployment_release: str | None = None,
) -> ChartInput:
    """The values the templates see: pool values over the platform's, coalesced over defaults.

    ``cluster_values`` is ``{"_cluster": {...}, "_namespace": {...}}`` (default
    :data:`DEFAULT_CLUSTER_VALUES`, as the oracle); ``instancetypes`` defaults to the shipped set;
    ``existing_machinedeployment_release`` feeds the chart's foreign-pool lookup (None: none known).
    """
    platform = DEFAULT_CLUSTER_VALUES if cluster_values is None else cluster_values
    merged = deep_merge(platform, pool_values)  # a fresh tree: coalesced in place
    nulls = tuple(null_failures(merged, _defaults()))  # Helm validates its schema before coalescing drops them
    values = _coalesce_owned(merged, _defaults())
    return ChartInput(
        values=values,
        null_failures=nulls,
        release=release,
        namespace=namespace,
        instancetypes=load_instancetypes() if instancetypes is None else instancetypes,
        variant=variant,
        existing_machinedeployment_release=existing_machinedeployment_release,
    )
