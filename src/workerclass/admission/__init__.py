"""Admission decisions: mutation of KubernetesNodes and validation of every kind we admit.

Pure, like the DefaultStorageClass plugin: a ladder of early returns over a read-only
:class:`~workerclass.state.State`. ``mutate`` only defaults or restores ``workerClassName`` (and
writes a new classified pool's omitted Kubernetes minor);
``validate`` applies every rule; ``admit`` is both, in the order the API server runs them.
Its edge: dicts in, a :class:`Decision` out; no I/O.

- this module: the ladder (``mutate``, ``validate``, ``admit``) and one validator per kind; the
  rules it applies live once below it (:mod:`workerclass.rules`: family, usage, class and
  pool-change rules, what the API filled in) or in :mod:`workerclass.resolve` when they need
  the resolved settings.
- :mod:`.decision`: :class:`Decision`, the answer every door shows.
- :mod:`.names`: the pool-name rules Cozystack's API and chart apply (``InvalidPoolName``).
- :mod:`.minor`: the Kubernetes minor a new classified pool that names none is given.
- :mod:`.patch`: the object a mutation's ops make (:func:`~.patch.apply_ops`).
- :mod:`.ratchet`: UPDATEs ratchet as Kubernetes' CRD validation does (what did not change is said, not refused).
- :mod:`.bounds`: a request's size and depth judged once, off its JSON text where that settles it.

Why one module over the house ~500 lines (about 535): the ladder and its per-kind validators read
as one decision, in the order the API server runs them; the rules themselves live elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.bounds import MAX_BYTES, Excess
from ..api.webhooks import ALL_OPERATIONS
from ..chart.values import read_chart_defaults
from ..model import (
    parse_class_spec,
    parse_cluster,
    parse_node_group,
    parse_platform,
)
from ..model.reader import key_path
from ..resolve import Resolution, check_replicas, check_talos_vgpu, resolve_verdict
from ..resolve.classes import class_rule_violations
from ..rules.classes import (
    BUILTIN_FAMILIES,
    class_being_deleted,
    class_immutable,
    reference_problem,
    spec_changed,
)
from ..rules.family import family_of
from ..rules.keys import holds_private
from ..rules.pools import (
    chart_not_gated,
    cluster_move,
    family_switch,
    immutable_changes,
    named_class_rules,
    stays_classless,
)
from ..rules.supplied import api_filled_paths, json_pointer, kairos_read_paths, strip_paths
from ..rules.usage import deletion_blocker
from ..state import KINDS, State, cluster_release, identify, is_pool_release, pool_cluster, pool_from_object
from ..violations import Violation
from .bounds import patch_may_cross, request_excess, request_reading
from .decision import Decision
from .minor import CLASS_FIELD, minor_ops
from .names import name_violations
from .patch import apply_ops
from .ratchet import RATCHETED_KINDS, Outcome, ratchet

__all__ = ["Decision", "admit", "mutate", "stored_object", "supplied_object", "validate"]

_OPERATIONS = frozenset(ALL_OPERATIONS)
#: "CREATE, UPDATE, DELETE or CONNECT", worded once
_OPERATION_WORDS = f"{', '.join(ALL_OPERATIONS[:-1])} or {ALL_OPERATIONS[-1]}"


def _spec(obj: Mapping[str, Any] | None) -> Any:
    return obj.get("spec") if type(obj) is dict or isinstance(obj, Mapping) else None


def _pool_values(obj: Mapping[str, Any] | None) -> Any:
    """A pool's values: ``spec`` of a KubernetesNodes, ``spec.values`` of a HelmRelease."""
    spec = _spec(obj)
    if (type(obj) is dict or isinstance(obj, Mapping)) and obj.get("kind") == "HelmRelease":
        return spec.get("values") if isinstance(spec, dict) else None
    return spec


def _stored_class(obj: Mapping[str, Any] | None) -> str | None:
    values = _pool_values(obj)
    value = values.get(CLASS_FIELD) if isinstance(values, dict) else None
    return value if isinstance(value, str) and value else None


def _bad_operation(operation: str) -> Decision | None:
    if operation in _OPERATIONS:
        return None
    return Decision(
        False,
        operation,
        denials=[Violation("Invalid", "operation", f"{operation!r} is not {_OPERATION_WORDS}")],
    )


def stored_object(state: State, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The old object of an UPDATE or DELETE: STATE's object of that identity, else a built-in
    class or the embedded platform; ``None`` when nothing of that identity is stored."""
    stored = state.find(kind, namespace, name)
    if stored is not None:
        return dict(stored.obj)
    if kind == "WorkerClass":
        record = state.worker_class(name)
        if record is not None and record.builtin:
            return dict(record.obj)
    if kind == "WorkerPlatform" and name == "default":
        return dict(state.platform_object)
    return None


def _old_object(
    state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """``old``, or for an UPDATE/DELETE without one the stored object of ``obj``'s identity
    (API.md section 6: as the CLI takes it from STATE)."""
    if old is not None or operation not in ("UPDATE", "DELETE") or not isinstance(obj, Mapping):
        return old
    return stored_object(state, *identify(obj))


# --------------------------------------------------------------------------- mutation


def _beyond_bounds(operation: str, obj: Mapping[str, Any] | None) -> Decision | None:
    """``ObjectTooLarge`` for an object nested or sized beyond :mod:`workerclass.api.bounds`, judged
    before any rule walks it (a walk of a 1,000-deep object fails with ``RecursionError``)."""
    return None if obj is None else _too_large(operation, obj, request_excess(obj))


def _too_large(operation: str, obj: Mapping[str, Any], found: Excess | None) -> Decision | None:
    if found is None:
        return None
    field = "spec.values" if obj.get("kind") == "HelmRelease" else "spec"
    return Decision(False, operation, denials=[Violation("ObjectTooLarge", field, f"the object {found.message}")])


def _within_bounds(old: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A stored object beyond the bounds is not read: the request is judged as if nothing were
    stored (no ratcheting, no class to restore), so a tenant can still replace it with a sound one."""
    return old if old is None or request_excess(old) is None else None


def mutate(
    state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None = None
) -> Decision:
    """Default (CREATE) or restore (UPDATE) a KubernetesNodes ``workerClassName``; on a CREATE that
    gets or names a class and names no Kubernetes minor, write one (:func:`.minor.omitted_minor`).

    On the UPDATE of a classified pool (the old pool has a class), the values Cozystack's API
    filled in (:mod:`~workerclass.rules.supplied`) are removed after the class op, so the
    stored values never accumulate them. A classless pool's UPDATE gets no patch at all.
    Only the application API mutates: HelmRelease writers and other kinds are left alone.
    Idempotent: a mutated object needs no further patch. Without ``old``, an UPDATE's old object
    is the stored one of the same identity in ``state``.
    """
    refused = _bad_operation(operation) or _beyond_bounds(operation, obj)
    if refused is not None:
        return refused
    return _mutated(state, operation, obj, _within_bounds(_old_object(state, operation, obj, old)))


def _mutated(state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None) -> Decision:
    """:func:`mutate` of an object already judged within the bounds, ``old`` already the one to read."""
    if obj is None or obj.get("kind") != "KubernetesNodes" or operation not in ("CREATE", "UPDATE"):
        return Decision(True, operation, object=obj)
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return Decision(True, operation, object=obj)  # malformed: validation says why
    patch: list[dict[str, Any]] = []
    said: list[str] = []
    current = spec.get(CLASS_FIELD) if spec else None
    if current in (None, ""):
        target = state.platform.default_worker_class if operation == "CREATE" else _stored_class(old)
        if operation == "CREATE" and target is not None:
            classless = stays_classless(state.chart, target, f"spec.{CLASS_FIELD}")
            if classless is not None:
                target, said = None, [classless]
        if target is not None and spec is None:
            patch.append({"op": "add", "path": "/spec", "value": {CLASS_FIELD: target}})
        elif target is not None and spec is not None:
            # RFC 6902 "add" sets the member whether it is absent or "" (API.md: the patch adds it).
            patch.append({"op": "add", "path": f"/spec/{CLASS_FIELD}", "value": target})
    # The object shown and validated is what the ops make (one source: .patch.apply_ops).
    patched = apply_ops(obj, patch) if patch else obj
    ops, warnings = minor_ops(state, obj, patched) if operation == "CREATE" else ([], [])
    if ops:
        patch += ops
        patched = apply_ops(patched, ops)
    new_spec = patched.get("spec")
    if operation == "UPDATE" and new_spec and _stored_class(old) is not None:
        filled = api_filled_paths(new_spec, _written_before(state, obj, old))
        removals = [{"op": "remove", "path": json_pointer("/spec", path)} for path in filled]
        if removals:
            patch += removals
            patched = apply_ops(patched, removals)
    if not patch:
        return Decision(True, operation, object=obj, warnings=said)
    return Decision(True, operation, patch=patch, object=patched, warnings=said + warnings)


def _written_before(state: State, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """What was really written for the pool an UPDATE changes: the State's record of it (the
    backing HelmRelease, else the stored KubernetesNodes); without one, the old object's values
    (the API's read: the best knowledge there is, so nothing is taken for API-filled)."""
    _, namespace, name = identify(obj)
    stored = state.stored_values(namespace, name)
    if stored is None and isinstance(old, Mapping):
        previous = old.get("spec")
        stored = previous if isinstance(previous, dict) else None
    return stored


def supplied_object(
    state: State, operation: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> Mapping[str, Any]:
    """The pool object as the tenant supplied it: an UPDATE of a KubernetesNodes without the
    values Cozystack's API filled in (:mod:`~workerclass.rules.supplied`); else ``obj``."""
    if operation != "UPDATE" or obj.get("kind") != "KubernetesNodes":
        return obj
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    filled = api_filled_paths(spec, _written_before(state, obj, old))
    _, namespace, name = identify(obj)
    # No record of what was written: a Kairos pool's Talos-only chart defaults are the API's
    # read (a CREATE with them would have been refused), never TalosSettingOnKairos.
    named = spec.get(CLASS_FIELD)  # _stored_class(obj), read off the spec in hand
    read = kairos_read_paths(state, namespace, name, spec, named if isinstance(named, str) and named else None)
    if read:
        filled += [path for path in read if path not in filled]
    return {**obj, "spec": strip_paths(spec, filled)} if filled else obj


# --------------------------------------------------------------------------- validation


def validate(
    state: State,
    operation: str,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None = None,
    *,
    ratcheting: bool = True,
) -> Decision:
    """Every rule for the object's kind; no mutation. For DELETE, ``obj`` may be ``None``.

    Without ``old``, an UPDATE's or DELETE's old object is the stored one of ``obj``'s identity.
    A pool's UPDATE ratchets (:mod:`.ratchet`): a denial the stored object already gets, at a
    field this UPDATE leaves as stored, is a warning; ``ratcheting=False`` judges the object as
    it is (``check --stored``: is what the cluster stores valid, not may it be left as it is).
    """
    found, _, clean = request_reading(obj) if obj is not None else (None, MAX_BYTES, False)
    refused = _bad_operation(operation) or (_too_large(operation, obj, found) if obj is not None else None)
    if refused is not None:
        return refused
    old = _within_bounds(_old_object(state, operation, obj, old))
    return _validated(state, operation, obj, old, ratcheting=ratcheting, clean=clean)


def _validated(
    state: State,
    operation: str,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    *,
    ratcheting: bool = True,
    clean: bool = False,
) -> Decision:
    """:func:`validate` of an object already judged within the bounds, ``old`` already the one to read;
    ``clean``: its text showed no string that can hold private key material (nothing to search)."""
    subject = obj if obj is not None else old
    if type(subject) is not dict and not isinstance(subject, Mapping):
        return Decision(False, operation, denials=[Violation("Invalid", "object", "no object to admit")])
    kind = subject.get("kind")
    handler = _VALIDATORS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        return Decision(True, operation, object=obj, warnings=[f"workerclass does not admit kind {kind!r}"])
    # What the tenant supplied is read once per object: the rules and the ratchet share it.
    supplied: Mapping[str, Any] | None = None
    if kind == "KubernetesNodes" and operation == "UPDATE" and obj is not None:
        supplied = supplied_object(state, operation, obj, old)
        denials, warnings = _validate_pool(state, operation, obj, old, supplied=supplied, clean=clean)
    elif handler is _validate_pool:
        denials, warnings = _validate_pool(state, operation, obj, old, clean=clean)
    else:
        denials, warnings = handler(state, operation, obj, old)
    previous = old
    ratcheted = denials and operation == "UPDATE" and kind in RATCHETED_KINDS
    if ratcheting and ratcheted and obj is not None and isinstance(previous, Mapping) and previous.get("kind") == kind:
        stored_supplied = supplied_object(state, operation, previous, previous)

        def stored() -> list[Violation]:
            if kind == "KubernetesNodes":
                return _validate_pool(state, operation, previous, previous, supplied=stored_supplied)[0]
            return handler(state, operation, previous, previous)[0]

        denials, said = ratchet(
            denials,
            new=supplied if supplied is not None else supplied_object(state, operation, obj, previous),
            old=stored_supplied,
            values="spec.values" if kind == "HelmRelease" else "spec",
            stored=stored,
        )
        warnings = warnings + said
    return Decision(not denials, operation, object=obj, warnings=warnings, denials=denials)


def admit(
    state: State,
    operation: str,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None = None,
    *,
    ratcheting: bool = True,
) -> Decision:
    """Mutation then validation of the mutated object, as the API server would run them.

    Without ``old``, an UPDATE's or DELETE's old object is the stored object of the same identity
    in ``state`` (API.md section 6, as the CLI reads it from STATE). ``ratcheting``: :func:`validate`'s.
    """
    # The bounds are judged once: the mutated object is the request's with a class name or a minor
    # added (or API-filled values removed), judged again only when that could cross them.
    found, size, clean = request_reading(obj) if obj is not None else (None, MAX_BYTES, False)
    refused = (_too_large(operation, obj, found) if obj is not None else None) or _bad_operation(operation)
    if refused is not None:
        return refused
    old = _within_bounds(_old_object(state, operation, obj, old))
    mutation = _mutated(state, operation, obj, old)
    patched = mutation.object
    refused = None
    if patched is not obj and (obj is None or patch_may_cross(size, mutation.patch)):
        refused = _beyond_bounds(operation, patched)
    # What the ops add is ours (a class name, a minor), read here too before the text's answer is kept.
    added = clean and (patched is obj or not holds_private([op.get("value") for op in mutation.patch]))
    validation = refused or _validated(state, operation, patched, old, ratcheting=ratcheting, clean=added)
    denials = validation.denials
    target = _stored_class(patched)
    if denials and operation == "CREATE" and obj is not None and target is not None and _stored_class(obj) is None:
        denials = named_class_rules(denials, _validated(state, operation, obj, old, clean=clean).denials, target)
    return Decision(
        validation.allowed,
        operation,
        patch=mutation.patch,
        object=patched,
        warnings=mutation.warnings + validation.warnings,
        denials=denials,
    )


def _metadata_name(obj: Mapping[str, Any] | None) -> str:
    _, _, name = identify(obj or {})
    return name


def _same_values(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """Equal values; values nested too deep to compare are not the same."""
    if left is right:
        return True
    try:
        return bool(left == right)
    except RecursionError:
        return False


def _validate_pool(
    state: State,
    operation: str,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    *,
    supplied: Mapping[str, Any] | None = None,
    clean: bool = False,
) -> Outcome:
    """The pool rules; ``supplied``: :func:`supplied_object` of ``obj`` and ``old`` when the caller has it;
    ``clean``: ``obj``'s text showed no string that can hold private key material."""
    if operation in ("DELETE", "CONNECT") or obj is None:
        return [], []
    if obj.get("kind") == "HelmRelease" and not is_pool_release(obj):
        parent = cluster_release(obj)  # a parent Kubernetes app stored as its HelmRelease
        if parent is None:
            return [], []
        _, namespace, _ = identify(obj)
        return parse_cluster(namespace, parent[0], parent[1], "spec.values")[1], []
    obj = supplied if supplied is not None else supplied_object(state, operation, obj, old)
    record = pool_from_object(obj)
    if record is None:  # pragma: no cover - the dispatcher only sends pool kinds
        return [Violation("Invalid", "kind", "not a pool")], []
    denials: list[Violation] = []
    if operation == "UPDATE" and old is not None:
        old_class = _stored_class(old)
        switch = family_switch(
            family_of(state, old_class),
            family_of(state, _stored_class(obj)),
            old_class,
            f"{record.field}.{CLASS_FIELD}",
        )
        if switch is not None:
            denials.append(switch)
    immutable = state.chart.rules.immutable_fields
    if operation == "UPDATE" and isinstance(old, Mapping):
        move = cluster_move(
            pool_cluster(old),  # the old object's cluster alone: the rest of it is not parsed
            record.cluster,
            f"{record.field}.cluster",
            immutable="cluster" in immutable,
        )
        if move is not None:
            denials.append(move)
        if record.kind == "KubernetesNodes" and isinstance(_pool_values(old), Mapping):
            # The chart's values schema rule (self == oldSelf) is the application's: a HelmRelease
            # written directly goes through Helm, which does not apply it.
            others = [path for path in immutable if path != "cluster"]
            defaults = read_chart_defaults(state.chart.upstream)
            denials += immutable_changes(_pool_values(old), record.values, others, defaults, record.field)
    if record.class_name is not None and record.kind != "ComputePlane":
        gate = chart_not_gated(state.chart, f"{record.field}.{CLASS_FIELD}")
        if gate is not None:
            denials.append(gate)
    name = record.class_name
    # The class the pool held before this request: the old object's, or (``check`` admitting what a
    # STATE already stores) the stored pool's. A pool that keeps its class keeps it while it is deleted.
    stored = state.pools.get((record.kind, record.namespace, record.name))
    if old is not None and (type(old) is dict or isinstance(old, Mapping)):
        before = _stored_class(old)
    else:
        before = stored.class_name if stored is not None and _same_values(stored.values, record.values) else None
    if name is not None and name != before:
        selected = state.worker_class(name)
        if selected is not None and (selected.obj.get("metadata") or {}).get("deletionTimestamp"):
            denials.append(class_being_deleted(name, f"{record.field}.{CLASS_FIELD}"))
    if operation == "CREATE" or record.kind == "HelmRelease":
        # A KubernetesNodes' name is checked when it is created only: Cozystack's API skips name
        # validation on UPDATE (names are immutable), so a stored pool is never refused for its
        # name. A HelmRelease's name is the release name the chart judges at every render: a
        # name the chart refuses is refused on UPDATE too (an UPDATE that leaves the values as
        # stored is let through by the ratchet below, with the refusal said as a warning).
        denials.extend(name_violations(state, record, obj))
    resolved_denials, warnings = resolve_verdict(state, record, clean=clean)
    return denials + resolved_denials, warnings


def _validate_class(
    state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> Outcome:
    name = _metadata_name(obj if obj is not None else old)
    if operation == "DELETE":
        blocker = deletion_blocker(state, name)
        if blocker is None:
            if name == state.platform.default_worker_class and name not in BUILTIN_FAMILIES:
                return [], [
                    f"WorkerClass {name} is the platform default: until WorkerPlatform default names another "
                    "class, new pools that omit the class are denied (ClassNotFound)"
                ]
            return [], []
        return [Violation("ClassInUse", "metadata.name", blocker)], []
    if operation == "CONNECT" or obj is None:
        return [], []
    if operation == "UPDATE" and old is not None:
        if not spec_changed(old, obj):
            # Metadata only (labels, finalizers, the controller's bookkeeping, a hand-removed finalizer):
            # the spec was judged when it was created; re-judging it against today's platform could
            # leave a class that can never finish deleting.
            return [], []
        return [class_immutable(name)], []
    spec, denials = parse_class_spec(obj.get("spec"))
    return denials + class_rule_violations(state.platform, spec, obj.get("spec"), name=name), []


def _validate_compute_plane(
    state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> Outcome:
    if operation in ("DELETE", "CONNECT") or obj is None:
        return [], []
    denials: list[Violation] = []
    warnings: list[str] = []
    spec = obj.get("spec")
    groups = spec.get("nodeGroups") if isinstance(spec, dict) else None
    if groups is None:
        return [], []
    if not isinstance(groups, dict):
        return [Violation("Invalid", "spec.nodeGroups", "must be a mapping of node group name to settings")], []
    for group, values in groups.items():
        path = key_path("spec.nodeGroups", group)
        parsed, violations = parse_node_group(values, path)
        denials.extend(violations)
        warnings.extend(parsed.warnings)
        # Node groups keep the classless Talos path: the same pool rules as a legacy pool.
        result = Resolution([], [], {})
        check_replicas(parsed, path, result)
        check_talos_vgpu(parsed, path, result)
        denials.extend(result.denials)
    return denials, warnings


def _validate_cluster(
    state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> Outcome:
    if operation in ("DELETE", "CONNECT") or obj is None:
        return [], []
    _, namespace, name = identify(obj)
    _, denials = parse_cluster(namespace, name, obj.get("spec"))
    return denials, []


def _validate_platform(
    state: State, operation: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> Outcome:
    if operation in ("DELETE", "CONNECT") or obj is None:
        return [], []
    platform, denials = parse_platform(obj.get("spec"))
    warnings: list[str] = []
    if _metadata_name(obj) != "default":
        warnings.append("only the WorkerPlatform named 'default' is read")
    for minor, image in sorted(platform.kairos_images.items()):
        problem = reference_problem(image.reference, f"spec.kairos.images.{minor}.reference", "the platform build")
        if problem is not None:
            denials.append(problem)
    if state.worker_class(platform.default_worker_class) is None:
        denials.append(
            Violation(
                "ClassNotFound",
                "spec.defaultWorkerClass",
                f"WorkerClass {platform.default_worker_class!r} does not exist: new pools would be denied",
            )
        )
    if operation == "UPDATE" and old is not None:
        before = (old.get("spec") or {}).get("defaultWorkerClass") if isinstance(old.get("spec"), dict) else None
        if before and before != platform.default_worker_class:
            warnings.append("changing the platform default does not retarget stored pools; it applies to new creates")
    return denials, warnings


_VALIDATORS = {
    "KubernetesNodes": _validate_pool,
    "HelmRelease": _validate_pool,
    "WorkerClass": _validate_class,
    "ComputePlane": _validate_compute_plane,
    "Kubernetes": _validate_cluster,
    "WorkerPlatform": _validate_platform,
}
assert set(_VALIDATORS) == set(KINDS)
