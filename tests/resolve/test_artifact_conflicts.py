"""A conflicting artifact, version or schematic after the overrides are resolved (the design page):
a class whose baseline alone conflicts is refused on its own CREATE, a pool whose overrides make disk
and installer agree resolves, and each conflict is charged to the field that makes it.
"""

from __future__ import annotations

from tests.builders import has_denial, make_class, make_pool, make_state, refused, resolved
from workerclass.admission import admit

# A class whose factory disk is pinned to Talos v1.12.4 while the platform's Talos is v1.13.6.
PINNED_DISK = make_class("pinned-disk", kubevirt={"osImage": {"factory": {"version": "v1.12.4"}}})


def test_a_class_whose_baseline_alone_conflicts_is_refused_on_create() -> None:
    decision = admit(make_state(), "CREATE", PINNED_DISK)
    assert not decision.allowed
    assert has_denial(decision.denials, "ArtifactConflict", "spec.kubevirt.osImage.factory.version")


def test_a_pool_whose_overrides_make_that_baseline_agree_resolves() -> None:
    state = make_state(classes=[PINNED_DISK])
    pool = make_pool(workerClassName="pinned-disk", version="v1.34", talos={"version": "v1.12.4"})
    effective = resolved(state, pool)
    assert effective["talos"]["version"] == "v1.12.4"
    assert effective["image"]["version"] == "v1.12.4"


def test_a_pool_that_keeps_the_conflicting_baseline_is_refused_after_resolution() -> None:
    state = make_state(classes=[PINNED_DISK])
    violations = refused(state, make_pool(workerClassName="pinned-disk"))
    assert any(v.code == "ArtifactConflict" for v in violations), [str(v) for v in violations]


def test_a_pool_override_conflicting_with_the_class_disk_is_charged_to_the_pool_field() -> None:
    """The class pins a golden disk of Talos v1.13.6; the pool's own talos.version is what conflicts."""
    klass = make_class("golden-b", kubevirt={"osImage": {"builtin": {"version": "v1.13.6"}}})
    state = make_state(classes=[klass])
    pool = make_pool(workerClassName="golden-b", version="v1.34", talos={"version": "v1.12.4"})
    violations = refused(state, pool)
    assert has_denial(violations, "ArtifactConflict", "spec.talos.version"), [str(v) for v in violations]


def test_a_pool_disk_conflicting_with_the_pool_talos_is_charged_to_the_disk_field() -> None:
    pool = make_pool(
        version="v1.34", talos={"version": "v1.12.4"}, kubevirt={"osImage": {"factory": {"version": "v1.13.6"}}}
    )
    violations = refused(make_state(), pool)
    assert has_denial(violations, "ArtifactConflict", "spec.kubevirt.osImage.factory.version"), [
        str(v) for v in violations
    ]
