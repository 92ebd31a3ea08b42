"""Restore: each classified Talos pool's effective settings in the legacy (classless) field layout.

Pure. Implements the design page's "Existing pools and rollback prerequisites" for one State:

- a classless pool (and every ComputePlane node group) needs no class restoration: its row says
  so and carries no values;
- a Kairos pool cannot be restored: an older chart would interpret it as Talos, so its
  workloads must be migrated and its removal approved before reverting;
- a classified Talos pool gets its restore values (:func:`workerclass.render.legacy_values`: the
  stored values less the class-era keys, ``talos`` = the effective Talos settings the main chart
  knows; a Proxmox pool keeps ``proxmox.templateTags``, which select its VM template), then the
  proof (:func:`prove`) on the real names: the restored values, resolved as a *classless* pool of
  the same State and rendered by the chart renderer, must give the same MachineDeployment, the same
  KubevirtMachineTemplate (or ProxmoxMachineTemplate) name and the same TalosConfigTemplate content
  as the classified pool renders now. A difference is named by the object and field path.
- a classified Talos pool that uses a class-era setting the legacy chart cannot express (kernel
  modules, a builtin golden or a custom factory source, an Image Factory CA:
  :func:`workerclass.render.class_era`) is not restorable without a rollout: its row (status
  ``rollout``) names each setting and still shows the values and what their render would change;
- a pool that does not resolve cannot be restored either.

Its edge: a State in, plain values out. It writes nothing and applies nothing: an UPDATE that
omits ``workerClassName`` on a classified KubernetesNodes gets the stored class back from the
application API (API.md section 3), so the values are data for the release's restore interface,
applied with hoster authorization. :data:`GUIDANCE` holds what the operator must still do.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..api.names import Family
from ..chart.talos_naming import talos_template_naming
from ..render import HASH_VERSION, INFRASTRUCTURE_KINDS, RenderError, class_era, legacy_values, render, template_suffix
from ..resolve import resolve_pool
from ..resolve.effective import Effective
from ..rules.family import assumed_family
from ..state import PoolRecord, State, pool_from_object
from ..violations import Violation
from .charts import release_chart
from .plan.rows import REFUSED_BY_TALOS, TALOS_CONFIG_IMMUTABLE

__all__ = [
    "CLASSLESS",
    "GUIDANCE",
    "KAIROS",
    "Proof",
    "Restore",
    "RestoreRow",
    "prove",
    "restore",
    "restore_values",
]

#: The reason of a classless pool's row (the design page, rollback step 3).
CLASSLESS = "already classless: needs no class restoration; it keeps the legacy render"
#: The reason of a Kairos pool's row (the design page, rollback step 1).
KAIROS = (
    "Kairos pool: do not leave Kairos pools for an older chart to interpret as Talos; migrate workloads "
    "and obtain approval for removing this pool before reverting"
)
#: What the operator must still do, whatever the rows say; shown once, not per pool.
GUIDANCE: tuple[str, ...] = (
    "These values are data for the release's documented restore interface, applied with hoster "
    "authorization; workerclass writes and applies nothing. Through the application API an UPDATE that "
    "omits workerClassName on a classified pool gets the stored class back: removing the class field by "
    "hand is not a restore.",
    "After reverting, verify the old chart's resources and template hashes against the restored hashes "
    "shown here: remaining Talos is not proof of no rollout.",
    "Migrate workloads off Kairos pools and obtain approval for removing them before reverting; removing a "
    "pool removes its machines and can lose node-local data (review storage, disruption budgets, backups).",
    "Retain custom classes and the worker controller while live classified pools depend on them; removing "
    "the controller can leave custom classes with finalizers that need hoster handling.",
    "Restoring old fields does not prove automatic return to a prior class on re-upgrade: establish "
    "supported re-upgrade behaviour separately.",
)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class RestoreRow:
    """One pool's verdict. ``status``: ``classless``, ``restorable``, ``kairos``, ``denied``, ``rollout``
    (a class-era setting the legacy chart cannot express), ``mismatch`` (the renders differ) or
    ``unpredicted`` (its release runs another chart than the one emulated: no proof; a classified one
    is not restorable)."""

    pool: str
    kind: str
    field: str  # where the values live in the pool's object: spec, spec.values
    class_name: str | None
    bootstrap: Family
    status: str
    restorable: bool
    values: Mapping[str, Any] | None
    hash_current: str | None
    hash_restored: str | None
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The ``restore -o json`` row: exactly the keys of the README's CLI table."""
        return {
            "pool": self.pool,
            "class": self.class_name,
            "bootstrap": self.bootstrap,
            "restorable": self.restorable,
            "values": copy.deepcopy(dict(self.values)) if self.values is not None else None,
            "templateHash": {"current": self.hash_current, "restored": self.hash_restored, "version": HASH_VERSION},
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True, slots=True)
class Restore:
    rows: tuple[RestoreRow, ...] = field(default_factory=tuple)
    #: the chart the proofs emulate (the contract's chart object), None when not said
    chart: Mapping[str, Any] | None = None

    @property
    def blocked(self) -> tuple[RestoreRow, ...]:
        """Rows that cannot be restored (Kairos, denied, hash mismatch)."""
        return tuple(row for row in self.rows if not row.restorable)

    def as_dict(self) -> dict[str, Any]:
        return {
            "chart": dict(self.chart) if self.chart is not None else None,
            "pools": [r.as_dict() for r in self.rows],
        }


@dataclass(frozen=True, slots=True)
class Proof:
    """The classless render of restored values against the classified pool's render."""

    hash_current: str | None
    hash_restored: str | None
    differences: tuple[str, ...]

    @property
    def equal(self) -> bool:
        return not self.differences and self.hash_current is not None and self.hash_current == self.hash_restored


# --------------------------------------------------------------------------- restore values


def restore_values(effective: Effective) -> dict[str, Any]:
    """The legacy-layout values of a classified Talos pool (what the chart renders it from).

    :func:`workerclass.render.legacy_values`, plus ``proxmox.templateTags`` on Proxmox: the legacy
    chart has no Proxmox render, and workerclass's classless Proxmox pools take their template
    from that key.
    """
    if effective.talos is None or effective.bootstrap != "talos":
        raise ValueError(f"{effective.identity}: only Talos pools have legacy Talos values")
    values = legacy_values(effective)
    if effective.infrastructure == "proxmox":
        values["proxmox"] = {"templateTags": list(effective.image.template_tags or ())}
    return values


# --------------------------------------------------------------------------- proof


def classless_record(state: State, record: PoolRecord, values: Mapping[str, Any]) -> PoolRecord:
    """The restored values as the same pool object (kind, namespace, name), parsed from scratch."""
    stored = state.find(record.kind, record.namespace, record.name)
    obj: dict[str, Any] = copy.deepcopy(dict(stored.obj)) if stored is not None else {}
    obj.setdefault("kind", record.kind)
    obj.setdefault("metadata", {"name": record.name, "namespace": record.namespace})
    if record.kind == "HelmRelease":
        obj.setdefault("spec", {})["values"] = copy.deepcopy(dict(values))
    else:
        obj["spec"] = copy.deepcopy(dict(values))
    parsed = pool_from_object(obj)
    if parsed is None:  # pragma: no cover - the stored object was a pool
        raise ValueError(f"{record.identity}: not a pool object")
    return parsed


def _compact(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def field_differences(current: Any, restored: Any, path: str = "") -> list[str]:
    """Field paths whose values differ, with both values (class render -> restored render)."""
    if isinstance(current, Mapping) and isinstance(restored, Mapping):
        out: list[str] = []
        for key in sorted(current.keys() | restored.keys(), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in restored:
                out.append(f"{where}: {_compact(current[key])} (class) -> absent (restored)")
            elif key not in current:
                out.append(f"{where}: absent (class) -> {_compact(restored[key])} (restored)")
            else:
                out += field_differences(current[key], restored[key], where)
        return out
    if isinstance(current, list) and isinstance(restored, list) and len(current) == len(restored):
        return [
            line
            for index, (a, b) in enumerate(zip(current, restored, strict=True))
            for line in field_differences(a, b, f"{path}[{index}]")
        ]
    if current == restored and type(current) is type(restored):
        return []
    return [f"{path}: {_compact(current)} (class) -> {_compact(restored)} (restored)"]


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    found = [obj for obj in objects if obj.get("kind") == kind]
    return found[0] if found else None


def _template_data(objects: list[dict[str, Any]]) -> Any:
    """The TalosConfigTemplate's ``spec.template.spec``, its machine config read as YAML (so a
    difference is named by its machine-config path, not as one long string)."""
    tct = _one(objects, "TalosConfigTemplate")
    if tct is None:
        return None
    spec = copy.deepcopy(tct["spec"]["template"]["spec"])
    with contextlib.suppress(yaml.YAMLError):  # else compared as text
        spec["data"] = yaml.safe_load(spec.get("data", ""))
    return spec


def _identity(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Kind and name; a Job's name less its spec hash (the talos-reconcile Job is renamed by content)."""
    name = str(obj["metadata"]["name"])
    return str(obj["kind"]), name.rsplit("-", 1)[0] if obj["kind"] == "Job" else name


def compare_renders(current: list[dict[str, Any]], restored: list[dict[str, Any]]) -> list[str]:
    """What the restore would change: the MachineDeployment, the infrastructure template's name,
    the TalosConfigTemplate's content, then any other object (by kind and name)."""
    differences: list[str] = []
    for kind in ("MachineDeployment",):
        differences += [f"{kind} {line}" for line in field_differences(_one(current, kind), _one(restored, kind))]
    name_current, name_restored = template_suffix(current), template_suffix(restored)
    if name_current != name_restored:
        differences.append(f"infrastructure template name hash: {name_current} (class) -> {name_restored} (restored)")
    differences += [
        f"TalosConfigTemplate spec.template.spec.{line}" if not line.startswith(":") else f"TalosConfigTemplate{line}"
        for line in field_differences(_template_data(current), _template_data(restored))
    ]
    checked = {"MachineDeployment", "TalosConfigTemplate", *INFRASTRUCTURE_KINDS}
    others_current = {_identity(obj): obj for obj in current if obj["kind"] not in checked}
    others_restored = {_identity(obj): obj for obj in restored if obj["kind"] not in checked}
    for key in sorted(others_current.keys() | others_restored.keys()):
        before, after = others_current.get(key), others_restored.get(key)
        if before is None or after is None:
            differences.append(
                f"{key[0]} {key[1]}: {'absent' if before is None else 'rendered'} (class) -> "
                f"{'absent' if after is None else 'rendered'} (restored)"
            )
        elif before != after:
            renamed = before["metadata"]["name"] != after["metadata"]["name"]
            differences.append(
                f"{key[0]} {before['metadata']['name']} -> {after['metadata']['name']} (restored)"
                if renamed
                else f"{key[0]} {key[1]} differs"
            )
    return differences


@dataclass(frozen=True, slots=True)
class _Rendered:
    hash: str | None
    objects: list[dict[str, Any]]
    error: str | None = None


def _render(effective: Effective) -> _Rendered:
    try:
        objects = render(effective, talos_config_template=True)
    except RenderError as error:
        return _Rendered(None, [], str(error))
    return _Rendered(template_suffix(objects), objects)


def prove(state: State, record: PoolRecord, current: Effective, values: Mapping[str, Any]) -> Proof:
    """Resolve ``values`` as a classless pool of ``state``, render both, compare on the real names."""
    now = _render(current)
    if now.error is not None:
        return Proof(None, None, (f"the classified pool does not render: {now.error}",))
    restored_record = classless_record(state, record, values)
    if restored_record.class_name is not None:
        return Proof(now.hash, None, (f"the restored values still select class {restored_record.class_name}",))
    restored, denials, _ = resolve_pool(state, restored_record)
    if restored is None:
        return Proof(
            now.hash,
            None,
            tuple(f"the restored values do not resolve as a classless pool: {violation}" for violation in denials)
            or ("the restored values do not resolve as a classless pool",),
        )
    then = _render(restored)
    if then.error is not None:
        return Proof(now.hash, None, (f"the restored values do not render: {then.error}",))
    return Proof(now.hash, then.hash, tuple(compare_renders(now.objects, then.objects)))


# --------------------------------------------------------------------------- rows


def _denied(denials: list[Violation]) -> tuple[str, ...]:
    return tuple(f"denied: {violation}" for violation in denials) or ("denied: the pool does not resolve",)


def restore_row(state: State, record: PoolRecord) -> RestoreRow:
    """One pool's row (see the module docstring for the cases)."""
    effective, denials, _ = resolve_pool(state, record)
    # the resolved family, else as resolution assumes it (no class, or a missing or unreadable one, is Talos)
    bootstrap: Family = effective.bootstrap if effective is not None else assumed_family(state, record.class_name)

    def row(
        status: str,
        restorable: bool,
        reasons: tuple[str, ...],
        values: Mapping[str, Any] | None = None,
        hash_current: str | None = None,
        hash_restored: str | None = None,
    ) -> RestoreRow:
        return RestoreRow(
            pool=record.identity,
            kind=record.kind,
            field=record.field,
            class_name=record.class_name,
            bootstrap=bootstrap,
            status=status,
            restorable=restorable,
            values=values,
            hash_current=hash_current,
            hash_restored=hash_restored,
            reasons=reasons,
        )

    def current_hash() -> str | None:
        return _render(effective).hash if effective is not None else None

    runs = release_chart(state, record)
    if runs.verdict == "other":
        return row("unpredicted", record.class_name is None, (runs.reason(state.chart.describe()),))
    if record.class_name is None or record.kind == "ComputePlane":
        reasons: tuple[str, ...] = (CLASSLESS,)
        if effective is None:
            # Not a restore blocker: the old chart renders it as it does now. Shown for the operator.
            reasons += tuple(f"note: it does not resolve here: {violation}" for violation in denials)
        return row("classless", True, reasons, hash_current=current_hash())
    if bootstrap == "kairos":
        return row(
            "kairos", False, (KAIROS, *(_denied(denials) if effective is None else ())), hash_current=current_hash()
        )
    if effective is None:
        return row(
            "denied",
            False,
            ("its effective settings cannot be established, so it cannot be restored", *_denied(denials)),
        )
    values = restore_values(effective)
    proof = prove(state, record, effective, values)
    era = class_era(effective)
    if not era.empty:
        return row(
            "rollout",
            False,
            (
                "not restorable without a rollout: the legacy chart cannot express " + ", ".join(era.settings),
                *(f"restoring would change {line}" for line in proof.differences),
                *talos_template_refusal(state, effective, proof.differences),
            ),
            values=values,
            hash_current=proof.hash_current,
            hash_restored=proof.hash_restored,
        )
    if not proof.equal:
        return row(
            "mismatch",
            False,
            (
                "the classless render of the restored values differs from the classified render",
                *proof.differences,
                *talos_template_refusal(state, effective, proof.differences),
            ),
            values=values,
            hash_current=proof.hash_current,
            hash_restored=proof.hash_restored,
        )
    dropped = [key for key in ("labels", "taints", "sshKeys") if key in record.values]
    notes = (
        (f"note: left out, the legacy chart has no such key and renders nothing for it: {', '.join(dropped)}",)
        if dropped
        else ()
    )
    return row(
        "restorable",
        True,
        (
            f"the chart renders these values with the same MachineDeployment, template name hash "
            f"{proof.hash_restored} and TalosConfigTemplate content",
            *notes,
        ),
        values=values,
        hash_current=proof.hash_current,
        hash_restored=proof.hash_restored,
    )


def talos_template_refusal(state: State, effective: Effective, differences: tuple[str, ...]) -> tuple[str, ...]:
    """What the restored release's talos-reconcile Job does with a TalosConfigTemplate whose content
    differs: on a chart that applies it under its stable name, the Talos provider refuses it
    (``TalosConfigImmutable``) and no machine gets it; on one that names it by content, a rollout."""
    if not any(line.startswith("TalosConfigTemplate") for line in differences):
        return ()
    name = f"kubernetes-{effective.name}"
    if talos_template_naming(state.chart) == "content":
        return (
            f"restoring applies a new TalosConfigTemplate (the chart names it by content): the MachineDeployment's "
            f"bootstrap.configRef follows it and Cluster API replaces the machines of {name}",
        )
    return (
        f"{REFUSED_BY_TALOS} ({TALOS_CONFIG_IMMUTABLE}) TalosConfigTemplate {name}: the restored release's "
        "talos-reconcile Job would apply this different content under the same name, which the Talos bootstrap "
        "provider's webhook refuses (a TalosConfigTemplate's spec is immutable): the Job fails and no machine gets "
        "the restored config; the running machines keep the classified one",
    )


def restore(state: State, *, pool: str | None = None) -> Restore:
    """A row for every pool of ``state`` (or only ``pool``, ``NS/NAME``), in :meth:`State.sorted_pools` order."""
    return Restore(
        tuple(restore_row(state, record) for record in state.sorted_pools() if pool is None or record.identity == pool),
        state.chart.as_dict(),
    )
