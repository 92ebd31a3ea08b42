"""What the kubernetes-nodes chart decides for a pool: its render-time refusals, its defaults and
its own version map, and the context the renderer needs beside the effective settings.

The chart's checks (:func:`chart_checks`) are computed once per State and once per identical
values across States and pools (a bounded, least recently used cache): a pool whose values are
another's but for its name is given that pool's pass and checked input under its own release.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any, NamedTuple, cast

from ..api.bounds import MAX_SHARED_INPUT_TEXT, MAX_SHARED_TEXT
from ..api.resources import RELEASE_PREFIX
from ..chart.checks import chart_failures, release_free
from ..chart.context import ChartInput
from ..chart.schema import plain_json_text
from ..chart.sizing import Sizing, sizing
from ..chart.values import chart_defaults, chart_input, version_map
from ..state import PoolRecord, State, release_of
from ..violations import Violation, under_values
from .effective import CheckedInput

__all__ = [
    "CLASS_RESOLVED_CODES",
    "MAX_CHART_DEPTH",
    "SHARED_CHECKS_SIZE",
    "chart_checks",
    "chart_checks_and_input",
    "chart_context",
    "chart_lookups",
    "chart_talos_defaults",
    "chart_version_map",
]


@lru_cache(maxsize=1)
def chart_talos_defaults() -> Mapping[str, str]:
    """The chart's ``talos`` defaults (values.yaml): a classless pool's Talos fallbacks."""
    defaults = chart_defaults()
    talos = defaults.get("talos")
    out = {k: v for k, v in talos.items() if isinstance(v, str)} if isinstance(talos, dict) else {}
    version = defaults.get("version")
    if isinstance(version, str):
        out["_version"] = version  # the chart's Kubernetes minor, kept beside (never a Talos key)
    return out


#: Chart failures a classified pool meets through its own resolved rules instead: its Kubernetes
#: minor is checked against the platform map and the chart's enum, its effective (not raw)
#: Talos version against the platform's support matrix.
CLASS_RESOLVED_CODES = frozenset({"UnsupportedVersion", "TalosKubernetesIncompatible"})


def chart_checks(state: State, record: PoolRecord) -> tuple[Violation, ...]:
    """Every render-time refusal of the kubernetes-nodes chart for a standalone pool's values.

    ``workerclass.chart.checks.chart_failures`` over the values as the chart sees them (the
    pool's values coalesced over values.yaml, ``_cluster`` from the platform, the cluster's
    instance types), field paths moved under the pool's values (``spec.values...`` for a
    HelmRelease). ``InvalidPoolName`` ones are included: admission takes them on CREATE only.
    Computed once per state and values.
    """
    return chart_checks_and_input(state, record, keep_input=False)[0]


def chart_checks_and_input(
    state: State, record: PoolRecord, *, keep_input: bool = True
) -> tuple[tuple[Violation, ...], CheckedInput | None]:
    """:func:`chart_checks`, and the chart input they ran on when none failed and a render of the
    pool can read it (the values as written: none cut for depth; the State's instance types, which a
    render is given when there are any); None when the checks came from this State's memo, the input
    is not one a render reads, or ``keep_input`` is false (a decision, which renders nothing: no
    input is built or kept for it)."""
    if record.kind == "ComputePlane":
        return (), None
    # The State's own pools are remembered by name; any other pool (a request's) in one slot, so a
    # snapshot that serves reviews for long keeps one request's values, not every request's.
    identity = (record.kind, record.namespace, record.name)
    stored = state.pools.get(identity)
    key = ("chart-checks", *identity) if stored is not None and stored.values is record.values else _REQUEST_CHECKS
    cached = state.memo.get(key)
    if cached is not None and cached[0] is record.values and cached[2] == identity:
        return cast(tuple[Violation, ...], cached[1]), None
    release = record.release or release_of(record.kind, record.name)
    # The key is the values as written: equal values are cut alike (``_bounded``), so the walk
    # that cuts them is left to a miss.
    lookups = chart_lookups(state, record.namespace, release, record.values)
    content = _content_key(record.values, record.namespace, state.platform.cluster_values, state.chart.digest, lookups)
    shared = _SHARED_CHECKS.get(content) if content is not None else None
    checked: CheckedInput | None = None
    failures: tuple[Violation, ...] | None = None
    if shared is not None and shared.instancetypes is state.instancetypes:
        if shared.release == release:
            failures = shared.failures
        elif shared.free and release_free(release, record.values.get("cluster")):
            failures = ()  # every check passed on these values under another well-formed release
    if failures is not None and keep_input and not failures:
        # a render reads the input of the pass: given it when kept, else it is built below
        passed = _SHARED_PASSES.get(content)  # type: ignore[arg-type]
        if (
            passed is not None
            and passed.input.instancetypes is state.instancetypes
            and passed.input.chart is state.chart
        ):
            inp = passed.input if passed.input.release == release else replace(passed.input, release=release)
            checked = CheckedInput(record.values, _platform_values(state), inp, passed.size)
        else:
            failures = None
    if failures is not None:
        try:  # noqa: SIM105 - every hit takes this path: a try costs nothing, a suppress two calls
            _SHARED_CHECKS.move_to_end(content)  # type: ignore[arg-type]
        except KeyError:  # another thread may have evicted it meanwhile
            pass
    else:
        bounded = _bounded(record.values)
        platform = _platform_values(state)
        inp = chart_input(
            bounded,
            namespace=record.namespace,
            release=release,
            cluster_values=platform,
            instancetypes=state.instancetypes,
            chart=state.chart,
            existing_machinedeployment_cluster=lookups[0],
            parent_control_plane_version=lookups[1],
        )
        size = sizing(inp)
        failures = tuple(chart_failures(inp, size=size))
        if keep_input and not failures and bounded is record.values and state.instancetypes:
            checked = CheckedInput(record.values, platform, inp, size)
        if content is not None:
            # A pass is shared with other releases only under an exact key (orjson's bytes) and a
            # release the checks read only as a name; its input only under a short one.
            free = isinstance(content, bytes) and not failures and release_free(release, record.values.get("cluster"))
            _SHARED_CHECKS[content] = _Shared(state.instancetypes, release, failures, free)
            if len(_SHARED_CHECKS) > SHARED_CHECKS_SIZE:
                with contextlib.suppress(KeyError):
                    _SHARED_CHECKS.popitem(last=False)
            if free and checked is not None and len(content) <= MAX_SHARED_INPUT_TEXT:
                _SHARED_PASSES[content] = _Pass(inp, size)  # type: ignore[index]
                if len(_SHARED_PASSES) > SHARED_PASSES_SIZE:
                    with contextlib.suppress(KeyError):
                        _SHARED_PASSES.popitem(last=False)
    violations = under_values(failures, record.field)
    state.memo[key] = (record.values, violations, identity)
    return violations, checked


#: The memo key of the last checks of a pool that is not one of the State's own (a request's).
_REQUEST_CHECKS = ("chart-checks", "request")


class _Shared(NamedTuple):
    """What one run of the chart's checks left for pools with the same values: the instance types
    and release it ran with, its failures, and whether they are none under a release the checks read
    only as a name (:func:`~workerclass.chart.release_free`: ``free``, a pass for every such release)."""

    instancetypes: Mapping[str, Mapping[str, Any]]
    release: str
    failures: tuple[Violation, ...]
    free: bool


class _Pass(NamedTuple):
    """The input and sizing of a ``free`` pass, for a render of a pool with the same values."""

    input: ChartInput
    size: Sizing


#: The chart's checks are a pure function of the values, release, namespace, ``_cluster`` and
#: the instance types: identical pools across States (a plan's two states, a resync, a retried
#: review) share one computation, and so do pools whose values are the same but for their names
#: where every check passed. Bounded, least recently used first out.
SHARED_CHECKS_SIZE = 4096
_SHARED_CHECKS: OrderedDict[str | bytes, _Shared] = OrderedDict()
#: The inputs of those passes a render reads, kept for fewer pools (an input holds the pool's values
#: as objects, many times their text): the last ones added, of values no longer than
#: :data:`~workerclass.api.bounds.MAX_SHARED_INPUT_TEXT`.
SHARED_PASSES_SIZE = 128
_SHARED_PASSES: OrderedDict[bytes, _Pass] = OrderedDict()


def _content_key(
    values: Mapping[str, Any],
    namespace: str,
    cluster_values: Mapping[str, Any],
    chart: str,
    lookups: tuple[str | None, str | None],
) -> str | bytes | None:
    """A canonical text of the checks' inputs but the release (kept beside, in :class:`_Shared`;
    the instance types are compared by identity).

    orjson's sorted bytes for plain JSON data (one C pass, ~30x cheaper than ``json`` here),
    else ``json``'s text (a ``str``: never equal to a ``bytes`` key); None when neither can write it
    or it is longer than :data:`~workerclass.api.bounds.MAX_SHARED_TEXT` (not shared).
    orjson writes NaN and the infinities as ``null``, so a text with a ``null`` is ``json``'s too.
    """
    # A lookup finds a nonempty string or nothing: "" stands for nothing, so that the usual key
    # (nothing found) has no ``null``.
    inputs = [values, namespace, cluster_values, chart, [found or "" for found in lookups]]
    text = plain_json_text(inputs)
    if text is not None:
        return text if len(text) <= MAX_SHARED_TEXT else None
    try:
        slow = json.dumps(inputs, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return None
    return slow if len(slow) <= MAX_SHARED_TEXT else None


#: Deeper than this, a value is cut for the chart's checks (they read a few known levels; the
#: chart's value helpers copy recursively). Such values are refused for their key anyway.
MAX_CHART_DEPTH = 64


def _bounded(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """``values`` itself, or a copy whose containers below :data:`MAX_CHART_DEPTH` are emptied."""
    stack: list[tuple[Any, int]] = [(values, 0)]
    deep = False
    while stack and not deep:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 >= MAX_CHART_DEPTH:
                    deep = True
                    break
                stack.append((child, depth + 1))
    if not deep:
        return values

    def cut(item: Any, depth: int) -> Any:
        if isinstance(item, dict):
            return {} if depth >= MAX_CHART_DEPTH else {k: cut(v, depth + 1) for k, v in item.items()}
        if isinstance(item, list):
            return [] if depth >= MAX_CHART_DEPTH else [cut(v, depth + 1) for v in item]
        return item

    return cast(Mapping[str, Any], cut(values, 0))


def _spec_string(obj: Mapping[str, Any] | None, key: str) -> str | None:
    spec = obj.get("spec") if isinstance(obj, Mapping) else None
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) and value else None


def chart_lookups(
    state: State, namespace: str, release: str, values: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """What PR 3315's lookups find where STATE (or the cluster) holds the objects, as the chart in effect
    makes them: the live MachineDeployment ``kubernetes-<cluster>-<pool>``'s ``spec.clusterName`` and the
    parent KamajiControlPlane ``kubernetes-<cluster>``'s ``spec.version`` (None: not held, or not looked up)."""
    rules = state.chart.rules
    cluster = values.get("cluster")
    if not (rules.cluster_name_drift or rules.parent_version) or not isinstance(cluster, str) or not cluster:
        return None, None
    parent = f"kubernetes-{cluster}"
    pool = release.removeprefix(f"{RELEASE_PREFIX}{cluster}-")
    live = (
        state.auxiliary_object("MachineDeployment", namespace, f"{parent}-{pool}") if rules.cluster_name_drift else None
    )
    control_plane = state.auxiliary_object("KamajiControlPlane", namespace, parent) if rules.parent_version else None
    return _spec_string(live, "clusterName"), _spec_string(control_plane, "version")


def _platform_values(state: State) -> dict[str, Any]:
    """The platform values the chart reads: ``{"_cluster": <WorkerPlatform spec.clusterValues>}``."""
    return {"_cluster": dict(state.platform.cluster_values)}


def chart_context(state: State, record: PoolRecord) -> dict[str, Any]:
    """What the chart needs beside the effective settings: the values verbatim, the release,
    ``_cluster`` and the instance types the cluster has (all of them: the chart looks one up)."""
    return {
        "values": record.values,
        "release": record.release or release_of(record.kind, record.name),
        "cluster_values": _platform_values(state),
        "instancetypes": state.instancetypes,
        "chart": state.chart,
    }


@lru_cache(maxsize=1)
def chart_version_map() -> Mapping[str, str]:
    return version_map()
