"""The chart's values: defaults, Helm's coalesce, the chart's data, and building a ChartInput.

Owns what the templates read besides the pool's values, from the generated facts
(:mod:`.facts`): the chart's default values, its Kubernetes version map, the Job's default kubectl
image, ``.Chart.Version`` / ``.Chart.AppVersion``, and the instance types Cozystack ships (as the
objects the chart's lookup finds: name, guest CPU and memory). Each is built once and cached;
callers get deep copies (or read-only data) so nothing cached is mutated.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any, TypeGuard

from ..api.resources import INSTANCETYPE
from .context import ChartInput, Variant
from .facts import DEFAULT_UPSTREAM, instance_type_sizes, upstream_facts
from .schema import null_failures
from .source import ChartSource

#: What the oracle (and Cozystack's tests/render-parity.sh) injects when no platform values are given.
DEFAULT_CLUSTER_VALUES: dict[str, Any] = {"_cluster": {"cluster-domain": "cozy.local"}}


@functools.cache
def _defaults(upstream: str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    loaded = upstream_facts(upstream).get("defaults")
    return copy.deepcopy(loaded) if isinstance(loaded, dict) else {}


def chart_defaults(upstream: str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    """The chart's default values (its ``values.yaml``; a fresh deep copy on every call)."""
    return copy.deepcopy(_defaults(upstream))


def read_chart_defaults(upstream: str = DEFAULT_UPSTREAM) -> Mapping[str, Any]:
    """The chart's default values for a reader: the one copy per chart, made once (no deep copy:
    11 % of a pool UPDATE's validation when each review took one). Never change it."""
    return _defaults(upstream)


_ATOMS = (str, int, float, bool, type(None))


def copy_values(value: Any) -> Any:
    """``copy.deepcopy`` for values data (dicts, lists and scalars; anything else is deep-copied)."""
    if type(value) is dict:
        return {k: v if type(v) in _ATOMS else copy_values(v) for k, v in value.items()}
    if type(value) is list:
        return [v if type(v) in _ATOMS else copy_values(v) for v in value]
    if type(value) in _ATOMS:
        return value
    return copy.deepcopy(value)


def _is_table(v: Any) -> TypeGuard[Mapping[str, Any]]:
    t = type(v)
    return t is dict or (t not in _ATOMS and t is not list and isinstance(v, Mapping))


def _coalesce_tables(dst: dict[str, Any], src: Mapping[str, Any], share: bool = False) -> dict[str, Any]:
    """Helm's coalesceTablesFullKey (dst wins): a null in dst deletes the key where src (the
    defaults) has that key, and only there (a user ``a.io: null`` under ``registryMirrors: {}``
    stays null, as Helm renders it); tables merge. Only ``dst`` and the copies of its tables made
    here are changed; ``share``: a default ``dst`` lacks is put in as it is, not copied."""
    for key, val in src.items():
        if key in dst and dst[key] is None:
            del dst[key]  # the user's null removes the default too
            continue
        if key not in dst:
            dst[key] = val if share else copy_values(val)
            continue
        dv = dst[key]
        if _is_table(val) and _is_table(dv):
            dst[key] = _coalesce_tables(dict(dv), val, share)
    return dst


def coalesce(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalesce of user values over chart defaults.

    Maps merge recursively; a user ``null`` removes the key (default included) where the defaults
    have that key (elsewhere below the top level it stays null, as in Helm); scalars and lists
    replace. ``values`` is not mutated.
    """
    return _coalesce_owned(copy_values(dict(values)), defaults)


def _coalesce_owned(out: dict[str, Any], defaults: Mapping[str, Any], share: bool = False) -> dict[str, Any]:
    """:func:`coalesce` into ``out``, a dict the caller owns (changed in place; its tables are
    copied before they change, never changed themselves). ``share``: defaults ``out`` lacks are put
    in as they are, not copied (a tree that is read only: :func:`chart_input`'s)."""
    for key, val in defaults.items():
        if key in out:
            uv = out[key]
            if uv is None:
                del out[key]
            elif _is_table(uv) and _is_table(val):
                out[key] = _coalesce_tables(dict(uv), val, share)
        else:
            out[key] = val if share else copy_values(val)
    # A top-level null the defaults do not know stays nil in Helm; nil and absent read the same
    # in every template expression, so it is dropped.
    for key in [k for k, v in out.items() if v is None]:
        del out[key]
    return out


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Flux's values merge (valuesFrom underneath, spec.values on top): maps merge, the rest replaces."""
    out: dict[str, Any] = copy_values(dict(base))
    for k, v in over.items():
        cur = out.get(k)
        if _is_table(v) and _is_table(cur):
            out[k] = deep_merge(cur, v)
        else:
            out[k] = copy_values(v)
    return out


@functools.cache
def _version_map(upstream: str = DEFAULT_UPSTREAM) -> dict[str, str]:
    loaded = upstream_facts(upstream).get("versionMap")
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def version_map(upstream: str = DEFAULT_UPSTREAM) -> dict[str, str]:
    """The chart's version map (``files/versions.yaml``): Kubernetes minor -> patch (``v1.35`` -> ``v1.35.6``)."""
    return dict(_version_map(upstream))


@functools.cache
def kubectl_image(upstream: str = DEFAULT_UPSTREAM) -> str:
    """The talos-reconcile Job's default image (the chart's ``images/kubectl.tag``)."""
    return str(upstream_facts(upstream).get("kubectlImage", ""))


def chart_version(chart: ChartSource | None = None) -> str:
    """``.Chart.Version``: the given chart's, else the version the facts' chart carries (``0.0.0``)."""
    return (chart or ChartSource.shipped()).version


def app_version(upstream: str = DEFAULT_UPSTREAM) -> str:
    """``.Chart.AppVersion`` of the upstream chart (it counts towards the digest: the same for a known chart)."""
    meta = upstream_facts(upstream).get("chart")
    return str(meta.get("appVersion", "")) if isinstance(meta, Mapping) else ""


@functools.cache
def _instancetypes() -> dict[str, dict[str, Any]]:
    """The shipped instance types as the objects the chart's lookup reads (its guest CPU and memory)."""
    return {
        name: {
            "apiVersion": INSTANCETYPE.api_version,
            "kind": INSTANCETYPE.kind,
            "metadata": {"name": name},
            "spec": {"cpu": {"guest": size.get("cpu")}, "memory": {"guest": size.get("memory")}},
        }
        for name, size in instance_type_sizes().items()
    }


def load_instancetypes() -> dict[str, Any]:
    """The VirtualMachineClusterInstancetype objects Cozystack ships, by name (shared, read-only)."""
    return dict(_instancetypes())


def _platform_key(key: object) -> bool:
    """A top-level values key that is the platform's to set (``_cluster``, ``_namespace``, ...)."""
    return isinstance(key, str) and key.startswith("_")


def chart_input(
    pool_values: Mapping[str, Any],
    *,
    namespace: str,
    release: str,
    cluster_values: Mapping[str, Any] | None = None,
    instancetypes: Mapping[str, Mapping[str, Any]] | None = None,
    variant: Variant = "main",
    existing_machinedeployment_release: str | None = None,
    existing_machinedeployment_cluster: str | None = None,
    parent_control_plane_version: str | None = None,
    chart: ChartSource | None = None,
) -> ChartInput:
    """The values the templates see: pool values over the platform's, coalesced over defaults.

    ``cluster_values`` is ``{"_cluster": {...}, "_namespace": {...}}`` (default
    :data:`DEFAULT_CLUSTER_VALUES`, as the oracle); ``instancetypes`` defaults to the shipped set;
    ``existing_machinedeployment_release`` feeds the chart's foreign-pool lookup (None: none known),
    ``existing_machinedeployment_cluster`` and ``parent_control_plane_version`` PR 3315's lookups;
    ``chart`` is the chart in effect (default: the one the shipped facts describe), whose defaults
    are coalesced under the values.
    """
    chart = chart or ChartSource.shipped()
    platform = DEFAULT_CLUSTER_VALUES if cluster_values is None else cluster_values
    # The platform's values win: a pool's own top-level ``_`` keys (refused at admission as
    # PlatformValueInPool) never reach a template, so a tenant cannot set what the chart reads as
    # the platform's (``_cluster`` reaches the Job's shell script and the VM's scheduling).
    pool_only = {key: value for key, value in pool_values.items() if not _platform_key(key)}
    if platform.keys().isdisjoint(pool_only):
        # The usual case (the platform's keys are all ``_``-keys, which the pool's values lose):
        # Flux's merge is one dict of both. Nothing below changes a table of it, only copies of one,
        # so it is not copied: the values the templates read share the pool's, the platform's and
        # the defaults' tables, and are never changed (ChartInput's rule).
        merged = {**platform, **pool_only}
        share = True
    else:
        merged = deep_merge(platform, pool_only)  # a fresh tree: coalesced in place
        share = False
    nulls = tuple(null_failures(merged, _defaults(chart.upstream), chart.upstream))  # Helm validates its schema first
    supplied = {} if chart.known else copy_values(merged)  # Helm's engine coalesces a chart the port does not know
    values = _coalesce_owned(merged, _defaults(chart.upstream), share)
    return ChartInput(
        values=values,
        null_failures=nulls,
        release=release,
        namespace=namespace,
        instancetypes=load_instancetypes() if instancetypes is None else instancetypes,
        variant=variant,
        existing_machinedeployment_release=existing_machinedeployment_release,
        existing_machinedeployment_cluster=existing_machinedeployment_cluster,
        parent_control_plane_version=parent_control_plane_version,
        supplied_values=supplied,
        chart=chart,
    )
