"""A pool that names no class: the rules of pools with a class do not apply to its UPDATE (the
chart renders it as it is); its CREATE is judged with the platform default class, and says so.
"""

from __future__ import annotations

from typing import Any

from tests.builders import make_cluster, make_pool, pairs
from workerclass.admission import admit
from workerclass.state import State


def _state(*objects: Any) -> State:
    return State.from_objects([make_cluster(), *objects])


def test_a_classless_create_refused_by_the_default_class_says_it_is_a_class_rule() -> None:
    pool = make_pool("t", workerClassName=None, talos={"version": "1.13"})
    state = _state()
    assert admit(state, "UPDATE", pool, pool).allowed  # the chart renders it: classless, no rule
    decision = admit(state, "CREATE", pool)
    (denial,) = decision.denials
    assert (denial.code, denial.field) == ("Invalid", "spec.talos.version")
    assert "a rule of pools with a class: this pool names none, so it gets the platform default class 'talos'" in (
        denial.message
    )
    explicit = admit(state, "CREATE", make_pool("t", workerClassName="talos", talos={"version": "1.13"}))
    assert "a rule of pools with a class" not in explicit.denials[0].message


def test_registry_mirrors_are_carried_through_on_a_classless_pool() -> None:
    classless = make_pool("m", workerClassName=None, talos={"registryMirrors": {"docker.io": "x"}})
    state = _state()
    assert admit(state, "UPDATE", classless, classless).allowed
    classified = make_pool("m", workerClassName="talos", talos={"registryMirrors": {"docker.io": "x"}})
    assert ("Invalid", "spec.talos.registryMirrors.docker.io") in pairs(admit(state, "CREATE", classified).denials)
