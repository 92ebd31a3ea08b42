"""What admission says of a change: each pool's own request (the mutation that restores an omitted
class, and every rule), and the class and platform changes that touch the pools.

Plan holds no rule of its own: its refusals are admission's (:func:`workerclass.admission.admit`:
a cluster move, a family switch, a class's immutability, quoted as they are), plus the resolver's
and the renderer's own errors on the new side (:mod:`workerclass.ops.plan`). It reads
:func:`workerclass.rules.classes.spec_changed`, admission's own test, only to choose which class
changes to send. Its edge: it builds the requests a change would send and reads the decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...admission import Decision, admit
from ...api.paths import is_within
from ...rules.classes import spec_changed
from ...state import PoolRecord, State, pool_from_object
from ...violations import Violation
from .rows import Refusal

__all__ = ["UNGUARDED", "Requests", "objects_by_key"]

#: the note on a refused change to a pool stored as its HelmRelease
UNGUARDED = (
    "a HelmRelease written directly passes no webhook: nothing in the cluster stops this change, so "
    "review it here (the rules are those of a KubernetesNodes)"
)


def objects_by_key(state: State) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    return {(record.kind, record.namespace, record.name): record.obj for record in state.objects}


class Requests:
    """Admission of the change per pool: the pool's own request, and class or platform changes."""

    def __init__(self, before: State, after: State) -> None:
        self.admit = admit
        self.before, self.after = before, after
        self.old_objects, self.new_objects = objects_by_key(before), objects_by_key(after)
        self._compute_planes: dict[tuple[str, str], Decision] = {}
        self.refusals = self._class_and_platform_refusals()

    def _class_and_platform_refusals(self) -> tuple[Refusal, ...]:
        out: list[Refusal] = []
        for name, new in sorted(self.after.classes.items()):
            old = self.before.classes.get(name)
            # Admission's own test: a spec it calls unchanged (null and {} alike) is admitted anyway.
            if old is not None and not spec_changed(old.obj, new.obj):
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
        """The new pool as admission would store it, the denials of its request, and notes.

        A pool stored as its HelmRelease gets the same request (CREATE, or an UPDATE with the
        family and cluster rules): no webhook sees a HelmRelease written directly (API.md section
        5), so nothing in the cluster stops that change, and the plan is where it is caught.
        """
        if new.kind == "ComputePlane":
            denials = [denial for denial in self._compute_plane(new).denials if is_within(denial.field, new.field)]
            return new, denials, []
        new_obj = self.new_objects.get((new.kind, new.namespace, new.name))
        if new_obj is None:  # pragma: no cover - every pool record comes from an object
            return new, [], []
        old_obj = self.old_objects.get((old.kind, old.namespace, old.name)) if old is not None else None
        decision = self.admit(self.after, "UPDATE" if old_obj is not None else "CREATE", new_obj, old_obj)
        notes: list[str] = []
        if new.kind == "HelmRelease" and not decision.allowed:
            notes.append(UNGUARDED)
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
