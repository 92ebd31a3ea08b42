"""Plan: what a change from one State to another does to each pool's machines, and why.

Pure. For every pool in either state it asks admission what the change is (a CREATE for a new
pool, an UPDATE of the stored pool otherwise: the mutation that restores an omitted class, and
every rule; :mod:`workerclass.admission`), resolves and renders both sides, and compares the
rendered objects the way Cluster API acts on them, without knowing how the renderer names or
builds them:

- ``replace``: a MachineDeployment's machine template changes in a field that rolls (anything
  under ``spec.template.spec`` except the fields Cluster API propagates in place, such as the
  drain and deletion timeouts; so the infrastructure reference name that carries the content
  hash, ``version`` and the bootstrap reference), its ``clusterName`` changes, or it goes away.
- a TalosConfigTemplate whose content changes under an unchanged name: the Talos bootstrap
  provider's webhook refuses every change of its spec, so on a chart whose talos-reconcile Job
  applies it under the stable name (:func:`workerclass.chart.talos_naming.talos_template_naming`)
  the row is refused with ``TalosConfigImmutable`` (the change reaches no machine); on a chart that
  names it by content, the change is a new template the MachineDeployment follows: ``replace``. A
  classified pool's template is named as the controller would apply it over the current state
  (:func:`workerclass.render.talos_template.as_applied`): by its content where another content runs
  under the stable name, so its change is ``replace``.
- ``newMachinesOnly``: another template (a bootstrap ``...ConfigTemplate`` or a ``...MachineTemplate``)
  whose content changes under an unchanged name reaches only machines created afterwards: the
  running machines keep what they booted with until they are replaced.
- everything else (replicas and autoscaler annotations, the MachineHealthCheck, metadata) is
  applied in place.

``action`` is ``create``, ``delete``, ``replace``, ``update`` or ``unchanged``; ``refused`` the
admission codes that would refuse the change, and ``TalosConfigImmutable`` for the Talos
provider's (``action`` then says what it would do if let through); ``rebuildOnly`` flags a
replacement that comes only from a new digest of the platform Kairos image for an unchanged
Kubernetes version (the design page warns that platform rebuilds of unchanged inputs produce new
digests). Reasons name the changed settings in the words of the
pool's values and effective settings.

Modules:

- this package's ``__init__``: :func:`plan` itself, each side's resolution and render
  (:func:`render_all`) and the template hashes. They stay here, not in a module of their own,
  because callers and tests substitute the renderer and the hash on ``workerclass.ops.plan``
  (``render_all``, ``_render``, ``template_hash``), and a name looked up in a submodule would not
  see the substitute.
- :mod:`.rows`: the values: :class:`PlanRow`, :class:`Refusal`, :class:`Plan`, the words reasons
  start or end with, the in-place settings, one side of a change.
- :mod:`.requests`: what admission says of the change (every refusal comes from
  :func:`workerclass.admission.admit`; plan holds no rule of its own).
- :mod:`.compare`: the rendered objects compared as Cluster API acts on them.
- :mod:`.settings`: the changed settings in words, the chart's defaults, rebuild-only.

Its edge: two States in, plain values out; no I/O.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...api.resources import POOL_KINDS
from ...render import RenderError, render, template_hash
from ...render.talos_template import TALOS_TEMPLATE_KIND, as_applied, configured_template
from ...render.templates import KAIROS_DATA_SECRET_PATH
from ...resolve import resolve_pool
from ...resolve.effective import Effective
from ...state import PoolRecord, State, identify
from ...violations import Violation
from ..charts import release_chart
from ..providers import kairos_path_of
from .compare import compare
from .requests import Requests
from .rows import (
    ACTIONS,
    IN_PLACE,
    NEW_MACHINES_ONLY,
    NOT_RENDERED,
    REBUILD_ONLY,
    REFUSED,
    REFUSED_BY_TALOS,
    TALOS_CONFIG_IMMUTABLE,
    UNPREDICTED,
    Plan,
    PlanRow,
    Refusal,
    Side,
)

__all__ = [
    "ACTIONS",
    "IN_PLACE",
    "NEW_MACHINES_ONLY",
    "NOT_RENDERED",
    "REBUILD_ONLY",
    "REFUSED",
    "REFUSED_BY_TALOS",
    "TALOS_CONFIG_IMMUTABLE",
    "Plan",
    "PlanRow",
    "Refusal",
    "plan",
    "render_all",
]

#: The first words of a denial the new state's resolution or render gives (not a request's).
_DENIED = "denied in the new state"

Key = tuple[str, str, str]  # namespace, name, pool kind


def _pools(state: State) -> dict[Key, PoolRecord]:
    return {(record.namespace, record.name, record.kind): record for record in state.sorted_pools()}


def _sort_key(key: Key) -> tuple[str, str, int]:
    namespace, name, kind = key
    return namespace, name, POOL_KINDS.index(kind) if kind in POOL_KINDS else len(POOL_KINDS)


_RENDER_KEYWORD = "talos_config_template" in inspect.signature(render).parameters
_render: Callable[..., list[dict[str, Any]]] = render


def render_all(effective: Effective, *, kairos_path: str = KAIROS_DATA_SECRET_PATH) -> list[dict[str, Any]]:
    """Every object the pool's release holds, the bootstrap config template included; a Kairos
    pool's on ``kairos_path`` (:func:`~workerclass.ops.providers.kairos_path_of` its State)."""
    if _RENDER_KEYWORD:
        return _render(effective, talos_config_template=True, kairos_path=kairos_path)
    return _render(effective, kairos_path=kairos_path)


def _side(state: State, record: PoolRecord) -> Side:
    effective, denials, _ = resolve_pool(state, record)
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    if effective is not None:
        try:
            rendered = render_all(effective, kairos_path=kairos_path_of(state))
            objects = {(str(obj.get("kind")), identify(obj)[2]): obj for obj in rendered}
        except RenderError as error:
            return Side(record, None, (Violation("Invalid", record.field, str(error)),), {})
    return Side(record, effective, tuple(denials), objects)


def plan(before: State, after: State) -> Plan:
    """A row for every pool in either state, ordered by namespace, name, then pool kind."""
    admission = Requests(before, after)
    old_pools, new_pools = _pools(before), _pools(after)
    class_refusals = {refusal.name: refusal for refusal in admission.refusals if refusal.kind == "WorkerClass"}
    rows: list[PlanRow] = []
    emulated = after.chart.describe()
    for key in sorted(old_pools.keys() | new_pools.keys(), key=_sort_key):
        old_record, new_record = old_pools.get(key), new_pools.get(key)
        identity, kind = f"{key[0]}/{key[1]}", key[2]
        side, record = (after, new_record) if new_record is not None else (before, old_record)
        assert record is not None
        runs = release_chart(side, record)
        if runs.verdict == "other":
            rows.append(PlanRow(identity, kind, "unpredicted", None, (runs.reason(emulated),)))
            continue
        if new_record is None:
            assert old_record is not None
            old = _side(before, old_record)
            rows.append(
                PlanRow(
                    identity,
                    kind,
                    "delete",
                    False,
                    ("pool removed: its machines would be deleted, not replaced; review node-local data first",),
                    hash_before=_hash(old),
                )
            )
            continue
        admitted, denials, notes = admission.pool(old_record, new_record)
        new = _side(after, admitted)
        refusals = [(_reason(REFUSED, denial), denial) for denial in denials]
        seen = {(denial.code, denial.field) for denial in denials}
        refusals += [(_reason(_DENIED, d), d) for d in new.denials if (d.code, d.field) not in seen]
        for name in {admitted.class_name, old_record.class_name if old_record else None} - {None}:
            refusal = class_refusals.get(str(name))
            if refusal is not None:
                refusals += [(_class_reason(str(name), denial), denial) for denial in refusal.denials]
        refused: tuple[str, ...] = tuple(dict.fromkeys(denial.code for _, denial in refusals))
        refusal_reasons = tuple(reason for reason, _ in refusals)
        if old_record is None:
            reason = "new pool: its machines would be created, none replaced"
            if new.effective is None:
                reason = "new pool, denied: nothing would be created"
            rows.append(
                PlanRow(
                    identity,
                    kind,
                    "create",
                    False,
                    (*refusal_reasons, reason, *notes),
                    refused,
                    hash_after=_hash(new),
                )
            )
            continue
        old = _side(before, old_record)
        new = _as_applied(old, new)
        row = compare(identity, kind, old, new)
        rows.append(
            PlanRow(
                row.pool,
                row.kind,
                row.action,
                row.replace,
                (*row.reasons, *refusal_reasons, *notes),
                tuple(dict.fromkeys((*refused, *row.refused))),
                row.rebuild_only,
                row.new_machines_only,
                _hash(old),
                _hash(new),
            )
        )
    rows += node_group_changes(before, after)
    rows.sort(key=lambda row: tuple(row.pool.split("/", 1)))
    return Plan(tuple(rows), admission.refusals, after.chart.as_dict())


#: the kind of a plan row for a node group of a parent Kubernetes app
NODE_GROUP = "NodeGroup"


def _node_groups(state: State) -> dict[str, tuple[Any, Any]]:
    """``NS/<cluster>-<group>`` -> (the group's values, the parent's version) of every node group of
    the parent Kubernetes apps (a group the chart's default gives has no values of its own: None)."""
    out: dict[str, tuple[Any, Any]] = {}
    for namespace, name, group in state.parent_node_groups():
        record = state.records.get(("Kubernetes", namespace, name))
        spec = (record.obj.get("spec") if record is not None else None) or {}
        groups = spec.get("nodeGroups") if isinstance(spec, dict) else None
        values = groups.get(group) if isinstance(groups, dict) else None
        out[f"{namespace}/{name}-{group}"] = (values, spec.get("version") if isinstance(spec, dict) else None)
    return out


def node_group_changes(before: State, after: State) -> list[PlanRow]:
    """A row for every node group of a parent Kubernetes app that the change creates, deletes or
    changes (an unchanged one has none). The parent ``kubernetes`` chart renders node groups, which
    workerclass does not emulate: a changed group is ``unpredicted``, with the reason."""
    old, new = _node_groups(before), _node_groups(after)
    rows: list[PlanRow] = []
    for pool in sorted(old.keys() | new.keys()):
        if pool not in new:
            reason = (
                "node group removed from its parent Kubernetes app: the parent kubernetes chart deletes its machines, "
                "not replaced; review node-local data first"
            )
            rows.append(PlanRow(pool, NODE_GROUP, "delete", False, (reason,)))
        elif pool not in old:
            reason = "new node group of its parent Kubernetes app: the parent kubernetes chart creates its machines"
            rows.append(PlanRow(pool, NODE_GROUP, "create", False, (reason,)))
        elif old[pool] != new[pool]:
            what = "its values" if old[pool][0] != new[pool][0] else "the parent's Kubernetes version"
            reason = (
                f"node group of a parent Kubernetes app, {what} changed: the parent kubernetes chart renders it, "
                "which workerclass does not emulate, so whether its machines are replaced is not predicted "
                "(move it to a standalone KubernetesNodes pool for a prediction)"
            )
            rows.append(PlanRow(pool, NODE_GROUP, UNPREDICTED, None, (reason,)))
    return rows


def _as_applied(old: Side, new: Side) -> Side:
    """A classified Talos pool's new objects with the TalosConfigTemplate named as the controller
    would apply them over the old ones (:func:`~workerclass.render.talos_template.as_applied`): the
    old side's templates stand for what runs."""
    if new.effective is None or new.effective.legacy or new.effective.bootstrap != "talos":
        return new
    objects = list(new.objects.values())
    template = next((obj for obj in objects if obj.get("kind") == TALOS_TEMPLATE_KIND), None)
    old_objects = list(old.objects.values())
    running_name = configured_template(old_objects)
    deployment = next((obj for obj in old_objects if obj.get("kind") == "MachineDeployment"), None)
    stable_name = str(deployment["metadata"]["name"]) if deployment is not None else None
    running = old.objects.get((TALOS_TEMPLATE_KIND, running_name)) if running_name else None
    stable = old.objects.get((TALOS_TEMPLATE_KIND, stable_name)) if stable_name else None
    applied = as_applied(objects, template, running, stable)
    if applied is objects:
        return new
    return replace(new, objects={(str(obj.get("kind")), identify(obj)[2]): obj for obj in applied})


def _reason(prefix: str, denial: Violation) -> str:
    return f"{prefix} ({denial.code}) {denial.field}: {denial.message}"


def _class_reason(name: str, denial: Violation) -> str:
    """A denial of a class change, on a pool that selects the class (before or after)."""
    return f"{REFUSED} ({denial.code}): WorkerClass {name} {denial.field}: {denial.message}"


def _hash(side: Side) -> str | None:
    return template_hash(side.effective) if side.effective is not None else None
