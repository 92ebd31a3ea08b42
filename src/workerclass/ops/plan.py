"""Plan: which pools' machines a change from one State to another would replace, and why.

Pure. For every pool in either state it resolves both sides, compares the versioned template
hashes (:mod:`workerclass.render.hash`) to decide ``replace``, and names each changed hashed
field as a reason. Changes applied in place (replicas, health, labels, taints, class name with
the same settings) are listed with an ``in place:`` prefix and never replace. A replacement
whose only cause is a new digest of the platform Kairos image for an unchanged Kubernetes
version is flagged: the design page warns that platform rebuilds of unchanged inputs produce
new digests, and the image reference is in the hash.

Its edge: two States in, plain values out; no rendering of whole manifests, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..render.hash import hash_document, template_hash
from ..render.manifests import autoscaler_bounds, health_settings, node_labels, node_taints
from ..resolve import resolve_pool
from ..resolve.effective import Effective
from ..state import POOL_KINDS, PoolRecord, State, pool_from_object
from ..violations import Violation

__all__ = ["REBUILD_ONLY", "REFUSED", "Plan", "PlanRow", "plan"]

#: The first words of the reason that flags a replacement caused only by a platform rebuild.
REBUILD_ONLY = "platform image rebuild only"


@dataclass(frozen=True, slots=True)
class PlanRow:
    """One pool's verdict. ``status``: ``changed``, ``unchanged``, ``added``, ``removed``, ``denied`` or
    ``refused`` (the admission webhooks refuse the change; ``replace`` says what it would do if let through)."""

    pool: str
    kind: str
    replace: bool
    reasons: tuple[str, ...]
    status: str
    rebuild_only: bool = False
    hash_before: str | None = None
    hash_after: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The API.md section 4 row: exactly ``pool``, ``replace`` and ``reasons``."""
        return {"pool": self.pool, "replace": self.replace, "reasons": list(self.reasons)}


@dataclass(frozen=True, slots=True)
class Plan:
    rows: tuple[PlanRow, ...] = field(default_factory=tuple)

    @property
    def replacing(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.replace)

    def as_dict(self) -> dict[str, Any]:
        return {"pools": [row.as_dict() for row in self.rows]}


@dataclass(frozen=True, slots=True)
class _Side:
    record: PoolRecord
    effective: Effective | None
    denials: tuple[Violation, ...]


def _side(state: State, record: PoolRecord) -> _Side:
    effective, denials, _ = resolve_pool(state, record)
    return _Side(record, effective, tuple(denials))


def _pools(state: State) -> dict[tuple[str, str, str], PoolRecord]:
    return {(record.namespace, record.name, record.kind): record for record in state.sorted_pools()}


def _sort_key(key: tuple[str, str, str]) -> tuple[str, str, int]:
    namespace, name, kind = key
    return namespace, name, POOL_KINDS.index(kind) if kind in POOL_KINDS else len(POOL_KINDS)


def plan(before: State, after: State) -> Plan:
    """A row for every pool in either state, ordered by namespace, name, then pool kind."""
    old_pools, new_pools = _pools(before), _pools(after)
    rows: list[PlanRow] = []
    for key in sorted(old_pools.keys() | new_pools.keys(), key=_sort_key):
        old_record, new_record = old_pools.get(key), new_pools.get(key)
        notes: list[str] = []
        if old_record is not None and new_record is not None:
            new_record, notes = _as_admitted(old_record, new_record)
            notes = _refusals(before, after, old_record, new_record) + notes
        old = _side(before, old_record) if old_record is not None else None
        new = _side(after, new_record) if new_record is not None else None
        row = _row(key, old, new)
        if notes:
            refused = any(note.startswith(REFUSED) for note in notes)
            status = "refused" if refused and row.status != "denied" else row.status
            row = replace(row, reasons=(*row.reasons, *notes), status=status)
        rows.append(row)
    return Plan(tuple(rows))


#: The first words of a reason saying the admission webhooks would refuse the change.
REFUSED = "refused by admission"


def _as_admitted(old: PoolRecord, new: PoolRecord) -> tuple[PoolRecord, list[str]]:
    """The new pool as the application API would store it (API.md section 3, mutation table).

    A KubernetesNodes UPDATE that omits the class (or sends ``""``) gets the stored class
    restored; it is never a request to become legacy. HelmRelease writers are not mutated.
    """
    if new.kind != "KubernetesNodes" or new.class_name is not None or old.class_name is None:
        return new, []
    obj = {
        "apiVersion": "apps.cozystack.io/v1alpha1",
        "kind": "KubernetesNodes",
        "metadata": {"namespace": new.namespace, "name": new.name},
        "spec": {**new.values, "workerClassName": old.class_name},
    }
    restored = pool_from_object(obj)
    assert restored is not None  # a KubernetesNodes always gives a record
    return restored, [f"class omitted: admission restores the stored class {old.class_name} (not a switch to legacy)"]


def _family(state: State, record: PoolRecord) -> str | None:
    if record.class_name is None:
        return "talos"  # classless pools are legacy Talos
    found = state.worker_class(record.class_name)
    return (found.spec.bootstrap or None) if found is not None else None


def _refusals(before: State, after: State, old: PoolRecord, new: PoolRecord) -> list[str]:
    """Changes the admission webhooks refuse: the plan shows what they would replace if let through."""
    if old.kind == "ComputePlane":
        return []
    reasons: list[str] = []
    if old.kind == "KubernetesNodes" and old.cluster != new.cluster:
        reasons.append(
            f"{REFUSED} (Invalid): the parent cluster changes {old.cluster} -> {new.cluster}; "
            "create a pool in the other cluster instead"
        )
    old_family, new_family = _family(before, old), _family(after, new)
    # Only the application API's KubernetesNodes passes the pool webhook; HelmRelease writers do not.
    if old.kind == "KubernetesNodes" and old_family and new_family and old_family != new_family:
        reasons.append(
            f"{REFUSED} (BootstrapFamilyChange): {old_family} -> {new_family} in place; "
            "create a second pool, verify it, then migrate workloads"
        )
    name = new.class_name
    if name is not None and name == old.class_name:
        old_class, new_class = before.worker_class(name), after.worker_class(name)
        if old_class is not None and new_class is not None and old_class.obj.get("spec") != new_class.obj.get("spec"):
            reasons.append(
                f"{REFUSED} (ClassImmutable): the spec of WorkerClass {name} changed; "
                "publish another class and select it from the pools"
            )
    return reasons


def _identity(key: tuple[str, str, str]) -> str:
    return f"{key[0]}/{key[1]}"


def _denials(violations: tuple[Violation, ...]) -> str:
    return "; ".join(str(violation) for violation in violations)


def _row(key: tuple[str, str, str], old: _Side | None, new: _Side | None) -> PlanRow:
    pool, kind = _identity(key), key[2]
    if old is None and new is not None:
        reason = "new pool: its machines would be created, none replaced"
        if new.effective is None:
            reason = f"new pool, denied: {_denials(new.denials)}"
        return PlanRow(pool, kind, False, (reason,), "added", hash_after=_hash(new))
    if new is None and old is not None:
        return PlanRow(
            pool,
            kind,
            False,
            ("pool removed: its machines would be deleted, not replaced; review node-local data first",),
            "removed",
            hash_before=_hash(old),
        )
    assert old is not None and new is not None
    if new.effective is None:
        return PlanRow(
            pool,
            kind,
            False,
            (f"denied in the new state, so nothing rolls: {_denials(new.denials)}",),
            "denied",
            hash_before=_hash(old),
        )
    if old.effective is None:
        return PlanRow(
            pool,
            kind,
            False,
            (f"denied in the current state (no machines to compare): {_denials(old.denials)}",),
            "denied",
            hash_after=_hash(new),
        )
    return _compare(pool, kind, old.effective, new.effective)


def _hash(side: _Side) -> str | None:
    return template_hash(side.effective) if side.effective is not None else None


# --------------------------------------------------------------------------- comparing


def _compare(pool: str, kind: str, old: Effective, new: Effective) -> PlanRow:
    old_hash, new_hash = template_hash(old), template_hash(new)
    moved = old.cluster != new.cluster
    replace = old_hash != new_hash or moved
    reasons: list[str] = []
    if moved:  # clusterName of a MachineDeployment cannot change: its machines are recreated there
        reasons.append(f"parent cluster: {old.cluster} -> {new.cluster}")
    rebuild_only = False
    if old_hash != new_hash:
        old_document, new_document = hash_document(old), hash_document(new)
        reasons += _hash_reasons(old_document, new_document)
        rebuild_only = not moved and _rebuild_only(old, new, old_document, new_document)
        if rebuild_only:
            reasons.append(
                f"{REBUILD_ONLY}: the platform Kairos image for {new.kubernetes_minor} has a new digest,"
                f" Kubernetes {new.kubernetes_version} unchanged; the digest is in the template hash"
            )
        if not reasons:  # pragma: no cover - a hash differs only if a hashed field does
            reasons.append(f"template hash {old_hash} -> {new_hash}")
    reasons.extend(_in_place_reasons(old, new))
    return PlanRow(
        pool,
        kind,
        replace,
        tuple(reasons),
        "changed" if reasons else "unchanged",
        rebuild_only=rebuild_only,
        hash_before=old_hash,
        hash_after=new_hash,
    )


def _rebuild_only(
    old: Effective,
    new: Effective,
    old_document: Mapping[str, Any],
    new_document: Mapping[str, Any],
) -> bool:
    if not (old.bootstrap == new.bootstrap == "kairos" and old.image.source == new.image.source == "platform"):
        return False
    if old.kubernetes_version != new.kubernetes_version:
        return False
    strip_old = {**old_document, "image": {**old_document["image"], "reference": None}}
    strip_new = {**new_document, "image": {**new_document["image"], "reference": None}}
    return strip_old == strip_new and old.image.reference != new.image.reference


#: Hashed paths -> the words a reason uses, in the order reasons are listed.
_LABELS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("bootstrap",), "bootstrap family"),
    (("infrastructure",), "infrastructure"),
    (("kubernetesVersion",), "Kubernetes version"),
    (("image", "source"), "image source"),
    (("image", "reference"), "image reference"),
    (("image", "version"), "image version"),
    (("image", "schematicID"), "image schematic"),
    (("image", "templateTags"), "Proxmox template tags"),
    (("talos", "version"), "Talos version"),
    (("talos", "schematicID"), "schematic"),
    (("talos", "installerRepository"), "installer repository"),
    (("installerImage",), "installer image"),
    (("talos", "registryMirrors"), "registry mirrors"),
    (("kernelModules",), "kernel modules"),
    (("imageFactoryCA",), "Image Factory CA on the disk import"),
    (("machine", "instanceType"), "instance type"),
    (("machine", "resources"), "resources"),
    (("machine", "diskSize"), "disk size"),
    (("machine", "storageClass"), "storage class"),
    (("machine", "gpus"), "GPUs"),
    (("sshKey",), "SSH key"),
)


def _get(document: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _show(path: tuple[str, ...], value: Any) -> str:
    if value is None or value == [] or value == {}:
        return "none"
    if path == ("sshKey",):
        return "set"
    if path == ("imageFactoryCA",):
        return "set"
    if path == ("talos", "registryMirrors"):
        return ", ".join(f"{registry}={'|'.join(endpoints)}" for registry, endpoints in sorted(value.items()))
    if path == ("kernelModules",):
        return ", ".join(
            module["name"] + (f"({' '.join(module['parameters'])})" if module["parameters"] else "") for module in value
        )
    if path == ("machine", "gpus"):
        return ", ".join(gpu["name"] + (" (vGPU)" if gpu["vgpu"] else "") for gpu in value)
    if path == ("machine", "resources"):
        return f"cpu {value['cpu']}, memory {value['memory']}"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)


def _hash_reasons(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    reasons: list[str] = []
    for path, label in _LABELS:
        before, after = _get(old, path), _get(new, path)
        shown_before, shown_after = _show(path, before), _show(path, after)
        if before != after and shown_before != shown_after:  # an empty list and an absent map both show "none"
            reasons.append(f"{label}: {shown_before} -> {shown_after}")
    return reasons


def _in_place_reasons(old: Effective, new: Effective) -> list[str]:
    """Pool settings Cluster API applies without replacing machines."""
    checks: list[tuple[str, Any, Any]] = [
        ("autoscaling bounds", autoscaler_bounds(old), autoscaler_bounds(new)),
        ("health check", health_settings(old), health_settings(new)),
        ("node labels", node_labels(old), node_labels(new)),
        ("node taints", node_taints(old), node_taints(new)),
        ("class", old.class_name or "none (legacy)", new.class_name or "none (legacy)"),
    ]
    reasons: list[str] = []
    for label, before, after in checks:
        if before != after:
            reasons.append(f"in place: {label}: {_plain(before)} -> {_plain(after)}")
    return reasons


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={item}" for key, item in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "none"
    return str(value)
