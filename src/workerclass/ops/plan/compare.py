"""Comparing the rendered objects of both sides the way Cluster API acts on them: what rolls
(``replace``), what reaches new machines only (a template changed under its name), what is applied
in place; and the row that says so, in the words of the changed settings
(:mod:`.settings`).

Its edge: the two sides (:class:`~.rows.Side`) in, a row out; the template hashes are the caller's (so they
are computed once, in the package's :func:`~workerclass.ops.plan.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...chart.talos_naming import talos_template_naming
from .rows import (
    IN_PLACE,
    IN_PLACE_SETTINGS,
    NEW_MACHINES_ONLY,
    NOT_RENDERED,
    REACHES_NO_MACHINE,
    REBUILD_ONLY,
    REFUSED_BY_TALOS,
    TALOS_CONFIG_IMMUTABLE,
    PlanRow,
    Side,
)
from .settings import is_rebuild_only, setting_changes, short

__all__ = ["Objects", "compare"]

#: ``spec.template.spec`` fields of a MachineDeployment that Cluster API propagates in place.
#: (v1beta2 also propagates machine taints in place: ``spec.template.spec.taints``.)
_IN_PLACE_TEMPLATE_FIELDS = frozenset(
    {"nodeDrainTimeout", "nodeDeletionTimeout", "nodeVolumeDetachTimeout", "minReadySeconds", "deletion", "taints"}
)


def compare(pool: str, kind: str, old: Side, new: Side) -> PlanRow:
    """The row of a pool in both states, without the template hashes (the caller's)."""
    if new.effective is None or old.effective is None:
        values_changed = dict(old.record.values) != dict(new.record.values)
        why = (
            "the new state cannot be rendered, so nothing rolls"
            if new.effective is None
            else "denied in the current state: no rendered machines to compare"
        )
        return PlanRow(
            pool,
            kind,
            "update" if values_changed else "unchanged",
            False,
            (why,),
        )
    rolls = _rolling_changes(old.objects, new.objects)
    changed = _template_changes(old.objects, new.objects)
    talos = [change for change in changed if change[0].startswith(f"{_TALOS} ")]
    templates = [change for change in changed if change not in talos]
    immutable: list[str] = []
    if talos and talos_template_naming(new.effective.chart) == "content":
        rolls += [f"{name} {path} {_CONTENT_NAMED}" for name, path in talos]
    elif talos:
        immutable = list(dict.fromkeys(name for name, _ in talos))
    others = _other_changes(old.objects, new.objects, templates)
    replace = bool(rolls)
    settings = setting_changes(old, new)
    reasons: list[str] = []
    new_machines: list[str] = []
    rendered_change = bool(rolls or templates or others or immutable)
    for setting, label, before, after in settings:
        text = f"{label}: {before} -> {after}"
        if setting in IN_PLACE_SETTINGS:
            reasons.append(f"{IN_PLACE} {text}")
        elif not rendered_change:
            reasons.append(f"{text} {NOT_RENDERED}")
        elif replace:
            reasons.append(text)
        elif templates:
            new_machines.append(setting)
            reasons.append(f"{text} {NEW_MACHINES_ONLY}")
        elif immutable:
            reasons.append(f"{text} {REACHES_NO_MACHINE}")
        else:
            reasons.append(f"{IN_PLACE} {text}")
    rebuild_only = replace and is_rebuild_only(old.effective, new.effective, settings)
    if rebuild_only:
        reasons.append(
            f"{REBUILD_ONLY}: the platform Kairos image for {new.effective.kubernetes_minor} has a new digest,"
            f" Kubernetes {new.effective.kubernetes_version} unchanged; the digest is in the template hash"
        )
    if replace:
        reasons += [f"machines replaced: {text}" for text in rolls]
    elif templates:
        if not new_machines:
            new_machines = [f"{kind_name} {path}" for kind_name, path in templates]
        for kind_name in dict.fromkeys(kind_name for kind_name, _ in templates):
            reasons.append(
                f"{kind_name} changes under the same name: running machines keep the old config until they "
                "are replaced; only machines created afterwards get it"
            )
    for name in immutable:
        reasons.append(
            f"{REFUSED_BY_TALOS} ({TALOS_CONFIG_IMMUTABLE}) {name}: the Talos bootstrap provider's webhook refuses "
            "every change of a TalosConfigTemplate's spec, and the talos-reconcile Job applies it under this same "
            "name: the Job fails and the change reaches no machine, running or new"
            + ("; the machines this rollout creates boot the old config" if replace else "")
        )
    if not replace and others and not settings:
        reasons += [f"{IN_PLACE} {text}" for text in others]
    values_changed = dict(old.record.values) != dict(new.record.values)
    if replace:
        action = "replace"
    elif rendered_change or values_changed:
        action = "update"
    else:
        action = "unchanged"
    return PlanRow(
        pool,
        kind,
        action,
        replace,
        tuple(reasons),
        (TALOS_CONFIG_IMMUTABLE,) if immutable else (),
        rebuild_only,
        tuple(dict.fromkeys(new_machines)),
    )


Objects = Mapping[tuple[str, str], Mapping[str, Any]]

_TALOS = "TalosConfigTemplate"
#: why a changed TalosConfigTemplate rolls on a chart that names it by content
_CONTENT_NAMED = (
    "(the chart names the template by its content: the change is a new template, the MachineDeployment's "
    "bootstrap.configRef follows it and Cluster API replaces the machines)"
)


def _get(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _leaves(before: Any, after: Any, path: str) -> list[tuple[str, Any, Any]]:
    """``(path, before, after)`` for each differing leaf (lists compare whole)."""
    if before == after:
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            out += _leaves(before.get(key), after.get(key), f"{path}.{key}" if path else str(key))
        return out
    return [(path, before, after)]


def _rolling_changes(old: Objects, new: Objects) -> list[str]:
    """What makes Cluster API replace a MachineDeployment's machines."""
    out: list[str] = []
    for (kind, name), before in old.items():
        if kind != "MachineDeployment":
            continue
        after = new.get((kind, name))
        if after is None:
            out.append(f"MachineDeployment {name} is removed (its machines with it)")
            continue
        cluster_before, cluster_after = _get(before, "spec", "clusterName"), _get(after, "spec", "clusterName")
        if cluster_before != cluster_after:
            out.append(f"MachineDeployment {name} spec.clusterName: {short(cluster_before)} -> {short(cluster_after)}")
        template_before = dict(_get(before, "spec", "template", "spec") or {})
        template_after = dict(_get(after, "spec", "template", "spec") or {})
        for key in _IN_PLACE_TEMPLATE_FIELDS:
            template_before.pop(key, None)
            template_after.pop(key, None)
        for path, was, becomes in _leaves(template_before, template_after, "spec.template.spec"):
            out.append(f"MachineDeployment {name} {path}: {short(was)} -> {short(becomes)}")
    return out


def _is_template(kind: str) -> bool:
    return kind.endswith("ConfigTemplate") or kind.endswith("MachineTemplate")


def _template_changes(old: Objects, new: Objects) -> list[tuple[str, str]]:
    """``(KIND NAME, path)`` of templates whose content changes under an unchanged name."""
    out: list[tuple[str, str]] = []
    for (kind, name), before in old.items():
        after = new.get((kind, name))
        if after is None or not _is_template(kind):
            continue
        for path, _, _ in _leaves(before.get("spec"), after.get("spec"), "spec"):
            out.append((f"{kind} {name}", path))
    return out


def _other_changes(old: Objects, new: Objects, templates: list[tuple[str, str]]) -> list[str]:
    """Other rendered differences, all applied in place (MachineDeployment replicas, health check, ...)."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        kind, name = key
        before, after = old.get(key), new.get(key)
        if before == after or (before is not None and after is not None and _is_template(kind)):
            continue
        if before is None or after is None:
            if _is_template(kind):
                continue  # a renamed template: the MachineDeployment reference says it rolls
            out.append(f"{kind} {name} {'added' if before is None else 'removed'}")
            continue
        for path, was, becomes in _leaves(before, after, ""):
            out.append(f"{kind} {name} {path}: {short(was)} -> {short(becomes)}")
    return out
