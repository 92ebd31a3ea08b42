"""What the worker controller must hold to apply the RBAC the chart renders for a classified pool.

The chart renders RBAC for every pool: the dashboard's Role (the pool's WorkloadMonitor, for the
tenant's dashboard) and, for a Talos pool, the talos-reconcile Job's Role (the parent cluster's
Service, Secrets and control plane, the TalosConfigTemplates it applies) and its CoreDNS
ClusterRole. Kubernetes' escalation check (``ConfirmNoEscalation`` in its RBAC registry) lets a
subject create or update a Role or ClusterRole only when it already holds every permission the
role grants, unless it has ``escalate`` on it, and create a binding only when it holds every
permission of the role bound, unless it has ``bind`` on that role. The install grants neither verb
(``escalate`` lets its holder write any role, and with ``bind`` or a role it may bind, grant
anything): the controller's ClusterRole holds what the chart's roles grant instead.

:func:`pool_role_rules` reads those rules from the chart port itself
(:func:`~workerclass.chart.talos_job.render_talos_rbac`,
:func:`~workerclass.chart.dashboard.render_dashboard`), rendered for two pools that share no
name: a ``resourceNames`` entry both renders give alike is fixed (CoreDNS's ``kube-dns``) and
kept; one that differs comes from the release (the parent cluster's Secrets, its Service, its
control plane, the pool's WorkloadMonitor) and cannot be listed in advance, so the rule is held on
every name. :func:`rules_grant` is RBAC's covering rule (``*`` included), :func:`uncovered_verbs` what
of a rule a set of rules does not hold.

Its edge: nothing in, plain rule dicts out; no I/O. A chart the port does not know goes to Helm's
engine and may render other RBAC: the install does not hold that, and the API server refuses it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..chart.context import ChartInput
from ..chart.dashboard import render_dashboard
from ..chart.talos_job import render_talos_rbac

__all__ = ["PoolRoleRule", "pool_role_rules", "rules_grant", "uncovered_verbs"]

#: two pools that share no name (namespace, parent cluster, pool): what their renders name alike is fixed
_SAMPLES = (
    ("tenant-sample-one", "sample-one", "first"),
    ("tenant-sample-two", "sample-two", "second"),
)


@dataclass(frozen=True, slots=True)
class PoolRoleRule:
    """One rule of a role the chart renders for a pool, as the controller must hold it."""

    #: the role it comes from, in words: ``the talos-reconcile Job's Role``
    source: str
    #: the rule; ``resourceNames`` only when the chart names them alike for every release
    rule: dict[str, Any]
    #: the names the chart gives, a release's parts written ``<cluster>``, ``<pool>`` (empty: none)
    names: tuple[str, ...] = ()
    #: whether the chart's names come from the release (then the rule is held on every name)
    named_by_release: bool = False


def _input(namespace: str, cluster: str, pool: str) -> ChartInput:
    return ChartInput(values={"cluster": cluster}, release=f"kubernetes-nodes-{cluster}-{pool}", namespace=namespace)


def _roles(inp: ChartInput) -> list[tuple[str, dict[str, Any]]]:
    """The Roles and ClusterRoles the chart renders for ``inp``'s pool, each with its source in words."""
    out: list[tuple[str, dict[str, Any]]] = []
    for obj in render_talos_rbac(inp):
        if obj.get("kind") == "Role":
            out.append(("the talos-reconcile Job's Role", obj))
        elif obj.get("kind") == "ClusterRole":
            out.append(("the talos-reconcile Job's CoreDNS ClusterRole", obj))
    out += [("the dashboard's Role", obj) for obj in render_dashboard(inp) if obj.get("kind") == "Role"]
    return out


def _pattern(name: str, inp: ChartInput) -> str:
    return name.replace(f"{inp.cluster_name}-{inp.group_name}", "kubernetes-<cluster>-<pool>").replace(
        inp.cluster_name, "kubernetes-<cluster>"
    )


@functools.cache
def _rendered() -> tuple[PoolRoleRule, ...]:
    first, second = (_input(*sample) for sample in _SAMPLES)
    out: list[PoolRoleRule] = []
    for (source, one), (_, two) in zip(_roles(first), _roles(second), strict=True):
        for rule, other in zip(one.get("rules") or [], two.get("rules") or [], strict=True):
            names = list(rule.get("resourceNames") or [])
            by_release = names != list(other.get("resourceNames") or [])
            held = {key: list(value) for key, value in rule.items() if key != "resourceNames" or not by_release}
            patterns = tuple(_pattern(name, first) for name in names)
            out.append(PoolRoleRule(source, held, patterns, by_release))
    return tuple(out)


def pool_role_rules() -> list[PoolRoleRule]:
    """Every rule of the roles the chart renders for a classified pool, in the chart's order, with
    release-derived ``resourceNames`` left out (fresh copies: callers may change them)."""
    return [replace(entry, rule={key: list(value) for key, value in entry.rule.items()}) for entry in _rendered()]


def _has(rule: Mapping[str, Any], key: str, value: str) -> bool:
    items = rule.get(key) or []
    return "*" in items or value in items


def _grants(rule: Mapping[str, Any], group: str, resource: str, verb: str, name: str | None) -> bool:
    names = rule.get("resourceNames") or []
    named = not names or (name is not None and name in names)
    return _has(rule, "apiGroups", group) and _has(rule, "resources", resource) and _has(rule, "verbs", verb) and named


def rules_grant(held: Iterable[Mapping[str, Any]], wanted: Mapping[str, Any]) -> bool:
    """Whether the rules ``held`` grant all of ``wanted``: every group, resource, verb and name of
    it by one rule or another (a rule without ``resourceNames`` grants every name, ``*`` anything)."""
    rules = list(held)
    names: Sequence[str | None] = wanted.get("resourceNames") or [None]
    return all(
        any(_grants(rule, group, resource, verb, name) for rule in rules)
        for group in wanted.get("apiGroups") or []
        for resource in wanted.get("resources") or []
        for verb in wanted.get("verbs") or []
        for name in names
    )


def uncovered_verbs(held: Iterable[Mapping[str, Any]], wanted: Mapping[str, Any]) -> list[str]:
    """The verbs of ``wanted`` that ``held`` does not grant (on all of its groups, resources, names)."""
    rules = list(held)
    return [verb for verb in wanted.get("verbs") or [] if not rules_grant(rules, {**wanted, "verbs": [verb]})]
