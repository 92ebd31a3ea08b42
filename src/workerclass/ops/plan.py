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
- ``newMachinesOnly``: a template (a bootstrap ``...ConfigTemplate`` or a ``...MachineTemplate``)
  whose content changes under an unchanged name reaches only machines created afterwards: the
  running machines keep what they booted with until they are replaced.
- everything else (replicas and autoscaler annotations, the MachineHealthCheck, metadata) is
  applied in place.

``action`` is ``create``, ``delete``, ``replace``, ``update`` or ``unchanged``; ``refused`` the
admission codes that would refuse the change (``action`` then says what it would do if let
through); ``rebuildOnly`` flags a replacement that comes only from a new digest of the platform
Kairos image for an unchanged Kubernetes version (the design page warns that platform rebuilds
of unchanged inputs produce new digests). Reasons name the changed settings in the words of the
pool's values and effective settings.

Its edge: two States in, plain values out; no I/O.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from ..render import RenderError, render, template_hash
from ..resolve import resolve_pool
from ..resolve.effective import Effective
from ..state import POOL_KINDS, PoolRecord, State, identify, pool_from_object
from ..violations import Violation

if TYPE_CHECKING:
    from ..admission import Decision

__all__ = [
    "ACTIONS",
    "IN_PLACE",
    "NEW_MACHINES_ONLY",
    "NOT_RENDERED",
    "REBUILD_ONLY",
    "REFUSED",
    "Plan",
    "PlanRow",
    "Refusal",
    "plan",
]

#: The first words of the reason that flags a replacement caused only by a platform rebuild.
REBUILD_ONLY = "platform image rebuild only"
#: The first words of a reason saying the admission webhooks would refuse the change.
REFUSED = "refused by admission"
#: The first words of a change Cluster API applies without replacing machines.
IN_PLACE = "in place:"
#: The words ending a change that reaches only machines created afterwards.
NEW_MACHINES_ONLY = "(new machines only)"
#: The words ending a changed setting that changes none of the rendered objects.
NOT_RENDERED = "(no rendered object changes)"
ACTIONS = ("create", "delete", "replace", "update", "unchanged")

#: ``spec.template.spec`` fields of a MachineDeployment that Cluster API propagates in place.
#: (v1beta2 also propagates machine taints in place: ``spec.template.spec.taints``.)
_IN_PLACE_TEMPLATE_FIELDS = frozenset(
    {"nodeDrainTimeout", "nodeDeletionTimeout", "nodeVolumeDetachTimeout", "minReadySeconds", "deletion", "taints"}
)
#: Pool settings that only change the MachineDeployment's replicas/annotations or the health check.
_IN_PLACE_SETTINGS = frozenset(
    {
        "class",
        "minReplicas",
        "maxReplicas",
        "maxUnhealthy",
        "nodeStartupTimeout",
        "readyUnknownTimeout",
        "readyFalseTimeout",
        "maxNodeProvisionTime",
    }
)


@dataclass(frozen=True, slots=True)
class PlanRow:
    """One pool's verdict (API.md section 4 ``plan -o json`` row)."""

    pool: str
    kind: str
    action: str
    replace: bool
    reasons: tuple[str, ...]
    refused: tuple[str, ...] = ()
    rebuild_only: bool = False
    new_machines_only: tuple[str, ...] = ()
    hash_before: str | None = None
    hash_after: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "action": self.action,
            "replace": self.replace,
            "refused": list(self.refused),
            "rebuildOnly": self.rebuild_only,
            "newMachinesOnly": list(self.new_machines_only),
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True, slots=True)
class Refusal:
    """A change to a class or the platform that admission refuses (also named on the pools it touches)."""

    kind: str
    name: str
    denials: tuple[Violation, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    rows: tuple[PlanRow, ...] = field(default_factory=tuple)
    refusals: tuple[Refusal, ...] = ()

    @property
    def replacing(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.replace)

    @property
    def deleting(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.action == "delete")

    @property
    def refused(self) -> tuple[PlanRow, ...]:
        return tuple(row for row in self.rows if row.refused)

    def detailed_exit_code(self) -> int:
        """1 a change refused or a pool denied; 2 machines replaced or deleted; else 0."""
        if self.refused or self.refusals:
            return 1
        if self.replacing or self.deleting:
            return 2
        return 0

    def as_dict(self) -> dict[str, Any]:
        return {"pools": [row.as_dict() for row in self.rows]}


# --------------------------------------------------------------------------- inputs


Key = tuple[str, str, str]  # namespace, name, pool kind


def _objects(state: State) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    return {(record.kind, record.namespace, record.name): record.obj for record in state.objects}


def _pools(state: State) -> dict[Key, PoolRecord]:
    return {(record.namespace, record.name, record.kind): record for record in state.sorted_pools()}


def _sort_key(key: Key) -> tuple[str, str, int]:
    namespace, name, kind = key
    return namespace, name, POOL_KINDS.index(kind) if kind in POOL_KINDS else len(POOL_KINDS)


_RENDER_KEYWORD = "talos_config_template" in inspect.signature(render).parameters
_render: Callable[..., list[dict[str, Any]]] = render


def render_all(effective: Effective) -> list[dict[str, Any]]:
    """Every object the pool's release holds, the bootstrap config template included."""
    if _RENDER_KEYWORD:
        return _render(effective, talos_config_template=True)
    return _render(effective)


@dataclass(frozen=True, slots=True)
class _Side:
    record: PoolRecord
    effective: Effective | None
    denials: tuple[Violation, ...]
    objects: dict[tuple[str, str], dict[str, Any]]


def _side(state: State, record: PoolRecord) -> _Side:
    effective, denials, _ = resolve_pool(state, record)
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    if effective is not None:
        try:
            objects = {(str(obj.get("kind")), identify(obj)[2]): obj for obj in render_all(effective)}
        except RenderError as error:
            return _Side(record, None, (Violation("Invalid", record.field, str(error)),), {})
    return _Side(record, effective, tuple(denials), objects)


class _Admission:
    """Admission of the change per pool: the pool's own request, and class or platform changes."""

    def __init__(self, before: State, after: State) -> None:
        # Imported here: admission imports ops.status, and ops imports this module.
        from ..admission import admit

        self.admit = admit
        self.before, self.after = before, after
        self.old_objects, self.new_objects = _objects(before), _objects(after)
        self._compute_planes: dict[tuple[str, str], Decision] = {}
        self.refusals = self._class_and_platform_refusals()

    def _class_and_platform_refusals(self) -> tuple[Refusal, ...]:
        out: list[Refusal] = []
        for name, new in sorted(self.after.classes.items()):
            old = self.before.classes.get(name)
            if old is not None and old.obj.get("spec") == new.obj.get("spec"):
                continue
            decision = self.admit(
                self.after, "UPDATE" if old is not None else "CREATE", new.obj, old.obj if old else None
            )
            if not decision.allowed:
                out.append(Refusal("WorkerClass", name, tuple(decision.denials)))
        old_platform, new_platform = self.before.platform_object, self.after.platform_object
        if old_platform.get("spec") != new_platform.get("spec"):
            decision = self.admit(self.after, "UPDATE", new_platform, old_platform)
            if not decision.allowed:
                out.append(Refusal("WorkerPlatform", "default", tuple(decision.denials)))
        return tuple(out)

    def pool(self, old: PoolRecord | None, new: PoolRecord) -> tuple[PoolRecord, list[Violation], list[str]]:
        """The new pool as admission would store it, the denials of its request, and notes."""
        if new.kind == "HelmRelease":
            return new, [], []  # direct HelmRelease writers pass no pool webhook (API.md section 5)
        if new.kind == "ComputePlane":
            denials = [
                denial
                for denial in self._compute_plane(new).denials
                if denial.field == new.field or denial.field.startswith(new.field + ".")
            ]
            return new, denials, []
        new_obj = self.new_objects.get((new.kind, new.namespace, new.name))
        if new_obj is None:  # pragma: no cover - every pool record comes from an object
            return new, [], []
        old_obj = self.old_objects.get((old.kind, old.namespace, old.name)) if old is not None else None
        decision = self.admit(self.after, "UPDATE" if old_obj is not None else "CREATE", new_obj, old_obj)
        notes: list[str] = []
        admitted = new
        if decision.object is not None and decision.patch:
            mutated = pool_from_object(decision.object)
            if mutated is not None:
                admitted = mutated
                if old is not None and mutated.class_name is not None:
                    notes.append(
                        f"class omitted: admission restores the stored class {mutated.class_name} "
                        "(not a switch to legacy)"
                    )
                elif mutated.class_name is not None:
                    notes.append(f"class omitted: admission sets the platform default class {mutated.class_name}")
        return admitted, list(decision.denials), notes

    def _compute_plane(self, record: PoolRecord) -> Decision:
        key = (record.namespace, record.cluster)
        if key not in self._compute_planes:
            new = self.new_objects.get(("ComputePlane", *key))
            old = self.old_objects.get(("ComputePlane", *key))
            self._compute_planes[key] = self.admit(self.after, "UPDATE" if old is not None else "CREATE", new, old)
        return self._compute_planes[key]


# --------------------------------------------------------------------------- plan


def plan(before: State, after: State) -> Plan:
    """A row for every pool in either state, ordered by namespace, name, then pool kind."""
    admission = _Admission(before, after)
    old_pools, new_pools = _pools(before), _pools(after)
    class_refusals = {refusal.name: refusal for refusal in admission.refusals if refusal.kind == "WorkerClass"}
    rows: list[PlanRow] = []
    for key in sorted(old_pools.keys() | new_pools.keys(), key=_sort_key):
        old_record, new_record = old_pools.get(key), new_pools.get(key)
        identity, kind = f"{key[0]}/{key[1]}", key[2]
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
        refusals = [(REFUSED, denial) for denial in denials]
        seen = {(denial.code, denial.field) for denial in denials}
        refusals += [("denied in the new state", d) for d in new.denials if (d.code, d.field) not in seen]
        for name in {admitted.class_name, old_record.class_name if old_record else None} - {None}:
            refusal = class_refusals.get(str(name))
            if refusal is not None:
                refusals += [(f"{REFUSED} (WorkerClass {name})", denial) for denial in refusal.denials]
        refused = tuple(dict.fromkeys(denial.code for _, denial in refusals))
        refusal_reasons = tuple(_refusal_reason(prefix, denial) for prefix, denial in refusals)
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
        row = _compare(identity, kind, old, new)
        rows.append(
            PlanRow(
                row.pool,
                row.kind,
                row.action,
                row.replace,
                (*row.reasons, *refusal_reasons, *notes),
                refused,
                row.rebuild_only,
                row.new_machines_only,
                row.hash_before,
                row.hash_after,
            )
        )
    return Plan(tuple(rows), admission.refusals)


def _refusal_reason(prefix: str, denial: Violation) -> str:
    if prefix.startswith(f"{REFUSED} (WorkerClass"):
        return f"{REFUSED} ({denial.code}): {prefix[len(REFUSED) + 2 : -1]} {denial.field}: {denial.message}"
    return f"{prefix} ({denial.code}) {denial.field}: {denial.message}"


def _hash(side: _Side) -> str | None:
    return template_hash(side.effective) if side.effective is not None else None


# --------------------------------------------------------------------------- comparing


def _compare(pool: str, kind: str, old: _Side, new: _Side) -> PlanRow:
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
            hash_before=_hash(old),
            hash_after=_hash(new),
        )
    rolls = _rolling_changes(old.objects, new.objects)
    templates = _template_changes(old.objects, new.objects)
    others = _other_changes(old.objects, new.objects, templates)
    replace = bool(rolls)
    settings = _setting_changes(old, new)
    reasons: list[str] = []
    new_machines: list[str] = []
    rendered_change = bool(rolls or templates or others)
    for setting, label, before, after in settings:
        text = f"{label}: {before} -> {after}"
        if setting in _IN_PLACE_SETTINGS:
            reasons.append(f"{IN_PLACE} {text}")
        elif not rendered_change:
            reasons.append(f"{text} {NOT_RENDERED}")
        elif replace:
            reasons.append(text)
        elif templates:
            new_machines.append(setting)
            reasons.append(f"{text} {NEW_MACHINES_ONLY}")
        else:
            reasons.append(f"{IN_PLACE} {text}")
    rebuild_only = replace and _rebuild_only(old.effective, new.effective, settings)
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
        (),
        rebuild_only,
        tuple(dict.fromkeys(new_machines)),
        template_hash(old.effective),
        template_hash(new.effective),
    )


Objects = Mapping[tuple[str, str], Mapping[str, Any]]


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


def _short(value: Any) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= 80 else text[:77] + "..."


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
            out.append(
                f"MachineDeployment {name} spec.clusterName: {_short(cluster_before)} -> {_short(cluster_after)}"
            )
        template_before = dict(_get(before, "spec", "template", "spec") or {})
        template_after = dict(_get(after, "spec", "template", "spec") or {})
        for key in _IN_PLACE_TEMPLATE_FIELDS:
            template_before.pop(key, None)
            template_after.pop(key, None)
        for path, was, becomes in _leaves(template_before, template_after, "spec.template.spec"):
            out.append(f"MachineDeployment {name} {path}: {_short(was)} -> {_short(becomes)}")
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
            out.append(f"{kind} {name} {path}: {_short(was)} -> {_short(becomes)}")
    return out


# --------------------------------------------------------------------------- settings, for people


#: (setting, words) of the effective settings, in the order reasons list them.
_EFFECTIVE: tuple[tuple[str, str], ...] = (
    ("bootstrap", "bootstrap family"),
    ("cluster", "parent cluster"),
    ("infrastructure", "infrastructure"),
    ("kubernetesVersion", "Kubernetes version"),
    ("image.source", "image source"),
    ("image.reference", "image reference"),
    ("image.version", "image version"),
    ("image.schematicID", "image schematic"),
    ("image.templateTags", "Proxmox template tags"),
    ("talos.version", "Talos version"),
    ("talos.schematicID", "schematic"),
    ("talos.imageFactoryURL", "Image Factory URL"),
    ("talos.installerRepository", "installer repository"),
    ("installerImage", "installer image"),
    ("talos.registryMirrors", "registry mirrors"),
    ("kernelModules", "kernel modules"),
    ("talos.imageFactoryCA", "Image Factory CA"),
)
#: Pool values the effective settings already cover (or that only the admission rules read).
_COVERED = frozenset({"workerClassName", "talos", "kernelModules", "kubevirt", "proxmox", "version", "cluster"})
_WORDS = {"instanceType": "instance type", "sshKeys": "SSH key"}
_SECRET_LIKE = frozenset({"sshKeys", "talos.imageFactoryCA"})


def _effective_settings(effective: Effective) -> dict[str, Any]:
    talos = effective.talos.as_dict() if effective.talos is not None else {}
    image = effective.image.as_dict()
    out: dict[str, Any] = {
        "bootstrap": effective.bootstrap,
        "cluster": effective.cluster,
        "infrastructure": effective.infrastructure,
        "kubernetesVersion": effective.kubernetes_version,
        "installerImage": effective.installer_image,
        "kernelModules": [module.as_dict() for module in effective.kernel_modules],
    }
    out.update({f"image.{key}": value for key, value in image.items()})
    out.update({f"talos.{key}": value for key, value in talos.items()})
    return out


def _taint(taint: Any) -> str:
    if not isinstance(taint, Mapping):
        return str(taint)
    return f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"


@cache
def chart_defaults() -> Mapping[str, Any]:
    """The chart's default values (an absent pool value means the default, not none)."""
    text = resources.files("workerclass.chart").joinpath("data", "values.yaml").read_text("utf-8")
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


def _show(setting: str, value: Any) -> str:
    if value in (None, [], {}, ""):
        return "none"
    if setting in _SECRET_LIKE:
        return "set"
    if setting == "talos.registryMirrors" and isinstance(value, Mapping):
        return ", ".join(
            f"{registry}={'|'.join(str(e) for e in (mirror or {}).get('endpoints', []))}"
            for registry, mirror in sorted(value.items())
        )
    if setting == "kernelModules" and isinstance(value, list):
        return ", ".join(
            str(module.get("name")) + (f"({' '.join(module['parameters'])})" if module.get("parameters") else "")
            for module in value
        )
    if setting == "taints" and isinstance(value, list):
        return ", ".join(_taint(taint) for taint in value)
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    if isinstance(value, Mapping) and all(isinstance(item, str | int | float | bool) for item in value.values()):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    return _short(value)


def _setting_changes(old: _Side, new: _Side) -> list[tuple[str, str, str, str]]:
    """``(setting, words, before, after)`` for each changed effective setting and pool value."""
    assert old.effective is not None and new.effective is not None
    out: list[tuple[str, str, str, str]] = []
    before, after = _effective_settings(old.effective), _effective_settings(new.effective)
    for setting, words in _EFFECTIVE:
        shown_before, shown_after = _show(setting, before.get(setting)), _show(setting, after.get(setting))
        if before.get(setting) != after.get(setting) and shown_before != shown_after:
            out.append((setting, words, shown_before, shown_after))
    old_values, new_values, defaults = old.record.values, new.record.values, chart_defaults()
    for key in sorted((set(old_values) | set(new_values)) - _COVERED, key=str):
        was, becomes = old_values.get(key, defaults.get(key)), new_values.get(key, defaults.get(key))
        if was != becomes and _show(key, was) != _show(key, becomes):
            out.append((key, _WORDS.get(key, key), _show(key, was), _show(key, becomes)))
    old_class, new_class = old.effective.class_name, new.effective.class_name
    if old_class != new_class:
        out.append(("class", "class", old_class or "none (legacy)", new_class or "none (legacy)"))
    return out


def _rebuild_only(old: Effective, new: Effective, settings: Iterable[tuple[str, str, str, str]]) -> bool:
    if not (old.bootstrap == new.bootstrap == "kairos" and old.image.source == new.image.source == "platform"):
        return False
    if old.kubernetes_version != new.kubernetes_version or old.image.reference == new.image.reference:
        return False
    return all(setting == "image.reference" or setting in _IN_PLACE_SETTINGS for setting, *_ in settings)
