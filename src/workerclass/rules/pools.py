"""The rules of a pool's change that need no resolution: it keeps its family and its parent cluster.

- :func:`family_switch`: a running pool never changes bootstrap family in place
  (``BootstrapFamilyChange``).
- :func:`cluster_move`: a pool never moves to another parent cluster (``Invalid``; with a chart
  that makes ``cluster`` immutable, such as PR 3315's, ``PoolFieldImmutable``).
- :func:`immutable_changes`: the other values the chart in effect makes immutable on UPDATE
  (PR 3315: ``storageClass``), compared with the chart's defaults filled in (``PoolFieldImmutable``).
- :func:`chart_not_gated`: a pool selects a class on a chart without our gate (``ChartNotGated``).
- :func:`shown_name`: how these messages (and the pool-name rules) quote a name.

Admission applies them to an UPDATE (the gate to every write); ``plan`` gets them through admission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..api.names import Family
from ..api.patterns import DNS_1035
from ..chart.source import ChartSource
from ..violations import Violation

__all__ = [
    "DNS_1035",
    "INSTALL_THE_GATE",
    "chart_not_gated",
    "cluster_move",
    "family_switch",
    "immutable_changes",
    "named_class_rules",
    "shown_name",
    "stays_classless",
    "ungated",
]


def shown_name(name: str) -> str:
    """A name quoted only when it is a DNS label (one that is not may hold anything)."""
    return repr(name) if DNS_1035.fullmatch(name) and len(name) <= 63 else "(not shown: not a DNS label)"


def family_switch(
    before: Family | None,
    after: Family | None,
    old_class: str | None,
    field: str,
) -> Violation | None:
    """``BootstrapFamilyChange`` when both families are known and differ.

    ``before``/``after`` are the old and new pool's families (:func:`~workerclass.rules.family.family_of`:
    ``None`` when unknown, which other denials already explain); ``old_class`` the old pool's class.
    """
    if before is None or after is None or before == after:
        return None
    return Violation(
        "BootstrapFamilyChange",
        field,
        f"switching a running pool from {before} (class {old_class or 'none (legacy Talos)'}) to {after} in place "
        "is refused: create a second pool, verify worker join and workloads, then plan workload migration",
    )


def cluster_move(before: str | None, after: str | None, field: str, *, immutable: bool = False) -> Violation | None:
    """``Invalid`` when a pool that had a parent cluster names another one (``PoolFieldImmutable``
    when the chart in effect makes ``cluster`` immutable)."""
    if not before or not after or before == after:
        return None
    return Violation(
        "PoolFieldImmutable" if immutable else "Invalid",
        field,
        f"a pool cannot move to another parent cluster ({shown_name(before)} -> {shown_name(after)}): its machines "
        f"would be recreated there; create a pool in cluster {shown_name(after)} instead",
    )


def _at(values: Mapping[str, Any], path: str, defaults: Mapping[str, Any]) -> Any:
    node: Any = values
    fallback: Any = defaults
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
        fallback = fallback.get(part) if isinstance(fallback, Mapping) else None
    return fallback if node is None else node


def immutable_changes(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    paths: Iterable[str],
    defaults: Mapping[str, Any],
    field: str,
) -> list[Violation]:
    """``PoolFieldImmutable`` for each of ``paths`` (values paths) whose value changes, an absent or null
    value standing for the chart's default (Cozystack's API fills the defaults into every read)."""
    out: list[Violation] = []
    for path in paths:
        if _at(before, path, defaults) != _at(after, path, defaults):
            out.append(
                Violation(
                    "PoolFieldImmutable",
                    f"{field}.{path}",
                    f"{path} cannot change once the pool exists (the chart the cluster runs makes it immutable): "
                    "create a new pool with the new value and move the workloads",
                )
            )
    return out


#: what the hoster does about a ChartNotGated, in every message of it
INSTALL_THE_GATE = "the hoster must install the chart with the gate (deploy/chart-gate/) before pools select a class"


def ungated(chart: ChartSource) -> str | None:
    """Why a pool that names a class cannot be rendered by us on ``chart``, in words, or ``None``
    when it can: the chart carries our gate, or nobody said which chart the cluster runs
    (:attr:`ChartSource.assumed`: offline, no ``--chart``). A known chart without the gate, a chart
    of no known identity that Helm's engine was not seen to leave such a pool alone
    (:attr:`ChartSource.gated`), or a chart that could not be read or verified
    (:attr:`ChartSource.problem`: fail closed) each have a reason."""
    if chart.assumed or chart.gated:
        return None
    if chart.problem:
        return f"which chart the cluster runs cannot be verified ({chart.problem})"
    if chart.identity is not None:
        return f"the cluster's kubernetes-nodes chart ({chart.identity.name}) lacks the workerclass chart gate"
    return (
        f"the cluster's kubernetes-nodes chart is not one workerclass knows ({chart.describe()}), and it was "
        "not shown to leave a pool that names a class alone"
    )


def chart_not_gated(chart: ChartSource, field: str) -> Violation | None:
    """``ChartNotGated`` when a pool selects a class and the chart the cluster is stated to run does
    not carry our gate, or cannot be shown to (:func:`ungated`)."""
    why = ungated(chart)
    if why is None:
        return None
    return Violation(
        "ChartNotGated",
        field,
        f"{why}: a chart without the gate renders the pool itself (a Kairos pool as Talos) while the controller "
        f"renders it too; {INSTALL_THE_GATE}",
    )


def stays_classless(chart: ChartSource, default: str, field: str) -> str | None:
    """Why a CREATE that names no class is left without one, or ``None`` to write ``default``.

    On a chart without our gate (or one that cannot be shown to carry it, :func:`ungated`) a class
    is refused ``ChartNotGated``; writing the platform default there would refuse every new pool
    and stop Cozystack's own path. Such a chart renders a classless pool itself, as it always did,
    so the pool keeps that path and the tenant is told why it got no class."""
    why = ungated(chart)
    if why is None:
        return None
    return (
        f"{field}: the platform default class {shown_name(default)} is not written and the pool stays without a "
        f"class (the chart renders it on its classless Talos path): {why}; {INSTALL_THE_GATE}"
    )


def named_class_rules(denials: list[Violation], classless: list[Violation], target: str) -> list[Violation]:
    """A CREATE that names no class is judged with the platform default class ``target``: each
    denial the same pool without a class (``classless``) would not get is a class rule, and its
    message says so (the chart renders the classless pool, so the refusal is the class's, by name)."""
    plain = {(v.code, v.field) for v in classless}
    return [
        v
        if (v.code, v.field) in plain
        else Violation(
            v.code,
            v.field,
            f"{v.message} (a rule of pools with a class: this pool names none, so it gets the platform default "
            f"class {shown_name(target)})",
        )
        for v in denials
    ]
