"""A WorkerClass through its life: its spec is immutable (checked first), metadata-only updates are
allowed whatever the platform says today, deleting the platform default is allowed with a warning,
and a class being deleted is newly selected by no pool while those already selecting it keep working.
"""

from __future__ import annotations

from tests.builders import (
    KAIROS_FIXED,
    TALOS_EXAMPLE,
    has_denial,
    make_class,
    make_platform,
    make_pool,
    make_state,
    pairs,
    platform_talos,
)
from workerclass.admission import admit, validate


def test_class_update_still_checks_immutability_first() -> None:
    changed = make_class("talos-example-r1", talos={"version": "v1.12.4"})
    decision = validate(make_state(), "UPDATE", changed, TALOS_EXAMPLE)
    assert pairs(decision.denials) == {("ClassImmutable", "spec")}


def _terminating(obj: dict) -> dict:
    out = {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2026-11-29T20:00:00Z"}}
    return out


def test_a_pool_cannot_newly_select_a_class_being_deleted() -> None:
    state = make_state(classes=[_terminating(TALOS_EXAMPLE)])
    decision = admit(state, "CREATE", make_pool(workerClassName="talos-example-r1"))
    assert has_denial(decision.denials, "ClassNotFound", "spec.workerClassName"), [str(v) for v in decision.denials]
    old = make_pool(workerClassName="talos")
    decision = admit(state, "UPDATE", make_pool(workerClassName="talos-example-r1"), old)
    assert has_denial(decision.denials, "ClassNotFound", "spec.workerClassName")
    # a pool that already selects it keeps working while the class waits for it
    stored = make_pool(workerClassName="talos-example-r1")
    assert admit(state, "UPDATE", make_pool(workerClassName="talos-example-r1", maxReplicas=5), stored).allowed


def test_class_metadata_updates_are_allowed_even_if_the_platform_changed_since() -> None:
    """A finalizer added or removed is an UPDATE with the same spec: never refused by today's rules."""
    klass = make_class("golden", talos={"schematicID": "0f" * 32}, kubevirt={"osImage": {"builtin": {}}})
    state = make_state(classes=[klass])
    assert admit(state, "CREATE", klass).allowed
    retired = make_state(classes=[klass], platform=make_platform(talos=platform_talos(goldens=[])))
    assert not admit(retired, "CREATE", klass).allowed  # today the golden is gone
    with_finalizer = {**klass, "metadata": {**klass["metadata"], "finalizers": ["example.com/x"]}}
    assert validate(retired, "UPDATE", klass, with_finalizer).allowed


def test_deleting_the_unused_platform_default_class_is_allowed_with_a_warning() -> None:
    state = make_state(platform=make_platform(defaultWorkerClass="talos-example-r1"))
    decision = validate(state, "DELETE", None, TALOS_EXAMPLE)
    assert decision.allowed
    assert any("platform default" in warning for warning in decision.warnings)
    assert validate(state, "DELETE", None, make_class("unused")).warnings == []
    # a built-in name stays resolvable (the package's own class takes over): no warning
    assert validate(make_state(), "DELETE", None, make_class("talos")).warnings == []


def test_check_keeps_a_stored_pool_whose_class_waits_to_be_deleted() -> None:
    """``check`` admits stored pools as CREATEs: one that already selects the class is not new to it."""
    stored = make_pool("kept", workerClassName="talos-example-r1")
    state = make_state([stored], classes=[_terminating(TALOS_EXAMPLE), KAIROS_FIXED])
    assert admit(state, "CREATE", stored).allowed
    assert not admit(state, "CREATE", make_pool("fresh", workerClassName="talos-example-r1")).allowed
