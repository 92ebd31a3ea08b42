"""Restore: each classified Talos pool's effective settings in the legacy (classless) field layout.

Pure. Implements the design page's "Existing pools and rollback prerequisites" for one State:

- a classless pool (and every ComputePlane node group) needs no class restoration: its row says
  so and carries no values;
- a Kairos pool cannot be restored: an older chart would interpret it as Talos, so its
  workloads must be migrated and its removal approved before reverting;
- a classified Talos pool gets its values without ``workerClassName`` and with every effective
  Talos setting written out at the pool's own paths (:func:`legacy_values`), then the proof
  (:func:`prove`): the restored values, resolved as a *classless* pool of the same State and
  rendered, must give the same versioned template hash and the same rendered objects (the class
  annotation of the MachineDeployment aside, which is applied in place). A difference is named
  by the hashed field that differs (:func:`workerclass.render.hash_document`), and the pool is
  then not restorable; so is a pool that does not resolve.

Its edge: a State in, plain values out. It writes nothing and applies nothing: an UPDATE that
omits ``workerClassName`` on a classified KubernetesNodes gets the stored class back from the
application API (API.md section 3), so the values are data for the release's restore interface,
applied with hoster authorization. :data:`GUIDANCE` holds what the operator must still do.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import OsImage, parse_pool_spec
from ..render import HASH_VERSION, RenderError, hash_document, render, template_hash
from ..render.manifests import CLASS_ANNOTATION
from ..resolve import factory_reference, resolve_pool
from ..resolve.effective import Effective
from ..state import PoolRecord, State
from ..violations import Violation

__all__ = [
    "CLASSLESS",
    "GUIDANCE",
    "KAIROS",
    "Proof",
    "Restore",
    "RestoreRow",
    "legacy_values",
    "prove",
    "restore",
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
    """One pool's verdict. ``status``: ``classless``, ``restorable``, ``kairos``, ``denied`` or ``mismatch``."""

    pool: str
    kind: str
    field: str  # where the values live in the pool's object: spec, spec.values
    class_name: str | None
    bootstrap: str
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

    @property
    def blocked(self) -> tuple[RestoreRow, ...]:
        """Rows that cannot be restored (Kairos, denied, hash mismatch)."""
        return tuple(row for row in self.rows if not row.restorable)

    def as_dict(self) -> dict[str, Any]:
        return {"pools": [row.as_dict() for row in self.rows]}


@dataclass(frozen=True, slots=True)
class Proof:
    """The classless render of restored values against the classified pool's render."""

    hash_current: str | None
    hash_restored: str | None
    differences: tuple[str, ...]

    @property
    def equal(self) -> bool:
        return not self.differences and self.hash_current is not None and self.hash_current == self.hash_restored


# --------------------------------------------------------------------------- legacy layout


def _selection(state: State, record: PoolRecord) -> OsImage | None:
    """The KubeVirt source selection resolution used: the pool's, else the class's."""
    if record.spec.os.os_image is not None:
        return record.spec.os.os_image
    class_record = state.worker_class(record.class_name) if record.class_name else None
    return class_record.spec.os.os_image if class_record is not None else None


def _os_image(state: State, record: PoolRecord, effective: Effective) -> dict[str, Any] | None:
    """``kubevirt.osImage`` for the classless resolution to select the same disk; ``None``: leave it out."""
    image, talos = effective.image, effective.talos
    assert talos is not None
    if effective.infrastructure != "kubevirt":
        return None
    if image.source == "builtin":
        return {"builtin": {"version": image.version, "schematicID": image.schematic_id}}
    if image.source != "factory":  # pragma: no cover - a Talos KubeVirt disk is builtin or factory
        return None
    default = factory_reference(talos.image_factory_url, talos.schematic_id, talos.version)
    if talos.image_factory_url and image.reference == default:
        return None  # the default factory path from the Talos settings written out
    selection = _selection(state, record)
    endpoint = selection.factory.endpoint if selection is not None and selection.factory is not None else None
    return {
        "factory": {
            **({"endpoint": endpoint} if endpoint else {}),
            "version": image.version,
            "schematicID": image.schematic_id,
        }
    }


def _put(values: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set ``value`` at ``path``; ``None`` removes it, and the parents it leaves empty."""
    head, *rest = path
    if not rest:
        if value is None:
            values.pop(head, None)
        else:
            values[head] = value
        return
    child = values.get(head)
    if not isinstance(child, dict):
        if value is None:
            return  # nothing stored at the path
        child = {}
    _put(child, tuple(rest), value)
    if child:
        values[head] = child
    else:
        values.pop(head, None)


def legacy_values(state: State, record: PoolRecord, effective: Effective) -> dict[str, Any]:
    """The pool's values without ``workerClassName``, its effective Talos settings written out.

    Key order follows the stored values; settings the pool did not have are appended.
    """
    talos = effective.talos
    if talos is None or effective.bootstrap != "talos":
        raise ValueError(f"{record.identity}: only Talos pools have legacy Talos values")
    values = copy.deepcopy(dict(record.values))
    values.pop("workerClassName", None)
    written: dict[str, Any] = {
        "version": talos.version,
        "schematicID": talos.schematic_id,
        "imageFactoryURL": talos.image_factory_url or None,
        "imageFactoryCA": talos.image_factory_ca or None,
        "installerRepository": talos.installer_repository,
        "registryMirrors": {
            registry: {"endpoints": list(endpoints)} for registry, endpoints in sorted(talos.registry_mirrors.items())
        },
    }
    values["talos"] = {key: value for key, value in written.items() if value is not None}
    values["kernelModules"] = [module.as_dict() for module in effective.kernel_modules]
    _put(values, ("kubevirt", "osImage"), _os_image(state, record, effective))
    if effective.infrastructure == "proxmox":
        _put(values, ("proxmox", "templateTags"), list(effective.image.template_tags or ()))
    return values


# --------------------------------------------------------------------------- proof


def classless_record(record: PoolRecord, values: Mapping[str, Any]) -> PoolRecord:
    """The restored values as a pool of the same kind, namespace and name, parsed from scratch."""
    parsed, violations = parse_pool_spec(dict(values), record.field)
    return PoolRecord(
        record.kind,
        record.namespace,
        record.name,
        values,
        parsed,
        tuple(violations),
        record.field,
        parsed.cluster or "",
    )


def _compact(value: Any) -> str:
    if value is None:
        return "absent"
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _document_differences(current: Any, restored: Any, path: str = "") -> list[str]:
    """Dotted hash-document paths whose values differ, leaves first compared at mapping depth."""
    if isinstance(current, Mapping) and isinstance(restored, Mapping):
        out: list[str] = []
        for key in sorted(current.keys() | restored.keys()):
            out += _document_differences(current.get(key), restored.get(key), f"{path}.{key}" if path else key)
        return out
    if current == restored:
        return []
    return [f"{path}: {_compact(current)} (class) -> {_compact(restored)} (restored)"]


def _comparable(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rendered objects by kind; the class annotation (applied in place) left out."""
    out: dict[str, dict[str, Any]] = {}
    for obj in manifests:
        obj = copy.deepcopy(obj)
        obj.get("metadata", {}).get("annotations", {}).pop(CLASS_ANNOTATION, None)
        out[obj["kind"]] = obj
    return out


def prove(state: State, record: PoolRecord, current: Effective, values: Mapping[str, Any]) -> Proof:
    """Resolve ``values`` as a classless pool of ``state``, render it, compare with ``current``."""
    hash_current = template_hash(current)
    restored_record = classless_record(record, values)
    if restored_record.class_name is not None:
        return Proof(hash_current, None, (f"the restored values still select class {restored_record.class_name}",))
    restored, denials, _ = resolve_pool(state, restored_record)
    if restored is None:
        return Proof(
            hash_current,
            None,
            tuple(f"the restored values do not resolve as a classless pool: {violation}" for violation in denials)
            or ("the restored values do not resolve as a classless pool",),
        )
    hash_restored = template_hash(restored)
    differences = _document_differences(hash_document(current), hash_document(restored))
    try:
        current_objects, restored_objects = _comparable(render(current)), _comparable(render(restored))
    except RenderError as error:
        return Proof(hash_current, hash_restored, (*differences, f"cannot render: {error}"))
    kinds = sorted(
        kind
        for kind in current_objects.keys() | restored_objects.keys()
        if current_objects.get(kind) != restored_objects.get(kind)
    )
    if kinds:
        differences.append(f"rendered objects differ: {', '.join(kinds)}")
    if hash_current != hash_restored and not differences:  # pragma: no cover - the hash covers its document
        differences.append(f"template hash {hash_current} -> {hash_restored}")
    return Proof(hash_current, hash_restored, tuple(differences))


# --------------------------------------------------------------------------- rows


def _bootstrap(state: State, record: PoolRecord, effective: Effective | None) -> str:
    if effective is not None:
        return effective.bootstrap
    class_record = state.worker_class(record.class_name) if record.class_name else None
    # As resolution does: no class (or an unreadable one) is the Talos family.
    return "kairos" if class_record is not None and class_record.spec.bootstrap == "kairos" else "talos"


def _denied(denials: list[Violation]) -> tuple[str, ...]:
    return tuple(f"denied: {violation}" for violation in denials) or ("denied: the pool does not resolve",)


def restore_row(state: State, record: PoolRecord) -> RestoreRow:
    """One pool's row (see the module docstring for the three cases)."""
    effective, denials, _ = resolve_pool(state, record)
    bootstrap = _bootstrap(state, record, effective)
    hash_current = template_hash(effective) if effective is not None else None

    def row(
        status: str,
        restorable: bool,
        reasons: tuple[str, ...],
        values: Mapping[str, Any] | None = None,
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

    if record.class_name is None or record.kind == "ComputePlane":
        reasons: tuple[str, ...] = (CLASSLESS,)
        if effective is None:
            # Not a restore blocker: the old chart renders it as it does now. Shown for the operator.
            reasons += tuple(f"note: it does not resolve here: {violation}" for violation in denials)
        return row("classless", True, reasons)
    if bootstrap == "kairos":
        return row("kairos", False, (KAIROS, *(_denied(denials) if effective is None else ())))
    if effective is None:
        return row(
            "denied",
            False,
            ("its effective settings cannot be established, so it cannot be restored", *_denied(denials)),
        )
    values = legacy_values(state, record, effective)
    proof = prove(state, record, effective, values)
    if not proof.equal:
        return row(
            "mismatch",
            False,
            ("the classless render of the restored values differs from the classified render", *proof.differences),
            values=values,
            hash_restored=proof.hash_restored,
        )
    return row(
        "restorable",
        True,
        (
            f"the classless render of these values has the same template hash {proof.hash_restored} "
            "and the same rendered objects",
        ),
        values=values,
        hash_restored=proof.hash_restored,
    )


def restore(state: State, *, pool: str | None = None) -> Restore:
    """A row for every pool of ``state`` (or only ``pool``, ``NS/NAME``), in :meth:`State.sorted_pools` order."""
    return Restore(
        tuple(restore_row(state, record) for record in state.sorted_pools() if pool is None or record.identity == pool)
    )
