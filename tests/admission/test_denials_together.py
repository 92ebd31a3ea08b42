"""Several denials are reported together (API.md section 3), also when the class is missing or
breaks the class rules: the rules that do not depend on the class still run. A missing class on its
own is the one denial.
"""

from __future__ import annotations

from tests.builders import make_class, make_pool, make_state, pairs, refused


def test_class_not_found_is_reported_with_the_other_denials() -> None:
    state = make_state()
    pool = make_pool(workerClassName="nope", version="v1.31", minReplicas=3, maxReplicas=1)
    found = pairs(refused(state, pool))
    assert ("ClassNotFound", "spec.workerClassName") in found
    assert ("InvalidReplicas", "spec.minReplicas") in found
    assert ("ControlPlaneTooOld", "spec.version") in found  # v1.31 is 4 minors below the v1.35 parent


def test_a_broken_class_is_reported_with_the_other_denials() -> None:
    broken = make_class("broken", "kairos", image={"kubernetesVersion": "v1.35.6"})
    state = make_state(classes=[broken])
    found = pairs(refused(state, make_pool(workerClassName="broken", version="v1.36", minReplicas=-1)))
    assert ("IncompleteImage", "spec.workerClassName") in found
    assert ("InvalidReplicas", "spec.minReplicas") in found
    assert ("ControlPlaneTooOld", "spec.version") in found  # v1.36 is newer than the v1.35 parent


def test_a_missing_class_alone_is_the_only_denial() -> None:
    violations = refused(make_state(), make_pool(workerClassName="nope"))
    assert pairs(violations) == {("ClassNotFound", "spec.workerClassName")}
